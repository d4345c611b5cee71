//! Protocols picket recognises without parsing them, so that eve's `app_proto`, the
//! `app-layer-protocol` keyword and rules whose header names the protocol see what Suricata
//! sees: dnp3, pgsql, rfb, ike, snmp, dhcp, enip, rdp, smb, dcerpc, mqtt, nfs, krb5, ntp,
//! sip, modbus, tftp, http2, bittorrent-dht, quic, ldap, mdns.
//!
//! One table ([`TABLE`]) says, per protocol and transport, how Suricata detects it:
//! - a *pattern* checked on any port (rfb's "RFB ", the HTTP/2 preface, SMB's magic after
//!   the NetBIOS header, DCE/RPC's version bytes, SIP's methods, the DHT's bencoding);
//! - a *probe* run only when the flow's server port is one of the protocol's
//!   `detection-ports` `dp` (or its client port one of `sp`), with Suricata's defaults;
//!   like Suricata's probing parsers, a probe gives up once more than `max_depth` bytes
//!   did not decide it.
//!
//! [`DetectOnlySettings`] holds what the YAML changes (`app-layer.protocols.<proto>.enabled`
//! and `detection-ports`); a protocol that is not enabled is not detected. The checks
//! themselves are in [`probes`].

pub mod probes;

use crate::applayer::AppProto;
use crate::stream::Direction;
use probes::Probe;

/// A check of one direction's first bytes.
pub type ProbeFn = fn(Direction, &[u8]) -> Probe;

/// How a protocol is detected over one transport.
pub struct Detection {
    /// Checked on any port, before the port probes (Suricata's pattern matching).
    pub pattern: Option<ProbeFn>,
    /// Checked when a port matches.
    pub probe: Option<ProbeFn>,
    /// Default server ports (`detection-ports.dp`).
    pub dp: &'static [u16],
    /// Default client ports (`detection-ports.sp`).
    pub sp: &'static [u16],
    /// Bytes after which an undecided probe gives up (Suricata's `max_depth`); 0: none.
    pub max_depth: usize,
}

const fn on_ports(probe: ProbeFn, dp: &'static [u16]) -> Detection {
    Detection { pattern: None, probe: Some(probe), dp, sp: &[], max_depth: 16 }
}

const fn anywhere(pattern: ProbeFn) -> Detection {
    Detection { pattern: Some(pattern), probe: None, dp: &[], sp: &[], max_depth: 0 }
}

/// One detection-only protocol.
pub struct Entry {
    pub proto: AppProto,
    /// Detected unless the YAML says otherwise (suricata.yaml's defaults: dnp3, enip,
    /// modbus and pgsql are off).
    pub enabled: bool,
    pub tcp: Option<Detection>,
    pub udp: Option<Detection>,
}

