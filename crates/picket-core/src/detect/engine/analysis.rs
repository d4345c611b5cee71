//! Engine analysis (`picket --engine-analysis`, Suricata's `rules_fast_pattern.txt` and
//! `rules_analysis.txt`): per rule, the prefilter (fast) pattern and the buffer it is searched
//! in, or why the rule has none and is checked without a prefilter.
//!
//! The reason a rule has no fast pattern is decided while it compiles
//! (`lists::no_fast_pattern_reason`, stored in the compiled rule), from the same candidates the
//! fast pattern choice saw; [`DetectEngine::analysis`] reads the built engine. Nothing here
//! writes files: the texts are returned for the caller to write.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::compile::CompiledRule;
use super::lists::REASON_NO_CONTENT;
use super::{buffer_has_source, DetectEngine};

/// Why an IP-only rule has no prefilter pattern.
const REASON_IP_ONLY: &str = "IP-only rule: matched by address lookup, no payload";

/// What a rule inspects, which decides how the engine checks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleKind {
    /// Addresses only: found through the IP-only index.
    IpOnly,
    /// Packet or stream payload (`pkt_data`).
    Payload,
    /// Application-layer buffers or numbers, once per transaction.
    AppLayer,
    /// Header, flow and state keywords only.
    Header,
    /// Loads but cannot match yet (the reason).
    Inactive(String),
}

impl RuleKind {
    pub fn describe(&self) -> String {
        match self {
            RuleKind::IpOnly => "IP-only".into(),
            RuleKind::Payload => "packet/stream payload".into(),
            RuleKind::AppLayer => "app-layer".into(),
            RuleKind::Header => "packet header/flow".into(),
            RuleKind::Inactive(why) => format!("inactive ({why})"),
        }
    }
}

/// A rule's prefilter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prefilter {
    Pattern {
        /// `pkt_data` or the app-layer buffer's name.
        buffer: String,
        /// Transforms applied to the buffer before the search, in order (names).
        transforms: Vec<String>,
        bytes: Vec<u8>,
        nocase: bool,
    },
    None {
        reason: String,
    },
}

/// The analysis of one rule.
#[derive(Clone, Debug)]
pub struct RuleAnalysis {
    pub gid: u32,
    pub sid: u32,
    pub rev: u32,
    pub msg: String,
    pub text: String,
    pub kind: RuleKind,
    pub prefilter: Prefilter,
    /// App-layer buffers the rule inspects.
    pub buffers: Vec<String>,
    /// Things an operator should know (a buffer no parser fills, ...).
    pub warnings: Vec<String>,
}

/// The analysis of every rule of an engine, in the engine's rule order.
#[derive(Clone, Debug, Default)]
pub struct EngineAnalysis {
    pub rules: Vec<RuleAnalysis>,
}

impl DetectEngine {
    /// Per rule: its prefilter pattern and buffer, or why it has none.
    pub fn analysis(&self) -> EngineAnalysis {
        EngineAnalysis { rules: self.rules.iter().map(analyse).collect() }
    }
}

fn transform_name(t: &crate::detect::rule::Transform) -> String {
    // The Debug form starts with the variant name; keep that part ("UrlDecode", "Xor").
    let debug = format!("{t:?}");
    debug.split(['(', ' ', '{']).next().unwrap_or(&debug).to_string()
}

fn analyse(rule: &CompiledRule) -> RuleAnalysis {
    let kind = if let Some(why) = rule.never_matches {
        RuleKind::Inactive(why.to_string())
    } else if rule.ip_only {
        RuleKind::IpOnly
    } else if rule.inspects_app_layer() {
        RuleKind::AppLayer
    } else if rule.payload.is_some() {
        RuleKind::Payload
    } else {
        RuleKind::Header
    };
    let prefilter = match (&kind, &rule.fast_pattern, &rule.app_fast_pattern) {
        (RuleKind::IpOnly, _, _) => Prefilter::None { reason: REASON_IP_ONLY.into() },
        (RuleKind::Inactive(why), _, _) => Prefilter::None { reason: format!("inactive rule: {why}") },
        (RuleKind::AppLayer, _, Some(fp)) => Prefilter::Pattern {
            buffer: fp.buffer.name.to_string(),
            transforms: fp.transforms.iter().map(transform_name).collect(),
            bytes: fp.bytes.clone(),
            nocase: fp.nocase,
        },
        (RuleKind::Payload | RuleKind::Header, Some((bytes, nocase)), _) => Prefilter::Pattern {
            buffer: "pkt_data".into(),
            transforms: Vec::new(),
            bytes: bytes.clone(),
            nocase: *nocase,
        },
        _ => Prefilter::None { reason: rule.no_fast_pattern.map_or(REASON_NO_CONTENT, |n| n.reason()).to_string() },
    };
    let mut buffers: Vec<String> = Vec::new();
    let mut warnings = Vec::new();
    for app in &rule.app_buffers {
        if !buffers.iter().any(|b| b == app.buffer.name) {
            buffers.push(app.buffer.name.to_string());
        }
        if !buffer_has_source(app.buffer) {
            warnings.push(format!("buffer {} is not filled by any parser yet: the rule cannot match", app.buffer.name));
        }
    }
    if matches!(prefilter, Prefilter::None { .. }) && matches!(kind, RuleKind::Payload | RuleKind::Header) {
        warnings.push("no prefilter: the rule is checked on every packet of its protocol and direction".into());
    }
    RuleAnalysis {
        gid: rule.gid,
        sid: rule.sid,
        rev: rule.rev,
        msg: rule.msg.to_string(),
        text: rule.rule_log.text.clone(),
        kind,
        prefilter,
        buffers,
        warnings,
    }
}

