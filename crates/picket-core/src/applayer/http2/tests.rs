//! Tests of the HTTP/2 frame layer and transactions.

use super::*;

fn frame(ty: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, ty, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
    pairs.iter().flat_map(|(id, v)| id.to_be_bytes().into_iter().chain(v.to_be_bytes())).collect()
}

/// A literal header field without indexing, new name, raw strings.
fn lit(name: &str, value: &str) -> Vec<u8> {
    let mut b = vec![0x00, name.len() as u8];
    b.extend_from_slice(name.as_bytes());
    b.push(value.len() as u8);
    b.extend_from_slice(value.as_bytes());
    b
}

fn feed(p: &mut Http2Parser, dir: Direction, data: &[u8]) -> Vec<Http2Event> {
    let mut evs = Vec::new();
    p.on_data(dir, data, &mut |e| evs.push(e));
    evs
}

fn client_start() -> Vec<u8> {
    let mut c = PREFACE.to_vec();
    c.extend(frame(ft::SETTINGS, 0, 0, &settings(&[(3, 100), (4, 65535)])));
    c
}

fn config() -> HttpConfig {
    let mut c = HttpConfig::default();
    c.files.enabled = true;
    c
}

#[test]
fn settings_on_stream_zero_are_global_transactions() {
    let mut p = Http2Parser::new(config());
    let evs = feed(&mut p, Direction::ToServer, &client_start());
    assert!(evs.contains(&Http2Event::Complete { tx: 0 }));
    let tx = p.tx(0).expect("settings tx");
    assert!(tx.global && tx.is_complete());
    assert_eq!(tx.frames[0].settings, vec![(3, 100), (4, 65535)]);
    // An empty SETTINGS (ack) makes no transaction; a PING does.
    feed(&mut p, Direction::ToClient, &frame(ft::SETTINGS, 1, 0, b""));
    assert_eq!(p.tx_count(), 1);
    feed(&mut p, Direction::ToClient, &frame(ft::PING, 0, 0, &[0; 8]));
    assert_eq!(p.tx_count(), 2);
    assert!(!p.tx(1).expect("ping tx").has_record());
}

#[test]
fn stream_request_and_response_with_body() {
    let mut p = Http2Parser::new(config());
    let mut c = client_start();
    let mut block = vec![0x82, 0x84]; // :method GET, :path /
    block.extend(lit(":authority", "Example.COM:8443"));
    block.extend(lit("user-agent", "t/1"));
    c.extend(frame(ft::HEADERS, FLAG_END_HEADERS | FLAG_END_STREAM, 1, &block));
    feed(&mut p, Direction::ToServer, &c);
    let tx = p.tx(1).expect("stream tx");
    assert_eq!(tx.stream_id, 1);
    assert_eq!(tx.http.method, b"GET");
    assert_eq!(tx.http.uri_raw, b"/");
    assert_eq!(tx.http.host.as_deref(), Some(&b"example.com"[..]));
    assert_eq!(tx.http.request_line, b"GET / HTTP/2");
    assert_eq!(tx.progress[0], StreamProgress::Closed);
    assert!(!tx.is_complete());
    // Response: HEADERS, then a padded DATA frame split over two reads.
    let mut s = frame(ft::HEADERS, FLAG_END_HEADERS, 1, &[0x88]); // :status 200
    let mut data = vec![3];
    data.extend_from_slice(b"hello");
    data.extend_from_slice(&[0, 0, 0]);
    s.extend(frame(ft::DATA, FLAG_PADDED | FLAG_END_STREAM, 1, &data));
    let (a, b) = s.split_at(s.len() - 4);
    feed(&mut p, Direction::ToClient, a);
    assert!(!p.tx(1).expect("tx").is_complete());
    let evs = feed(&mut p, Direction::ToClient, b);
    assert!(evs.contains(&Http2Event::Complete { tx: 1 }));
    let tx = p.tx(1).expect("tx");
    assert_eq!(tx.http.status_code, Some(200));
    assert_eq!(tx.http.response_body, b"hello");
    let f = tx.http.response_file.as_deref().expect("file");
    assert_eq!(f.name, b"/");
    assert_eq!(f.size, 5);
    assert_eq!(f.state, crate::applayer::http::FileState::Closed);
}

