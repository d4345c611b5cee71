//! Splits a rule into its header and its `keyword[: value];` options, and a rules file into
//! its rules.
//!
//! The option syntax is Suricata's, strictly: every option, the last one included, ends with a
//! `;` that is not preceded by a backslash, whatever quotes surround it (Suricata splits options
//! the same way, before it looks at quotes). A value that opens a double quote must close it at
//! its end, and may hold no other unescaped quote: a missing `;` or `"` then fails the rule
//! instead of swallowing the options after it into one value (a rule whose `content` vanished
//! into its `msg` would load and fire on everything).

use super::error::RuleError;

/// One option as written: keyword and the raw (trimmed, still quoted/escaped) value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawOption<'a> {
    pub keyword: &'a str,
    pub value: Option<&'a str>,
}

/// Splits `header (options)` and tokenizes the options in order.
pub fn split_rule(text: &str) -> Result<(&str, Vec<RawOption<'_>>), RuleError> {
    let open = text.find('(').ok_or(RuleError::MissingOpenParen)?;
    let trimmed_end = text.trim_end();
    if !trimmed_end.ends_with(')') {
        return Err(RuleError::MissingCloseParen);
    }
    let close = trimmed_end.len() - 1;
    if close <= open {
        return Err(RuleError::NoOptions);
    }
    let header = &text[..open];
    let options = tokenize_options(&text[open + 1..close])?;
    Ok((header, options))
}

fn tokenize_options(body: &str) -> Result<Vec<RawOption<'_>>, RuleError> {
    let mut options = Vec::with_capacity(16);
    let mut rest = body;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let end = option_end(rest).ok_or_else(|| RuleError::MissingSemicolon { option: snippet(rest).to_string() })?;
        let option = &rest[..end];
        rest = &rest[end + 1..];
        let (keyword, value) = match option.split_once(':') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (option.trim(), None),
        };
        if keyword.is_empty() {
            return Err(RuleError::EmptyKeyword { near: snippet(option).to_string() });
        }
        if !keyword.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')) {
            return Err(RuleError::BadKeyword { keyword: snippet(keyword).to_string() });
        }
        if let Some(value) = value {
            if value.is_empty() {
                return Err(RuleError::EmptyValue { keyword: keyword.to_string() });
            }
            check_quotes(keyword, value)?;
        }
        options.push(RawOption { keyword, value });
    }
    Ok(options)
}

/// Where the option starting `text` ends: its first `;` not preceded by a backslash (quotes
/// do not matter, as in Suricata), or `None` when it has no terminating `;`.
fn option_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = 0;
    loop {
        let at = from + bytes[from..].iter().position(|&b| b == b';')?;
        if at > 0 && bytes[at - 1] == b'\\' {
            from = at + 1;
        } else {
            return Some(at);
        }
    }
}

/// A value that opens a double quote (after an optional `!`) must close it with its last
/// character, and hold no unescaped quote in between. `pcre` is the exception on both counts:
/// its regex may contain a bare `"`, and picket takes capture variables after the closing quote
/// (`pcre:"/(a)/", pkt:x`), so it only needs some closing quote.
fn check_quotes(keyword: &str, value: &str) -> Result<(), RuleError> {
    let unquoted = value.strip_prefix('!').map_or(value, str::trim_start);
    let Some(inside) = unquoted.strip_prefix('"') else { return Ok(()) };
    let quotes: Vec<usize> = unescaped_quotes(inside).collect();
    let unterminated = || RuleError::UnterminatedQuote { keyword: keyword.to_string() };
    if keyword == "pcre" {
        return if quotes.is_empty() { Err(unterminated()) } else { Ok(()) };
    }
    match quotes.as_slice() {
        [] => Err(unterminated()),
        [.., last] if *last + 1 != inside.len() => Err(unterminated()),
        [first, _, ..] => {
            Err(RuleError::StrayQuote { keyword: keyword.to_string(), after: snippet(&inside[..*first]).to_string() })
        }
        _ => Ok(()),
    }
}

/// Byte offsets of the double quotes in `text` that no backslash escapes (`\\"` is an escaped
/// backslash before a real quote).
fn unescaped_quotes(text: &str) -> impl Iterator<Item = usize> + '_ {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let at = i;
            i += 1;
            match bytes[at] {
                b'\\' => i += 1,
                b'"' => return Some(at),
                _ => {}
            }
        }
        None
    })
}

fn snippet(s: &str) -> &str {
    match s.char_indices().nth(40) {
        Some((idx, _)) => &s[..idx],
        None => s,
    }
}

/// The text between surrounding double quotes, or `None` when the value is not quoted.
pub fn strip_quotes(value: &str) -> Option<&str> {
    let v = value.trim();
    if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
        Some(&v[1..v.len() - 1])
    } else {
        None
    }
}

/// Unquotes when quoted, else returns the trimmed value.
pub fn unquote_lenient(value: &str) -> &str {
    strip_quotes(value).unwrap_or_else(|| value.trim())
}

/// Removes the rule-language escapes `\"`, `\;`, `\\`, `\:`; other backslashes stay as written
/// (they belong to the value's own syntax, e.g. a regex).
pub fn unescape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(&next) = chars.peek() {
                if matches!(next, '"' | ';' | '\\' | ':') {
                    out.push(next);
                    chars.next();
                    continue;
                }
            }
        }
        out.push(c);
    }
    out
}

