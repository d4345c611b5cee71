//! Which keys of a YAML file or `--set` nobody reads: each is warned about once, with its
//! full dotted key (and the file it came from), so that a typo in a setting is not a
//! silent no-op.
//!
//! A key is *recognised* when picket honours it ([`super::KNOWN_KEYS`]) or when it is a
//! setting of Suricata's own suricata.yaml that picket accepts without using it
//! ([`SURICATA_KEYS`]): operators bring their Suricata file, and a warning per stock key
//! would bury the one that matters. [`super::KNOWN_KEYS`] covers some sections as a whole
//! (`app-layer.*`, `detect.*`, ...) so that `--set` applies any of their keys; under those
//! [`CHECKED_SECTIONS`] a key must also appear, exactly or by pattern, in
//! [`SURICATA_KEYS`].
//!
//! Patterns: segments separated by dots; `*` as a segment matches any one segment (a list
//! index, a protocol name); a trailing `.*` matches the key and everything below it.

use serde_yaml::Value;

/// Sections whose wildcard in [`super::KNOWN_KEYS`] lets `--set` reach every key, but
/// whose keys are still checked one by one against [`SURICATA_KEYS`] and the exact
/// entries of [`super::KNOWN_KEYS`].
pub const CHECKED_SECTIONS: &[&str] =
    &["app-layer", "detect", "defrag", "decoder", "stats", "threading", "stream", "flow", "host", "ippair", "pcre"];

/// Settings of Suricata's suricata.yaml (7.x and 8.x, and the 3.x/4.x files some
/// operators still run) that picket accepts and does not use. The keys picket reads are in
/// [`super::KNOWN_KEYS`] alone.
pub const SURICATA_KEYS: &[&str] = &[
    // Whole sections picket has no counterpart for.
    "action-order.*",
    "asn1-max-frames",
    "capture.*",
    "coredump.*",
    "cuda.*",
    "daemon-directory",
    "datasets.*",
    "dpdk.*",
    "engine-analysis.*",
    "geoip-database",
    "heartbeat.*",
    "include",
    "ipfw.*",
    "legacy.*",
    "luajit.*",
    "magic-file",
    "mpipe.*",
    "napatech.*",
    "netmap.*",
    "nflog.*",
    "pcap.*",
    "pcap-file.*",
    "pfring.*",
    "pid-file",
    "plugins.*",
    "profiling.*",
    "run-as.*",
    "security.*",
    "sensor-name",
    "umask",
    "windivert.*",
    "firewall.*",
    "lua.*",
    // app-layer: settings every protocol has, then each protocol's own.
    "app-layer.error-policy",
    "app-layer.protocols.*.enabled",
    "app-layer.protocols.*.detection-enabled",
    "app-layer.protocols.*.detection-ports.*",
    "app-layer.protocols.*.max-tx",
    "app-layer.protocols.*.stream-depth",
    "app-layer.protocols.*.max-line-length",
    "app-layer.protocols.*.memcap",
    "app-layer.protocols.*.ports.*",
    "app-layer.protocols.*.raw-extraction",
    "app-layer.protocols.*.max-state-buffer-size",
    "app-layer.protocols.*.max-queue-size",
    "app-layer.protocols.*.response-body-limit",
    "app-layer.protocols.*.request-body-limit",
    "app-layer.protocols.http.libhtp.*",
    "app-layer.protocols.http2.*",
    "app-layer.protocols.tls.ja3-fingerprints",
    "app-layer.protocols.tls.ja4-fingerprints",
    "app-layer.protocols.tls.encryption-handling",
    "app-layer.protocols.tls.bypass",
    "app-layer.protocols.tls.no-reassemble",
    "app-layer.protocols.quic.*",
    "app-layer.protocols.ssh.hassh",
    "app-layer.protocols.ssh.encryption-handling",
    "app-layer.protocols.ftp.memcap",
    "app-layer.protocols.smtp.mime.*",
    "app-layer.protocols.smtp.inspected-tracker.*",
    "app-layer.protocols.smb.*",
    "app-layer.protocols.dns.tcp.*",
    "app-layer.protocols.dns.udp.*",
    "app-layer.protocols.dnp3.*",
    "app-layer.protocols.modbus.*",
    "app-layer.protocols.enip.*",
    "app-layer.protocols.nfs.*",
    "app-layer.protocols.mqtt.*",
    "app-layer.protocols.rdp.*",
    "app-layer.protocols.sip.*",
    "app-layer.protocols.pgsql.*",
    "app-layer.protocols.websocket.*",
    "app-layer.protocols.ldap.*",
    "app-layer.protocols.pop3.*",
    "app-layer.protocols.imap.*",
    "app-layer.protocols.telnet.*",
    "app-layer.protocols.dcerpc.*",
    "app-layer.protocols.krb5.*",
    "app-layer.protocols.ike.*",
    "app-layer.protocols.ikev2.*",
    "app-layer.protocols.snmp.*",
    "app-layer.protocols.bittorrent-dht.*",
    "app-layer.protocols.rfb.*",
    "app-layer.protocols.ntp.*",
    "app-layer.protocols.tftp.*",
    "app-layer.protocols.dhcp.*",
    // detect
    "detect.custom-values.*",
    "detect.sgh-mpm-context",
    "detect.inspection-recursion-limit",
    "detect.delayed-detect",
    "detect.prefilter.*",
    "detect.grouping.*",
    "detect.profiling.*",
    "detect.guess-applayer-tx",
    "detect.stream-tx-log-limit",
    "detect.thresholds.*",
    "detect.engines.*",
    // defrag
    "defrag.memcap",
    "defrag.memcap-policy",
    "defrag.hash-size",
    "defrag.trackers",
    "defrag.max-frags",
    "defrag.prealloc",
    "defrag.timeout",
    "defrag.host-config.*",
    "defrag.enabled",
    "defrag.default-policy",
    // decoder
    "decoder.teredo.*",
    "decoder.vxlan.*",
    "decoder.geneve.*",
    "decoder.erspan.*",
    "decoder.ipv4.*",
    "decoder.ipv6.*",
    "decoder.recursion-level.*",
    "decoder.max-layers",
    // stats
    "stats.enabled",
    "stats.interval",
    "stats.decoder-events",
    "stats.decoder-events-prefix",
    "stats.stream-events",
    "stats.exception-policy.*",
    // threading
    "threading.set-cpu-affinity",
    "threading.cpu-affinity.*",
    "threading.detect-thread-ratio",
    "threading.stack-size",
    "threading.autopin",
    // stream
    "stream.memcap-policy",
    "stream.drop-invalid",
    "stream.prealloc-sessions",
    "stream.max-sessions",
    "stream.max-syn-queued",
    "stream.max-synack-queued",
    "stream.liberal-timestamps",
    "stream.reassembly.memcap-policy",
    "stream.reassembly.toserver-chunk-size",
    "stream.reassembly.toclient-chunk-size",
    "stream.reassembly.randomize-chunk-size",
    "stream.reassembly.randomize-chunk-range",
    "stream.reassembly.raw",
    "stream.reassembly.segment-prealloc",
    "stream.reassembly.check-overlap-different-data",
    "stream.reassembly.urgent.*",
    // flow
    "flow.memcap-policy",
    "flow.prune-flows",
    "flow.managers",
    "flow.recyclers",
    "flow.rate-tracking.*",
];

