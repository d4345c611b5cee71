//! Suricata EVE JSON: the one place where the inspector's events become eve.json lines.
//! `output::sink::LogSink` hands each event to the writer of its record:
//!
//! | event | record | module |
//! |---|---|---|
//! | `Event::Alert` | `alert` | [`alert`] |
//! | `Event::Drop` | `drop` | [`drop`] |
//! | `Event::Flow` | `flow` | [`flow`] |
//! | `Event::Transaction` | `http`, `dns`, `tls`, `fileinfo` | [`tx`] (header), [`http`], [`dns`], [`tls`], [`fileinfo`] |
//! | `Event::Anomaly` | `anomaly` | [`anomaly`] |
//!
//! Protocol objects (`http`, `dns`, `tls`) are written by each protocol's `write_record`
//! in picket-core through [`picket_core::record::RecordWriter`], which the JSON writer
//! implements.

pub mod alert;
pub mod anomaly;
pub mod common;
pub mod community_id;
pub mod dns;
pub mod drop;
pub mod fileinfo;
pub mod flow;
pub mod header;
pub mod http;
pub mod http2;
pub mod options;
pub mod smtp;
pub mod ssh;
pub mod tls;
pub mod tx;
pub mod verdict;

pub use options::{AlertLogOptions, DropLogOptions, EveTypes, XffOptions};

use super::json::JsonObject;
use crate::packet::Timestamp;
use std::borrow::Cow;
use std::io::Write as _;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};

/// Formats a capture timestamp the way Suricata's eve.json does:
/// `2009-11-24T21:27:09.534255+0000` (microseconds, UTC offset spelled out).
pub fn format_timestamp(ts: Timestamp) -> String {
    let mut out = Vec::with_capacity(32);
    write_timestamp(&mut out, ts);
    String::from_utf8_lossy(&out).into_owned()
}

/// Appends [`format_timestamp`]'s text to `out` without building a `String` (every event
/// writes one or more timestamps).
pub fn write_timestamp(out: &mut Vec<u8>, ts: Timestamp) {
    let secs = ts.secs() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400) as u64;
    let (y, m, d) = civil_from_days(days);
    // A nanosecond u64 reaches the year 2554, so four digits always do; the general path
    // stays for safety.
    if !(0..=9999).contains(&y) {
        let (h, min, sec, us) = (rem / 3600, (rem / 60) % 60, rem % 60, ts.subsec_nanos() / 1000);
        let _ = write!(out, "{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{sec:02}.{us:06}+0000");
        return;
    }
    // Digits go into a fixed template, written with one copy.
    let mut text = *b"0000-00-00T00:00:00.000000+0000";
    put_digits(&mut text[0..4], y as u64);
    put_digits(&mut text[5..7], m.into());
    put_digits(&mut text[8..10], d.into());
    put_digits(&mut text[11..13], rem / 3600);
    put_digits(&mut text[14..16], (rem / 60) % 60);
    put_digits(&mut text[17..19], rem % 60);
    put_digits(&mut text[20..26], u64::from(ts.subsec_nanos() / 1000));
    out.extend_from_slice(&text);
}

/// Fills `slot` with the last `slot.len()` decimal digits of `value`, zero-padded.
fn put_digits(slot: &mut [u8], mut value: u64) {
    for digit in slot.iter_mut().rev() {
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// eve-log's `ipv6-compress`: IPv6 addresses in their short form (`fe80::1`) instead of
/// Suricata's default, eight zero-padded groups (`fe80:0000:0000:0000:0000:0000:0000:0001`).
/// One setting for the process, as there is one eve-log: set when the configuration is
/// read ([`set_ipv6_compress`]), read by [`write_ip`] for every address written.
static IPV6_COMPRESS: AtomicBool = AtomicBool::new(false);

/// Sets eve-log's `ipv6-compress` (off by default, as in Suricata).
pub fn set_ipv6_compress(on: bool) {
    IPV6_COMPRESS.store(on, Ordering::Relaxed);
}

/// Appends an address as Suricata's eve writes it: dotted IPv4; IPv6 as eight
/// zero-padded hex groups unless `ipv6-compress` is on. Written by hand (every event
/// carries two addresses).
pub fn write_ip(out: &mut Vec<u8>, ip: IpAddr) {
    write_ip_as(out, ip, IPV6_COMPRESS.load(Ordering::Relaxed));
}

/// [`write_ip`] with `ipv6-compress` given.
fn write_ip_as(out: &mut Vec<u8>, ip: IpAddr, ipv6_compress: bool) {
    match ip {
        IpAddr::V4(v4) => {
            let mut text = [0u8; 15];
            let mut n = 0;
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    text[n] = b'.';
                    n += 1;
                }
                let width = if octet >= 100 {
                    3
                } else if octet >= 10 {
                    2
                } else {
                    1
                };
                put_digits(&mut text[n..n + width], octet.into());
                n += width;
            }
            out.extend_from_slice(&text[..n]);
        }
        IpAddr::V6(v6) if ipv6_compress => {
            let _ = write!(out, "{v6}");
        }
        IpAddr::V6(v6) => write_ipv6_expanded(out, &v6.octets()),
    }
}

