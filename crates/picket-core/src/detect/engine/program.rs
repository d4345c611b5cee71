//! A compiled payload program: the payload keywords of one inspection buffer in rule order,
//! with numbers resolved and literals prepared for searching. `compile` builds programs,
//! `payload` runs them, `headers` runs them on raw header buffers.

use std::sync::Arc;

use memchr::memmem;

use crate::detect::rule::options::{ByteMathOp, ByteTestOp, NumBase, UintCmp};

/// Most byte_extract/byte_math variables one rule may define (Suricata allows a handful too).
pub(crate) const MAX_VARS: usize = 16;

/// Largest variable value usable as a position or length (offset, depth, distance, within,
/// isdataat, a byte count or read offset). Suricata keeps positions in 32 bits; a variable
/// above this cannot name a place in any buffer, and bounding it here keeps every sum of
/// positions in `i64` far from overflow.
pub(crate) const MAX_VAR_POSITION: u64 = u32::MAX as u64;

/// A number from the rule or a variable slot filled by byte_extract/byte_math.
///
/// Variables are unsigned (Suricata's semantics): they are read as a position only through
/// [`Val::position`], which refuses a value too large to be one, so packet data can never
/// turn into a negative or wrapped index.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Val {
    Num(i64),
    Var(u8),
}

impl Val {
    /// The value as a position, length or signed distance; `None` when a variable holds a
    /// number beyond [`MAX_VAR_POSITION`] (the keyword then does not match).
    #[inline]
    pub(crate) fn position(self, vars: &[u64; MAX_VARS]) -> Option<i64> {
        match self {
            Val::Num(n) => Some(n),
            Val::Var(i) => {
                let v = *vars.get(i as usize)?;
                (v <= MAX_VAR_POSITION).then_some(v as i64)
            }
        }
    }

    /// The value as an unsigned operand (byte_test's value, byte_math's rvalue). A negative
    /// literal keeps its two's-complement bits, as strtoull gives them to Suricata.
    #[inline]
    pub(crate) fn unsigned(self, vars: &[u64; MAX_VARS]) -> u64 {
        match self {
            Val::Num(n) => n as u64,
            Val::Var(i) => vars.get(i as usize).copied().unwrap_or(0),
        }
    }
}

/// A literal with its precomputed searcher.
pub(crate) struct Needle {
    /// Lowercased when the content is `nocase`.
    pub bytes: Vec<u8>,
    /// The searcher of a case-sensitive needle (`None` for `nocase`: those search with
    /// memchr2 and compare). Boxed: a `Finder` is ~200 bytes and 32-byte aligned, and inline
    /// it made every program step (of ~90,000 with ET Open) that large.
    finder: Option<Box<memmem::Finder<'static>>>,
}

impl Needle {
    pub(crate) fn new(bytes: &[u8], nocase: bool) -> Needle {
        let stored: Vec<u8> = if nocase { bytes.to_ascii_lowercase() } else { bytes.to_vec() };
        let finder = (!nocase).then(|| Box::new(memmem::Finder::new(&stored).into_owned()));
        Needle { finder, bytes: stored }
    }

    /// First occurrence in `hay`, as a start index.
    #[inline]
    pub(crate) fn find(&self, hay: &[u8]) -> Option<usize> {
        if let Some(finder) = &self.finder {
            return finder.find(hay);
        }
        let n = self.bytes.len();
        if n == 0 {
            return Some(0);
        }
        if hay.len() < n {
            return None;
        }
        let first = self.bytes[0];
        let upper = first.to_ascii_uppercase();
        let last_start = hay.len() - n;
        let mut from = 0;
        while from <= last_start {
            let pos = memchr::memchr2(first, upper, &hay[from..=last_start])? + from;
            if hay[pos..pos + n].eq_ignore_ascii_case(&self.bytes) {
                return Some(pos);
            }
            from = pos + 1;
        }
        None
    }
}

pub(crate) struct ContentOp {
    pub needle: Needle,
    pub negated: bool,
    pub depth: Option<Val>,
    pub offset: Option<Val>,
    pub distance: Option<Val>,
    pub within: Option<Val>,
    pub endswith: bool,
}

