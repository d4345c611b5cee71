//! `classification.config` and `threshold.config`.

use std::collections::HashMap;

use super::error::{LocatedError, OptionError, RuleError};
use super::lexer::rule_lines;
use super::threshold::{parse_threshold_fields, Threshold, ThresholdType, Track};
use super::values::{bad_part, parse_u32, unknown_option};
use super::vars::{AddressSet, RuleVars};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classification {
    pub name: String,
    pub description: String,
    pub priority: u8,
}

/// Classtype name -> description and priority.
#[derive(Clone, Debug)]
pub struct ClassificationTable {
    classes: HashMap<String, Classification>,
}

/// The standard classtypes shipped with Suricata and ET Open: (name, description, priority).
const DEFAULT_CLASSIFICATIONS: &[(&str, &str, u8)] = &[
    ("not-suspicious", "Not Suspicious Traffic", 3),
    ("unknown", "Unknown Traffic", 3),
    ("bad-unknown", "Potentially Bad Traffic", 2),
    ("attempted-recon", "Attempted Information Leak", 2),
    ("successful-recon-limited", "Information Leak", 2),
    ("successful-recon-largescale", "Large Scale Information Leak", 2),
    ("attempted-dos", "Attempted Denial of Service", 2),
    ("successful-dos", "Denial of Service", 2),
    ("attempted-user", "Attempted User Privilege Gain", 1),
    ("unsuccessful-user", "Unsuccessful User Privilege Gain", 1),
    ("successful-user", "Successful User Privilege Gain", 1),
    ("attempted-admin", "Attempted Administrator Privilege Gain", 1),
    ("successful-admin", "Successful Administrator Privilege Gain", 1),
    ("rpc-portmap-decode", "Decode of an RPC Query", 2),
    ("shellcode-detect", "Executable code was detected", 1),
    ("string-detect", "A suspicious string was detected", 3),
    ("suspicious-filename-detect", "A suspicious filename was detected", 2),
    ("suspicious-login", "An attempted login using a suspicious username was detected", 2),
    ("system-call-detect", "A system call was detected", 2),
    ("tcp-connection", "A TCP connection was detected", 4),
    ("trojan-activity", "A Network Trojan was detected", 1),
    ("unusual-client-port-connection", "A client was using an unusual port", 2),
    ("network-scan", "Detection of a Network Scan", 3),
    ("denial-of-service", "Detection of a Denial of Service Attack", 2),
    ("non-standard-protocol", "Detection of a non-standard protocol or event", 2),
    ("protocol-command-decode", "Generic Protocol Command Decode", 3),
    ("web-application-activity", "access to a potentially vulnerable web application", 2),
    ("web-application-attack", "Web Application Attack", 1),
    ("misc-activity", "Misc activity", 3),
    ("misc-attack", "Misc Attack", 2),
    ("icmp-event", "Generic ICMP event", 3),
    ("inappropriate-content", "Inappropriate Content was Detected", 1),
    ("policy-violation", "Potential Corporate Privacy Violation", 1),
    ("default-login-attempt", "Attempt to login by a default username and password", 2),
    ("targeted-activity", "Targeted Malicious Activity was Detected", 1),
    ("exploit-kit", "Exploit Kit Activity Detected", 1),
    ("external-ip-check", "Device Retrieving External IP Address Detected", 2),
    ("domain-c2", "Domain Observed Used for C2 Detected", 1),
    ("pup-activity", "Possibly Unwanted Program Detected", 2),
    ("credential-theft", "Successful Credential Theft Detected", 1),
    ("social-engineering", "Possible Social Engineering Attempted", 2),
    ("coin-mining", "Crypto Currency Mining Activity Detected", 2),
    ("command-and-control", "Malware Command and Control Activity Detected", 1),
];

impl Default for ClassificationTable {
    fn default() -> Self {
        let mut table = ClassificationTable::empty();
        for (name, description, priority) in DEFAULT_CLASSIFICATIONS {
            table.insert(Classification {
                name: name.to_string(),
                description: description.to_string(),
                priority: *priority,
            });
        }
        table
    }
}

impl ClassificationTable {
    pub fn empty() -> Self {
        ClassificationTable { classes: HashMap::new() }
    }

