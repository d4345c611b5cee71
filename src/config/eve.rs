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
    // JA3 is computed (and logged) when the YAML turns it on, as Suricata's
    // `ja3-fingerprints: yes`.
    opts.tls.ja3 = yaml_flag(config.node("app-layer.protocols.tls.ja3-fingerprints")).unwrap_or(false);
    // HASSH is logged when `app-layer.protocols.ssh.hassh` turns it on (Suricata's).
    opts.ssh.hassh = yaml_flag(config.node("app-layer.protocols.ssh.hassh")).unwrap_or(false);
    let Some(Value::Sequence(outputs)) = config.node("outputs") else { return opts };
    for output in outputs {
        let Some(eve) = output.get("eve-log") else { continue };
        opts.ethernet = yes(eve.get("ethernet"));
        opts.suricata_version = yes(eve.get("suricata-version"));
        // Only an explicit no turns it off, as in Suricata.
        opts.metadata = yaml_flag(eve.get("metadata")).unwrap_or(true);
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
                if let Some(smtp) = t.get("smtp") {
                    opts.smtp = super::smtp::smtp_log_options(smtp);
                }
                if let Some(dns) = t.get("dns") {
                    opts.dns = dns_log_options(dns);
                }
                if let Some(tls) = t.get("tls") {
                    opts.tls = tls_log_options(tls, opts.tls.ja3);
                } else if t.as_str() == Some("tls") {
                    opts.tls = crate::output::eve::tls::TlsLogOptions::basic(opts.tls.ja3);
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

/// A yes/no setting (a YAML boolean or Suricata's yes/no words); `None` when absent or
/// not a flag.
fn yaml_flag(v: Option<&Value>) -> Option<bool> {
    match v {
        Some(Value::Bool(b)) => Some(*b),
        Some(Value::String(s)) => parse_bool(s),
        _ => None,
    }
}

/// A list setting's entries as text (`[a, b]` or `- a` items); scalars and other shapes
/// give nothing.
fn text_list(v: Option<&Value>) -> Option<Vec<String>> {
    let Some(Value::Sequence(items)) = v else { return None };
    Some(items.iter().filter_map(super::scalar_text).map(|t| t.trim().to_string()).collect())
}

/// The `dns:` entry of eve-log `types:` (Suricata's `version`, `requests`, `responses`,
/// `types`, `formats`); what is absent keeps Suricata's default. An unknown record type
/// in `types:` is ignored and an empty or unknown `formats:` keeps both formats, as
/// Suricata does.
pub fn dns_log_options(dns: &Value) -> crate::output::eve::dns::DnsLogOptions {
    use picket_core::applayer::dns::record::DnsRecordFilter;
    let mut opts = crate::output::eve::dns::DnsLogOptions::default();
    let flag = |key: &str| yaml_flag(dns.get(key));
    if let Some(version) = dns.get("version").and_then(super::scalar_text) {
        // Suricata: 2 is the deprecated layout, anything else (1 included) gives 3.
        opts.version = if version.trim() == "2" { 2 } else { 3 };
    }
    opts.requests = flag("requests").unwrap_or(true);
    opts.responses = flag("responses").unwrap_or(true);
    if let Some(types) = text_list(dns.get("types")) {
        opts.filter.rrtypes = Some(types.iter().filter_map(|t| DnsRecordFilter::rrtype_by_name(t)).collect());
    }
    if let Some(formats) = text_list(dns.get("formats")) {
        let detailed = formats.iter().any(|f| f.eq_ignore_ascii_case("detailed"));
        let grouped = formats.iter().any(|f| f.eq_ignore_ascii_case("grouped"));
        if detailed || grouped {
            (opts.filter.detailed, opts.filter.grouped) = (detailed, grouped);
        }
    }
    opts
}

/// The `tls:` entry of eve-log `types:`: Suricata's basic fields, all of its extended
/// ones with `extended: yes`, exactly the listed ones with `custom: [...]` (unknown names
/// ignored); `session-resumption` (default yes) logs resumed sessions without a
/// certificate.
pub fn tls_log_options(tls: &Value, ja3: bool) -> crate::output::eve::tls::TlsLogOptions {
    use picket_core::applayer::tls::record::TlsFields;
    let flag = |key: &str| yaml_flag(tls.get(key));
    let mut opts = crate::output::eve::tls::TlsLogOptions::basic(ja3);
    if flag("extended") == Some(true) {
        opts.fields = TlsFields::EXTENDED;
    }
    if let Some(custom) = text_list(tls.get("custom")) {
        opts.fields = custom.iter().filter_map(|n| TlsFields::by_name(n)).fold(TlsFields::NONE, TlsFields::with);
    }
    opts.session_resumption = flag("session-resumption").unwrap_or(true);
    if opts.session_resumption {
        opts.fields = opts.fields.with(TlsFields::SESSION_RESUMED);
    }
    // Client certificates need the client object (Suricata enables it as a dependency).
    if opts.fields.has(TlsFields::CLIENT_CERTIFICATE) || opts.fields.has(TlsFields::CLIENT_CHAIN) {
        opts.fields = opts.fields.with(TlsFields::CLIENT);
    }
    opts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_entry_options_as_suricata_names_them() {
        let config = |t: &str| Config::from_yaml_str(t).expect("yaml");
        let head = "outputs:\n  - eve-log:\n      types:\n        - dns:\n";
        let plain = alert_log_options(&config(head)).dns;
        assert_eq!(plain, crate::output::eve::dns::DnsLogOptions::default());
        assert!(plain.requests && plain.responses && plain.version == 3);
        let set = alert_log_options(&config(&format!(
            "{head}            version: 2\n            requests: no\n            types: [a, AAAA, nope]\n            formats: [grouped]\n"
        )))
        .dns;
        assert_eq!((set.version, set.requests, set.responses), (2, false, true));
        assert_eq!(set.filter.rrtypes, Some(vec![1, 28]));
        assert!(set.filter.grouped && !set.filter.detailed);
        // An empty formats list keeps both formats.
        let empty = alert_log_options(&config(&format!("{head}            formats: []\n"))).dns;
        assert!(empty.filter.grouped && empty.filter.detailed);
    }

    #[test]
    fn tls_entry_fields_as_suricata_names_them() {
        use picket_core::applayer::tls::record::TlsFields;
        let config = |t: &str| Config::from_yaml_str(t).expect("yaml");
        let head = "outputs:\n  - eve-log:\n      types:\n";
        let bare = alert_log_options(&config(&format!("{head}        - tls\n"))).tls;
        assert_eq!((bare.fields, bare.session_resumption), (TlsFields::BASIC, false));
        let ext = alert_log_options(&config(&format!("{head}        - tls:\n            extended: yes\n"))).tls;
        assert_eq!(ext.fields, TlsFields::EXTENDED.with(TlsFields::SESSION_RESUMED));
        let custom = alert_log_options(&config(&format!(
            "{head}        - tls:\n            session-resumption: no\n            custom: [serial, client_chain, bogus]\n"
        )))
        .tls;
        assert_eq!(custom.fields, TlsFields::SERIAL.with(TlsFields::CLIENT_CHAIN).with(TlsFields::CLIENT));
        let ja3 = alert_log_options(&config(&format!(
            "app-layer:\n  protocols:\n    tls:\n      ja3-fingerprints: yes\n{head}        - tls\n"
        )))
        .tls;
        assert!(ja3.ja3);
    }

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
