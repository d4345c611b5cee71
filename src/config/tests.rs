use super::*;
use std::fs;

const HEADER: &str = "%YAML 1.1\n---\n";

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(&path, body).unwrap();
    path
}

fn sets(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn load_str(body: &str, overrides: &[&str]) -> (Config, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "suricata.yaml", body);
    Config::load(Some(&path), &sets(overrides)).unwrap()
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")) {
            out.push(path);
        }
    }
}

#[test]
fn every_conformance_yaml_loads_and_validates() {
    let suite = &Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance");
    if !suite.exists() {
        eprintln!("conformance suite absent, skipping");
        return;
    }
    let mut files = Vec::new();
    yaml_files(suite, &mut files);
    assert!(files.len() > 10, "expected the suite's YAML files, found {}", files.len());
    for file in &files {
        let (config, warnings) = Config::load(Some(file), &[]).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(warnings.is_empty(), "{}: {warnings:?}", file.display());
        EngineSettings::from_config(&config).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
}

#[test]
fn conformance_include_brings_base_settings_and_test_overrides_outputs() {
    let test =
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/tests/eve-alert-metadata-off/suricata.yaml");
    if !test.exists() {
        return;
    }
    let (config, _) = Config::load(Some(test), &[]).unwrap();
    // From the included etc/suricata-4.0.3.yaml.
    assert_eq!(config.get_str("default-rule-path").as_deref(), Some("."));
    assert!(config.address_groups().iter().any(|(n, _)| n == "HOME_NET"));
    // The test's own `outputs` replaced the included list as a whole.
    assert_eq!(config.get_bool("outputs.0.eve-log.types.0.alert.metadata").unwrap(), Some(false));
    assert_eq!(config.get_str("outputs.0.eve-log.filename").as_deref(), Some("eve.json"));
    assert!(config.node("outputs.1").is_none(), "included outputs must not survive");
}

#[test]
fn yaml_directive_is_accepted_and_optional() {
    let (with, _) = load_str(&format!("{HEADER}a: 1\n"), &[]);
    let (without, _) = load_str("a: 1\n", &[]);
    assert_eq!(with.get_u64("a").unwrap(), Some(1));
    assert_eq!(without.get_u64("a").unwrap(), Some(1));
}

#[test]
fn empty_file_is_an_empty_configuration() {
    let (config, _) = load_str(HEADER, &[]);
    assert!(config.node("stream").is_none());
    assert_eq!(EngineSettings::from_config(&config).unwrap().0, EngineSettings::default());
}

#[test]
fn include_relative_nested_and_list() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "conf/base.yaml", &format!("{HEADER}include: parts/vars.yaml\nstream:\n  memcap: 1mb\n  midstream: no\n"));
    // Nested include resolved next to parts/vars.yaml, not next to the top file.
    write(d, "conf/parts/vars.yaml", &format!("{HEADER}vars:\n  include: groups.yaml\n"));
    write(d, "conf/parts/groups.yaml", &format!("{HEADER}address-groups:\n  HOME_NET: \"[10.0.0.0/8]\"\n"));
    write(d, "conf/a.yaml", &format!("{HEADER}flow:\n  memcap: 2mb\n"));
    write(d, "conf/b.yaml", &format!("{HEADER}flow:\n  hash-size: 7\n"));
    let top = write(
        d,
        "conf/suricata.yaml",
        &format!("{HEADER}include: base.yaml\ninclude: [a.yaml, b.yaml]\nstream:\n  midstream: yes\n"),
    );
    let (config, warnings) = Config::load(Some(&top), &[]).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(config.get_str("vars.address-groups.HOME_NET").as_deref(), Some("[10.0.0.0/8]"));
    // b.yaml's `flow` replaced a.yaml's: Suricata replaces redefined keys, no deep merge.
    assert_eq!(config.get_u64("flow.hash-size").unwrap(), Some(7));
    assert_eq!(config.get_size("flow.memcap").unwrap(), None);
    // The top file's later `stream` replaced the included one.
    assert_eq!(config.get_bool("stream.midstream").unwrap(), Some(true));
    assert_eq!(config.get_size("stream.memcap").unwrap(), None);
}

