//! fast.log: one line per alert, in Suricata's format.

use crate::output::eve::{format_timestamp, proto_name};
use picket_core::inspect::AlertEvent;
use std::io::Write as _;
use std::net::IpAddr;

/// `11/24/2009-21:27:09.534255  [**] [1:2100498:7] msg [**] [Classification: ...] [Priority: 2] {TCP} a:1 -> b:2`
pub fn write_fast_line(buf: &mut Vec<u8>, a: &AlertEvent<'_>) {
    let (alert, tuple) = (a.alert, &a.tuple);
    let iso = format_timestamp(a.ts);
    let when = format!("{}/{}/{}-{}", &iso[5..7], &iso[8..10], &iso[0..4], &iso[11..26]);
    let class =
        if alert.category.is_empty() { String::new() } else { format!("[Classification: {}] ", alert.category) };
    let endpoint = |ip: IpAddr, port: u16| {
        if matches!(tuple.proto, 6 | 17 | 132) {
            format!("{ip}:{port}")
        } else {
            ip.to_string()
        }
    };
    let _ = writeln!(
        buf,
        "{when}  {}[**] [{}:{}:{}] {} [**] {class}[Priority: {}] {{{}}} {} -> {}",
        if a.blocked { "[Drop] " } else { "" },
        alert.gid,
        alert.sid,
        alert.rev,
        alert.msg,
        alert.severity,
        proto_name(tuple.proto),
        endpoint(tuple.src_ip(), tuple.src_port),
        endpoint(tuple.dst_ip(), tuple.dst_port),
    );
}
