//! SMTP parser, sans-IO, after Suricata's (`app-layer-smtp.c`): the client's commands and
//! the server's replies line by line, matched in order (pipelining included), and the mail
//! sent after DATA (or in BDAT chunks) decoded by [`mime`].
//!
//! One transaction per mail, as Suricata's: created by the first command of a session or
//! the first command after the previous mail's data ended; RSET and QUIT belong to the
//! transaction they follow. A transaction is complete when its data ended (`.` or the
//! last BDAT chunk) and the server replied to it (or RSET/QUIT were acknowledged).
//! HELO/EHLO is the session's; MAIL FROM and RCPT TO are the transaction's.
//!
//! Anomalies carry Suricata's event names (`INVALID_REPLY`, `MIME_LONG_LINE`, ...) and go
//! to the current transaction (none before the first command, as in Suricata). After
//! STARTTLS is accepted the rest of the session is encrypted and no longer parsed.
//!
//! Bounded: lines (commands, replies, MIME headers) at [`LINE_LIMIT`] bytes (the rest of a
//! longer line is skipped, `TRUNCATED_LINE`), body lines at [`BODY_LINE_LIMIT`] (handed
//! on in pieces), outstanding commands at [`MAX_COMMANDS`], recipients per mail at
//! [`MAX_RCPT`], transactions per session at `max-tx`; see [`SmtpCounters`].

pub(crate) mod buffers;
pub(crate) mod flow;
pub mod mime;
pub mod record;

use crate::applayer::http::file::{FileConfig, HttpFile};
use crate::stream::Direction;
use mime::{MimeConfig, MimeCounters, MimeParser};
use std::collections::VecDeque;

/// Longest command, reply or MIME header line (Suricata's `SMTP_LINE_BUFFER_LIMIT`).
pub const LINE_LIMIT: usize = 4096;
/// Longest body line handed to MIME in one piece; a longer line goes on in pieces (as
/// Suricata hands on what a segment holds).
pub const BODY_LINE_LIMIT: usize = 64 * 1024;
/// Commands waiting for their reply.
pub const MAX_COMMANDS: usize = 1024;
/// Recipients kept per mail.
pub const MAX_RCPT: usize = 256;
/// Longest HELO, MAIL FROM or RCPT TO argument kept.
pub const MAX_PARAM: usize = 1024;

/// The `app-layer.protocols.smtp` settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmtpConfig {
    pub mime: MimeConfig,
    /// `max-tx`: transactions per session (Suricata's default 256); past it the session is
    /// no longer parsed.
    pub max_tx: u64,
}

impl Default for SmtpConfig {
    fn default() -> Self {
        SmtpConfig { mime: MimeConfig::default(), max_tx: 256 }
    }
}

/// Worker-wide counters of SMTP parsing (beyond Suricata's flow and transaction counts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SmtpCounters {
    /// Sessions no longer parsed after an invalid reply or too many transactions
    /// (Suricata's `app_layer.error.smtp.parser`).
    pub parser_errors: u64,
    pub truncated_lines: u64,
    pub commands_dropped: u64,
    pub rcpt_dropped: u64,
    pub mime: MimeCounters,
}

impl SmtpCounters {
    pub fn counters(&self) -> impl Iterator<Item = (&'static str, u64)> {
        [
            ("app_layer.error.smtp.parser", self.parser_errors),
            ("app_layer.smtp.truncated_lines", self.truncated_lines),
            ("app_layer.smtp.commands_dropped", self.commands_dropped),
            ("app_layer.smtp.rcpt_dropped", self.rcpt_dropped),
            ("app_layer.smtp.mime.headers_dropped", self.mime.headers_dropped),
            ("app_layer.smtp.mime.header_bytes_cut", self.mime.header_bytes_cut),
            ("app_layer.smtp.mime.boundaries_dropped", self.mime.boundaries_dropped),
            ("app_layer.smtp.mime.attachments_dropped", self.mime.attachments_dropped),
            ("app_layer.smtp.mime.urls_dropped", self.mime.urls_dropped),
            ("app_layer.smtp.mime.file_data_cut", self.mime.file_data_cut),
        ]
        .into_iter()
    }
}

/// What the client sent that a reply answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Command {
    StartTls,
    Data,
    Bdat,
    BdatLast,
    /// The end of a mail's data, answered like a command.
    DataMode,
    Rset,
    Quit,
    Other,
}