#[test]
fn include_as_block_list_inside_a_nested_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "tcp.yaml", "new: 5\nestablished: 50\n");
    write(d, "tcp-emergency.yaml", "emergency-new: 1\n");
    let top = write(
        d,
        "suricata.yaml",
        &format!("{HEADER}flow-timeouts:\n  tcp:\n    closed: 3\n    include:\n      - tcp.yaml\n      - tcp-emergency.yaml\n    new: 6\n"),
    );
    let (config, _) = Config::load(Some(&top), &[]).unwrap();
    let tcp = EngineSettings::from_config(&config).unwrap().0.flow_timeouts.tcp;
    assert_eq!((tcp.new, tcp.established, tcp.closed, tcp.emergency_new), (6, 50, 3, 1));
    assert_eq!(tcp.emergency_established, 100, "untouched values keep defaults");
}

#[test]
fn include_falls_back_to_top_level_folder() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "common.yaml", "runmode: single\n");
    write(d, "sub/middle.yaml", "include: common.yaml\n");
    let top = write(d, "suricata.yaml", "include: sub/middle.yaml\n");
    let (config, _) = Config::load(Some(&top), &[]).unwrap();
    assert_eq!(config.get_str("runmode").as_deref(), Some("single"));
}

#[test]
fn include_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let top = write(d, "suricata.yaml", &format!("{HEADER}include: nowhere.yaml\n"));
    let err = Config::load(Some(&top), &[]).unwrap_err().to_string();
    assert!(err.contains("nowhere.yaml") && err.contains("cannot read"), "{err}");

    write(d, "loop-a.yaml", "include: loop-b.yaml\n");
    write(d, "loop-b.yaml", "include: loop-a.yaml\n");
    let err = Config::load(Some(&d.join("loop-a.yaml")), &[]).unwrap_err().to_string();
    assert!(err.contains("include cycle"), "{err}");

    let top = write(d, "bad-include.yaml", "include:\n  file: x.yaml\n");
    let err = Config::load(Some(&top), &[]).unwrap_err().to_string();
    assert!(err.contains("bad-include.yaml") && err.contains("include expects"), "{err}");
}

#[test]
fn empty_include_is_a_warning() {
    let (config, warnings) = load_str("include:\nrunmode: single\n", &[]);
    assert_eq!(config.get_str("runmode").as_deref(), Some("single"));
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("empty include"), "{warnings:?}");
}

#[test]
fn diamond_includes_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Each level includes the next one twice: 2^12 loads without a bound.
    for level in 0..12 {
        let next = format!("l{}.yaml", level + 1);
        write(d, &format!("l{level}.yaml"), &format!("include: [{next}, {next}]\n"));
    }
    write(d, "l12.yaml", "a: 1\n");
    let err = Config::load(Some(&d.join("l0.yaml")), &[]).unwrap_err().to_string();
    assert!(err.contains("more than"), "{err}");
}

#[test]
fn missing_file_is_a_clear_error() {
    let err = Config::load(Some(Path::new("/nonexistent/picket.yaml")), &[]).unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("/nonexistent/picket.yaml: cannot read"), "{msg}");
    assert!(!msg.contains('\n'));
}

#[test]
fn syntax_error_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "broken.yaml", &format!("{HEADER}a: 1\nb: [1, 2\nc: 3\n"));
    let msg = Config::load(Some(&path), &[]).unwrap_err().to_string();
    assert!(msg.contains("broken.yaml") && msg.contains("line"), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
}

#[test]
fn top_level_must_be_a_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "list.yaml", "- a\n- b\n");
    let msg = Config::load(Some(&path), &[]).unwrap_err().to_string();
    assert!(msg.contains("top level must be a mapping"), "{msg}");
}

