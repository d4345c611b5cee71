//! SSH parser, sans-IO: each side's identification line ("banner", RFC 4253 §4.2) and the
//! unencrypted binary packets that follow it, up to NEWKEYS, after which the side is
//! encrypted and no longer parsed.
//!
//! What it keeps is what Suricata's SSH parser keeps: each side's protocol version and
//! software version from the banner, and the HASSH fingerprint of each side's KEXINIT
//! (the MD5 of its key exchange, encryption, MAC and compression algorithm lists). The
//! session is one transaction, complete when both sides sent NEWKEYS (or the flow ends).
//!
//! Sticky buffers (Suricata names): `ssh.proto`, `ssh.software` (the side of the packet's
//! direction), `ssh.hassh`, `ssh.hassh.string` (client), `ssh.hassh.server`,
//! `ssh.hassh.server.string` (server).

pub(crate) mod buffers;
pub(crate) mod flow;
pub mod record;

use crate::stream::Direction;

/// Longest banner line kept (Suricata's `SSH_MAX_BANNER_LEN`); the rest of a longer
/// line is skipped and counted.
pub const MAX_BANNER_LEN: usize = 256;
/// Largest KEXINIT payload collected for HASSH (Suricata's reassembly limit); a larger
/// one is skipped and counted.
pub const MAX_KEXINIT_LEN: usize = 65535;

const MSG_KEXINIT: u8 = 20;
const MSG_NEWKEYS: u8 = 21;

/// Worker-wide counters of malformed or oversized input (Suricata's SSH events).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SshCounters {
    pub invalid_banner: u64,
    pub long_banner: u64,
    pub invalid_record: u64,
    pub long_kex_record: u64,
}

impl SshCounters {
    pub fn counters(&self) -> impl Iterator<Item = (&'static str, u64)> {
        [
            ("ssh.invalid_banner", self.invalid_banner),
            ("ssh.long_banner", self.long_banner),
            ("ssh.invalid_record", self.invalid_record),
            ("ssh.long_kex_record", self.long_kex_record),
        ]
        .into_iter()
    }
}

/// Where one side's parse is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    /// Collecting the banner line.
    #[default]
    Banner,
    /// The banner was longer than [`MAX_BANNER_LEN`]: skipping to its end of line.
    BannerEol,
    /// Binary packets: header bytes, then the payload.
    Records,
    /// NEWKEYS sent: the rest is encrypted.
    Finished,
    /// Not SSH (a bad banner or packet length): nothing more is parsed.
    Failed,
}

/// One side of the connection.
#[derive(Clone, Debug, Default)]
pub struct SshSide {
    phase: Phase,
    /// The banner line so far, then the packet header (4-byte length, padding, message).
    pending: Vec<u8>,
    /// Payload bytes of the current packet still to come.
    packet_left: usize,
    /// The current packet is a KEXINIT whose payload is collected in `kexinit`.
    collecting_kex: bool,
    kexinit: Vec<u8>,
    /// Protocol version from the banner ("2.0", "1.99").
    pub proto_version: Vec<u8>,
    /// Software version from the banner ("OpenSSH_8.9p1").
    pub software_version: Vec<u8>,
    /// HASSH algorithm string and its MD5 (lowercase hex), once KEXINIT parsed.
    pub hassh_string: Vec<u8>,
    pub hassh: String,
}

impl SshSide {
    pub fn banner_done(&self) -> bool {
        !self.proto_version.is_empty()
    }

    pub fn finished(&self) -> bool {
        self.phase == Phase::Finished
    }