/// Suricata's default IPv6 form: `2001:0db8:85a3:0000:0000:8a2e:0370:7334`.
fn write_ipv6_expanded(out: &mut Vec<u8>, octets: &[u8; 16]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = [b':'; 39];
    for (group, pair) in octets.chunks_exact(2).enumerate() {
        let at = group * 5;
        for (i, byte) in pair.iter().enumerate() {
            text[at + 2 * i] = HEX[usize::from(byte >> 4)];
            text[at + 2 * i + 1] = HEX[usize::from(byte & 0xf)];
        }
    }
    out.extend_from_slice(&text);
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Suricata's `proto` string for an IP protocol number: IANA's keyword for the protocols
/// a capture commonly carries (tunnels as "IP-in-IP", "IPv6", "GRE"), the number otherwise.
pub fn proto_name(proto: u8) -> Cow<'static, str> {
    let name = match proto {
        0 => "HOPOPT",
        1 => "ICMP",
        2 => "IGMP",
        4 => "IP-in-IP",
        6 => "TCP",
        17 => "UDP",
        41 => "IPv6",
        43 => "IPv6-Route",
        44 => "IPv6-Frag",
        46 => "RSVP",
        47 => "GRE",
        50 => "ESP",
        51 => "AH",
        58 => "IPv6-ICMP",
        59 => "IPv6-NoNxt",
        60 => "IPv6-Opts",
        88 => "EIGRP",
        89 => "OSPF",
        97 => "ETHERIP",
        103 => "PIM",
        108 => "IPComp",
        112 => "VRRP",
        115 => "L2TP",
        132 => "SCTP",
        136 => "UDPLite",
        137 => "MPLS-in-IP",
        other => return other.to_string().into(),
    };
    name.into()
}

/// Protocols whose events carry `src_port`/`dest_port` (Suricata writes ports for these
/// only).
pub fn has_ports(proto: u8) -> bool {
    matches!(proto, 6 | 17 | 132)
}

/// The addressing fields every flow-bound event starts with.
pub struct EventHeader {
    pub ts: Timestamp,
    pub flow_id: Option<u64>,
    pub pcap_cnt: Option<u64>,
    pub event_type: &'static str,
    pub src_ip: IpAddr,
    pub src_port: u16,
    pub dest_ip: IpAddr,
    pub dest_port: u16,
    pub proto: u8,
    /// ICMP carries type/code instead of ports, as Suricata writes them.
    pub icmp: Option<(u8, u8)>,
}

impl EventHeader {
    /// The header of a record about one captured packet (drop, anomaly): its addresses
    /// as they are on the wire.
    pub fn of_packet(
        ts: Timestamp,
        flow_id: Option<u64>,
        pcap_cnt: u64,
        event_type: &'static str,
        t: &picket_core::decode::FiveTuple,
    ) -> Self {
        EventHeader {
            ts,
            flow_id,
            pcap_cnt: Some(pcap_cnt),
            event_type,
            src_ip: t.src_ip(),
            src_port: t.src_port,
            dest_ip: t.dst_ip(),
            dest_port: t.dst_port,
            proto: t.proto,
            icmp: picket_core::decode::is_icmp(t.proto).then_some((t.src_port as u8, t.dst_port as u8)),
        }
    }