#[test]
fn repeated_key_replaces_earlier_one() {
    let (config, _) = load_str("stream:\n  memcap: 1mb\n  midstream: yes\nstream:\n  memcap: 2mb\n", &[]);
    assert_eq!(config.get_size("stream.memcap").unwrap(), Some(2 << 20));
    assert_eq!(config.get_bool("stream.midstream").unwrap(), None);
}

#[test]
fn set_overrides_file_value_and_creates_missing_paths() {
    let (config, warnings) = load_str(
        &format!("{HEADER}stream:\n  midstream: false\n  memcap: 1mb\n"),
        &["stream.midstream=true", "stream.reassembly.depth=0", "vars.address-groups.HOME_NET=[10.0.0.0/8]"],
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(config.get_bool("stream.midstream").unwrap(), Some(true));
    assert_eq!(config.get_size("stream.memcap").unwrap(), Some(1 << 20), "siblings survive");
    assert_eq!(config.get_size("stream.reassembly.depth").unwrap(), Some(0));
    assert_eq!(config.get_str("vars.address-groups.HOME_NET").as_deref(), Some("[10.0.0.0/8]"));
}

#[test]
fn set_without_a_file() {
    let (config, warnings) = Config::load(None, &sets(&["flow.hash-size=1", "stream.async-oneside = yes "])).unwrap();
    assert!(warnings.is_empty());
    let s = EngineSettings::from_config(&config).unwrap().0;
    assert_eq!(s.flow_hash_size, 1);
    assert!(s.async_oneside);
    assert!(config.source().is_none());
}

#[test]
fn set_indexes_lists() {
    let body = format!("{HEADER}outputs:\n  - fast:\n      enabled: yes\n  - eve-log:\n      enabled: no\n");
    let (config, _) = load_str(&body, &["outputs.1.eve-log.enabled=yes", "outputs.2.stats.enabled=on"]);
    assert_eq!(config.get_bool("outputs.1.eve-log.enabled").unwrap(), Some(true));
    assert_eq!(config.get_bool("outputs.0.fast.enabled").unwrap(), Some(true));
    // Index == length appends.
    assert_eq!(config.get_bool("outputs.2.stats.enabled").unwrap(), Some(true));

    // Creating a list from nothing.
    let (config, _) = Config::load(None, &sets(&["rule-files.0=local.rules"])).unwrap();
    assert_eq!(EngineSettings::from_config(&config).unwrap().0.rule_files, vec!["local.rules"]);
}

#[test]
fn set_list_errors() {
    let body = format!("{HEADER}outputs:\n  - fast:\n      enabled: yes\n");
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "s.yaml", &body);
    let err = Config::load(Some(&path), &sets(&["outputs.5.fast.enabled=no"])).unwrap_err().to_string();
    assert!(err.contains("outputs.5.fast.enabled") && err.contains("past the end"), "{err}");
    let err = Config::load(Some(&path), &sets(&["outputs.fast.enabled=no"])).unwrap_err().to_string();
    assert!(err.contains("use its index"), "{err}");
}

#[test]
fn set_syntax_errors() {
    let err = Config::load(None, &sets(&["stream.midstream"])).unwrap_err().to_string();
    assert!(err.contains("'stream.midstream'") && err.contains("key=value"), "{err}");
    assert!(Config::load(None, &sets(&["=yes"])).is_err());
    assert!(Config::load(None, &sets(&["stream..midstream=yes"])).is_err());
    // Value may contain '=' and may be empty.
    let (config, _) = Config::load(None, &sets(&["vars.address-groups.X=a=b", "runmode="])).unwrap();
    assert_eq!(config.get_str("vars.address-groups.X").as_deref(), Some("a=b"));
    assert_eq!(config.get_str("runmode").as_deref(), Some(""));
}

