//! Live AF_PACKET capture in real network namespaces joined by a veth pair.
//!
//! Needs root and iproute2 (`ip netns`); every test prints why and returns early
//! otherwise. Namespaces are named after the process id and deleted by a guard, also
//! when a test panics; traffic is bounded in count and every wait has a deadline.
//!
//! The CPU measurement is `#[ignore]`d; run it with
//! `cargo test --release --test afpacket_netns -- --ignored --nocapture measure`.

use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::fs::File;
use std::net::UdpSocket;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use picket::capture::afpacket::{AfPacketConfig, AfPacketError, AfPacketSocket, FanoutMode, RingStats};
use picket::capture::{PacketSource, RawPacket};
use picket::packet::LinkType;

const SERVER_PORT: u16 = 9999;
const FIRST_CLIENT_PORT: u16 = 20000;

// ---------------------------------------------------------------------------------
// Namespaces

/// Why the tests cannot run here, if they cannot.
fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not running as root".into());
    }
    match Command::new("ip").args(["netns", "list"]).stdout(Stdio::null()).stderr(Stdio::null()).status() {
        Ok(status) if status.success() => None,
        Ok(status) => Some(format!("`ip netns list` failed ({status})")),
        Err(err) => Some(format!("`ip` not available ({err})")),
    }
}