    pub fn write<'a>(&self, out: &'a mut Vec<u8>) -> JsonObject<'a> {
        let mut o = JsonObject::begin(out);
        o.str_plain("timestamp", |out| write_timestamp(out, self.ts));
        if let Some(id) = self.flow_id {
            o.u64("flow_id", id);
        }
        if let Some(cnt) = self.pcap_cnt {
            o.u64("pcap_cnt", cnt);
        }
        o.str("event_type", self.event_type);
        let ports = self.icmp.is_none() && has_ports(self.proto);
        o.str_plain("src_ip", |out| write_ip(out, self.src_ip));
        if ports {
            o.u64("src_port", self.src_port.into());
        }
        o.str_plain("dest_ip", |out| write_ip(out, self.dest_ip));
        if ports {
            o.u64("dest_port", self.dest_port.into());
        }
        o.str("proto", &proto_name(self.proto));
        if let Some((t, c)) = self.icmp {
            o.u64("icmp_type", t.into()).u64("icmp_code", c.into());
        }
        o
    }
}

/// Two-digit lowercase hex, as Suricata writes TCP flag bytes.
pub fn write_tcp_flags_hex(out: &mut Vec<u8>, flags: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(&[HEX[usize::from(flags >> 4)], HEX[usize::from(flags & 0xf)]]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_match_suricata_format() {
        // 2009-11-24T21:27:09.534255 UTC
        let ts = Timestamp::from_parts(1_259_098_029, 534_255_999);
        assert_eq!(format_timestamp(ts), "2009-11-24T21:27:09.534255+0000");
        assert_eq!(format_timestamp(Timestamp(0)), "1970-01-01T00:00:00.000000+0000");
        // Leap day.
        assert_eq!(format_timestamp(Timestamp::from_parts(951_782_400, 0)), "2000-02-29T00:00:00.000000+0000");
    }

    /// The hand-written writers agree with the std formatting they replace (IPv4, IPv6
    /// with `ipv6-compress`), for the latest representable timestamp and the tcp flag bytes.
    #[test]
    fn writers_match_std_formatting() {
        let ipv4 = ["0.0.0.0", "255.255.255.255", "10.1.22.133"];
        for ip in ipv4 {
            let ip: IpAddr = ip.parse().unwrap();
            let mut out = Vec::new();
            write_ip(&mut out, ip);
            assert_eq!(out, ip.to_string().as_bytes());
        }
        // The latest instant a nanosecond u64 holds.
        assert_eq!(format_timestamp(Timestamp(u64::MAX)), "2554-07-21T23:34:33.709551+0000");
        for flags in [0u8, 0x02, 0x1b, 0xff] {
            let mut out = Vec::new();
            write_tcp_flags_hex(&mut out, flags);
            assert_eq!(out, format!("{flags:02x}").as_bytes());
        }
    }

    /// IPv6 in Suricata's default form, and in the short form with `ipv6-compress`.
    #[test]
    fn ipv6_expanded_by_default_and_compressed_on_request() {
        let cases = [
            ("2001:db8:85a3::8a2e:370:7334", "2001:0db8:85a3:0000:0000:8a2e:0370:7334"),
            ("::1", "0000:0000:0000:0000:0000:0000:0000:0001"),
            ("fe80::20c:29ff:faf2:ab42", "fe80:0000:0000:0000:020c:29ff:faf2:ab42"),
            ("::ffff:1.2.3.4", "0000:0000:0000:0000:0000:ffff:0102:0304"),
        ];
        let text = |ip: &str, compress: bool| {
            let mut out = Vec::new();
            write_ip_as(&mut out, ip.parse().unwrap(), compress);
            String::from_utf8(out).unwrap()
        };
        for (ip, expanded) in cases {
            assert_eq!(text(ip, false), expanded);
            assert_eq!(text(ip, true), ip.parse::<IpAddr>().unwrap().to_string());
        }
    }

    #[test]
    fn header_fields_in_suricata_order() {
        let h = EventHeader {
            ts: Timestamp::from_parts(1, 0),
            flow_id: Some(42),
            pcap_cnt: Some(3),
            event_type: "alert",
            src_ip: "10.0.0.1".parse().unwrap(),
            src_port: 1234,
            dest_ip: "::1".parse().unwrap(),
            dest_port: 80,
            proto: 6,
            icmp: None,
        };
        let mut buf = Vec::new();
        h.write(&mut buf).finish();
        let s = String::from_utf8(buf).unwrap();
        assert_eq!(
            s,
            "{\"timestamp\":\"1970-01-01T00:00:01.000000+0000\",\"flow_id\":42,\"pcap_cnt\":3,\"event_type\":\"alert\",\"src_ip\":\"10.0.0.1\",\"src_port\":1234,\"dest_ip\":\"0000:0000:0000:0000:0000:0000:0000:0001\",\"dest_port\":80,\"proto\":\"TCP\"}\n"
        );
    }
}
