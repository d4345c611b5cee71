//! Packet-level keywords parsed outside the main option table: `tcp.mss`, `vlan.id`,
//! `vlan.layers`, the checksum keywords (`tcpv4-csum` ...), `decode-event` and `tag`. Kept in
//! their own file so the big option parser stays readable.

use super::error::OptionError;
use super::values::{bad_part, parse_u32, parse_uint_cmp, UintCmp};
use crate::decode::events::DecodeEvent;

/// Which VLAN tag(s) `vlan.id` looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VlanLayer {
    /// No layer given: any tag may match.
    Any,
    /// `all`: every tag must match.
    All,
    /// A layer index, outermost first; negative counts from the innermost (`-1` = last).
    Index(i8),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlanId {
    pub cmp: UintCmp<u16>,
    pub layer: VlanLayer,
}

impl VlanId {
    /// Whether the packet's tags (outermost first) satisfy the keyword. Untagged packets
    /// never match, whatever the comparison (as in Suricata).
    pub fn matches(&self, tags: &[u16]) -> bool {
        if tags.is_empty() {
            return false;
        }
        match self.layer {
            VlanLayer::Any => tags.iter().any(|&t| self.cmp.matches(t)),
            VlanLayer::All => tags.iter().all(|&t| self.cmp.matches(t)),
            VlanLayer::Index(i) => {
                let idx = if i < 0 { tags.len() as i64 + i as i64 } else { i as i64 };
                usize::try_from(idx).ok().and_then(|i| tags.get(i)).is_some_and(|&t| self.cmp.matches(t))
            }
        }
    }
}

/// The header whose checksum a `*-csum` keyword verifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChecksumLayer {
    Ipv4,
    Tcpv4,
    Tcpv6,
    Udpv4,
    Udpv6,
    Icmpv4,
    Icmpv6,
}