/// Every detection-only protocol, in the order their checks run.
pub static TABLE: [Entry; 22] = [
    Entry {
        proto: AppProto::Http2,
        enabled: true,
        tcp: Some(Detection {
            pattern: Some(probes::http2_preface),
            probe: Some(probes::http2_settings),
            dp: &[80],
            sp: &[],
            max_depth: 24,
        }),
        udp: None,
    },
    Entry { proto: AppProto::Rfb, enabled: true, tcp: Some(anywhere(probes::rfb)), udp: None },
    Entry {
        proto: AppProto::Smb,
        enabled: true,
        tcp: Some(Detection {
            pattern: Some(probes::smb_pattern),
            probe: Some(probes::smb_port),
            dp: &[139, 445],
            sp: &[],
            max_depth: 0,
        }),
        udp: None,
    },
    Entry { proto: AppProto::Dcerpc, enabled: true, tcp: Some(anywhere(probes::dcerpc)), udp: None },
    Entry { proto: AppProto::Sip, enabled: true, tcp: None, udp: Some(anywhere(probes::sip)) },
    Entry { proto: AppProto::BittorrentDht, enabled: true, tcp: None, udp: Some(anywhere(probes::bittorrent_dht)) },
    Entry { proto: AppProto::Dnp3, enabled: false, tcp: Some(on_ports(probes::dnp3, &[20000])), udp: None },
    Entry {
        proto: AppProto::Pgsql,
        enabled: false,
        tcp: Some(Detection { max_depth: 0, ..on_ports(probes::pgsql, &[5432]) }),
        udp: None,
    },
    Entry { proto: AppProto::Rdp, enabled: true, tcp: Some(on_ports(probes::rdp, &[3389])), udp: None },
    Entry { proto: AppProto::Modbus, enabled: false, tcp: Some(on_ports(probes::modbus, &[502])), udp: None },
    Entry {
        proto: AppProto::Enip,
        enabled: false,
        tcp: Some(Detection { sp: &[44818], max_depth: 0, ..on_ports(probes::enip, &[44818]) }),
        udp: Some(Detection { sp: &[44818], max_depth: 0, ..on_ports(probes::enip, &[44818]) }),
    },
    Entry { proto: AppProto::Mqtt, enabled: true, tcp: Some(on_ports(probes::mqtt, &[1883])), udp: None },
    Entry {
        proto: AppProto::Nfs,
        enabled: true,
        tcp: Some(on_ports(probes::nfs_tcp, &[2049])),
        udp: Some(on_ports(probes::nfs_udp, &[2049])),
    },
    Entry {
        proto: AppProto::Krb5,
        enabled: true,
        tcp: Some(on_ports(probes::krb5_tcp, &[88])),
        udp: Some(on_ports(probes::krb5_udp, &[88])),
    },
    Entry {
        proto: AppProto::Ldap,
        enabled: true,
        tcp: Some(on_ports(probes::ldap, &[389, 3268])),
        udp: Some(on_ports(probes::ldap, &[389, 3268])),
    },
    Entry { proto: AppProto::Ike, enabled: true, tcp: None, udp: Some(on_ports(probes::ike, &[500])) },
    Entry { proto: AppProto::Snmp, enabled: true, tcp: None, udp: Some(on_ports(probes::snmp, &[161, 162])) },
    Entry { proto: AppProto::Dhcp, enabled: true, tcp: None, udp: Some(on_ports(probes::dhcp, &[67, 68])) },
    Entry { proto: AppProto::Ntp, enabled: true, tcp: None, udp: Some(on_ports(probes::ntp, &[123])) },
    Entry { proto: AppProto::Tftp, enabled: true, tcp: None, udp: Some(on_ports(probes::tftp, &[69])) },
    Entry { proto: AppProto::Quic, enabled: true, tcp: None, udp: Some(on_ports(probes::quic, &[443, 80])) },
    Entry { proto: AppProto::Mdns, enabled: true, tcp: None, udp: Some(on_ports(probes::mdns, &[5353])) },
];

/// The table entry of `proto`, if it is detection-only.
pub fn entry(proto: AppProto) -> Option<&'static Entry> {
    TABLE.iter().find(|e| e.proto == proto)
}

/// Ports Suricata's default configuration probes the protocol on (TCP's, else UDP's).
pub fn default_ports(proto: AppProto) -> &'static [u16] {
    entry(proto).and_then(|e| e.tcp.as_ref().or(e.udp.as_ref())).map(|d| d.dp).unwrap_or(&[])
}

/// One protocol over one transport as configured: detected or not, and on which ports.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct PortSet {
    pub enabled: bool,
    pub dp: Vec<u16>,
    pub sp: Vec<u16>,
}

/// One protocol's configured state, per transport.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtoSettings {
    pub tcp: PortSet,
    pub udp: PortSet,
}

/// What the YAML says of the detection-only protocols, in [`TABLE`] order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DetectOnlySettings {
    pub protocols: Vec<ProtoSettings>,
}