#[test]
fn unknown_set_warns_and_is_not_applied_known_does_not_warn() {
    let (config, warnings) = Config::load(
        None,
        &sets(&[
            "foo.bar=1",
            "stream.midstream=true",
            "pcap-file.delete-when-done=non-alerts",
            "app-layer.protocols.http2.enabled=true",
        ]),
    )
    .unwrap();
    assert_eq!(
        warnings,
        vec!["unknown setting 'foo.bar' ignored", "unknown setting 'pcap-file.delete-when-done' ignored"]
    );
    assert!(config.node("foo").is_none());
    assert_eq!(config.get_bool("app-layer.protocols.http2.enabled").unwrap(), Some(true));
}

#[test]
fn prefilter_profiling_is_a_setting_from_yaml_and_set() {
    let (config, warnings) = Config::load(None, &sets(&["profiling.prefilter.enabled=yes"])).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(config.get_bool(crate::rules::PROFILE_PREFILTER_KEY).unwrap(), Some(true));
    let (config, warnings) = load_str("profiling:\n  prefilter:\n    enabled: no\n  rules:\n    enabled: yes\n", &[]);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(config.get_bool(crate::rules::PROFILE_PREFILTER_KEY).unwrap(), Some(false));
}

#[test]
fn known_key_patterns() {
    assert!(is_known_key("vars.address-groups.HOME_NET"));
    assert!(is_known_key("stream.midstream"));
    assert!(is_known_key("flow-timeouts.tcp.new"));
    assert!(is_known_key("stream.midstream-policy"));
    assert!(is_known_key("host-os-policy.windows"));
    assert!(!is_known_key("stream.midstream-policyx"));
    assert!(is_known_key("stream.bypass"));
    assert!(!is_known_key("stream.bypassx"));
    assert!(!is_known_key("varsity"));
    assert!(!is_known_key("stream"));
    assert!(!is_known_key("flow-timeoutsx.tcp"));
}

#[test]
fn yaml_file_keys_unknown_to_picket_do_not_warn() {
    let (_, warnings) =
        load_str(&format!("{HEADER}host-os-policy:\n  windows: [0.0.0.0/0]\nunix-command:\n  enabled: auto\n"), &[]);
    assert!(warnings.is_empty());
}

#[test]
fn booleans_from_yaml_in_every_spelling() {
    let body = "a: yes\nb: No\nc: on\nd: OFF\ne: true\nf: False\ng: 1\nh: 0\ni: TRUE\nj:\n";
    let (config, _) = load_str(body, &[]);
    let got: Vec<Option<bool>> = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "missing"]
        .iter()
        .map(|k| config.get_bool(k).unwrap())
        .collect();
    let t = Some(true);
    let f = Some(false);
    assert_eq!(got, vec![t, f, t, f, t, f, t, f, t, None, None]);
}

#[test]
fn sizes_from_yaml_and_set() {
    let (config, _) = load_str("a: 128mb\nb: 4096\nc: 1 GB\nd: 64KiB\n", &["stream.memcap=2gb"]);
    assert_eq!(config.get_size("a").unwrap(), Some(128 << 20));
    assert_eq!(config.get_size("b").unwrap(), Some(4096));
    assert_eq!(config.get_size("c").unwrap(), Some(1 << 30));
    assert_eq!(config.get_size("d").unwrap(), Some(64 << 10));
    assert_eq!(config.get_size("stream.memcap").unwrap(), Some(2 << 30));
}

#[test]
fn bad_values_name_key_and_value() {
    let (config, _) =
        load_str("stream:\n  midstream: maybe\n  memcap: 12 apples\nflow:\n  hash-size: -3\n  prealloc: [1]\n", &[]);
    let err = config.get_bool("stream.midstream").unwrap_err().to_string();
    assert!(err.contains("'stream.midstream'") && err.contains("'maybe'"), "{err}");
    let err = config.get_size("stream.memcap").unwrap_err().to_string();
    assert!(err.contains("'stream.memcap'") && err.contains("'12 apples'"), "{err}");
    let err = config.get_u64("flow.hash-size").unwrap_err().to_string();
    assert!(err.contains("'flow.hash-size'") && err.contains("'-3'"), "{err}");
    let err = config.get_u64("flow.prealloc").unwrap_err().to_string();
    assert!(err.contains("'flow.prealloc'") && err.contains("<list>"), "{err}");
    // The settings layer surfaces the same errors.
    let err = EngineSettings::from_config(&config).unwrap_err().to_string();
    assert!(err.contains("stream.midstream"), "{err}");
}

