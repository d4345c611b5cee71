//! The eve-log output's settings: what alerts carry (`types: - alert: {...}`), read from
//! the YAML into [`AlertLogOptions`].

use super::{parse_bool, parse_size, Config};
use crate::output::eve::http::HttpLogOptions;
use crate::output::eve::options::AnomalyLogOptions;
use crate::output::eve::{AlertLogOptions, DropLogOptions, XffOptions};
use picket_core::applayer::http::FileConfig;
use serde_yaml::Value;

/// The `alert:` options of the first `eve-log` output in the YAML (payload, packet, ...).
pub fn alert_log_options(config: &Config) -> AlertLogOptions {
    let mut opts = AlertLogOptions::default();
    let yes = |v: Option<&Value>| match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => parse_bool(s).unwrap_or(false),
        _ => false,
    };
    let Some(Value::Sequence(outputs)) = config.node("outputs") else { return opts };
    for output in outputs {
        let Some(eve) = output.get("eve-log") else { continue };
        opts.ethernet = yes(eve.get("ethernet"));
        if yes(eve.get("community-id")) {
            let seed = match eve.get("community-id-seed") {
                Some(Value::Number(n)) => n.as_u64(),
                Some(Value::String(s)) => s.parse().ok(),
                _ => None,
            };
            opts.community_id = Some(seed.unwrap_or(0).min(u64::from(u16::MAX)) as u16);
        }
        // eve-log's own `xff:` applies to alerts whose `alert:` entry has none (Suricata's
        // parent setting).
        opts.xff = eve.get("xff").and_then(xff_options);
        if let Some(Value::Sequence(types)) = eve.get("types") {
            // An `http` entry without options logs the basic fields only, as in Suricata.
            opts.http.extended = false;
            for t in types {
                if let Some(http) = t.get("http") {
                    opts.http = http_log_options(http);
                }
                if let Some(drop) = t.get("drop") {
                    opts.drop = drop_log_options(drop);
                }
                if let Some(stats) = t.get("stats") {
                    opts.stats_threads = yes(stats.get("threads"));
                }
                if let Some(anomaly) = t.get("anomaly") {
                    opts.anomaly = anomaly_log_options(anomaly);
                }
                if let Some(alert) = t.get("alert") {
                    opts.verdict = yes(alert.get("verdict"));
                    if let Some(metadata) = alert.get("metadata") {
                        apply_metadata(&mut opts, metadata);
                    }
                    if let Some(xff) = alert.get("xff") {
                        opts.xff = xff_options(xff);
                    }
                    opts.payload = yes(alert.get("payload"));
                    opts.payload_printable = yes(alert.get("payload-printable"));
                    opts.packet = yes(alert.get("packet"));
                    if let Some(size) = alert.get("payload-buffer-size").and_then(|v| match v {
                        Value::Number(n) => n.as_u64(),
                        Value::String(s) => parse_size(s),
                        _ => None,
                    }) {
                        opts.payload_buffer_size = size.min(usize::MAX as u64) as usize;
                    }
                }
            }
        }
        break;
    }
    opts
}

/// Reads the `http:` entry of eve-log `types:`: `extended`, `dump-all-headers`, `custom`.
pub fn http_log_options(http: &Value) -> HttpLogOptions {
    let text = |key: &str| match http.get(key) {
        Some(Value::String(s)) => Some(s.trim().to_ascii_lowercase()),
        Some(Value::Bool(b)) => Some(b.to_string()),
        _ => None,
    };
    let extended = text("extended").and_then(|v| parse_bool(&v)).unwrap_or(false);
    let dump = text("dump-all-headers").unwrap_or_default();
    let mut opts = HttpLogOptions {
        extended,
        request_headers: dump == "both" || dump == "request",
        response_headers: dump == "both" || dump == "response",
        custom: Vec::new(),
    };
    if let Some(Value::Sequence(custom)) = http.get("custom") {
        for entry in custom {
            if let Some(name) = super::scalar_text(entry) {
                opts.add_custom(&name);
            }
        }
    }
    opts
}