/// Whether `key` matches `pattern` (see the module comment).
fn matches(pattern: &str, key: &str) -> bool {
    let (pattern, subtree) = match pattern.strip_suffix(".*") {
        Some(base) => (base, true),
        None => (pattern, false),
    };
    let mut key_parts = key.split('.');
    for want in pattern.split('.') {
        match key_parts.next() {
            Some(got) if want == "*" || want == got => {}
            _ => return false,
        }
    }
    subtree || key_parts.next().is_none()
}

/// Whether a `--set` or YAML key is one picket honours or a stock Suricata setting.
pub fn is_recognised(key: &str) -> bool {
    let section = key.split('.').next().unwrap_or(key);
    let checked = CHECKED_SECTIONS.contains(&section);
    let known = super::KNOWN_KEYS.iter().any(|pattern| {
        // A whole checked section does not vouch for its keys.
        !(checked && pattern.strip_suffix(".*") == Some(section)) && matches(pattern, key)
    });
    known || SURICATA_KEYS.iter().any(|pattern| matches(pattern, key))
}

/// Every leaf key of a configuration tree nobody reads, in file order, each once: list
/// items share one key (`af-packet.*.threads` is reported once, as its first occurrence).
pub fn unrecognised_keys(root: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut seen = std::collections::HashSet::new();
    walk(root, &mut String::new(), &mut String::new(), &mut found, &mut seen);
    found
}

