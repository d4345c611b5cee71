use super::*;

/// Runs a request and response stream through a parser, `step` bytes at a time.
fn run(req: &[u8], resp: &[u8], step: usize, cfg: HttpConfig) -> (HttpParser, Vec<HttpEvent>) {
    let mut p = HttpParser::new(cfg);
    let mut events = Vec::new();
    let mut push = |e| events.push(e);
    for c in req.chunks(step.max(1)) {
        p.on_data(Direction::ToServer, c, &mut push);
    }
    for c in resp.chunks(step.max(1)) {
        p.on_data(Direction::ToClient, c, &mut push);
    }
    p.on_close(&mut push);
    (p, events)
}

/// Corpus check against the http-evader captures: set PICKET_HTTP_EVADER to a folder of
/// NNN.req / NNN.resp stream dumps.
#[test]
#[ignore]
fn evader_corpus() {
    let Ok(dir) = std::env::var("PICKET_HTTP_EVADER") else {
        return;
    };
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "resp"))
        .collect();
    names.sort();
    let mut fails = 0;
    for resp_path in &names {
        let resp = std::fs::read(resp_path).unwrap();
        let req = std::fs::read(resp_path.with_extension("req")).unwrap_or_default();
        for step in [usize::MAX, 1] {
            let (p, _) = run(&req, &resp, step, HttpConfig { decompress_layer_limit: 3, ..HttpConfig::default() });
            let found = p.txs().any(|t| {
                let b = &t.response_body;
                b.windows(11).any(|w| w == b"X5O!P%@AP[4")
                    && b.windows(34).any(|w| w == b"EICAR-STANDARD-ANTIVIRUS-TEST-FILE")
            });
            if !found {
                fails += 1;
                let t: Vec<_> = p
                    .txs()
                    .map(|t| {
                        (
                            String::from_utf8_lossy(&t.uri_raw).into_owned(),
                            t.status_code,
                            String::from_utf8_lossy(&t.response_body[..t.response_body.len().min(120)]).into_owned(),
                        )
                    })
                    .collect();
                println!("FAIL {} step {step}: {:?}", resp_path.display(), t);
                break;
            }
        }
    }
    println!("{} of {} failed", fails, names.len());
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn deflate_raw(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zlib(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn whole(req: &[u8], resp: &[u8]) -> HttpParser {
    run(req, resp, usize::MAX, HttpConfig::default()).0
}

fn response_with_body(headers: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!("HTTP/1.1 200 OK\r\n{headers}\r\n").into_bytes();
    r.extend_from_slice(body);
    r
}

const GET: &[u8] = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n";

#[test]
fn request_fields_and_buffers() {
    let req = b"GET /p/../q%41//r?x=%41%26 HTTP/1.1\r\nHost: WWW.Example.COM:8080\r\nUser-Agent: ua\r\nCookie: c=1\r\nAccept: */*\r\nX-A: 1\r\nx-a: 2\r\n\r\n";
    let p = whole(req, b"");
    let tx = p.tx(0).unwrap();
    assert_eq!(tx.method, b"GET");
    assert_eq!(tx.uri_raw, b"/p/../q%41//r?x=%41%26");
    assert_eq!(tx.uri_normalized, b"/qA/r?x=A&");
    assert_eq!(tx.request_protocol, b"HTTP/1.1");
    assert_eq!(tx.request_line, b"GET /p/../q%41//r?x=%41%26 HTTP/1.1");
    assert_eq!(tx.host.as_deref(), Some(&b"www.example.com"[..]));
    assert_eq!(tx.host_raw.as_deref(), Some(&b"WWW.Example.COM:8080"[..]));
    assert_eq!(tx.user_agent(), Some(&b"ua"[..]));
    assert_eq!(tx.cookie(), Some(&b"c=1"[..]));
    assert_eq!(tx.request_header("X-A"), Some(&b"1, 2"[..]));
    assert_eq!(tx.request_progress, Progress::Complete);
    let mut buf = Vec::new();
    tx.header_buffer(Direction::ToServer, &mut buf);
    assert_eq!(buf, b"Host: WWW.Example.COM:8080\r\nUser-Agent: ua\r\nAccept: */*\r\nX-A: 1, 2\r\n");
    tx.header_names_buffer(Direction::ToServer, &mut buf);
    assert_eq!(buf, b"\r\nHost\r\nUser-Agent\r\nCookie\r\nAccept\r\nX-A\r\n\r\n");
    tx.start_buffer(Direction::ToServer, &mut buf);
    assert!(buf.starts_with(b"GET /p/../q%41//r?x=%41%26 HTTP/1.1\r\nHost: WWW.Example.COM:8080\r\n"));
    assert!(buf.ends_with(b"X-A: 1, 2\r\n\r\n"));
    assert_eq!(&tx.request_headers_raw[..6], b"Host: ");
    assert!(tx.request_headers_raw.ends_with(b"x-a: 2\r\n\r\n"));
}

#[test]
fn odd_request_lines() {
    let p = whole(b"\r\n\r\n  GET   /a b/c   HTTP/1.0\nHost: h\n\n", b"");
    let tx = p.tx(0).unwrap();
    assert_eq!(tx.method, b"GET");
    assert_eq!(tx.uri_raw, b"/a b/c");
    assert_eq!(tx.request_protocol, b"HTTP/1.0");
    // HTTP/0.9: no protocol, no headers; the response is all body.
    let p = whole(b"GET /old\r\n", b"just the body");
    let tx = p.tx(0).unwrap();
    assert!(tx.is_http09);
    assert_eq!(tx.uri_raw, b"/old");
    assert_eq!(tx.response_body, b"just the body");
    assert_eq!(tx.response_progress, Progress::Complete);
}

#[test]
fn a_line_without_protocol_followed_by_headers_is_not_http09() {
    // libhtp: more than a little whitespace after a line without protocol means headers
    // follow ("request line: missing protocol"); the response is then parsed as one.
    let req = b"GET /gen.php?x=1\r\nHost: h\r\nUser-Agent: myscript\r\n\r\n";
    let resp = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 3\r\n\r\nabc";
    for step in [usize::MAX, 1, 5] {
        let (p, events) = run(req, resp, step, HttpConfig::default());
        let tx = p.tx(0).unwrap();
        assert!(!tx.is_http09, "step {step}");
        assert_eq!(tx.uri_raw, b"/gen.php?x=1");
        assert!(tx.request_protocol.is_empty());
        assert_eq!(header_value(&tx.request_headers, "user-agent"), Some(&b"myscript"[..]));
        assert_eq!(tx.status_code, Some(400));
        assert_eq!(tx.response_body, b"abc");
        assert!(events.contains(&HttpEvent::Anomaly { tx: Some(0), anomaly: HttpAnomaly::RequestLineMissingProtocol }));
        assert!(!events.iter().any(|e| matches!(e, HttpEvent::Anomaly { anomaly: HttpAnomaly::Http09Request, .. })));
    }
    // A little trailing whitespace still leaves HTTP/0.9, however the request is cut.
    for step in [usize::MAX, 1, 3] {
        let (p, _) = run(b"GET /old\r\n  \r\n", b"HTTP/1.0 200 OK\r\n\r\nbody", step, HttpConfig::default());
        let tx = p.tx(0).unwrap();
        assert!(tx.is_http09, "step {step}");
        assert_eq!(tx.response_body, b"HTTP/1.0 200 OK\r\n\r\nbody");
    }
}

#[test]
fn gzip_request_bodies_are_decompressed_by_default() {
    // Suricata enables libhtp's request decompression: http.request_body sees the form.
    let gz = gzip(b"name=john");
    let mut req =
        format!("POST /hi HTTP/1.1\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n", gz.len()).into_bytes();
    req.extend_from_slice(&gz);
    let p = whole(&req, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(p.tx(0).unwrap().request_body, b"name=john");
    let (p, _) = run(&req, b"", usize::MAX, HttpConfig { decompress_request: false, ..HttpConfig::default() });
    assert_eq!(p.tx(0).unwrap().request_body, gz);
}

#[test]
fn request_body_by_length_and_chunked_and_pipelining() {
    let req = b"POST /1 HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloPOST /2 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\nTrailer: t\r\n\r\nGET /3 HTTP/1.1\r\n\r\n";
    let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\nContent-Type: x\r\n\r\n";
    let p = whole(req, resp);
    let txs: Vec<_> = p.txs().collect();
    assert_eq!(txs.len(), 3);
    assert_eq!(txs[0].request_body, b"hello");
    assert_eq!(txs[1].request_body, b"abc");
    assert!(txs[1].request_chunked);
    assert_eq!(txs[2].uri_raw, b"/3");
    assert_eq!(txs[0].response_body, b"a");
    assert_eq!(txs[1].status_code, Some(204));
    assert_eq!(txs[2].status_code, Some(304));
    assert!(txs.iter().all(|t| t.is_complete()));
}

#[test]
fn response_status_line_and_headers() {
    let resp = b"HTTP/1.1 404 Not  Found \r\nServer: s\r\nLocation: /x\r\nSet-Cookie: a\r\nContent-Length: 0\r\n\r\n";
    let p = whole(GET, resp);
    let tx = p.tx(0).unwrap();
    assert_eq!(tx.response_line, b"HTTP/1.1 404 Not  Found ");
    assert_eq!(tx.response_protocol, b"HTTP/1.1");
    assert_eq!(tx.status, b"404");
    assert_eq!(tx.status_code, Some(404));
    assert_eq!(tx.status_msg, b"Not  Found ");
    assert_eq!(tx.server(), Some(&b"s"[..]));
    assert_eq!(tx.location(), Some(&b"/x"[..]));
    let mut buf = Vec::new();
    tx.header_buffer(Direction::ToClient, &mut buf);
    assert_eq!(buf, b"Server: s\r\nLocation: /x\r\nContent-Length: 0\r\n");
}

#[test]
fn chunked_response_with_odd_sizes_and_trailers() {
    let resp = response_with_body(
        "Transfer-Encoding: x-chunked\r\n",
        b"\r\n  05 ;ext\r\nhello\r\n00a\r\n0123456789junk\r\n0\r\nX-Trailer: 1\r\n\r\n",
    );
    let p = whole(GET, &resp);
    let tx = p.tx(0).unwrap();
    assert_eq!(tx.response_body, b"hello0123456789");
    assert_eq!(tx.response_progress, Progress::Complete);
}

#[test]
fn invalid_chunk_size_makes_rest_of_stream_body() {
    let resp = response_with_body("Transfer-Encoding: chunked\r\n", b"5\r\nhello\r\nzz\r\nrest");
    let p = whole(GET, &resp);
    assert_eq!(p.tx(0).unwrap().response_body, b"hellozz\r\nrest");
}

#[test]
fn head_and_100_continue() {
    let req = b"HEAD / HTTP/1.1\r\n\r\nPOST /u HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi";
    let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
    let p = whole(req, resp);
    let txs: Vec<_> = p.txs().collect();
    assert_eq!(txs.len(), 2);
    assert!(txs[0].response_body.is_empty());
    assert!(txs[1].seen_100_continue);
    assert_eq!(txs[1].status_code, Some(201));
    assert_eq!(txs[1].response_body, b"ok");
}

#[test]
fn response_without_request_and_non_http_response_line() {
    let p = whole(b"", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokgarbage line\r\nmore");
    let tx = p.tx(0).unwrap();
    assert!(tx.request_missing);
    // Non-HTTP lines after a response are appended to it (libhtp's finalize step).
    assert_eq!(tx.response_body, b"okgarbage line\r\nmore");
    assert_eq!(p.txs().count(), 1);
}

#[test]
fn gzip_deflate_zlib_and_mislabelled_bodies() {
    let text = b"the quick brown fox jumps over the lazy dog";
    for (ce, body) in [
        ("gzip", gzip(text)),
        ("x-gzip", gzip(text)),
        ("deflate", deflate_raw(text)),
        ("deflate", zlib(text)),
        ("deflate", gzip(text)),
        ("gzip", deflate_raw(text)),
        ("gzip", text.to_vec()), // header lies: passed through
        ("identity", text.to_vec()),
    ] {
        let resp = response_with_body(&format!("Content-Encoding: {ce}\r\nContent-Length: {}\r\n", body.len()), &body);
        let p = whole(GET, &resp);
        assert_eq!(p.tx(0).unwrap().response_body, text, "{ce}");
    }
}

/// Found by the fuzz target `http`: a gzip body that turns invalid after its first block
/// kept the decoded block when it arrived in pieces, but was passed through still
/// compressed when it arrived whole (the output before the error was dropped).
#[test]
fn gzip_corrupt_after_first_block_keeps_the_decoded_part_however_it_arrives() {
    let text = [b'x'; 50];
    // gzip header, a stored deflate block (not final) with the text, then a block of the
    // reserved type 3, which is an error.
    let mut body = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0x00, 50, 0, !50u8, 0xff];
    body.extend_from_slice(&text);
    body.push(0x07);
    let resp = response_with_body(&format!("Content-Encoding: gzip\r\nContent-Length: {}\r\n", body.len()), &body);
    for step in [usize::MAX, 1] {
        let (p, _) = run(GET, &resp, step, HttpConfig::default());
        assert_eq!(p.tx(0).unwrap().response_body, text, "step {step}");
    }
}

#[test]
fn decompression_layer_limit() {
    let text = b"layered content that is compressed twice";
    let twice = gzip(&deflate_raw(text));
    let resp =
        response_with_body(&format!("Content-Encoding: deflate, gzip\r\nContent-Length: {}\r\n", twice.len()), &twice);
    assert_eq!(whole(GET, &resp).tx(0).unwrap().response_body, text);
    let thrice = gzip(&gzip(&gzip(text)));
    let resp = response_with_body(
        &format!("Content-Encoding: gzip,gzip,gzip\r\nContent-Length: {}\r\n", thrice.len()),
        &thrice,
    );
    // Default limit 2: one gzip layer is left.
    let p = whole(GET, &resp);
    assert_eq!(p.tx(0).unwrap().response_body, gzip(text));
    let cfg = HttpConfig { decompress_layer_limit: 3, ..HttpConfig::default() };
    let (p, _) = run(GET, &resp, usize::MAX, cfg);
    assert_eq!(p.tx(0).unwrap().response_body, text);
}

#[test]
fn decompression_bomb_is_limited() {
    let bomb = gzip(&vec![0u8; 4 * 1024 * 1024]); // about 1000:1
    let resp = response_with_body(&format!("Content-Encoding: gzip\r\nContent-Length: {}\r\n", bomb.len()), &bomb);
    let cfg = HttpConfig {
        response_body_limit: usize::MAX,
        compression_bomb_limit: 64 * 1024,
        compression_bomb_ratio: 100,
        ..HttpConfig::default()
    };
    let (p, events) = run(GET, &resp, 1000, cfg);
    let tx = p.tx(0).unwrap();
    // Stops once past both the limit and 100x the ~1000 encoded bytes seen so far.
    let decoded = tx.response_body.len();
    assert!((64 * 1024..200 * 1024).contains(&decoded), "{decoded}");
    assert_eq!(tx.response_body_len, bomb.len() as u64, "the length counts encoded bytes");
    assert_eq!(p.counters().decompression_bombs, 1);
    assert!(events.contains(&HttpEvent::Anomaly { tx: Some(0), anomaly: HttpAnomaly::DecompressionBomb }));
    // Within the ratio, the same body decodes completely.
    let cfg =
        HttpConfig { response_body_limit: usize::MAX, compression_bomb_limit: 64 * 1024, ..HttpConfig::default() };
    let (p, _) = run(GET, &resp, usize::MAX, cfg);
    assert_eq!(p.tx(0).unwrap().response_body.len(), 4 * 1024 * 1024);
}

#[test]
fn body_limits_and_truncation() {
    let cfg = HttpConfig { request_body_limit: 4, response_body_limit: 3, ..HttpConfig::default() };
    let (p, _) = run(
        b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789",
        b"HTTP/1.1 200 OK\r\n\r\nabcdef",
        usize::MAX,
        cfg,
    );
    let tx = p.tx(0).unwrap();
    assert_eq!(tx.request_body, b"0123");
    assert_eq!(tx.request_body_len, 10);
    assert!(tx.request_body_truncated);
    assert_eq!(tx.response_body, b"abc");
    assert_eq!(p.counters().response_body_truncated, 1);
}

#[test]
fn field_limit_stops_direction() {
    let cfg = HttpConfig { field_limit: 100, ..HttpConfig::default() };
    let mut req = b"GET /".to_vec();
    req.extend(std::iter::repeat_n(b'a', 500));
    let (p, events) = run(&req, b"", 7, cfg);
    assert_eq!(p.txs().count(), 0);
    assert!(events.iter().any(|e| matches!(e, HttpEvent::Anomaly { anomaly: HttpAnomaly::FieldTooLong, .. })));
}

/// Found by the fuzz target `http`: a non-HTTP response line longer than `field_limit`
/// became body when it arrived whole but ended the direction when it arrived in pieces.
#[test]
fn long_response_line_is_too_long_however_it_arrives() {
    let cfg = HttpConfig { field_limit: 20, ..HttpConfig::default() };
    let resp = b"POST /this_is_a_super_duper_nova_in_super_nova_now HTTP/1.0\r\nUser-Agent: x\r\n";
    for step in [usize::MAX, 7] {
        let (p, events) = run(b"", resp, step, cfg);
        assert_eq!(p.txs().count(), 0, "step {step}");
        assert!(
            events.iter().any(|e| matches!(e, HttpEvent::Anomaly { anomaly: HttpAnomaly::FieldTooLong, .. })),
            "step {step}"
        );
    }
    // A line of exactly the limit fits, also when its CR and LF arrive apart.
    let req = b"GET /abcdef HTTP/1.1\r\n\r\n"; // 20 bytes before the CR
    let resp = b"HTTP/1.1 200 0123456\r\n\r\n";
    for step in [usize::MAX, 7, 21] {
        let (p, events) = run(req, resp, step, cfg);
        assert!(
            !events.iter().any(|e| matches!(e, HttpEvent::Anomaly { anomaly: HttpAnomaly::FieldTooLong, .. })),
            "step {step}"
        );
        assert_eq!(p.tx(0).map(|t| t.response_line.len()), Some(20), "step {step}");
    }
}

/// Found by the fuzz target `http`: a chunk-size line longer than `field_limit` was read
/// as a size when it arrived whole, and made the rest of the stream body in pieces.
#[test]
fn long_chunk_size_line_is_invalid_however_it_arrives() {
    let cfg = HttpConfig { field_limit: 100, ..HttpConfig::default() };
    let mut resp = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r".to_vec();
    resp.extend([b'0'; 200]);
    resp.extend(b"\nABCD\r\n0\r\n\r\n");
    for step in [usize::MAX, 7] {
        let (p, events) = run(GET, &resp, step, cfg);
        assert!(
            events.iter().any(|e| matches!(e, HttpEvent::Anomaly { anomaly: HttpAnomaly::InvalidChunkLength, .. })),
            "step {step}"
        );
        assert!(p.tx(0).unwrap().response_body.starts_with(b"4\r000"), "step {step}");
    }
}

/// Found by the fuzz target `http` (a deflate body until close, past the body limit): the
/// length counted decoded bytes, and decoding stops at the limit, so the length depended on
/// how much one `on_data` call had carried past it.
#[test]
fn encoded_body_length_does_not_depend_on_the_cut() {
    let plain: Vec<u8> = (0..20_000u32).map(|i| b"eicar "[i as usize % 6]).collect();
    let encoded = deflate_raw(&plain);
    let resp = response_with_body("Content-Encoding: deflate\r\nConnection: close\r\n", &encoded);
    let cfg = HttpConfig { response_body_limit: 100, ..HttpConfig::default() };
    parse_truncated_body(&resp, cfg, &plain, encoded.len(), &[usize::MAX, 1, 2, 64]);
}

/// Parses `resp` (after a GET) fed `step` bytes at a time for each step, checks that the
/// stored response body is `plain` cut at `cfg.response_body_limit` and flagged so, and
/// that the length counts the `encoded_len` bytes on the wire; returns each step's parser.
fn parse_truncated_body(
    resp: &[u8],
    cfg: HttpConfig,
    plain: &[u8],
    encoded_len: usize,
    steps: &[usize],
) -> Vec<(usize, HttpParser)> {
    let mut parsers = Vec::new();
    for &step in steps {
        let (p, _) = run(GET, resp, step, cfg);
        let tx = p.tx(0).unwrap();
        assert_eq!(tx.response_body, plain[..cfg.response_body_limit], "step {step}");
        assert!(tx.response_body_truncated, "step {step}");
        assert_eq!(tx.response_body_len, encoded_len as u64, "step {step}");
        parsers.push((step, p));
    }
    parsers
}

/// Decoding stops at the body limit inside a piece (nothing reads further): the stored
/// prefix, the truncation flag and counter and the encoded length are the same whatever the
/// cut, for a body that is all compressed in one segment and for gzip inside chunks.
#[test]
fn decoding_stops_at_the_body_limit_with_the_same_result_whatever_the_cut() {
    let plain: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8 ^ b"picket"[i as usize % 6]).collect();
    let encoded = gzip(&plain);
    let mut chunked = Vec::new();
    for piece in encoded.chunks(1000) {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let by_length =
        response_with_body(&format!("Content-Encoding: gzip\r\nContent-Length: {}\r\n", encoded.len()), &encoded);
    let by_chunks = response_with_body("Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", &chunked);
    let cfg = HttpConfig { response_body_limit: 10_000, ..HttpConfig::default() };
    for resp in [by_length, by_chunks] {
        for (step, p) in parse_truncated_body(&resp, cfg, &plain, encoded.len(), &[usize::MAX, 1460, 7, 1]) {
            assert_eq!(p.counters().response_body_truncated, 1, "step {step}");
            assert_eq!(p.tx(0).unwrap().response_progress, Progress::Complete, "step {step}");
        }
    }
}

/// Found by the fuzz target `http`: a trailer line longer than `field_limit` was accepted
/// when it arrived whole (the response completed) but ended the direction in pieces (the
/// response stayed in `Trailers`). Trailers are now held to the limit headers are.
#[test]
fn long_trailer_is_too_long_however_it_arrives() {
    let cfg = HttpConfig { field_limit: 100, ..HttpConfig::default() };
    let mut resp = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\nT: ".to_vec();
    resp.extend([b'A'; 200]);
    resp.extend(b"\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    for step in [usize::MAX, 1, 7] {
        let (p, events) = run(GET, &resp, step, cfg);
        assert_eq!(p.txs().count(), 1, "step {step}: nothing parsed after the trailer");
        assert_eq!(p.tx(0).unwrap().response_body, b"abcd", "step {step}");
        assert_eq!(p.counters().fields_too_long, 1, "step {step}");
        let too_long =
            events.iter().position(|e| matches!(e, HttpEvent::Anomaly { anomaly: HttpAnomaly::FieldTooLong, .. }));
        let completed = events.iter().position(|e| matches!(e, HttpEvent::ResponseComplete { .. }));
        assert!(
            too_long.is_some_and(|t| completed.is_some_and(|c| t < c)),
            "step {step}: lost in the trailer, completed only at close"
        );
    }
    // Trailer lines that together outgrow the limit count as one block.
    let mut resp = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n".to_vec();
    for i in 0..10 {
        resp.extend(format!("T{i}: 0123456789\r\n").bytes());
    }
    resp.extend(b"\r\n");
    for step in [usize::MAX, 1] {
        let (p, _) = run(GET, &resp, step, cfg);
        assert_eq!(p.counters().fields_too_long, 1, "step {step}");
    }
}

/// A `CR LF CR` + whitespace line ending needs look-ahead; the bytes waiting for it are
/// not the line's and must not count against `field_limit` (nor grow without bound).
#[test]
fn deformed_line_ending_look_ahead_is_bounded_and_cut_independent() {
    let cfg = HttpConfig { field_limit: 40, ..HttpConfig::default() };
    for run_len in [10, 64, 65, 200] {
        let mut resp = b"HTTP/1.1 200 OK\r\nA: 1\r\n\r".to_vec();
        resp.extend(std::iter::repeat_n(b' ', run_len));
        resp.extend(b"\r\n\r\nbody");
        let (whole, _) = run(GET, &resp, usize::MAX, cfg);
        assert_eq!(whole.counters().fields_too_long, 0, "run {run_len}");
        assert_eq!(whole.tx(0).unwrap().response_header("a"), Some(&b"1"[..]), "run {run_len}");
        for step in [1, 2, 7] {
            let (split, _) = run(GET, &resp, step, cfg);
            assert_eq!(snapshot(&whole), snapshot(&split), "run {run_len} step {step}");
        }
    }
}

/// A line arriving one byte per call is searched for its ending once per byte, not once
/// per byte per call (which was quadratic), on both sides and in every line state.
#[test]
fn line_search_work_is_linear_when_fed_byte_by_byte() {
    let cfg = HttpConfig { field_limit: 100_000, ..HttpConfig::default() };
    let long = vec![b'a'; 30_000];
    let mut req = b"GET /".to_vec();
    req.extend(&long);
    req.extend(b" HTTP/1.1\r\nX-Long: ");
    req.extend(&long);
    req.extend(b"\r\n\r\n");
    let mut resp = b"HTTP/1.1 200 OK".to_vec();
    resp.extend(&long);
    resp.extend(b"\r\nX-Long: ");
    resp.extend(&long);
    resp.extend(b"\r\nTransfer-Encoding: chunked\r\n\r\n4");
    resp.extend(std::iter::repeat_n(b' ', 30_000));
    resp.extend(b"\r\nabcd\r\n");
    // A blank run before a chunk size is waited out without rescanning it either.
    resp.extend(std::iter::repeat_n(b' ', 30_000));
    resp.extend(b"0\r\nT: ");
    resp.extend(&long);
    resp.extend(b"\r\n\r\n");
    let (p, _) = run(&req, &resp, 1, cfg);
    let tx = p.tx(0).unwrap();
    assert_eq!(tx.request_header("x-long").map(<[u8]>::len), Some(long.len()));
    assert_eq!(tx.response_header("x-long").map(<[u8]>::len), Some(long.len()));
    assert_eq!(tx.response_body, b"abcd");
    assert_eq!(tx.response_progress, Progress::Complete);
    for (half, input) in p.halves.iter().zip([&req, &resp]) {
        let scanned = half.eol.scanned;
        assert_eq!(half.chunk_blank_run.1, if half.side == Side::Response { 30_000 } else { 0 });
        // Every byte is looked at about once; a rescan per call would be ~30000x that.
        assert!(scanned <= 2 * input.len() as u64, "{scanned} bytes scanned for {} fed", input.len());
        assert!(scanned >= input.len() as u64 / 2, "the counter counts: {scanned}");
    }
}

#[test]
fn tx_count_is_bounded_and_pruning_works() {
    let cfg = HttpConfig { max_tx: 4, ..HttpConfig::default() };
    let req: Vec<u8> = (0..10).flat_map(|i| format!("GET /{i} HTTP/1.1\r\n\r\n").into_bytes()).collect();
    let (mut p, _) = run(&req, b"", usize::MAX, cfg);
    assert_eq!(p.txs().count(), 4);
    assert_eq!(p.counters().transactions_dropped, 6);
    assert_eq!(p.txs().next().unwrap().uri_raw, b"/6");
    let resp: Vec<u8> = (0..10).flat_map(|_| b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".to_vec()).collect();
    let (mut q, _) = run(GET, &resp, usize::MAX, HttpConfig::default());
    assert!(q.prune_completed() > 0);
    assert_eq!(q.txs().count(), 0);
    assert_eq!(p.prune_completed(), 0, "requests without responses are not complete");
}

#[test]
fn a_connection_between_requests_holds_no_transaction_buffer() {
    let (mut q, _) = run(GET, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", usize::MAX, HttpConfig::default());
    let own = q.heap_bytes_without_bodies();
    assert_eq!(q.prune_completed(), 1);
    assert_eq!(q.txs.capacity(), 0, "the emptied queue's buffer goes too");
    assert!(q.heap_bytes_without_bodies() < own, "and the flow is charged less");
    // A request still waiting for its answer keeps the queue.
    let (mut p, _) = run(GET, b"", usize::MAX, HttpConfig::default());
    assert_eq!(p.prune_completed(), 0);
    assert!(p.txs.capacity() > 0);
}

#[test]
fn gaps_skip_body_bytes_but_stop_header_parsing() {
    let mut p = HttpParser::new(HttpConfig::default());
    let mut ev = Vec::new();
    let mut push = |e| ev.push(e);
    p.on_data(Direction::ToServer, GET, &mut push);
    p.on_data(Direction::ToClient, b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab", &mut push);
    p.on_gap(Direction::ToClient, 5, &mut push);
    p.on_data(Direction::ToClient, b"cdeHTTP/1.1 200 OK\r\n", &mut push);
    let tx = p.tx(0).unwrap();
    assert_eq!(tx.response_body, b"abcde".iter().take(2).chain(b"cde").copied().collect::<Vec<_>>());
    assert!(tx.body_gap);
    assert_eq!(tx.response_progress, Progress::Complete);
    p.on_gap(Direction::ToClient, 3, &mut push);
    p.on_data(Direction::ToClient, b"Content-Length: 0\r\n\r\n", &mut push);
    assert!(ev.contains(&HttpEvent::Anomaly { tx: Some(1), anomaly: HttpAnomaly::GapInHeaders }));
}

#[test]
fn connect_tunnel_stops_parsing() {
    let req = b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n\x16\x03\x01binary";
    let resp = b"HTTP/1.1 200 Connection established\r\n\r\n\x16\x03\x03more binary";
    let p = whole(req, resp);
    assert_eq!(p.txs().count(), 1);
    let tx = p.tx(0).unwrap();
    assert_eq!(tx.host.as_deref(), Some(&b"example.com"[..]));
    assert!(tx.response_body.is_empty());
}

#[test]
fn events_follow_progress() {
    let (_, events) = run(
        b"POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\nx",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\ny",
        usize::MAX,
        HttpConfig::default(),
    );
    let kinds: Vec<_> = events.into_iter().filter(|e| !matches!(e, HttpEvent::Anomaly { .. })).collect();
    assert_eq!(
        kinds,
        vec![
            HttpEvent::RequestLine { tx: 0 },
            HttpEvent::RequestHeaders { tx: 0 },
            HttpEvent::RequestBodyData { tx: 0 },
            HttpEvent::RequestComplete { tx: 0 },
            HttpEvent::ResponseLine { tx: 0 },
            HttpEvent::ResponseHeaders { tx: 0 },
            HttpEvent::ResponseBodyData { tx: 0 },
            HttpEvent::ResponseComplete { tx: 0 },
        ]
    );
}

fn snapshot(p: &HttpParser) -> String {
    p.txs().map(|t| format!("{t:?}\n")).collect()
}

/// Inputs with every tolerated oddity, for the chunking-invariance checks.
fn odd_inputs() -> Vec<(Vec<u8>, Vec<u8>)> {
    let gz = gzip(b"X5O!P%@AP[4 compressed payload");
    vec![
        (GET.to_vec(), response_with_body("Transfer-Encoding: chunked\r\n", b"\r\n5\r\nhello\r\n0\r\n\r\n")),
        (GET.to_vec(), b"HTTP/1.1 200 ok\rContent-length: 3\rX: y\r\n\nabcHTTP/1.1 200 OK\n\rA: b\n\r\n\r".to_vec()),
        (GET.to_vec(), b"HTTP/1.1 200 ok\r\nConnection: close\r\n\r\rTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n".to_vec()),
        (GET.to_vec(), b"HTTP/1.1 200 ok\r\nContent-length: 4\n \n\nabcdjunk\r\n".to_vec()),
        (GET.to_vec(), b"\r\nnot http\r\nHTTP/1.1 200 ok\r\nTransfer-Encoding\r\n :chunked\r\n\r\n1\r\nZ\r\n0\r\n\r\n".to_vec()),
        (GET.to_vec(), response_with_body(&format!("Content-Encoding: gzip\r\nContent-Length: {}\r\n", gz.len()), &gz)),
        (b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\nH: a\r\n  folded\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /0.9\r\nGET /y HTTP/1.0\n\n".to_vec(), b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.0 200 OK\r\n\r\nuntil close".to_vec()),
    ]
}

#[test]
fn byte_at_a_time_gives_the_same_transactions() {
    for (req, resp) in odd_inputs() {
        let (whole, _) = run(&req, &resp, usize::MAX, HttpConfig::default());
        for step in [1, 2, 3, 7] {
            let (split, _) = run(&req, &resp, step, HttpConfig::default());
            assert_eq!(snapshot(&whole), snapshot(&split), "step {step} on {:?}", String::from_utf8_lossy(&resp));
        }
    }
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn http_ish() -> impl Strategy<Value = Vec<u8>> {
        let pieces = prop::sample::select(vec![
            &b"GET / HTTP/1.1"[..],
            b"HTTP/1.1 200 OK",
            b"\r\n",
            b"\n",
            b"\r",
            b" ",
            b"\t",
            b":",
            b"Content-Length: 3",
            b"Transfer-Encoding: chunked",
            b"Content-Encoding: gzip, deflate",
            b"5",
            b"0",
            b"ffffffffffff",
            b";x",
            b"abc",
            b"\x1f\x8b\x08\x00",
            b"\0",
            b"HEAD",
            b"CONNECT a:1 HTTP/1.1",
            b"HTTP/1.1 100 Continue",
            b"HTTP/1.1 101 Switching",
            b"Host: a",
            b"%2e%2e/",
            b"?q=%41",
        ]);
        prop::collection::vec(
            prop_oneof![pieces.prop_map(<[u8]>::to_vec), prop::collection::vec(any::<u8>(), 0..8)],
            0..40,
        )
        .prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn chunking_does_not_matter(req in http_ish(), resp in http_ish(), step in 1usize..9) {
            let (whole, _) = run(&req, &resp, usize::MAX, HttpConfig::default());
            let (split, _) = run(&req, &resp, step, HttpConfig::default());
            prop_assert_eq!(snapshot(&whole), snapshot(&split));
        }

        #[test]
        fn random_bytes_never_panic(req in prop::collection::vec(any::<u8>(), 0..600), resp in prop::collection::vec(any::<u8>(), 0..600), step in 1usize..50, gap in 0u64..20) {
            let mut p = HttpParser::new(HttpConfig { field_limit: 200, max_tx: 8, ..HttpConfig::default() });
            let mut sink = |_e: HttpEvent| {};
            for (a, b) in req.chunks(step).zip(resp.chunks(step)) {
                p.on_data(Direction::ToServer, a, &mut sink);
                p.on_data(Direction::ToClient, b, &mut sink);
                if a.first() == Some(&0) {
                    p.on_gap(Direction::ToClient, gap, &mut sink);
                }
            }
            p.on_close(&mut sink);
            prop_assert!(p.txs().count() <= 8);
            for tx in p.txs() {
                prop_assert!(tx.response_body.len() <= 100 * 1024);
            }
        }
    }
}

// ---------------------------------------------------------------- bodies as files

/// Files tracked, every digest on.
fn files_cfg() -> HttpConfig {
    HttpConfig { files: FileConfig { enabled: true, md5: true, sha1: false, sha256: true }, ..HttpConfig::default() }
}

fn md5_hex(data: &[u8]) -> String {
    use md5::Digest;
    md5::Md5::digest(data).iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn chunked_gzip_download_is_one_file_named_by_content_disposition() {
    let body = b"X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*";
    let gz = gzip(body);
    let mut resp = b"HTTP/1.1 200 ok\r\nContent-disposition: attachment; filename=\"eicar.txt\"\r\n\
Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
        .to_vec();
    for piece in gz.chunks(5) {
        resp.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        resp.extend_from_slice(piece);
        resp.extend_from_slice(b"\r\n");
    }
    resp.extend_from_slice(b"0\r\n\r\n");
    let req = b"GET /chunked/eicar.txt/chunked HTTP/1.1\r\nHost: evader.example.com\r\n\r\n";
    for step in [usize::MAX, 1, 7] {
        let (p, _) = run(req, &resp, step, files_cfg());
        let tx = p.tx(0).unwrap();
        let files: Vec<_> = tx.files().collect();
        assert_eq!(files.len(), 1, "step {step}");
        let (dir, f) = files[0];
        assert_eq!(dir, Direction::ToClient);
        assert_eq!(f.name, b"eicar.txt");
        assert_eq!((f.size, f.state, f.gaps), (body.len() as u64, FileState::Closed, false), "step {step}");
        let v = crate::record::value::record(|w| f.write_record(w, tx.id));
        assert_eq!(v["md5"], md5_hex(body));
    }
}

#[test]
fn which_bodies_are_files() {
    // A response body without Content-Disposition takes the normalised URI path.
    let p = run(
        b"GET /dir/%61.bin?q=1 HTTP/1.1\r\nHost: h\r\n\r\n",
        &response_with_body("Content-Length: 3\r\n", b"abc"),
        usize::MAX,
        files_cfg(),
    )
    .0;
    let names: Vec<_> = p.tx(0).unwrap().files().map(|(_, f)| f.name.clone()).collect();
    assert_eq!(names, vec![b"/dir/a.bin".to_vec()]);
    // No body, no file; files off, no file.
    let p = run(GET, b"HTTP/1.1 304 Not Modified\r\n\r\n", usize::MAX, files_cfg()).0;
    assert_eq!(p.tx(0).unwrap().files().count(), 0);
    let p = run(GET, &response_with_body("Content-Length: 3\r\n", b"abc"), usize::MAX, HttpConfig::default()).0;
    assert_eq!(p.tx(0).unwrap().files().count(), 0);
    // POST and PUT bodies are files (by path); multipart POSTs and other methods are not.
    let post = b"POST /up HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi";
    let p = run(post, b"", usize::MAX, files_cfg()).0;
    let f: Vec<_> = p.tx(0).unwrap().files().map(|(d, f)| (d, f.name.clone(), f.size)).collect();
    assert_eq!(f, vec![(Direction::ToServer, b"/up".to_vec(), 2)]);
    let multipart =
        b"POST /up HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 2\r\n\r\nhi";
    assert_eq!(run(multipart, b"", usize::MAX, files_cfg()).0.tx(0).unwrap().files().count(), 0);
    let options = b"OPTIONS /up HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi";
    assert_eq!(run(options, b"", usize::MAX, files_cfg()).0.tx(0).unwrap().files().count(), 0);
}

#[test]
fn file_states_limit_close_and_gap() {
    // Past response-body-limit: the file stops there, truncated, sha256 of the prefix.
    let cfg = HttpConfig { response_body_limit: 4, ..files_cfg() };
    let p = run(GET, &response_with_body("Content-Length: 10\r\n", b"0123456789"), usize::MAX, cfg).0;
    let (_, f) = p.tx(0).unwrap().files().next().unwrap();
    assert_eq!((f.size, f.state), (4, FileState::Truncated));
    // The flow ends inside the body: truncated.
    let p = run(GET, &response_with_body("Content-Length: 10\r\n", b"01234"), usize::MAX, files_cfg()).0;
    let (_, f) = p.tx(0).unwrap().files().next().unwrap();
    assert_eq!((f.size, f.state), (5, FileState::Truncated));
    // A body running until close is complete at close.
    let p = run(GET, b"HTTP/1.0 200 OK\r\n\r\nuntil close", usize::MAX, files_cfg()).0;
    let (_, f) = p.tx(0).unwrap().files().next().unwrap();
    assert_eq!((f.size, f.state), (11, FileState::Closed));
    // A gap inside a body of known length: counted in the size, truncated, flagged.
    let mut p = HttpParser::new(files_cfg());
    p.on_data(Direction::ToServer, GET, &mut |_| {});
    p.on_data(Direction::ToClient, &response_with_body("Content-Length: 10\r\n", b"012"), &mut |_| {});
    p.on_gap(Direction::ToClient, 4, &mut |_| {});
    p.on_data(Direction::ToClient, b"789", &mut |_| {});
    let (_, f) = p.tx(0).unwrap().files().next().unwrap();
    assert_eq!((f.size, f.state, f.gaps), (10, FileState::Truncated, true));
    // A gap before any body byte opens the file too (libhtp hands gaps over as body).
    let mut p = HttpParser::new(files_cfg());
    p.on_data(Direction::ToServer, GET, &mut |_| {});
    p.on_data(Direction::ToClient, &response_with_body("Content-Length: 5\r\n", b""), &mut |_| {});
    p.on_gap(Direction::ToClient, 5, &mut |_| {});
    let (_, f) = p.tx(0).unwrap().files().next().unwrap();
    assert_eq!((f.size, f.state, f.gaps), (5, FileState::Truncated, true));
    let v = crate::record::value::record(|w| f.write_record(w, 0));
    assert_eq!(v["sha256"], "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "nothing hashed");
}

#[test]
fn line_ending_after_a_body_belongs_to_it() {
    // libhtp's finalize step: the bare CRLF after a Content-Length body is body of that
    // response (Suricata logs length 14 and a file of 14 bytes), however the stream is cut.
    let resp =
        b"HTTP/1.0 200 OK\r\nContent-Length: 12\r\n\r\nHello World!\r\nHTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx";
    let req = b"GET /1 HTTP/1.0\r\n\r\nGET /2 HTTP/1.0\r\n\r\n";
    for step in [usize::MAX, 1, 3] {
        let p = run(req, resp, step, files_cfg()).0;
        let t0 = p.tx(0).unwrap();
        assert_eq!(t0.response_body_len, 14, "step {step}");
        let (_, f) = t0.files().next().unwrap();
        assert_eq!((f.size, f.state), (14, FileState::Closed), "step {step}");
        assert_eq!(p.tx(1).unwrap().response_body, b"x");
    }
}