/// Printable ASCII as is, other bytes as `|xx|` groups (rule syntax).
pub fn pattern_text(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut in_hex = false;
    for &b in bytes {
        let printable = (0x20..0x7f).contains(&b) && b != b'|' && b != b'"' && b != b';' && b != b'\\';
        if printable {
            if in_hex {
                out.push('|');
                in_hex = false;
            }
            out.push(b as char);
        } else {
            out.push(if in_hex { ' ' } else { '|' });
            in_hex = true;
            let _ = write!(out, "{b:02X}");
        }
    }
    if in_hex {
        out.push('|');
    }
    out
}

impl Prefilter {
    /// One line: `content "abc" (nocase) in http.uri after [UrlDecode]`, or `none: why`.
    pub fn describe(&self) -> String {
        match self {
            Prefilter::Pattern { buffer, transforms, bytes, nocase } => {
                let mut s = format!("content \"{}\" in {buffer}", pattern_text(bytes));
                if !transforms.is_empty() {
                    let _ = write!(s, " after [{}]", transforms.join(", "));
                }
                if *nocase {
                    s.push_str(", nocase");
                }
                let _ = write!(s, ", {} bytes", bytes.len());
                s
            }
            Prefilter::None { reason } => format!("none: {reason}"),
        }
    }
}

impl EngineAnalysis {
    /// `rules_fast_pattern.txt`: per rule, its fast pattern or why it has none.
    pub fn fast_patterns_text(&self) -> String {
        let mut out = String::new();
        for r in &self.rules {
            let _ = writeln!(out, "== Sid: {} ==", r.sid);
            let _ = writeln!(out, "{}", r.text);
            let _ = writeln!(out, "    Prefilter: {}", r.prefilter.describe());
            out.push('\n');
        }
        out
    }

    /// `rules_analysis.txt`: per rule, its type, buffers, prefilter and warnings.
    pub fn rules_text(&self) -> String {
        let mut out = String::new();
        for r in &self.rules {
            let _ = writeln!(out, "== Sid: {} (gid {}, rev {}) ==", r.sid, r.gid, r.rev);
            let _ = writeln!(out, "{}", r.text);
            let _ = writeln!(out, "    Message: {}", r.msg);
            let _ = writeln!(out, "    Type: {}", r.kind.describe());
            if !r.buffers.is_empty() {
                let _ = writeln!(out, "    Buffers: {}", r.buffers.join(", "));
            }
            let _ = writeln!(out, "    Prefilter: {}", r.prefilter.describe());
            for w in &r.warnings {
                let _ = writeln!(out, "    Warning: {w}");
            }
            out.push('\n');
        }
        out
    }

