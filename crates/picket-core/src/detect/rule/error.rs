//! Why a rule, or a line of a classification or threshold file, did not load.
//!
//! [`RuleError`] says where in the rule the problem is (its text, header, or one option);
//! [`OptionError`] says what is wrong with one option's value. Their `Display` is the message
//! users see after `file:line:` ([`LocatedError`]).

use std::fmt;

use super::vars::GroupError;

/// Source or destination side of a rule header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Source,
    Destination,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Source => "source",
            Side::Destination => "destination",
        })
    }
}

/// Why a rule, or a line of `classification.config` / `threshold.config`, was not loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleError {
    // --- The rule text: `header (keyword: value; ...)`.
    MissingOpenParen,
    MissingCloseParen,
    /// `()` or a `)` before the `(`.
    NoOptions,
    /// `;;` or `: value` without a keyword; `near` is the start of what follows.
    EmptyKeyword {
        near: String,
    },
    /// A keyword with characters other than letters, digits, `_`, `.`, `-`.
    BadKeyword {
        keyword: String,
    },
    /// `keyword:;`
    EmptyValue {
        keyword: String,
    },
    /// An option without its terminating `;` (the last one included, as in Suricata); `option`
    /// is the start of the unterminated text.
    MissingSemicolon {
        option: String,
    },
    /// A value opening a `"` that does not end with the closing one: usually a missing `;`
    /// or `"` that would otherwise swallow the next options.
    UnterminatedQuote {
        keyword: String,
    },
    /// An unescaped `"` inside a quoted value, after the text `after`: the quote closes the
    /// value early, so a `;` is probably missing after it.
    StrayQuote {
        keyword: String,
        after: String,
    },
    /// A line of the rules file that is not UTF-8: the physical `line`, the 1-based byte
    /// `column` and the offending byte.
    InvalidUtf8 {
        line: usize,
        column: usize,
        byte: u8,
    },

    // --- The header: `action proto src sport direction dst dport`.
    UnbalancedBracket {
        bracket: char,
        header: String,
    },
    HeaderFields {
        found: usize,
        header: String,
    },
    UnknownAction {
        action: String,
    },
    UnknownProtocol {
        protocol: String,
    },
    /// `<-`, which Suricata does not accept either.
    LeftArrow,
    BadDirection {
        direction: String,
    },
    BadAddress {
        side: Side,
        error: GroupError,
    },
    BadPort {
        side: Side,
        error: GroupError,
    },

    // --- The options.
    /// Well-formed, but a keyword this engine does not implement (the first such keyword):
    /// the rule is skipped and counted under the keyword, not reported as an error.
    UnsupportedKeyword {
        name: String,
    },
    /// Not a keyword of Suricata either (a typo, or a keyword of another engine): the rule
    /// fails, as it does in Suricata.
    UnknownKeyword {
        name: String,
    },
    /// The value of `keyword` is wrong.
    BadOption {
        keyword: String,
        error: OptionError,
    },
    /// `msg`, `sid`, `gid`, `rev`, `classtype` or `priority` given twice.
    DuplicateOption {
        keyword: &'static str,
    },
    MissingSid,
    /// The parser accepted the rule but the engine cannot compile it (`reason` is the
    /// engine's): it fails like a malformed rule.
    Rejected {
        reason: String,
    },

    // --- Lines of classification.config and threshold.config.
    ExpectedClassification,
    MissingField {
        field: &'static str,
    },
    EmptyClasstype,
    /// A `key value` field without its value.
    FieldNeedsValue {
        item: String,
    },
    UnbalancedIpList,
    ExpectedDirective,
    UnknownDirective {
        directive: String,
    },
    SuppressIp(GroupError),
    /// A field parsed like the value of a rule option (count, track, threshold fields...).
    BadField(OptionError),

    // --- Files.
    /// The rules file could not be read; `reason` is the system's message.
    Unreadable {
        reason: String,
    },
}

