//! What eve-log writes: the `alert:` options of Suricata's eve-log output and `xff:`.

use super::dns::DnsLogOptions;
use super::http::HttpLogOptions;
use super::smtp::SmtpLogOptions;
use super::ssh::SshLogOptions;
use super::tls::TlsLogOptions;
use picket_core::applayer::http::HttpTx;
use std::net::IpAddr;

/// Which optional parts eve alerts carry (the `alert:` options of Suricata's eve-log).
#[derive(Clone, Debug)]
pub struct AlertLogOptions {
    /// Base64 of the matched payload (or stream data), plus `stream` and `payload_length`.
    pub payload: bool,
    pub payload_printable: bool,
    /// Base64 of the whole captured frame, with `packet_info`.
    pub packet: bool,
    /// `ether` object with MAC addresses.
    pub ethernet: bool,
    pub fast_log: bool,
    /// `payload-buffer-size`: most bytes of stream data an alert logs.
    pub payload_buffer_size: usize,
    /// `metadata.app-layer`: the transaction's object (`http`).
    pub app_layer: bool,
    /// `metadata.flow`: the `flow` object.
    pub flow: bool,
    /// `metadata.rule.metadata`: `alert.metadata` from the rule's `metadata:` keyword.
    pub rule_metadata: bool,
    /// `metadata.rule.raw`: `alert.rule`, the rule's text.
    pub rule_raw: bool,
    /// Flowbits set on the flow: `traffic` for `traffic/id/..` and `traffic/label/..`,
    /// the others under `metadata.flowbits` (part of Suricata's alert metadata).
    pub flow_vars: bool,
    /// `xff:` with `enabled: yes`: the client address from a proxy header.
    pub xff: Option<XffOptions>,
    /// `verdict: yes`: the `verdict` object (what was done with the packet). Off by default,
    /// as in Suricata.
    pub verdict: bool,
    /// The `drop:` entry of the eve-log `types:` list.
    pub drop: DropLogOptions,
    /// The event types eve.json gets (eve-log `types:`; all without a list).
    pub types: EveTypes,
    /// The `http:`, `dns:` and `tls:` entries of `types:`.
    pub http: HttpLogOptions,
    pub dns: DnsLogOptions,
    pub tls: TlsLogOptions,
    /// The `anomaly:` entry of `types:`.
    pub anomaly: AnomalyLogOptions,
    /// `stats:` entry's `threads: yes`: per-worker counters in eve `stats` (default no).
    pub stats_threads: bool,
    /// eve-log `community-id: yes`: flow records carry `community_id`, hashed with this
    /// seed (`community-id-seed`, default 0).
    pub community_id: Option<u16>,
    pub ssh: SshLogOptions,
    /// The `smtp:` entry of `types:` (the `email` object's extra fields).
    pub smtp: SmtpLogOptions,
    /// eve-log `suricata-version: yes`: every record carries `suricata_version`.
    pub suricata_version: bool,
    /// eve-log `metadata:` (default yes): flow records list the flow's flowbits.
    pub metadata: bool,
}

/// Which event types eve-log writes: the ones named in its `types:` list, all of them
/// when there is no list, none when eve-log is disabled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EveTypes {
    pub alert: bool,
    pub drop: bool,
    pub flow: bool,
    pub stats: bool,
    pub http: bool,
    pub dns: bool,
    pub tls: bool,
    /// `files`: `fileinfo` records of HTTP bodies.
    pub files: bool,
    pub anomaly: bool,
    pub ssh: bool,
    /// `smtp`: one record per mail.
    pub smtp: bool,
    /// `http2`: `http` records of HTTP/2 transactions (Suricata's eve-log.http2).
    pub http2: bool,
    /// `doh2`: records of DNS-over-HTTP/2 flows (`dns` records with the `http` object).
    pub doh2: bool,
}

impl EveTypes {
    pub const fn all() -> Self {
        EveTypes {
            alert: true,
            drop: true,
            flow: true,
            stats: true,
            http: true,
            dns: true,
            tls: true,
            files: true,
            anomaly: true,
            ssh: true,
            smtp: true,
            http2: true,
            doh2: true,
        }
    }

    pub const fn none() -> Self {
        EveTypes {
            alert: false,
            drop: false,
            flow: false,
            stats: false,
            http: false,
            dns: false,
            tls: false,
            files: false,
            anomaly: false,
            ssh: false,
            smtp: false,
            http2: false,
            doh2: false,
        }
    }

