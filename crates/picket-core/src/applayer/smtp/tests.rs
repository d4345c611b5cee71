//! The SMTP state machine on whole sessions.

use super::*;
use crate::applayer::http::file::FileState;
use Direction::{ToClient as S, ToServer as C};

/// Runs `steps` (direction, bytes) through a fresh session with sha256 file hashing.
pub(crate) fn run(steps: &[(Direction, &[u8])]) -> (SmtpState, Vec<SmtpEvent>, SmtpCounters) {
    let files = FileConfig { enabled: true, sha256: true, ..FileConfig::default() };
    let mut st = SmtpState::new(SmtpConfig::default(), files);
    let mut ev = Vec::new();
    let mut c = SmtpCounters::default();
    for (dir, data) in steps {
        st.parse(*dir, data, &mut c, &mut ev);
    }
    (st, ev, c)
}

fn anomalies(ev: &[SmtpEvent]) -> Vec<&'static str> {
    ev.iter()
        .filter_map(|e| match e {
            SmtpEvent::Anomaly(_, _, name) => Some(*name),
            _ => None,
        })
        .collect()
}

const MAIL: &[u8] = b"From: a@x\r\nContent-Type: multipart/mixed; boundary=\"b\"\r\n\r\n--b\r\n\
Content-Disposition: attachment; filename=\"n.txt\"\r\n\r\nhello\r\n--b--\r\n.\r\n";

/// A whole session, one reply per command, the mail as in [`MAIL`].
pub(crate) fn mail_session() -> SmtpState {
    run(&[
        (S, b"220 mx ESMTP\r\n"),
        (C, b"EHLO GP\r\n"),
        (S, b"250-mx\r\n250 SIZE 1000\r\n"),
        (C, b"MAIL FROM:<a@x>\r\n"),
        (S, b"250 ok\r\n"),
        (C, b"RCPT TO:<b@y>\r\n"),
        (S, b"250 ok\r\n"),
        (C, b"DATA\r\n"),
        (S, b"354 go\r\n"),
        (C, MAIL),
        (S, b"250 queued\r\n"),
        (C, b"QUIT\r\n"),
        (S, b"221 bye\r\n"),
    ])
    .0
}

/// The session [`super::record`]'s tests log: `client` is sent after DATA's 354.
pub(crate) fn session(server: &[u8], client: &[u8]) -> SmtpState {
    // The banner, the commands up to DATA, the replies up to its go-ahead, the mail, the
    // remaining replies.
    let split = client.windows(6).position(|w| w == b"DATA\r\n").map_or(client.len(), |p| p + 6);
    let banner = server.iter().position(|&b| b == b'\n').expect("a banner") + 1;
    let go = server.windows(4).position(|w| w == b"354 ").expect("a 354 reply");
    let go_end = go + server[go..].iter().position(|&b| b == b'\n').expect("end of 354") + 1;
    run(&[
        (S, &server[..banner]),
        (C, &client[..split]),
        (S, &server[banner..go_end]),
        (C, &client[split..]),
        (S, &server[go_end..]),
    ])
    .0
}

#[test]
fn one_mail_one_transaction_with_its_attachment() {
    let st = mail_session();
    assert_eq!(st.tx_count(), 1, "QUIT stays with the mail");
    let tx = st.tx(0).expect("tx 0");
    assert!(tx.is_complete());
    assert_eq!(st.helo.as_deref(), Some(&b"GP"[..]));
    assert_eq!(tx.mail_from.as_deref(), Some(&b"<a@x>"[..]));
    assert_eq!(tx.rcpt_to, vec![b"<b@y>".to_vec()]);
    let f = &tx.files()[0];
    assert_eq!((f.name.as_slice(), f.size, f.state), (&b"n.txt"[..], 5, FileState::Closed));
}

