//! eve `http` records: one per HTTP transaction, when it is done.
//!
//! The object is Suricata's: the basic fields always, the extended ones with
//! `extended: yes`, and header lists with `dump-all-headers` (every header of a side) or
//! `custom` (the named headers, on both sides).

use super::header::write_tx_header;
use picket_core::applayer::http::HttpTx;
use picket_core::inspect::TxEvent;
use picket_core::stream::Direction;
use std::net::IpAddr;

/// The `http:` entry of eve-log `types:` (Suricata's keys).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpLogOptions {
    /// `extended: yes`: referer, method, protocol, status, redirect and length. On
    /// without an eve-log configuration (Suricata's shipped suricata.yaml sets it); off for
    /// an `http` entry that does not say so, as in Suricata.
    pub extended: bool,
    /// `dump-all-headers: request|response|both`: every header of those sides.
    pub request_headers: bool,
    pub response_headers: bool,
    /// `custom: [...]`: lowercase names of the headers logged in the header lists (on
    /// both sides), besides the ones `dump-all-headers` logs whole.
    pub custom: Vec<String>,
}

impl Default for HttpLogOptions {
    fn default() -> Self {
        HttpLogOptions { extended: true, request_headers: false, response_headers: false, custom: Vec::new() }
    }
}

/// The header fields Suricata's `custom:` list knows: its config name and the header.
/// An entry may name either; others are ignored, as in Suricata.
const CUSTOM_FIELDS: &[(&str, &str)] = &[
    ("accept", "accept"),
    ("accept_charset", "accept-charset"),
    ("accept_encoding", "accept-encoding"),
    ("accept_language", "accept-language"),
    ("accept_datetime", "accept-datetime"),
    ("authorization", "authorization"),
    ("cache_control", "cache-control"),
    ("cookie", "cookie"),
    ("from", "from"),
    ("max_forwards", "max-forwards"),
    ("origin", "origin"),
    ("pragma", "pragma"),
    ("proxy_authorization", "proxy-authorization"),
    ("range", "range"),
    ("te", "te"),
    ("via", "via"),
    ("x_requested_with", "x-requested-with"),
    ("dnt", "dnt"),
    ("x_forwarded_proto", "x-forwarded-proto"),
    ("x_authenticated_user", "x-authenticated-user"),
    ("x_flash_version", "x-flash-version"),
    ("accept_range", "accept-range"),
    ("age", "age"),
    ("allow", "allow"),
    ("connection", "connection"),
    ("content_encoding", "content-encoding"),
    ("content_language", "content-language"),
    ("content_length", "content-length"),
    ("content_location", "content-location"),
    ("content_md5", "content-md5"),
    ("content_range", "content-range"),
    ("content_type", "content-type"),
    ("date", "date"),
    ("etag", "etags"),
    ("expires", "expires"),
    ("last_modified", "last-modified"),
    ("link", "link"),
    ("location", "location"),
    ("proxy_authenticate", "proxy-authenticate"),
    ("referer", "referer"),
    ("refresh", "refresh"),
    ("retry_after", "retry-after"),
    ("server", "server"),
    ("set_cookie", "set-cookie"),
    ("trailer", "trailer"),
    ("transfer_encoding", "transfer-encoding"),
    ("upgrade", "upgrade"),
    ("vary", "vary"),
    ("warning", "warning"),
    ("www_authenticate", "www-authenticate"),
    ("true_client_ip", "true-client-ip"),
    ("org_src_ip", "org-src-ip"),
    ("x_bluecoat_via", "x-bluecoat-via"),
];

impl HttpLogOptions {
    /// Adds a `custom:` entry (a config name such as `accept_encoding` or a header name);
    /// false when Suricata does not know it. With `extended`, the referer is already a
    /// field of its own and is not listed again.
    pub fn add_custom(&mut self, entry: &str) -> bool {
        let entry = entry.trim();
        let Some(&(config, header)) =
            CUSTOM_FIELDS.iter().find(|(config, header)| *config == entry || header.eq_ignore_ascii_case(entry))
        else {
            return false;
        };
        let referer_field = self.extended && config == "referer";
        let listed = self.custom.iter().any(|c| c == header);
        if !referer_field && !listed {
            self.custom.push(header.to_string());
        }
        true
    }

    fn logs_header(&self, dir: Direction, name: &[u8]) -> bool {
        let all = match dir {
            Direction::ToServer => self.request_headers,
            Direction::ToClient => self.response_headers,
        };
        all || self.custom.iter().any(|c| name.eq_ignore_ascii_case(c.as_bytes()))
    }
}

/// One eve `http` line for the transaction `tx` of `t`; `xff`: the proxied client's
/// address when eve-log's `xff:` is in extra-data mode.
pub fn write_http(buf: &mut Vec<u8>, t: &TxEvent<'_>, tx: &HttpTx, http: &HttpLogOptions, xff: Option<IpAddr>) {
    let mut o = write_tx_header(buf, t, "http");
    o.open("http");
    tx.write_basic(&mut o);
    if http.extended {
        tx.write_extended(&mut o);
    }
    for dir in [Direction::ToServer, Direction::ToClient] {
        let all = match dir {
            Direction::ToServer => http.request_headers,
            Direction::ToClient => http.response_headers,
        };
        if all || !http.custom.is_empty() {
            tx.write_header_list(&mut o, dir, &|name| http.logs_header(dir, name));
        }
    }
    o.close();
    if let Some(addr) = xff {
        o.str("xff", &addr.to_string());
    }
    o.finish();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_entries_by_config_or_header_name() {
        let mut o = HttpLogOptions { extended: false, ..HttpLogOptions::default() };
        assert!(o.add_custom("accept_encoding"));
        assert!(o.add_custom("Accept-Language"));
        assert!(o.add_custom("referer"));
        assert!(!o.add_custom("x-unknown"));
        assert_eq!(o.custom, vec!["accept-encoding", "accept-language", "referer"]);
        assert!(o.logs_header(Direction::ToServer, b"ACCEPT-ENCODING"));
        assert!(!o.logs_header(Direction::ToClient, b"server"));
        let mut ext = HttpLogOptions::default();
        ext.add_custom("referer");
        assert!(ext.custom.is_empty(), "extended logs the referer as http_refer");
    }
}
