//! SMTP end to end: a crafted session (one mail with a base64 attachment) through the
//! picket binary, and the eve records Suricata writes for it: one `smtp` record per mail,
//! one `fileinfo` per attachment (with the `smtp` and `email` objects), alerts of the
//! `smtp.*` and `file.name` buffers carrying the same objects, and MIME anomalies.

mod pcapfile;

use pcapfile::{write_pcap, Tcp};
use serde_json::Value;
use std::process::Command;

const MAIL: &[u8] = b"From: \"Ann\" <ann@example.org>\r\nTo: bob@example.com, \"Doe, C\" <c@example.com>\r\n\
Subject: report\r\nContent-Type: multipart/mixed; boundary=\"XYZ\"\r\n\r\n--XYZ\r\n\
Content-Type: text/plain\r\n\r\nsee http://example.net/page\r\n--XYZ\r\n\
Content-Type: application/octet-stream; name=\"data.bin\"\r\nContent-Transfer-Encoding: base64\r\n\r\n\
YWJjZA==\r\n--XYZ--\r\n.\r\n";

/// The session as frames: handshake, one command or reply per segment, each acked by the
/// next segment of the other side, and the close.
fn session(mail: &[u8]) -> Vec<Vec<u8>> {
    let mut t = Tcp::new(([10, 0, 0, 1], 40000), ([10, 0, 0, 2], 25));
    let mut f = vec![t.segment(true, "S", b""), t.segment(false, "SA", b""), t.segment(true, "A", b"")];
    let steps: [(bool, &[u8]); 12] = [
        (false, b"220 mx.example.com ESMTP\r\n"),
        (true, b"EHLO client.example.org\r\n"),
        (false, b"250-mx.example.com\r\n250 8BITMIME\r\n"),
        (true, b"MAIL FROM:<ann@example.org> SIZE=300\r\n"),
        (false, b"250 ok\r\n"),
        (true, b"RCPT TO:<bob@example.com>\r\n"),
        (false, b"250 ok\r\n"),
        (true, b"DATA\r\n"),
        (false, b"354 go ahead\r\n"),
        (true, mail),
        (false, b"250 queued\r\n"),
        (true, b"QUIT\r\n"),
    ];
    for (to_server, data) in steps {
        f.push(t.segment(to_server, "AP", data));
    }
    f.push(t.segment(false, "AP", b"221 bye\r\n"));
    f.push(t.segment(true, "AF", b""));
    f.push(t.segment(false, "AF", b""));
    f.push(t.segment(true, "A", b""));
    f
}