    /// Adds or replaces a classtype (names are case-insensitive, as in Suricata).
    pub fn insert(&mut self, class: Classification) {
        self.classes.insert(class.name.to_ascii_lowercase(), class);
    }

    pub fn get(&self, name: &str) -> Option<&Classification> {
        self.classes.get(&name.to_ascii_lowercase())
    }

    pub fn len(&self) -> usize {
        self.classes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }

    /// Parses a `classification.config` into a new table (replacing the defaults, as Suricata
    /// does when the file is configured). Bad lines are reported; good ones still load.
    pub fn parse(file_name: &str, text: &str) -> (ClassificationTable, Vec<LocatedError>) {
        let mut table = ClassificationTable::empty();
        let mut errors = Vec::new();
        for (idx, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match parse_classification_line(line) {
                Ok(class) => table.insert(class),
                Err(error) => errors.push(LocatedError { file: file_name.to_string(), line: idx + 1, error }),
            }
        }
        (table, errors)
    }
}

fn parse_classification_line(line: &str) -> Result<Classification, RuleError> {
    let rest = line
        .strip_prefix("config")
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix("classification"))
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix(':'))
        .ok_or(RuleError::ExpectedClassification)?;
    // The description may itself contain commas: name is before the first, priority after the last.
    let (name, tail) = rest.split_once(',').ok_or(RuleError::MissingField { field: "description" })?;
    let (description, priority) = tail.rsplit_once(',').ok_or(RuleError::MissingField { field: "priority" })?;
    let name = name.trim();
    if name.is_empty() {
        return Err(RuleError::EmptyClasstype);
    }
    let priority = parse_u32(priority, "priority")?;
    if priority == 0 || priority > 255 {
        return Err(OptionError::PriorityRange { priority }.into());
    }
    Ok(Classification { name: name.to_string(), description: description.trim().to_string(), priority: priority as u8 })
}

/// Action that a `rate_filter` switches a rule to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateFilterAction {
    Alert,
    Drop,
    Pass,
    Reject,
}

/// One line of `threshold.config`. `sig_id`/`gen_id` of 0 mean "all".
#[derive(Clone, Debug, PartialEq)]
pub enum ThresholdEntry {
    /// `threshold` or `event_filter`.
    Threshold { gen_id: u32, sig_id: u32, threshold: Threshold },
    /// `suppress`; without `track`/`ip` every alert of the rule is suppressed.
    Suppress { gen_id: u32, sig_id: u32, track: Option<Track>, ip: Option<AddressSet> },
    RateFilter {
        gen_id: u32,
        sig_id: u32,
        track: Track,
        count: u32,
        seconds: u32,
        new_action: RateFilterAction,
        timeout: u32,
    },
}

#[derive(Clone, Debug, Default)]
pub struct ThresholdConfig {
    pub entries: Vec<ThresholdEntry>,
}

impl ThresholdConfig {
    /// Parses `threshold.config`; `vars` resolves `$VAR` in suppress `ip`. Lines may be joined
    /// with a trailing backslash.
    pub fn parse(file_name: &str, text: &str, vars: &RuleVars) -> (ThresholdConfig, Vec<LocatedError>) {
        let mut config = ThresholdConfig::default();
        let mut errors = Vec::new();
        for (line, entry_text) in rule_lines(text) {
            match parse_threshold_line(&entry_text, vars) {
                Ok(entry) => config.entries.push(entry),
                Err(error) => errors.push(LocatedError { file: file_name.to_string(), line, error }),
            }
        }
        (config, errors)
    }
}

/// Splits `key value, key value` where a suppress `ip` value may be a bracketed list with commas.
fn split_fields(text: &str) -> Result<Vec<(&str, &str)>, RuleError> {
    let mut fields = Vec::new();
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut depth: i32 = 0;
    for i in 0..=bytes.len() {
        let at_end = i == bytes.len();
        if !at_end {
            match bytes[i] {
                b'[' => depth += 1,
                b']' => depth -= 1,
                _ => {}
            }
        }
        if at_end || (bytes[i] == b',' && depth == 0) {
            let item = text[start..i].trim();
            start = i + 1;
            if item.is_empty() {
                continue;
            }
            let (k, v) = item
                .split_once(char::is_whitespace)
                .ok_or_else(|| RuleError::FieldNeedsValue { item: item.to_string() })?;
            fields.push((k.trim(), v.trim()));
        }
    }
    if depth != 0 {
        return Err(RuleError::UnbalancedIpList);
    }
    Ok(fields)
}

