//! Payload keyword evaluation over one buffer, with Suricata's semantics: every keyword
//! positions itself (absolute or relative to the previous match), and when a later keyword
//! fails, an earlier content/pcre is retried at its next occurrence ("backtracking") as long
//! as the failing keyword depended on its position.
//!
//! The work is bounded twice: every keyword evaluation (first tries and retries) counts
//! against `detect.inspection-recursion-limit`, and every pcre runs under PCRE2's match and
//! depth limits (`pcre.match-limit`, compiled into the regex by `lists`). Hitting either ends
//! the inspection with no match, counted in `detect.recursion_limit` / `detect.pcre_match_limit`.
//! Positions derived from packet data go through [`Val::position`] and checked arithmetic:
//! out of range is no match, never a panic.

use super::program::{ByteRead, ContentOp, PayloadOp, PcreOp, Program, Val, MAX_VARS};
use crate::detect::rule::options::{ByteMathOp, NumBase};

/// PCRE2 errors that mean "a resource limit stopped the match" rather than a broken pattern.
const PCRE2_LIMIT_ERRORS: [i32; 4] = [
    -46, // PCRE2_ERROR_JIT_STACKLIMIT
    -47, // PCRE2_ERROR_MATCHLIMIT
    -53, // PCRE2_ERROR_DEPTHLIMIT
    -63, // PCRE2_ERROR_HEAPLIMIT
];

pub(crate) struct Inspection<'b, 's> {
    pub buf: &'b [u8],
    /// Where `base64_decode` writes its output (per-worker, reused); `None` inside the
    /// decoded data itself, where a nested `base64_decode` cannot match.
    decode_scratch: Option<&'s mut Vec<u8>>,
    /// Stream offset of `buf[0]` for stream inspection (0 for packets and app buffers):
    /// a non-relative content's `depth` counts from the start of the stream.
    pub stream_start: u64,
    pub offset: usize,
    pub vars: [u64; MAX_VARS],
    pub steps: u32,
    /// `detect.inspection-recursion-limit` for this inspection (u32::MAX: none).
    pub step_limit: u32,
    pub limit_hit: bool,
    /// pcre evaluations stopped by a PCRE2 limit.
    pub pcre_limit_hits: u32,
    /// The last `entropy` value computed in this run and its buffer (see `PayloadOp::Entropy`).
    pub entropy: Option<(Option<crate::detect::rule::buffers::Buffer>, f64)>,
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Outcome {
    Match,
    NoMatch,
    /// Stop: no other occurrence of an earlier keyword can change the result.
    Discontinue,
}

/// The settings of a `byte_jump` besides its read.
#[derive(Clone, Copy)]
struct Jump {
    multiplier: u32,
    align: bool,
    from_beginning: bool,
    from_end: bool,
    post_offset: i64,
}

/// `byte_math`'s operation on the unsigned 64-bit value, as Suricata computes it: `+`, `-`,
/// `*` and `<<` wrap (`0 - 69` is 2^64 - 69, which a later `byte_test` compares as that
/// number); a division by zero is no match (`None`). A wrapped result is harmless as a
/// position: every use of a variable as an offset or length goes through [`Val::position`],
/// which refuses anything above 2^32 - 1.
fn byte_math(op: ByteMathOp, val: u64, r: u64) -> Option<u64> {
    match op {
        ByteMathOp::Add => Some(val.wrapping_add(r)),
        ByteMathOp::Sub => Some(val.wrapping_sub(r)),
        ByteMathOp::Mul => Some(val.wrapping_mul(r)),
        ByteMathOp::Div => val.checked_div(r),
        // Shifting every bit out gives zero.
        ByteMathOp::Shl => Some(u32::try_from(r).ok().and_then(|s| val.checked_shl(s)).unwrap_or(0)),
        ByteMathOp::Shr => Some(u32::try_from(r).ok().and_then(|s| val.checked_shr(s)).unwrap_or(0)),
    }
}

/// `value` times `multiplier`, rounded up to a multiple of `align` (0 and 1: no rounding);
/// `None` on overflow.
fn scale_and_align(value: u64, multiplier: u32, align: u64) -> Option<u64> {
    let mut v = value.checked_mul(multiplier as u64)?;
    if align > 1 && v % align != 0 {
        v = v.checked_add(align - v % align)?;
    }
    Some(v)
}

impl<'b, 's> Inspection<'b, 's> {
    pub(crate) fn new(buf: &'b [u8], stream_start: u64) -> Self {
        Inspection {
            buf,
            decode_scratch: None,
            stream_start,
            offset: 0,
            vars: [0; MAX_VARS],
            steps: 0,
            step_limit: super::InspectionLimits::DEFAULT.inspection_recursion_limit,
            limit_hit: false,
            pcre_limit_hits: 0,
            entropy: None,
        }
    }

