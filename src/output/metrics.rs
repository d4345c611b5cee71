//! Live counters every worker publishes for the outside world, and a tiny HTTP endpoint
//! that serves them in the Prometheus text format (`--metrics 127.0.0.1:9100`).
//!
//! Workers own their counters; after each batch of packets they store the running totals
//! into their own [`WorkerGauges`] with `Relaxed` atomics. Readers (the metrics server,
//! the snapshot writer for `picket top`) only load them, so the data path takes no lock
//! and shares no cache line that another worker writes.

use crate::counters::CounterSet;
use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;

/// One worker's published counters. Aligned to its own cache lines so two workers
/// updating theirs do not slow each other down.
#[repr(align(128))]
#[derive(Debug, Default)]
pub struct WorkerGauges {
    /// Packets inspected.
    pub packets: AtomicU64,
    /// Wire bytes of the inspected packets.
    pub bytes: AtomicU64,
    /// Packets the kernel offered this worker's sockets, dropped ones included.
    pub kernel_packets: AtomicU64,
    /// Packets the kernel dropped because this worker's ring was full.
    pub kernel_drops: AtomicU64,
    /// Times this worker's ring was frozen full.
    pub queue_freezes: AtomicU64,
    pub alerts: AtomicU64,
    /// Gauge: flows in this worker's table.
    pub flows_active: AtomicU64,
    pub flows_total: AtomicU64,
    /// Nanoseconds spent inspecting (not waiting for packets).
    pub busy_ns: AtomicU64,
    /// Errors the capture socket reported (interface went down).
    pub poll_errors: AtomicU64,
    /// The worker's ports act on verdicts (NFQUEUE, bridge): the `ips_*` gauges apply.
    pub inline: AtomicBool,
    /// Inline ports: packets let through, blocked (drop or reject), answered with a reject.
    pub ips_accepted: AtomicU64,
    pub ips_blocked: AtomicU64,
    pub ips_rejected: AtomicU64,
    /// NFQUEUE: packets the kernel accepted without asking because the queue was full.
    pub fail_open: AtomicU64,
    /// Inline ports: packets that could not be sent on (bridge) or replies not sent.
    pub tx_errors: AtomicU64,
}

/// A plain copy of [`WorkerGauges`], read at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GaugeValues {
    pub packets: u64,
    pub bytes: u64,
    pub kernel_packets: u64,
    pub kernel_drops: u64,
    pub queue_freezes: u64,
    pub alerts: u64,
    pub flows_active: u64,
    pub flows_total: u64,
    pub busy_ns: u64,
    pub poll_errors: u64,
    pub inline: bool,
    pub ips_accepted: u64,
    pub ips_blocked: u64,
    pub ips_rejected: u64,
    pub fail_open: u64,
    pub tx_errors: u64,
}

impl WorkerGauges {
    /// `packets` is read first (Acquire, pairing with the worker's Release store): the
    /// kernel counts the worker published before it are then at least as recent, so a
    /// reader never sees more packets inspected than the kernel delivered.
    pub fn load(&self) -> GaugeValues {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let packets = self.packets.load(Ordering::Acquire);
        GaugeValues {
            packets,
            bytes: r(&self.bytes),
            kernel_packets: r(&self.kernel_packets),
            kernel_drops: r(&self.kernel_drops),
            queue_freezes: r(&self.queue_freezes),
            alerts: r(&self.alerts),
            flows_active: r(&self.flows_active),
            flows_total: r(&self.flows_total),
            busy_ns: r(&self.busy_ns),
            poll_errors: r(&self.poll_errors),
            inline: self.inline.load(Ordering::Relaxed),
            ips_accepted: r(&self.ips_accepted),
            ips_blocked: r(&self.ips_blocked),
            ips_rejected: r(&self.ips_rejected),
            fail_open: r(&self.fail_open),
            tx_errors: r(&self.tx_errors),
        }
    }
}

/// The gauges of all workers, with their thread names ("W#01", ...).
#[derive(Debug, Default)]
pub struct LiveGauges {
    pub workers: Vec<(String, WorkerGauges)>,
    /// Process-wide counters (`picket.xdp.*`, `picket.ddos.*`), replaced every second by
    /// the live run's main thread.
    pub global: Mutex<CounterSet>,
}

impl LiveGauges {
    pub fn new(names: impl IntoIterator<Item = String>) -> Self {
        LiveGauges {
            workers: names.into_iter().map(|n| (n, WorkerGauges::default())).collect(),
            global: Mutex::new(CounterSet::new()),
        }
    }
}

