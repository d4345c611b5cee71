//! Splits a rule into its header and its `keyword[: value];` options, and a rules file into
//! its rules.

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
    let bytes = body.as_bytes();
    let mut options = Vec::with_capacity(16);
    let mut i = 0;
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= bytes.len() {
            break;
        }
        let kw_start = i;
        while i < bytes.len() && bytes[i] != b':' && bytes[i] != b';' {
            i += 1;
        }
        let keyword = body[kw_start..i].trim();
        if keyword.is_empty() {
            return Err(RuleError::EmptyKeyword { near: snippet(&body[kw_start..]).to_string() });
        }
        if !keyword.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')) {
            return Err(RuleError::BadKeyword { keyword: snippet(keyword).to_string() });
        }
        if i >= bytes.len() {
            // Last option without a terminating ';' and without value: accept, as Suricata does.
            options.push(RawOption { keyword, value: None });
            break;
        }
        if bytes[i] == b';' {
            options.push(RawOption { keyword, value: None });
            i += 1;
            continue;
        }
        // bytes[i] == ':'
        i += 1;
        let value_start = i;
        let value_end = find_value_end(bytes, value_start);
        let value = body[value_start..value_end].trim();
        if value.is_empty() {
            return Err(RuleError::EmptyValue { keyword: keyword.to_string() });
        }
        options.push(RawOption { keyword, value: Some(value) });
        i = value_end + 1; // skip ';' (or step past the end)
    }
    Ok(options)
}

/// End of a value: the first `;` that is neither escaped nor inside double quotes. When the
/// quotes do not balance (a stray `"` in a pcre, say), fall back to the first unescaped `;`,
/// which is how Suricata itself delimits options.
fn find_value_end(bytes: &[u8], start: usize) -> usize {
    let mut in_quote = false;
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'"' => in_quote = !in_quote,
            b';' if !in_quote => return i,
            _ => {}
        }
        i += 1;
    }
    if in_quote {
        let mut i = start;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 1,
                b';' => return i,
                _ => {}
            }
            i += 1;
        }
    }
    bytes.len()
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

/// Yields (first line number, rule text): skips blank lines and `#` comments, joins lines that
/// end with a backslash.
pub fn rule_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (idx, raw_line) in text.lines().enumerate() {
        let line_no = idx + 1;
        let line = raw_line.trim_end_matches('\r');
        if pending.is_none() {
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
        }
        let trimmed_end = line.trim_end();
        let (content, continues) = match trimmed_end.strip_suffix('\\') {
            Some(body) => (body, true),
            None => (line, false),
        };
        match pending.as_mut() {
            Some((_, buf)) => buf.push_str(content),
            None => pending = Some((line_no, content.to_string())),
        }
        if !continues {
            if let Some(done) = pending.take() {
                out.push(done);
            }
        }
    }
    // A file ending in a continuation still yields its (probably broken) rule for an error.
    if let Some(done) = pending {
        out.push(done);
    }
    out
}