    /// An inspection whose `base64_decode` keywords decode into `scratch`.
    pub(crate) fn with_scratch(buf: &'b [u8], stream_start: u64, scratch: &'s mut Vec<u8>) -> Self {
        Inspection { decode_scratch: Some(scratch), ..Inspection::new(buf, stream_start) }
    }

    pub(crate) fn run(&mut self, program: &Program) -> bool {
        if program.steps.is_empty() {
            return true;
        }
        self.inspect(program, 0) == Outcome::Match
    }

    fn next(&mut self, program: &Program, i: usize) -> Outcome {
        if i + 1 >= program.steps.len() {
            Outcome::Match
        } else {
            self.inspect(program, i + 1)
        }
    }

    fn inspect(&mut self, program: &Program, i: usize) -> Outcome {
        if !self.count_step() {
            return Outcome::Discontinue;
        }
        let Some(step) = program.steps.get(i) else { return Outcome::Match };
        match &step.op {
            PayloadOp::Content(c) => self.content(program, i, c, step.retry_on_next_failure),
            PayloadOp::Pcre(p) => self.pcre(program, i, p, step.retry_on_next_failure),
            PayloadOp::Isdataat { negated, offset, relative } => {
                // A variable too large to be a position names no data in the buffer.
                let len = self.buf.len() as i64;
                let present = offset.position(&self.vars).is_some_and(|n| {
                    if *relative {
                        n >= 0 && (self.offset as i64).saturating_add(n) <= len
                    } else {
                        n >= 0 && n < len
                    }
                });
                if present != *negated {
                    self.next(program, i)
                } else {
                    Outcome::NoMatch
                }
            }
            PayloadOp::ByteTest { read, op, value, negated } => {
                let Some((val, _)) = self.read_value(read) else { return Outcome::NoMatch };
                let target = value.unsigned(&self.vars);
                if op.apply(val, target) != *negated {
                    self.next(program, i)
                } else {
                    Outcome::NoMatch
                }
            }
            PayloadOp::ByteJump { read, multiplier, align, from_beginning, from_end, post_offset } => {
                let jump = Jump {
                    multiplier: *multiplier,
                    align: *align,
                    from_beginning: *from_beginning,
                    from_end: *from_end,
                    post_offset: *post_offset,
                };
                let Some(target) = self.jump_target(read, jump) else { return Outcome::NoMatch };
                self.offset = target;
                self.next(program, i)
            }
            PayloadOp::ByteExtract { read, multiplier, align, var } => {
                let Some((val, end_of_read)) = self.read_value(read) else { return Outcome::NoMatch };
                let Some(val) = scale_and_align(val, *multiplier, *align as u64) else { return Outcome::NoMatch };
                let Some(slot) = self.vars.get_mut(*var as usize) else { return Outcome::NoMatch };
                *slot = val;
                self.offset = end_of_read;
                self.next(program, i)
            }
            PayloadOp::Entropy { spec, buffer } => match spec.measure(self.buf) {
                Some(value) => {
                    self.entropy = Some((*buffer, value));
                    if spec.value.matches(value) {
                        self.next(program, i)
                    } else {
                        Outcome::NoMatch
                    }
                }
                None => Outcome::NoMatch,
            },
            PayloadOp::Bsize(cmp) => {
                if cmp.matches(self.buf.len() as u64) {
                    self.next(program, i)
                } else {
                    Outcome::NoMatch
                }
            }
            PayloadOp::Base64Decode { bytes, offset, relative, data } => {
                self.base64_decode(program, i, *bytes, *offset, *relative, data.as_deref())
            }
            PayloadOp::ByteMath { read, op, rvalue, var } => {
                let Some((val, _)) = self.read_value(read) else { return Outcome::NoMatch };
                let Some(result) = byte_math(*op, val, rvalue.unsigned(&self.vars)) else {
                    return Outcome::NoMatch;
                };
                let Some(slot) = self.vars.get_mut(*var as usize) else { return Outcome::NoMatch };
                *slot = result;
                self.next(program, i)
            }
        }
    }

