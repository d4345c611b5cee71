//! eve `flow` records, written when a flow ends.
//!
//! A bypassed flow (see `picket_core::inspect::bypass`) is written as Suricata writes one:
//! `state: "bypassed"`, `bypass: "local"` or `"capture"`, and for a capture bypass the
//! packets the capture counted after the bypass in a `bypassed` object, also added to the
//! flow's totals.

use super::header::write_vlan;
use super::{write_tcp_flags_hex, write_timestamp, EventHeader};
use crate::output::json::JsonObject;
use picket_core::applayer::layer::{AppLayer, DirProto};
use picket_core::decode::is_icmp;
use picket_core::flow::FlowRecord;
use picket_core::inspect::{BypassCounts, BypassMode, FlowExt};
use picket_core::settings::ExceptionPolicy;
use picket_core::stream::Direction;

/// `app_proto_ts`, `app_proto_tc`: what a direction's own bytes were recognised as, where
/// that differs from the flow's protocol (as Suricata writes them: a direction that matched
/// nothing is `"failed"`).
fn write_direction_protos(o: &mut JsonObject<'_>, app: &AppLayer) {
    for (key, dir) in [("app_proto_ts", Direction::ToServer), ("app_proto_tc", Direction::ToClient)] {
        let name = match app.dir_proto(dir) {
            DirProto::Detected(p) if Some(p) != app.proto => p.name(),
            DirProto::Failed if app.proto.is_some() => "failed",
            _ => continue,
        };
        o.str(key, name);
    }
}

/// One eve `flow` line for a finished flow; with `community_id`'s seed, its Community ID.
pub fn write_flow(buf: &mut Vec<u8>, rec: &FlowRecord<FlowExt>, community_id: Option<u16>) {
    let header = EventHeader {
        ts: rec.end,
        flow_id: Some(rec.flow_id),
        pcap_cnt: None,
        event_type: "flow",
        src_ip: rec.tuple.src_ip(),
        src_port: rec.tuple.src_port,
        dest_ip: rec.tuple.dst_ip(),
        dest_port: rec.tuple.dst_port,
        proto: rec.tuple.proto,
        icmp: rec.icmp_toserver.or(is_icmp(rec.tuple.proto).then_some((0, 0))),
    };
    let mut o = header.write(buf);
    o.u64("ip_v", if rec.tuple.is_v4 { 4 } else { 6 });
    let app = rec.ext.app.as_deref();
    if let Some(p) = app.and_then(|a| a.proto) {
        o.str("app_proto", p.name());
    } else if app.is_some_and(|a| a.detection_failed()) {
        o.str("app_proto", "failed");
    }
    if let Some(a) = app {
        write_direction_protos(&mut o, a);
        if let Some(orig) = a.proto_orig() {
            o.str("app_proto_orig", orig.name());
        }
    }
    if let Some((t, c)) = rec.icmp_toclient {
        o.u64("response_icmp_type", t.into()).u64("response_icmp_code", c.into());
    }
    write_vlan(&mut o, &rec.vlan);
    if let Some(seed) = community_id {
        o.str("community_id", &super::community_id::community_id(&rec.tuple, seed));
    }
    let bypass = rec.ext.bypass;
    let kernel = match bypass.mode {
        BypassMode::Capture => bypass.kernel,
        _ => BypassCounts::default(),
    };
    o.open("flow")
        .u64("pkts_toserver", rec.pkts_toserver + kernel.pkts_toserver)
        .u64("pkts_toclient", rec.pkts_toclient + kernel.pkts_toclient)
        .u64("bytes_toserver", rec.bytes_toserver + kernel.bytes_toserver)
        .u64("bytes_toclient", rec.bytes_toclient + kernel.bytes_toclient);
    if bypass.mode == BypassMode::Capture {
        o.open("bypassed")
            .u64("pkts_toserver", kernel.pkts_toserver)
            .u64("pkts_toclient", kernel.pkts_toclient)
            .u64("bytes_toserver", kernel.bytes_toserver)
            .u64("bytes_toclient", kernel.bytes_toclient)
            .close();
    }
    let state = if bypass.mode.skips_inspection() { "bypassed" } else { rec.state.as_str() };
    o.str_plain("start", |out| write_timestamp(out, rec.start))
        .str_plain("end", |out| write_timestamp(out, rec.end))
        .u64("age", rec.end.secs().saturating_sub(rec.start.secs()))
        .str("state", state)
        .str("reason", rec.reason.as_str())
        .bool("alerted", rec.ext.alerted);
    if let Some(name) = bypass.mode.eve_name() {
        o.str("bypass", name);
    }
    // What the IPS did with the flow: dropped it (a rule or an exception policy), or passed
    // it (a pass rule with flow scope, an exception policy).
    if rec.ext.dropped {
        o.str("action", "drop");
    } else if rec.ext.passed || rec.ext.detect.passed {
        o.str("action", "pass");
    }
    // The exception policies applied to the flow, as Suricata lists them.
    if let Some(policy) = rec.ext.midstream_policy_applied {
        // Names only (no escaping needed); a rare field, formatted directly.
        let list = format!("[{{\"target\":\"stream_midstream\",\"policy\":\"{}\"}}]", policy_name(policy));
        o.raw("exception_policy", &list);
    }
    // Transactions the flow's parser had; absent without any, as in Suricata.
    if let Some(n) = app.map(|a| a.tx_count()).filter(|&n| n > 0) {
        o.u64("tx_cnt", n);
    }
    o.close();
    super::common::write_flow_common(&mut o, &rec.ext, &super::common::common_options());
    if let Some(tcp) = &rec.tcp {
        o.open("tcp")
            .str_plain("tcp_flags", |out| write_tcp_flags_hex(out, tcp.tcp_flags))
            .str_plain("tcp_flags_ts", |out| write_tcp_flags_hex(out, tcp.tcp_flags_ts))
            .str_plain("tcp_flags_tc", |out| write_tcp_flags_hex(out, tcp.tcp_flags_tc));
        for (bit, name) in [
            (0x02, "syn"),
            (0x01, "fin"),
            (0x04, "rst"),
            (0x08, "psh"),
            (0x10, "ack"),
            (0x20, "urg"),
            (0x40, "ecn"),
            (0x80, "cwr"),
        ] {
            if tcp.tcp_flags & bit != 0 {
                o.bool(name, true);
            }
        }
        o.str("state", tcp.state.as_str());
        write_max_regions(&mut o, rec);
        o.close();
    }
    o.finish();
}

