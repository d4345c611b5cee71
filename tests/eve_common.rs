//! eve-log's options for every record type, run end to end on a small capture: `ethernet`
//! (`ether` on transaction and flow records), `suricata-version`, `community-id` on
//! transaction records, and the flow record's flowbits (`metadata.flowbits`, `traffic`).

mod pcapfile;
use pcapfile::write_pcap;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const CLIENT_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const SERVER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
/// The client's packets leave through a second router halfway through the flow.
const CLIENT_MAC_2: [u8; 6] = [2, 0, 0, 0, 0, 3];

/// A DNS message for `a.example` type A: a query, or its answer (192.0.2.1).
fn dns(id: u16, response: bool) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend_from_slice(if response { &[0x81, 0x80] } else { &[0x01, 0x00] });
    m.extend_from_slice(&[0, 1, 0, u8::from(response), 0, 0, 0, 0]);
    m.extend_from_slice(b"\x01a\x07example\x00\x00\x01\x00\x01");
    if response {
        m.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1]);
    }
    m
}

/// A datagram between the client 10.0.0.1:40000 and the server 10.0.0.2:53.
fn frame(src_mac: [u8; 6], dst_mac: [u8; 6], to_server: bool, payload: &[u8]) -> Vec<u8> {
    let (client, server) = (([10, 0, 0, 1], 40000), ([10, 0, 0, 2], 53));
    let ((sip, sp), (dip, dp)) = if to_server { (client, server) } else { (server, client) };
    let mut out = Vec::new();
    etherparse::PacketBuilder::ethernet2(src_mac, dst_mac)
        .ipv4(sip, dip, 64)
        .udp(sp, dp)
        .write(&mut out, payload)
        .unwrap();
    out
}

fn capture(dir: &Path) -> std::path::PathBuf {
    let pcap = dir.join("dns.pcap");
    write_pcap(
        &pcap,
        &[
            frame(CLIENT_MAC, SERVER_MAC, true, &dns(1, false)),
            frame(SERVER_MAC, CLIENT_MAC, false, &dns(1, true)),
            frame(CLIENT_MAC_2, SERVER_MAC, true, &dns(2, false)),
            frame(SERVER_MAC, CLIENT_MAC_2, false, &dns(2, true)),
        ],
    );
    pcap
}

/// Runs picket on the capture with a rule setting flowbits and `eve_options` under the
/// eve-log entry; returns its eve events.
fn run(eve_options: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let pcap = capture(dir.path());
    run_on(dir.path(), &pcap, eve_options)
}

fn run_on(dir: &Path, pcap: &Path, eve_options: &str) -> Vec<Value> {
    let rules = dir.join("test.rules");
    std::fs::write(
        &rules,
        "alert udp any any -> any 53 (flowbits:set,traffic/id/resolver; flowbits:set,seen; flowbits:noalert; sid:1;)\n",
    )
    .unwrap();
    let yaml = dir.join("picket.yaml");
    std::fs::write(
        &yaml,
        format!(
            "%YAML 1.1\n---\noutputs:\n  - eve-log:\n      enabled: yes\n      filename: eve.json\n{eve_options}      types:\n        - dns\n        - flow\n"
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_picket"))
        .args(["-k", "none", "-r"])
        .arg(pcap)
        .arg("-S")
        .arg(&rules)
        .arg("-c")
        .arg(&yaml)
        .arg("-l")
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(dir.join("eve.json")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event_type"] == kind).collect()
}

#[test]
fn ethernet_version_and_community_id_on_every_record() {
    let events = run("      ethernet: yes\n      suricata-version: yes\n      community-id: yes\n");
    let flows = of_type(&events, "flow");
    assert_eq!(flows.len(), 1, "{events:?}");
    let flow = flows[0];
    // Each side's addresses in the order seen, client side under src_macs.
    assert_eq!(flow["ether"]["src_macs"], serde_json::json!(["02:00:00:00:00:01", "02:00:00:00:00:03"]));
    assert_eq!(flow["ether"]["dest_macs"], serde_json::json!(["02:00:00:00:00:02"]));
    assert!(flow["suricata_version"].as_str().is_some_and(|v| v.starts_with("picket-")), "{flow}");

    let dns = of_type(&events, "dns");
    assert_eq!(dns.len(), 4, "{events:?}");
    for record in &dns {
        assert_eq!(record["community_id"], flow["community_id"], "the flow's community id: {record}");
        assert!(record["suricata_version"].is_string(), "{record}");
        // The record's own packet, oriented like its addresses: a response goes from the
        // server's address and MAC.
        let (src, dest) = (&record["ether"]["src_mac"], &record["ether"]["dest_mac"]);
        let from_server = record["src_ip"] == "10.0.0.2";
        assert_eq!(from_server, record["dns"]["type"] == "response", "{record}");
        let (expect_src, expect_dest) = match (from_server, record["dns"]["id"].as_u64()) {
            (false, Some(1)) => ("02:00:00:00:00:01", "02:00:00:00:00:02"),
            (true, Some(1)) => ("02:00:00:00:00:02", "02:00:00:00:00:01"),
            (false, _) => ("02:00:00:00:00:03", "02:00:00:00:00:02"),
            (true, _) => ("02:00:00:00:00:02", "02:00:00:00:00:03"),
        };
        assert_eq!((src.as_str(), dest.as_str()), (Some(expect_src), Some(expect_dest)), "{record}");
    }
}

#[test]
fn flow_records_list_the_flowbits() {
    let events = run("");
    let flow = of_type(&events, "flow")[0];
    assert_eq!(flow["traffic"]["id"], serde_json::json!(["resolver"]), "{flow}");
    assert_eq!(flow["metadata"]["flowbits"], serde_json::json!(["seen"]), "{flow}");
    // None of the options asked for: none of their fields.
    for e in &events {
        for key in ["ether", "suricata_version", "community_id"] {
            assert!(e.get(key).is_none(), "{key} without its option: {e}");
        }
    }
    let quiet = run("      metadata: no\n");
    let flow = of_type(&quiet, "flow")[0];
    assert!(flow.get("traffic").is_none() && flow.get("metadata").is_none(), "metadata: no: {flow}");
}

/// A UDP DNS flow whose first datagram is an answer (the capture began after the
/// question) is turned round as Suricata does: the flow goes from the client to the
/// server, and the answer is logged as a response from the server.
#[test]
fn dns_flow_first_seen_from_the_server_is_turned_round() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("answer.pcap");
    write_pcap(
        &pcap,
        &[frame(SERVER_MAC, CLIENT_MAC, false, &dns(7, true)), frame(CLIENT_MAC, SERVER_MAC, true, &dns(8, false))],
    );
    let events = run_on(dir.path(), &pcap, "");
    let flow = of_type(&events, "flow")[0];
    assert_eq!((&flow["src_ip"], &flow["src_port"]), (&Value::from("10.0.0.1"), &Value::from(40000)), "{flow}");
    assert_eq!((&flow["flow"]["pkts_toserver"], &flow["flow"]["pkts_toclient"]), (&Value::from(1), &Value::from(1)));
    let dns = of_type(&events, "dns");
    let answer = dns.iter().find(|r| r["dns"]["id"] == 7).expect("the answer is logged");
    assert_eq!((&answer["dns"]["type"], &answer["src_ip"]), (&Value::from("response"), &Value::from("10.0.0.2")));
    let question = dns.iter().find(|r| r["dns"]["id"] == 8).expect("the next question is logged");
    assert_eq!((&question["dns"]["type"], &question["src_ip"]), (&Value::from("request"), &Value::from("10.0.0.1")));
}
