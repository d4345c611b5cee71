//! Protocols picket detects without parsing them (`picket_core::applayer::detect_only`),
//! end to end: a capture of small sessions run through picket, then eve's flow records
//! (`app_proto`, `app_proto_tc`), a rule whose header names the protocol, and the
//! `app-layer.protocols.<proto>.enabled` / `detection-ports` YAML keys.

mod pcapfile;

use pcapfile::{udp, write_pcap_every, Tcp};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// One TCP connection's frames: handshake, then each message acked by the other side,
/// then FINs.
struct Session {
    tcp: Tcp,
    frames: Vec<Vec<u8>>,
}

impl Session {
    fn new(client: ([u8; 4], u16), server: ([u8; 4], u16)) -> Self {
        let mut tcp = Tcp::new(client, server);
        let frames = vec![tcp.segment(true, "S", b""), tcp.segment(false, "SA", b""), tcp.segment(true, "A", b"")];
        Session { tcp, frames }
    }

    /// A message and the other side's ack.
    fn send(mut self, to_server: bool, payload: &[u8]) -> Self {
        self.frames.push(self.tcp.segment(to_server, "PA", payload));
        self.frames.push(self.tcp.segment(!to_server, "A", b""));
        self
    }

    fn close(mut self) -> Vec<Vec<u8>> {
        self.frames.push(self.tcp.segment(true, "FA", b""));
        self.frames.push(self.tcp.segment(false, "FA", b""));
        self.frames.push(self.tcp.segment(true, "A", b""));
        self.frames
    }
}

/// A capture with one frame per millisecond.
fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    write_pcap_every(path, frames, 1000);
}

const C: [u8; 4] = [10, 0, 0, 1];
const S: [u8; 4] = [10, 0, 0, 2];

/// RFB on an unusual port, PostgreSQL's SSLRequest, DNP3, an HTTP request answered with an
/// SSH banner, SNMP over UDP.
fn capture(dir: &Path) -> std::path::PathBuf {
    let mut frames = Vec::new();
    frames
        .extend(Session::new((C, 40001), (S, 7000)).send(false, b"RFB 003.008\n").send(true, b"RFB 003.008\n").close());
    frames.extend(
        Session::new((C, 40002), (S, 5432)).send(true, &[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]).send(false, b"N").close(),
    );
    let dnp3 = [0x05, 0x64, 0x05, 0xc9, 0x01, 0x00, 0x00, 0x04, 0xe9, 0x21];
    frames.extend(Session::new((C, 40003), (S, 20000)).send(true, &dnp3).close());
    frames.extend(
        Session::new((C, 40004), (S, 8080))
            .send(true, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .send(false, b"SSH-2.0-OpenSSH_9.6\r\n")
            .close(),
    );
    let snmp = [0x30, 0x0d, 0x02, 0x01, 0x01, 0x04, 0x06, b'p', b'u', b'b', b'l', b'i', b'c', 0xa0, 0x00];
    frames.push(udp((C, 40005), (S, 161), &snmp));
    let path = dir.join("detect.pcap");
    write_pcap(&path, &frames);
    path
}

/// Runs picket with `yaml` (if any) and the rules; returns eve's events.
fn run(dir: &Path, yaml: Option<&str>, rules: &str) -> Vec<Value> {
    let pcap = capture(dir);
    let rules_path = dir.join("test.rules");
    std::fs::write(&rules_path, rules).unwrap();
    let logs = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_picket"));
    cmd.args(["-k", "none", "-r"]).arg(&pcap).arg("-S").arg(&rules_path).arg("-l").arg(logs.path());
    if let Some(yaml) = yaml {
        let y = dir.join("picket.yaml");
        std::fs::write(&y, yaml).unwrap();
        cmd.arg("-c").arg(&y);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(logs.path().join("eve.json")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The flow record whose server port is `port`.
fn flow(events: &[Value], port: u16) -> &Value {
    events
        .iter()
        .find(|e| e["event_type"] == "flow" && e["dest_port"] == port)
        .unwrap_or_else(|| panic!("no flow to {port}"))
}

const ENABLE: &str = "%YAML 1.1\n---\napp-layer:\n  protocols:\n    pgsql:\n      enabled: yes\n    dnp3:\n      enabled: detection-only\n    snmp:\n      enabled: no\n    rfb:\n      enabled: yes\n";

#[test]
fn detected_protocols_in_flow_records() {
    let dir = tempfile::tempdir().unwrap();
    let events = run(
        dir.path(),
        Some(ENABLE),
        "alert rfb any any -> any any (msg:\"rfb\"; sid:1;)\nalert smb any any -> any any (msg:\"smb\"; sid:2;)\n",
    );
    assert_eq!(flow(&events, 7000)["app_proto"], "rfb");
    assert_eq!(flow(&events, 5432)["app_proto"], "pgsql");
    assert_eq!(flow(&events, 20000)["app_proto"], "dnp3");
    // snmp is disabled: the datagram is not detected.
    assert!(flow(&events, 161).get("app_proto").is_none());
    // The first direction decides; the other one's own protocol is shown where it differs.
    let mismatch = flow(&events, 8080);
    assert_eq!((&mismatch["app_proto"], &mismatch["app_proto_tc"]), (&Value::from("http"), &Value::from("ssh")));
    assert!(mismatch.get("app_proto_ts").is_none());
    assert!(flow(&events, 7000).get("app_proto_tc").is_none(), "both directions RFB");
    // A rule naming the protocol alerts on its flow only.
    let alerts: Vec<&Value> = events.iter().filter(|e| e["event_type"] == "alert").collect();
    assert!(
        !alerts.is_empty()
            && alerts
                .iter()
                .all(|a| a["alert"]["signature_id"] == 1 && (a["dest_port"] == 7000 || a["src_port"] == 7000)),
        "{alerts:?}"
    );
}

#[test]
fn defaults_are_suricatas() {
    // Without YAML: pgsql and dnp3 are off as in suricata.yaml, snmp and rfb on.
    let dir = tempfile::tempdir().unwrap();
    let events = run(dir.path(), None, "");
    assert_eq!(flow(&events, 7000)["app_proto"], "rfb");
    assert_eq!(flow(&events, 161)["app_proto"], "snmp");
    assert_eq!(flow(&events, 5432)["app_proto"], "failed");
    // The DNP3 client's bytes match nothing else; the server never spoke.
    assert!(flow(&events, 20000).get("app_proto").is_none());
    // Detection ports move with the YAML: pgsql enabled on another port only.
    let yaml = "%YAML 1.1\n---\napp-layer:\n  protocols:\n    pgsql:\n      enabled: yes\n      detection-ports:\n        dp: 6432\n";
    let events = run(dir.path(), Some(yaml), "");
    assert_eq!(flow(&events, 5432)["app_proto"], "failed");
}
