//! Linux accepts the reject replies `picket::reject` builds: a real client and server in two
//! network namespaces, a segment (or datagram) blocked on its way (an iptables DROP stands
//! in for the IPS), the blocked frame captured with an AF_PACKET socket, and the replies
//! built from it injected on the veth link. RFC 5961 is the point: a RST one off the
//! receiver's `rcv_nxt` only earns a challenge ACK, so each test first injects such a
//! near miss (built the same way from a frame with the sequence number moved by one) and
//! checks the connection survives it, then the real replies, and checks both ends fail
//! with a reset (or, for UDP, ECONNREFUSED) at once.

mod netlab;

use netlab::{skip_reason, wait_for, Guarded, Lab};
use picket::inspect::{Reject, RejectReply, RejectTarget};
use picket::packet::LinkType;
use picket::reject::{replies, Reply, Toward};
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const CLIENT_IP: &str = "10.77.0.1";
const SERVER_IP: &str = "10.77.0.2";
const TCP_PORT: &str = "8080";
const UDP_PORT: &str = "9999";
/// Offsets in the captured Ethernet + IPv4 (no options) + TCP frame.
const TCP_SEQ_AT: usize = 14 + 20 + 4;
const TCP_ACK_AT: usize = 14 + 20 + 8;

/// Prints the first frame the namespace sends to `port` that carries data, as hex.
const SNIFFER: &str = r#"
import socket, sys
iface, proto, port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((iface, 0))
s.settimeout(15)
print("READY", flush=True)
while True:
    pkt, addr = s.recvfrom(65535)
    if addr[2] != socket.PACKET_OUTGOING or pkt[12:14] != b"\x08\x00" or pkt[23] != proto:
        continue
    l4 = 14 + (pkt[14] & 15) * 4
    if int.from_bytes(pkt[l4 + 2:l4 + 4], "big") != port:
        continue
    head = (pkt[l4 + 12] >> 4) * 4 if proto == 6 else 8
    if len(pkt) > l4 + head:
        print("FRAME " + pkt.hex(), flush=True)
        break
"#;

/// Sends one Ethernet frame (hex) out of an interface.
const INJECTOR: &str = r#"
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
s.send(bytes.fromhex(sys.argv[2]))
"#;

const TCP_SERVER: &str = r#"
import socket, sys
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], int(sys.argv[2])))
l.listen(1)
print("READY", flush=True)
c, _ = l.accept()
print("ACCEPTED", flush=True)
c.settimeout(20)
try:
    print("DATA" if c.recv(100) else "EOF", flush=True)
except ConnectionResetError:
    print("RESET", flush=True)
except socket.timeout:
    print("TIMEOUT", flush=True)
"#;

const TCP_CLIENT: &str = r#"
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
c.settimeout(20)
c.send(b"EVIL request")
print("SENT", flush=True)
try:
    print("DATA" if c.recv(100) else "EOF", flush=True)
except ConnectionResetError:
    print("RESET", flush=True)
except socket.timeout:
    print("TIMEOUT", flush=True)
"#;

const UDP_CLIENT: &str = r#"
import socket, sys
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
c.connect((sys.argv[1], int(sys.argv[2])))
c.settimeout(20)
c.send(b"EVIL query")
print("SENT", flush=True)
try:
    c.recv(100)
    print("DATA", flush=True)
except ConnectionRefusedError:
    print("REFUSED", flush=True)
except socket.timeout:
    print("TIMEOUT", flush=True)
"#;

/// A lab process whose stdout lines are collected as they come.
struct Script {
    proc: Guarded,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Script {
    fn start(lab: &Lab, ns: &str, code: &str, args: &[&str]) -> Script {
        let mut all = vec!["-c", code];
        all.extend_from_slice(args);
        let mut cmd = lab.command(ns, "python3", &all);
        cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
        let mut proc = lab.spawn(cmd);
        let out = proc.0.stdout.take().expect("piped stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                sink.lock().expect("lines").push(line);
            }
        });
        Script { proc, lines }
    }

    fn line_starting(&self, prefix: &str) -> Option<String> {
        self.lines.lock().expect("lines").iter().find(|l| l.starts_with(prefix)).cloned()
    }

    fn wait_line(&self, prefix: &str, limit: Duration) -> String {
        wait_for(&format!("a line {prefix:?}"), limit, || self.line_starting(prefix).is_some());
        self.line_starting(prefix).unwrap_or_default()
    }

    fn last(&self) -> Option<String> {
        self.lines.lock().expect("lines").last().cloned()
    }
}

/// Client and server namespaces on one veth link; the server drops what the IPS would.
fn lab(tag: &str, drop_rule: &[&str]) -> (Lab, String, String) {
    let mut lab = Lab::new(tag);
    let cli = lab.namespace("rc");
    let srv = lab.namespace("rs");
    lab.link(&cli, "c0", &srv, "s0");
    lab.address(&cli, "c0", &format!("{CLIENT_IP}/24"));
    lab.address(&srv, "s0", &format!("{SERVER_IP}/24"));
    let mut args = vec!["-A", "INPUT"];
    args.extend_from_slice(drop_rule);
    args.extend_from_slice(&["-j", "DROP"]);
    lab.run(&srv, "iptables", &args);
    (lab, cli, srv)
}