#[test]
fn settings_validation_errors() {
    for (set, key) in [
        ("flow.hash-size=0", "flow.hash-size"),
        ("max-pending-packets=70000", "max-pending-packets"),
        ("mpm-algo=quantum", "mpm-algo"),
        ("stream.inline=sometimes", "stream.inline"),
        ("pcap-file.checksum-checks=perhaps", "pcap-file.checksum-checks"),
        ("flow-timeouts.udp.new=soon", "flow-timeouts.udp.new"),
    ] {
        let (config, _) = Config::load(None, &sets(&[set])).unwrap();
        let err = EngineSettings::from_config(&config).unwrap_err().to_string();
        assert!(err.contains(key), "{set}: {err}");
        let value = set.split_once('=').unwrap().1;
        assert!(err.contains(value), "{set}: {err}");
    }
}

#[test]
fn packet_alert_max_out_of_range_warns_and_keeps_default() {
    for value in ["0", "256"] {
        let (config, _) = Config::load(None, &sets(&[&format!("packet-alert-max={value}")])).unwrap();
        let (s, warnings) = EngineSettings::from_config(&config).unwrap();
        assert_eq!(s.packet_alert_max, 15);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("packet-alert-max") && warnings[0].contains(value), "{warnings:?}");
    }
    let (config, _) = Config::load(None, &sets(&["packet-alert-max=255"])).unwrap();
    assert_eq!(EngineSettings::from_config(&config).unwrap().0.packet_alert_max, 255);
}

#[test]
fn settings_defaults_follow_suricata() {
    let s = EngineSettings::from_config(&Config::default()).unwrap().0;
    assert!(!s.midstream && !s.async_oneside);
    assert_eq!(s.stream_inline, StreamInline::Auto);
    assert_eq!(s.checksum_mode, ChecksumMode::Auto);
    assert_eq!(s.stream_reassembly_depth, 1 << 20);
    assert_eq!(s.stream_reassembly_max_regions, 1024);
    assert_eq!(s.stream_memcap, 64 << 20);
    assert_eq!(s.flow_hash_size, 65536);
    let tcp = s.flow_timeouts.tcp;
    assert_eq!((tcp.new, tcp.established, tcp.closed), (60, 600, 60));
    assert_eq!((tcp.emergency_new, tcp.emergency_established, tcp.emergency_closed), (5, 100, 10));
    assert_eq!((s.flow_timeouts.udp.new, s.flow_timeouts.udp.established), (30, 300));
    assert_eq!(s.flow_timeouts.udp.closed, 0);
    assert_eq!(s.flow_timeouts.icmp.emergency_established, 100);
    assert_eq!(s.packet_alert_max, 15);
    assert_eq!(s.max_pending_packets, 1024);
}

