//! Rule header: `action proto src sport dir dst dport`.

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
    APP_PROTOCOLS
        .iter()
        .copied()
        .find(|p| p.eq_ignore_ascii_case(name))
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
fn split_header_fields(text: &str) -> Result<Vec<&str>, String> {
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
                        .ok_or_else(|| format!("unbalanced ']' in header '{text}'"))?
                }
                c if c.is_ascii_whitespace() && depth == 0 => break,
                _ => {}
            }
            i += 1;
        }
        if depth != 0 {
            return Err(format!("unbalanced '[' in header '{text}'"));
        }
        fields.push(&text[start..i]);
    }
    Ok(fields)
}

pub fn parse_header(text: &str, vars: &RuleVars) -> Result<RuleHeader, String> {
    let fields = split_header_fields(text)?;
    if fields.len() != 7 {
        return Err(format!(
            "header must be 'action proto src sport direction dst dport', got {} fields in '{}'",
            fields.len(),
            text.trim()
        ));
    }
    let action =
        Action::parse(fields[0]).ok_or_else(|| format!("unknown action '{}'", fields[0]))?;
    let protocol =
        Protocol::parse(fields[1]).ok_or_else(|| format!("unknown protocol '{}'", fields[1]))?;
    let direction = match fields[4] {
        "->" => Direction::ToDst,
        "<>" => Direction::Both,
        "=>" => Direction::Transactional,
        "<-" => {
            return Err("direction '<-' is not supported, use '->' with swapped addresses".into())
        }
        other => return Err(format!("invalid direction '{other}'")),
    };
    let src = vars
        .resolve_address(fields[2])
        .map_err(|e| format!("source address: {e}"))?;
    let src_ports = vars
        .resolve_port(fields[3])
        .map_err(|e| format!("source port: {e}"))?;
    let dst = vars
        .resolve_address(fields[5])
        .map_err(|e| format!("destination address: {e}"))?;
    let dst_ports = vars
        .resolve_port(fields[6])
        .map_err(|e| format!("destination port: {e}"))?;
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