/// `ts_max_regions` / `tc_max_regions`: the most memory regions each direction's
/// reassembly buffer needed at once, written (as Suricata does) for every TCP session; a
/// session without reassembly state yet (no payload seen) has the initial 1.
fn write_max_regions(o: &mut JsonObject<'_>, rec: &FlowRecord<FlowExt>) {
    if rec.tcp.is_none_or(|t| t.state == picket_core::flow::tcp::TcpState::None) {
        return;
    }
    let stream = rec.ext.stream.as_deref();
    for (key, dir) in [("ts_max_regions", Direction::ToServer), ("tc_max_regions", Direction::ToClient)] {
        o.u64(key, stream.map_or(1, |s| s.max_regions(dir)).into());
    }
}

/// Suricata's eve name of an exception policy.
fn policy_name(policy: ExceptionPolicy) -> &'static str {
    match policy {
        ExceptionPolicy::Auto => "auto",
        ExceptionPolicy::Ignore => "ignore",
        ExceptionPolicy::PassPacket => "pass_packet",
        ExceptionPolicy::PassFlow => "pass_flow",
        ExceptionPolicy::Bypass => "bypass",
        ExceptionPolicy::DropPacket => "drop_packet",
        ExceptionPolicy::DropFlow => "drop_flow",
        ExceptionPolicy::Reject => "reject",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use picket_core::decode::FiveTuple;
    use picket_core::flow::{FlowEndReason, FlowState};
    use picket_core::inspect::FlowBypass;
    use picket_core::packet::Timestamp;

    fn record(bypass: FlowBypass) -> FlowRecord<FlowExt> {
        let mut src = [0u8; 16];
        src[10..].copy_from_slice(&[0xff, 0xff, 10, 0, 0, 1]);
        let mut dst = src;
        dst[15] = 2;
        FlowRecord {
            flow_id: 1,
            tuple: FiveTuple { src, dst, src_port: 40000, dst_port: 80, proto: 6, is_v4: true },
            vlan: [0, 0, 0],
            pkts_toserver: 10,
            pkts_toclient: 20,
            bytes_toserver: 1000,
            bytes_toclient: 30000,
            start: Timestamp(1_000_000_000),
            end: Timestamp(5_000_000_000),
            first_pcap_cnt: 1,
            last_pcap_cnt: 30,
            state: FlowState::Established,
            reason: FlowEndReason::Timeout,
            tcp: None,
            icmp_toserver: None,
            icmp_toclient: None,
            ext: FlowExt { bypass, ..FlowExt::default() },
        }
    }

    fn flow_object(bypass: FlowBypass) -> serde_json::Value {
        let mut buf = Vec::new();
        write_flow(&mut buf, &record(bypass), None);
        let v: serde_json::Value = serde_json::from_slice(&buf).expect("json");
        v["flow"].clone()
    }

    /// `ip_v` on every flow; ports only for TCP, UDP and SCTP, with Suricata's protocol names.
    #[test]
    fn ip_version_ports_and_protocol_names() {
        let mut buf = Vec::new();
        write_flow(&mut buf, &record(FlowBypass::default()), None);
        let v: serde_json::Value = serde_json::from_slice(&buf).expect("json");
        assert_eq!((v["ip_v"].as_u64(), v["src_port"].as_u64()), (Some(4), Some(40000)));
        assert!(v.get("app_proto").is_none() && v["flow"].get("tx_cnt").is_none());
        let mut gre = record(FlowBypass::default());
        gre.tuple.proto = 47;
        gre.tuple.is_v4 = false;
        gre.tuple.src = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        buf.clear();
        write_flow(&mut buf, &gre, Some(0));
        let v: serde_json::Value = serde_json::from_slice(&buf).expect("json");
        assert_eq!((v["ip_v"].as_u64(), v["proto"].as_str()), (Some(6), Some("GRE")));
        assert_eq!(v["src_ip"], "2001:0db8:0000:0000:0000:0000:0000:0001");
        assert!(v.get("src_port").is_none() && v.get("dest_port").is_none());
        assert!(v["community_id"].as_str().is_some_and(|c| c.starts_with("1:")), "community-id: yes");
    }

    #[test]
    fn capture_bypass_adds_the_kernel_counts_as_suricata_does() {
        let kernel =
            BypassCounts { pkts_toserver: 5, pkts_toclient: 900, bytes_toserver: 300, bytes_toclient: 1_300_000 };
        let f = flow_object(FlowBypass { mode: BypassMode::Capture, kernel });
        assert_eq!(f["bypass"], "capture");
        assert_eq!(f["state"], "bypassed");
        assert_eq!((f["pkts_toserver"].as_u64(), f["pkts_toclient"].as_u64()), (Some(15), Some(920)));
        assert_eq!((f["bytes_toserver"].as_u64(), f["bytes_toclient"].as_u64()), (Some(1300), Some(1_330_000)));
        let b = &f["bypassed"];
        assert_eq!((b["pkts_toserver"].as_u64(), b["pkts_toclient"].as_u64()), (Some(5), Some(900)));
        assert_eq!((b["bytes_toserver"].as_u64(), b["bytes_toclient"].as_u64()), (Some(300), Some(1_300_000)));
    }

    #[test]
    fn applied_midstream_policy_is_listed() {
        let mut rec = record(FlowBypass::default());
        rec.ext.midstream_policy_applied = Some(ExceptionPolicy::PassFlow);
        let mut buf = Vec::new();
        write_flow(&mut buf, &rec, None);
        let v: serde_json::Value = serde_json::from_slice(&buf).expect("json");
        let p = &v["flow"]["exception_policy"][0];
        assert_eq!((p["target"].as_str(), p["policy"].as_str()), (Some("stream_midstream"), Some("pass_flow")));
        assert!(flow_object(FlowBypass::default()).get("exception_policy").is_none());
    }

    /// `ts_max_regions`/`tc_max_regions` come with every TCP session (1 before any
    /// reassembly state exists), not with a TCP flow that never had one.
    #[test]
    fn tcp_sessions_carry_max_regions() {
        use picket_core::flow::{tcp::TcpState, TcpRecord};
        let mut rec = record(FlowBypass::default());
        let tcp = |state| TcpRecord { tcp_flags: 0x12, tcp_flags_ts: 0x02, tcp_flags_tc: 0x10, state };
        rec.tcp = Some(tcp(TcpState::CloseWait));
        let mut buf = Vec::new();
        write_flow(&mut buf, &rec, None);
        let v: serde_json::Value = serde_json::from_slice(&buf).expect("json");
        assert_eq!(v["tcp"]["state"], "close_wait");
        assert_eq!((v["tcp"]["ts_max_regions"].as_u64(), v["tcp"]["tc_max_regions"].as_u64()), (Some(1), Some(1)));
        rec.tcp = Some(tcp(TcpState::None));
        buf.clear();
        write_flow(&mut buf, &rec, None);
        let v: serde_json::Value = serde_json::from_slice(&buf).expect("json");
        assert!(v["tcp"].get("ts_max_regions").is_none() && v["tcp"].get("tc_max_regions").is_none());
    }

    #[test]
    fn local_bypass_and_no_bypass() {
        let f = flow_object(FlowBypass { mode: BypassMode::Local, ..Default::default() });
        assert_eq!((f["bypass"].as_str(), f["state"].as_str()), (Some("local"), Some("bypassed")));
        assert!(f.get("bypassed").is_none() && f["pkts_toserver"] == 10);
        let f = flow_object(FlowBypass::default());
        assert!(f.get("bypass").is_none() && f.get("bypassed").is_none());
        assert_eq!(f["state"], "established");
        let f = flow_object(FlowBypass { mode: BypassMode::Refused, ..Default::default() });
        assert!(f.get("bypass").is_none(), "a refused bypass is an inspected flow");
    }
}