/// `path` is the dotted key as written; `shape` the same with list indices as `*`
/// (what "once" is counted on).
fn walk(
    node: &Value,
    path: &mut String,
    shape: &mut String,
    found: &mut Vec<String>,
    seen: &mut std::collections::HashSet<String>,
) {
    let children: Vec<(String, String, &Value)> = match node {
        Value::Mapping(map) => map
            .iter()
            .filter_map(|(k, v)| {
                let k = k.as_str()?;
                Some((k.to_string(), k.to_string(), v))
            })
            .collect(),
        // A list of mappings is indexed; a list of plain values is the value of its key.
        Value::Sequence(items) if items.iter().any(|v| matches!(v, Value::Mapping(_))) => {
            items.iter().enumerate().map(|(i, v)| (i.to_string(), "*".to_string(), v)).collect()
        }
        Value::Tagged(tagged) => return walk(&tagged.value, path, shape, found, seen),
        _ => {
            if !path.is_empty() && !is_recognised(path) && !is_section(path) && seen.insert(shape.clone()) {
                found.push(path.clone());
            }
            return;
        }
    };
    // A whole recognised subtree (`vars.*`, `outputs.*`, ...) is left to its own reader.
    if !path.is_empty() && covers_subtree(path) {
        return;
    }
    for (segment, shape_segment, child) in children {
        let (path_len, shape_len) = (path.len(), shape.len());
        if !path.is_empty() {
            path.push('.');
            shape.push('.');
        }
        path.push_str(&segment);
        shape.push_str(&shape_segment);
        walk(child, path, shape, found, seen);
        path.truncate(path_len);
        shape.truncate(shape_len);
    }
}

/// A key with recognised keys below it (`detect:` left empty is no unknown setting).
fn is_section(key: &str) -> bool {
    let prefix = format!("{key}.");
    super::KNOWN_KEYS.iter().chain(SURICATA_KEYS).any(|p| p.starts_with(&prefix))
}

/// A pattern ending in `.*` names this key exactly: everything below it is recognised.
fn covers_subtree(key: &str) -> bool {
    let section = key.split('.').next().unwrap_or(key);
    let whole_section_checked = CHECKED_SECTIONS.contains(&section) && !key.contains('.');
    !whole_section_checked
        && super::KNOWN_KEYS.iter().chain(SURICATA_KEYS).any(|p| p.strip_suffix(".*").is_some_and(|b| matches(b, key)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_segments_and_subtrees() {
        assert!(matches("app-layer.protocols.*.enabled", "app-layer.protocols.ntp.enabled"));
        assert!(!matches("app-layer.protocols.*.enabled", "app-layer.protocols.ntp.enabledx"));
        assert!(matches("stream.reassembly.*", "stream.reassembly.depth"));
        assert!(!is_recognised("stream.reassembly.deepth"));
        assert!(matches("stream.reassembly.*", "stream.reassembly"));
        assert!(!matches("stream.reassembly.*", "stream.reassemblyx"));
    }

    #[test]
    fn checked_sections_warn_on_their_unknown_keys_only() {
        assert!(is_recognised("app-layer.protocols.http.memcap"));
        assert!(is_recognised("detect.inspection-recursion-limit"));
        assert!(is_recognised("defrag.trackers"));
        assert!(is_recognised("pcre.match-limit-recursion"));
        assert!(!is_recognised("app-layer.protocols.http.memcapx"));
        assert!(!is_recognised("detect.profil"));
        assert!(!is_recognised("defrag.max-fragz"));
        assert!(!is_recognised("straem.memcap"));
        // Sections with their own reader, and picket's own keys.
        assert!(is_recognised("vars.address-groups.HOME_NET"));
        assert!(is_recognised("flow-timeouts.tcp.new"));
    }

    #[test]
    fn a_tree_reports_each_unknown_key_once_with_its_full_key() {
        let yaml =
            "app-layer:\n  protocols:\n    http:\n      enabled: yes\n      memcapx: 1\n    ntp:\n      enabled: no\n\
                    defrag:\n  max-fragz: 3\n  trackers: 10\n\
                    af-packet:\n  - interface: a\n  - interface: b\n\
                    threading:\n  cpu-affinity:\n    - worker-cpu-set:\n        cpu: [1]\n\
                    detect:\n  profil: low\n  custom-values:\n    toclient-groups: 3\n\
                    nosuch:\n  - x: 1\n  - x: 2\n";
        let root: Value = serde_yaml::from_str(yaml).unwrap();
        assert_eq!(
            unrecognised_keys(&root),
            vec!["app-layer.protocols.http.memcapx", "defrag.max-fragz", "detect.profil", "nosuch.0.x"]
        );
    }
}