#[test]
fn continuation_frames_complete_a_header_block() {
    let mut p = Http2Parser::new(config());
    let mut c = client_start();
    let mut block = vec![0x82, 0x86, 0x84];
    block.extend(lit("x-long", "value"));
    let (a, b) = block.split_at(2);
    c.extend(frame(ft::HEADERS, 0, 1, a));
    c.extend(frame(ft::CONTINUATION, FLAG_END_HEADERS, 1, b));
    feed(&mut p, Direction::ToServer, &c);
    let tx = p.tx(1).expect("tx");
    assert_eq!(tx.header(Direction::ToServer, "x-long"), Some(&b"value"[..]));
    assert_eq!(tx.headers(Direction::ToServer).count(), 4);
}

#[test]
fn goaway_rst_and_priority_are_kept() {
    let mut p = Http2Parser::new(config());
    let mut c = client_start();
    c.extend(frame(ft::PRIORITY, 0, 1, &[0, 0, 0, 0, 15]));
    c.extend(frame(ft::RST_STREAM, 0, 1, &8u32.to_be_bytes()));
    c.extend(frame(ft::GOAWAY, 0, 0, &[0, 0, 0, 1, 0, 0, 0, 0]));
    feed(&mut p, Direction::ToServer, &c);
    let s = p.tx(1).expect("stream");
    assert_eq!(s.frames[0].priorities, vec![15]);
    assert_eq!(s.frames[0].error_codes, vec![8]);
    let g = p.tx(2).expect("goaway");
    assert_eq!(g.frames[0].error_codes, vec![0]);
    assert!(g.has_frame_type(Direction::ToServer, ft::GOAWAY));
}

#[test]
fn hostile_input_is_bounded_and_reported() {
    let mut p = Http2Parser::new(config());
    let mut c = b"GET / HTTP/1.1\r\n\r\nXXXXXX".to_vec();
    // An over-long frame is skipped, the next one parsed.
    let mut big = vec![0x01, 0x10, 0x00, ft::DATA, 0, 0, 0, 0, 1];
    big.extend(vec![0u8; 0x11000]);
    c.extend(&big);
    c.extend(frame(ft::HEADERS, FLAG_END_HEADERS, 3, &[0x80])); // index 0
    c.extend(frame(ft::DATA, FLAG_PADDED, 3, &[9, 1])); // padding past the payload
    c.extend(frame(ft::CONTINUATION, FLAG_END_HEADERS, 5, b"x"));
    let mut evs = Vec::new();
    for chunk in c.chunks(7) {
        evs.extend(feed(&mut p, Direction::ToServer, chunk));
    }
    let names: Vec<_> = evs
        .iter()
        .filter_map(|e| match e {
            Http2Event::Anomaly { event, .. } => Some(*event),
            _ => None,
        })
        .collect();
    assert!(names.contains(&event::INVALID_CLIENT_MAGIC), "{names:?}");
    assert!(names.contains(&event::LONG_FRAME_DATA), "{names:?}");
    assert!(names.contains(&event::INVALID_HEADER), "{names:?}");
    assert!(names.contains(&event::INVALID_FRAME_LENGTH), "{names:?}");
    assert!(names.contains(&event::INVALID_FRAME_DATA), "{names:?}");
    assert_eq!(p.counters.frames_too_long, 1);
    assert!(p.txs().any(|t| t.stream_id == 3));
    // Garbage of every length never panics.
    for n in 0..300u32 {
        let junk: Vec<u8> = (0..n).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        let mut q = Http2Parser::new(config());
        feed(&mut q, Direction::ToServer, PREFACE);
        feed(&mut q, Direction::ToServer, &junk);
        feed(&mut q, Direction::ToClient, &junk);
        q.on_close(&mut |_| {});
    }
}