#[test]
fn byte_by_byte_is_the_same() {
    let whole = mail_session();
    let mut steps: Vec<(Direction, Vec<u8>)> = Vec::new();
    for (d, data) in [
        (S, &b"220 mx\r\n"[..]),
        (C, b"HELO GP\r\nMAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nDATA\r\n"),
        (S, b"250 a\r\n250 b\r\n250 c\r\n354 d\r\n"),
        (C, MAIL),
        (S, b"250 e\r\n"),
    ] {
        for b in data {
            steps.push((d, vec![*b]));
        }
    }
    let steps: Vec<(Direction, &[u8])> = steps.iter().map(|(d, b)| (*d, b.as_slice())).collect();
    let (st, ev, _) = run(&steps);
    assert_eq!(anomalies(&ev), Vec::<&str>::new());
    let (a, b) = (&whole.tx(0).expect("tx").files()[0], &st.tx(0).expect("tx").files()[0]);
    assert_eq!((a.size, a.state), (b.size, b.state));
    assert!(st.tx(0).expect("tx").is_complete());
}

#[test]
fn two_mails_two_transactions_and_rset_stays() {
    let (st, ev, _) = run(&[
        (S, b"220 mx\r\n"),
        (C, b"HELO h\r\nMAIL FROM:<a>\r\nDATA\r\n"),
        (S, b"250 ok\r\n250 ok\r\n354 go\r\n"),
        (C, b"Subject: 1\r\n\r\nx\r\n.\r\nMAIL FROM:<b>\r\nRSET\r\n"),
        (S, b"250 ok\r\n250 ok\r\n250 ok\r\n"),
    ]);
    assert_eq!(st.tx_count(), 2);
    assert_eq!(st.tx(1).expect("tx 1").mail_from.as_deref(), Some(&b"<b>"[..]));
    assert!(st.tx(1).expect("tx 1").is_complete(), "RSET acknowledged");
    assert_eq!(ev.iter().filter(|e| matches!(e, SmtpEvent::NewTx(_))).count(), 2);
}

#[test]
fn rejected_data_is_an_anomaly_and_no_data_mode() {
    let (st, ev, _) =
        run(&[(S, b"220 mx\r\n"), (C, b"HELO h\r\nDATA\r\n"), (S, b"250 ok\r\n554 no\r\n"), (C, b"NOOP\r\n")]);
    assert_eq!(anomalies(&ev), vec!["DATA_COMMAND_REJECTED"]);
    assert!(!st.data_mode);
}

#[test]
fn pipelining_server_enters_data_mode_at_once() {
    let (st, _, _) = run(&[
        (S, b"220 mx\r\n"),
        (C, b"EHLO h\r\n"),
        (S, b"250-mx\r\n250-PIPELINING\r\n250 8BITMIME\r\n"),
        (C, b"MAIL FROM:<a>\r\nRCPT TO:<b>\r\nDATA\r\nContent-Disposition: attachment; filename=f\r\n\r\nabc\r\n.\r\n"),
    ]);
    assert!(st.pipelining);
    assert_eq!(st.tx(0).expect("tx").files()[0].size, 3);
    assert_eq!(st.tx(0).expect("tx").request, Progress::Complete);
}

#[test]
fn bdat_chunks_are_counted_not_parsed_as_commands() {
    let (st, ev, _) = run(&[
        (S, b"220 mx\r\n"),
        (C, b"EHLO h\r\nMAIL FROM:<a>\r\nBDAT 6\r\nQUIT\r\n"),
        (C, b"BDAT 0 LAST\r\n"),
        (S, b"250 a\r\n250 b\r\n250 c\r\n250 d\r\n"),
        (C, b"BDAT x\r\n"),
    ]);
    let tx = st.tx(0).expect("tx");
    assert!(tx.is_complete());
    assert_eq!(anomalies(&ev), vec!["INVALID_BDAT"]);
    assert_eq!(st.tx_count(), 2, "a command after the last chunk starts a new mail");
}

#[test]
fn starttls_stops_parsing_and_bad_replies_fail() {
    let (st, _, _) =
        run(&[(S, b"220 mx\r\n"), (C, b"EHLO h\r\nSTARTTLS\r\n"), (S, b"250 ok\r\n220 go\r\n"), (C, b"\x16\x03\x01")]);
    assert!(st.tls);
    let (st, ev, c) = run(&[(S, b"220 mx\r\n"), (C, b"EHLO h\r\n"), (S, b"999 what\r\n")]);
    assert!(st.failed);
    assert_eq!(c.parser_errors, 1);
    assert_eq!(anomalies(&ev), vec!["INVALID_REPLY"]);
}