/// Progress of one side of a transaction (Suricata's `SMTP_REQUEST_*`/`SMTP_RESPONSE_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Progress {
    #[default]
    Started,
    Data,
    Complete,
}

/// One mail.
#[derive(Clone, Debug, Default)]
pub struct SmtpTx {
    pub id: u64,
    pub mail_from: Option<Vec<u8>>,
    pub rcpt_to: Vec<Vec<u8>>,
    /// The mail's MIME state, from its DATA command on (with `decode-mime`).
    pub mime: Option<Box<MimeParser>>,
    pub request: Progress,
    pub response: Progress,
    /// DATA was sent (a second DATA without a reply is `UNPARSABLE_CONTENT`).
    is_data: bool,
    /// Reported done (`AppCtx::done`).
    pub(crate) reported: bool,
}

impl SmtpTx {
    pub fn is_complete(&self) -> bool {
        self.request == Progress::Complete && self.response == Progress::Complete
    }

    /// The attachments as files.
    pub fn files(&self) -> &[HttpFile] {
        self.mime.as_ref().map_or(&[], |m| &m.files)
    }

    fn heap_bytes(&self) -> usize {
        self.mail_from.as_ref().map_or(0, Vec::capacity)
            + self.rcpt_to.iter().map(|r| r.capacity() + std::mem::size_of::<Vec<u8>>()).sum::<usize>()
            + self.mime.as_ref().map_or(0, |m| std::mem::size_of::<MimeParser>() + m.heap_bytes())
    }
}

/// What parsing reported, for the flow to pass on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmtpEvent {
    /// A transaction was created (Suricata's `app_layer.tx.smtp`).
    NewTx(u64),
    /// The transaction changed as seen from `dir`.
    Progressed(Direction, u64),
    Anomaly(Direction, u64, &'static str),
}

/// The SMTP session of one flow.
pub struct SmtpState {
    cfg: SmtpConfig,
    files: FileConfig,
    /// HELO/EHLO argument (the first one; a second is `DUPLICATE_FIELDS`).
    pub helo: Option<Vec<u8>>,
    txs: VecDeque<SmtpTx>,
    tx_cnt: u64,
    /// The transaction commands go to.
    curr: Option<u64>,
    /// Commands waiting for a reply, oldest first, with their transaction.
    cmds: VecDeque<(Command, Option<u64>)>,
    current: Command,
    data_mode: bool,
    first_reply_seen: bool,
    multiline: bool,
    pipelining: bool,
    bdat_len: u64,
    bdat_idx: u64,
    /// Per direction: the line being collected, and whether the rest of a too long line
    /// is being skipped.
    line: [Vec<u8>; 2],
    discard: [bool; 2],
    /// STARTTLS accepted: the session is encrypted from here.
    pub tls: bool,
    /// An error stopped parsing (as Suricata's app-layer error).
    pub failed: bool,
}

/// Reply codes Suricata knows; any other is an invalid reply.
const REPLY_CODES: [&[u8; 3]; 42] = [
    b"211", b"214", b"220", b"221", b"235", b"250", b"251", b"252", b"334", b"354", b"401", b"402", b"421", b"435",
    b"450", b"451", b"452", b"454", b"455", b"500", b"501", b"502", b"503", b"504", b"511", b"521", b"522", b"525",
    b"530", b"534", b"535", b"541", b"543", b"550", b"551", b"552", b"553", b"554", b"555", b"556", b"557", b"558",
];

fn starts_nocase(line: &[u8], prefix: &[u8]) -> bool {
    line.len() >= prefix.len() && line[..prefix.len()].eq_ignore_ascii_case(prefix)
}

impl SmtpState {
    pub fn new(cfg: SmtpConfig, files: FileConfig) -> Self {
        SmtpState {
            cfg,
            files,
            helo: None,
            txs: VecDeque::new(),
            tx_cnt: 0,
            curr: None,
            cmds: VecDeque::new(),
            current: Command::Other,
            data_mode: false,
            first_reply_seen: false,
            multiline: false,
            pipelining: false,
            bdat_len: 0,
            bdat_idx: 0,
            line: Default::default(),
            discard: [false; 2],
            tls: false,
            failed: false,
        }
    }

    pub fn tx(&self, id: u64) -> Option<&SmtpTx> {
        let first = self.txs.front()?.id;
        self.txs.get(usize::try_from(id.checked_sub(first)?).ok()?)
    }

