//! The flow dispatch policy sends both directions of every flow to the same worker, for
//! every worker count, and the adaptive policy gives both directions one bucket: checked
//! packet by packet over the bundled sample and the conformance captures.

use picket::capture::open_offline;
use picket::decode::{decode, DecodeOptions};
use picket::dispatch::{make_policy, PolicyKind};
use std::collections::HashMap;
use std::path::Path;

/// Returns how many flows were checked; panics on the first flow seen on two workers.
fn check_capture(path: &Path, workers: usize) -> usize {
    check_policy(path, workers, PolicyKind::Flow);
    check_policy(path, workers, PolicyKind::Adaptive)
}

/// One policy: each flow's packets get one (worker, bucket).
fn check_policy(path: &Path, workers: usize, kind: PolicyKind) -> usize {
    let Ok(mut source) = open_offline(path) else { return 0 };
    let mut policy = make_policy(kind, workers, true);
    let opts = DecodeOptions { validate_checksums: false, ..DecodeOptions::default() };
    // (source, source port, destination, destination port, protocol, VLANs) -> worker.
    type Endpoints = ([u8; 16], u16, [u8; 16], u16, u8, [u16; 3]);
    let mut owner: HashMap<Endpoints, (usize, u16)> = HashMap::new();
    while let Ok(Some(raw)) = source.next_packet() {
        let w = policy.pick_bucket(raw.link, raw.data, workers);
        assert!(w.0 < workers);
        let d = decode(raw.link, raw.data, &opts);
        let Some(t) = d.tuple() else { continue };
        if d.fragment {
            continue;
        }
        // Normalize the direction so both sides of a flow share one key.
        // ICMP echo request and reply are one flow: key on addresses only.
        let icmp = matches!(t.proto, 1 | 58);
        let port = |p: u16| if icmp { 0 } else { p };
        let (a, b) = ((t.src, port(t.src_port)), (t.dst, port(t.dst_port)));
        let ((lo, lp), (hi, hp)) = if a <= b { (a, b) } else { (b, a) };
        let key = (lo, lp, hi, hp, t.proto, d.vlan);
        let first = *owner.entry(key).or_insert(w);
        assert_eq!(first, w, "{}: {kind} flow {key:?} went to (worker, bucket) {first:?} and {w:?}", path.display());
    }
    owner.len()
}

#[test]
fn both_directions_of_each_flow_reach_one_worker() {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample.pcap");
    for workers in [2, 3, 4, 7] {
        assert!(check_capture(&sample, workers) >= 5);
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/pcaps");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("conformance captures not found at {}: checked the sample only", dir.display());
        return;
    };
    let mut flows = 0;
    for e in entries.flatten() {
        flows += check_capture(&e.path(), 4);
    }
    eprintln!("checked {flows} flows in the conformance captures");
    assert!(flows > 100);
}
