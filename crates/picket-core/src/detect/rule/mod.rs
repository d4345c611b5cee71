//! Suricata rule language: parsing rules into a typed AST, plus `classification.config` and
//! `threshold.config`. The detection engine compiles the AST; nothing here matches packets
//! except the address/port sets and small `matches` helpers the engine reuses.
//!
//! Loading never stops at a bad rule: each malformed rule ("failed": bad syntax, a keyword
//! Suricata does not know either, a bad value, a regex that does not compile, a line that is
//! not UTF-8) becomes one [`RuleError`] (with its file and line, [`LocatedError`]) and is left
//! out whole; each valid rule using a Suricata keyword picket does not implement
//! ([`RuleError::UnsupportedKeyword`], "skipped") is counted under that keyword; the rest
//! loads. The two counts stay apart everywhere they are reported. Nothing here reads files:
//! [`RuleSetLoad`] takes a file's name and contents (as bytes: nothing is decoded lossily).

pub mod bits;
pub mod buffers;
pub mod config;
pub mod entropy;
pub mod error;
pub mod header;
pub mod keywords;
pub mod lexer;
pub mod options;
pub mod packet_keywords;
pub mod payload_keywords;
pub mod threshold;
pub mod values;
pub mod vars;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use crate::flow::hash::FxBuildHasher;

pub use buffers::{AppNumber, Base64Mode, Buffer, BufferDef, FromBase64, Subslice, Transform, XorKey, XorSpec};
pub use config::{Classification, ClassificationTable, ThresholdConfig, ThresholdEntry};
pub use error::{LocatedError, OptionError, RuleError, Side};
pub use header::{Action, Direction, Protocol, RuleHeader};
pub use lexer::{rule_lines, rule_lines_bytes, rule_lines_from, split_rule_file, RuleLine, RulePiece};
pub use options::{Content, NumOrVar, RuleOption, UintCmp};
pub use values::NumberIndex;
pub use vars::{AddressSet, PortSet, RuleVars};

/// Suricata's default priority for rules without classtype or priority.
pub const DEFAULT_PRIORITY: u8 = 3;

/// A parsed rule.
#[derive(Clone, Debug)]
pub struct Rule {
    pub header: RuleHeader,
    pub options: Vec<RuleOption>,
    pub gid: u32,
    pub sid: u32,
    pub rev: u32,
    pub msg: String,
    pub classtype: Option<String>,
    /// Explicit `priority:`; see [`Rule::effective_priority`].
    pub priority: Option<u8>,
    /// File the rule came from (`None` for [`parse_rule`]) and its first line (1-based).
    pub file: Option<Arc<str>>,
    pub line: usize,
    /// The rule as written (continuation lines joined).
    pub text: String,
}

impl Rule {
    pub fn action(&self) -> Action {
        self.header.action
    }

    pub fn protocol(&self) -> Protocol {
        self.header.protocol
    }

    /// `priority:` if given, else the classtype's priority, else 3.
    pub fn effective_priority(&self, classes: &ClassificationTable) -> u8 {
        self.priority
            .or_else(|| self.classtype.as_deref().and_then(|c| classes.get(c)).map(|c| c.priority))
            .unwrap_or(DEFAULT_PRIORITY)
    }

    /// True when the rule carries `bypass`: a match bypasses the rest of its flow.
    pub fn is_bypass(&self) -> bool {
        self.options.iter().any(|o| matches!(o, RuleOption::Bypass))
    }

    /// True when the rule carries `alert` (a pass rule that logs its matches).
    pub fn logs_pass(&self) -> bool {
        self.options.iter().any(|o| matches!(o, RuleOption::Alert))
    }

    /// True when the rule carries `noalert` or `flowbits:noalert`.
    pub fn is_noalert(&self) -> bool {
        self.options.iter().any(|o| match o {
            RuleOption::Noalert => true,
            RuleOption::Flowbits(f) => f.cmd == options::FlowbitsCmd::NoAlert,
            RuleOption::Xbits(x) => x.cmd == options::FlowbitsCmd::NoAlert,
            _ => false,
        })
    }
}

/// A rule skipped because of an unsupported keyword.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsupportedRule {
    pub file: String,
    pub line: usize,
    pub sid: Option<u32>,
    pub keyword: String,
}

