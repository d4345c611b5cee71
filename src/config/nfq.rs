//! NFQUEUE settings: Suricata's `nfq:` section (and `--set nfq.KEY=VALUE`), read into an
//! [`NfQueueConfig`]. The queue numbers themselves come from `-q`.
//!
//! Suricata's keys: `mode` (`accept`; `repeat` and `route` are refused: picket answers
//! every packet itself), `fail-open` (default yes), `batchcount`. `repeat-mark`,
//! `repeat-mask`, `bypass-mark`, `bypass-mask` and `route-queue` belong to the modes
//! picket does not run and are ignored with a warning. picket's own keys:
//! `queue-maxlen` (packets the kernel holds per queue) and `socket-buffer` (a size).

use super::Config;
use crate::capture::nfqueue::{NfQueueConfig, MAX_BATCHCOUNT, MAX_QUEUE_MAXLEN, MAX_SOCKET_BUFFER, MIN_SOCKET_BUFFER};

/// Keys of Suricata's repeat and route modes, which picket does not run.
const OTHER_MODE_KEYS: &[&str] = &["repeat-mark", "repeat-mask", "bypass-mark", "bypass-mask", "route-queue"];

/// The `nfq:` section as queue settings, with warnings about keys picket ignores.
/// Errors are one line naming the key and what it takes.
pub fn nfq_config(config: &Config) -> Result<(NfQueueConfig, Vec<String>), String> {
    let mut out = NfQueueConfig::default();
    let mut warnings = Vec::new();
    let err = |e: super::ConfigError| e.message().to_string();
    if let Some(mode) = config.get_str("nfq.mode") {
        match mode.trim() {
            "accept" => {}
            "repeat" | "route" => {
                return Err(format!(
                    "nfq.mode: '{mode}' is not supported; picket runs NFQUEUE in mode 'accept' \
                     (it gives every packet its final verdict)"
                ))
            }
            other => return Err(format!("nfq.mode: unknown mode '{other}' (expected accept)")),
        }
    }
    for key in OTHER_MODE_KEYS {
        if config.get_str(&format!("nfq.{key}")).is_some() {
            warnings.push(format!("nfq.{key} applies to Suricata's repeat and route modes only; ignored"));
        }
    }
    if let Some(fail_open) = config.get_bool("nfq.fail-open").map_err(err)? {
        out.fail_open = fail_open;
    }
    let bounded = |key: &str, min: u64, max: u64, value: Option<u64>| -> Result<Option<u32>, String> {
        match value {
            None => Ok(None),
            Some(v) if (min..=max).contains(&v) => Ok(Some(v as u32)),
            Some(v) => Err(format!("nfq.{key}: {v} is not in {min}-{max}")),
        }
    };
    if let Some(v) = bounded("batchcount", 1, MAX_BATCHCOUNT as u64, config.get_u64("nfq.batchcount").map_err(err)?)? {
        out.batchcount = v;
    }
    let maxlen = config.get_u64("nfq.queue-maxlen").map_err(err)?;
    if let Some(v) = bounded("queue-maxlen", 1, MAX_QUEUE_MAXLEN as u64, maxlen)? {
        out.queue_maxlen = v;
    }
    let buffer = config.get_size("nfq.socket-buffer").map_err(err)?;
    if let Some(v) = bounded("socket-buffer", MIN_SOCKET_BUFFER as u64, MAX_SOCKET_BUFFER as u64, buffer)? {
        out.socket_buffer = v;
    }
    Ok((out, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<(NfQueueConfig, Vec<String>), String> {
        nfq_config(&Config::from_yaml_str(yaml).unwrap())
    }

    #[test]
    fn defaults_without_a_section() {
        let (c, warnings) = parse("other: 1\n").unwrap();
        assert_eq!(c, NfQueueConfig::default());
        assert!(c.fail_open);
        assert!(warnings.is_empty());
    }

    #[test]
    fn suricata_keys_and_picket_keys() {
        let yaml =
            "nfq:\n  mode: accept\n  fail-open: no\n  batchcount: 20\n  queue-maxlen: 4096\n  socket-buffer: 16mb\n";
        let (c, warnings) = parse(yaml).unwrap();
        assert_eq!(c, NfQueueConfig { fail_open: false, batchcount: 20, queue_maxlen: 4096, socket_buffer: 16 << 20 });
        assert!(warnings.is_empty());
    }

    #[test]
    fn set_overrides_apply() {
        let (config, _) =
            Config::load(None, &["nfq.fail-open=no".to_string(), "nfq.batchcount=5".to_string()]).unwrap();
        let (c, _) = nfq_config(&config).unwrap();
        assert!(!c.fail_open);
        assert_eq!(c.batchcount, 5);
    }

    #[test]
    fn other_modes_are_refused_and_their_keys_warned_about() {
        assert!(parse("nfq:\n  mode: repeat\n").unwrap_err().contains("'repeat' is not supported"));
        assert!(parse("nfq:\n  mode: route\n").unwrap_err().contains("mode 'accept'"));
        assert!(parse("nfq:\n  mode: bogus\n").unwrap_err().contains("unknown mode 'bogus'"));
        let (_, warnings) = parse("nfq:\n  repeat-mark: 1\n  route-queue: 2\n").unwrap();
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].contains("nfq.repeat-mark"));
    }

    #[test]
    fn bad_values_name_the_key() {
        assert!(parse("nfq:\n  batchcount: 0\n").unwrap_err().starts_with("nfq.batchcount: 0 is not in"));
        assert!(parse("nfq:\n  batchcount: lots\n").unwrap_err().contains("'nfq.batchcount'"));
        assert!(parse("nfq:\n  fail-open: maybe\n").unwrap_err().contains("'nfq.fail-open'"));
        assert!(parse("nfq:\n  socket-buffer: 1kb\n").unwrap_err().starts_with("nfq.socket-buffer"));
        assert!(parse("nfq:\n  queue-maxlen: 99999999\n").unwrap_err().starts_with("nfq.queue-maxlen"));
    }
}
