//! The payload keywords of one rule, gathered per inspection buffer while the rule compiles:
//! each (buffer, transform chain) gets a list of payload operations in rule order, and each
//! content is noted as a fast pattern candidate. `compile` turns the lists into programs.

use std::sync::Arc;

use super::program::{ByteRead, ContentOp, LazyJitRegex, Needle, PayloadOp, PcreOp, Program, Val, MAX_VARS};
use super::InspectionLimits;
use crate::detect::rule::options::{
    Base64Decode, ByteExtract, ByteJump, ByteMath, ByteTest, Content, Endian, FastPattern, Isdataat, NumBase, Pcre,
};
use crate::detect::rule::{Buffer, NumOrVar, Transform, UintCmp};

/// Transforms one buffer may chain (Suricata's DETECT_TRANSFORMS_MAX).
const MAX_TRANSFORMS: usize = 16;
/// `base64_decode` without `bytes` decodes at most this much (Suricata's BASE64_DECODE_MAX).
pub(crate) const BASE64_DECODE_MAX: u32 = 65535;

/// Payload keywords collected for one (buffer, transform chain) while compiling a rule.
pub(crate) struct ListBuild {
    /// `None`: pkt_data.
    pub buffer: Option<Buffer>,
    pub transforms: Vec<Transform>,
    pub ops: Vec<PayloadOp>,
    /// `absent` on this buffer: `Some(false)` it must be missing, `Some(true)` (`or_else`)
    /// missing or matching `ops`.
    pub absent: Option<bool>,
}

/// A content that could serve as a rule's fast pattern.
pub(crate) struct FastPatternCandidate {
    /// `None`: pkt_data.
    pub buffer: Option<Buffer>,
    pub bytes: Vec<u8>,
    pub nocase: bool,
    /// Marked `fast_pattern` in the rule.
    pub explicit: bool,
    pub negated: bool,
    /// The transforms of the content's buffer: the prefilter must search transformed data.
    pub chain: Vec<Transform>,
}

/// An explicit `fast_pattern` wins (a negated one cannot prefilter: the rule matches when it
/// is absent); otherwise the strongest, then longest, non-negated content.
pub(crate) fn choose_fast_pattern<'a>(
    candidates: impl Iterator<Item = &'a FastPatternCandidate> + Clone,
) -> Option<&'a FastPatternCandidate> {
    if let Some(explicit) = candidates.clone().find(|c| c.explicit) {
        return (!explicit.negated).then_some(explicit);
    }
    candidates.filter(|c| !c.negated).max_by_key(|c| (pattern_strength(&c.bytes), c.bytes.len()))
}

/// Why a rule has no prefilter pattern (`--engine-analysis`); one byte in the compiled rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NoFastPattern {
    NoContent,
    NoAppContent,
    NegatedOnly,
    NegatedFastPattern,
    NotScannable,
    Transactional,
}

pub(crate) const REASON_NO_CONTENT: &str = "no content keyword to prefilter on";
pub(crate) const REASON_NEGATED_ONLY: &str = "only negated contents (a rule matching on absence cannot prefilter)";
pub(crate) const REASON_NEGATED_FAST_PATTERN: &str = "fast_pattern set on a negated content";

impl NoFastPattern {
    /// The reason as the reports and the summary show it.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            NoFastPattern::NoContent => REASON_NO_CONTENT,
            NoFastPattern::NoAppContent => "no content in its app-layer buffers (checked on every transaction)",
            NoFastPattern::NegatedOnly => REASON_NEGATED_ONLY,
            NoFastPattern::NegatedFastPattern => REASON_NEGATED_FAST_PATTERN,
            NoFastPattern::NotScannable => {
                "contents only in buffers or transform chains the prefilter does not scan for this rule"
            }
            NoFastPattern::Transactional => "transactional rule ('=>'): checked on every transaction",
        }
    }
}