    /// Feeds the next bytes of this side; `server` selects HASSH's algorithm lists.
    fn parse(&mut self, mut data: &[u8], server: bool, counters: &mut SshCounters) {
        while !data.is_empty() {
            match self.phase {
                Phase::Finished | Phase::Failed => return,
                Phase::Banner | Phase::BannerEol => {
                    let eol = data.iter().position(|&b| b == b'\n');
                    let (line, rest) = match eol {
                        Some(i) => (&data[..i], &data[i + 1..]),
                        None => (data, &data[data.len()..]),
                    };
                    if self.phase == Phase::Banner {
                        let room = MAX_BANNER_LEN - self.pending.len();
                        self.pending.extend_from_slice(&line[..line.len().min(room)]);
                        if line.len() > room {
                            counters.long_banner += 1;
                            self.take_banner(counters);
                            self.phase = if self.phase == Phase::Failed { Phase::Failed } else { Phase::BannerEol };
                        }
                    }
                    data = rest;
                    if eol.is_some() {
                        if self.phase == Phase::Banner {
                            self.take_banner(counters);
                        }
                        if self.phase != Phase::Failed {
                            self.phase = Phase::Records;
                        }
                    }
                }
                Phase::Records if self.packet_left > 0 => {
                    let n = self.packet_left.min(data.len());
                    if self.collecting_kex {
                        self.kexinit.extend_from_slice(&data[..n]);
                    }
                    self.packet_left -= n;
                    data = &data[n..];
                    if self.packet_left == 0 && self.collecting_kex {
                        self.collecting_kex = false;
                        self.hassh_of_kexinit(server);
                    }
                }
                Phase::Records => {
                    let n = (6 - self.pending.len()).min(data.len());
                    self.pending.extend_from_slice(&data[..n]);
                    data = &data[n..];
                    if self.pending.len() < 6 {
                        return;
                    }
                    let len = u32::from_be_bytes([self.pending[0], self.pending[1], self.pending[2], self.pending[3]]);
                    let msg = self.pending[5];
                    self.pending.clear();
                    if len <= 1 {
                        counters.invalid_record += 1;
                        self.phase = Phase::Failed;
                        return;
                    }
                    // Payload after the padding-length and message bytes (padding included).
                    self.packet_left = len as usize - 2;
                    match msg {
                        MSG_NEWKEYS => self.phase = Phase::Finished,
                        MSG_KEXINIT if self.hassh.is_empty() && self.packet_left <= MAX_KEXINIT_LEN => {
                            self.collecting_kex = true;
                            self.kexinit.clear();
                        }
                        MSG_KEXINIT if self.hassh.is_empty() => counters.long_kex_record += 1,
                        _ => {}
                    }
                }
            }
        }
    }

    /// The banner line in `pending` ("SSH-protoversion-softwareversion [comments]").
    fn take_banner(&mut self, counters: &mut SshCounters) {
        let line = std::mem::take(&mut self.pending);
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        let Some(rest) = line.strip_prefix(b"SSH-") else {
            counters.invalid_banner += 1;
            self.phase = Phase::Failed;
            return;
        };
        let Some(dash) = rest.iter().position(|&b| b == b'-').filter(|&i| i > 0) else {
            counters.invalid_banner += 1;
            self.phase = Phase::Failed;
            return;
        };
        self.proto_version = rest[..dash].to_vec();
        let software = &rest[dash + 1..];
        let end = software.iter().position(|&b| b == b' ' || b == b'\r').unwrap_or(software.len());
        self.software_version = software[..end].to_vec();
    }

    /// HASSH of the collected KEXINIT: kex;encryption;mac;compression, the lists of this
    /// side's sending direction (client to server for the client, the reverse for the
    /// server). A KEXINIT that does not parse leaves no HASSH.
    fn hassh_of_kexinit(&mut self, server: bool) {
        let kex = std::mem::take(&mut self.kexinit);
        let Some(lists) = kexinit_lists(&kex) else { return };
        let pick = if server { [0, 3, 5, 7] } else { [0, 2, 4, 6] };
        let mut s = Vec::new();
        for (i, &l) in pick.iter().enumerate() {
            if i > 0 {
                s.push(b';');
            }
            s.extend_from_slice(lists[l]);
        }
        self.hassh = crate::applayer::tls::md5_hex(&s);
        self.hassh_string = s;
    }
}

/// The name lists of a KEXINIT payload (after its message byte): kex, host key,
/// encryption c2s, s2c, MAC c2s, s2c, compression c2s, s2c.
fn kexinit_lists(payload: &[u8]) -> Option<[&[u8]; 8]> {
    let mut rest = payload.get(16..)?; // cookie
    let mut lists: [&[u8]; 8] = [&[]; 8];
    for slot in &mut lists {
        let len = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        *slot = rest.get(4..4 + len)?;
        rest = &rest[4 + len..];
    }
    Some(lists)
}

/// The SSH session of one flow: its two sides.
#[derive(Clone, Debug, Default)]
pub struct SshState {
    /// Index 0 the client (to server), 1 the server (to client).
    sides: [SshSide; 2],
}

impl SshState {
    /// Feeds the next in-order stream bytes of `dir`.
    pub fn parse(&mut self, dir: Direction, data: &[u8], counters: &mut SshCounters) {
        let server = dir == Direction::ToClient;
        self.sides[dir.index()].parse(data, server, counters);
    }

