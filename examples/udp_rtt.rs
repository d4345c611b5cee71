//! UDP round-trip time through a middle box: a paced client and an echoing responder.
//!
//! ```text
//! udp_rtt responder --bind 0.0.0.0:7000
//! udp_rtt client --to 10.0.0.2:7000 --rate 10000 --count 30000 --size 64 [--flows 8] [--from IP,IP..]
//!                [--timeout-ms 1000]
//! ```
//!
//! The client sends `count` datagrams at `rate` per second on an absolute schedule (datagram
//! `i` is due at `i / rate` seconds after the start, so a late send never shifts the ones after
//! it), each carrying a magic number, its sequence number and its send time. Replies are read on
//! the same socket(s) by one receive thread per socket; the round-trip time of a reply is the
//! receive time minus the send time it carries. When everything has been sent the client waits
//! until every reply is in or `--timeout-ms` has passed, then prints one JSON line:
//! counts (sent, received, lost, duplicates, errors), the send rate it achieved (when the sender
//! cannot keep up with `--rate`, `sender_kept_up` is false and `achieved_pps` says what it did),
//! and the RTT percentiles in microseconds.
//!
//! The responder echoes every datagram to its sender until SIGTERM or SIGINT, then prints one
//! JSON line with what it received and echoed (`--no-echo` only counts, for one-way tests).
//!
//! Built by `cargo build --release --example udp_rtt` (binary:
//! `target/release/examples/udp_rtt`); `scripts/inline_bench.py` drives it.

use clap::{Parser, Subcommand};
use serde_json::json;
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// First four bytes of every request: "PRTT". Replies without it are counted as malformed.
const MAGIC: [u8; 4] = *b"PRTT";
/// Offsets in a request: magic, sequence number (u64 BE), send time in ns since start (u64 BE).
const MAGIC_AT: usize = 0;
const SEQ_AT: usize = 4;
const SENT_NS_AT: usize = 12;
/// Smallest request: the three fields above.
const HEADER_LEN: usize = 20;
/// Largest datagram read or sent.
const MAX_DATAGRAM: usize = 65_507;
/// Socket receive buffer asked for (the kernel caps it at net.core.rmem_max): room for a few
/// milliseconds of 200k replies/s while a receive thread is descheduled.
const RECV_BUFFER_BYTES: usize = 4 << 20;
/// How often blocked receives wake to check whether to stop.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// A send due later than this sleeps; closer than this it spins (sleeps overshoot by tens of µs).
const SPIN_BELOW: Duration = Duration::from_micros(20);
/// The sender "kept up" when it achieved at least this share of the requested rate.
const KEPT_UP_SHARE: f64 = 0.98;
/// Most flows (sockets, each with a receive thread) a client opens.
const MAX_FLOWS: usize = 64;
const NANOS_PER_SEC: u128 = 1_000_000_000;

#[derive(Parser)]
#[command(about = "UDP round-trip time through a middle box (client and echo responder)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Echo every datagram back to its sender until SIGTERM/SIGINT; then print counts as JSON.
    Responder {
        #[arg(long)]
        bind: SocketAddr,
        /// Count datagrams without echoing them.
        #[arg(long)]
        no_echo: bool,
    },
    /// Send paced requests, time the replies, print one JSON line.
    Client {
        #[arg(long)]
        to: SocketAddr,
        /// Requests per second (all flows together).
        #[arg(long)]
        rate: u64,
        /// Requests to send.
        #[arg(long)]
        count: u64,
        /// UDP payload bytes per request (at least 20).
        #[arg(long, default_value_t = 64)]
        size: usize,
        /// Sockets (source ports) to spread the requests over, round robin.
        #[arg(long, default_value_t = 1)]
        flows: usize,
        /// Local addresses the flows are sent from, in turn (flow i from address i mod n);
        /// by default the kernel picks one. NFQUEUE's --queue-balance hashes addresses only.
        #[arg(long, value_delimiter = ',')]
        from: Vec<std::net::IpAddr>,
        /// How long to wait for late replies after the last send.
        #[arg(long, default_value_t = 1000)]
        timeout_ms: u64,
    },
}