#[test]
fn long_command_lines_are_truncated_and_counted() {
    let mut long = b"MAIL FROM:<".to_vec();
    long.extend(vec![b'a'; 5000]);
    long.extend(b">\r\nRCPT TO:<b>\r\n");
    let (st, ev, c) = run(&[(S, b"220 mx\r\n"), (C, b"HELO h\r\n"), (C, &long)]);
    assert_eq!(c.truncated_lines, 1);
    assert_eq!(anomalies(&ev), vec!["TRUNCATED_LINE"]);
    let tx = st.tx(0).expect("tx");
    assert_eq!(tx.mail_from.as_ref().map(Vec::len), Some(MAX_PARAM));
    assert_eq!(tx.rcpt_to, vec![b"<b>".to_vec()], "the line after the long one is parsed");
}

#[test]
fn mime_anomalies_go_to_the_mail() {
    let mut mail = b"Content-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n".to_vec();
    mail.extend(vec![b'A'; 1000]);
    mail.extend(b"\r\n.\r\n");
    let (_, ev, _) = run(&[(S, b"220 mx\r\n"), (C, b"HELO h\r\nDATA\r\n"), (S, b"250 ok\r\n354 go\r\n"), (C, &mail)]);
    assert_eq!(anomalies(&ev), vec!["MIME_LONG_LINE", "MIME_LONG_ENC_LINE"]);
}

#[test]
fn flow_end_truncates_an_open_attachment() {
    let (mut st, _, _) = run(&[
        (S, b"220 mx\r\n"),
        (C, b"HELO h\r\nDATA\r\n"),
        (S, b"250 ok\r\n354 go\r\n"),
        (C, b"Content-Disposition: attachment; filename=f\r\n\r\nabc\r\n"),
    ]);
    st.on_close();
    assert_eq!(st.tx(0).expect("tx").files()[0].state, FileState::Truncated);
}

/// Hostile input: random bytes and random mixes of SMTP/MIME fragments, both ways, in
/// random pieces, never panic and stay within the bounds.
#[test]
fn hostile_input_does_not_panic() {
    let pieces: [&[u8]; 16] = [
        b"220 x\r\n",
        b"354 go\r\n",
        b"250-PIPELINING\r\n",
        b"250 ok\r\n",
        b"DATA\r\n",
        b"BDAT 5 LAST\r\n",
        b"MAIL FROM:<a>\r\n",
        b"Content-Type: multipart/mixed; boundary=b\r\n\r\n",
        b"--b\r\nContent-Transfer-Encoding: quoted-printable\r\nContent-Type: a; name=x\r\n\r\n",
        b"=4",
        b"=\r\n",
        b"Content-Transfer-Encoding: base64\r\nContent-Disposition: a; filename=f\r\n\r\nQQ=",
        b"--b--\r\n",
        b".\r\n",
        b"\r\n",
        b"Content-Type: message/rfc822\r\n\r\n",
    ];
    let mut next = crate::test_rng::xorshift(0x9e37_79b9_7f4a_7c15);
    for _ in 0..300 {
        let files = FileConfig { enabled: true, md5: true, sha1: false, sha256: true };
        let mut st = SmtpState::new(SmtpConfig::default(), files);
        let (mut ev, mut c) = (Vec::new(), SmtpCounters::default());
        for _ in 0..60 {
            let dir = if next().is_multiple_of(3) { S } else { C };
            let data: Vec<u8> = match next() % 4 {
                0 => (0..next() % 5000).map(|_| next() as u8).collect(),
                1 => vec![b'A'; (next() % 70_000) as usize],
                _ => pieces[(next() % 16) as usize].to_vec(),
            };
            let mut rest = data.as_slice();
            while !rest.is_empty() {
                let n = 1 + (next() as usize % rest.len());
                st.parse(dir, &rest[..n], &mut c, &mut ev);
                rest = &rest[n..];
            }
            if next().is_multiple_of(20) {
                st.on_gap(dir, 10);
            }
        }
        st.on_close();
        assert!(st.line.iter().all(|l| l.len() <= BODY_LINE_LIMIT));
        assert!(st.cmds.len() <= MAX_COMMANDS);
        assert!(st.txs().all(|t| t.rcpt_to.len() <= MAX_RCPT && t.files().len() <= mime::MAX_ATTACHMENTS));
    }
}