/// (metric name, type, help, value getter)
type MetricSpec = (&'static str, &'static str, &'static str, fn(&GaugeValues) -> f64);

const METRICS: &[MetricSpec] = &[
    ("picket_packets_total", "counter", "Packets inspected by the worker.", |v| v.packets as f64),
    ("picket_bytes_total", "counter", "Wire bytes of the packets inspected by the worker.", |v| v.bytes as f64),
    (
        "picket_kernel_packets_total",
        "counter",
        "Packets the kernel offered the worker's capture sockets, dropped ones included.",
        |v| v.kernel_packets as f64,
    ),
    (
        "picket_kernel_drops_total",
        "counter",
        "Packets the kernel dropped because the worker's capture ring was full.",
        |v| v.kernel_drops as f64,
    ),
    ("picket_ring_freezes_total", "counter", "Times the worker's capture ring was found full.", |v| {
        v.queue_freezes as f64
    }),
    ("picket_alerts_total", "counter", "Alerts raised by the worker.", |v| v.alerts as f64),
    ("picket_flows_active", "gauge", "Flows in the worker's flow table.", |v| v.flows_active as f64),
    ("picket_flows_total", "counter", "Flows created by the worker.", |v| v.flows_total as f64),
    ("picket_busy_seconds_total", "counter", "Seconds the worker spent inspecting packets.", |v| {
        v.busy_ns as f64 / 1e9
    }),
    ("picket_capture_errors_total", "counter", "Errors reported by the worker's capture sockets.", |v| {
        v.poll_errors as f64
    }),
    ("picket_ips_accepted_total", "counter", "Inline: packets the worker let through.", |v| v.ips_accepted as f64),
    ("picket_ips_blocked_total", "counter", "Inline: packets the worker blocked (drop or reject).", |v| {
        v.ips_blocked as f64
    }),
    ("picket_ips_rejected_total", "counter", "Inline: blocked packets answered with a TCP RST or ICMP error.", |v| {
        v.ips_rejected as f64
    }),
    (
        "picket_ips_fail_open_total",
        "counter",
        "NFQUEUE: packets the kernel accepted unqueued because the worker's queue was full.",
        |v| v.fail_open as f64,
    ),
    ("picket_ips_tx_errors_total", "counter", "Inline: packets or replies the worker could not send.", |v| {
        v.tx_errors as f64
    }),
];

/// The Prometheus text exposition (format 0.0.4) of every worker's gauges.
pub fn render_prometheus(gauges: &LiveGauges) -> String {
    let values: Vec<(&str, GaugeValues)> = gauges.workers.iter().map(|(n, g)| (n.as_str(), g.load())).collect();
    let mut out = String::with_capacity(256 + values.len() * METRICS.len() * 48);
    for (name, kind, help, get) in METRICS {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for (worker, v) in &values {
            let _ = writeln!(out, "{name}{{worker=\"{}\"}} {}", escape_label(worker), get(v));
        }
    }
    if let Ok(global) = gauges.global.lock() {
        render_global(&mut out, &global);
    }
    out
}

/// Process-wide counters: `picket.xdp.cookie_sent` becomes `picket_xdp_cookie_sent_total`
/// (a counter), `picket.ddos.blocks_active` becomes `picket_ddos_blocks_active` (a gauge:
/// names ending in `_active` are levels, not counts).
fn render_global(out: &mut String, global: &CounterSet) {
    for (name, value) in global.iter() {
        let base: String = name
            .strip_prefix("picket.")
            .unwrap_or(name)
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let (metric, kind) = if base.ends_with("_active") {
            (format!("picket_{base}"), "gauge")
        } else {
            (format!("picket_{base}_total"), "counter")
        };
        let _ = writeln!(out, "# HELP {metric} picket counter {name} (eve stats.{name}).");
        let _ = writeln!(out, "# TYPE {metric} {kind}");
        let _ = writeln!(out, "{metric} {value}");
    }
}

/// Label values escape backslash, double quote and newline.
fn escape_label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// `--metrics` argument: `PORT`, `HOST:PORT` or `[V6]:PORT`. A bare port binds to
/// 127.0.0.1 so the counters are not exposed beyond the host unless asked for.
pub fn parse_listen_address(arg: &str) -> Result<SocketAddr, String> {
    let arg = arg.trim();
    if let Ok(port) = arg.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    arg.parse::<SocketAddr>()
        .map_err(|_| format!("'{arg}' is not PORT or ADDRESS:PORT (for example 9100 or 127.0.0.1:9100)"))
}

/// Largest request head read; anything longer is answered with 431 and closed.
const MAX_REQUEST_BYTES: usize = 4096;
/// How often the accept loop looks at the stop flag.
const ACCEPT_POLL: Duration = Duration::from_millis(100);
/// A client gets this long to send its request and read the answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// A running metrics endpoint; stops when `stop` is set.
pub struct MetricsServer {
    pub local_addr: SocketAddr,
    pub thread: JoinHandle<()>,
}

/// Binds `addr` (errors surface here, before capture starts) and serves `GET /metrics`
/// from one thread, one client at a time: a scrape every few seconds needs no more.
pub fn serve(addr: SocketAddr, gauges: Arc<LiveGauges>, stop: Arc<AtomicBool>) -> io::Result<MetricsServer> {
    let listener = TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let local_addr = listener.local_addr()?;
    let thread = std::thread::Builder::new().name("metrics".into()).spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((stream, _)) => {
                    // A misbehaving client only costs its own connection.
                    let _ = answer(stream, &gauges);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(ACCEPT_POLL),
                Err(_) => std::thread::sleep(ACCEPT_POLL),
            }
        }
    })?;
    Ok(MetricsServer { local_addr, thread })
}