/// Why the tool stopped; one line each.
#[derive(Debug)]
enum RttError {
    Usage(String),
    Socket { addr: SocketAddr, what: &'static str, err: io::Error },
    Signal(io::Error),
}

impl std::fmt::Display for RttError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RttError::Usage(msg) => write!(f, "{msg}"),
            RttError::Socket { addr, what, err } => {
                write!(f, "cannot {what} UDP socket for {addr}: {err} (is the address local to this namespace?)")
            }
            RttError::Signal(err) => write!(f, "cannot install the SIGTERM/SIGINT handler: {err}"),
        }
    }
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Responder { bind, no_echo } => responder(bind, !no_echo),
        Command::Client { to, rate, count, size, flows, from, timeout_ms } => {
            client(&ClientPlan { to, rate, count, size, flows, from, timeout: Duration::from_millis(timeout_ms) })
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("udp_rtt: error: {err}");
            ExitCode::FAILURE
        }
    }
}

/// A UDP socket with a large receive buffer; bound to `bind`, connected to `peer` if given.
fn udp_socket(bind: SocketAddr, peer: Option<SocketAddr>) -> Result<UdpSocket, RttError> {
    let addr = peer.unwrap_or(bind);
    let fail = |what| move |err| RttError::Socket { addr, what, err };
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP)).map_err(fail("open"))?;
    socket.set_recv_buffer_size(RECV_BUFFER_BYTES).map_err(fail("size the receive buffer of"))?;
    socket.bind(&bind.into()).map_err(|err| RttError::Socket { addr: bind, what: "bind", err })?;
    if let Some(peer) = peer {
        socket.connect(&peer.into()).map_err(fail("connect"))?;
    }
    let socket: UdpSocket = socket.into();
    socket.set_read_timeout(Some(POLL_INTERVAL)).map_err(fail("set the read timeout of"))?;
    Ok(socket)
}

fn is_timeout(err: &io::Error) -> bool {
    matches!(err.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted)
}

fn responder(bind: SocketAddr, echo: bool) -> Result<(), RttError> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, Arc::clone(&stop)).map_err(RttError::Signal)?;
    }
    let socket = udp_socket(bind, None)?;
    let (mut received, mut echoed, mut bytes, mut send_errors, mut recv_errors) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut buf = vec![0u8; MAX_DATAGRAM];
    while !stop.load(Ordering::Relaxed) {
        match socket.recv_from(&mut buf) {
            Ok((len, from)) => {
                received += 1;
                bytes += len as u64;
                if echo {
                    match socket.send_to(&buf[..len], from) {
                        Ok(_) => echoed += 1,
                        Err(_) => send_errors += 1,
                    }
                }
            }
            Err(err) if is_timeout(&err) => {}
            Err(_) => recv_errors += 1,
        }
    }
    println!(
        "{}",
        json!({
            "mode": "responder", "bind": bind.to_string(), "received": received, "bytes": bytes,
            "echoed": echoed, "send_errors": send_errors, "recv_errors": recv_errors,
        })
    );
    Ok(())
}

struct ClientPlan {
    to: SocketAddr,
    rate: u64,
    count: u64,
    size: usize,
    flows: usize,
    from: Vec<std::net::IpAddr>,
    timeout: Duration,
}

/// What one receive thread saw.
#[derive(Default)]
struct Replies {
    rtt_ns: Vec<u64>,
    malformed: u64,
    duplicates: u64,
    recv_errors: u64,
}

/// Reads replies on `socket` until `stop`; `seen` has one flag per sequence number so a
/// duplicate is counted once and not timed twice.
fn receive(
    socket: &UdpSocket,
    start: Instant,
    seen: &[AtomicBool],
    received: &AtomicU64,
    stop: &AtomicBool,
) -> Replies {
    let mut replies = Replies::default();
    let mut buf = vec![0u8; MAX_DATAGRAM];
    while !stop.load(Ordering::Relaxed) {
        let len = match socket.recv(&mut buf) {
            Ok(len) => len,
            Err(err) if is_timeout(&err) => continue,
            Err(_) => {
                // ICMP errors (port unreachable) surface here on a connected socket.
                replies.recv_errors += 1;
                continue;
            }
        };
        let now_ns = start.elapsed().as_nanos() as u64;
        let Some((seq, sent_ns)) = parse_request(&buf[..len]) else {
            replies.malformed += 1;
            continue;
        };
        let Some(flag) = usize::try_from(seq).ok().and_then(|i| seen.get(i)) else {
            replies.malformed += 1;
            continue;
        };
        if flag.swap(true, Ordering::Relaxed) {
            replies.duplicates += 1;
            continue;
        }
        replies.rtt_ns.push(now_ns.saturating_sub(sent_ns));
        received.fetch_add(1, Ordering::Relaxed);
    }
    replies
}