    /// The lines printed on stdout: counts by type, by prefilter buffer and by reason.
    pub fn summary_text(&self) -> String {
        let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
        let mut by_buffer: BTreeMap<&str, usize> = BTreeMap::new();
        let mut by_reason: BTreeMap<&str, usize> = BTreeMap::new();
        for r in &self.rules {
            let kind = match &r.kind {
                RuleKind::Inactive(_) => "inactive".to_string(),
                k => k.describe(),
            };
            *by_kind.entry(kind).or_default() += 1;
            match &r.prefilter {
                Prefilter::Pattern { buffer, .. } => *by_buffer.entry(buffer).or_default() += 1,
                Prefilter::None { reason } => *by_reason.entry(reason).or_default() += 1,
            }
        }
        let with: usize = by_buffer.values().sum();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "engine analysis: {} rules, {with} with a prefilter pattern, {} without",
            self.rules.len(),
            self.rules.len() - with
        );
        let _ = writeln!(out, "  by type:");
        for (k, n) in &by_kind {
            let _ = writeln!(out, "    {n:>7}  {k}");
        }
        if !by_buffer.is_empty() {
            let _ = writeln!(out, "  prefilter pattern in:");
            for (b, n) in &by_buffer {
                let _ = writeln!(out, "    {n:>7}  {b}");
            }
        }
        if !by_reason.is_empty() {
            let _ = writeln!(out, "  no prefilter pattern, because:");
            for (why, n) in &by_reason {
                let _ = writeln!(out, "    {n:>7}  {why}");
            }
        }
        out
    }

    /// The analysis of one rule by signature id.
    pub fn rule(&self, sid: u32) -> Option<&RuleAnalysis> {
        self.rules.iter().find(|r| r.sid == sid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::engine::lists::{REASON_NEGATED_FAST_PATTERN, REASON_NEGATED_ONLY};
    use crate::detect::engine::DetectConfig;
    use crate::detect::rule::{parse_rule, RuleVars};

    fn analysis(rules: &[&str]) -> EngineAnalysis {
        let vars = RuleVars::default();
        let parsed = rules.iter().map(|r| parse_rule(r, &vars).expect("rule parses")).collect();
        let (engine, _) = DetectEngine::build(parsed, &DetectConfig::default()).expect("engine builds");
        engine.analysis()
    }

    fn prefilter(a: &EngineAnalysis, sid: u32) -> &Prefilter {
        &a.rule(sid).expect("rule analysed").prefilter
    }

    #[test]
    fn fast_patterns_and_reasons() {
        let a = analysis(&[
            "alert tcp any any -> any any (content:\"ab\"; content:\"|00 01|xyz\"; nocase; sid:1;)",
            "alert tcp any any -> any any (content:\"abcdef\"; content:\"zz\"; fast_pattern; sid:2;)",
            "alert http any any -> any any (http.uri; url_decode; content:\"/admin\"; sid:3;)",
            "alert ip 10.0.0.1 any -> any any (sid:4;)",
            "alert tcp any any -> any any (content:!\"abc\"; sid:5;)",
            "alert tcp any any -> any any (flags:S; sid:6;)",
            "alert tcp any any -> any any (pcre:\"/a+b/\"; sid:7;)",
            "alert tcp any any -> any any (content:!\"abc\"; fast_pattern; content:\"x\"; sid:8;)",
        ]);
        assert_eq!(
            prefilter(&a, 1),
            &Prefilter::Pattern {
                buffer: "pkt_data".into(),
                transforms: vec![],
                bytes: b"\x00\x01xyz".to_vec(),
                nocase: true
            }
        );
        assert_eq!(prefilter(&a, 1).describe(), "content \"|00 01|xyz\" in pkt_data, nocase, 5 bytes");
        match prefilter(&a, 2) {
            Prefilter::Pattern { bytes, .. } => assert_eq!(bytes, b"zz", "explicit fast_pattern wins"),
            other => panic!("sid 2: {other:?}"),
        }
        match prefilter(&a, 3) {
            Prefilter::Pattern { buffer, transforms, bytes, .. } => {
                assert_eq!((buffer.as_str(), bytes.as_slice()), ("http.uri", &b"/admin"[..]));
                assert_eq!(transforms, &["UrlDecode".to_string()]);
            }
            other => panic!("sid 3: {other:?}"),
        }
        assert_eq!(a.rule(3).unwrap().kind, RuleKind::AppLayer);
        assert_eq!(a.rule(4).unwrap().kind, RuleKind::IpOnly);
        assert_eq!(prefilter(&a, 4), &Prefilter::None { reason: REASON_IP_ONLY.into() });
        assert_eq!(prefilter(&a, 5), &Prefilter::None { reason: REASON_NEGATED_ONLY.into() });
        assert_eq!(prefilter(&a, 6), &Prefilter::None { reason: REASON_NO_CONTENT.into() });
        assert_eq!(a.rule(6).unwrap().kind, RuleKind::Header);
        assert_eq!(prefilter(&a, 7), &Prefilter::None { reason: REASON_NO_CONTENT.into() });
        assert_eq!(prefilter(&a, 8), &Prefilter::None { reason: REASON_NEGATED_FAST_PATTERN.into() });
        let summary = a.summary_text();
        assert!(summary.starts_with("engine analysis: 8 rules, 3 with a prefilter pattern, 5 without"), "{summary}");
        let fp = a.fast_patterns_text();
        assert!(fp.contains("== Sid: 3 ==\nalert http any any -> any any (http.uri; url_decode; content:\"/admin\"; sid:3;)\n    Prefilter: content \"/admin\" in http.uri after [UrlDecode], 6 bytes\n"), "{fp}");
    }

    #[test]
    fn pattern_text_escapes_like_rules() {
        assert_eq!(pattern_text(b"GET /"), "GET /");
        assert_eq!(pattern_text(b"a\x00\xffb;"), "a|00 FF|b|3B|");
        assert_eq!(pattern_text(b""), "");
    }
}