    fn tx_mut(&mut self, id: u64) -> Option<&mut SmtpTx> {
        let first = self.txs.front()?.id;
        self.txs.get_mut(usize::try_from(id.checked_sub(first)?).ok()?)
    }

    pub fn txs(&self) -> impl Iterator<Item = &SmtpTx> {
        self.txs.iter()
    }

    pub(crate) fn txs_mut(&mut self) -> impl Iterator<Item = &mut SmtpTx> {
        self.txs.iter_mut()
    }

    pub fn tx_count(&self) -> u64 {
        self.tx_cnt
    }

    /// Frees the transactions before `keep` that were reported done.
    pub fn prune(&mut self, keep: u64) {
        while self.txs.front().is_some_and(|t| t.reported && t.id < keep && Some(t.id) != self.curr) {
            self.txs.pop_front();
        }
        crate::applayer::free_if_drained(&mut self.txs);
    }

    /// Feeds in-order stream bytes of `dir`.
    pub fn parse(&mut self, dir: Direction, mut data: &[u8], counters: &mut SmtpCounters, ev: &mut Vec<SmtpEvent>) {
        while !data.is_empty() && !self.failed && !self.tls {
            if dir == Direction::ToServer && self.data_mode && matches!(self.current, Command::Bdat | Command::BdatLast)
            {
                data = self.bdat_data(data, ev);
                continue;
            }
            let body = dir == Direction::ToServer
                && self.data_mode
                && self.current == Command::Data
                && self.curr_tx().and_then(|t| t.mime.as_ref()).is_none_or(|m| m.in_body());
            let limit = if body { BODY_LINE_LIMIT } else { LINE_LIMIT };
            let i = dir.index();
            let all = data;
            let lf = data.iter().position(|&b| b == b'\n');
            let take = lf.map_or(data.len(), |p| p + 1);
            let chunk = &data[..take];
            data = &data[take..];
            if self.discard[i] {
                self.discard[i] = lf.is_none();
                continue;
            }
            // saturating: a server reply can end data mode under a partly collected line.
            let room = limit.saturating_sub(self.line[i].len());
            if chunk.len() > room {
                self.line[i].extend_from_slice(&chunk[..room]);
                let piece = std::mem::take(&mut self.line[i]);
                if body {
                    // A long body line goes on in pieces, the next one from here.
                    self.request_line(&piece, &piece, counters, ev);
                    data = &all[room..];
                } else {
                    // Suricata processes the first LINE_LIMIT bytes and skips the rest.
                    counters.truncated_lines += 1;
                    self.discard[i] = lf.is_none();
                    self.handle_line(dir, &piece, &piece, counters, ev);
                    self.event(dir, "TRUNCATED_LINE", ev);
                }
                self.line[i] = piece;
                self.line[i].clear();
                continue;
            }
            if lf.is_none() {
                self.line[i].extend_from_slice(chunk);
                return;
            }
            let mut full = std::mem::take(&mut self.line[i]);
            full.extend_from_slice(chunk);
            let mut end = full.len() - 1;
            if end > 0 && full[end - 1] == b'\r' {
                end -= 1;
            }
            self.handle_line(dir, &full[..end], &full, counters, ev);
            full.clear();
            if self.line[i].capacity() == 0 {
                self.line[i] = full;
            }
        }
    }

    fn handle_line(
        &mut self,
        dir: Direction,
        line: &[u8],
        full: &[u8],
        counters: &mut SmtpCounters,
        ev: &mut Vec<SmtpEvent>,
    ) {
        match dir {
            Direction::ToServer => self.request_line(line, full, counters, ev),
            Direction::ToClient => self.reply_line(line, counters, ev),
        }
    }

    fn curr_tx(&self) -> Option<&SmtpTx> {
        self.curr.and_then(|id| self.tx(id))
    }

    fn curr_tx_mut(&mut self) -> Option<&mut SmtpTx> {
        let id = self.curr?;
        self.tx_mut(id)
    }

    /// An app-layer event on the current transaction (dropped without one, as Suricata's).
    fn event(&self, dir: Direction, name: &'static str, ev: &mut Vec<SmtpEvent>) {
        if let Some(id) = self.curr {
            ev.push(SmtpEvent::Anomaly(dir, id, name));
        }
    }