impl RuleError {
    /// The keyword that made the rule unsupported, for the skipped-by-keyword counts.
    pub fn unsupported_keyword(&self) -> Option<&str> {
        match self {
            RuleError::UnsupportedKeyword { name } => Some(name),
            _ => None,
        }
    }
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleError::MissingOpenParen => f.write_str("missing '(' before the options"),
            RuleError::MissingCloseParen => f.write_str("rule must end with ')'"),
            RuleError::NoOptions => f.write_str("missing options"),
            RuleError::EmptyKeyword { near } => write!(f, "empty option keyword near '{near}'"),
            RuleError::BadKeyword { keyword } => write!(f, "invalid option keyword '{keyword}'"),
            RuleError::EmptyValue { keyword } => write!(f, "option '{keyword}' has an empty value"),
            RuleError::MissingSemicolon { option } => write!(f, "option '{option}' has no terminating ';'"),
            RuleError::UnterminatedQuote { keyword } => {
                write!(f, "'{keyword}': the quoted value does not end with its closing '\"' (missing ';' or '\"'?)")
            }
            RuleError::StrayQuote { keyword, after } => write!(
                f,
                "'{keyword}': unescaped '\"' after \"{after}\" inside the quoted value (missing ';'? escape a quote as \\\")"
            ),
            RuleError::InvalidUtf8 { line, column, byte } => write!(
                f,
                "invalid UTF-8: byte 0x{byte:02x} at line {line}, column {column} (write such bytes in hex, e.g. content:\"|{byte:02x}|\")"
            ),
            RuleError::UnbalancedBracket { bracket, header } => {
                write!(f, "unbalanced '{bracket}' in header '{header}'")
            }
            RuleError::HeaderFields { found, header } => write!(
                f,
                "header must be 'action proto src sport direction dst dport', got {found} fields in '{header}'"
            ),
            RuleError::UnknownAction { action } => write!(f, "unknown action '{action}'"),
            RuleError::UnknownProtocol { protocol } => write!(f, "unknown protocol '{protocol}'"),
            RuleError::LeftArrow => f.write_str("direction '<-' is not supported, use '->' with swapped addresses"),
            RuleError::BadDirection { direction } => write!(f, "invalid direction '{direction}'"),
            RuleError::BadAddress { side, error } => write!(f, "{side} address: {error}"),
            RuleError::BadPort { side, error } => write!(f, "{side} port: {error}"),
            RuleError::UnsupportedKeyword { name } => write!(f, "unsupported keyword '{name}'"),
            RuleError::UnknownKeyword { name } => write!(f, "unknown rule keyword '{name}'"),
            RuleError::BadOption { keyword, error } => {
                // Most messages name their keyword; the others get it in front.
                let reason = error.to_string();
                if reason.contains(keyword.as_str()) {
                    f.write_str(&reason)
                } else {
                    write!(f, "{keyword}: {reason}")
                }
            }
            RuleError::DuplicateOption { keyword } => write!(f, "'{keyword}' given twice"),
            RuleError::MissingSid => f.write_str("missing sid"),
            RuleError::Rejected { reason } => f.write_str(reason),
            RuleError::ExpectedClassification => {
                f.write_str("expected 'config classification: name,description,priority'")
            }
            RuleError::MissingField { field } => write!(f, "missing {field}"),
            RuleError::EmptyClasstype => f.write_str("empty classtype name"),
            RuleError::FieldNeedsValue { item } => write!(f, "'{item}' needs a value"),
            RuleError::UnbalancedIpList => f.write_str("unbalanced '[' in ip list"),
            RuleError::ExpectedDirective => f.write_str("expected 'threshold|event_filter|suppress|rate_filter ...'"),
            RuleError::UnknownDirective { directive } => write!(f, "unknown threshold.config directive '{directive}'"),
            RuleError::SuppressIp(error) => write!(f, "suppress ip: {error}"),
            RuleError::BadField(error) => error.fmt(f),
            RuleError::Unreadable { reason } => write!(f, "cannot read rules file: {reason}"),
        }
    }
}

impl std::error::Error for RuleError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RuleError::BadAddress { error, .. } | RuleError::BadPort { error, .. } | RuleError::SuppressIp(error) => {
                Some(error)
            }
            RuleError::BadOption { error, .. } | RuleError::BadField(error) => Some(error),
            _ => None,
        }
    }
}

/// A config-file field that failed like an option value.
impl From<OptionError> for RuleError {
    fn from(error: OptionError) -> RuleError {
        RuleError::BadField(error)
    }
}