/// Why the compiled rule got no fast pattern (called only when it got none).
pub(crate) fn no_fast_pattern_reason(
    candidates: &[FastPatternCandidate],
    app_rule: bool,
    transactional: bool,
) -> NoFastPattern {
    if transactional {
        return NoFastPattern::Transactional;
    }
    if candidates.is_empty() {
        return if app_rule { NoFastPattern::NoAppContent } else { NoFastPattern::NoContent };
    }
    if candidates.iter().any(|c| c.explicit && c.negated) {
        return NoFastPattern::NegatedFastPattern;
    }
    if candidates.iter().all(|c| c.negated) {
        return NoFastPattern::NegatedOnly;
    }
    NoFastPattern::NotScannable
}

/// Suricata's pattern "strength": distinct letters score low, distinct other printable
/// bytes higher, distinct binary bytes highest, repeats one point each.
pub(crate) fn pattern_strength(pattern: &[u8]) -> u32 {
    let mut seen = [false; 256];
    let mut score = 0;
    for &b in pattern {
        if seen[b as usize] {
            score += 1;
            continue;
        }
        seen[b as usize] = true;
        score += if b.is_ascii_alphabetic() {
            3
        } else if (0x20..0x7f).contains(&b) || b == 0x00 || b == 0x01 || b == 0xff {
            4
        } else {
            6
        };
    }
    score
}

pub(crate) fn same_buffer(a: Option<Buffer>, b: Option<Buffer>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => x.name == y.name,
        _ => false,
    }
}

fn list_index(lists: &mut Vec<ListBuild>, buffer: Option<Buffer>, transforms: &[Transform]) -> usize {
    if let Some(i) = lists.iter().position(|l| same_buffer(l.buffer, buffer) && l.transforms == transforms) {
        return i;
    }
    lists.push(ListBuild { buffer, transforms: transforms.to_vec(), ops: Vec::new(), absent: None });
    lists.len() - 1
}

fn cmp_to_u64(c: UintCmp<u32>) -> UintCmp<u64> {
    match c {
        UintCmp::Eq(v) => UintCmp::Eq(v.into()),
        UintCmp::Ne(v) => UintCmp::Ne(v.into()),
        UintCmp::Lt(v) => UintCmp::Lt(v.into()),
        UintCmp::Le(v) => UintCmp::Le(v.into()),
        UintCmp::Gt(v) => UintCmp::Gt(v.into()),
        UintCmp::Ge(v) => UintCmp::Ge(v.into()),
        UintCmp::Range(a, b) => UintCmp::Range(a.into(), b.into()),
        UintCmp::NotRange(a, b) => UintCmp::NotRange(a.into(), b.into()),
    }
}

/// The byte_extract/byte_math variables of a rule, by slot.
#[derive(Default)]
struct VarTable {
    names: Vec<String>,
}

impl VarTable {
    fn define(&mut self, name: &str) -> Result<u8, String> {
        if let Some(i) = self.names.iter().position(|n| n == name) {
            return Ok(i as u8);
        }
        if self.names.len() >= MAX_VARS {
            return Err(format!("more than {MAX_VARS} byte_extract/byte_math variables"));
        }
        self.names.push(name.to_string());
        Ok((self.names.len() - 1) as u8)
    }

    fn val(&self, v: &NumOrVar) -> Result<Val, String> {
        match v {
            NumOrVar::Num(n) => Ok(Val::Num(*n)),
            NumOrVar::Var(name) => self
                .names
                .iter()
                .position(|n| n == name)
                .map(|i| Val::Var(i as u8))
                .ok_or_else(|| format!("unknown variable '{name}'")),
        }
    }

    fn opt_val(&self, v: &Option<NumOrVar>) -> Result<Option<Val>, String> {
        v.as_ref().map(|v| self.val(v)).transpose()
    }
}

fn byte_read(
    bytes: Val,
    offset: Val,
    relative: bool,
    endian: Endian,
    string: Option<NumBase>,
    bitmask: Option<u32>,
) -> ByteRead {
    ByteRead {
        bytes,
        offset,
        relative,
        // No DCE/RPC parser: `dce` falls back to little endian, DCE's usual byte order.
        little_endian: matches!(endian, Endian::Little | Endian::Dce),
        string,
        bitmask,
    }
}