#[test]
fn settings_read_from_file_and_set() {
    let body = format!(
        "{HEADER}stream:\n  inline: auto\n  memcap: 128mb\n  reassembly:\n    depth: 4mb\n    memcap: 1gb\n\
         flow:\n  memcap: 64mb\n  prealloc: 0\nflow-timeouts:\n  udp:\n    established: 120\n\
         pcap-file:\n  checksum-checks: no\nmpm-algo: AC\ndefault-rule-path: /etc/rules\n\
         rule-files:\n  - a.rules\n  - /abs/b.rules\nthreshold-file: threshold.config\nvlan:\n  use-for-tracking: false\n"
    );
    let (config, _) = load_str(
        &body,
        &[
            "stream.inline=yes",
            "threshold-file=/t/threshold.config",
            "packet-alert-max=20",
            "stream.reassembly.max-regions=16",
        ],
    );
    let s = EngineSettings::from_config(&config).unwrap().0;
    assert_eq!(s.stream_inline, StreamInline::Yes);
    assert_eq!(s.stream_memcap, 128 << 20);
    assert_eq!(s.stream_reassembly_depth, 4 << 20);
    assert_eq!(s.stream_reassembly_memcap, 1 << 30);
    assert_eq!(s.stream_reassembly_max_regions, 16);
    assert_eq!(s.flow_memcap, 64 << 20);
    assert_eq!(s.flow_prealloc, 0);
    assert_eq!(s.flow_timeouts.udp.established, 120);
    assert_eq!(s.flow_timeouts.udp.new, 30);
    assert_eq!(s.checksum_mode, ChecksumMode::Never);
    assert_eq!(s.mpm_algo.as_deref(), Some("ac"));
    assert_eq!(s.threshold_file, Some(PathBuf::from("/t/threshold.config")));
    assert_eq!(s.packet_alert_max, 20);
    assert!(!s.vlan_use_for_tracking);
    assert_eq!(s.rule_paths(), vec![PathBuf::from("/etc/rules/a.rules"), PathBuf::from("/abs/b.rules")]);
}

#[test]
fn checksum_flag_overrides_yaml() {
    let (config, _) = load_str("pcap-file:\n  checksum-checks: yes\nstream:\n  checksum-validation: yes\n", &[]);
    let mut s = EngineSettings::from_config(&config).unwrap().0;
    assert_eq!(s.checksum_mode, ChecksumMode::Always);
    s.apply_checksum_flag("none").unwrap();
    assert_eq!(s.checksum_mode, ChecksumMode::Never);
    assert!(!s.stream_checksum_validation);
    s.apply_checksum_flag("all").unwrap();
    assert!(s.stream_checksum_validation);
    let err = s.apply_checksum_flag("some").unwrap_err().to_string();
    assert!(err.contains("'some'"), "{err}");
}

#[test]
fn address_and_port_groups() {
    let body = "vars:\n  address-groups:\n    HOME_NET: \"[10.0.0.0/8]\"\n    DMZ: [1.2.3.4, 5.6.7.0/24]\n  port-groups:\n    HTTP_PORTS: 8080\n    WEB: [80, [443, 8443]]\n";
    let (config, _) = load_str(body, &["vars.port-groups.SSH_PORTS=2222"]);
    let addresses = config.address_groups();
    assert_eq!(addresses[0], ("HOME_NET".to_string(), "[10.0.0.0/8]".to_string()));
    assert_eq!(addresses[1], ("DMZ".to_string(), "[1.2.3.4,5.6.7.0/24]".to_string()));
    assert!(addresses.contains(&("EXTERNAL_NET".to_string(), "!$HOME_NET".to_string())), "defaults fill gaps");
    assert_eq!(addresses.iter().filter(|(n, _)| n == "HOME_NET").count(), 1, "configured value wins");
    let ports = config.port_groups();
    assert!(ports.contains(&("HTTP_PORTS".to_string(), "8080".to_string())));
    assert!(ports.contains(&("WEB".to_string(), "[80,[443,8443]]".to_string())));
    assert!(ports.contains(&("SSH_PORTS".to_string(), "2222".to_string())));
    assert!(ports.contains(&("SIP_PORTS".to_string(), "[5060, 5061]".to_string())));
}

#[test]
fn default_groups_without_configuration() {
    let config = Config::default();
    let addresses = config.address_groups();
    assert_eq!(addresses[0], ("HOME_NET".to_string(), "[192.168.0.0/16,10.0.0.0/8,172.16.0.0/12]".to_string()));
    assert_eq!(addresses.len(), DEFAULT_ADDRESS_GROUPS.len());
    assert_eq!(config.port_groups().len(), DEFAULT_PORT_GROUPS.len());
}

