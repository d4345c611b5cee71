//! SMTP settings: the parser's (`app-layer.protocols.smtp`: `mime:` and `max-tx`, with
//! Suricata's defaults) and the eve-log `smtp:` entry's (`custom:` fields and `md5:` of
//! the `email` object).

use super::{parse_bool, Config, ConfigError};
use crate::output::eve::smtp::SmtpLogOptions;
use picket_core::applayer::smtp::mime::UrlSchemes;
use picket_core::applayer::smtp::SmtpConfig;
use serde_yaml::Value;

/// Where Suricata keeps the SMTP parser's settings.
pub const SMTP_PREFIX: &str = "app-layer.protocols.smtp";

/// The SMTP parser's settings: Suricata's defaults overridden by what `config` sets.
pub fn smtp_config(config: &Config) -> Result<SmtpConfig, ConfigError> {
    let mut c = SmtpConfig::default();
    let key = |name: &str| format!("{SMTP_PREFIX}.{name}");
    let m = &mut c.mime;
    for (name, slot) in [
        ("mime.decode-mime", &mut m.decode_mime),
        ("mime.decode-base64", &mut m.decode_base64),
        ("mime.decode-quoted-printable", &mut m.decode_quoted_printable),
        ("mime.extract-urls", &mut m.extract_urls),
        ("mime.log-url-scheme", &mut m.log_url_scheme),
    ] {
        if let Some(v) = config.get_bool(&key(name))? {
            *slot = v;
        }
    }
    // `body-md5`: yes or no; `auto` (the default) leaves it off unless eve asks for it.
    if let Some(v) = config.get_str(&key("mime.body-md5")) {
        if let Some(b) = parse_bool(&v) {
            m.body_md5 = b;
        } else if v != "auto" {
            return Err(ConfigError::new(format!("{}: expected yes, no or auto, got '{v}'", key("mime.body-md5"))));
        }
    }
    if let Some(v) = config.get_u64(&key("mime.header-value-depth"))? {
        m.header_value_depth = usize::try_from(v.min(u64::from(u32::MAX))).unwrap_or(usize::MAX);
    }
    if let Some(Value::Sequence(items)) = config.node(&key("mime.extract-urls-schemes")) {
        let mut schemes = UrlSchemes::empty();
        for item in items.iter().filter_map(super::scalar_text) {
            let mut s = item.trim().to_string();
            if !s.ends_with('/') {
                s.push_str("://");
            }
            if !schemes.push(s.as_bytes()) {
                return Err(ConfigError::new(format!(
                    "{}: at most {} schemes of at most {} bytes",
                    key("mime.extract-urls-schemes"),
                    picket_core::applayer::smtp::mime::MAX_SCHEMES,
                    picket_core::applayer::smtp::mime::MAX_SCHEME_LEN
                )));
            }
        }
        m.url_schemes = schemes;
    }
    if let Some(v) = config.get_size(&key("inspected-tracker.content-limit"))? {
        m.content_limit = usize::try_from(v).unwrap_or(usize::MAX);
    }
    if let Some(v) = config.get_size(&key("max-tx"))? {
        c.max_tx = v;
    }
    Ok(c)
}

/// The eve-log `smtp:` entry: `custom:` header fields (record or header names) and `md5:`
/// (`body`, `subject`). Suricata's `extended:` is read and has no effect there (its
/// option parsing clears it again), so it has none here either.
pub fn smtp_log_options(node: &Value) -> SmtpLogOptions {
    let mut opts = SmtpLogOptions::default();
    let list = |v: Option<&Value>| -> Vec<String> {
        match v {
            Some(Value::Sequence(items)) => {
                items.iter().filter_map(super::scalar_text).map(|t| t.trim().to_string()).collect()
            }
            _ => Vec::new(),
        }
    };
    for field in list(node.get("custom")) {
        opts.email.enable_field(&field);
    }
    for what in list(node.get("md5")) {
        match what.as_str() {
            "body" => opts.email.body_md5 = true,
            "subject" => opts.email.subject_md5 = true,
            _ => {}
        }
    }
    opts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let c = smtp_config(&Config::from_yaml_str("x: 1\n").expect("yaml")).expect("valid");
        assert_eq!(c, SmtpConfig::default());
        assert!(c.mime.decode_mime && c.mime.extract_urls && !c.mime.body_md5);
        let yaml =
            "app-layer:\n  protocols:\n    smtp:\n      max-tx: 10\n      inspected-tracker:\n        content-limit: 5kb\n      mime:\n        decode-base64: no\n        \
                    body-md5: yes\n        header-value-depth: 100\n        extract-urls-schemes: [http, https]\n";
        let c = smtp_config(&Config::from_yaml_str(yaml).expect("yaml")).expect("valid");
        assert_eq!((c.max_tx, c.mime.content_limit), (10, 5 * 1024));
        assert!(!c.mime.decode_base64 && c.mime.body_md5);
        assert_eq!(c.mime.header_value_depth, 100);
        assert_eq!(c.mime.url_schemes.iter().collect::<Vec<_>>(), vec![&b"http://"[..], b"https://"]);
        let bad = "app-layer:\n  protocols:\n    smtp:\n      mime:\n        body-md5: maybe\n";
        assert!(smtp_config(&Config::from_yaml_str(bad).expect("yaml")).is_err());
    }

    #[test]
    fn eve_smtp_entry() {
        let node: Value =
            serde_yaml::from_str("custom: [received, X-Mailer, nothing]\nmd5: [subject]\n").expect("yaml");
        let o = smtp_log_options(&node);
        assert!(o.email.subject_md5 && !o.email.body_md5);
        assert_eq!(o.email.fields, (1 << 6) | (1 << 4));
    }
}