/// PCRE2's in-pattern limits, `(*LIMIT_MATCH=n)(*LIMIT_DEPTH=m)`: the `pcre2` crate has no
/// match-context API, and a pattern-start setting is PCRE2's documented way to lower the
/// limits for one pattern (it applies with and without the JIT, as the match context's do).
/// Clamped to 1..=PCRE_LIMIT_MAX: a higher value would be silently capped by PCRE2 anyway.
pub(crate) fn pcre_limit_prefix(match_limit: u32, depth_limit: u32) -> String {
    let clamp = |n: u32| n.clamp(1, InspectionLimits::PCRE_LIMIT_MAX);
    format!("(*LIMIT_MATCH={})(*LIMIT_DEPTH={})", clamp(match_limit), clamp(depth_limit))
}

/// Compiles a rule's pcre with its limits: the configured ones, a `pcre_limit` override, or
/// none with the `O` flag (Suricata's "override the configured match limit").
fn build_regex(p: &Pcre, limits: (u32, u32)) -> Result<LazyJitRegex, String> {
    let f = &p.flags;
    let mut pattern = String::new();
    if !f.no_match_limit {
        pattern.push_str(&pcre_limit_prefix(limits.0, limits.1));
    }
    if f.ungreedy {
        pattern.push_str("(?U)");
    }
    if f.anchored {
        // Anchored at the start position of the search (buffer start, or the previous match
        // for relative pcre), which is what PCRE2_ANCHORED does there.
        pattern.push_str("\\G(?:");
        pattern.push_str(&p.pattern);
        if f.extended {
            pattern.push('\n');
        }
        pattern.push(')');
    } else {
        pattern.push_str(&p.pattern);
    }
    let mut builder = pcre2::bytes::RegexBuilder::new();
    builder.caseless(f.caseless).dotall(f.dotall).multi_line(f.multiline).extended(f.extended);
    LazyJitRegex::new(builder, &pattern).map_err(|e| format!("pcre: {e}"))
}

/// The fast pattern candidate of a content: its bytes (or the `fast_pattern:offset,length`
/// slice of them), unless that is empty.
fn fast_pattern_candidate(c: &Content, buffer: Option<Buffer>, chain: &[Transform]) -> Option<FastPatternCandidate> {
    let bytes = match c.fast_pattern {
        Some(FastPattern::Chop { offset, length }) => {
            let start = (offset as usize).min(c.pattern.len());
            let end = start.saturating_add(length as usize).min(c.pattern.len());
            c.pattern[start..end].to_vec()
        }
        _ => c.pattern.clone(),
    };
    (!bytes.is_empty()).then(|| FastPatternCandidate {
        buffer,
        bytes,
        nocase: c.nocase,
        explicit: c.fast_pattern.is_some(),
        negated: c.negated,
        chain: chain.to_vec(),
    })
}

/// The payload keywords of one rule, per (buffer, transform chain), in rule order.
#[derive(Default)]
pub(crate) struct PayloadLists {
    lists: Vec<ListBuild>,
    vars: VarTable,
    /// The sticky buffer in effect; `None`: pkt_data.
    sticky: Option<Buffer>,
    /// Transforms given since the current sticky buffer; keywords after them inspect the
    /// transformed data, keywords before them the data as transformed so far.
    chain: Vec<Transform>,
    /// List of the last payload keyword (where a `base64_decode` without sticky buffer goes).
    last_list: Option<usize>,
    /// Buffer of the last content/pcre: without a sticky buffer, a relative keyword after
    /// `uricontent` or `content; http_uri;` continues in that buffer (as in Suricata).
    last_match_buf: Option<Buffer>,
    fp_candidates: Vec<FastPatternCandidate>,
    /// The configured pcre limits and inspection bounds.
    limits: InspectionLimits,
    /// Where the last pcre went (list, op index) and what it was, for a `pcre_limit` after it.
    last_pcre: Option<(usize, usize, Pcre)>,
}