    /// Counts one keyword evaluation; `false` once the inspection's budget is spent.
    fn count_step(&mut self) -> bool {
        self.steps = self.steps.saturating_add(1);
        if self.steps >= self.step_limit {
            self.limit_hit = true;
            return false;
        }
        true
    }

    /// A pcre at step `i`: on a match the next keywords run after it; when they fail and
    /// `retry`, the regex is tried again one byte after the previous match's start.
    ///
    /// A PCRE2 limit hit is a no match, as in Suricata, and ends the whole inspection: a retry
    /// one byte later would run the same runaway backtracking again (that is how
    /// `content:"a"; pcre:"/(a+)+$/R"` cost seconds per packet).
    fn pcre(&mut self, program: &Program, i: usize, p: &PcreOp, retry: bool) -> Outcome {
        let start = if p.relative { self.offset } else { 0 };
        let mut from = start;
        loop {
            if from > self.buf.len() {
                return Outcome::NoMatch;
            }
            // Like Suricata, the subject starts at the search position, so `^`
            // anchors there for relative pcre.
            let Some(subject) = self.buf.get(from..) else { return Outcome::NoMatch };
            let found = match p.regex.get().find(subject) {
                Ok(m) => m.map(|m| (from + m.start(), from + m.end())),
                Err(e) if PCRE2_LIMIT_ERRORS.contains(&e.code()) => {
                    self.pcre_limit_hits = self.pcre_limit_hits.saturating_add(1);
                    return Outcome::Discontinue;
                }
                // Any other match error (none is expected) is a no match too.
                Err(_) => None,
            };
            match (found, p.negated) {
                (None, false) => return Outcome::NoMatch,
                (None, true) => return self.next(program, i),
                (Some(_), true) => return Outcome::NoMatch,
                (Some((s, e)), false) => {
                    self.offset = e;
                    match self.next(program, i) {
                        Outcome::Match => return Outcome::Match,
                        Outcome::Discontinue => return Outcome::Discontinue,
                        Outcome::NoMatch if retry => from = s + 1,
                        Outcome::NoMatch => return Outcome::NoMatch,
                    }
                }
            }
        }
    }

    /// Where a `byte_jump` lands, if inside the buffer (its end included).
    fn jump_target(&self, read: &ByteRead, jump: Jump) -> Option<usize> {
        let (val, end_of_read) = self.read_value(read)?;
        let val = scale_and_align(val, jump.multiplier, if jump.align { 4 } else { 0 })?;
        let len = self.buf.len() as i64;
        let val = i64::try_from(val).ok()?;
        let base = if jump.from_beginning {
            0
        } else if jump.from_end {
            len
        } else {
            end_of_read as i64
        };
        let target = base.saturating_add(val).saturating_add(jump.post_offset);
        (0..=len).contains(&target).then_some(target as usize)
    }