/// Two rules with the same gid:sid. Like Suricata, the one with the higher rev is kept (the
/// first one on a tie).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuplicateSid {
    pub gid: u32,
    pub sid: u32,
    pub first_file: String,
    pub first_line: usize,
    pub second_file: String,
    pub second_line: usize,
    /// True when the later rule replaced the earlier one.
    pub replaced: bool,
}

/// Result of loading one or more rule files.
#[derive(Debug, Default)]
pub struct RuleSetLoad {
    pub rules: Vec<Rule>,
    pub errors: Vec<LocatedError>,
    /// Unsupported keyword -> number of rules skipped because of it.
    pub unsupported: BTreeMap<String, usize>,
    pub unsupported_rules: Vec<UnsupportedRule>,
    pub duplicates: Vec<DuplicateSid>,
    /// (gid, sid) -> index in `rules` (or in `streamed`). (Fx: one lookup per rule on the
    /// loading thread, which the parsing threads wait for.)
    by_sid: HashMap<(u32, u32), usize, FxBuildHasher>,
    /// Rules handed to a sink instead of kept ([`RuleSetLoad::record`]): what the
    /// duplicate check needs of them (file, line, rev).
    streamed: Vec<(Option<Arc<str>>, usize, u32)>,
}

/// Where [`RuleSetLoad::record`] hands each parsed rule: its slot (load order; a
/// duplicate sid with a higher rev comes again with the slot of the rule it replaces).
pub type RuleSink<'a> = dyn FnMut(usize, Rule) + 'a;

impl RuleSetLoad {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of rules skipped as unsupported.
    pub fn unsupported_count(&self) -> usize {
        self.unsupported_rules.len()
    }

    /// Loads the contents of a rules file; `name` (the file's) labels errors. A line that is
    /// not UTF-8 fails its rule (`file:line: invalid UTF-8 ...`); the other rules load.
    pub fn load_bytes(&mut self, name: &str, bytes: &[u8], vars: &RuleVars) {
        self.load_inner(name, bytes, vars);
    }

    /// Records a rules file that could not be read, as one error at line 0.
    pub fn unreadable(&mut self, name: &str, reason: impl fmt::Display) {
        self.errors.push(LocatedError {
            file: name.to_string(),
            line: 0,
            error: RuleError::Unreadable { reason: reason.to_string() },
        });
    }

    /// Loads rules from text; `name` labels errors.
    pub fn load_str(&mut self, name: &str, text: &str, vars: &RuleVars) {
        self.load_inner(name, text.as_bytes(), vars);
    }

    fn load_inner(&mut self, name: &str, bytes: &[u8], vars: &RuleVars) {
        let file: Arc<str> = Arc::from(name);
        for line in rule_lines_bytes(bytes) {
            self.record(&file, parse_line(line, vars), None);
        }
    }

    /// Records one parsed line of `file`: the rule is kept (or handed to `sink`), or its error
    /// or unsupported keyword is noted. Lines must be recorded in file order (duplicate sids:
    /// the first of two with the same rev stays); they may be parsed in any order, on any
    /// thread ([`parse_line`]).
    pub fn record(&mut self, file: &Arc<str>, parsed: ParsedLine, sink: Option<&mut RuleSink<'_>>) {
        let ParsedLine { line, outcome } = parsed;
        match outcome {
            LineOutcome::Rule(mut rule) => {
                rule.file = Some(file.clone());
                rule.line = line;
                match sink {
                    Some(sink) => self.stream_rule(*rule, sink),
                    None => self.add_rule(*rule),
                }
            }
            LineOutcome::Unsupported { keyword, sid } => {
                *self.unsupported.entry(keyword.clone()).or_insert(0) += 1;
                self.unsupported_rules.push(UnsupportedRule { file: file.to_string(), line, sid, keyword });
            }
            LineOutcome::Failed(error) => self.errors.push(LocatedError { file: file.to_string(), line, error }),
        }
    }