impl Default for DetectOnlySettings {
    fn default() -> Self {
        let ports = |e: &Entry, d: &Option<Detection>| {
            d.as_ref().map(|d| PortSet { enabled: e.enabled, dp: d.dp.to_vec(), sp: d.sp.to_vec() }).unwrap_or_default()
        };
        DetectOnlySettings {
            protocols: TABLE.iter().map(|e| ProtoSettings { tcp: ports(e, &e.tcp), udp: ports(e, &e.udp) }).collect(),
        }
    }
}

/// One protocol's settings over one transport as read from `app-layer.protocols.<name>`
/// (each `None` keeps the default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProtoOverride {
    pub enabled: Option<bool>,
    pub dp: Option<Vec<u16>>,
    pub sp: Option<Vec<u16>>,
}

impl DetectOnlySettings {
    /// Applies the YAML's settings of `proto` over TCP (`tcp`) or UDP; ignored for a
    /// protocol that is not detection-only.
    pub fn apply(&mut self, proto: AppProto, tcp: bool, o: &ProtoOverride) {
        let Some(i) = TABLE.iter().position(|e| e.proto == proto) else { return };
        let p = &mut self.protocols[i];
        let set = if tcp { &mut p.tcp } else { &mut p.udp };
        if let Some(enabled) = o.enabled {
            set.enabled = enabled;
        }
        if let Some(dp) = &o.dp {
            set.dp = dp.clone();
        }
        if let Some(sp) = &o.sp {
            set.sp = sp.clone();
        }
    }

    /// Whether `proto` is enabled over TCP (`app-layer.protocols.<name>.enabled`); true for a
    /// protocol not in the table.
    pub fn tcp_enabled(&self, proto: AppProto) -> bool {
        TABLE.iter().position(|e| e.proto == proto).is_none_or(|i| self.protocols[i].tcp.enabled)
    }

    /// Whether a UDP datagram could start a detection-only protocol: its flow is on one of
    /// an enabled protocol's ports, or an any-port pattern matches it. Stateless and cheap:
    /// it decides whether a UDP flow gets app-layer state at all.
    pub fn udp_candidate(&self, dir: Direction, ports: (u16, u16), payload: &[u8]) -> bool {
        TABLE.iter().zip(&self.protocols).any(|(e, s)| {
            let Some(d) = e.udp.as_ref().filter(|_| s.udp.enabled) else { return false };
            s.udp.dp.contains(&ports.1)
                || s.udp.sp.contains(&ports.0)
                || d.pattern.is_some_and(|f| f(dir, payload) == Probe::Match)
        })
    }

    /// The first detection-only protocol `data` (the first bytes of `dir`) belongs to, else
    /// whether more bytes could tell. `ports` are (client, server); `tcp` tells the transport.
    pub fn detect<'a>(&'a self, tcp: bool, dir: Direction, data: &[u8], ports: (u16, u16)) -> Result<AppProto, Probe> {
        let detection = |e: &'static Entry, s: &'a ProtoSettings| {
            let (d, set) = if tcp { (e.tcp.as_ref(), &s.tcp) } else { (e.udp.as_ref(), &s.udp) };
            d.filter(|_| set.enabled).map(|d| (d, set))
        };
        let mut need_more = false;
        for (e, s) in TABLE.iter().zip(&self.protocols) {
            if let Some((Detection { pattern: Some(f), .. }, _)) = detection(e, s) {
                match f(dir, data) {
                    Probe::Match => return Ok(e.proto),
                    Probe::NeedMore => need_more = true,
                    Probe::NoMatch => {}
                }
            }
        }
        for (e, s) in TABLE.iter().zip(&self.protocols) {
            let Some((d, set)) = detection(e, s) else { continue };
            let Some(f) = d.probe else { continue };
            if !set.dp.contains(&ports.1) && !set.sp.contains(&ports.0) {
                continue;
            }
            match f(dir, data) {
                Probe::Match => return Ok(e.proto),
                Probe::NeedMore if d.max_depth == 0 || data.len() <= d.max_depth => need_more = true,
                _ => {}
            }
        }
        Err(if need_more { Probe::NeedMore } else { Probe::NoMatch })
    }
}

#[cfg(test)]
mod tests;