impl ChecksumLayer {
    fn from_keyword(kw: &str) -> Option<ChecksumLayer> {
        Some(match kw {
            "ipv4-csum" => ChecksumLayer::Ipv4,
            "tcpv4-csum" => ChecksumLayer::Tcpv4,
            "tcpv6-csum" => ChecksumLayer::Tcpv6,
            "udpv4-csum" => ChecksumLayer::Udpv4,
            "udpv6-csum" => ChecksumLayer::Udpv6,
            "icmpv4-csum" => ChecksumLayer::Icmpv4,
            "icmpv6-csum" => ChecksumLayer::Icmpv6,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TagScope {
    Session,
    Host,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TagMetric {
    Packets,
    Seconds,
    Bytes,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TagDirection {
    Src,
    Dst,
}

/// `tag:session|host[,count,packets|seconds|bytes[,src|dst]]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tag {
    pub scope: TagScope,
    pub count: u32,
    pub metric: TagMetric,
    /// Which host a host tag follows (Suricata's default: src).
    pub direction: TagDirection,
}

/// Suricata's default when `tag:session` gives no count: 256 packets.
pub const TAG_DEFAULT_PACKETS: u32 = 256;

/// One of this file's keywords, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKeyword {
    TcpMss(UintCmp<u16>),
    VlanId(VlanId),
    VlanLayers(UintCmp<u8>),
    Checksum { layer: ChecksumLayer, valid: bool },
    DecodeEvent(DecodeEvent),
    Tag(Tag),
}

/// Parses one of this file's keywords; `None` when `kw` is not one of them.
pub fn parse(kw: &str, value: Option<&str>) -> Option<Result<PacketKeyword, OptionError>> {
    let need = || value.map(str::trim).ok_or_else(|| OptionError::MissingValue { keyword: kw.to_string() });
    let parsed = match kw {
        "tcp.mss" => need().and_then(|v| parse_uint_cmp(v, kw)).map(PacketKeyword::TcpMss),
        "vlan.id" => need().and_then(parse_vlan_id).map(PacketKeyword::VlanId),
        "vlan.layers" => need().and_then(|v| parse_uint_cmp(v, kw)).map(PacketKeyword::VlanLayers),
        "decode-event" => need().and_then(|v| {
            let name = v.trim_matches('"').trim();
            DecodeEvent::from_name(name)
                .map(PacketKeyword::DecodeEvent)
                .ok_or_else(|| OptionError::UnknownDecodeEvent { name: name.to_string() })
        }),
        "tag" => need().and_then(parse_tag).map(PacketKeyword::Tag),
        _ => {
            let layer = ChecksumLayer::from_keyword(kw)?;
            need().and_then(|v| match v.trim_matches('"').trim() {
                "valid" => Ok(PacketKeyword::Checksum { layer, valid: true }),
                "invalid" => Ok(PacketKeyword::Checksum { layer, valid: false }),
                other => Err(OptionError::ChecksumValue { keyword: kw.to_string(), value: other.to_string() }),
            })
        }
    };
    Some(parsed)
}

fn parse_vlan_id(v: &str) -> Result<VlanId, OptionError> {
    let (cmp_text, layer_text) = match v.split_once(',') {
        Some((c, l)) => (c.trim(), Some(l.trim())),
        None => (v.trim(), None),
    };
    let layer = match layer_text {
        None => VlanLayer::Any,
        Some("all") => VlanLayer::All,
        Some(l) => {
            let i: i8 = l.parse().map_err(|_| bad_part("vlan.id", "layer", l))?;
            // Suricata keeps at most 3 tags: layers 0..2, or -1..-3 from the innermost.
            if !(-3..=2).contains(&i) {
                return Err(OptionError::VlanLayerRange { layer: i });
            }
            VlanLayer::Index(i)
        }
    };
    let cmp: UintCmp<u16> = parse_uint_cmp(cmp_text, "vlan.id")?;
    Ok(VlanId { cmp, layer })
}

fn parse_tag(v: &str) -> Result<Tag, OptionError> {
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let scope = match parts.first().copied().unwrap_or("") {
        "session" => TagScope::Session,
        "host" => TagScope::Host,
        other => return Err(bad_part("tag", "type", other)),
    };
    let mut tag = Tag { scope, count: TAG_DEFAULT_PACKETS, metric: TagMetric::Packets, direction: TagDirection::Src };
    match parts.len() {
        1 => {}
        3 | 4 => {
            tag.count = parse_u32(parts[1], "tag count")?;
            tag.metric = match parts[2] {
                "packets" => TagMetric::Packets,
                "seconds" => TagMetric::Seconds,
                "bytes" => TagMetric::Bytes,
                other => return Err(bad_part("tag", "metric", other)),
            };
            if let Some(dir) = parts.get(3) {
                if scope != TagScope::Host {
                    return Err(OptionError::Constraint {
                        keyword: "tag",
                        rule: "a direction applies to host tags only",
                    });
                }
                tag.direction = match *dir {
                    "src" => TagDirection::Src,
                    "dst" => TagDirection::Dst,
                    other => return Err(bad_part("tag", "direction", other)),
                };
            }
        }
        _ => return Err(OptionError::TagUsage { value: v.to_string() }),
    }
    Ok(tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opt(kw: &str, v: &str) -> PacketKeyword {
        parse(kw, Some(v)).expect("known keyword").expect("valid value")
    }

    fn err(kw: &str, v: &str) -> OptionError {
        parse(kw, Some(v)).expect("known keyword").expect_err("must be rejected")
    }

    #[test]
    fn not_ours() {
        assert!(parse("content", Some("\"x\"")).is_none());
        assert!(parse("tcp.hdr", None).is_none());
    }

    #[test]
    fn tcp_mss_and_vlan() {
        assert_eq!(opt("tcp.mss", "<536"), PacketKeyword::TcpMss(UintCmp::Lt(536)));
        assert_eq!(opt("vlan.layers", ">2"), PacketKeyword::VlanLayers(UintCmp::Gt(2)));
        assert_eq!(
            opt("vlan.id", "0x12C,1"),
            PacketKeyword::VlanId(VlanId { cmp: UintCmp::Eq(300), layer: VlanLayer::Index(1) })
        );
        assert_eq!(
            opt("vlan.id", "!500,all"),
            PacketKeyword::VlanId(VlanId { cmp: UintCmp::Ne(500), layer: VlanLayer::All })
        );
        assert_eq!(
            opt("vlan.id", "400,-1"),
            PacketKeyword::VlanId(VlanId { cmp: UintCmp::Eq(400), layer: VlanLayer::Index(-1) })
        );
        assert_eq!(err("vlan.id", "1,5"), OptionError::VlanLayerRange { layer: 5 });
        assert_eq!(
            err("vlan.id", "70000"),
            OptionError::OutOfRange { keyword: "vlan.id".into(), value: "70000".into() }
        );
        assert_eq!(err("vlan.id", "70000").to_string(), "vlan.id value '70000' out of range");
        assert!(parse("tcp.mss", None).expect("known").is_err());
    }

    #[test]
    fn vlan_layer_selection() {
        let tags = [200, 300, 400];
        let at = |layer, v| VlanId { cmp: UintCmp::Eq(v), layer }.matches(&tags);
        assert!(at(VlanLayer::Index(0), 200));
        assert!(at(VlanLayer::Index(-1), 400));
        assert!(at(VlanLayer::Index(-3), 200));
        assert!(!at(VlanLayer::Index(2), 300));
        assert!(at(VlanLayer::Any, 300));
        assert!(!VlanId { cmp: UintCmp::Ne(0), layer: VlanLayer::Index(3) }.matches(&tags));
        assert!(!VlanId { cmp: UintCmp::Ne(1), layer: VlanLayer::All }.matches(&[]));
    }

    #[test]
    fn checksums_and_decode_events() {
        assert_eq!(opt("tcpv4-csum", "invalid"), PacketKeyword::Checksum { layer: ChecksumLayer::Tcpv4, valid: false });
        assert_eq!(opt("icmpv6-csum", "valid"), PacketKeyword::Checksum { layer: ChecksumLayer::Icmpv6, valid: true });
        assert_eq!(err("ipv4-csum", "maybe").to_string(), "'ipv4-csum': expected valid or invalid, got 'maybe'");
        assert_eq!(opt("decode-event", "ipv4.trunc_pkt"), PacketKeyword::DecodeEvent(DecodeEvent::Ipv4TruncPkt));
        assert_eq!(
            err("decode-event", "no.such_event"),
            OptionError::UnknownDecodeEvent { name: "no.such_event".into() }
        );
    }

    #[test]
    fn tag_forms() {
        let t = |v| match opt("tag", v) {
            PacketKeyword::Tag(t) => t,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            t("session"),
            Tag { scope: TagScope::Session, count: 256, metric: TagMetric::Packets, direction: TagDirection::Src }
        );
        assert_eq!(
            t("host,9,packets,dst"),
            Tag { scope: TagScope::Host, count: 9, metric: TagMetric::Packets, direction: TagDirection::Dst }
        );
        assert_eq!(t("session,30,seconds").metric, TagMetric::Seconds);
        assert!(err("tag", "session,3,packets,dst").to_string().contains("host tags only"));
        assert_eq!(err("tag", "flow").to_string(), "tag: invalid type 'flow'");
        assert_eq!(err("tag", "host,3"), OptionError::TagUsage { value: "host,3".into() });
    }
}
