//! Request-target splitting and normalisation (what `http.uri` and `http.host` show).
//!
//! Normalisation follows libhtp's defaults as Suricata configures them: the path is
//! percent-decoded (invalid escapes kept as they are, `%u` not decoded, `+` kept), `//` runs
//! are compressed and `.`/`..` segments removed; the query is percent-decoded the same way
//! (as Suricata 8's libhtp does; older libhtp decoded only unreserved characters there).
//! Backslashes and case are left alone.

/// The parts of a request target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedUri {
    pub scheme: Option<Vec<u8>>,
    /// Host from an absolute URI or CONNECT authority, as written.
    pub host: Option<Vec<u8>>,
    pub port: Option<Vec<u8>>,
    pub path: Vec<u8>,
    pub query: Option<Vec<u8>>,
    pub fragment: Option<Vec<u8>>,
}

pub fn parse_request_target(target: &[u8], is_connect: bool) -> ParsedUri {
    let mut uri = ParsedUri::default();
    // A CONNECT target in origin form ("CONNECT / HTTP/1.1") names no host: parse it as a path.
    if is_connect && target.first() != Some(&b'/') {
        let (host, port) = split_host_port(target);
        uri.host = Some(host.to_vec());
        uri.port = port.map(<[u8]>::to_vec);
        return uri;
    }
    let mut rest = target;
    // Absolute form: scheme "://" authority path.
    if rest.first() != Some(&b'/') {
        if let Some(colon) = rest.iter().position(|&b| b == b':') {
            let scheme = &rest[..colon];
            if !scheme.is_empty()
                && scheme.iter().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b))
                && rest[colon + 1..].starts_with(b"//")
            {
                uri.scheme = Some(scheme.to_vec());
                let after = &rest[colon + 3..];
                let auth_end = after.iter().position(|b| b"/?#".contains(b)).unwrap_or(after.len());
                let mut authority = &after[..auth_end];
                if let Some(at) = authority.iter().rposition(|&b| b == b'@') {
                    authority = &authority[at + 1..];
                }
                let (host, port) = split_host_port(authority);
                uri.host = Some(host.to_vec());
                uri.port = port.map(<[u8]>::to_vec);
                rest = &after[auth_end..];
            }
        }
    }
    let (before_fragment, fragment) = match rest.iter().position(|&b| b == b'#') {
        Some(i) => (&rest[..i], Some(rest[i + 1..].to_vec())),
        None => (rest, None),
    };
    let (path, query) = match before_fragment.iter().position(|&b| b == b'?') {
        Some(i) => (&before_fragment[..i], Some(before_fragment[i + 1..].to_vec())),
        None => (before_fragment, None),
    };
    uri.path = path.to_vec();
    uri.query = query;
    uri.fragment = fragment;
    uri
}

/// Splits "host:port" / "[v6]:port".
pub fn split_host_port(authority: &[u8]) -> (&[u8], Option<&[u8]>) {
    let authority = trim(authority);
    if authority.first() == Some(&b'[') {
        if let Some(close) = authority.iter().position(|&b| b == b']') {
            let host = &authority[..=close];
            let rest = &authority[close + 1..];
            return (host, rest.strip_prefix(b":"));
        }
        return (authority, None);
    }
    match authority.iter().rposition(|&b| b == b':') {
        Some(i) => (&authority[..i], Some(&authority[i + 1..])),
        None => (authority, None),
    }
}

/// Lowercase host without port, surrounding whitespace or a trailing dot.
pub fn normalize_host(raw: &[u8]) -> Vec<u8> {
    let (host, _) = split_host_port(raw);
    let mut host = trim(host);
    while let Some(stripped) = host.strip_suffix(b".") {
        host = stripped;
    }
    host.to_ascii_lowercase()
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes every valid `%XX`; other bytes (and invalid escapes) are copied.
fn percent_decode(input: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < input.len() {
        let b = input[i];
        if b == b'%' {
            if let (Some(h), Some(l)) =
                (input.get(i + 1).and_then(|&c| hex_value(c)), input.get(i + 2).and_then(|&c| hex_value(c)))
            {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
}

/// RFC 3986 remove_dot_segments plus compression of repeated slashes.
fn normalize_path(decoded: &[u8]) -> Vec<u8> {
    let absolute = decoded.first() == Some(&b'/');
    let trailing_slash =
        decoded.len() > 1 && decoded.ends_with(b"/") || decoded.ends_with(b"/.") || decoded.ends_with(b"/..");
    let mut segments: Vec<&[u8]> = Vec::new();
    for segment in decoded.split(|&b| b == b'/') {
        match segment {
            b"" | b"." => {}
            b".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    let mut out = Vec::with_capacity(decoded.len());
    if absolute {
        out.push(b'/');
    }
    for (i, s) in segments.iter().enumerate() {
        if i > 0 {
            out.push(b'/');
        }
        out.extend_from_slice(s);
    }
    if trailing_slash && !segments.is_empty() {
        out.push(b'/');
    }
    out
}

/// The normalised path alone (libhtp's parsed path: what names a file of the request).
pub fn normalized_path(uri: &ParsedUri) -> Vec<u8> {
    let mut decoded = Vec::with_capacity(uri.path.len());
    percent_decode(&uri.path, &mut decoded);
    if decoded.is_empty() {
        Vec::new()
    } else {
        normalize_path(&decoded)
    }
}

/// The normalised URI (`http.uri`): normalised path, then `?query` and `#fragment`.
pub fn normalize_uri(uri: &ParsedUri) -> Vec<u8> {
    let mut out = normalized_path(uri);
    if let Some(query) = &uri.query {
        out.push(b'?');
        percent_decode(query, &mut out);
    }
    if let Some(fragment) = &uri.fragment {
        out.push(b'#');
        out.extend_from_slice(fragment);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(target: &[u8]) -> Vec<u8> {
        normalize_uri(&parse_request_target(target, false))
    }

    #[test]
    fn path_is_decoded_and_dot_segments_removed() {
        assert_eq!(norm(b"/a/./b/../c//d%2e%2E/e"), b"/a/c/d../e");
        assert_eq!(norm(b"/%61%62c/%2e%2e/x"), b"/x");
        assert_eq!(norm(b"/a/b/"), b"/a/b/");
        assert_eq!(norm(b"/a/.."), b"/");
        assert_eq!(norm(b"/bad%zzescape%4"), b"/bad%zzescape%4");
        assert_eq!(norm(b"/"), b"/");
        assert_eq!(norm(b"/a\\b"), b"/a\\b");
    }

    #[test]
    fn query_is_percent_decoded_like_the_path() {
        // As Suricata 8's libhtp: every valid escape of the query is decoded, invalid ones
        // and `+` are kept.
        assert_eq!(norm(b"/p?a=%41%3D%2f&b=c d&e=%zz+%7D"), b"/p?a=A=/&b=c d&e=%zz+}");
    }

    #[test]
    fn absolute_form_and_host_normalisation() {
        let uri = parse_request_target(b"http://User@Example.COM:8080/x?y#z", false);
        assert_eq!(uri.host.as_deref(), Some(&b"Example.COM"[..]));
        assert_eq!(uri.port.as_deref(), Some(&b"8080"[..]));
        assert_eq!(uri.path, b"/x");
        assert_eq!(normalize_uri(&uri), b"/x?y#z");
        assert_eq!(normalize_host(b" WWW.Example.com.:80 "), b"www.example.com");
        assert_eq!(normalize_host(b"[::1]:443"), b"[::1]");
        let connect = parse_request_target(b"host.example:443", true);
        assert_eq!(connect.host.as_deref(), Some(&b"host.example"[..]));
    }
}
