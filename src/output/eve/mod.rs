//! Suricata EVE JSON: the one place where the inspector's events become eve.json lines.
//! `output::sink::LogSink` hands each event to the writer of its record:
//!
//! | event | record | module |
//! |---|---|---|
//! | `Event::Alert` | `alert` | [`alert`] |
//! | `Event::Drop` | `drop` | [`drop`] |
//! | `Event::Flow` | `flow` | [`flow`] |
//!
//! Protocol objects (`http`, `dns`, `tls`) are written by each protocol's `write_record`
//! in picket-core through [`picket_core::record::RecordWriter`], which the JSON writer
//! implements.

pub mod alert;
pub mod drop;
pub mod flow;
pub mod options;
pub mod verdict;

pub use options::{AlertLogOptions, DropLogOptions, EveTypes, XffOptions};

use super::json::JsonObject;
use crate::packet::Timestamp;
use std::net::IpAddr;

/// Formats a capture timestamp the way Suricata's eve.json does:
/// `2009-11-24T21:27:09.534255+0000` (microseconds, UTC offset spelled out).
pub fn format_timestamp(ts: Timestamp) -> String {
    let secs = ts.secs() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}+0000",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60,
        ts.subsec_nanos() / 1000
    )
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

/// Suricata's `proto` string for an IP protocol number.
pub fn proto_name(proto: u8) -> String {
    match proto {
        1 => "ICMP".into(),
        6 => "TCP".into(),
        17 => "UDP".into(),
        58 => "IPv6-ICMP".into(),
        132 => "SCTP".into(),
        47 => "GRE".into(),
        50 => "ESP".into(),
        51 => "AH".into(),
        other => other.to_string(),
    }
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
    pub fn write<'a>(&self, out: &'a mut Vec<u8>) -> JsonObject<'a> {
        let mut o = JsonObject::begin(out);
        o.str("timestamp", &format_timestamp(self.ts));
        if let Some(id) = self.flow_id {
            o.u64("flow_id", id);
        }
        if let Some(cnt) = self.pcap_cnt {
            o.u64("pcap_cnt", cnt);
        }
        o.str("event_type", self.event_type);
        o.str("src_ip", &self.src_ip.to_string());
        if self.icmp.is_none() {
            o.u64("src_port", self.src_port.into());
        }
        o.str("dest_ip", &self.dest_ip.to_string());
        if self.icmp.is_none() {
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
pub fn tcp_flags_hex(flags: u8) -> String {
    format!("{flags:02x}")
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
            "{\"timestamp\":\"1970-01-01T00:00:01.000000+0000\",\"flow_id\":42,\"pcap_cnt\":3,\"event_type\":\"alert\",\"src_ip\":\"10.0.0.1\",\"src_port\":1234,\"dest_ip\":\"::1\",\"dest_port\":80,\"proto\":\"TCP\"}\n"
        );
    }
}