#[test]
fn anchors_tags_and_odd_scalars() {
    let config = Config::from_yaml_str(
        "base: &b\n  memcap: 1mb\nstream: *b\ntagged: !custom 42\nbig: 123456789012345678901234567890\nkeyed:\n  1: one\n",
    )
    .unwrap();
    assert_eq!(config.get_size("stream.memcap").unwrap(), Some(1 << 20));
    assert_eq!(config.get_u64("tagged").unwrap(), Some(42));
    assert!(config.get_str("big").is_some());
    assert_eq!(config.get_str("keyed.1").as_deref(), Some("one"));
}

#[test]
fn node_lookup_never_panics_on_odd_keys() {
    let config = Config::from_yaml_str("a:\n  - x\n  - y\nb: 1\n").unwrap();
    for key in ["", ".", "a.", "a.99", "a.-1", "a.x", "b.c", "a.1.z", "..", "a.18446744073709551616"] {
        let _ = config.node(key);
        let _ = config.get_bool(key);
        let _ = config.get_size(key);
    }
    assert_eq!(config.get_str("a.1").as_deref(), Some("y"));
}

#[test]
fn midstream_policy_resolution_follows_suricata() {
    use super::ExceptionPolicy as P;
    let resolve = |body: &str, sets: &[&str], ips: bool| {
        let (config, _) = load_str(&format!("{HEADER}{body}"), sets);
        EngineSettings::from_config(&config).unwrap().0.effective_midstream_policy(ips)
    };
    // Built-in default: drop the flow only as an IPS without midstream pickup.
    assert_eq!(resolve("", &[], false), P::Ignore);
    assert_eq!(resolve("", &[], true), P::DropFlow);
    assert_eq!(resolve("stream:\n  midstream: yes\n", &[], true), P::Ignore);
    // The master switch is the default; the key itself wins over it.
    assert_eq!(resolve("exception-policy: bypass\n", &[], false), P::Bypass);
    assert_eq!(resolve("exception-policy: bypass\nstream:\n  midstream-policy: pass-flow\n", &[], false), P::PassFlow);
    // Dropping is impossible in IDS mode.
    assert_eq!(resolve("exception-policy: drop-flow\n", &[], false), P::Ignore);
    assert_eq!(resolve("", &["stream.midstream-policy=reject"], false), P::Reject);
}

#[test]
fn host_os_policy_entries_in_file_order() {
    let (config, _) = load_str(
        &format!("{HEADER}host-os-policy:\n  windows: [0.0.0.0/0]\n  old-linux: [2.2.2.2, 10.0.0.0/8]\n  bsd: []\n"),
        &[],
    );
    let s = EngineSettings::from_config(&config).unwrap().0;
    let got: Vec<(&str, &str)> = s.host_os_policy.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_eq!(got, [("windows", "0.0.0.0/0"), ("old-linux", "2.2.2.2"), ("old-linux", "10.0.0.0/8")]);
}

#[test]
fn dns_enabled_per_transport_over_the_protocol_switch() {
    let set = |body: &str| EngineSettings::from_config(&load_str(body, &[]).0).unwrap().0.dns_detection_ports;
    let yaml = |g: &str, t: &str, u: &str| {
        format!("app-layer:\n  protocols:\n    dns:\n{g}      tcp:\n        enabled: {t}\n      udp:\n        enabled: {u}\n")
    };
    assert_eq!(set(&yaml("      enabled: no\n", "yes", "no")), [None, Some(vec![])]);
    assert_eq!(set(&yaml("      enabled: yes\n", "no", "yes")), [Some(vec![]), None]);
    assert_eq!(set("app-layer:\n  protocols:\n    dns:\n      enabled: no\n"), [Some(vec![]), Some(vec![])]);
}