impl ContentOp {
    pub(crate) fn is_relative(&self) -> bool {
        self.distance.is_some() || self.within.is_some()
    }
}

/// A rule's pcre: compiled when the rule loads (a pattern that does not compile fails the
/// rule there), JIT-compiled the first time a packet reaches it. JIT-compiling every pcre of
/// ET Open (~8,000) at start-up was 14% of the start-up time and 8 MiB of executable memory,
/// for patterns most runs never evaluate.
pub(crate) struct LazyJitRegex {
    /// Without the JIT: the check at load, and the matcher if the JIT build fails (as
    /// `jit_if_available` falls back to the interpreter).
    interpreted: pcre2::bytes::Regex,
    /// The same options with `jit_if_available`.
    jit_builder: pcre2::bytes::RegexBuilder,
    jitted: std::sync::OnceLock<Option<pcre2::bytes::Regex>>,
}

impl LazyJitRegex {
    /// Compiles `pattern` with `builder`'s options (its JIT setting is ignored).
    pub(crate) fn new(mut builder: pcre2::bytes::RegexBuilder, pattern: &str) -> Result<Self, pcre2::Error> {
        let interpreted = builder.jit_if_available(false).build(pattern)?;
        builder.jit_if_available(true);
        Ok(LazyJitRegex { interpreted, jit_builder: builder, jitted: std::sync::OnceLock::new() })
    }

    /// The JIT build, run on the first call (`None` if it failed).
    fn jit(&self) -> &Option<pcre2::bytes::Regex> {
        self.jitted.get_or_init(|| self.jit_builder.build(self.interpreted.as_str()).ok())
    }

    /// The regex to match with: JIT-compiled on the first call.
    #[inline]
    pub(crate) fn get(&self) -> &pcre2::bytes::Regex {
        self.jit().as_ref().unwrap_or(&self.interpreted)
    }

    /// Runs the JIT build now if it has not run; true if it had not.
    pub(crate) fn compile_jit(&self) -> bool {
        let pending = self.jitted.get().is_none();
        self.jit();
        pending
    }

    /// Whether the JIT build has run (tests).
    #[cfg(test)]
    pub(crate) fn is_jitted(&self) -> bool {
        self.jitted.get().is_some()
    }
}

pub(crate) struct PcreOp {
    pub regex: LazyJitRegex,
    pub negated: bool,
    pub relative: bool,
}

#[derive(Clone, Copy)]
pub(crate) struct ByteRead {
    pub bytes: Val,
    pub offset: Val,
    pub relative: bool,
    pub little_endian: bool,
    pub string: Option<NumBase>,
    pub bitmask: Option<u32>,
}

// Ops are stored by value in a program's `Vec` and walked on every candidate rule: boxing
// the large variants would put a pointer chase on that path, for memory that is per rule.
#[allow(clippy::large_enum_variant)]
pub(crate) enum PayloadOp {
    Content(ContentOp),
    Pcre(PcreOp),
    Isdataat {
        negated: bool,
        offset: Val,
        relative: bool,
    },
    ByteTest {
        read: ByteRead,
        op: ByteTestOp,
        value: Val,
        negated: bool,
    },
    ByteJump {
        read: ByteRead,
        multiplier: u32,
        align: bool,
        from_beginning: bool,
        from_end: bool,
        post_offset: i64,
    },
    ByteExtract {
        read: ByteRead,
        multiplier: u32,
        align: u8,
        var: u8,
    },
    ByteMath {
        read: ByteRead,
        op: ByteMathOp,
        rvalue: Val,
        var: u8,
    },
    /// `entropy`: the Shannon entropy of the buffer (or a window of it) compared with a
    /// float. The value is kept for the flow under the buffer's name (`None`: the packet
    /// payload / stream, Suricata's "content").
    Entropy {
        spec: crate::detect::rule::entropy::Entropy,
        buffer: Option<crate::detect::rule::buffers::Buffer>,
    },
    /// `bsize` / `urilen`: the length of the whole (transformed) buffer, wherever the keyword
    /// stands in the rule. Compiled to the front of its program.
    Bsize(UintCmp<u64>),
    /// `base64_decode`: decodes (RFC 4648) `bytes` bytes from `offset` (after the previous
    /// match when `relative`) and runs the rule's `base64_data` keywords on the result. The
    /// decoded buffer is the end of the line: a match there matches the whole buffer.
    Base64Decode {
        bytes: u32,
        offset: u32,
        relative: bool,
        data: Option<Arc<Program>>,
    },
}