impl PayloadLists {
    /// Appends `op` to the list of `buffer`, with the current transform chain when
    /// `transformed` (legacy buffer modifiers ignore it).
    fn push(&mut self, buffer: Option<Buffer>, transformed: bool, op: PayloadOp) {
        let chain: &[Transform] = if transformed { &self.chain } else { &[] };
        let i = list_index(&mut self.lists, buffer, chain);
        self.lists[i].ops.push(op);
        self.last_list = Some(i);
    }

    /// Where a keyword positioned after the previous match looks.
    fn relative_buffer(&self, relative: bool) -> Option<Buffer> {
        if self.sticky.is_none() && relative {
            self.last_match_buf
        } else {
            self.sticky
        }
    }

    pub(crate) fn content(&mut self, c: &Content) -> Result<(), String> {
        let buffer = c.legacy_buffer.or(self.sticky);
        let transformed = c.legacy_buffer.is_none();
        self.last_match_buf = buffer;
        let mut depth = self.vars.opt_val(&c.depth)?;
        let mut offset = self.vars.opt_val(&c.offset)?;
        if c.startswith {
            depth = Some(Val::Num(c.pattern.len() as i64));
            offset = Some(Val::Num(0));
        }
        // Suricata counts `depth` from `offset`: the match must end before
        // offset + depth (the payload engine takes depth as an absolute end).
        if let (Some(Val::Num(d)), Some(Val::Num(o))) = (depth, offset) {
            depth = Some(Val::Num(d.saturating_add(o)));
        }
        let op = ContentOp {
            needle: Needle::new(&c.pattern, c.nocase),
            negated: c.negated,
            depth,
            offset,
            distance: self.vars.opt_val(&c.distance)?,
            within: self.vars.opt_val(&c.within)?,
            endswith: c.endswith,
        };
        let chain: &[Transform] = if transformed { &self.chain } else { &[] };
        if let Some(candidate) = fast_pattern_candidate(c, buffer, chain) {
            self.fp_candidates.push(candidate);
        }
        self.push(buffer, transformed, PayloadOp::Content(op));
        Ok(())
    }

    pub(crate) fn set_limits(&mut self, limits: InspectionLimits) {
        self.limits = limits;
    }

    pub(crate) fn pcre(&mut self, p: &Pcre) -> Result<(), String> {
        let buffer = p.buffer.or(self.sticky);
        self.last_match_buf = buffer;
        let regex = build_regex(p, (self.limits.pcre_match_limit, self.limits.pcre_match_limit_recursion))?;
        let op = PayloadOp::Pcre(PcreOp { regex, negated: p.negated, relative: p.flags.relative });
        self.push(buffer, p.buffer.is_none(), op);
        if let Some(list) = self.last_list {
            self.last_pcre = Some((list, self.lists[list].ops.len() - 1, p.clone()));
        }
        Ok(())
    }

    /// `pcre_limit`: recompiles the pcre just before it with its own limits.
    pub(crate) fn pcre_limit(&mut self, match_limit: u32, recursion: Option<u32>) -> Result<(), String> {
        let Some((list, index, pcre)) = self.last_pcre.take() else {
            return Err("pcre_limit must follow a pcre".into());
        };
        let recursion = recursion.unwrap_or(self.limits.pcre_match_limit_recursion);
        let regex = build_regex(&pcre, (match_limit, recursion))?;
        if let Some(PayloadOp::Pcre(op)) = self.lists.get_mut(list).and_then(|l| l.ops.get_mut(index)) {
            op.regex = regex;
        }
        Ok(())
    }

    pub(crate) fn isdataat(&mut self, i: &Isdataat) -> Result<(), String> {
        let op = PayloadOp::Isdataat { negated: i.negated, offset: self.vars.val(&i.offset)?, relative: i.relative };
        self.push(self.relative_buffer(i.relative), true, op);
        Ok(())
    }

