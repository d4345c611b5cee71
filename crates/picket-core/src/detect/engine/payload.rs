//! Payload keyword evaluation over one buffer, with Suricata's semantics: every keyword
//! positions itself (absolute or relative to the previous match), and when a later keyword
//! fails, an earlier content/pcre is retried at its next occurrence ("backtracking") as long
//! as the failing keyword depended on its position. A step budget bounds the work.

use super::program::{ByteRead, ContentOp, PayloadOp, PcreOp, Program, MAX_VARS};
use crate::detect::rule::options::{ByteMathOp, NumBase};

/// Suricata's default `detect.inspection-recursion-limit`.
pub(crate) const RECURSION_LIMIT: u32 = 3000;

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
    pub limit_hit: bool,
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

/// `byte_math`'s operation; `None` for a division by zero (no match).
fn byte_math(op: ByteMathOp, val: u64, r: u64) -> Option<u64> {
    Some(match op {
        ByteMathOp::Add => val.wrapping_add(r),
        ByteMathOp::Sub => val.wrapping_sub(r),
        ByteMathOp::Mul => val.wrapping_mul(r),
        ByteMathOp::Div => val.checked_div(r)?,
        ByteMathOp::Shl => val.checked_shl(r as u32).unwrap_or(0),
        ByteMathOp::Shr => val.checked_shr(r as u32).unwrap_or(0),
    })
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
            limit_hit: false,
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
        self.steps += 1;
        if self.steps >= RECURSION_LIMIT {
            self.limit_hit = true;
            return Outcome::Discontinue;
        }
        let Some(step) = program.steps.get(i) else { return Outcome::Match };
        match &step.op {
            PayloadOp::Content(c) => self.content(program, i, c, step.retry_on_next_failure),
            PayloadOp::Pcre(p) => self.pcre(program, i, p, step.retry_on_next_failure),
            PayloadOp::Isdataat { negated, offset, relative } => {
                let n = offset.get(&self.vars);
                let present = if *relative {
                    n >= 0 && (self.offset as i64).saturating_add(n) <= self.buf.len() as i64
                } else {
                    n >= 0 && n < self.buf.len() as i64
                };
                if present != *negated {
                    self.next(program, i)
                } else {
                    Outcome::NoMatch
                }
            }
            PayloadOp::ByteTest { read, op, value, negated } => {
                let Some((val, _)) = self.read_value(read) else { return Outcome::NoMatch };
                let target = value.get(&self.vars) as u64;
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
                let Some((mut val, end_of_read)) = self.read_value(read) else { return Outcome::NoMatch };
                val = val.wrapping_mul(*multiplier as u64);
                if *align > 1 {
                    let a = *align as u64;
                    if val % a != 0 {
                        val += a - val % a;
                    }
                }
                self.vars[*var as usize] = val;
                self.offset = end_of_read;
                self.next(program, i)
            }
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
                let Some(result) = byte_math(*op, val, rvalue.get(&self.vars) as u64) else {
                    return Outcome::NoMatch;
                };
                self.vars[*var as usize] = result;
                self.next(program, i)
            }
        }
    }

    /// A pcre at step `i`: on a match the next keywords run after it; when they fail and
    /// `retry`, the regex is tried again one byte after the previous match's start.
    fn pcre(&mut self, program: &Program, i: usize, p: &PcreOp, retry: bool) -> Outcome {
        let start = if p.relative { self.offset } else { 0 };
        let mut from = start;
        loop {
            if from > self.buf.len() {
                return Outcome::NoMatch;
            }
            // Like Suricata, the subject starts at the search position, so `^`
            // anchors there for relative pcre.
            let found = match p.regex.find(&self.buf[from..]) {
                Ok(m) => m.map(|m| (from + m.start(), from + m.end())),
                // Match-limit errors count as no match, like Suricata.
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
        let (mut val, end_of_read) = self.read_value(read)?;
        val = val.wrapping_mul(jump.multiplier as u64);
        if jump.align && val % 4 != 0 {
            val += 4 - val % 4;
        }
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
        let matched = decoded.run(data_program);
        let (steps, limit_hit) = (decoded.steps, decoded.limit_hit);
        self.steps = steps;
        self.limit_hit |= limit_hit;
        if limit_hit {
            Outcome::Discontinue
        } else if matched {
            Outcome::Match
        } else {
            Outcome::NoMatch
        }
    }

    /// Reads the number a byte_* keyword refers to: (value after bitmask, offset after the bytes).
    fn read_value(&self, read: &ByteRead) -> Option<(u64, usize)> {
        let nbytes = read.bytes.get(&self.vars);
        let max = if read.string.is_some() { 23 } else { 8 };
        // A byte count taken from a variable may be 0: like Suricata, a binary read of
        // zero bytes yields the value 0 (a string read of nothing fails).
        let min = if read.string.is_some() { 1 } else { 0 };
        if nbytes < min || nbytes > max {
            return None;
        }
        let base = if read.relative { self.offset as i64 } else { 0 };
        let start = base.checked_add(read.offset.get(&self.vars))?;
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

    fn content(&mut self, program: &Program, i: usize, c: &ContentOp, retry: bool) -> Outcome {
        let buf_len = self.buf.len() as i64;
        let prev_buffer_offset = self.offset as i64;
        let relative = c.is_relative();
        // Start of the next attempt once an occurrence was tried (0 = first attempt).
        let mut retry_from: i64 = 0;
        loop {
            let mut depth = buf_len;
            let mut offset: i64;
            if relative {
                offset = prev_buffer_offset;
                let distance = c.distance.map(|d| d.get(&self.vars)).unwrap_or(0);
                if c.distance.is_some() {
                    offset = (offset + distance).max(0);
                }
                if let Some(w) = c.within {
                    let bound = prev_buffer_offset + w.get(&self.vars) + distance;
                    depth = depth.min(bound);
                    if self.stream_start != 0 && prev_buffer_offset == 0 {
                        match self.clip_depth_to_stream(depth) {
                            Some(d) => depth = d,
                            None => return Outcome::NoMatch,
                        }
                    }
                }
                if let Some(d) = c.depth {
                    depth = depth.min(prev_buffer_offset + d.get(&self.vars));
                }
                if let Some(o) = c.offset {
                    offset = offset.max(o.get(&self.vars));
                }
            } else {
                if let Some(d) = c.depth {
                    depth = d.get(&self.vars);
                    if self.stream_start != 0 {
                        match self.clip_depth_to_stream(depth) {
                            Some(d) => depth = d,
                            None => return Outcome::NoMatch,
                        }
                    }
                }
                offset = c.offset.map(|o| o.get(&self.vars)).unwrap_or(0);
            }
            if retry_from != 0 {
                offset = retry_from;
            }
            depth = depth.min(buf_len);
            if offset > depth || depth <= 0 {
                return if c.negated { self.next(program, i) } else { Outcome::NoMatch };
            }
            let window = &self.buf[offset as usize..depth as usize];
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
            self.steps += 1;
            if self.steps >= RECURSION_LIMIT {
                self.limit_hit = true;
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
