//! Rule header: `action proto src sport dir dst dport`.

use super::error::{RuleError, Side};
use super::vars::{AddressSet, PortSet, RuleVars};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    Alert,
    Pass,
    Drop,
    Reject,
    RejectSrc,
    RejectDst,
    RejectBoth,
}

impl Action {
    pub fn parse(text: &str) -> Option<Action> {
        Some(match text {
            "alert" => Action::Alert,
            "pass" => Action::Pass,
            "drop" => Action::Drop,
            "reject" => Action::Reject,
            "rejectsrc" => Action::RejectSrc,
            "rejectdst" => Action::RejectDst,
            "rejectboth" => Action::RejectBoth,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Alert => "alert",
            Action::Pass => "pass",
            Action::Drop => "drop",
            Action::Reject => "reject",
            Action::RejectSrc => "rejectsrc",
            Action::RejectDst => "rejectdst",
            Action::RejectBoth => "rejectboth",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// Any IP packet (`ip`, also `ipv4`/`ipv6` restricted by family).
    Ip,
    Ipv4,
    Ipv6,
    Tcp,
    /// `tcp-pkt`: TCP, packets only (no stream reassembly).
    TcpPkt,
    /// `tcp-stream`: TCP, reassembled stream only.
    TcpStream,
    Udp,
    /// `icmp` matches ICMPv4 and ICMPv6.
    Icmp,
    Icmpv4,
    Icmpv6,
    Sctp,
    /// `pkthdr`: decoder-level rules that match even packets that fail to decode.
    PktHdr,
    /// An application-layer protocol; the name is the canonical entry of [`APP_PROTOCOLS`].
    App(&'static str),
}

/// Application-layer protocol names accepted in the header and by `app-layer-protocol`.
pub const APP_PROTOCOLS: &[&str] = &[
    "http",
    "http1",
    "http2",
    "ftp",
    "ftp-data",
    "smtp",
    "tls",
    "ssh",
    "imap",
    "pop3",
    "smb",
    "dcerpc",
    "dns",
    "modbus",
    "enip",
    "dnp3",
    "nfs",
    "ntp",
    "tftp",
    "ikev2",
    "ike",
    "krb5",
    "dhcp",
    "snmp",
    "sip",
    "rfb",
    "mqtt",
    "pgsql",
    "telnet",
    "websocket",
    "ldap",
    "doh2",
    "quic",
    "rdp",
    "bittorrent-dht",
    "template",
    "failed",
    "unknown",
    "irc",
    "jabber",
    "msn",
];

impl Protocol {
    pub fn parse(text: &str) -> Option<Protocol> {
        let lower = text.to_ascii_lowercase();
        Some(match lower.as_str() {
            "ip" => Protocol::Ip,
            "ipv4" | "ip4" => Protocol::Ipv4,
            "ipv6" | "ip6" => Protocol::Ipv6,
            "tcp" => Protocol::Tcp,
            "tcp-pkt" => Protocol::TcpPkt,
            "tcp-stream" => Protocol::TcpStream,
            "udp" => Protocol::Udp,
            "icmp" => Protocol::Icmp,
            "icmpv4" => Protocol::Icmpv4,
            "icmpv6" => Protocol::Icmpv6,
            "sctp" => Protocol::Sctp,
            "pkthdr" => Protocol::PktHdr,
            other => return app_protocol(other).map(Protocol::App),
        })
    }
}

/// Canonical static name for an application protocol, if known.
pub fn app_protocol(name: &str) -> Option<&'static str> {
    APP_PROTOCOLS.iter().copied().find(|p| p.eq_ignore_ascii_case(name))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// `->`
    ToDst,
    /// `<>`: either direction.
    Both,
    /// `=>`: transactional rule, request and response of the same transaction.
    Transactional,
}

/// The parsed header. Address/port texts are kept next to their compiled sets for messages.
#[derive(Clone, Debug)]
pub struct RuleHeader {
    pub action: Action,
    pub protocol: Protocol,
    pub src: AddressSet,
    pub src_ports: PortSet,
    pub direction: Direction,
    pub dst: AddressSet,
    pub dst_ports: PortSet,
    pub src_text: String,
    pub src_ports_text: String,
    pub dst_text: String,
    pub dst_ports_text: String,
}

/// Splits the header into whitespace-separated fields while keeping `[...]` groups whole
/// (they may contain spaces, e.g. `[80, 443]`).
fn split_header_fields(text: &str) -> Result<Vec<&str>, RuleError> {
    let bytes = text.as_bytes();
    let mut fields = Vec::with_capacity(7);
    let mut i = 0;
    while i < bytes.len() {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= bytes.len() {
            break;
        }
        let start = i;
        let mut depth: usize = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'[' => depth += 1,
                b']' => {
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| RuleError::UnbalancedBracket { bracket: ']', header: text.to_string() })?
                }
                c if c.is_ascii_whitespace() && depth == 0 => break,
                _ => {}
            }
            i += 1;
        }
        if depth != 0 {
            return Err(RuleError::UnbalancedBracket { bracket: '[', header: text.to_string() });
        }
        fields.push(&text[start..i]);
    }
    Ok(fields)
}

pub fn parse_header(text: &str, vars: &RuleVars) -> Result<RuleHeader, RuleError> {
    let fields = split_header_fields(text)?;
    if fields.len() != 7 {
        return Err(RuleError::HeaderFields { found: fields.len(), header: text.trim().to_string() });
    }
    let action = Action::parse(fields[0]).ok_or_else(|| RuleError::UnknownAction { action: fields[0].to_string() })?;
    let protocol =
        Protocol::parse(fields[1]).ok_or_else(|| RuleError::UnknownProtocol { protocol: fields[1].to_string() })?;
    let direction = match fields[4] {
        "->" => Direction::ToDst,
        "<>" => Direction::Both,
        "=>" => Direction::Transactional,
        "<-" => return Err(RuleError::LeftArrow),
        other => return Err(RuleError::BadDirection { direction: other.to_string() }),
    };
    let address = |side, spec| vars.resolve_address(spec).map_err(|error| RuleError::BadAddress { side, error });
    let port = |side, spec| vars.resolve_port(spec).map_err(|error| RuleError::BadPort { side, error });
    let src = address(Side::Source, fields[2])?;
    let src_ports = port(Side::Source, fields[3])?;
    let dst = address(Side::Destination, fields[5])?;
    let dst_ports = port(Side::Destination, fields[6])?;
    Ok(RuleHeader {
        action,
        protocol,
        src,
        src_ports,
        direction,
        dst,
        dst_ports,
        src_text: fields[2].to_string(),
        src_ports_text: fields[3].to_string(),
        dst_text: fields[5].to_string(),
        dst_ports_text: fields[6].to_string(),
    })
}