fn run(frames: &[Vec<u8>], yaml: &str, rules: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("smtp.pcap");
    write_pcap(&pcap, frames);
    std::fs::write(dir.path().join("picket.yaml"), yaml).unwrap();
    std::fs::write(dir.path().join("t.rules"), rules).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_picket"))
        .args(["-k", "none", "-c"])
        .arg(dir.path().join("picket.yaml"))
        .arg("-S")
        .arg(dir.path().join("t.rules"))
        .arg("-r")
        .arg(&pcap)
        .arg("-l")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(dir.path().join("eve.json")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event_type"] == kind).collect()
}

const YAML: &str = "outputs:\n  - eve-log:\n      enabled: yes\n      types:\n        - alert\n        - smtp:\n            \
                    custom: [subject]\n        - files:\n            force-hash: [sha256]\n        - anomaly\n        - flow\n";

const RULES: &str = "alert smtp any any -> any any (msg:\"helo\"; smtp.helo; content:\"client.example\"; sid:1;)\n\
    alert smtp any any -> any any (msg:\"rcpt\"; smtp.rcpt_to; content:\"bob@\"; sid:2;)\n\
    alert smtp any any -> any any (msg:\"attachment\"; file.name; content:\"data.bin\"; sid:3;)\n\
    alert smtp any any -> any any (msg:\"no such recipient\"; smtp.rcpt_to; content:\"eve@\"; sid:4;)\n\
    alert smtp any any -> any any (msg:\"decoded attachment\"; file.data; content:\"abcd\"; sid:5;)\n";

#[test]
fn smtp_fileinfo_and_alert_records() {
    let events = run(&session(MAIL), YAML, RULES);
    let smtp = of_type(&events, "smtp");
    assert_eq!(smtp.len(), 1, "one record per mail: {events:?}");
    let s = smtp[0];
    assert_eq!(s["tx_id"], 0);
    assert_eq!(s["src_port"], 40000, "client to server");
    assert_eq!(s["smtp"]["helo"], "client.example.org");
    assert_eq!(s["smtp"]["mail_from"], "<ann@example.org>", "without the SIZE option");
    assert_eq!(s["smtp"]["rcpt_to"], serde_json::json!(["<bob@example.com>"]));
    let email = &s["email"];
    assert_eq!(email["from"], "\"Ann\" <ann@example.org>");
    assert_eq!(email["to"], serde_json::json!(["bob@example.com", "\"Doe, C\" <c@example.com>"]));
    assert_eq!(email["status"], "PARSE_DONE");
    assert_eq!(email["attachment"], serde_json::json!(["data.bin"]));
    // As Suricata's: a URL runs to a space, quote, bracket or tab, so a line's end stays.
    assert_eq!(email["url"], serde_json::json!(["example.net/page\r\n"]));
    assert_eq!(email["subject"], "report", "custom: [subject]");

    let files = of_type(&events, "fileinfo");
    assert_eq!(files.len(), 1);
    let f = files[0];
    assert_eq!(f["app_proto"], "smtp");
    assert_eq!(f["fileinfo"]["filename"], "data.bin");
    assert_eq!(f["fileinfo"]["size"], 4);
    assert_eq!(f["fileinfo"]["state"], "CLOSED");
    assert_eq!(f["fileinfo"]["sha256"], "88d4266fd4e6338d13b845fcf289579d209c897823b9217da3e161936f031589");
    assert_eq!(f["smtp"]["helo"], "client.example.org");
    assert!(f["email"].get("subject").is_none(), "custom fields are the smtp record's only");

    let mut sids: Vec<u64> =
        of_type(&events, "alert").iter().map(|a| a["alert"]["signature_id"].as_u64().unwrap()).collect();
    sids.sort_unstable();
    assert_eq!(sids, [1, 2, 3, 5], "once each per mail");
    let a = of_type(&events, "alert").into_iter().find(|a| a["alert"]["signature_id"] == 3).unwrap();
    assert_eq!(a["app_proto"], "smtp");
    assert_eq!(a["email"]["attachment"][0], "data.bin");
    assert_eq!(a["smtp"]["rcpt_to"][0], "<bob@example.com>");
    assert!(of_type(&events, "anomaly").is_empty(), "{events:?}");
    let flow = of_type(&events, "flow");
    assert_eq!(flow[0]["app_proto"], "smtp");
    assert_eq!(flow[0]["flow"]["tx_cnt"], 1);
}

#[test]
fn mime_anomalies_and_types_off() {
    let long = "A".repeat(1200);
    let mail = format!(
        "Content-Type: text/plain\r\nContent-Disposition: attachment; filename=a.txt\r\n\
         Content-Transfer-Encoding: base64\r\n\r\n{long}\r\n.\r\n"
    );
    let yaml = "outputs:\n  - eve-log:\n      enabled: yes\n      types:\n        - anomaly\n        - files\n";
    let events = run(&session(mail.as_bytes()), yaml, "");
    let anomalies: Vec<&Value> = of_type(&events, "anomaly");
    let names: Vec<&str> = anomalies.iter().map(|a| a["anomaly"]["event"].as_str().unwrap()).collect();
    assert_eq!(names, ["MIME_LONG_LINE", "MIME_LONG_ENC_LINE"]);
    assert_eq!(anomalies[0]["anomaly"]["app_proto"], "smtp");
    assert_eq!(anomalies[0]["anomaly"]["type"], "applayer");
    assert!(of_type(&events, "smtp").is_empty(), "smtp not listed");
    let files = of_type(&events, "fileinfo");
    assert_eq!(files.len(), 1);
    assert_eq!(files[0]["fileinfo"]["size"], 900);
    assert!(files[0]["fileinfo"].get("sha256").is_none(), "no force-hash");
}