    /// A line of the client (a command, or a line of mail data).
    fn request_line(&mut self, line: &[u8], full: &[u8], counters: &mut SmtpCounters, ev: &mut Vec<SmtpEvent>) {
        let no_new_tx = !self.data_mode && (starts_nocase(line, b"rset") || starts_nocase(line, b"quit"));
        let curr_complete = self.curr_tx().is_some_and(|t| t.request == Progress::Complete);
        if (self.curr.is_none() && (self.tx_cnt == 0 || !no_new_tx)) || (curr_complete && !no_new_tx) {
            if self.tx_cnt > self.cfg.max_tx {
                counters.parser_errors += 1;
                self.failed = true;
                return;
            }
            let id = self.tx_cnt;
            self.tx_cnt += 1;
            self.txs.push_back(SmtpTx { id, ..SmtpTx::default() });
            self.curr = Some(id);
            ev.push(SmtpEvent::NewTx(id));
        }
        // A command moves the mail on; mail data does so when an attachment or the mail
        // ends (re-inspecting a growing mail on every packet would be quadratic).
        if let Some(id) = self.curr.filter(|_| !self.data_mode) {
            ev.push(SmtpEvent::Progressed(Direction::ToServer, id));
        }
        if !self.first_reply_seen {
            self.event(Direction::ToServer, "NO_SERVER_WELCOME_MESSAGE", ev);
        }
        if self.data_mode {
            match self.current {
                Command::Data => self.data_line(line, full, counters, ev),
                Command::Bdat | Command::BdatLast => {}
                _ => {}
            }
            return;
        }
        self.command(line, counters, ev);
    }

    fn command(&mut self, line: &[u8], counters: &mut SmtpCounters, ev: &mut Vec<SmtpEvent>) {
        let d = Direction::ToServer;
        let Some(id) = self.curr else {
            // RSET or QUIT before any transaction.
            self.current = if starts_nocase(line, b"rset") { Command::Rset } else { Command::Quit };
            self.push_command(self.current, None, counters, ev);
            return;
        };
        self.current = if starts_nocase(line, b"starttls") {
            Command::StartTls
        } else if starts_nocase(line, b"data") {
            self.current = Command::Data;
            let mime_cfg = self.cfg.mime;
            let Some(tx) = self.txs.iter_mut().find(|t| t.id == id) else { return };
            tx.request = tx.request.max(Progress::Data);
            if tx.is_data {
                // A second DATA without the server's go-ahead for the first.
                self.event(d, "UNPARSABLE_CONTENT", ev);
                return;
            }
            if mime_cfg.decode_mime {
                tx.mime = Some(Box::new(MimeParser::new(&mime_cfg)));
            }
            tx.is_data = true;
            if self.pipelining {
                // A pipelining server's reply may come after the data: go on without it.
                self.data_mode = true;
            }
            Command::Data
        } else if starts_nocase(line, b"bdat") {
            match parse_bdat(line) {
                Some((len, last)) => {
                    self.bdat_len = len;
                    self.bdat_idx = 0;
                    let tx = self.tx_mut(id).expect("current transaction");
                    tx.request = tx.request.max(Progress::Data);
                    if len > 0 {
                        self.data_mode = true;
                    } else if last {
                        tx.request = Progress::Complete;
                    }
                    if last {
                        Command::BdatLast
                    } else {
                        Command::Bdat
                    }
                }
                None => {
                    self.event(d, "INVALID_BDAT", ev);
                    Command::Other
                }
            }
        } else if starts_nocase(line, b"helo") || starts_nocase(line, b"ehlo") {
            if self.helo.is_some() {
                self.event(d, "DUPLICATE_FIELDS", ev);
            } else {
                self.helo = Some(param(line, 4));
            }
            let tx = self.tx(id).expect("current transaction");
            if tx.mail_from.is_some() || !tx.rcpt_to.is_empty() || tx.request != Progress::Started {
                // A HELO within a session resets it as RSET does (RFC 5321 4.1.4).
                self.bdat_idx = 0;
                Command::Rset
            } else {
                Command::Other
            }
        } else if starts_nocase(line, b"mail from") {
            let from = param(line, 9);
            let tx = self.tx_mut(id).expect("current transaction");
            if tx.mail_from.is_some() {
                self.event(d, "DUPLICATE_FIELDS", ev);
            } else {
                tx.mail_from = Some(from);
            }
            Command::Other
        } else if starts_nocase(line, b"rcpt to") {
            let to = param(line, 7);
            let tx = self.tx_mut(id).expect("current transaction");
            if tx.rcpt_to.len() < MAX_RCPT {
                tx.rcpt_to.push(to);
            } else {
                counters.rcpt_dropped += 1;
            }
            Command::Other
        } else if starts_nocase(line, b"rset") {
            self.bdat_idx = 0;
            Command::Rset
        } else if starts_nocase(line, b"quit") {
            Command::Quit
        } else {
            Command::Other
        };
        self.push_command(self.current, Some(id), counters, ev);
    }