/// Which HTTP bodies are tracked as files and hashed: tracked when eve-log writes `files`
/// (`files_logged`); digests from `force-hash` of the eve-log `files:` entry and of an
/// enabled `file-store` output, which also forces sha256 (Suricata's file-store v2 names
/// files by it).
pub fn file_config(config: &Config, files_logged: bool) -> FileConfig {
    let mut cfg = FileConfig { enabled: files_logged, ..FileConfig::default() };
    let mut force = |list: Option<&Value>| {
        if let Some(Value::Sequence(items)) = list {
            for name in items.iter().filter_map(super::scalar_text) {
                match name.trim().to_ascii_lowercase().as_str() {
                    "md5" => cfg.md5 = true,
                    "sha1" => cfg.sha1 = true,
                    "sha256" => cfg.sha256 = true,
                    _ => {}
                }
            }
        }
    };
    let Some(Value::Sequence(outputs)) = config.node("outputs") else { return cfg };
    let mut file_store = false;
    let on = |v: Option<&Value>| match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => parse_bool(s).unwrap_or(false),
        _ => false,
    };
    for output in outputs {
        if let Some(eve) = output.get("eve-log").filter(|e| e.get("enabled").is_none() || on(e.get("enabled"))) {
            if let Some(Value::Sequence(types)) = eve.get("types") {
                for t in types {
                    force(t.get("files").and_then(|f| f.get("force-hash")));
                }
            }
        }
        if let Some(store) = output.get("file-store").filter(|s| on(s.get("enabled"))) {
            force(store.get("force-hash"));
            file_store = true;
        }
    }
    cfg.sha256 |= file_store;
    cfg
}

/// The `anomaly:` entry of eve-log `types:` (`types: {decode, stream, applayer}`,
/// `packethdr`), with Suricata's defaults for what it leaves out.
fn anomaly_log_options(node: &Value) -> AnomalyLogOptions {
    let flag = |v: Option<&Value>, default: bool| match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => parse_bool(s).unwrap_or(default),
        _ => default,
    };
    let d = AnomalyLogOptions::default();
    let types = node.get("types");
    let of = |name: &str, default: bool| flag(types.and_then(|t| t.get(name)), default);
    let decode = of("decode", d.decode);
    AnomalyLogOptions {
        decode,
        stream: of("stream", d.stream),
        applayer: of("applayer", d.applayer),
        // Only decoder records carry a packet: Suricata drops `packethdr` without them.
        packethdr: decode && flag(node.get("packethdr"), d.packethdr),
    }
}

/// A yes/no setting of the first `eve-log` output (`ipv6-compress`, `community-id`);
/// `default` when absent or not a boolean.
pub fn eve_log_flag(config: &Config, key: &str, default: bool) -> bool {
    let Some(Value::Sequence(outputs)) = config.node("outputs") else { return default };
    let Some(eve) = outputs.iter().find_map(|o| o.get("eve-log")) else { return default };
    match eve.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => parse_bool(s).unwrap_or(default),
        _ => default,
    }
}

/// Applies an eve-log `alert:` `metadata:` setting: `no` turns every part off; a
/// mapping (`app-layer`, `flow`, `rule: {metadata, raw}`) sets them one by one.
pub fn apply_metadata(opts: &mut AlertLogOptions, metadata: &Value) {
    let flag = |v: Option<&Value>, default: bool| match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => parse_bool(s).unwrap_or(default),
        _ => default,
    };
    match metadata {
        Value::Mapping(_) => {
            opts.app_layer = flag(metadata.get("app-layer"), true);
            opts.flow = flag(metadata.get("flow"), true);
            let rule = metadata.get("rule");
            opts.rule_metadata = flag(rule.and_then(|r| r.get("metadata")), true);
            opts.rule_raw = flag(rule.and_then(|r| r.get("raw")), false);
            opts.flow_vars = true;
        }
        other => {
            let on = flag(Some(other), true);
            opts.app_layer = on;
            opts.flow = on;
            opts.rule_metadata = on;
            opts.flow_vars = on;
            opts.rule_raw = false;
        }
    }
}

