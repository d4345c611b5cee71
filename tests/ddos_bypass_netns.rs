//! Flow bypass and pass-through through picket's XDP layer, end to end: a client namespace
//! and a server namespace over a veth pair, `picket -i veth --ddos` on the server side with
//! a small rule set.
//!
//! - Flow bypass: a slowly read download (8 MiB from `python3 -m http.server`) passes
//!   `stream.reassembly.depth` with `stream.bypass: yes`; from then on its packets stay in
//!   the kernel (XDP counts the incoming ones, the socket filter the outgoing ones), picket
//!   sees a small fraction of them, the flow stays alive while the kernel counts move, and
//!   its eve record (after the short `bypassed` timeout) carries the kernel's counts.
//! - Pass-through: with rules on ports 8000 and 9000 only, a TCP exchange on port 9100 never
//!   reaches picket (no flow record; `picket.xdp.passed_through` grows) while the same
//!   exchange on port 9000 is inspected and alerts.

mod netlab;

use netlab::{events_of, read_eve, skip_reason, wait_for, Lab};
use std::io::Read;
use std::process::Stdio;
use std::time::Duration;

const CLIENT_IP: &str = "10.77.0.1";
const SERVER_IP: &str = "10.77.0.2";
const HTTP_PORT: u16 = 8000;
const RULE_PORT: u16 = 9000;
const FREE_PORT: u16 = 9100;
const FILE_BYTES: usize = 8 << 20;
/// The slow reader: this many bytes of socket buffer and per read, then a pause; about
/// 3 s for the file, several times the 1 s `bypassed` timeout, so the flow must be kept
/// alive by the kernel's moving counts.
const READ_CHUNK: usize = 65536;
const READ_PAUSE: f64 = 0.02;
const DEPTH: u64 = 65536;

fn rules() -> String {
    format!(
        "alert tcp any any -> any {HTTP_PORT} (msg:\"download\"; flow:to_server; content:\"GET /big.bin\"; sid:1001;)\n\
         alert tcp any any -> any {RULE_PORT} (msg:\"planted\"; content:\"PLANTED\"; sid:1002;)\n"
    )
}