    fn push_command(&mut self, cmd: Command, tx: Option<u64>, counters: &mut SmtpCounters, ev: &mut Vec<SmtpEvent>) {
        if matches!(self.cmds.back(), Some((Command::StartTls | Command::Data, _))) {
            self.event(Direction::ToServer, "INVALID_PIPELINED_SEQUENCE", ev);
        }
        if self.cmds.len() >= MAX_COMMANDS {
            counters.commands_dropped += 1;
            self.cmds.pop_front();
        }
        self.cmds.push_back((cmd, tx));
    }

    /// A line of the mail after DATA: the end (`.`), or MIME input.
    fn data_line(&mut self, line: &[u8], full: &[u8], counters: &mut SmtpCounters, ev: &mut Vec<SmtpEvent>) {
        let Some(id) = self.curr else { return };
        if line == b"." {
            self.data_mode = false;
            self.push_command(Command::DataMode, Some(id), counters, ev);
            let cfg = self.cfg.mime;
            let tx = self.tx_mut(id).expect("current transaction");
            if let Some(m) = tx.mime.as_mut() {
                m.complete(&cfg, &mut counters.mime);
            }
            tx.request = Progress::Complete;
            ev.push(SmtpEvent::Progressed(Direction::ToServer, id));
            return;
        }
        let (files, cfg) = (self.files, self.cfg.mime);
        let mut warnings = 0;
        if let Some(m) = self.tx_mut(id).and_then(|t| t.mime.as_mut()) {
            let closed = m.closed_files;
            warnings = m.parse_line(line, full, &cfg, &files, &mut counters.mime);
            if m.closed_files != closed {
                ev.push(SmtpEvent::Progressed(Direction::ToServer, id));
            }
        }
        for (bit, name) in mime::ANOMALY_EVENTS {
            if warnings & bit != 0 {
                self.event(Direction::ToServer, name, ev);
            }
        }
    }