    /// Turns on the type named `name` (a `types:` entry); false when picket does not
    /// produce that type.
    pub fn enable(&mut self, name: &str) -> bool {
        let slot = match name {
            "alert" => &mut self.alert,
            "drop" => &mut self.drop,
            "flow" => &mut self.flow,
            "stats" => &mut self.stats,
            "http" => &mut self.http,
            "dns" => &mut self.dns,
            "tls" => &mut self.tls,
            "files" => &mut self.files,
            "anomaly" => &mut self.anomaly,
            "ssh" => &mut self.ssh,
            "smtp" => &mut self.smtp,
            "http2" => &mut self.http2,
            "doh2" => &mut self.doh2,
            _ => return false,
        };
        *slot = true;
        true
    }
}

impl Default for EveTypes {
    fn default() -> Self {
        EveTypes::all()
    }
}

/// What eve `drop` records carry and which blocked packets get one (the options of the
/// `drop:` entry of Suricata's eve-log `types:`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropLogOptions {
    /// `alerts: yes`: the `alert` object of the rule that dropped the packet.
    pub alerts: bool,
    /// `flows: all` logs every blocked packet; `start` (Suricata's default) logs every packet
    /// a rule blocks and, of a dropped flow, the first blocked packet of each direction.
    pub all_packets: bool,
    /// `verdict: yes`: the `verdict` object.
    pub verdict: bool,
}

/// The options of the `anomaly:` entry of eve-log `types:`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AnomalyLogOptions {
    /// `types: decode:` decoder events (default no).
    pub decode: bool,
    /// `types: stream:` TCP stream events (default no; none are reported yet).
    pub stream: bool,
    /// `types: applayer:` app-layer parser events (default yes; none are reported yet).
    pub applayer: bool,
    /// `packethdr:` the first bytes of the packet in `packet` (default no; Suricata turns
    /// it off without `decode`, the only records that have a packet here).
    pub packethdr: bool,
}

impl Default for AnomalyLogOptions {
    fn default() -> Self {
        AnomalyLogOptions { decode: false, stream: false, applayer: true, packethdr: false }
    }
}

/// Suricata's X-Forwarded-For handling for alerts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XffOptions {
    /// `mode: overwrite` replaces the client-side address of the event; `extra-data`
    /// (the default) adds `alert.xff`.
    pub overwrite: bool,
    /// `deployment: reverse` (default) takes the last address of the list, `forward` the first.
    pub reverse: bool,
    /// `header:` (default X-Forwarded-For).
    pub header: String,
}

impl XffOptions {
    /// The address the proxy header names for `tx`, if it holds a valid one.
    pub fn address(&self, tx: &HttpTx) -> Option<IpAddr> {
        let value = tx.request_header(&self.header)?;
        let value = std::str::from_utf8(value).ok()?;
        let mut parts = value.split(',').map(str::trim).filter(|p| !p.is_empty());
        let pick = if self.reverse { parts.next_back() } else { parts.next() }?;
        pick.parse().ok()
    }
}

impl Default for AlertLogOptions {
    fn default() -> Self {
        AlertLogOptions {
            payload: false,
            payload_printable: false,
            packet: false,
            ethernet: false,
            fast_log: true,
            payload_buffer_size: 4096,
            app_layer: true,
            flow: true,
            rule_metadata: true,
            rule_raw: false,
            flow_vars: true,
            xff: None,
            verdict: false,
            drop: DropLogOptions::default(),
            types: EveTypes::all(),
            http: HttpLogOptions::default(),
            dns: DnsLogOptions::default(),
            tls: TlsLogOptions::default(),
            anomaly: AnomalyLogOptions::default(),
            stats_threads: false,
            community_id: None,
            ssh: SshLogOptions::default(),
            smtp: SmtpLogOptions::default(),
            suricata_version: false,
            metadata: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use picket_core::stream::Direction;

    #[test]
    fn xff_address_choice() {
        let reverse = XffOptions { overwrite: false, reverse: true, header: "X-Forwarded-For".into() };
        let forward = XffOptions { overwrite: true, reverse: false, header: "X-Real-IP".into() };
        let mut p = picket_core::applayer::http::HttpParser::new(Default::default());
        p.on_data(
            Direction::ToServer,
            b"GET / HTTP/1.1\r\nx-forwarded-for: 10.2.2.2, 10.3.3.3\r\nX-Real-IP: junk\r\n\r\n",
            &mut |_| {},
        );
        let tx = p.tx(0).expect("tx");
        assert_eq!(reverse.address(tx), Some("10.3.3.3".parse().unwrap()));
        let first = XffOptions { reverse: false, ..reverse.clone() };
        assert_eq!(first.address(tx), Some("10.2.2.2".parse().unwrap()));
        assert_eq!(forward.address(tx), None, "not an address");
    }
}