/// One rule of a rules file: its first line (1-based) and its text with continuation lines
/// joined, or why the text is unusable (invalid UTF-8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleLine {
    pub line: usize,
    pub text: Result<String, RuleError>,
}

/// Splits the bytes of a rules file into rules: skips blank lines and `#` comments, joins
/// lines that end with a backslash. The file is read as bytes and each line decoded on its
/// own: a line that is not UTF-8 makes its rule an error naming the line and column, and
/// nothing is decoded lossily (a replaced byte would make a rule that never matches what its
/// author wrote). A comment line is skipped whatever its bytes.
pub fn rule_lines_bytes(bytes: &[u8]) -> Vec<RuleLine> {
    rule_lines_from(bytes, 1)
}

/// [`rule_lines_bytes`] of a piece of a file ([`split_rule_file`]) whose first line is line
/// `first_line` of the file.
pub fn rule_lines_from(bytes: &[u8], first_line: usize) -> Vec<RuleLine> {
    let mut out = Vec::new();
    let mut pending: Option<RuleLine> = None;
    let mut lines = bytes.split(|&b| b == b'\n').enumerate().peekable();
    while let Some((idx, raw_line)) = lines.next() {
        // A final newline ends the last line; it does not start an empty one.
        if raw_line.is_empty() && lines.peek().is_none() {
            break;
        }
        let line_no = idx + first_line;
        let Some((content, continues)) = rule_part(raw_line, pending.is_some()) else { continue };
        let decoded = std::str::from_utf8(content).map_err(|e| RuleError::InvalidUtf8 {
            line: line_no,
            column: e.valid_up_to() + 1,
            byte: content[e.valid_up_to()],
        });
        let rule = pending.get_or_insert_with(|| RuleLine { line: line_no, text: Ok(String::new()) });
        match (&mut rule.text, decoded) {
            (Ok(buf), Ok(text)) => buf.push_str(text),
            (Ok(_), Err(e)) => rule.text = Err(e),
            // The first bad line of a rule is the one reported.
            (Err(_), _) => {}
        }
        if !continues {
            out.extend(pending.take());
        }
    }
    // A file ending in a continuation still yields its (probably broken) rule for an error.
    out.extend(pending);
    out
}

/// What one physical line (without its newline) adds to a rule: `None` for a blank or
/// comment line outside a rule (skipped whatever its bytes), else the bytes it contributes
/// (without a trailing `\r`, and without the backslash of a continued line) and whether the
/// rule continues on the next line. `inside_rule`: a previous line continued.
fn rule_part(raw_line: &[u8], inside_rule: bool) -> Option<(&[u8], bool)> {
    let line = raw_line.strip_suffix(b"\r").unwrap_or(raw_line);
    if !inside_rule {
        let trimmed = line.trim_ascii_start();
        if trimmed.is_empty() || trimmed.starts_with(b"#") {
            return None;
        }
    }
    Some(match line.trim_ascii_end().strip_suffix(b"\\") {
        Some(body) => (body, true),
        None => (line, false),
    })
}

/// A piece of a rules file that lexes on its own: it starts and ends between rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RulePiece {
    /// The file's line number of the piece's first line.
    pub first_line: usize,
    /// Where the piece is in the file's bytes.
    pub bytes: std::ops::Range<usize>,
    /// Rules (lines that are not blank or comments, with their continuation lines) in it.
    pub rules: usize,
}

/// Cuts a rules file into pieces of about `piece_bytes` that [`rule_lines_from`] lexes on
/// their own into what [`rule_lines_bytes`] makes of the whole file: a cut falls only after a
/// newline that ends a rule (or a blank or comment line), never inside a rule continued with
/// a backslash (the lexer's own decision, `rule_part`). Decodes nothing, so that the
/// lexing and decoding itself can be done piece by piece on several threads.
pub fn split_rule_file(bytes: &[u8], piece_bytes: usize) -> Vec<RulePiece> {
    let mut pieces = Vec::new();
    let mut piece = RulePiece { first_line: 1, bytes: 0..0, rules: 0 };
    let mut continued = false;
    let mut start = 0;
    let mut line_no = 1;
    while start < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        if let Some((_, continues)) = rule_part(&bytes[start..end], continued) {
            piece.rules += usize::from(!continued);
            continued = continues;
        }
        start = (end + 1).min(bytes.len());
        line_no += 1;
        if !continued && start - piece.bytes.start >= piece_bytes.max(1) {
            piece.bytes.end = start;
            let next = RulePiece { first_line: line_no, bytes: start..start, rules: 0 };
            pieces.push(std::mem::replace(&mut piece, next));
        }
    }
    if start > piece.bytes.start {
        piece.bytes.end = start;
        pieces.push(piece);
    }
    pieces
}

/// [`rule_lines_bytes`] for text already decoded (config files): (first line, text) pairs.
pub fn rule_lines(text: &str) -> Vec<(usize, String)> {
    // Valid UTF-8 split at newlines stays valid: no line can fail.
    rule_lines_bytes(text.as_bytes()).into_iter().filter_map(|r| Some((r.line, r.text.ok()?))).collect()
}
