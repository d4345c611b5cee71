//! Per-flow `http` and `fileinfo` record counts on a `gen_traffic.py` capture, against what
//! the capture itself holds (read here from the packets, independently of picket's parser):
//! Suricata logs one `http` record per transaction (a request line starts one) and one
//! `fileinfo` record per body that delivers at least one byte (every response body; the
//! bodies of POST and PUT requests that are not multipart).
//!
//! Needs python3 with scapy and the shared generator (`../shared/bench/gen_traffic.py`);
//! prints SKIPPED and returns without them.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// A flow by its client: (client address, client port).
type Client = (String, u16);

#[derive(Debug, Default, PartialEq, Eq)]
struct Counts {
    http: usize,
    files: usize,
}

/// Generates a small capture, or None (after printing why) without the generator.
fn generate(dir: &Path) -> Option<std::path::PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/gen_traffic.py");
    if !script.is_file() {
        eprintln!("SKIPPED: {} not found", script.display());
        return None;
    }
    let pcap = dir.join("gen.pcap");
    let out = Command::new("python3")
        .arg(&script)
        .arg("-o")
        .arg(&pcap)
        .args(["--packets", "4000", "--seed", "11", "--inject-rate", "0.01", "--vlan-frac", "0.05"])
        .args(["--concurrency", "30"])
        .output();
    match out {
        Ok(o) if o.status.success() => Some(pcap),
        Ok(o) => {
            eprintln!("SKIPPED: gen_traffic.py failed: {}", String::from_utf8_lossy(&o.stderr));
            None
        }
        Err(e) => {
            eprintln!("SKIPPED: python3: {e}");
            None
        }
    }
}

/// The value of header `name` in a message head (`\r\n`-separated lines).
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Whether a message head announces a body of at least one byte.
fn has_body(head: &str) -> bool {
    header(head, "transfer-encoding").is_some_and(|v| v.contains("chunked"))
        || header(head, "content-length").and_then(|v| v.parse::<u64>().ok()).is_some_and(|n| n > 0)
}

/// Expected counts per flow from the segments that start a message (the generator puts a
/// request or response head at the start of a segment), for the flows that end (FIN or
/// RST) inside the capture: only those are sure to hold every body they announce.
fn expected(pcap: &[u8]) -> BTreeMap<Client, Counts> {
    let mut counts: BTreeMap<Client, Counts> = BTreeMap::new();
    let mut ended: BTreeMap<Client, bool> = BTreeMap::new();
    let mut responses_with_body: BTreeMap<Client, (usize, usize)> = BTreeMap::new();
    let mut off = 24;
    while off + 16 <= pcap.len() {
        let caplen = u32::from_le_bytes(pcap[off + 8..off + 12].try_into().unwrap()) as usize;
        let frame = &pcap[off + 16..off + 16 + caplen];
        off += 16 + caplen;
        let Ok(p) = etherparse::SlicedPacket::from_ethernet(frame) else { continue };
        let (src, dst) = match &p.net {
            Some(etherparse::NetSlice::Ipv4(ip)) => {
                (ip.header().source_addr().to_string(), ip.header().destination_addr().to_string())
            }
            Some(etherparse::NetSlice::Ipv6(ip)) => {
                (ip.header().source_addr().to_string(), ip.header().destination_addr().to_string())
            }
            _ => continue,
        };
        let Some(etherparse::TransportSlice::Tcp(tcp)) = &p.transport else { continue };
        let (client, to_server) = if tcp.destination_port() == 80 {
            ((src, tcp.source_port()), true)
        } else if tcp.source_port() == 80 {
            ((dst, tcp.destination_port()), false)
        } else {
            continue;
        };
        if tcp.fin() || tcp.rst() {
            ended.insert(client.clone(), true);
        }
        let payload = tcp.payload();
        let head_end = payload.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(payload.len());
        let head = String::from_utf8_lossy(&payload[..head_end]);
        if to_server {
            let method = head.split(' ').next().unwrap_or("");
            let is_request = ["GET", "POST", "HEAD", "PUT", "OPTIONS", "DELETE"].contains(&method)
                && head.split("\r\n").next().is_some_and(|l| l.ends_with(" HTTP/1.1"));
            if is_request {
                let c = counts.entry(client).or_default();
                c.http += 1;
                if (method == "POST" || method == "PUT") && has_body(&head) {
                    c.files += 1;
                }
            }
        } else if head.starts_with("HTTP/1.1 ") {
            let r = responses_with_body.entry(client).or_default();
            r.0 += 1;
            r.1 += usize::from(has_body(&head));
        }
    }
    counts
        .into_iter()
        .filter(|(client, c)| {
            // Ended, and every request answered (the response's body follows it whole).
            ended.contains_key(client) && responses_with_body.get(client).is_some_and(|r| r.0 == c.http)
        })
        .map(|(client, mut c)| {
            c.files += responses_with_body[&client].1;
            (client, c)
        })
        .collect()
}

#[test]
fn http_and_fileinfo_records_per_flow() {
    let dir = tempfile::tempdir().unwrap();
    let Some(pcap) = generate(dir.path()) else { return };
    let want = expected(&std::fs::read(&pcap).unwrap());
    assert!(want.len() >= 5, "the capture holds complete HTTP flows: {}", want.len());
    assert!(want.values().any(|c| c.files > 0) && want.values().any(|c| c.http > 1));

    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    // No rules: the records come from the app layer alone, as in Suricata.
    let out = Command::new(env!("CARGO_BIN_EXE_picket"))
        .arg("-r")
        .arg(&pcap)
        .arg("-l")
        .arg(&logs)
        .args(["-k", "none", "--workers", "2"])
        .output()
        .expect("spawn picket");
    assert!(out.status.success(), "picket failed: {}", String::from_utf8_lossy(&out.stderr));
    let eve = std::fs::read_to_string(logs.join("eve.json")).unwrap();
    let mut got: BTreeMap<Client, Counts> = BTreeMap::new();
    for line in eve.lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        let port = |k: &str| e[k].as_u64().unwrap_or(0) as u16;
        let ip = |k: &str| e[k].as_str().unwrap_or("").to_string();
        match e["event_type"].as_str() {
            Some("http") => got.entry((ip("src_ip"), port("src_port"))).or_default().http += 1,
            Some("fileinfo") => {
                // A response body's record goes from the server to the client.
                let client = if port("dest_port") == 80 {
                    (ip("src_ip"), port("src_port"))
                } else {
                    (ip("dest_ip"), port("dest_port"))
                };
                assert_eq!(e["app_proto"], "http");
                assert!(e["fileinfo"]["filename"].as_str().is_some_and(|f| f.starts_with('/')), "{line}");
                got.entry(client).or_default().files += 1;
            }
            _ => {}
        }
    }
    // picket writes IPv6 addresses in its own form; compare through the parsed address.
    let canon = |m: BTreeMap<Client, Counts>| -> BTreeMap<(std::net::IpAddr, u16), Counts> {
        m.into_iter().filter_map(|((ip, port), c)| Some(((ip.parse().ok()?, port), c))).collect()
    };
    let got = canon(got);
    for (client, c) in canon(want) {
        assert_eq!(got.get(&client), Some(&c), "flow of client {client:?}");
    }
}