impl PayloadOp {
    /// Whether this keyword positions itself after the previous one's match.
    pub(crate) fn is_relative(&self) -> bool {
        match self {
            PayloadOp::Content(c) => c.is_relative(),
            PayloadOp::Pcre(p) => p.relative,
            PayloadOp::Isdataat { relative, .. } => *relative,
            PayloadOp::ByteTest { read, .. }
            | PayloadOp::ByteJump { read, .. }
            | PayloadOp::ByteExtract { read, .. }
            | PayloadOp::ByteMath { read, .. } => read.relative,
            PayloadOp::Bsize(_) | PayloadOp::Entropy { .. } => false,
            PayloadOp::Base64Decode { relative, .. } => *relative,
        }
    }

    /// A content that is relative through `distance` only (no `within`) and not negated.
    /// Suricata marks the content before such a one `DISTANCE_NEXT` only, which does not
    /// retry it; a negated one marks it `RELATIVE_NEXT`, which does (detect-distance.c).
    fn is_distance_only_content(&self) -> bool {
        matches!(self, PayloadOp::Content(c) if c.within.is_none() && !c.negated)
    }
}

/// One payload keyword plus whether the next keyword depends on where this one matched
/// (Suricata's "relative next": only then is another occurrence worth trying).
pub(crate) struct Step {
    pub op: PayloadOp,
    pub retry_on_next_failure: bool,
}

/// The keywords of one inspection buffer, in rule order.
#[derive(Default)]
pub(crate) struct Program {
    pub steps: Vec<Step>,
}

impl Program {
    /// The program of `ops` in rule order (length checks first), with the retry flags set.
    pub(crate) fn new(mut ops: Vec<PayloadOp>) -> Program {
        // Length checks do not depend on a position: test them first, and keep them from
        // separating a content from the relative keyword that follows it.
        ops.sort_by_key(|op| !matches!(op, PayloadOp::Bsize(_)));
        let n = ops.len();
        let retry: Vec<bool> = (0..n)
            .map(|i| match ops.get(i + 1) {
                // A later occurrence only helps when the next keyword is bounded by it: `within`,
                // a negated relative content (it must be absent after this match, so a later
                // match narrows what it must be absent from), or a relative non-content keyword
                // (pcre R, byte_*, isdataat at a fixed distance).
                Some(next) => next.is_relative() && !next.is_distance_only_content(),
                None => false,
            })
            .collect();
        Program {
            steps: ops
                .into_iter()
                .zip(retry)
                .map(|(op, retry_on_next_failure)| Step { op, retry_on_next_failure })
                .collect(),
        }
    }
}

impl ByteTestOp {
    #[inline]
    pub(crate) fn apply(self, val: u64, target: u64) -> bool {
        match self {
            ByteTestOp::Lt => val < target,
            ByteTestOp::Gt => val > target,
            ByteTestOp::Eq => val == target,
            ByteTestOp::Le => val <= target,
            ByteTestOp::Ge => val >= target,
            ByteTestOp::And => val & target != 0,
            ByteTestOp::Xor => val ^ target != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::LazyJitRegex;
    use pcre2::bytes::RegexBuilder;

    #[test]
    fn pcre_is_jit_compiled_on_first_use_with_the_rules_options() {
        let mut options = RegexBuilder::new();
        options.caseless(true);
        let regex = LazyJitRegex::new(options, r"user\s+root").expect("compiles");
        assert!(!regex.is_jitted(), "nothing JIT-compiled at load");
        assert_eq!(regex.get().find(b"xx USER  root").unwrap().map(|m| m.start()), Some(3));
        assert!(regex.is_jitted());
        assert!(regex.get().find(b"user").unwrap().is_none());
    }

    #[test]
    fn a_pcre_that_does_not_compile_fails_at_load() {
        assert!(LazyJitRegex::new(RegexBuilder::new(), "(unclosed").is_err());
    }
}