    /// BDAT chunk bytes: counted against the announced size (their content is not decoded,
    /// as Suricata does not decode it either).
    fn bdat_data<'d>(&mut self, data: &'d [u8], ev: &mut Vec<SmtpEvent>) -> &'d [u8] {
        if self.bdat_idx >= self.bdat_len {
            self.data_mode = false;
            return data;
        }
        let n = (self.bdat_len - self.bdat_idx).min(data.len() as u64) as usize;
        self.bdat_idx += n as u64;
        if self.bdat_idx == self.bdat_len {
            if let Some(id) = self.curr {
                ev.push(SmtpEvent::Progressed(Direction::ToServer, id));
            }
            self.data_mode = false;
            if self.current == Command::BdatLast {
                if let Some(tx) = self.curr_tx_mut() {
                    tx.request = Progress::Complete;
                }
            }
        }
        &data[n..]
    }

    /// A line of the server.
    fn reply_line(&mut self, line: &[u8], counters: &mut SmtpCounters, ev: &mut Vec<SmtpEvent>) {
        let d = Direction::ToClient;
        let reply_tx = match self.cmds.front() {
            Some((_, tx)) => *tx,
            None => self.curr,
        };
        if line.len() < 3 {
            if line.is_empty() {
                return;
            }
            self.event(d, "INVALID_REPLY", ev);
            counters.parser_errors += 1;
            self.failed = true;
            return;
        }
        if line.len() >= 4 {
            self.multiline = line[3] == b'-';
        } else {
            self.multiline = false;
        }
        let Some(code) = REPLY_CODES.iter().find(|c| line[..3] == c[..]) else {
            self.event(d, "INVALID_REPLY", ev);
            counters.parser_errors += 1;
            self.failed = true;
            return;
        };
        let code: &[u8] = &code[..];
        if let Some(id) = reply_tx {
            ev.push(SmtpEvent::Progressed(d, id));
        }
        let Some(&(cmd, _)) = self.cmds.front() else {
            if !self.first_reply_seen {
                if !self.multiline {
                    self.first_reply_seen = true;
                }
                if code != b"220" {
                    self.event(d, "INVALID_REPLY", ev);
                }
            }
            return;
        };
        let last_line = !self.multiline;
        match cmd {
            Command::StartTls => {
                if code == b"220" {
                    self.data_mode = true;
                    self.tls = true;
                    self.complete(reply_tx);
                } else {
                    self.event(d, "TLS_REJECTED", ev);
                }
            }
            Command::Data => {
                if code == b"354" {
                    if let Some(tx) = reply_tx.and_then(|id| self.tx_mut(id)) {
                        tx.response = tx.response.max(Progress::Data);
                    }
                    self.data_mode = true;
                } else {
                    if self.pipelining {
                        self.data_mode = false;
                    }
                    self.event(d, "DATA_COMMAND_REJECTED", ev);
                }
            }
            Command::Bdat => {
                if let Some(tx) = reply_tx.and_then(|id| self.tx_mut(id)) {
                    tx.response = tx.response.max(Progress::Data);
                }
            }
            Command::BdatLast | Command::DataMode => {
                if last_line {
                    if let Some(tx) = reply_tx.and_then(|id| self.tx_mut(id)) {
                        tx.response = Progress::Complete;
                    }
                }
            }
            Command::Rset => {
                if code == b"250" && last_line {
                    self.complete(reply_tx);
                }
            }
            Command::Quit => {
                if code == b"221" && last_line {
                    self.complete(reply_tx);
                }
            }
            Command::Other => {}
        }
        if last_line {
            self.cmds.pop_front();
        } else if self.first_reply_seen
            && code == b"250"
            && line.len() == 14
            && line[4..].eq_ignore_ascii_case(b"pipelining")
        {
            self.pipelining = true;
        }
    }

    fn complete(&mut self, tx: Option<u64>) {
        if let Some(tx) = tx.and_then(|id| self.tx_mut(id)) {
            tx.request = Progress::Complete;
            tx.response = Progress::Complete;
        }
    }

    /// `len` bytes of `dir` were lost: the line in progress is dropped; lost mail data
    /// leaves a hole in the open attachment.
    pub fn on_gap(&mut self, dir: Direction, len: u64) {
        self.line[dir.index()].clear();
        if dir == Direction::ToServer && self.data_mode && self.current == Command::Data {
            if let Some(m) = self.curr_tx_mut().and_then(|t| t.mime.as_mut()) {
                m.gap(len);
            }
        }
    }

    /// The flow ended: attachments still open end truncated.
    pub fn on_close(&mut self) {
        for tx in self.txs.iter_mut() {
            if let Some(m) = tx.mime.as_mut() {
                m.truncate();
            }
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.txs.iter().map(|t| std::mem::size_of::<SmtpTx>() + t.heap_bytes()).sum::<usize>()
            + self.cmds.capacity() * std::mem::size_of::<(Command, Option<u64>)>()
            + self.line.iter().map(Vec::capacity).sum::<usize>()
            + self.helo.as_ref().map_or(0, Vec::capacity)
    }
}

/// The argument of HELO, MAIL FROM or RCPT TO: after the command and spaces, up to the
/// next space (MAIL FROM's SIZE= and other options are not part of it), at most
/// [`MAX_PARAM`] bytes.
fn param(line: &[u8], prefix: usize) -> Vec<u8> {
    let rest = line.get(prefix + 1..).unwrap_or_default();
    let skip = rest.iter().take_while(|&&c| c == b' ').count();
    let rest = &rest[skip..];
    let end = rest.iter().position(|&c| c == b' ').unwrap_or(rest.len());
    rest[..end.min(MAX_PARAM)].to_vec()
}

/// `BDAT <size> [LAST]`: the chunk size and whether it is the last; `None` when malformed.
fn parse_bdat(line: &[u8]) -> Option<(u64, bool)> {
    let rest = line.get(4..)?;
    let skip = rest.iter().take_while(|&&c| c == b' ').count();
    if skip == 0 || skip == rest.len() {
        return None;
    }
    let rest = &rest[skip..];
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    let len: u32 = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let rest = &rest[digits..];
    if !rest.is_empty() && rest[0] != b' ' {
        return None;
    }
    let rest = &rest[rest.iter().take_while(|&&c| c == b' ').count()..];
    if rest.eq_ignore_ascii_case(b"last") {
        Some((u64::from(len), true))
    } else if rest.is_empty() {
        Some((u64::from(len), false))
    } else {
        None
    }
}

#[cfg(test)]
pub(crate) mod tests;