#[test]
fn too_many_streams_are_refused() {
    let mut p = Http2Parser::new(config());
    feed(&mut p, Direction::ToServer, PREFACE);
    let mut c = Vec::new();
    for s in 0..(MAX_STREAMS as u32 + 10) {
        c.extend(frame(ft::HEADERS, FLAG_END_HEADERS, 2 * s + 1, &[0x82]));
    }
    feed(&mut p, Direction::ToServer, &c);
    assert_eq!(p.txs().count(), MAX_STREAMS);
    assert_eq!(p.counters.streams_refused, 10);
}

#[test]
fn doh_get_and_post_are_recognised() {
    let mut p = Http2Parser::new(config());
    let mut c = client_start();
    let mut block = vec![0x82];
    block.extend(lit(":path", "/dns-query?dns=AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB"));
    block.extend(lit("accept", "application/dns-message"));
    c.extend(frame(ft::HEADERS, FLAG_END_HEADERS | FLAG_END_STREAM, 1, &block));
    let mut post = vec![0x83, 0x84];
    post.extend(lit("content-type", "application/dns-message"));
    c.extend(frame(ft::HEADERS, FLAG_END_HEADERS, 3, &post));
    c.extend(frame(ft::DATA, FLAG_END_STREAM, 3, b"\x12\x34dns"));
    feed(&mut p, Direction::ToServer, &c);
    let get = p.txs().find(|t| t.stream_id == 1).and_then(|t| t.doh.as_deref()).expect("doh get");
    let q = get.get_request.as_deref().expect("dns= decoded");
    assert_eq!(&q[12..16], b"\x03www");
    let post = p.txs().find(|t| t.stream_id == 3).and_then(|t| t.doh.as_deref()).expect("doh post");
    assert_eq!(post.body[0], b"\x12\x34dns");
}

#[test]
fn base64url() {
    assert_eq!(base64url_decode(b"aGVsbG8").as_deref(), Some(&b"hello"[..]));
    assert_eq!(base64url_decode(b"aGVsbG8=").as_deref(), Some(&b"hello"[..]));
    assert_eq!(base64url_decode(b"-_8"), Some(vec![0xfb, 0xff]));
    assert_eq!(base64url_decode(b"a!"), None);
}

#[test]
fn h2c_upgrade_hands_over_to_http2() {
    use crate::applayer::http::HttpParser;
    let mut h1 = HttpParser::new(config());
    let req = b"GET /robots.txt HTTP/1.1\r\nHost: nghttp2.org\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n";
    h1.on_data(Direction::ToServer, req, &mut |_| {});
    assert!(h1.take_h2c_upgrade().is_none(), "no 101 yet");
    let mut resp = b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n".to_vec();
    let server_settings = frame(ft::SETTINGS, 0, 0, &settings(&[(3, 100)]));
    resp.extend(&server_settings);
    h1.on_data(Direction::ToClient, &resp, &mut |_| {});
    let up = h1.take_h2c_upgrade().expect("upgrade");
    assert!(h1.take_h2c_upgrade().is_none(), "once");
    assert_eq!(up.rest[1], server_settings, "the server's HTTP/2 bytes are handed over");
    assert_eq!(up.txs.len(), 1);
    let mut p = Http2Parser::new(config());
    p.continue_from(up.next_tx_id, up.txs);
    p.upgraded(&up.request, up.settings.as_deref(), &mut |_| {});
    assert!(p.http1_tx(0).is_some_and(|t| t.status_code == Some(101)));
    let s = p.tx(1).expect("settings of HTTP2-Settings");
    assert_eq!(s.frames[0].settings, vec![(3, 100), (4, 65535)]);
    let r = p.tx(2).expect("stream 1");
    assert_eq!(r.stream_id, 1);
    let names: Vec<_> = r.headers(Direction::ToServer).map(|(n, _)| n.to_vec()).collect();
    assert_eq!(&names[..3], [&b":method"[..], b":path", b":authority"]);
    assert_eq!(r.http.uri_raw, b"/robots.txt");
}
