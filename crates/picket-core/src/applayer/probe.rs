//! Application-protocol detection from the first bytes of each direction, in the manner of
//! Suricata's pattern and probing parsers: fixed prefixes (HTTP methods, "HTTP/1.", "SSH-",
//! SMTP/FTP commands), structural checks (TLS/SSLv2 record headers, DNS headers), and port
//! hints where the bytes alone are ambiguous (DNS, the "220" banner of SMTP and FTP).
//!
//! Detection may succeed in either direction: a server that speaks first (SSH, SMTP banner)
//! identifies the flow as well as a client request does. [`ProtoDetector`] keeps the per-flow
//! verdict; [`probe`] is the stateless check of one direction's first bytes.

// Defined with the app layer's shared types; still reachable here, where it was.
use crate::applayer::detect_only::probes::{self, Probe};
use crate::applayer::detect_only::DetectOnlySettings;
use crate::applayer::dns;
pub use crate::applayer::AppProto;
use crate::bytes;
use crate::stream::Direction;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Tcp,
    Udp,
}

/// Configured server ports of the protocols recognised by port
/// (`app-layer.protocols.dns.<tcp|udp>.detection-ports.dp`); the default is port 53.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DetectionPorts {
    pub dns_tcp: Vec<u16>,
    pub dns_udp: Vec<u16>,
    /// The protocols detected without a parser: which are enabled, on which ports.
    pub others: DetectOnlySettings,
}

impl Default for DetectionPorts {
    fn default() -> Self {
        DetectionPorts {
            dns_tcp: AppProto::Dns.default_ports().to_vec(),
            dns_udp: AppProto::Dns.default_ports().to_vec(),
            others: DetectOnlySettings::default(),
        }
    }
}

impl DetectionPorts {
    /// Whether either port of a flow is a DNS port for `transport`.
    pub fn dns(&self, transport: Transport, ports: (u16, u16)) -> bool {
        let list = match transport {
            Transport::Tcp => &self.dns_tcp,
            Transport::Udp => &self.dns_udp,
        };
        list.contains(&ports.0) || list.contains(&ports.1)
    }