#[test]
fn dns_detection_ports_per_transport_generic_key_and_lists() {
    let settings = |body: &str, sets: &[&str]| {
        let (config, _) = load_str(body, sets);
        EngineSettings::from_config(&config).unwrap()
    };
    assert_eq!(settings("", &[]).0.dns_detection_ports, [None, None]);
    let generic = settings("", &["app-layer.protocols.dns.detection-ports.dp=5353"]).0;
    assert_eq!(generic.dns_detection_ports, [Some(vec![5353]), Some(vec![5353])]);
    let body = "app-layer:\n  protocols:\n    dns:\n      tcp:\n        detection-ports:\n          dp: \"[53, 5300:5302]\"\n      udp:\n        detection-ports:\n          dp: [53, 5353]\n";
    let specific = settings(body, &[]).0;
    assert_eq!(specific.dns_detection_ports, [Some(vec![53, 5300, 5301, 5302]), Some(vec![53, 5353])]);
    let (bad, warnings) = settings("", &["app-layer.protocols.dns.udp.detection-ports.dp=http"]);
    assert_eq!(bad.dns_detection_ports, [None, None]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
}

#[test]
fn config_from_libhtp_default_config() {
    let yaml = "app-layer:\n  protocols:\n    http:\n      libhtp:\n        default-config:\n          request-body-limit: 3kb\n          response-body-limit: 0\n          response-body-decompress-layer-limit: 3\n";
    let config = Config::from_yaml_str(yaml).expect("yaml");
    let c = http_config(&config).expect("valid");
    assert_eq!(c.request_body_limit, 3 * 1024);
    assert_eq!(c.response_body_limit, usize::MAX, "0 is unlimited");
    assert_eq!(c.decompress_layer_limit, 3);
    assert_eq!(c.compression_bomb_limit, picket_core::applayer::http::HttpConfig::default().compression_bomb_limit);
    let mut bad = Config::from_yaml_str("{}").expect("yaml");
    bad.set(&format!("{}.response-body-limit", HTTP_CONFIG_PREFIX), "lots").expect("set");
    assert!(http_config(&bad).is_err());
}

#[test]
fn action_order_from_yaml() {
    let config = Config::from_yaml_str("action-order:\n  - drop\n  - pass\n  - reject\n  - alert\n").expect("yaml");
    let (s, warnings) = EngineSettings::from_config(&config).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let drop_first = crate::detect::engine::ActionOrder::parse(&["drop", "pass", "reject", "alert"]).unwrap();
    assert_eq!(s.action_order, drop_first);
    let config = Config::from_yaml_str("action-order:\n  - drop\n  - pass\n").expect("yaml");
    let (s, warnings) = EngineSettings::from_config(&config).unwrap();
    assert_eq!(s.action_order, Default::default(), "an incomplete list keeps the default");
    assert!(warnings.len() == 1 && warnings[0].contains("action-order"), "{warnings:?}");
}

#[test]
fn unknown_keys_under_any_section_warn_once_with_the_file() {
    let body = format!(
        "{HEADER}detect:\n  profile: medium\n  profil: low\napp-layer:\n  protocols:\n    http:\n      memcapx: 1\n\
         defrag:\n  max-frags: 3\n  max-fragz: 3\nstream:\n  reassembly:\n    depth: 1mb\n    deepth: 1mb\n"
    );
    let (_, warnings) = load_str(&body, &["detect.foo=1", "app-layer.protocols.tls.enabled=yes"]);
    let unknown: Vec<&String> = warnings.iter().filter(|w| w.contains("unknown setting")).collect();
    assert_eq!(unknown.len(), 5, "{warnings:?}");
    for key in ["detect.profil", "app-layer.protocols.http.memcapx", "defrag.max-fragz", "stream.reassembly.deepth"] {
        assert!(
            unknown.iter().any(|w| w.contains("suricata.yaml: ") && w.contains(&format!("'{key}'"))),
            "{key}: {warnings:?}"
        );
    }
    assert!(unknown.iter().any(|w| w.starts_with("--set: ") && w.contains("'detect.foo'")), "{warnings:?}");
}