    /// Bytes were lost in `dir`: its packet boundaries are unknown, so stop parsing it.
    pub fn on_gap(&mut self, dir: Direction) {
        let side = &mut self.sides[dir.index()];
        if side.phase != Phase::Finished {
            side.phase = Phase::Failed;
        }
    }

    pub fn client(&self) -> &SshSide {
        &self.sides[0]
    }

    pub fn server(&self) -> &SshSide {
        &self.sides[1]
    }

    /// The side sending in `dir`.
    pub fn side(&self, dir: Direction) -> &SshSide {
        &self.sides[dir.index()]
    }

    /// Both sides sent NEWKEYS: Suricata's SSH transaction is complete.
    pub fn complete(&self) -> bool {
        self.sides.iter().all(SshSide::finished)
    }

    /// Heap held (banner, header and KEXINIT buffers, the versions and HASSH).
    pub fn heap_bytes(&self) -> usize {
        self.sides
            .iter()
            .map(|s| {
                s.pending.capacity()
                    + s.kexinit.capacity()
                    + s.proto_version.capacity()
                    + s.software_version.capacity()
                    + s.hassh_string.capacity()
                    + s.hassh.capacity()
            })
            .sum()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A binary packet of message `msg` with `payload` (no padding).
    pub(crate) fn packet(msg: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = ((payload.len() + 2) as u32).to_be_bytes().to_vec();
        p.extend([0, msg]);
        p.extend_from_slice(payload);
        p
    }

    /// A KEXINIT payload whose eight lists are named `l0`..`l7`.
    pub(crate) fn kexinit() -> Vec<u8> {
        let mut k = vec![0u8; 16];
        for i in 0..10 {
            let name = format!("l{i}");
            k.extend((name.len() as u32).to_be_bytes());
            k.extend(name.as_bytes());
        }
        k.extend([0, 0, 0, 0, 0]);
        k
    }

    pub(crate) fn side_stream(banner: &str) -> Vec<u8> {
        let mut s = banner.as_bytes().to_vec();
        s.extend(packet(MSG_KEXINIT, &kexinit()));
        s.extend(packet(MSG_NEWKEYS, &[]));
        s.extend([0xde, 0xad, 0xbe, 0xef]); // encrypted from here
        s
    }

    #[test]
    fn banners_hassh_and_newkeys_byte_by_byte() {
        let mut st = SshState::default();
        let mut c = SshCounters::default();
        let client = side_stream("SSH-2.0-OpenSSH_7.4 comment\r\n");
        for b in &client {
            st.parse(Direction::ToServer, std::slice::from_ref(b), &mut c);
        }
        assert_eq!(st.client().proto_version, b"2.0");
        assert_eq!(st.client().software_version, b"OpenSSH_7.4");
        assert_eq!(st.client().hassh_string, b"l0;l2;l4;l6");
        assert_eq!(st.client().hassh, crate::applayer::tls::md5_hex(b"l0;l2;l4;l6"));
        assert!(st.client().finished() && !st.complete());
        st.parse(Direction::ToClient, &side_stream("SSH-1.99-Cisco-1.25\n"), &mut c);
        assert_eq!(
            (st.server().proto_version.as_slice(), st.server().software_version.as_slice()),
            (&b"1.99"[..], &b"Cisco-1.25"[..])
        );
        assert_eq!(st.server().hassh_string, b"l0;l3;l5;l7");
        assert!(st.complete());
        assert_eq!(c, SshCounters::default());
    }

    #[test]
    fn bad_banner_long_banner_and_bad_length_are_counted() {
        let mut c = SshCounters::default();
        let mut st = SshState::default();
        st.parse(Direction::ToServer, b"GET / HTTP/1.1\r\n", &mut c);
        assert_eq!(c.invalid_banner, 1);
        assert!(!st.client().banner_done());
        let mut long = b"SSH-2.0-".to_vec();
        long.extend([b'x'; 1000]);
        long.extend(b"\r\n");
        long.extend([0, 0, 0, 1, 0, 0]);
        st.parse(Direction::ToClient, &long, &mut c);
        assert_eq!(c.long_banner, 1);
        assert_eq!(st.server().software_version.len(), MAX_BANNER_LEN - 8);
        assert_eq!(c.invalid_record, 1, "a packet length of 1 is refused");
        st.parse(Direction::ToClient, &side_stream("SSH-2.0-x\r\n"), &mut c);
        assert!(!st.server().finished(), "nothing is parsed after a failure");
    }
}