    /// Whether a UDP flow whose datagram `payload` (of `dir`) has no app-layer state yet
    /// may carry a protocol picket detects, so that the state is worth creating: a DNS
    /// port, a detection-only protocol's port, or one of their any-port patterns.
    pub fn udp_candidate(&self, dir: Direction, ports: (u16, u16), payload: &[u8]) -> bool {
        self.dns(Transport::Udp, ports) || self.others.udp_candidate(dir, ports, payload)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeResult {
    /// The bytes so far are a prefix of something recognisable: wait for more.
    NeedMore,
    /// Nothing matches, and more bytes will not change that.
    Unknown,
    Detected(AppProto),
}

/// Outcome of one protocol's check.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    Match,
    NeedMore,
    NoMatch,
}

impl From<Probe> for Check {
    fn from(p: Probe) -> Check {
        match p {
            Probe::Match => Check::Match,
            Probe::NeedMore => Check::NeedMore,
            Probe::NoMatch => Check::NoMatch,
        }
    }
}

/// Compares `data` with `pattern` at the start: a full match, a prefix of it (need more), or
/// different. `nocase` compares ASCII case-insensitively.
fn prefix(data: &[u8], pattern: &[u8], nocase: bool) -> Check {
    probes::starts(data, pattern, nocase).into()
}

fn any_prefix(data: &[u8], patterns: &[&[u8]], nocase: bool) -> Check {
    probes::starts_any(data, patterns, nocase).into()
}

/// Request methods Suricata's HTTP detection recognises, each followed by a space.
const HTTP_METHODS: &[&[u8]] = &[
    b"GET ",
    b"POST ",
    b"HEAD ",
    b"PUT ",
    b"DELETE ",
    b"OPTIONS ",
    b"CONNECT ",
    b"TRACE ",
    b"PATCH ",
    b"PROPFIND ",
    b"PROPPATCH ",
    b"MKCOL ",
    b"COPY ",
    b"MOVE ",
    b"LOCK ",
    b"UNLOCK ",
    b"CHECKOUT ",
    b"UNCHECKOUT ",
    b"CHECKIN ",
    b"UPDATE ",
    b"LABEL ",
    b"REPORT ",
    b"MKWORKSPACE ",
    b"MKACTIVITY ",
    b"MERGE ",
    b"SEARCH ",
    b"BCOPY ",
    b"BDELETE ",
    b"BMOVE ",
    b"BPROPFIND ",
    b"BPROPPATCH ",
    b"NOTIFY ",
    b"POLL ",
    b"SUBSCRIBE ",
    b"UNSUBSCRIBE ",
    b"ACL ",
];

fn check_http(direction: Direction, data: &[u8]) -> Check {
    match direction {
        Direction::ToServer => any_prefix(data, HTTP_METHODS, false),
        Direction::ToClient => prefix(data, b"HTTP/1.", false),
    }
}

fn check_tls(direction: Direction, data: &[u8]) -> Check {
    let Some(&first) = data.first() else { return Check::NeedMore };
    if first & 0x80 != 0 {
        // SSLv2 CLIENT-HELLO: 2-byte header, message type 1, version SSLv2..TLS 1.2.
        if direction != Direction::ToServer {
            return Check::NoMatch;
        }
        let Some(version) = bytes::be_u16(data, 3) else {
            return Check::NeedMore;
        };
        let version_ok = version == 0x0002 || (0x0300..=0x0303).contains(&version);
        return if data[2] == 1 && version_ok { Check::Match } else { Check::NoMatch };
    }
    // TLS record: content type 20..=23, version 3.0..=3.4, a length TLS allows.
    if !(20..=23).contains(&first) {
        return Check::NoMatch;
    }
    let Some(len) = bytes::be_u16(data, 3) else {
        let ok = data.get(1).is_none_or(|&b| b == 3) && data.get(2).is_none_or(|&b| b <= 4);
        return if ok { Check::NeedMore } else { Check::NoMatch };
    };
    if data[1] != 3 || data[2] > 4 || len == 0 || len > 16384 + 2048 {
        return Check::NoMatch;
    }
    if first == 22 {
        // Handshake: the message type must be a real one (hello request .. key update).
        return match data.get(5) {
            None => Check::NeedMore,
            Some(&t) if t <= 24 => Check::Match,
            Some(_) => Check::NoMatch,
        };
    }
    Check::Match
}

fn check_ssh(data: &[u8]) -> Check {
    prefix(data, b"SSH-", false)
}

/// Client commands that open an SMTP session (Suricata matches these case-insensitively).
const SMTP_COMMANDS: &[&[u8]] = &[b"EHLO", b"HELO"];
/// Client commands typical of FTP's first exchange.
const FTP_COMMANDS: &[&[u8]] = &[b"USER ", b"PASS ", b"PORT ", b"PASV", b"FEAT", b"AUTH TLS", b"AUTH SSL"];

fn has_port(ports: (u16, u16), proto: AppProto) -> bool {
    proto.default_ports().contains(&ports.0) || proto.default_ports().contains(&ports.1)
}

fn check_dns_tcp(data: &[u8], dns_port: bool) -> Check {
    if !dns_port {
        return Check::NoMatch;
    }
    if data.len() < 2 + dns::HEADER_LEN {
        return Check::NeedMore;
    }
    let len = match dns::tcp_frame_len(data) {
        Some(len) if len >= dns::HEADER_LEN => len,
        _ => return Check::NoMatch,
    };
    match dns::probe_message(&data[2..], len) {
        Some(_) => Check::Match,
        None => Check::NoMatch,
    }
}

/// Checks the first bytes of one direction (`data` starts at the first byte of the
/// direction). `ports` are the flow's (source, destination) ports in either order.
pub fn probe(transport: Transport, direction: Direction, data: &[u8], ports: (u16, u16)) -> ProbeResult {
    probe_with(transport, direction, data, ports, &DetectionPorts::default())
}

/// [`probe`] with configured detection ports.
pub fn probe_with(
    transport: Transport,
    direction: Direction,
    data: &[u8],
    ports: (u16, u16),
    detection_ports: &DetectionPorts,
) -> ProbeResult {
    let dns_port = detection_ports.dns(transport, ports);
    if data.is_empty() {
        return ProbeResult::NeedMore;
    }
    if transport == Transport::Udp {
        // UDP carries only DNS here, recognised on its port like Suricata's defaults.
        if dns_port && dns::probe_message(data, data.len()).is_some() {
            return ProbeResult::Detected(AppProto::Dns);
        }
        return match detection_ports.others.detect(false, direction, data, ports) {
            Ok(proto) => ProbeResult::Detected(proto),
            // A datagram is all there is of it.
            Err(_) => ProbeResult::Unknown,
        };
    }
    let mut need_more = false;
    let mut consider = |check: Check, proto: AppProto| -> Option<ProbeResult> {
        match check {
            Check::Match => Some(ProbeResult::Detected(proto)),
            Check::NeedMore => {
                need_more = true;
                None
            }
            Check::NoMatch => None,
        }
    };
    let smtp_client =
        if direction == Direction::ToServer { any_prefix(data, SMTP_COMMANDS, true) } else { Check::NoMatch };
    let ftp_client =
        if direction == Direction::ToServer { any_prefix(data, FTP_COMMANDS, true) } else { Check::NoMatch };
    let checks = [
        (check_http(direction, data), AppProto::Http),
        (check_tls(direction, data), AppProto::Tls),
        (check_ssh(data), AppProto::Ssh),
        (smtp_client, AppProto::Smtp),
        (ftp_client, AppProto::Ftp),
        (check_dns_tcp(data, dns_port), AppProto::Dns),
    ];
    for (check, proto) in checks {
        if let Some(result) = consider(check, proto) {
            return result;
        }
    }
    if direction == Direction::ToClient {
        // "220" greets both SMTP and FTP clients: decide by port, else let the client's
        // first command decide.
        match prefix(data, b"220", false) {
            Check::Match => {
                if has_port(ports, AppProto::Smtp) {
                    return ProbeResult::Detected(AppProto::Smtp);
                }
                if has_port(ports, AppProto::Ftp) {
                    return ProbeResult::Detected(AppProto::Ftp);
                }
            }
            Check::NeedMore => need_more = true,
            Check::NoMatch => {}
        }
    }
    match detection_ports.others.detect(true, direction, data, ports) {
        Ok(proto) => return ProbeResult::Detected(proto),
        Err(Probe::NeedMore) => need_more = true,
        Err(_) => {}
    }
    if need_more {
        ProbeResult::NeedMore
    } else {
        ProbeResult::Unknown
    }
}

/// Where a flow's detection stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DetectStatus {
    Pending,
    Detected(AppProto),
    /// Neither direction can be identified.
    Failed,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum DirectionVerdict {
    #[default]
    Probing,
    Unknown,
    Detected(AppProto),
}

/// Per-flow protocol detection over both directions.
#[derive(Clone, Debug)]
pub struct ProtoDetector {
    /// Bytes looked at per direction before giving up on it.
    max_probe_len: usize,
    directions: [DirectionVerdict; 2],
    result: Option<AppProto>,
    /// The two directions were recognised as different protocols (the first one wins).
    pub mismatch: bool,
}

impl Default for ProtoDetector {
    fn default() -> Self {
        ProtoDetector::new(4096)
    }
}

impl ProtoDetector {
    pub fn new(max_probe_len: usize) -> Self {
        ProtoDetector { max_probe_len, directions: Default::default(), result: None, mismatch: false }
    }