fn answer(mut stream: TcpStream, gauges: &LiveGauges) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 512];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        if head.len() >= MAX_REQUEST_BYTES {
            return respond(&mut stream, "431 Request Header Fields Too Large", "text/plain", "request too large\n");
        }
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let request_line = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
    let mut parts = request_line.split(|&b| b == b' ');
    let method = parts.next().unwrap_or(&[]);
    let path = parts.next().unwrap_or(&[]);
    match (method, path) {
        (b"GET", b"/metrics") | (b"GET", b"/") => {
            respond(&mut stream, "200 OK", "text/plain; version=0.0.4; charset=utf-8", &render_prometheus(gauges))
        }
        (b"GET", _) => respond(&mut stream, "404 Not Found", "text/plain", "try /metrics\n"),
        _ => respond(&mut stream, "405 Method Not Allowed", "text/plain", "only GET\n"),
    }
}

fn respond(stream: &mut TcpStream, status: &str, content_type: &str, body: &str) -> io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Arc<LiveGauges> {
        let g = LiveGauges::new(["W#01".to_string(), "W#02".to_string()]);
        g.workers[0].1.packets.store(10, Ordering::Relaxed);
        g.workers[1].1.packets.store(32, Ordering::Relaxed);
        g.workers[1].1.kernel_drops.store(3, Ordering::Relaxed);
        g.workers[0].1.busy_ns.store(1_500_000_000, Ordering::Relaxed);
        Arc::new(g)
    }

    #[test]
    fn text_format_has_one_sample_per_worker() {
        let text = render_prometheus(&sample());
        assert!(text.contains("# TYPE picket_packets_total counter\n"), "{text}");
        assert!(text.contains("picket_packets_total{worker=\"W#01\"} 10\n"), "{text}");
        assert!(text.contains("picket_packets_total{worker=\"W#02\"} 32\n"), "{text}");
        assert!(text.contains("picket_kernel_drops_total{worker=\"W#02\"} 3\n"), "{text}");
        assert!(text.contains("picket_busy_seconds_total{worker=\"W#01\"} 1.5\n"), "{text}");
        assert!(text.contains("# TYPE picket_flows_active gauge\n"));
        // Every sample line is "name{labels} value".
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, value) = line.rsplit_once(' ').unwrap();
            assert!(value.parse::<f64>().is_ok(), "{line}");
        }
    }

    #[test]
    fn global_counters_are_named_for_prometheus() {
        let gauges = LiveGauges::new(["W#01".to_string()]);
        let mut global = CounterSet::new();
        global.add("picket.xdp.cookie_sent", 12);
        global.add("picket.ddos.blocks_active", 2);
        *gauges.global.lock().unwrap() = global;
        let text = render_prometheus(&gauges);
        assert!(
            text.contains("# TYPE picket_xdp_cookie_sent_total counter\npicket_xdp_cookie_sent_total 12\n"),
            "{text}"
        );
        assert!(text.contains("# TYPE picket_ddos_blocks_active gauge\npicket_ddos_blocks_active 2\n"), "{text}");
    }

    #[test]
    fn listen_address_defaults_to_localhost() {
        assert_eq!(parse_listen_address("9100").unwrap(), "127.0.0.1:9100".parse().unwrap());
        assert_eq!(parse_listen_address("0.0.0.0:9200").unwrap(), "0.0.0.0:9200".parse().unwrap());
        assert_eq!(parse_listen_address("[::1]:9300").unwrap(), "[::1]:9300".parse().unwrap());
        assert!(parse_listen_address("localhost").is_err());
        assert!(parse_listen_address("99999").is_err());
    }

    #[test]
    fn server_answers_get_metrics_and_stops() {
        let stop = Arc::new(AtomicBool::new(false));
        let server = serve("127.0.0.1:0".parse().unwrap(), sample(), Arc::clone(&stop)).unwrap();
        let get = |request: &str| {
            let mut s = TcpStream::connect(server.local_addr).unwrap();
            s.write_all(request.as_bytes()).unwrap();
            let mut reply = String::new();
            s.read_to_string(&mut reply).unwrap();
            reply
        };
        let ok = get("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains("picket_packets_total{worker=\"W#02\"} 32"), "{ok}");
        let (head, body) = ok.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("Content-Length: {}", body.len())), "{head}");
        assert!(get("GET /other HTTP/1.0\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get("POST /metrics HTTP/1.0\r\n\r\n").starts_with("HTTP/1.1 405"));
        stop.store(true, Ordering::Relaxed);
        server.thread.join().unwrap();
    }
}
