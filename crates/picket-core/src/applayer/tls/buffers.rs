//! TLS as the detection engine and eve see it. A TLS session is one transaction (id 0), as
//! in Suricata: its client-side buffers (SNI, JA3, the client's ALPN list) are inspected on
//! to-server packets, its server-side buffers (certificates, JA3S, the chosen ALPN) on
//! to-client packets, each time the handshake of that direction has moved on.

use crate::applayer::tls::{Certificate, TlsState, VERSION_TLS13};
use crate::detect::engine::BufferSource;
use crate::detect::rule::buffers::{AppNumber, Buffer};
use crate::stream::Direction;

/// The only transaction id a TLS flow has.
pub(crate) const TLS_TX_ID: u64 = 0;

/// How far the handshake of one direction has got, as far as inspection cares: the hello
/// and the certificates stored. Inspection is due when this changes.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct TlsProgress {
    hello: bool,
    certs: usize,
}

impl TlsProgress {
    pub(crate) fn of(state: &TlsState, dir: Direction) -> Self {
        let hello = match dir {
            Direction::ToServer => state.client_hello().is_some(),
            Direction::ToClient => state.server_hello().is_some(),
        };
        TlsProgress { hello, certs: state.certificates(dir).len() }
    }
}

/// The inspection buffers of a TLS session seen from one direction.
pub(crate) struct TlsBuffers<'a> {
    state: &'a TlsState,
    dir: Direction,
}

impl<'a> TlsBuffers<'a> {
    pub(crate) fn new(state: &'a TlsState, dir: Direction) -> Self {
        TlsBuffers { state, dir }
    }

    fn to_client(&self) -> bool {
        self.dir == Direction::ToClient
    }

    /// The server's first certificate, when it parsed.
    fn leaf(&self) -> Option<&'a Certificate> {
        if !self.to_client() {
            return None;
        }
        self.state.certificates(Direction::ToClient).first()
    }

    /// Version as Suricata's `tls.version` compares it: what this direction announced,
    /// with TLS 1.3 drafts counted as TLS 1.3.
    fn version(&self) -> Option<u16> {
        let v = match self.dir {
            Direction::ToServer => self.state.client_hello()?.version,
            Direction::ToClient => match self.state.server_hello() {
                Some(h) => h.selected_version.unwrap_or(h.version),
                // A pure SSLv2 session has no TLS ServerHello; the state's version is then
                // the SSLv2 server's.
                None => self.state.version().filter(|_| self.state.client_hello().is_some_and(|c| c.sslv2))?,
            },
        };
        Some(if v & 0xff00 == 0x7f00 { VERSION_TLS13 } else { v })
    }
}

fn non_empty(b: &[u8]) -> Option<&[u8]> {
    (!b.is_empty()).then_some(b)
}

impl<'a> BufferSource for TlsBuffers<'a> {
    fn get(&self, buffer: Buffer) -> Option<&[u8]> {
        self.get_nth(buffer, 0)
    }

    fn get_nth(&self, buffer: Buffer, index: usize) -> Option<&[u8]> {
        let s = self.state;
        let to_client = self.to_client();
        let info = || self.leaf().and_then(|c| c.info.as_ref());
        let single = |b: Option<&'a [u8]>| if index == 0 { b.and_then(non_empty) } else { None };
        match buffer.name {
            "tls.sni" if !to_client => single(s.sni()),
            "ja3.hash" if !to_client => single(s.ja3().map(|(_, h)| h.as_bytes())),
            "ja3.string" if !to_client => single(s.ja3().map(|(st, _)| st.as_bytes())),
            "ja3s.hash" if to_client => single(s.ja3s().map(|(_, h)| h.as_bytes())),
            "ja3s.string" if to_client => single(s.ja3s().map(|(st, _)| st.as_bytes())),
            // The client's offered list to the server, the server's choice to the client.
            "tls.alpn" if !to_client => s.client_alpns().get(index).map(|a| a.as_slice()).and_then(non_empty),
            "tls.alpn" => single(s.server_alpn()),
            "tls.certs" => s.certificates(self.dir).get(index).map(|c| c.der.as_slice()),
            "tls.cert_subject" => single(info().map(|i| i.subject.as_bytes())),
            "tls.cert_issuer" => single(info().map(|i| i.issuer.as_bytes())),
            "tls.cert_serial" => single(info().map(|i| i.serial.as_bytes())),
            "tls.cert_fingerprint" => single(self.leaf().map(|c| c.fingerprint.as_bytes())),
            "tls.subjectaltname" => info()?.subject_alt_names.get(index).map(|n| n.as_bytes()).and_then(non_empty),
            _ => None,
        }
    }