    /// `data` is everything received so far in `direction`, from its first byte.
    pub fn on_data(
        &mut self,
        transport: Transport,
        direction: Direction,
        data: &[u8],
        ports: (u16, u16),
    ) -> DetectStatus {
        self.on_data_with(transport, direction, data, ports, &DetectionPorts::default())
    }

    /// [`ProtoDetector::on_data`] with configured detection ports.
    pub fn on_data_with(
        &mut self,
        transport: Transport,
        direction: Direction,
        data: &[u8],
        ports: (u16, u16),
        detection_ports: &DetectionPorts,
    ) -> DetectStatus {
        let d = direction.index();
        if self.directions[d] == DirectionVerdict::Probing && !data.is_empty() {
            let window = &data[..data.len().min(self.max_probe_len)];
            self.directions[d] = match probe_with(transport, direction, window, ports, detection_ports) {
                ProbeResult::Detected(p) => DirectionVerdict::Detected(p),
                ProbeResult::Unknown => DirectionVerdict::Unknown,
                ProbeResult::NeedMore if window.len() >= self.max_probe_len => DirectionVerdict::Unknown,
                ProbeResult::NeedMore => DirectionVerdict::Probing,
            };
            if let DirectionVerdict::Detected(p) = self.directions[d] {
                match self.result {
                    None => self.result = Some(p),
                    Some(first) if first != p => self.mismatch = true,
                    Some(_) => {}
                }
            }
        }
        self.status()
    }