    /// [`RuleSetLoad::add_rule`] for a rule going to a sink.
    fn stream_rule(&mut self, rule: Rule, sink: &mut RuleSink<'_>) {
        let key = (rule.gid, rule.sid);
        let Some(&idx) = self.by_sid.get(&key) else {
            let slot = self.streamed.len();
            self.by_sid.insert(key, slot);
            self.streamed.push((rule.file.clone(), rule.line, rule.rev));
            sink(slot, rule);
            return;
        };
        let Some(existing) = self.streamed.get_mut(idx) else { return };
        let replaced = rule.rev > existing.2;
        self.duplicates.push(DuplicateSid {
            gid: rule.gid,
            sid: rule.sid,
            first_file: existing.0.as_deref().unwrap_or("").to_string(),
            first_line: existing.1,
            second_file: rule.file.as_deref().unwrap_or("").to_string(),
            second_line: rule.line,
            replaced,
        });
        if replaced {
            *existing = (rule.file.clone(), rule.line, rule.rev);
            sink(idx, rule);
        }
    }

    /// Records that the engine could not compile the rule with `sid` (after the parser took
    /// it): a failed rule like a malformed one, located at the rule's file and line.
    pub fn rejected_by_engine(&mut self, sid: u32, reason: &str) {
        let (file, line) = self.location(sid).unwrap_or((None, 0));
        self.errors.push(LocatedError {
            file: file.as_deref().unwrap_or("").to_string(),
            line,
            error: RuleError::Rejected { reason: format!("sid {sid}: {reason}") },
        });
    }

    /// File and line of the loaded rule with `sid`, whether it was kept or handed to a sink.
    pub fn location(&self, sid: u32) -> Option<(Option<Arc<str>>, usize)> {
        let kept = self.rules.iter().find(|r| r.sid == sid).map(|r| (r.file.clone(), r.line));
        kept.or_else(|| {
            self.by_sid
                .iter()
                .filter(|((_, s), _)| *s == sid)
                .find_map(|(_, &idx)| self.streamed.get(idx))
                .map(|(file, line, _)| (file.clone(), *line))
        })
    }

    /// Rules handed to a sink so far (distinct gid:sid).
    pub fn streamed_count(&self) -> usize {
        self.streamed.len()
    }

    fn add_rule(&mut self, rule: Rule) {
        let key = (rule.gid, rule.sid);
        let Some(&idx) = self.by_sid.get(&key) else {
            self.by_sid.insert(key, self.rules.len());
            self.rules.push(rule);
            return;
        };
        let existing = &self.rules[idx];
        let replaced = rule.rev > existing.rev;
        self.duplicates.push(DuplicateSid {
            gid: rule.gid,
            sid: rule.sid,
            first_file: existing.file.as_deref().unwrap_or("").to_string(),
            first_line: existing.line,
            second_file: rule.file.as_deref().unwrap_or("").to_string(),
            second_line: rule.line,
            replaced,
        });
        if replaced {
            self.rules[idx] = rule;
        }
    }
}

/// Parses rules from a string; `name` stands in for the file name in errors.
pub fn load_rules_str(name: &str, text: &str, vars: &RuleVars) -> RuleSetLoad {
    let mut load = RuleSetLoad::new();
    load.load_str(name, text, vars);
    load
}

/// One logical line of a rules file, parsed, for [`RuleSetLoad::record`]. Nothing carries
/// from one line to the next while parsing, so a file's lines can be parsed on several
/// threads and recorded in order.
pub struct ParsedLine {
    line: usize,
    outcome: LineOutcome,
}

enum LineOutcome {
    /// Boxed: a parsed rule is large, the other outcomes small.
    Rule(Box<Rule>),
    Unsupported {
        keyword: String,
        sid: Option<u32>,
    },
    Failed(RuleError),
}

/// Parses one logical line of a rules file (from [`rule_lines_bytes`]).
pub fn parse_line(line: RuleLine, vars: &RuleVars) -> ParsedLine {
    let outcome = match line.text {
        Err(error) => LineOutcome::Failed(error),
        Ok(text) => match parse_rule(&text, vars) {
            Ok(rule) => LineOutcome::Rule(Box::new(rule)),
            Err(RuleError::UnsupportedKeyword { name }) => {
                LineOutcome::Unsupported { keyword: name, sid: quick_sid(&text) }
            }
            Err(error) => LineOutcome::Failed(error),
        },
    };
    ParsedLine { line: line.line, outcome }
}