    fn number(&self, field: AppNumber, index: usize) -> Option<u64> {
        if index > 0 {
            return None;
        }
        let info = || self.leaf().and_then(|c| c.info.as_ref());
        // Certificates before 1970 compare as time 0.
        let time = |t: Option<i64>| t.map(|t| t.max(0) as u64);
        match field {
            AppNumber::TlsVersion => self.version().map(u64::from),
            AppNumber::TlsCertChainLen if self.to_client() => {
                let chain = self.state.certificates(Direction::ToClient);
                (!chain.is_empty()).then_some(chain.len() as u64)
            }
            AppNumber::TlsCertNotBefore => time(info()?.not_before),
            AppNumber::TlsCertNotAfter => time(info()?.not_after),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::applayer::tls::tests::{client_stream, server_stream};
    use crate::applayer::tls::{TlsConfig, TlsCounters};
    use crate::detect::rule::buffers::buffer_by_name;

    fn session() -> TlsState {
        let mut st = TlsState::new(TlsConfig::default());
        let mut c = TlsCounters::default();
        st.parse(Direction::ToServer, &client_stream(), &mut c);
        st.parse(Direction::ToClient, &server_stream(), &mut c);
        st
    }

    fn get<'a>(b: &'a TlsBuffers<'_>, name: &str, i: usize) -> Option<&'a [u8]> {
        b.get_nth(buffer_by_name(name).expect("known buffer"), i)
    }

    #[test]
    fn client_buffers_only_to_server() {
        let st = session();
        let s = TlsBuffers::new(&st, Direction::ToServer);
        assert_eq!(get(&s, "tls.sni", 0), Some(&b"example.com"[..]));
        assert_eq!(get(&s, "tls.sni", 1), None);
        assert_eq!(get(&s, "ja3.hash", 0).map(|h| h.len()), Some(32));
        assert!(get(&s, "ja3.string", 0).is_some_and(|j| j.starts_with(b"771,")));
        assert_eq!(get(&s, "tls.alpn", 0), Some(&b"h2"[..]));
        assert_eq!(get(&s, "tls.alpn", 1), Some(&b"http/1.1"[..]));
        assert_eq!(get(&s, "tls.alpn", 2), None);
        assert_eq!(get(&s, "tls.cert_subject", 0), None, "server certificate is a to-client buffer");
        assert_eq!(get(&s, "ja3s.hash", 0), None);
        assert_eq!(s.number(AppNumber::TlsVersion, 0), Some(0x0303));
        assert_eq!(s.number(AppNumber::TlsCertChainLen, 0), None);
    }

    #[test]
    fn server_buffers_only_to_client() {
        let st = session();
        let c = TlsBuffers::new(&st, Direction::ToClient);
        assert_eq!(get(&c, "tls.sni", 0), None);
        assert_eq!(get(&c, "ja3.hash", 0), None);
        assert_eq!(get(&c, "tls.cert_subject", 0), Some(&b"CN=www.example.org"[..]));
        assert_eq!(get(&c, "tls.cert_issuer", 0), Some(&b"C=US, O=Let's Encrypt, CN=R3"[..]));
        assert_eq!(get(&c, "tls.cert_serial", 0), Some(&b"00:5C:19:B7"[..]));
        assert_eq!(get(&c, "tls.cert_fingerprint", 0).map(|f| f.len()), Some(59));
        assert_eq!(get(&c, "tls.subjectaltname", 0), Some(&b"www.example.org"[..]));
        assert_eq!(get(&c, "tls.subjectaltname", 1), Some(&b"example.org"[..]));
        assert_eq!(get(&c, "tls.alpn", 0), Some(&b"http/1.1"[..]));
        assert_eq!(get(&c, "tls.alpn", 1), None);
        assert!(get(&c, "tls.certs", 1).is_some() && get(&c, "tls.certs", 2).is_none());
        assert_eq!(get(&c, "ja3s.hash", 0).map(|h| h.len()), Some(32));
        assert_eq!(c.number(AppNumber::TlsCertChainLen, 0), Some(2));
        assert_eq!(c.number(AppNumber::TlsCertChainLen, 1), None);
        assert_eq!(c.number(AppNumber::TlsVersion, 0), Some(0x0303));
        // 2016-08-08T00:00:00 and 2050-01-01T12:34:56.
        assert_eq!(c.number(AppNumber::TlsCertNotBefore, 0), Some(1_470_614_400));
        assert_eq!(c.number(AppNumber::TlsCertNotAfter, 0), Some(2_524_653_296));
    }

    #[test]
    fn progress_moves_with_each_direction() {
        let mut st = TlsState::new(TlsConfig::default());
        let mut c = TlsCounters::default();
        let none = TlsProgress::default();
        assert_eq!(TlsProgress::of(&st, Direction::ToServer), none);
        st.parse(Direction::ToServer, &client_stream(), &mut c);
        assert_ne!(TlsProgress::of(&st, Direction::ToServer), none);
        assert_eq!(TlsProgress::of(&st, Direction::ToClient), none);
        let server = server_stream();
        // Hello first, certificates later: two steps of progress.
        st.parse(Direction::ToClient, &server[..120], &mut c);
        let after_hello = TlsProgress::of(&st, Direction::ToClient);
        assert_ne!(after_hello, none);
        st.parse(Direction::ToClient, &server[120..], &mut c);
        assert_ne!(TlsProgress::of(&st, Direction::ToClient), after_hello);
    }
}