    pub fn status(&self) -> DetectStatus {
        if let Some(p) = self.result {
            return DetectStatus::Detected(p);
        }
        if self.directions.iter().all(|v| *v == DirectionVerdict::Unknown) {
            return DetectStatus::Failed;
        }
        DetectStatus::Pending
    }

    /// What `direction`'s own bytes were recognised as: `Some(Ok(proto))`, `Some(Err(()))`
    /// when they matched nothing, `None` while undecided.
    pub fn verdict(&self, direction: Direction) -> Option<Result<AppProto, ()>> {
        match self.directions[direction.index()] {
            DirectionVerdict::Probing => None,
            DirectionVerdict::Unknown => Some(Err(())),
            DirectionVerdict::Detected(p) => Some(Ok(p)),
        }
    }

    /// For UDP and one-sided flows: gives up on a direction that will see no more data.
    pub fn direction_finished(&mut self, direction: Direction) -> DetectStatus {
        let v = &mut self.directions[direction.index()];
        if *v == DirectionVerdict::Probing {
            *v = DirectionVerdict::Unknown;
        }
        self.status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use Direction::{ToClient, ToServer};

    const HTTPS: (u16, u16) = (40000, 443);
    const ANY: (u16, u16) = (40000, 8080);

    #[test]
    fn http_both_directions_and_prefixes() {
        assert_eq!(probe(Transport::Tcp, ToServer, b"GET / HTTP/1.1\r\n", ANY), ProbeResult::Detected(AppProto::Http));
        assert_eq!(probe(Transport::Tcp, ToServer, b"PROPFIND /x", ANY), ProbeResult::Detected(AppProto::Http));
        assert_eq!(probe(Transport::Tcp, ToServer, b"GE", ANY), ProbeResult::NeedMore);
        assert_eq!(probe(Transport::Tcp, ToServer, b"GETX /", ANY), ProbeResult::Unknown);
        assert_eq!(probe(Transport::Tcp, ToClient, b"HTTP/1.1 200 OK", ANY), ProbeResult::Detected(AppProto::Http));
        assert_eq!(probe(Transport::Tcp, ToClient, b"HTTP/", ANY), ProbeResult::NeedMore);
        // Methods are case-sensitive.
        assert_eq!(probe(Transport::Tcp, ToServer, b"get / HTTP/1.0", ANY), ProbeResult::Unknown);
    }

    #[test]
    fn tls_records_and_sslv2_hello() {
        let hello = [0x16, 3, 1, 0x02, 0x00, 1, 0, 1, 0xfc];
        assert_eq!(probe(Transport::Tcp, ToServer, &hello, ANY), ProbeResult::Detected(AppProto::Tls));
        assert_eq!(probe(Transport::Tcp, ToServer, &hello[..4], ANY), ProbeResult::NeedMore);
        let server = [0x16, 3, 3, 0, 0x58, 2, 0, 0];
        assert_eq!(probe(Transport::Tcp, ToClient, &server, HTTPS), ProbeResult::Detected(AppProto::Tls));
        // Midstream: application data record.
        assert_eq!(
            probe(Transport::Tcp, ToClient, &[0x17, 3, 3, 0x01, 0xed, 0x5a], HTTPS),
            ProbeResult::Detected(AppProto::Tls)
        );
        // SSLv2 CLIENT-HELLO from the sslv2-tls-upgrade capture.
        let v2 = [0x80, 0x67, 0x01, 0x03, 0x01, 0x00, 0x4e];
        assert_eq!(probe(Transport::Tcp, ToServer, &v2, HTTPS), ProbeResult::Detected(AppProto::Tls));
        assert_eq!(probe(Transport::Tcp, ToServer, &[0x16, 4, 1, 0, 5, 1], ANY), ProbeResult::Unknown);
        assert_eq!(probe(Transport::Tcp, ToServer, &[0x16, 3, 1, 0xff, 0xff, 1], ANY), ProbeResult::Unknown);
    }

    #[test]
    fn ssh_banner_either_direction() {
        assert_eq!(
            probe(Transport::Tcp, ToClient, b"SSH-2.0-OpenSSH_9.6\r\n", ANY),
            ProbeResult::Detected(AppProto::Ssh)
        );
        assert_eq!(probe(Transport::Tcp, ToServer, b"SSH-2.0-PuTTY", ANY), ProbeResult::Detected(AppProto::Ssh));
        assert_eq!(probe(Transport::Tcp, ToServer, b"SS", ANY), ProbeResult::NeedMore);
    }

    #[test]
    fn smtp_and_ftp_banner_needs_port_or_client_command() {
        let banner = b"220 mail.example.com ESMTP\r\n";
        assert_eq!(probe(Transport::Tcp, ToClient, banner, (25, 50000)), ProbeResult::Detected(AppProto::Smtp));
        assert_eq!(
            probe(Transport::Tcp, ToClient, b"220 ProFTPD\r\n", (21, 50000)),
            ProbeResult::Detected(AppProto::Ftp)
        );
        assert_eq!(probe(Transport::Tcp, ToClient, banner, ANY), ProbeResult::Unknown);
        assert_eq!(probe(Transport::Tcp, ToServer, b"ehlo client\r\n", ANY), ProbeResult::Detected(AppProto::Smtp));
        assert_eq!(probe(Transport::Tcp, ToServer, b"USER anonymous\r\n", ANY), ProbeResult::Detected(AppProto::Ftp));
        let mut det = ProtoDetector::default();
        assert_eq!(det.on_data(Transport::Tcp, ToClient, banner, ANY), DetectStatus::Pending);
        assert_eq!(det.on_data(Transport::Tcp, ToServer, b"EHLO x\r\n", ANY), DetectStatus::Detected(AppProto::Smtp));
    }

    fn dns_query() -> Vec<u8> {
        let mut m = vec![0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        m.extend([6, b'g', b'o', b'o', b'g', b'l', b'e', 3, b'c', b'o', b'm', 0, 0, 1, 0, 1]);
        m
    }

    #[test]
    fn dns_on_configured_ports() {
        let q = dns_query();
        let ports = DetectionPorts { dns_tcp: vec![53], dns_udp: vec![5353], ..DetectionPorts::default() };
        assert_eq!(
            probe_with(Transport::Udp, ToServer, &q, (38246, 5353), &ports),
            ProbeResult::Detected(AppProto::Dns)
        );
        assert_eq!(probe_with(Transport::Udp, ToServer, &q, (38246, 53), &ports), ProbeResult::Unknown);
        let mut framed = (q.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&q);
        assert_eq!(probe_with(Transport::Tcp, ToServer, &framed, (40000, 5353), &ports), ProbeResult::Unknown);
        let mut det = ProtoDetector::default();
        assert_eq!(
            det.on_data_with(Transport::Udp, ToClient, &q, (5353, 38246), &ports),
            DetectStatus::Detected(AppProto::Dns)
        );
    }

    #[test]
    fn dns_by_port_udp_and_tcp() {
        let q = dns_query();
        assert_eq!(probe(Transport::Udp, ToServer, &q, (38246, 53)), ProbeResult::Detected(AppProto::Dns));
        assert_eq!(probe(Transport::Udp, ToServer, &q, (38246, 5354)), ProbeResult::Unknown);
        // Port 5353 is mDNS's, as in Suricata 8.
        assert_eq!(probe(Transport::Udp, ToServer, &q, (38246, 5353)), ProbeResult::Detected(AppProto::Mdns));
        assert_eq!(probe(Transport::Udp, ToServer, &q[..10], (38246, 53)), ProbeResult::Unknown);
        let mut framed = (q.len() as u16).to_be_bytes().to_vec();
        framed.extend(&q);
        assert_eq!(probe(Transport::Tcp, ToServer, &framed, (40000, 53)), ProbeResult::Detected(AppProto::Dns));
        assert_eq!(probe(Transport::Tcp, ToServer, &framed[..8], (40000, 53)), ProbeResult::NeedMore);
        assert_eq!(probe(Transport::Tcp, ToServer, &framed, ANY), ProbeResult::Unknown);
        // Header claims more records than the frame could hold.
        let mut bad = framed.clone();
        bad[7] = 0xff;
        assert_eq!(probe(Transport::Tcp, ToServer, &bad, (40000, 53)), ProbeResult::Unknown);
    }

    #[test]
    fn detector_either_direction_and_mismatch() {
        let mut det = ProtoDetector::default();
        assert_eq!(det.on_data(Transport::Tcp, ToServer, b"\x00\x01garbage", ANY), DetectStatus::Pending);
        assert_eq!(det.on_data(Transport::Tcp, ToClient, b"SSH-2.0-x", ANY), DetectStatus::Detected(AppProto::Ssh));
        let mut det = ProtoDetector::default();
        det.on_data(Transport::Tcp, ToServer, b"GET / HTTP/1.1\r\n", ANY);
        assert_eq!(det.on_data(Transport::Tcp, ToClient, b"SSH-2.0-x", ANY), DetectStatus::Detected(AppProto::Http));
        assert!(det.mismatch);
    }

    #[test]
    fn detector_fails_when_both_unknown_or_limit_reached() {
        let mut det = ProtoDetector::default();
        // (A zero first byte could still be SMB's NetBIOS header: not that.)
        det.on_data(Transport::Tcp, ToServer, b"\x01\x00\x00", ANY);
        assert_eq!(det.on_data(Transport::Tcp, ToClient, b"hello", ANY), DetectStatus::Failed);
        // A never-ending prefix ("GE...") gives up at the limit.
        let mut det = ProtoDetector::new(2);
        assert_eq!(det.on_data(Transport::Tcp, ToServer, b"GE", ANY), DetectStatus::Pending);
        assert_eq!(det.direction_finished(ToClient), DetectStatus::Failed);
        // Growing data: NeedMore then detection.
        let mut det = ProtoDetector::default();
        assert_eq!(det.on_data(Transport::Tcp, ToServer, b"PO", ANY), DetectStatus::Pending);
        assert_eq!(det.on_data(Transport::Tcp, ToServer, b"POST /x", ANY), DetectStatus::Detected(AppProto::Http));
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64), sp in any::<u16>(), dp in any::<u16>()) {
            for dir in [ToServer, ToClient] {
                for t in [Transport::Tcp, Transport::Udp] {
                    let _ = probe(t, dir, &data, (sp, dp));
                }
            }
        }

        /// Once a prefix is detected, longer data with the same start stays detected the same.
        #[test]
        fn detection_is_stable_as_data_grows(extra in proptest::collection::vec(any::<u8>(), 0..32)) {
            for start in [&b"GET /"[..], b"SSH-2.0", b"\x16\x03\x01\x02\x00\x01", b"HTTP/1.0 "] {
                let first = probe(Transport::Tcp, ToServer, start, ANY);
                let first_tc = probe(Transport::Tcp, ToClient, start, ANY);
                let mut longer = start.to_vec();
                longer.extend(&extra);
                if let ProbeResult::Detected(_) = first {
                    prop_assert_eq!(probe(Transport::Tcp, ToServer, &longer, ANY), first);
                }
                if let ProbeResult::Detected(_) = first_tc {
                    prop_assert_eq!(probe(Transport::Tcp, ToClient, &longer, ANY), first_tc);
                }
            }
        }
    }
}