/// Sends `PLANTED` to `port` on the server and waits for the server to close.
fn exchange(lab: &Lab, ns: &str, port: u16) {
    let script = format!(
        "import socket\n\
         s=socket.create_connection(('{SERVER_IP}',{port}),timeout=5)\n\
         s.sendall(b'hello PLANTED here'); s.shutdown(socket.SHUT_WR)\n\
         while s.recv(4096): pass\n"
    );
    let out = lab.output(ns, "python3", &["-c", &script]);
    assert!(out.status.success(), "exchange on port {port}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn bypassed_flow_leaves_user_space_and_unmatched_ports_pass_through() {
    if let Some(reason) = skip_reason(&["python3", "ss"]) {
        eprintln!("SKIPPED: ddos bypass test needs root, `ip netns`, python3 and ss: {reason}");
        return;
    }
    if !picket::xdp::XdpLayer::available() {
        eprintln!("SKIPPED: this picket was built without its XDP program (no clang)");
        return;
    }
    let mut lab = Lab::new("byp");
    let cli = lab.namespace("bcli");
    let srv = lab.namespace("bsrv");
    lab.link(&cli, "veth-bc", &srv, "veth-bs");
    lab.address(&cli, "veth-bc", &format!("{CLIENT_IP}/24"));
    lab.address(&srv, "veth-bs", &format!("{SERVER_IP}/24"));

    let dir = tempfile::tempdir().unwrap();
    let www = dir.path().join("www");
    std::fs::create_dir(&www).unwrap();
    let body: Vec<u8> = (0..FILE_BYTES).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(www.join("big.bin"), &body).unwrap();
    let rules_path = dir.path().join("bypass.rules");
    std::fs::write(&rules_path, rules()).unwrap();
    let logs = dir.path().join("logs");

    // Servers: HTTP, and two TCP sinks that read until the client is done, then close.
    let www_arg = www.to_string_lossy().to_string();
    let http_port = HTTP_PORT.to_string();
    let _http = lab.spawn({
        let mut c = lab.command(
            &srv,
            "python3",
            &["-m", "http.server", &http_port, "--bind", SERVER_IP, "--directory", &www_arg],
        );
        c.stdout(Stdio::null()).stderr(Stdio::null());
        c
    });
    let sinks = format!(
        "import socket,threading\n\
         def serve(port):\n\
         \x20 l=socket.socket(); l.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1); l.bind(('{SERVER_IP}',port)); l.listen(4)\n\
         \x20 while True:\n\
         \x20   c,_=l.accept()\n\
         \x20   while c.recv(4096): pass\n\
         \x20   c.close()\n\
         for p in ({RULE_PORT},{FREE_PORT}): threading.Thread(target=serve,args=(p,),daemon=True).start()\n\
         threading.Event().wait(60)\n"
    );
    let _sinks = lab.spawn({
        let mut c = lab.command(&srv, "python3", &["-c", &sinks]);
        c.stdout(Stdio::null());
        c
    });
    wait_for("the servers to listen", Duration::from_secs(10), || {
        let out = String::from_utf8_lossy(&lab.output(&srv, "ss", &["-ltnH"]).stdout).to_string();
        [HTTP_PORT, RULE_PORT, FREE_PORT].iter().all(|p| out.contains(&format!("{SERVER_IP}:{p}")))
    });

    let depth = format!("stream.reassembly.depth={DEPTH}");
    let mut picket = lab.spawn({
        let mut c = lab.command(&srv, env!("CARGO_BIN_EXE_picket"), &["-i", "veth-bs", "--ddos", "--workers", "1"]);
        c.args(["--set", "stream.bypass=yes", "--set", &depth, "--set", "flow-timeouts.tcp.bypassed=1"])
            .args(["--set", "stats.interval=1", "--set", "ddos.detectors.enabled=no", "-S"])
            .arg(&rules_path)
            .arg("-l")
            .arg(&logs)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    });
    let snapshot = logs.join("picket-stats.json");
    wait_for("picket to start capturing", Duration::from_secs(15), || {
        assert!(picket.running(), "picket exited early");
        snapshot.exists()
    });

    // (a) The download: past the depth, the flow goes into the kernel's bypass table. A
    // slow reader with a small receive buffer keeps the transfer going for seconds (curl's
    // --limit-rate would not: the kernel's receive buffer takes the file in a burst).
    let download = format!(
        "import socket,time\n\
         s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_RCVBUF,{READ_CHUNK})\n\
         s.settimeout(10); s.connect(('{SERVER_IP}',{HTTP_PORT}))\n\
         s.sendall(b'GET /big.bin HTTP/1.0\\r\\nHost: x\\r\\n\\r\\n')\n\
         got=b''\n\
         while True:\n\
         \x20 d=s.recv({READ_CHUNK})\n\
         \x20 if not d: break\n\
         \x20 got+=d; time.sleep({READ_PAUSE})\n\
         head,_,body=got.partition(b'\\r\\n\\r\\n')\n\
         print(len(body))\n"
    );
    let out = lab.output(&cli, "python3", &["-c", &download]);
    assert!(out.status.success(), "download failed: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), FILE_BYTES.to_string(), "the download is complete");

    // (b) Pass-through: the same exchange on a rule's port and on a port no rule names.
    exchange(&lab, &cli, RULE_PORT);
    exchange(&lab, &cli, FREE_PORT);

    // The download's flow ends a second after its last packet (the `bypassed` timeout).
    let eve_path = logs.join("eve.json");
    let is_download = |e: &serde_json::Value| e["event_type"] == "flow" && e["dest_port"] == HTTP_PORT;
    wait_for("the download's flow record", Duration::from_secs(15), || read_eve(&eve_path).iter().any(is_download));

    picket.signal("TERM");
    let status = picket.wait(Duration::from_secs(15));
    let mut stderr = String::new();
    picket.0.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert!(status.success(), "picket: {status}\n{stderr}");
    assert!(
        stderr.contains("pass-through: TCP: 65534 of 65536 ports pass through; UDP: 65536 of 65536 ports pass through"),
        "the pass-through derived from two TCP rules: {stderr}"
    );

    let eve = read_eve(&eve_path);
    let flows = events_of(&eve, "flow");
    let download: Vec<_> = flows.iter().filter(|e| is_download(e)).collect();
    assert_eq!(download.len(), 1, "one flow record: it stayed alive while the kernel counted\n{download:#?}");
    let f = &download[0]["flow"];
    assert_eq!(f["bypass"], "capture", "{f:#}");
    assert_eq!(f["state"], "bypassed");
    assert_eq!(f["reason"], "timeout");
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let total = n(&f["pkts_toserver"]) + n(&f["pkts_toclient"]);
    let bypassed = &f["bypassed"];
    let kernel = n(&bypassed["pkts_toserver"]) + n(&bypassed["pkts_toclient"]);
    assert!(n(&f["bytes_toclient"]) > FILE_BYTES as u64, "the flow's bytes include the kernel's: {f:#}");
    // What the server sent before the worker installed the flow (one ring block's worth of
    // a TCP window burst) still reaches picket; the rest does not.
    assert!(n(&bypassed["bytes_toclient"]) > (FILE_BYTES as u64) * 2 / 3, "most of the file went past picket: {f:#}");
    let (bytes, kernel_bytes) = (
        n(&f["bytes_toserver"]) + n(&f["bytes_toclient"]),
        n(&bypassed["bytes_toserver"]) + n(&bypassed["bytes_toclient"]),
    );
    assert!(kernel_bytes * 3 > bytes * 2, "at least 2/3 of the flow's bytes stayed in the kernel: {f:#}");
    assert!(kernel * 2 > total, "most of its packets did too (veth GRO makes them large and few): {f:#}");
    // Longer than the 1 s `bypassed` timeout: kept alive by the kernel's moving counts.
    assert!(n(&f["age"]) >= 2, "the flow lived as long as the download: {f:#}");

    let alerts = events_of(&eve, "alert");
    let sids: Vec<u64> = alerts.iter().filter_map(|a| a["alert"]["signature_id"].as_u64()).collect();
    assert!(sids.contains(&1001), "the download request was inspected: {sids:?}");
    assert!(sids.contains(&1002), "the exchange on the rule's port was inspected: {sids:?}");
    assert!(alerts.iter().all(|a| a["dest_port"] != FREE_PORT), "nothing on the unmatched port reached the rules");
    assert!(
        !eve.iter().any(|e| e["dest_port"] == FREE_PORT || e["src_port"] == FREE_PORT),
        "no flow or event on the unmatched port: picket never saw it"
    );

    let stats = &eve.iter().rev().find(|e| e["event_type"] == "stats").expect("final stats")["stats"];
    let user_packets = n(&stats["decoder"]["pkts"]);
    assert!(user_packets * 2 < total, "picket saw {user_packets} packets of a {total}-packet flow and the rest");
    let xdp = &stats["picket"]["xdp"];
    assert!(n(&xdp["bypassed"]) >= n(&bypassed["pkts_toserver"]), "XDP bypassed counter: {xdp:#}");
    assert!(n(&xdp["bypassed"]) > 0 && n(&xdp["passed_through"]) > 0, "{xdp:#}");
    assert_eq!(n(&xdp["bypass_installed"]), 1, "{xdp:#}");
    assert_eq!(n(&xdp["bypass_refused"]), 0);
    let fb = &stats["flow_bypassed"];
    assert_eq!(n(&fb["closed"]), 1, "{fb:#}");
    assert_eq!(n(&fb["pkts"]), kernel, "{fb:#}");
    eprintln!(
        "download: {total} packets ({bytes} bytes), {kernel} ({kernel_bytes} bytes) in the kernel ({} to the \
         client), picket saw {user_packets} packets in all; XDP bypassed {} and passed through {}",
        n(&bypassed["pkts_toclient"]),
        n(&xdp["bypassed"]),
        n(&xdp["passed_through"])
    );

    // The flow and alert records validate against Suricata's schema (the stats event's
    // per-thread part is picket's own and checked elsewhere).
    let check = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/eve-schema/check.py");
    if check.exists() {
        let records: String = eve.iter().filter(|e| e["event_type"] != "stats").map(|e| format!("{e}\n")).collect();
        let records_path = dir.path().join("records.json");
        std::fs::write(&records_path, records).unwrap();
        let out = std::process::Command::new("python3").arg(&check).arg(&records_path).output().unwrap();
        assert!(
            out.status.success(),
            "eve schema: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