/// Reads the `drop:` entry of eve-log `types:` (`alerts`, `flows: start|all`, `verdict`).
/// Suricata's defaults: no alert, `flows: start`, no verdict.
pub fn drop_log_options(drop: &Value) -> DropLogOptions {
    let yes = |v: Option<&Value>| match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => parse_bool(s).unwrap_or(false),
        _ => false,
    };
    let all_packets = match drop.get("flows") {
        Some(Value::String(s)) => s.trim().eq_ignore_ascii_case("all"),
        _ => false,
    };
    DropLogOptions { alerts: yes(drop.get("alerts")), all_packets, verdict: yes(drop.get("verdict")) }
}

/// Reads an `xff:` mapping; `None` unless `enabled` is true.
pub fn xff_options(xff: &Value) -> Option<XffOptions> {
    let text = |key: &str| match xff.get(key) {
        Some(Value::String(s)) => Some(s.trim().to_ascii_lowercase()),
        Some(Value::Bool(b)) => Some(b.to_string()),
        _ => None,
    };
    let enabled = text("enabled").and_then(|v| parse_bool(&v)).unwrap_or(false);
    if !enabled {
        return None;
    }
    let header = match xff.get("header") {
        Some(Value::String(h)) if !h.trim().is_empty() => h.trim().to_string(),
        _ => "X-Forwarded-For".to_string(),
    };
    Some(XffOptions {
        overwrite: text("mode").as_deref() == Some("overwrite"),
        reverse: text("deployment").as_deref() != Some("forward"),
        header,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eve_level_xff_unless_the_alert_has_its_own() {
        let config = |t: &str| Config::from_yaml_str(t).expect("yaml");
        let parent =
            "outputs:\n  - eve-log:\n      xff:\n        enabled: yes\n        mode: overwrite\n      types:\n";
        let inherited = alert_log_options(&config(&format!("{parent}        - alert\n")));
        assert!(inherited.xff.is_some_and(|x| x.overwrite));
        let own = alert_log_options(&config(&format!(
            "{parent}        - alert:\n            xff:\n              enabled: no\n"
        )));
        assert_eq!(own.xff, None, "the alert's own xff wins, even disabled");
    }

    #[test]
    fn xff_options_from_yaml() {
        let yaml = |t: &str| serde_yaml::from_str::<serde_yaml::Value>(t).expect("yaml");
        assert_eq!(xff_options(&yaml("enabled: no\nmode: overwrite\n")), None);
        let reverse = xff_options(&yaml("enabled: yes\n")).expect("enabled");
        assert!(reverse.reverse && !reverse.overwrite && reverse.header == "X-Forwarded-For");
        let forward = xff_options(&yaml("enabled: yes\nmode: overwrite\ndeployment: forward\nheader: X-Real-IP\n"))
            .expect("enabled");
        assert!(!forward.reverse && forward.overwrite && forward.header == "X-Real-IP");
    }

    #[test]
    fn drop_options_from_yaml() {
        let yaml = |t: &str| serde_yaml::from_str::<serde_yaml::Value>(t).expect("yaml");
        assert_eq!(drop_log_options(&yaml("{}")), DropLogOptions::default());
        assert_eq!(
            drop_log_options(&yaml("alerts: yes\nflows: all\nverdict: yes\n")),
            DropLogOptions { alerts: true, all_packets: true, verdict: true }
        );
        assert!(!drop_log_options(&yaml("flows: start\n")).all_packets);
    }

    #[test]
    fn metadata_option_forms() {
        let yaml = |t: &str| serde_yaml::from_str::<serde_yaml::Value>(t).expect("yaml");
        let mut o = AlertLogOptions::default();
        assert!(o.app_layer && o.flow && o.rule_metadata && !o.rule_raw);
        apply_metadata(&mut o, &yaml("false"));
        assert!(!o.app_layer && !o.flow && !o.rule_metadata && !o.rule_raw && !o.flow_vars);
        apply_metadata(&mut o, &yaml("rule:\n  raw: true\n"));
        assert!(o.app_layer && o.flow && o.rule_metadata && o.rule_raw);
        apply_metadata(&mut o, &yaml("app-layer: no\nrule:\n  metadata: no\n"));
        assert!(!o.app_layer && o.flow && !o.rule_metadata && !o.rule_raw);
    }
}