    /// `base64_decode`: Suricata decodes from the start (or the previous match), skips
    /// `offset`, takes at most `bytes`, and needs at least one decoded byte. With `base64_data`
    /// keywords their match ends the inspection (a terminal list); without, the following
    /// keywords continue on this buffer.
    fn base64_decode(
        &mut self,
        program: &Program,
        i: usize,
        bytes: u32,
        offset: u32,
        relative: bool,
        data: Option<&Program>,
    ) -> Outcome {
        let buf = self.buf;
        let start = if relative { self.offset.min(buf.len()) } else { 0 };
        let rest = &buf[start..];
        let skip = offset as usize;
        if skip > 0 && skip >= rest.len() {
            return Outcome::NoMatch;
        }
        let rest = &rest[skip..];
        let encoded = &rest[..rest.len().min(bytes as usize)];
        let Some(scratch) = self.decode_scratch.as_deref_mut() else { return Outcome::NoMatch };
        if !super::transform::decode_base64(crate::detect::rule::Base64Mode::Rfc4648, encoded, scratch) {
            return Outcome::NoMatch;
        }
        let Some(data_program) = data else { return self.next(program, i) };
        let mut decoded = Inspection::new(scratch, 0);
        decoded.steps = self.steps;
        decoded.step_limit = self.step_limit;
        let matched = decoded.run(data_program);
        let (steps, limit_hit, pcre_hits) = (decoded.steps, decoded.limit_hit, decoded.pcre_limit_hits);
        self.steps = steps;
        self.limit_hit |= limit_hit;
        self.pcre_limit_hits = self.pcre_limit_hits.saturating_add(pcre_hits);
        if limit_hit || pcre_hits > 0 {
            Outcome::Discontinue
        } else if matched {
            Outcome::Match
        } else {
            Outcome::NoMatch
        }
    }

    /// Reads the number a byte_* keyword refers to: (value after bitmask, offset after the bytes).
    fn read_value(&self, read: &ByteRead) -> Option<(u64, usize)> {
        let nbytes = read.bytes.position(&self.vars)?;
        let max = if read.string.is_some() { 23 } else { 8 };
        // A byte count taken from a variable may be 0: like Suricata, a binary read of
        // zero bytes yields the value 0 (a string read of nothing fails).
        let min = if read.string.is_some() { 1 } else { 0 };
        if nbytes < min || nbytes > max {
            return None;
        }
        let base = if read.relative { self.offset as i64 } else { 0 };
        let start = base.checked_add(read.offset.position(&self.vars)?)?;
        if start < 0 {
            return None;
        }
        let start = start as usize;
        let end = start.checked_add(nbytes as usize)?;
        let bytes = self.buf.get(start..end)?;
        let mut val = match read.string {
            Some(b) => parse_number(bytes, b)?,
            None => {
                let mut v: u64 = 0;
                if read.little_endian {
                    for &b in bytes.iter().rev() {
                        v = (v << 8) | b as u64;
                    }
                } else {
                    for &b in bytes {
                        v = (v << 8) | b as u64;
                    }
                }
                v
            }
        };
        if let Some(mask) = read.bitmask {
            val &= mask as u64;
            if mask != 0 {
                val >>= mask.trailing_zeros();
            }
        }
        Some((val, end))
    }

    /// The window `[offset, depth)` a content searches on its first attempt, from its
    /// modifiers and the previous match. `Err(())`: a variable modifier is out of range, so
    /// the content cannot match; `Ok(None)`: the window lies wholly before this stream chunk.
    /// Every sum is saturating: rule numbers are `i64`, variables at most
    /// [`super::program::MAX_VAR_POSITION`].
    fn content_window(&self, c: &ContentOp, prev: i64) -> Result<Option<(i64, i64)>, ()> {
        let pos = |v: Option<Val>| -> Result<Option<i64>, ()> {
            match v {
                None => Ok(None),
                Some(v) => v.position(&self.vars).map(Some).ok_or(()),
            }
        };
        let mut depth = self.buf.len() as i64;
        let mut offset: i64;
        if c.is_relative() {
            offset = prev;
            let distance = pos(c.distance)?;
            if let Some(d) = distance {
                offset = offset.saturating_add(d).max(0);
            }
            if let Some(w) = pos(c.within)? {
                let bound = prev.saturating_add(w).saturating_add(distance.unwrap_or(0));
                depth = depth.min(bound);
                if self.stream_start != 0 && prev == 0 {
                    match self.clip_depth_to_stream(depth) {
                        Some(d) => depth = d,
                        None => return Ok(None),
                    }
                }
            }
            if let Some(d) = pos(c.depth)? {
                depth = depth.min(prev.saturating_add(d));
            }
            if let Some(o) = pos(c.offset)? {
                offset = offset.max(o);
            }
        } else {
            if let Some(mut d) = pos(c.depth)? {
                // Two numbers were summed when the rule compiled (depth counts from offset);
                // with a variable on either side the sum happens here, as in Suricata.
                if matches!((c.depth, c.offset), (Some(Val::Var(_)), Some(_)) | (Some(_), Some(Val::Var(_)))) {
                    d = d.saturating_add(pos(c.offset)?.unwrap_or(0));
                }
                depth = d;
                if self.stream_start != 0 {
                    match self.clip_depth_to_stream(depth) {
                        Some(d) => depth = d,
                        None => return Ok(None),
                    }
                }
            }
            offset = pos(c.offset)?.unwrap_or(0);
        }
        Ok(Some((offset, depth)))
    }