    pub(crate) fn byte_test(&mut self, b: &ByteTest) -> Result<(), String> {
        let (bytes, offset) = (self.vars.val(&b.bytes)?, self.vars.val(&b.offset)?);
        let read = byte_read(bytes, offset, b.relative, b.endian, b.string, b.bitmask);
        let op = PayloadOp::ByteTest { read, op: b.op, value: self.vars.val(&b.value)?, negated: b.negated };
        self.push(self.relative_buffer(b.relative), true, op);
        Ok(())
    }

    pub(crate) fn byte_jump(&mut self, b: &ByteJump) -> Result<(), String> {
        let (bytes, offset) = (self.vars.val(&b.bytes)?, self.vars.val(&b.offset)?);
        let op = PayloadOp::ByteJump {
            read: byte_read(bytes, offset, b.relative, b.endian, b.string, b.bitmask),
            multiplier: b.multiplier.unwrap_or(1),
            align: b.align,
            from_beginning: b.from_beginning,
            from_end: b.from_end,
            post_offset: b.post_offset.unwrap_or(0),
        };
        self.push(self.relative_buffer(b.relative), true, op);
        Ok(())
    }

    pub(crate) fn byte_extract(&mut self, b: &ByteExtract) -> Result<(), String> {
        let var = self.vars.define(&b.name)?;
        let read = byte_read(Val::Num(b.bytes as i64), Val::Num(b.offset), b.relative, b.endian, b.string, b.bitmask);
        let op =
            PayloadOp::ByteExtract { read, multiplier: b.multiplier.unwrap_or(1), align: b.align.unwrap_or(0), var };
        self.push(self.relative_buffer(b.relative), true, op);
        Ok(())
    }

    pub(crate) fn byte_math(&mut self, b: &ByteMath) -> Result<(), String> {
        let bytes = self.vars.val(&b.bytes)?;
        let rvalue = self.vars.val(&b.rvalue)?;
        let var = self.vars.define(&b.result)?;
        let read = byte_read(bytes, Val::Num(b.offset), b.relative, b.endian, b.string, b.bitmask);
        self.push(self.relative_buffer(b.relative), true, PayloadOp::ByteMath { read, op: b.op, rvalue, var });
        Ok(())
    }

    pub(crate) fn base64_decode(&mut self, b: &Base64Decode) {
        let op = PayloadOp::Base64Decode {
            bytes: b.bytes.filter(|&n| n > 0).unwrap_or(BASE64_DECODE_MAX).min(BASE64_DECODE_MAX),
            offset: b.offset.unwrap_or(0),
            relative: b.relative,
            data: None,
        };
        // Without a sticky buffer it joins the list of the keyword before it (Suricata).
        let i = match (self.sticky, self.last_list) {
            (None, Some(i)) => i,
            _ => list_index(&mut self.lists, self.sticky, &self.chain),
        };
        self.lists[i].ops.push(op);
        self.last_list = Some(i);
    }

    pub(crate) fn transform(&mut self, t: &Transform) -> Result<(), String> {
        // Suricata accepts transforms on sticky buffers only, not on pkt_data.
        if self.sticky.is_none() {
            return Err("transforms need a sticky buffer".into());
        }
        if self.chain.len() >= MAX_TRANSFORMS {
            return Err(format!("more than {MAX_TRANSFORMS} transforms on one buffer"));
        }
        self.chain.push(t.clone());
        // A transformed buffer with no keywords still has to be present.
        list_index(&mut self.lists, self.sticky, &self.chain);
        Ok(())
    }

    pub(crate) fn sticky_buffer(&mut self, buffer: Buffer) {
        self.sticky = Some(buffer);
        self.chain.clear();
        // Keep list order: a sticky buffer with no keywords still needs its buffer.
        list_index(&mut self.lists, self.sticky, &[]);
    }

    pub(crate) fn pkt_data(&mut self) {
        self.sticky = None;
        self.chain.clear();
    }

