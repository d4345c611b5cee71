//! Multi-pattern matcher benchmark: build time, memory and scan throughput of each backend.
//!
//! `cargo bench --bench mpm` (add `--no-default-features` for the pure-Rust backend only).
//! Patterns are the `content:` strings of the ET Open snapshot in
//! `../shared/rules/et-open-2024-04-21` (or `PICKET_RULES_DIR`), 3 to 40 bytes long, with
//! their `nocase`; without the rules, random patterns of the same shape are used.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use picket::detect::mpm::{MpmAlgo, Pattern, Scratch};
use picket::matchers;

const DEFAULT_RULES_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/rules/et-open-2024-04-21");

/// Deterministic xorshift so runs are comparable without a `rand` dependency.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }
}

/// Crude `content:"..."` extraction: `|hex|` blocks and `\` escapes decoded, `nocase` taken from
/// the modifiers up to the next `content:` of the same rule.
fn et_open_contents(dir: &Path) -> Vec<(Vec<u8>, bool)> {
    let mut contents = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return contents;
    };
    for entry in entries.flatten() {
        if entry.path().extension().is_none_or(|ext| ext != "rules") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        for rule in text.lines().filter(|line| !line.starts_with('#')) {
            for part in rule.split("content:\"").skip(1) {
                let (bytes, rest) = decode_content(part.as_bytes());
                let nocase = String::from_utf8_lossy(rest).contains("nocase");
                if (3..=40).contains(&bytes.len()) {
                    contents.push((bytes, nocase));
                }
            }
        }
    }
    contents.sort();
    contents.dedup();
    contents
}

/// Decodes a content value up to its closing quote; returns the bytes and the text after it.
fn decode_content(raw: &[u8]) -> (Vec<u8>, &[u8]) {
    let mut bytes = Vec::new();
    let mut in_hex = false;
    let mut hex_digits = String::new();
    let mut index = 0;
    while let Some(&byte) = raw.get(index) {
        match byte {
            b'\\' if !in_hex => {
                if let Some(&escaped) = raw.get(index + 1) {
                    bytes.push(escaped);
                }
                index += 2;
                continue;
            }
            b'"' => return (bytes, raw.get(index + 1..).unwrap_or_default()),
            b'|' => {
                if in_hex {
                    bytes.extend(hex_digits.split_whitespace().filter_map(|h| u8::from_str_radix(h, 16).ok()));
                    hex_digits.clear();
                }
                in_hex = !in_hex;
            }
            _ if in_hex => hex_digits.push(char::from(byte)),
            _ => bytes.push(byte),
        }
        index += 1;
    }
    (bytes, &[])
}

fn random_contents(rng: &mut XorShift, count: usize) -> Vec<(Vec<u8>, bool)> {
    (0..count)
        .map(|_| {
            let len = 3 + rng.below(38);
            let bytes = (0..len)
                .map(|_| if rng.below(4) == 0 { rng.next() as u8 } else { b'a' + rng.below(26) as u8 })
                .collect();
            (bytes, rng.below(2) == 0)
        })
        .collect()
}

/// Takes `count` patterns spread evenly over `contents`, so both set sizes have the same mix.
fn select(contents: &[(Vec<u8>, bool)], count: usize) -> Vec<Pattern> {
    let step = (contents.len() / count.max(1)).max(1);
    contents
        .iter()
        .step_by(step)
        .take(count)
        .enumerate()
        .map(|(id, (bytes, nocase))| Pattern::new(id as u32, bytes.clone(), *nocase))
        .collect()
}

/// 64 KiB of traffic-like bytes: HTTP-ish text, binary noise and, every ~4 KiB, a real
/// pattern so that matches (and their callbacks) are part of the cost.
fn mixed_buffer(rng: &mut XorShift, patterns: &[Pattern]) -> Vec<u8> {
    const TEXT: &[u8] = b"GET /index.php?id=1&user=admin HTTP/1.1\r\nHost: www.example.com\r\n\
        User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64)\r\nAccept: */*\r\n\r\n";
    let mut buffer = Vec::with_capacity(65536 + 64);
    while buffer.len() < 65536 {
        match rng.below(3) {
            0 => buffer.extend_from_slice(TEXT),
            1 => buffer.extend((0..200).map(|_| rng.next() as u8)),
            _ => buffer.extend((0..200).map(|_| b' ' + rng.below(95) as u8)),
        }
        if buffer.len() % 4096 < 300 {
            if let Some(pattern) = patterns.get(rng.below(patterns.len().max(1))) {
                buffer.extend_from_slice(&pattern.bytes);
            }
        }
    }
    buffer.truncate(65536);
    buffer
}