    fn content(&mut self, program: &Program, i: usize, c: &ContentOp, retry: bool) -> Outcome {
        let buf_len = self.buf.len() as i64;
        let prev_buffer_offset = self.offset as i64;
        let relative = c.is_relative();
        // Start of the next attempt once an occurrence was tried (0 = first attempt).
        let mut retry_from: i64 = 0;
        loop {
            let (mut offset, mut depth) = match self.content_window(c, prev_buffer_offset) {
                Ok(Some(window)) => window,
                Ok(None) => return Outcome::NoMatch,
                // Out of range: no match, negated or not (the keyword cannot be evaluated).
                Err(()) => return Outcome::NoMatch,
            };
            if retry_from != 0 {
                offset = retry_from;
            }
            depth = depth.min(buf_len);
            if offset < 0 || offset > depth || depth <= 0 {
                return if c.negated { self.next(program, i) } else { Outcome::NoMatch };
            }
            let Some(window) = self.buf.get(offset as usize..depth as usize) else { return Outcome::NoMatch };
            let found = if (c.endswith && depth < buf_len) || c.needle.bytes.len() > window.len() {
                None
            } else {
                c.needle.find(window)
            };
            let Some(pos) = found else {
                if c.negated {
                    return self.next(program, i);
                }
                return if relative { Outcome::NoMatch } else { Outcome::Discontinue };
            };
            let match_end = offset as usize + pos + c.needle.bytes.len();
            if c.negated {
                if c.endswith && match_end != self.buf.len() {
                    return self.next(program, i);
                }
                return if !relative && !retry { Outcome::Discontinue } else { Outcome::NoMatch };
            }
            self.offset = match_end;
            if !c.endswith || match_end == self.buf.len() {
                match self.next(program, i) {
                    Outcome::Match => return Outcome::Match,
                    Outcome::Discontinue => return Outcome::Discontinue,
                    Outcome::NoMatch if !retry => return Outcome::Discontinue,
                    Outcome::NoMatch => {}
                }
            }
            if !self.count_step() {
                return Outcome::Discontinue;
            }
            retry_from = (match_end - (c.needle.bytes.len() - 1)) as i64;
            // The next attempt resumes after this occurrence's first byte.
            self.offset = prev_buffer_offset as usize;
        }
    }

    /// Stream inspection: `depth` of a first content counts from the start of the stream,
    /// not of this chunk. `None`: the whole depth lies before the chunk.
    fn clip_depth_to_stream(&self, depth: i64) -> Option<i64> {
        let start = self.stream_start.min(i64::MAX as u64) as i64;
        if depth <= start {
            None
        } else if depth >= start + self.buf.len() as i64 {
            Some(depth)
        } else {
            Some(depth - start)
        }
    }
}

/// ASCII number in `base`: leading digits only (at least one), like strtoull.
fn parse_number(bytes: &[u8], base: NumBase) -> Option<u64> {
    let radix = match base {
        NumBase::Hex => 16,
        NumBase::Dec => 10,
        NumBase::Oct => 8,
    };
    let mut val: u64 = 0;
    let mut digits = 0;
    for &b in bytes {
        let Some(d) = (b as char).to_digit(radix) else { break };
        val = val.checked_mul(radix as u64)?.checked_add(d as u64)?;
        digits += 1;
    }
    (digits > 0).then_some(val)
}