/// What is wrong with the value of one option. Most variants name the keyword (or the part of
/// a keyword) as the message shows it, which is not always the keyword as written: `tcp.flags`
/// reports as `flags`, `detection_filter` as `threshold`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptionError {
    /// Not a keyword of this engine.
    UnknownKeyword,

    // --- Presence of a value.
    MissingValue {
        keyword: String,
    },
    UnexpectedValue {
        keyword: String,
        value: String,
    },
    /// A transform given a value.
    TakesNoValue {
        keyword: String,
    },
    /// A value without its required parts: "`keyword` needs `usage`".
    Usage {
        keyword: &'static str,
        usage: &'static str,
    },

    // --- Values and their parts.
    /// "invalid `what` 'value'": a number, name or setting that is not one.
    BadValue {
        what: String,
        value: String,
    },
    /// A number or comparison that does not parse: "invalid `keyword` value 'value'".
    BadNumber {
        keyword: String,
        value: String,
    },
    /// One part of a list value: "`keyword`: invalid `part` 'value'".
    BadPart {
        keyword: String,
        part: &'static str,
        value: String,
    },
    /// "`keyword`: unknown `part` 'value'" (an option, mode or unit).
    UnknownPart {
        keyword: String,
        part: &'static str,
        value: String,
    },
    MissingPart {
        keyword: &'static str,
        part: &'static str,
    },
    GivenTwice {
        keyword: &'static str,
        part: String,
    },
    /// Parts that do not go together, or another rule of the keyword: "`keyword`: `rule`".
    Constraint {
        keyword: &'static str,
        rule: &'static str,
    },

    // --- Numbers.
    /// A number beyond the 32-bit range of the payload keywords.
    TooLarge {
        keyword: String,
        value: i128,
    },
    /// A number beyond the range of the compared field.
    OutOfRange {
        keyword: String,
        value: String,
    },
    /// `5<>2`: the range holds nothing.
    EmptyRange {
        keyword: String,
        range: String,
    },
    ByteCountRange {
        keyword: &'static str,
        count: u32,
        min: u8,
        max: u8,
    },
    PriorityRange {
        priority: u32,
    },
    /// `!` before a range or comparison of a keyword that only negates single values.
    NegatedRange {
        keyword: String,
    },

    // --- `content` and its modifiers.
    NeedsContent {
        keyword: String,
    },
    DuplicateModifier {
        keyword: String,
    },
    DuplicateFastPattern,
    StartswithWithPosition,
    PositionWithStartswith {
        keyword: String,
    },
    MixedPositions {
        keyword: String,
    },
    Negative {
        keyword: String,
    },
    ShorterThanContent {
        keyword: String,
        value: i64,
        len: usize,
    },
    FastPatternOutOfBounds,
    /// A second legacy buffer modifier (`http_uri; http_header;`) on one content.
    DuplicateBuffer {
        keyword: String,
    },
    /// The direction of a sticky buffer (`http.header: to_client;`).
    BufferDirection {
        keyword: String,
        direction: String,
    },
    UnquotedContent {
        value: String,
    },
    EmptyContent,
    BadHex {
        hex: String,
    },
    LoneBackslash,
    BadEscape {
        escaped: char,
    },
    UnescapedQuote,
    UnterminatedHex,

    // --- `pcre` (and `pcrexform`).
    PcreTrailing {
        text: String,
    },
    PcreUnquoted,
    PcreNoSlash,
    PcreUnclosed,
    PcreCapturesTwice,
    EmptyRegex {
        keyword: &'static str,
    },
    PcreModifier {
        modifier: char,
    },
    PcreTwoBuffers,
    PcrexformUnquoted,
    /// The regex does not compile; `error` is PCRE2's message.
    RegexCompile {
        error: String,
    },

    // --- Other keywords.
    SidZero,
    BadReference,
    UnknownAppProtocol {
        name: String,
    },
    FlowCountUsage {
        keyword: String,
    },
    FlagModifiers {
        value: String,
    },
    NoFlags {
        value: String,
    },
    FlowbitsNeedsName {
        command: String,
    },
    HostbitsNoalertName,
    FlowintNeedsValue {
        operator: String,
    },
    ThresholdItemNeedsValue {
        item: String,
    },
    TagUsage {
        value: String,
    },
    VlanLayerRange {
        layer: i8,
    },
    ChecksumValue {
        keyword: String,
        value: String,
    },
    UnknownDecodeEvent {
        name: String,
    },
    XorKeySize,
    Base64Number {
        part: String,
        value: String,
    },
    MaxSizeRange {
        keyword: String,
        max: u64,
    },
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use OptionError::*;
        match self {
            UnknownKeyword => f.write_str("unknown keyword"),
            MissingValue { keyword } => write!(f, "'{keyword}' needs a value"),
            UnexpectedValue { keyword, value } => write!(f, "'{keyword}' takes no value, got '{value}'"),
            TakesNoValue { keyword } => write!(f, "{keyword} takes no value"),
            Usage { keyword, usage } => write!(f, "{keyword} needs {usage}"),
            BadValue { what, value } => write!(f, "invalid {what} '{value}'"),
            BadNumber { keyword, value } => write!(f, "invalid {keyword} value '{value}'"),
            BadPart { keyword, part, value } => write!(f, "{keyword}: invalid {part} '{value}'"),
            UnknownPart { keyword, part, value } => write!(f, "{keyword}: unknown {part} '{value}'"),
            MissingPart { keyword, part } => write!(f, "{keyword}: missing {part}"),
            GivenTwice { keyword, part } => write!(f, "{keyword}: {part} given twice"),
            Constraint { keyword, rule } => write!(f, "{keyword}: {rule}"),
            TooLarge { keyword, value } => write!(f, "{keyword} value {value} out of range"),
            OutOfRange { keyword, value } => write!(f, "{keyword} value '{value}' out of range"),
            EmptyRange { keyword, range } => write!(f, "{keyword} range '{range}': start must be below end"),
            ByteCountRange { keyword, count, min, max } => {
                write!(f, "{keyword}: number of bytes {count} out of range {min}-{max}")
            }
            PriorityRange { priority } => write!(f, "priority {priority} out of range 1-255"),
            NegatedRange { keyword } => write!(f, "{keyword}: '!' only negates a single value"),
            NeedsContent { keyword } => write!(f, "'{keyword}' needs a preceding content"),
            DuplicateModifier { keyword } => write!(f, "'{keyword}' given twice for one content"),
            DuplicateFastPattern => f.write_str("fast_pattern given twice for one content"),
            StartswithWithPosition => {
                f.write_str("startswith cannot be combined with depth, offset, distance or within")
            }
            PositionWithStartswith { keyword } => write!(f, "'{keyword}' cannot be combined with startswith"),
            MixedPositions { keyword } => {
                write!(f, "'{keyword}' mixes relative (distance/within) and absolute (depth/offset) positions")
            }
            Negative { keyword } => write!(f, "'{keyword}' must not be negative"),
            ShorterThanContent { keyword, value, len } => {
                write!(f, "'{keyword}' {value} is smaller than the content length {len}")
            }
            FastPatternOutOfBounds => f.write_str("fast_pattern offset,length exceeds the content"),
            DuplicateBuffer { keyword } => write!(f, "'{keyword}': content already has a buffer modifier"),
            BufferDirection { keyword, direction } => write!(f, "'{keyword}': invalid direction '{direction}'"),
            UnquotedContent { value } => write!(f, "content must be quoted: {value}"),
            EmptyContent => f.write_str("content is empty"),
            BadHex { hex } => write!(f, "invalid hex in content: |{hex}|"),
            LoneBackslash => f.write_str("content ends with a lone backslash"),
            BadEscape { escaped } => write!(f, "invalid escape '\\{escaped}' in content"),
            UnescapedQuote => f.write_str("unescaped '\"' inside content"),
            UnterminatedHex => f.write_str("unterminated hex block in content"),
            PcreTrailing { text } => write!(f, "unexpected '{text}' after pcre"),
            PcreUnquoted => f.write_str("pcre must be a quoted \"/regex/flags\""),
            PcreNoSlash => f.write_str("pcre must start with '/'"),
            PcreUnclosed => f.write_str("pcre is missing its closing '/'"),
            PcreCapturesTwice => f.write_str("pcre capture variables given twice"),
            EmptyRegex { keyword } => write!(f, "{keyword} regex is empty"),
            PcreModifier { modifier } => write!(f, "unknown pcre modifier '{modifier}'"),
            PcreTwoBuffers => f.write_str("pcre has more than one buffer modifier"),
            PcrexformUnquoted => f.write_str("pcrexform value must be quoted"),
            RegexCompile { error } => write!(f, "regex does not compile: {error}"),
            SidZero => f.write_str("sid must be greater than 0"),
            BadReference => f.write_str("reference must be 'system,id'"),
            UnknownAppProtocol { name } => write!(f, "unknown app-layer protocol '{name}'"),
            FlowCountUsage { keyword } => write!(f, "{keyword}: needs direction,value"),
            FlagModifiers { value } => write!(f, "flags: more than one modifier in '{value}'"),
            NoFlags { value } => write!(f, "flags: no flags in '{value}'"),
            FlowbitsNeedsName { command } => write!(f, "flowbits: '{command}' needs a name"),
            HostbitsNoalertName => f.write_str("hostbits:noalert takes no name"),
            FlowintNeedsValue { operator } => write!(f, "flowint: operator '{operator}' needs a value"),
            ThresholdItemNeedsValue { item } => write!(f, "threshold: '{item}' needs a value"),
            TagUsage { value } => write!(f, "tag: expected 'type[,count,metric[,direction]]', got '{value}'"),
            VlanLayerRange { layer } => write!(f, "vlan.id: layer {layer} out of range -3..2"),
            ChecksumValue { keyword, value } => write!(f, "'{keyword}': expected valid or invalid, got '{value}'"),
            UnknownDecodeEvent { name } => write!(f, "unknown decode-event '{name}'"),
            XorKeySize => f.write_str("xor key must be 1 to 255 bytes"),
            Base64Number { part, value } => write!(f, "from_base64: invalid {part} '{value}' (0-65535)"),
            MaxSizeRange { keyword, max } => write!(f, "{keyword}: max-size must be 1 to {max}"),
        }
    }
}

impl std::error::Error for OptionError {}

/// A rejected rule or config line, with its file and (first) line, 1-based; line 0 for a
/// file that could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocatedError {
    pub file: String,
    pub line: usize,
    pub error: RuleError,
}

impl fmt::Display for LocatedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.error)
    }
}

impl std::error::Error for LocatedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}