    /// `entropy` on the sticky buffer, or on the packet payload / stream without one.
    pub(crate) fn entropy(&mut self, spec: &crate::detect::rule::entropy::Entropy) -> Result<(), String> {
        self.push(self.sticky, true, PayloadOp::Entropy { spec: *spec, buffer: self.sticky });
        Ok(())
    }

    pub(crate) fn bsize(&mut self, cmp: UintCmp<u64>) -> Result<(), String> {
        if self.sticky.is_none() {
            return Err("bsize needs a sticky buffer".into());
        }
        self.push(self.sticky, true, PayloadOp::Bsize(cmp));
        Ok(())
    }

    /// `absent` / `absent: or_else` on the sticky buffer. A buffer that may be missing
    /// cannot give the rule its fast pattern: the prefilter would never pick the rule when
    /// the buffer is missing.
    pub(crate) fn absent(&mut self, or_else: bool) -> Result<(), String> {
        let Some(buffer) = self.sticky else {
            return Err("absent needs a sticky buffer".into());
        };
        let i = list_index(&mut self.lists, Some(buffer), &self.chain);
        if self.lists[i].absent.is_some() {
            return Err(format!("absent given twice on {}", buffer.name));
        }
        if !self.lists[i].ops.is_empty() {
            return Err(format!("absent must come first on {}, before the keywords that inspect it", buffer.name));
        }
        self.lists[i].absent = Some(or_else);
        Ok(())
    }

    pub(crate) fn urilen(&mut self, cmp: UintCmp<u32>, raw: bool) -> Result<(), String> {
        let name = if raw { "http.uri.raw" } else { "http.uri" };
        let uri = crate::detect::rule::buffers::buffer_by_name(name).ok_or("urilen: no uri buffer")?;
        // urilen always measures the untransformed URI; `last_list` stays with the
        // previous keyword.
        let i = list_index(&mut self.lists, Some(uri), &[]);
        self.lists[i].ops.push(PayloadOp::Bsize(cmp_to_u64(cmp)));
        Ok(())
    }

    /// The lists, with the `base64_data` keywords attached to every `base64_decode` (they run
    /// on what it decoded), and the fast pattern candidates. A combination the engine cannot
    /// run sets `never_matches`.
    pub(crate) fn finish(
        mut self,
        never_matches: &mut Option<&'static str>,
    ) -> (Vec<ListBuild>, Vec<FastPatternCandidate>) {
        let base64_data = take_base64_data(&mut self.lists, never_matches);
        let mut has_base64_decode = false;
        for op in self.lists.iter_mut().flat_map(|l| l.ops.iter_mut()) {
            if let PayloadOp::Base64Decode { data, .. } = op {
                has_base64_decode = true;
                *data = base64_data.clone();
            }
        }
        if base64_data.is_some() && !has_base64_decode {
            // Suricata needs both keywords; base64_data alone has nothing to inspect.
            never_matches.get_or_insert("base64_data without base64_decode");
        }
        // Contents of a buffer that may be missing are no fast pattern (see `absent`).
        let lists = &self.lists;
        self.fp_candidates.retain(|c| {
            !lists.iter().any(|l| l.absent.is_some() && same_buffer(l.buffer, c.buffer) && l.transforms == c.chain)
        });
        (self.lists, self.fp_candidates)
    }
}

/// Removes the `base64_data` list and compiles it.
fn take_base64_data(lists: &mut Vec<ListBuild>, never_matches: &mut Option<&'static str>) -> Option<Arc<Program>> {
    let is_base64_data = |l: &ListBuild| l.buffer.is_some_and(|b| b.name == "base64_data");
    let list = lists.remove(lists.iter().position(is_base64_data)?);
    if lists.iter().any(is_base64_data) {
        never_matches.get_or_insert("transform on base64_data");
    }
    if !list.transforms.is_empty() {
        never_matches.get_or_insert("transform on base64_data");
    }
    if list.ops.iter().any(|op| matches!(op, PayloadOp::Base64Decode { .. })) {
        never_matches.get_or_insert("base64_decode inside base64_data");
    }
    Some(Arc::new(Program::new(list.ops)))
}