/// Best-effort sid for reporting a rule we could not fully parse.
fn quick_sid(text: &str) -> Option<u32> {
    let (_, opts) = lexer::split_rule(text).ok()?;
    opts.iter().find(|o| o.keyword == "sid").and_then(|o| o.value?.trim().parse().ok())
}

fn set_once<T>(slot: &mut Option<T>, value: T, keyword: &'static str) -> Result<(), RuleError> {
    if slot.replace(value).is_some() {
        return Err(RuleError::DuplicateOption { keyword });
    }
    Ok(())
}

/// Parses one rule. A malformed rule is an error naming the first problem; a well-formed rule
/// with a keyword we do not implement is [`RuleError::UnsupportedKeyword`].
pub fn parse_rule(text: &str, vars: &RuleVars) -> Result<Rule, RuleError> {
    let text = text.trim();
    let (header_text, raw_options) = lexer::split_rule(text)?;
    let header = header::parse_header(header_text, vars)?;

    let mut parser = options::OptionParser::new();
    let mut first_unsupported: Option<&str> = None;
    for raw in &raw_options {
        match parser.parse(raw) {
            Ok(()) => {}
            // Valid Suricata that picket cannot run yet: skipped, unless something else in
            // the rule is broken (a failed rule is reported even if it would be skipped).
            Err(OptionError::UnknownKeyword) if keywords::is_suricata_only_keyword(raw.keyword) => {
                first_unsupported.get_or_insert(raw.keyword);
            }
            Err(OptionError::UnknownKeyword) => {
                return Err(RuleError::UnknownKeyword { name: raw.keyword.to_string() });
            }
            Err(error) => return Err(RuleError::BadOption { keyword: raw.keyword.to_string(), error }),
        }
    }
    let options = parser.options;

    let mut sid = None;
    let mut gid = None;
    let mut rev = None;
    let mut msg = None;
    let mut classtype = None;
    let mut priority = None;
    for opt in &options {
        match opt {
            RuleOption::Sid(v) => set_once(&mut sid, *v, "sid")?,
            RuleOption::Gid(v) => set_once(&mut gid, *v, "gid")?,
            RuleOption::Rev(v) => set_once(&mut rev, *v, "rev")?,
            RuleOption::Msg(v) => set_once(&mut msg, v.clone(), "msg")?,
            RuleOption::Classtype(v) => set_once(&mut classtype, v.clone(), "classtype")?,
            RuleOption::Priority(v) => set_once(&mut priority, *v, "priority")?,
            _ => {}
        }
    }
    let sid = sid.ok_or(RuleError::MissingSid)?;
    check_regexes(&options)?;
    if let Some(keyword) = first_unsupported {
        return Err(RuleError::UnsupportedKeyword { name: keyword.to_string() });
    }
    Ok(Rule {
        header,
        options,
        gid: gid.unwrap_or(1),
        sid,
        rev: rev.unwrap_or(0),
        msg: msg.unwrap_or_default(),
        classtype,
        priority,
        file: None,
        line: 0,
        text: text.to_string(),
    })
}

/// Compiles each `pcre` and `pcrexform` regex once, so that one that does not compile fails
/// its rule at parse time with PCRE2's message, as in Suricata (the engine compiles them again
/// with its own settings; this check only needs the flags that change the syntax).
fn check_regexes(options: &[RuleOption]) -> Result<(), RuleError> {
    let compile_error = |keyword: &str, error: String| RuleError::BadOption {
        keyword: keyword.to_string(),
        error: OptionError::RegexCompile { error },
    };
    for option in options {
        match option {
            RuleOption::Pcre(p) => {
                pcre2::bytes::RegexBuilder::new()
                    .extended(p.flags.extended)
                    .build(&p.pattern)
                    .map_err(|e| compile_error("pcre", e.to_string()))?;
            }
            // Its other rule (a capture group) is the engine's to check: a rule it rejects
            // fails just the same, with its file and line.
            RuleOption::Transform(Transform::Pcrexform(pattern)) => {
                pcre2::bytes::RegexBuilder::new()
                    .build(pattern)
                    .map_err(|e| compile_error("pcrexform", e.to_string()))?;
            }
            _ => {}
        }
    }
    Ok(())
}