/// (sequence number, send time) of a datagram of ours, if it is one.
fn parse_request(data: &[u8]) -> Option<(u64, u64)> {
    if data.get(MAGIC_AT..MAGIC_AT + MAGIC.len())? != MAGIC {
        return None;
    }
    let seq = u64::from_be_bytes(data.get(SEQ_AT..SEQ_AT + 8)?.try_into().ok()?);
    let sent_ns = u64::from_be_bytes(data.get(SENT_NS_AT..SENT_NS_AT + 8)?.try_into().ok()?);
    Some((seq, sent_ns))
}

/// The time request `seq` is due, from the start: `seq / rate` seconds, computed without drift.
fn due(seq: u64, rate: u64) -> Duration {
    let ns = u128::from(seq) * NANOS_PER_SEC / u128::from(rate);
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// Nearest-rank percentile of sorted values, `per_mille` of 1000 (999 = p99.9); 0 when empty.
/// Integer arithmetic, so p99.9 of 1000 values is the 999th, not a rounding away from it.
fn percentile(sorted: &[u64], per_mille: usize) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (per_mille * sorted.len()).div_ceil(1000);
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn micros(ns: u64) -> f64 {
    (ns as f64 / 1000.0 * 10.0).round() / 10.0
}

fn client(plan: &ClientPlan) -> Result<(), RttError> {
    if plan.rate == 0 || plan.count == 0 {
        return Err(RttError::Usage("--rate and --count must be at least 1".into()));
    }
    if !(HEADER_LEN..=MAX_DATAGRAM).contains(&plan.size) {
        return Err(RttError::Usage(format!("--size must be {HEADER_LEN}..={MAX_DATAGRAM} bytes")));
    }
    if !(1..=MAX_FLOWS).contains(&plan.flows) {
        return Err(RttError::Usage(format!("--flows must be 1..={MAX_FLOWS}")));
    }
    let Ok(count) = usize::try_from(plan.count) else {
        return Err(RttError::Usage("--count is too large for this machine".into()));
    };
    if plan.from.iter().any(|ip| ip.is_ipv4() != plan.to.is_ipv4()) {
        return Err(RttError::Usage("--from addresses must be of the --to address's family".into()));
    }
    let unspecified: std::net::IpAddr =
        if plan.to.is_ipv4() { std::net::Ipv4Addr::UNSPECIFIED.into() } else { std::net::Ipv6Addr::UNSPECIFIED.into() };
    let sockets = (0..plan.flows)
        .map(|flow| {
            let ip = if plan.from.is_empty() { unspecified } else { plan.from[flow % plan.from.len()] };
            udp_socket(SocketAddr::new(ip, 0), Some(plan.to))
        })
        .collect::<Result<Vec<_>, _>>()?;

    let seen: Arc<Vec<AtomicBool>> = Arc::new((0..count).map(|_| AtomicBool::new(false)).collect());
    let received = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let receivers: Vec<_> = sockets
        .iter()
        .map(|socket| {
            let socket = socket.try_clone().map_err(|err| RttError::Socket { addr: plan.to, what: "clone", err })?;
            let (seen, received, stop) = (Arc::clone(&seen), Arc::clone(&received), Arc::clone(&stop));
            Ok(thread::spawn(move || receive(&socket, start, &seen, &received, &stop)))
        })
        .collect::<Result<_, RttError>>()?;

    let mut payload = vec![0u8; plan.size];
    payload[MAGIC_AT..MAGIC_AT + MAGIC.len()].copy_from_slice(&MAGIC);
    let (mut sent, mut send_errors, mut max_lag, mut last_send) = (0u64, 0u64, Duration::ZERO, Duration::ZERO);
    for seq in 0..plan.count {
        let due = due(seq, plan.rate);
        let mut now = start.elapsed();
        while now < due {
            let left = due - now;
            if left > SPIN_BELOW {
                thread::sleep(left);
            } else {
                std::hint::spin_loop();
            }
            now = start.elapsed();
        }
        max_lag = max_lag.max(now - due);
        payload[SEQ_AT..SEQ_AT + 8].copy_from_slice(&seq.to_be_bytes());
        payload[SENT_NS_AT..SENT_NS_AT + 8].copy_from_slice(&(now.as_nanos() as u64).to_be_bytes());
        match sockets[(seq % plan.flows as u64) as usize].send(&payload) {
            Ok(_) => sent += 1,
            Err(_) => send_errors += 1,
        }
        last_send = now;
    }
    let send_span = last_send;
    let deadline = Instant::now() + plan.timeout;
    while received.load(Ordering::Relaxed) < sent && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(1));
    }
    stop.store(true, Ordering::Relaxed);
    let mut all = Replies::default();
    for handle in receivers {
        let part = handle.join().unwrap_or_default();
        all.rtt_ns.extend(part.rtt_ns);
        all.malformed += part.malformed;
        all.duplicates += part.duplicates;
        all.recv_errors += part.recv_errors;
    }
    all.rtt_ns.sort_unstable();
    let got = all.rtt_ns.len() as u64;
    // Requests after the first are spread over the send span; one request has no rate.
    let achieved_pps = if plan.count > 1 && !send_span.is_zero() {
        (plan.count - 1) as f64 / send_span.as_secs_f64()
    } else {
        plan.rate as f64
    };
    let mean_ns = all.rtt_ns.iter().sum::<u64>().checked_div(got).unwrap_or(0);
    let rtt = |per_mille| micros(percentile(&all.rtt_ns, per_mille));
    println!(
        "{}",
        json!({
            "mode": "client", "to": plan.to.to_string(), "rate_pps": plan.rate, "size": plan.size,
            "flows": plan.flows, "sent": sent, "received": got, "lost": sent.saturating_sub(got),
            "send_errors": send_errors, "recv_errors": all.recv_errors, "malformed": all.malformed,
            "duplicates": all.duplicates,
            "achieved_pps": achieved_pps.round(),
            "sender_kept_up": achieved_pps >= KEPT_UP_SHARE * plan.rate as f64,
            "max_send_lag_us": micros(max_lag.as_nanos() as u64),
            "min_us": rtt(0), "p50_us": rtt(500), "p90_us": rtt(900), "p99_us": rtt(990),
            "p99_9_us": rtt(999), "max_us": rtt(1000), "mean_us": micros(mean_ns),
        })
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_has_no_drift() {
        assert_eq!(due(0, 3), Duration::ZERO);
        assert_eq!(due(3, 3), Duration::from_secs(1));
        assert_eq!(due(300_000, 300_000), Duration::from_secs(1));
        assert_eq!(due(1, 3), Duration::from_nanos(333_333_333));
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile(&v, 500), 500);
        assert_eq!(percentile(&v, 999), 999);
        assert_eq!(percentile(&v, 1000), 1000);
        assert_eq!(percentile(&v, 0), 1);
        assert_eq!(percentile(&[], 990), 0);
    }

    #[test]
    fn parses_only_our_requests() {
        let mut d = vec![0u8; HEADER_LEN];
        d[..4].copy_from_slice(&MAGIC);
        d[SEQ_AT..SEQ_AT + 8].copy_from_slice(&7u64.to_be_bytes());
        d[SENT_NS_AT..SENT_NS_AT + 8].copy_from_slice(&99u64.to_be_bytes());
        assert_eq!(parse_request(&d), Some((7, 99)));
        assert_eq!(parse_request(&d[..HEADER_LEN - 1]), None);
        d[0] = b'X';
        assert_eq!(parse_request(&d), None);
    }
}