/// Repeats `run` until at least `budget` has passed; returns (iterations, elapsed).
fn time_for(budget: Duration, mut run: impl FnMut()) -> (u64, Duration) {
    let start = Instant::now();
    let mut iterations = 0;
    while start.elapsed() < budget {
        run();
        iterations += 1;
    }
    (iterations, start.elapsed())
}

fn bench_set(label: &str, patterns: &[Pattern], rng: &mut XorShift) {
    let buffer = mixed_buffer(rng, patterns);
    let mut algos = vec![MpmAlgo::AhoCorasick];
    if matchers::HYPERSCAN_BUILT_IN {
        algos.insert(0, MpmAlgo::Hyperscan);
    }
    // PICKET_BENCH_ALGO=hs|ac limits the run to one backend (e.g. for profiling).
    if let Some(only) = std::env::var("PICKET_BENCH_ALGO").ok().and_then(|name| name.parse::<MpmAlgo>().ok()) {
        algos.retain(|algo| *algo == matchers::resolve(only));
    }
    for algo in algos {
        let start = Instant::now();
        let matcher = match matchers::builder(algo).and_then(|builder| builder.build(patterns)) {
            Ok(matcher) => matcher,
            Err(error) => {
                println!("{label} {algo}: build failed: {error}");
                continue;
            }
        };
        let build_time = start.elapsed();
        let mut scratch = Scratch::new();
        if let Err(error) = matcher.prepare_scratch(&mut scratch) {
            println!("{label} {algo}: scratch failed: {error}");
            continue;
        }

        let mut hits = 0u64;
        let mut count_hit = |_: u32| hits += 1;
        let (rounds, elapsed) = time_for(Duration::from_secs(2), || {
            matcher.scan(black_box(&buffer), &mut scratch, &mut count_hit).expect("scan");
        });
        let big_mbps = (rounds as f64 * buffer.len() as f64) / elapsed.as_secs_f64() / 1e6;
        let big_hits = hits / rounds.max(1);

        let packets: Vec<&[u8]> = buffer.chunks(500).collect();
        let mut hits = 0u64;
        let mut count_hit = |_: u32| hits += 1;
        let (rounds, elapsed) = time_for(Duration::from_secs(2), || {
            for packet in &packets {
                matcher.scan(black_box(packet), &mut scratch, &mut count_hit).expect("scan");
            }
        });
        let calls = rounds * packets.len() as u64;
        let packet_mbps = (rounds as f64 * buffer.len() as f64) / elapsed.as_secs_f64() / 1e6;
        let ns_per_packet = elapsed.as_nanos() as f64 / calls as f64;

        println!(
            "{label:>14} {algo:>2}: build {:>8.1} ms, db {:>7.2} MiB, scratch {:>6.1} KiB | \
             64 KiB: {big_mbps:>6.0} MB/s ({big_hits} ids) | 500 B: {packet_mbps:>6.0} MB/s, {ns_per_packet:>5.0} ns/packet",
            build_time.as_secs_f64() * 1e3,
            matcher.memory_bytes() as f64 / (1 << 20) as f64,
            scratch.memory_bytes() as f64 / 1024.0,
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    let rules_dir = std::env::var("PICKET_RULES_DIR").unwrap_or_else(|_| DEFAULT_RULES_DIR.to_string());
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let et_open = et_open_contents(Path::new(&rules_dir));
    let nocase_share = et_open.iter().filter(|(_, nocase)| *nocase).count() as f64 / et_open.len().max(1) as f64;
    println!(
        "ET Open: {} distinct contents of 3..=40 bytes ({:.0}% nocase) from {rules_dir}",
        et_open.len(),
        nocase_share * 100.0
    );
    let random = random_contents(&mut rng, 20_000);
    for count in [5_000, 20_000] {
        if et_open.len() >= count {
            bench_set(&format!("et-open {count}"), &select(&et_open, count), &mut rng);
        }
        bench_set(&format!("random {count}"), &select(&random, count), &mut rng);
    }
}