macro_rules! skip_unless_possible {
    () => {
        if let Some(reason) = skip_reason() {
            eprintln!("SKIPPED: AF_PACKET namespace test needs root and `ip netns`: {reason}");
            return;
        }
    };
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

/// Namespaces A and B joined by veth-a (10.99.0.1/24, in A) and veth-b (10.99.0.2/24,
/// in B). Dropping it deletes both namespaces, which removes the veth pair with them.
struct Lab {
    a: String,
    b: String,
}

impl Lab {
    fn new(tag: &str) -> Lab {
        let pid = std::process::id();
        let lab = Lab { a: format!("pk-a-{pid}-{tag}"), b: format!("pk-b-{pid}-{tag}") };
        // Leftovers of an earlier run with the same pid would make `add` fail.
        let _ = Command::new("ip").args(["netns", "del", &lab.a]).stderr(Stdio::null()).status();
        let _ = Command::new("ip").args(["netns", "del", &lab.b]).stderr(Stdio::null()).status();
        ip(&["netns", "add", &lab.a]);
        ip(&["netns", "add", &lab.b]);
        ip(&["-n", &lab.a, "link", "add", "veth-a", "type", "veth", "peer", "name", "veth-b", "netns", &lab.b]);
        ip(&["-n", &lab.a, "addr", "add", "10.99.0.1/24", "dev", "veth-a"]);
        ip(&["-n", &lab.b, "addr", "add", "10.99.0.2/24", "dev", "veth-b"]);
        for (ns, dev) in [(&lab.a, "veth-a"), (&lab.b, "veth-b"), (&lab.a, "lo"), (&lab.b, "lo")] {
            ip(&["-n", ns, "link", "set", dev, "up"]);
        }
        lab
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// Moves the calling thread (only it) into namespace `name`; sockets it creates from
/// then on belong to that namespace.
fn enter_netns(name: &str) {
    let file = File::open(format!("/var/run/netns/{name}")).expect("open netns file");
    // SAFETY: valid descriptor of a network namespace file; setns affects only the
    // calling thread, which is one this test spawned.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "setns {name}: {}", std::io::Error::last_os_error());
}

fn spawn_in<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> thread::JoinHandle<T> {
    let ns = ns.to_string();
    thread::spawn(move || {
        enter_netns(&ns);
        f()
    })
}

// ---------------------------------------------------------------------------------
// Capture helpers

fn socket_config(fanout_group: u16, stop: &Arc<AtomicBool>) -> AfPacketConfig {
    AfPacketConfig {
        interface: "veth-b".into(),
        fanout_group,
        fanout_mode: FanoutMode::Hash,
        block_size: 256 << 10,
        block_count: 8,
        stop: Arc::clone(stop),
        ..AfPacketConfig::default()
    }
}

/// UDP over IPv4 in an Ethernet frame, VLAN tags allowed: (src port, dst port).
fn udp_ports(packet: &RawPacket<'_>) -> Option<(u16, u16)> {
    assert_eq!(packet.link, LinkType::Ethernet);
    let sliced = etherparse::SlicedPacket::from_ethernet(packet.data).ok()?;
    match sliced.transport? {
        etherparse::TransportSlice::Udp(udp) => Some((udp.source_port(), udp.destination_port())),
        _ => None,
    }
}

/// Per client port: datagrams to the server and datagrams back, as one socket saw them.
type FlowCounts = BTreeMap<u16, (u32, u32)>;

fn count_test_flow(packet: RawPacket<'_>, flows: &mut FlowCounts) {
    let Some((src, dst)) = udp_ports(&packet) else { return };
    let client_ports = FIRST_CLIENT_PORT..FIRST_CLIENT_PORT + 1000;
    if dst == SERVER_PORT && client_ports.contains(&src) {
        flows.entry(src).or_default().0 += 1;
    } else if src == SERVER_PORT && client_ports.contains(&dst) {
        flows.entry(dst).or_default().1 += 1;
    }
}

/// Opens a capture socket in namespace `ns`, reports the outcome on `ready`, then
/// counts test flows until `stop` is set.
fn spawn_capture(
    ns: &str,
    cfg: AfPacketConfig,
    ready: mpsc::Sender<Result<(), String>>,
) -> thread::JoinHandle<(FlowCounts, RingStats)> {
    spawn_in(ns, move || {
        let mut socket = match AfPacketSocket::open(&cfg) {
            Ok(socket) => socket,
            Err(err) => {
                ready.send(Err(err.to_string())).unwrap();
                return (FlowCounts::new(), RingStats::default());
            }
        };
        ready.send(Ok(())).unwrap();
        let mut flows = FlowCounts::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !cfg.stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            socket.poll_packets(Duration::from_millis(20), &mut |p| count_test_flow(p, &mut flows)).unwrap();
        }
        // Whatever the last retired block still holds.
        socket.poll_packets(Duration::from_millis(50), &mut |p| count_test_flow(p, &mut flows)).unwrap();
        (flows, socket.stats().unwrap())
    })
}

fn wait_ready(ready: &mpsc::Receiver<Result<(), String>>, count: usize) {
    for _ in 0..count {
        match ready.recv_timeout(Duration::from_secs(10)) {
            Ok(Ok(())) => {}
            Ok(Err(err)) => panic!("capture socket failed to open: {err}"),
            Err(err) => panic!("capture thread did not start: {err}"),
        }
    }
}

// ---------------------------------------------------------------------------------
// Tests

#[test]
fn fanout_spreads_flows_and_keeps_both_directions_on_one_socket() {
    skip_unless_possible!();
    const FLOWS: u16 = 50;
    const PER_FLOW: u32 = 10;
    let lab = Lab::new("fan");
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready) = mpsc::channel();

    let captures: Vec<_> = (0..2).map(|_| spawn_capture(&lab.b, socket_config(7, &stop), ready_tx.clone())).collect();

    // Echo server in B: answers every datagram until told to stop.
    let echoed = Arc::new(AtomicU64::new(0));
    let echo_stop = Arc::new(AtomicBool::new(false));
    let echo = {
        let (echoed, echo_stop, ready_tx) = (Arc::clone(&echoed), Arc::clone(&echo_stop), ready_tx.clone());
        spawn_in(&lab.b, move || {
            let server = UdpSocket::bind(("10.99.0.2", SERVER_PORT)).unwrap();
            server.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
            ready_tx.send(Ok(())).unwrap();
            let mut buf = [0u8; 256];
            let deadline = Instant::now() + Duration::from_secs(30);
            while !echo_stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                if let Ok((len, from)) = server.recv_from(&mut buf) {
                    server.send_to(&buf[..len], from).unwrap();
                    echoed.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };
    wait_ready(&ready, 3);

    // Client in A: FLOWS source ports, PER_FLOW datagrams each, then waits for the echoes.
    let client = spawn_in(&lab.a, move || {
        let mut sent = 0u32;
        let mut answers = 0u32;
        for flow in 0..FLOWS {
            let socket = UdpSocket::bind(("10.99.0.1", FIRST_CLIENT_PORT + flow)).unwrap();
            socket.connect(("10.99.0.2", SERVER_PORT)).unwrap();
            socket.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            for seq in 0..PER_FLOW {
                socket.send(format!("flow {flow} datagram {seq}").as_bytes()).unwrap();
                sent += 1;
            }
            let mut buf = [0u8; 256];
            for _ in 0..PER_FLOW {
                if socket.recv(&mut buf).is_err() {
                    break;
                }
                answers += 1;
            }
        }
        (sent, answers)
    });
    let (sent, answers) = client.join().unwrap();
    echo_stop.store(true, Ordering::Relaxed);
    echo.join().unwrap();
    // Let the retire timeout hand over the last partly filled blocks.
    thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let results: Vec<(FlowCounts, RingStats)> = captures.into_iter().map(|c| c.join().unwrap()).collect();
    drop(lab);

    let expected = FLOWS as u32 * PER_FLOW;
    assert_eq!(sent, expected);
    assert_eq!(answers, expected, "echoes lost on the veth pair");
    assert_eq!(echoed.load(Ordering::Relaxed), expected as u64);

    let captured_requests: u32 = results.iter().flat_map(|(f, _)| f.values()).map(|c| c.0).sum();
    let captured_replies: u32 = results.iter().flat_map(|(f, _)| f.values()).map(|c| c.1).sum();
    assert_eq!(captured_requests, expected, "requests captured once each across the group");
    assert_eq!(captured_replies, expected, "replies captured once each across the group");

    for (i, (flows, stats)) in results.iter().enumerate() {
        assert!(!flows.is_empty(), "socket {i} got no test flow: fanout did not spread");
        assert_eq!(stats.kernel_drops, 0, "socket {i} dropped packets: {stats:?}");
        assert!(stats.delivered >= flows.values().map(|c| (c.0 + c.1) as u64).sum());
        assert!(stats.kernel_packets >= stats.delivered, "{stats:?}");
        assert_eq!(stats.malformed_headers, 0);
    }
    let mut owner: HashMap<u16, usize> = HashMap::new();
    for (i, (flows, _)) in results.iter().enumerate() {
        for (&port, &(requests, replies)) in flows {
            assert_eq!((requests, replies), (PER_FLOW, PER_FLOW), "flow {port} split on socket {i}");
            assert!(owner.insert(port, i).is_none(), "flow {port} seen on both sockets");
        }
    }
    assert_eq!(owner.len(), FLOWS as usize);
    eprintln!("fanout: socket 0 got {} flows, socket 1 got {} flows", results[0].0.len(), results[1].0.len());
}

/// Sends raw Ethernet frames on an interface of the calling thread's namespace.
struct RawSender {
    fd: OwnedFd,
    ifindex: i32,
}

impl RawSender {
    fn open(interface: &str) -> RawSender {
        // SAFETY: plain system call; the result is checked before use.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        assert!(fd >= 0, "packet socket: {}", std::io::Error::last_os_error());
        // SAFETY: `fd` is a fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let name = CString::new(interface).unwrap();
        // SAFETY: NUL-terminated string that outlives the call.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) } as i32;
        assert!(ifindex > 0, "no interface {interface}");
        RawSender { fd, ifindex }
    }

    fn send(&self, frame: &[u8]) {
        // SAFETY: all-zero is a valid sockaddr_ll.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_ifindex = self.ifindex;
        addr.sll_halen = 6;
        addr.sll_addr[..6].copy_from_slice(&frame[..6]);
        // SAFETY: `frame` and `addr` are valid for the lengths passed.
        let rc = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        assert_eq!(rc, frame.len() as isize, "sendto: {}", std::io::Error::last_os_error());
    }
}

/// A UDP frame to the server port carrying `vlans` tags ((TPID, TCI), outermost first).
fn tagged_udp_frame(vlans: &[(u16, u16)], client_port: u16) -> Vec<u8> {
    let builder = etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4([10, 99, 5, 1], [10, 99, 5, 2], 64)
        .udp(client_port, SERVER_PORT);
    let mut untagged = Vec::new();
    builder.write(&mut untagged, b"tagged").unwrap();
    let mut frame = untagged[..12].to_vec();
    for (tpid, tci) in vlans {
        frame.extend_from_slice(&tpid.to_be_bytes());
        frame.extend_from_slice(&tci.to_be_bytes());
    }
    frame.extend_from_slice(&untagged[12..]);
    frame
}

#[test]
fn vlan_tags_stripped_by_the_kernel_are_put_back() {
    skip_unless_possible!();
    let lab = Lab::new("vlan");
    let stop = Arc::new(AtomicBool::new(false));
    let cfg = socket_config(8, &stop);
    let capture = spawn_in(&lab.b, move || {
        let mut socket = AfPacketSocket::open(&cfg).unwrap();
        let mut frames: Vec<(Vec<u8>, u32)> = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !cfg.stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            // Through the PacketSource interface this time.
            let Some(packet) = socket.next_packet().unwrap() else { break };
            if udp_ports(&packet).is_some_and(|(_, dst)| dst == SERVER_PORT) {
                frames.push((packet.data.to_vec(), packet.wire_len));
                if frames.len() == 3 {
                    break;
                }
            }
        }
        (frames, socket.stats().unwrap())
    });
    thread::sleep(Duration::from_millis(300)); // socket bound

    let sent = vec![
        tagged_udp_frame(&[(0x8100, 0x6000 | 100)], FIRST_CLIENT_PORT),
        tagged_udp_frame(&[(0x88a8, 200), (0x8100, 300)], FIRST_CLIENT_PORT + 1),
        tagged_udp_frame(&[], FIRST_CLIENT_PORT + 2),
    ];
    let to_send = sent.clone();
    spawn_in(&lab.a, move || {
        let sender = RawSender::open("veth-a");
        for frame in &to_send {
            sender.send(frame);
        }
    })
    .join()
    .unwrap();
    let waited = Instant::now();
    while !capture.is_finished() && waited.elapsed() < Duration::from_secs(5) {
        thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let (frames, stats) = capture.join().unwrap();
    drop(lab);

    assert_eq!(frames.len(), 3, "captured {frames:?}");
    for ((got, wire_len), want) in frames.iter().zip(&sent) {
        assert_eq!(got, want, "frame differs from what was sent");
        assert_eq!(*wire_len as usize, want.len());
    }
    assert!(stats.vlan_tags_restored >= 2, "{stats:?}");
}

#[test]
fn open_errors_name_the_problem() {
    skip_unless_possible!();
    let lab = Lab::new("err");
    ip(&["-n", &lab.b, "link", "add", "down-a", "type", "veth", "peer", "name", "down-b"]);
    let stop = Arc::new(AtomicBool::new(false));
    let errors = spawn_in(&lab.b, move || {
        let open = |interface: &str| {
            let cfg = AfPacketConfig { interface: interface.into(), ..socket_config(9, &stop) };
            AfPacketSocket::open(&cfg).err()
        };
        let missing = open("nosuch0");
        let down = open("down-a");
        let fine = open("veth-b");
        (missing, down, fine)
    })
    .join()
    .unwrap();
    match errors {
        (Some(AfPacketError::NoSuchInterface { interface }), Some(AfPacketError::InterfaceDown { .. }), None) => {
            assert_eq!(interface, "nosuch0")
        }
        other => panic!("unexpected outcome: {other:?}"),
    }

    // A thread that dropped root (only itself: raw syscall, not glibc's process-wide
    // setresuid) has no CAP_NET_RAW left.
    let unprivileged = thread::spawn(|| {
        // SAFETY: changes the credentials of this short-lived thread only.
        let rc = unsafe { libc::syscall(libc::SYS_setresuid, 65534, 65534, 65534) };
        assert_eq!(rc, 0, "setresuid: {}", std::io::Error::last_os_error());
        AfPacketSocket::open(&AfPacketConfig::for_interface("lo")).err()
    })
    .join()
    .unwrap();
    match unprivileged {
        Some(err @ AfPacketError::NeedsPrivilege { .. }) => {
            assert!(err.to_string().contains("needs root or CAP_NET_RAW"), "{err}")
        }
        other => panic!("expected a privilege error, got {other:?}"),
    }
}

/// A BPF filter attached to every socket of a fanout group: the kernel drops what it
/// rejects before the ring (not counted as packets or drops), so the sockets only ever
/// see the matching datagrams, and each of those exactly once across the group.
#[test]
fn bpf_filter_drops_non_matching_packets_in_the_kernel() {
    skip_unless_possible!();
    const PER_PORT: u32 = 40;
    let lab = Lab::new("bpf");
    let stop = Arc::new(AtomicBool::new(false));
    let filter = format!("udp dst port {SERVER_PORT}");
    let capture = |stop: &Arc<AtomicBool>| {
        let cfg = AfPacketConfig { bpf_filter: Some(filter.clone()), ..socket_config(12, stop) };
        let stop = Arc::clone(stop);
        spawn_in(&lab.b, move || {
            let mut socket = AfPacketSocket::open(&cfg).unwrap();
            // (datagrams to the server port, anything else)
            let mut seen = (0u32, 0u32);
            let mut count = |p: RawPacket<'_>| match udp_ports(&p) {
                Some((_, dst)) if dst == SERVER_PORT => seen.0 += 1,
                _ => seen.1 += 1,
            };
            let deadline = Instant::now() + Duration::from_secs(20);
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                socket.poll_packets(Duration::from_millis(20), &mut count).unwrap();
            }
            socket.poll_packets(Duration::from_millis(50), &mut count).unwrap();
            (seen, socket.stats().unwrap())
        })
    };
    let captures = [capture(&stop), capture(&stop)];
    thread::sleep(Duration::from_millis(300)); // sockets bound

    // From A: datagrams to the server port and to the next port, interleaved, from
    // several source ports so that the fanout hash uses both sockets. Nothing listens
    // in B: the ICMP port-unreachable answers must be filtered out too.
    spawn_in(&lab.a, move || {
        for flow in 0..4u16 {
            let socket = UdpSocket::bind(("10.99.0.1", FIRST_CLIENT_PORT + flow)).unwrap();
            for seq in 0..PER_PORT / 4 {
                for port in [SERVER_PORT, SERVER_PORT + 1] {
                    let _ = socket.send_to(format!("datagram {seq}").as_bytes(), ("10.99.0.2", port));
                }
            }
        }
    })
    .join()
    .unwrap();
    thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let results: Vec<_> = captures.into_iter().map(|c| c.join().unwrap()).collect();
    drop(lab);

    let matching: u32 = results.iter().map(|((m, _), _)| m).sum();
    let other: u32 = results.iter().map(|((_, o), _)| o).sum();
    assert_eq!(matching, PER_PORT, "every datagram to port {SERVER_PORT} captured once: {results:?}");
    assert_eq!(other, 0, "the kernel filter let other packets through: {results:?}");
    for ((m, _), stats) in &results {
        assert_eq!(stats.delivered, *m as u64, "{stats:?}");
        assert_eq!(stats.kernel_packets, stats.delivered, "filtered packets are not counted by the kernel: {stats:?}");
        assert_eq!(stats.kernel_drops, 0, "{stats:?}");
    }
}

#[test]
fn bad_bpf_filter_fails_the_open_naming_the_filter() {
    skip_unless_possible!();
    let lab = Lab::new("bpfbad");
    let stop = Arc::new(AtomicBool::new(false));
    let err = spawn_in(&lab.b, move || {
        let cfg = AfPacketConfig { bpf_filter: Some("udp port 99999".into()), ..socket_config(13, &stop) };
        AfPacketSocket::open(&cfg).err()
    })
    .join()
    .unwrap();
    drop(lab);
    match err {
        Some(err @ AfPacketError::Filter { .. }) => {
            let text = err.to_string();
            assert!(text.contains("veth-b") && text.contains("'udp port 99999'"), "{text}");
        }
        other => panic!("expected a filter error, got {other:?}"),
    }
}

#[test]
fn fanout_group_with_another_mode_is_refused() {
    skip_unless_possible!();
    let lab = Lab::new("grp");
    let stop = Arc::new(AtomicBool::new(false));
    let outcome = spawn_in(&lab.b, move || {
        let mut first = AfPacketSocket::open(&socket_config(11, &stop)).unwrap();
        let other_mode = AfPacketConfig { fanout_mode: FanoutMode::Lb, ..socket_config(11, &stop) };
        let err = AfPacketSocket::open(&other_mode).err();

        // A quiet link: waits are bounded by the timeout, and the stop flag ends next_packet.
        let started = Instant::now();
        first.poll_packets(Duration::from_millis(30), &mut |_| {}).unwrap();
        assert!(started.elapsed() < Duration::from_secs(2));
        stop.store(true, Ordering::Relaxed);
        assert!(first.next_packet().unwrap().is_none(), "stop flag ignored");
        err
    })
    .join()
    .unwrap();
    match outcome {
        Some(err @ AfPacketError::Setup { .. }) => assert!(err.to_string().contains("fanout group 11"), "{err}"),
        other => panic!("expected a fanout error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------
// CPU cost per packet: TPACKET_V3 ring (1 and 2 sockets) against recvfrom per packet.

/// trafgen packet: UDP 10.99.0.1 -> 10.99.0.2 port 9, 256 random source ports, sent
/// to a MAC that is not veth-b's so that B's IP stack drops it right away and only the
/// capture path is measured.
const TRAFGEN_PACKET: &str = "{ 0x02,0x00,0x00,0x00,0x00,0x99, 0x02,0x00,0x00,0x00,0x00,0x01, c16(0x0800),
  0x45, 0x00, c16(46), drnd(2), c16(0), 64, 17, csumip(14, 33),
  10, 99, 0, 1, 10, 99, 0, 2,
  0x4e, drnd(1), c16(9), c16(26), c16(0),
  fill(0x41, 18) }";

fn is_bench_packet(data: &[u8]) -> bool {
    data.len() >= 38 && data[12..14] == [0x08, 0x00] && data[23] == 17 && data[36..38] == [0, 9]
}

fn thread_cpu_time() -> Duration {
    // SAFETY: all-zero is a valid rusage, and getrusage writes one.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a writable rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    assert_eq!(rc, 0);
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

#[derive(Debug, Default, Clone, Copy)]
struct Measured {
    packets: u64,
    cpu: Duration,
    kernel_packets: u64,
    drops: u64,
}

#[derive(Clone, Copy, Debug)]
enum Method {
    RingPoll,
    RingNextPacket,
    Recvfrom,
}

fn measure_ring(cfg: AfPacketConfig, method: Method, ready: mpsc::Sender<Result<(), String>>) -> Measured {
    let mut socket = match AfPacketSocket::open(&cfg) {
        Ok(socket) => socket,
        Err(err) => {
            ready.send(Err(err.to_string())).unwrap();
            return Measured::default();
        }
    };
    ready.send(Ok(())).unwrap();
    let start = thread_cpu_time();
    let mut packets = 0u64;
    match method {
        Method::RingPoll => {
            let mut count = |p: RawPacket<'_>| packets += is_bench_packet(p.data) as u64;
            while !cfg.stop.load(Ordering::Relaxed) {
                socket.poll_packets(Duration::from_millis(100), &mut count).unwrap();
            }
        }
        Method::RingNextPacket => {
            while let Some(p) = socket.next_packet().unwrap() {
                packets += is_bench_packet(p.data) as u64;
            }
        }
        Method::Recvfrom => unreachable!(),
    }
    let cpu = thread_cpu_time() - start;
    let stats = socket.stats().unwrap();
    Measured { packets, cpu, kernel_packets: stats.kernel_packets, drops: stats.kernel_drops }
}

/// The baseline: one `recv` system call per packet on a plain AF_PACKET socket with a
/// 4 MiB receive buffer.
fn measure_recvfrom(stop: Arc<AtomicBool>, ready: mpsc::Sender<Result<(), String>>) -> Measured {
    // SAFETY: plain system call; checked below.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    assert!(fd >= 0);
    // SAFETY: fresh descriptor owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let set = |level: i32, name: i32, value: &[u8]| {
        // SAFETY: `value` is valid for its length.
        let rc = unsafe { libc::setsockopt(fd.as_raw_fd(), level, name, value.as_ptr().cast(), value.len() as u32) };
        assert_eq!(rc, 0, "setsockopt {name}: {}", std::io::Error::last_os_error());
    };
    set(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &(4i32 << 20).to_ne_bytes());
    let timeout = libc::timeval { tv_sec: 0, tv_usec: 100_000 };
    // SAFETY: viewing a plain C struct as bytes for setsockopt.
    let timeout_bytes = unsafe {
        std::slice::from_raw_parts(
            (&timeout as *const libc::timeval).cast::<u8>(),
            std::mem::size_of::<libc::timeval>(),
        )
    };
    set(libc::SOL_SOCKET, libc::SO_RCVTIMEO, timeout_bytes);
    let name = CString::new("veth-b").unwrap();
    // SAFETY: NUL-terminated string.
    let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) } as i32;
    // SAFETY: all-zero is a valid sockaddr_ll.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
    addr.sll_ifindex = ifindex;
    // SAFETY: valid address of the size passed.
    let rc = unsafe {
        libc::bind(fd.as_raw_fd(), (&addr as *const libc::sockaddr_ll).cast(), std::mem::size_of_val(&addr) as u32)
    };
    assert_eq!(rc, 0);
    ready.send(Ok(())).unwrap();
    let start = thread_cpu_time();
    let mut packets = 0u64;
    let mut buf = [0u8; 2048];
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n > 0 {
            packets += is_bench_packet(&buf[..n as usize]) as u64;
        }
    }
    let cpu = thread_cpu_time() - start;
    let mut stats = libc::tpacket_stats { tp_packets: 0, tp_drops: 0 };
    let mut len = std::mem::size_of_val(&stats) as u32;
    // SAFETY: `stats` is writable for `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            (&mut stats as *mut libc::tpacket_stats).cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0);
    Measured { packets, cpu, kernel_packets: stats.tp_packets as u64, drops: stats.tp_drops as u64 }
}

fn run_trafgen(ns: &str, config: &std::path::Path, rate: u64, count: u64) -> Duration {
    let started = Instant::now();
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns, "trafgen", "--dev", "veth-a", "--conf"])
        .arg(config)
        .args(["-P", "1", "-C", "-b", &format!("{rate}pps"), "-n", &count.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start trafgen");
    let limit = Duration::from_secs(count / rate + 10);
    loop {
        if child.try_wait().unwrap().is_some() {
            return started.elapsed();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("trafgen did not finish in {limit:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[ignore = "measurement: run in release with --ignored --nocapture"]
fn measure_cpu_per_packet() {
    skip_unless_possible!();
    if Command::new("trafgen").arg("-v").stdout(Stdio::null()).status().is_err() {
        eprintln!("SKIPPED: trafgen (netsniff-ng) not installed");
        return;
    }
    let lab = Lab::new("bench");
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), TRAFGEN_PACKET).unwrap();
    let seconds: u64 = std::env::var("PICKET_BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    let rates: Vec<u64> = std::env::var("PICKET_BENCH_RATES")
        .ok()
        .map(|s| s.split(',').filter_map(|r| r.parse().ok()).collect())
        .unwrap_or_else(|| vec![100_000, 200_000, 300_000]);
    let modes: [(&str, Method, usize); 4] = [
        ("recv() per packet", Method::Recvfrom, 1),
        ("ring, poll_packets", Method::RingPoll, 1),
        ("ring, next_packet", Method::RingNextPacket, 1),
        ("ring x2 fanout", Method::RingPoll, 2),
    ];
    eprintln!(
        "{:<20} {:>8} {:>9} {:>9} {:>9} {:>8} {:>10} {:>7}",
        "mode", "rate", "sent/s", "captured", "seen", "drops", "ns/packet", "cpu %"
    );
    let mut group = 20;
    for &rate in &rates {
        for (label, method, sockets) in modes {
            group += 1;
            let stop = Arc::new(AtomicBool::new(false));
            let (ready_tx, ready) = mpsc::channel();
            let threads: Vec<_> = (0..sockets)
                .map(|_| {
                    let (stop, ready_tx) = (Arc::clone(&stop), ready_tx.clone());
                    let cfg = AfPacketConfig { stop: Arc::clone(&stop), ..AfPacketConfig::for_interface("veth-b") };
                    let cfg = AfPacketConfig { fanout_group: group, ..cfg };
                    spawn_in(&lab.b, move || match method {
                        Method::Recvfrom => measure_recvfrom(stop, ready_tx),
                        _ => measure_ring(cfg, method, ready_tx),
                    })
                })
                .collect();
            wait_ready(&ready, sockets);
            let count = rate * seconds;
            let sending = run_trafgen(&lab.a, config.path(), rate, count);
            thread::sleep(Duration::from_millis(300));
            stop.store(true, Ordering::Relaxed);
            let results: Vec<Measured> = threads.into_iter().map(|t| t.join().unwrap()).collect();
            let packets: u64 = results.iter().map(|m| m.packets).sum();
            let drops: u64 = results.iter().map(|m| m.drops).sum();
            let seen: u64 = results.iter().map(|m| m.kernel_packets).sum();
            let cpu: Duration = results.iter().map(|m| m.cpu).sum();
            let wall = sending + Duration::from_millis(300);
            eprintln!(
                "{label:<20} {rate:>8} {:>9.0} {packets:>9} {seen:>9} {drops:>8} {:>10.0} {:>6.1}%",
                count as f64 / sending.as_secs_f64(),
                cpu.as_nanos() as f64 / packets.max(1) as f64,
                100.0 * cpu.as_secs_f64() / wall.as_secs_f64(),
            );
            assert!(packets <= count, "captured more bench packets than sent");
        }
    }
}