fn inject(lab: &Lab, ns: &str, dev: &str, frame: &[u8]) {
    let hex: String = frame.iter().map(|b| format!("{b:02x}")).collect();
    lab.run(ns, "python3", &["-c", INJECTOR, dev, &hex]);
}

fn captured(sniffer: &Script) -> Vec<u8> {
    let line = sniffer.wait_line("FRAME ", Duration::from_secs(10));
    let hex = line.trim_start_matches("FRAME ");
    (0..hex.len() / 2).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex")).collect()
}

fn build(frame: &[u8], reject: Reject) -> Vec<Reply> {
    let mut out = Vec::new();
    replies(LinkType::Ethernet, frame, reject, &mut out).expect("replies for the captured frame");
    out
}

/// The frame with a 32-bit field moved by one: replies built from it are one off.
fn nudged(frame: &[u8], at: usize) -> Vec<u8> {
    let mut f = frame.to_vec();
    let v = u32::from_be_bytes([f[at], f[at + 1], f[at + 2], f[at + 3]]).wrapping_add(1);
    f[at..at + 4].copy_from_slice(&v.to_be_bytes());
    f
}

fn skip() -> bool {
    if let Some(reason) = skip_reason(&["python3", "iptables"]) {
        eprintln!("SKIPPED: {reason}");
        return true;
    }
    false
}

#[test]
fn linux_resets_both_ends_on_the_rsts_picket_builds() {
    if skip() {
        return;
    }
    // The server never gets the client's data segment (PSH): as if the IPS dropped it.
    let (lab, cli, srv) = lab("rst", &["-p", "tcp", "--dport", TCP_PORT, "--tcp-flags", "PSH", "PSH"]);
    let mut server = Script::start(&lab, &srv, TCP_SERVER, &[SERVER_IP, TCP_PORT]);
    server.wait_line("READY", Duration::from_secs(10));
    let sniffer = Script::start(&lab, &cli, SNIFFER, &["c0", "6", TCP_PORT]);
    sniffer.wait_line("READY", Duration::from_secs(10));
    let mut client = Script::start(&lab, &cli, TCP_CLIENT, &[SERVER_IP, TCP_PORT]);
    client.wait_line("SENT", Duration::from_secs(10));
    server.wait_line("ACCEPTED", Duration::from_secs(10));
    let frame = captured(&sniffer);
    let both = Reject { reply: RejectReply::TcpReset, to: RejectTarget::Both };

    // Near misses: seq one past each receiver's rcv_nxt. Linux answers with a challenge
    // ACK and keeps the connection.
    let miss_client = build(&nudged(&frame, TCP_ACK_AT), both);
    let miss_server = build(&nudged(&frame, TCP_SEQ_AT), both);
    inject(&lab, &srv, "s0", &miss_client[0].frame);
    inject(&lab, &cli, "c0", &miss_server[1].frame);
    std::thread::sleep(Duration::from_millis(500));
    assert!(client.proc.running(), "a RST off by one must not reset the client: {:?}", client.last());
    assert!(server.proc.running(), "a RST off by one must not reset the server: {:?}", server.last());

    // The real replies: to the source (the client) it must arrive on the client's side,
    // so it is sent from the server's end of the link, and the other way round.
    let replies = build(&frame, both);
    assert_eq!(replies.iter().map(|r| r.toward).collect::<Vec<_>>(), [Toward::Source, Toward::Destination]);
    inject(&lab, &srv, "s0", &replies[0].frame);
    inject(&lab, &cli, "c0", &replies[1].frame);
    client.proc.wait(Duration::from_secs(3));
    server.proc.wait(Duration::from_secs(3));
    assert_eq!(client.last().as_deref(), Some("RESET"), "the client's connection is reset");
    assert_eq!(server.last().as_deref(), Some("RESET"), "the server's connection is reset");
}

#[test]
fn linux_refuses_a_udp_socket_on_the_icmp_picket_builds() {
    if skip() {
        return;
    }
    // The datagram never reaches the server (and its kernel never answers it).
    let (lab, cli, srv) = lab("icmp", &["-p", "udp", "--dport", UDP_PORT]);
    let sniffer = Script::start(&lab, &cli, SNIFFER, &["c0", "17", UDP_PORT]);
    sniffer.wait_line("READY", Duration::from_secs(10));
    let mut client = Script::start(&lab, &cli, UDP_CLIENT, &[SERVER_IP, UDP_PORT]);
    client.wait_line("SENT", Duration::from_secs(10));
    let frame = captured(&sniffer);
    std::thread::sleep(Duration::from_millis(300));
    assert!(client.proc.running(), "nothing answers the datagram before the reply: {:?}", client.last());

    let reject = Reject { reply: RejectReply::IcmpUnreachable, to: RejectTarget::Both };
    let replies = build(&frame, reject);
    assert_eq!(replies.len(), 1, "ICMP goes to the source only");
    inject(&lab, &srv, "s0", &replies[0].frame);
    client.proc.wait(Duration::from_secs(3));
    assert_eq!(client.last().as_deref(), Some("REFUSED"), "port unreachable fails the connected socket");
}