fn parse_threshold_line(line: &str, vars: &RuleVars) -> Result<ThresholdEntry, RuleError> {
    let line = line.trim();
    let (kind, rest) = line.split_once(char::is_whitespace).ok_or(RuleError::ExpectedDirective)?;
    let fields = split_fields(rest)?;
    let get = |key: &str| fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let gen_id = parse_u32(get("gen_id").ok_or(RuleError::MissingField { field: "gen_id" })?, "gen_id")?;
    let sig_id = parse_u32(get("sig_id").ok_or(RuleError::MissingField { field: "sig_id" })?, "sig_id")?;
    // Everything but gen_id/sig_id, rebuilt for the shared threshold parser.
    let others = || {
        fields
            .iter()
            .filter(|(k, _)| *k != "gen_id" && *k != "sig_id")
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    match kind {
        "threshold" | "event_filter" => {
            let (threshold, _) = parse_threshold_fields(&others(), true)?;
            Ok(ThresholdEntry::Threshold { gen_id, sig_id, threshold })
        }
        "suppress" => {
            for (k, _) in &fields {
                if !matches!(*k, "gen_id" | "sig_id" | "track" | "ip") {
                    return Err(unknown_option("suppress", k).into());
                }
            }
            let track = match get("track") {
                None => None,
                Some(t) => match Track::parse(t) {
                    Some(tr @ (Track::BySrc | Track::ByDst | Track::ByEither)) => Some(tr),
                    _ => return Err(bad_part("suppress", "track", t).into()),
                },
            };
            let ip = match get("ip") {
                None => None,
                Some(spec) => Some(vars.resolve_address(spec).map_err(RuleError::SuppressIp)?),
            };
            if track.is_some() != ip.is_some() {
                return Err(OptionError::Constraint {
                    keyword: "suppress",
                    rule: "'track' and 'ip' must be given together",
                }
                .into());
            }
            Ok(ThresholdEntry::Suppress { gen_id, sig_id, track, ip })
        }
        "rate_filter" => {
            let missing = |part| RuleError::from(OptionError::MissingPart { keyword: "rate_filter", part });
            let track_text = get("track").ok_or_else(|| missing("track"))?;
            let track = Track::parse(track_text)
                .filter(|t| !matches!(t, Track::ByEither))
                .ok_or_else(|| bad_part("rate_filter", "track", track_text))?;
            let new_action = match get("new_action").ok_or_else(|| missing("new_action"))? {
                "alert" | "log" => RateFilterAction::Alert,
                "drop" | "sdrop" => RateFilterAction::Drop,
                "pass" => RateFilterAction::Pass,
                "reject" => RateFilterAction::Reject,
                other => return Err(bad_part("rate_filter", "new_action", other).into()),
            };
            let count = parse_u32(get("count").ok_or_else(|| missing("count"))?, "count")?;
            let seconds = parse_u32(get("seconds").ok_or_else(|| missing("seconds"))?, "seconds")?;
            let timeout = parse_u32(get("timeout").ok_or_else(|| missing("timeout"))?, "timeout")?;
            Ok(ThresholdEntry::RateFilter { gen_id, sig_id, track, count, seconds, new_action, timeout })
        }
        other => Err(RuleError::UnknownDirective { directive: other.to_string() }),
    }
}

impl ThresholdEntry {
    pub fn ids(&self) -> (u32, u32) {
        match self {
            ThresholdEntry::Threshold { gen_id, sig_id, .. }
            | ThresholdEntry::Suppress { gen_id, sig_id, .. }
            | ThresholdEntry::RateFilter { gen_id, sig_id, .. } => (*gen_id, *sig_id),
        }
    }

    pub fn threshold_type(&self) -> Option<ThresholdType> {
        match self {
            ThresholdEntry::Threshold { threshold, .. } => Some(threshold.kind),
            _ => None,
        }
    }
}
