//! BPF capture filters (`picket -r x.pcap port 22`, `-F FILE`, `bpf-filter:`), compiled by
//! libpcap's own compiler so that every expression means exactly what it means to
//! tcpdump and Suricata.
//!
//! A filter expression is compiled once per link type (a pcap file has one, a pcapng file
//! one per interface, an AF_PACKET socket that of its interface). The instructions are
//! copied out of libpcap into a plain `Vec`, so a [`BpfProgram`] is an ordinary value
//! (`Clone`, `Send`, `Sync`) that needs no cleanup. Offline, packets are run through it
//! with libpcap's interpreter (`pcap_offline_filter`, given the real wire length so that
//! `len`/`greater`/`less` see what they would in a capture); live, the same instructions
//! are attached to the socket as a classic socket filter and run in the kernel.
//!
//! Every call into libpcap is in this file. Needs libpcap at build time (Debian:
//! `libpcap-dev`).

use std::ffi::{c_char, c_int, c_uint, CStr, CString};
use std::fmt;
use std::sync::Mutex;

use super::MAX_CAPLEN;
use crate::packet::LinkType;

/// Longest program the kernel accepts as a classic socket filter (BPF_MAXINSNS).
pub const MAX_SOCKET_FILTER_INSTRUCTIONS: usize = 4096;

/// One classic BPF instruction. Same layout as libpcap's `struct bpf_insn` and the
/// kernel's `struct sock_filter`, so a program goes to either without conversion.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BpfInstruction {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// Why a filter expression could not be used. `Display` names the expression and gives
/// libpcap's own message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BpfError {
    pub expression: String,
    /// The link type it was compiled for.
    pub link: LinkType,
    pub message: String,
}

impl fmt::Display for BpfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "BPF filter '{}' cannot be used with link type {} ({}): {}",
            self.expression,
            link_name(self.link),
            self.link.pcap_number(),
            self.message
        )
    }
}

impl std::error::Error for BpfError {}

fn link_name(link: LinkType) -> String {
    match link.suricata_name() {
        "n/a" => format!("{link:?}"),
        name => name.to_string(),
    }
}

/// A filter expression compiled for one link type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BpfProgram {
    link: LinkType,
    instructions: Vec<BpfInstruction>,
}

impl BpfProgram {
    /// Compiles `expression` with libpcap (optimised, netmask 0 as Suricata does) for
    /// frames of link type `link`.
    pub fn compile(expression: &str, link: LinkType) -> Result<Self, BpfError> {
        let error = |message: String| BpfError { expression: expression.to_string(), link, message };
        let text = CString::new(expression).map_err(|_| error("the expression contains a NUL byte".into()))?;
        let instructions = ffi::compile(&text, dlt_number(link)).map_err(error)?;
        if instructions.is_empty() {
            return Err(error("libpcap returned an empty program".into()));
        }
        Ok(BpfProgram { link, instructions })
    }

    pub fn link_type(&self) -> LinkType {
        self.link
    }

    /// The compiled instructions, for attaching to a socket.
    pub fn instructions(&self) -> &[BpfInstruction] {
        &self.instructions
    }

    /// Whether a packet passes: `data` is what was captured, `wire_len` its length on
    /// the wire (at least `data.len()`).
    pub fn matches(&self, data: &[u8], wire_len: u32) -> bool {
        ffi::run(&self.instructions, data, wire_len)
    }
}

/// The link type number libpcap's compiler expects (a DLT_* value): differs from the
/// file's LINKTYPE_* only for raw IP, which Suricata's numbering already reflects.
fn dlt_number(link: LinkType) -> c_int {
    match link {
        LinkType::Unsupported(n) => n as c_int,
        other => other.suricata_number() as c_int,
    }
}

/// The user's filter, compiled for each link type the input turns out to have. The
/// programs are kept; a capture has very few link types, so a short list is enough.
#[derive(Clone, Debug)]
pub struct BpfFilter {
    expression: String,
    programs: Vec<BpfProgram>,
    /// Index in `programs` of the last link type seen: consecutive packets nearly
    /// always share it.
    last: usize,
}

impl BpfFilter {
    /// Checks the expression up front: it must compile for at least one of the link
    /// types picket decodes (Ethernet is tried first), so that a typo is reported before
    /// any packet is read. Programs for other link types are compiled on first use.
    pub fn new(expression: &str) -> Result<Self, BpfError> {
        const DECODED: [LinkType; 10] = [
            LinkType::Ethernet,
            LinkType::RawIp,
            LinkType::LinuxSll,
            LinkType::LinuxSll2,
            LinkType::RawIpv4,
            LinkType::RawIpv6,
            LinkType::Null,
            LinkType::Loop,
            LinkType::Ppp,
            LinkType::CiscoHdlc,
        ];
        let mut first_error = None;
        for link in DECODED {
            match BpfProgram::compile(expression, link) {
                Ok(program) => {
                    return Ok(BpfFilter { expression: expression.to_string(), programs: vec![program], last: 0 })
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        Err(first_error.unwrap_or_else(|| BpfError {
            expression: expression.to_string(),
            link: LinkType::Ethernet,
            message: "no link type to compile for".into(),
        }))
    }

    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// The program for `link`, compiled now if this link type is new.
    pub fn program_for(&mut self, link: LinkType) -> Result<&BpfProgram, BpfError> {
        if self.programs.get(self.last).is_none_or(|p| p.link != link) {
            self.last = match self.programs.iter().position(|p| p.link == link) {
                Some(i) => i,
                None => {
                    self.programs.push(BpfProgram::compile(&self.expression, link)?);
                    self.programs.len() - 1
                }
            };
        }
        self.programs.get(self.last).ok_or_else(|| BpfError {
            expression: self.expression.clone(),
            link,
            message: "internal error: program cache out of step".into(),
        })
    }

    /// Whether a packet of link type `link` passes. An `Err` means the expression has
    /// no meaning for that link type (libpcap refused to compile it).
    pub fn matches(&mut self, link: LinkType, data: &[u8], wire_len: u32) -> Result<bool, BpfError> {
        Ok(self.program_for(link)?.matches(data, wire_len))
    }
}

/// Reads a filter file (`-F FILE`): everything from a `#` to the end of its line is a
/// comment; lines are joined with spaces. Returns the expression, trimmed.
pub fn expression_from_file_text(text: &str) -> String {
    let words: Vec<&str> = text
        .lines()
        .map(|line| line.split_once('#').map_or(line, |(code, _)| code))
        .flat_map(str::split_whitespace)
        .collect();
    words.join(" ")
}

/// The libpcap calls; every `unsafe` block of the filter code is here.
mod ffi {
    use super::*;

    /// libpcap's `pcap_t`, only ever handled by pointer.
    #[repr(C)]
    struct PcapHandle {
        _private: [u8; 0],
    }

    /// `struct bpf_program`.
    #[repr(C)]
    struct RawProgram {
        bf_len: c_uint,
        bf_insns: *mut BpfInstruction,
    }

    /// `struct pcap_pkthdr`.
    #[repr(C)]
    struct PacketHeader {
        ts: libc::timeval,
        caplen: u32,
        len: u32,
    }

    #[link(name = "pcap")]
    extern "C" {
        fn pcap_open_dead(linktype: c_int, snaplen: c_int) -> *mut PcapHandle;
        fn pcap_close(handle: *mut PcapHandle);
        fn pcap_compile(
            handle: *mut PcapHandle,
            program: *mut RawProgram,
            expression: *const c_char,
            optimize: c_int,
            netmask: u32,
        ) -> c_int;
        fn pcap_geterr(handle: *mut PcapHandle) -> *mut c_char;
        fn pcap_freecode(program: *mut RawProgram);
        fn pcap_offline_filter(program: *const RawProgram, header: *const PacketHeader, data: *const u8) -> c_int;
    }

    /// libpcap before 1.8 had a non-reentrant compiler, and compiling is rare: one at a
    /// time costs nothing and is safe with any version.
    static COMPILER: Mutex<()> = Mutex::new(());

    /// Compiles `expression` for DLT `dlt`; libpcap's message on failure.
    pub(super) fn compile(expression: &CStr, dlt: c_int) -> Result<Vec<BpfInstruction>, String> {
        let _guard = COMPILER.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // The snaplen becomes the accept value of the program, which a socket filter
        // uses as the number of bytes to keep: the largest packet picket accepts.
        // SAFETY: pcap_open_dead has no preconditions; a null result is checked.
        let handle = unsafe { pcap_open_dead(dlt, MAX_CAPLEN as c_int) };
        if handle.is_null() {
            return Err("libpcap could not allocate a handle".into());
        }
        let mut raw = RawProgram { bf_len: 0, bf_insns: std::ptr::null_mut() };
        // SAFETY: `handle` is a live handle from pcap_open_dead, `raw` a writable
        // bpf_program, `expression` NUL-terminated and alive for the call.
        let rc = unsafe { pcap_compile(handle, &mut raw, expression.as_ptr(), 1, 0) };
        let result = if rc != 0 {
            // SAFETY: pcap_geterr returns the handle's NUL-terminated error buffer,
            // valid until the handle is closed (below, after the copy).
            let message = unsafe { CStr::from_ptr(pcap_geterr(handle)) };
            Err(message.to_string_lossy().into_owned())
        } else if raw.bf_insns.is_null() {
            Ok(Vec::new())
        } else {
            // SAFETY: on success libpcap filled `raw` with `bf_len` instructions at
            // `bf_insns`; they are copied before pcap_freecode releases them.
            let copied = unsafe { std::slice::from_raw_parts(raw.bf_insns, raw.bf_len as usize) }.to_vec();
            // SAFETY: `raw` holds a program from pcap_compile, freed exactly once.
            unsafe { pcap_freecode(&mut raw) };
            Ok(copied)
        };
        // SAFETY: `handle` came from pcap_open_dead and is not used after this.
        unsafe { pcap_close(handle) };
        result
    }

    /// Runs `instructions` (a program from [`compile`]) over one packet.
    pub(super) fn run(instructions: &[BpfInstruction], data: &[u8], wire_len: u32) -> bool {
        if instructions.is_empty() {
            return false;
        }
        let program = RawProgram { bf_len: instructions.len() as c_uint, bf_insns: instructions.as_ptr().cast_mut() };
        let captured = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let header =
            PacketHeader { ts: libc::timeval { tv_sec: 0, tv_usec: 0 }, caplen: captured, len: wire_len.max(captured) };
        // SAFETY: `program` points at `bf_len` valid instructions produced by libpcap's
        // compiler (which only emits programs its interpreter accepts); the interpreter
        // only reads them, and reads packet bytes within `caplen` = `data.len()`.
        unsafe { pcap_offline_filter(&program, &header, data.as_ptr()) != 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;

    fn tcp_frame(src_port: u16, dst_port: u16) -> Vec<u8> {
        let mut out = Vec::new();
        PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(src_port, dst_port, 1, 1000)
            .write(&mut out, b"hello")
            .unwrap();
        out
    }

    fn udp_raw_ipv6(dst_port: u16) -> Vec<u8> {
        let mut out = Vec::new();
        PacketBuilder::ipv6([0xfe; 16], [0xfd; 16], 64).udp(5000, dst_port).write(&mut out, b"x").unwrap();
        out
    }

    #[test]
    fn port_filter_on_ethernet() {
        let program = BpfProgram::compile("tcp port 22", LinkType::Ethernet).unwrap();
        let ssh = tcp_frame(40000, 22);
        let reply = tcp_frame(22, 40000);
        let web = tcp_frame(40000, 80);
        assert!(program.matches(&ssh, ssh.len() as u32));
        assert!(program.matches(&reply, reply.len() as u32));
        assert!(!program.matches(&web, web.len() as u32));
        assert!(!program.matches(&[], 0), "an empty packet passes nothing");
        assert!(!program.matches(&ssh[..20], ssh.len() as u32), "cut before the ports");
    }

    #[test]
    fn host_and_not() {
        let program = BpfProgram::compile("host 10.0.0.2 and not port 80", LinkType::Ethernet).unwrap();
        let ssh = tcp_frame(40000, 22);
        let web = tcp_frame(40000, 80);
        assert!(program.matches(&ssh, ssh.len() as u32));
        assert!(!program.matches(&web, web.len() as u32));
    }

    #[test]
    fn wire_length_reaches_len_primitives() {
        let program = BpfProgram::compile("greater 1000", LinkType::Ethernet).unwrap();
        let frame = tcp_frame(1, 2);
        assert!(!program.matches(&frame, frame.len() as u32));
        // Same captured bytes, but the snaplen cut a 1500-byte packet.
        assert!(program.matches(&frame, 1500));
    }

    #[test]
    fn raw_ip_link_type_has_no_ethernet_header() {
        let program = BpfProgram::compile("udp dst port 53", LinkType::RawIp).unwrap();
        let dns = udp_raw_ipv6(53);
        assert!(program.matches(&dns, dns.len() as u32));
        let other = udp_raw_ipv6(54);
        assert!(!program.matches(&other, other.len() as u32));
        // The Ethernet program reads the same bytes differently.
        let ether = BpfProgram::compile("udp dst port 53", LinkType::Ethernet).unwrap();
        assert_ne!(ether.instructions(), program.instructions());
        assert!(!ether.matches(&dns, dns.len() as u32));
    }

    #[test]
    fn bad_expression_names_expression_and_libpcap_message() {
        let err = BpfFilter::new("port 22 andd host").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("'port 22 andd host'"), "{text}");
        assert!(text.contains("syntax error"), "{text}");
        assert_eq!(err.link, LinkType::Ethernet);
        let err = BpfFilter::new("port 99999").unwrap_err();
        assert!(err.message.contains("port"), "{err}");
        assert!(BpfFilter::new("host 1.2.3.4\0").is_err());
    }

    #[test]
    fn filter_compiles_per_link_type_and_reports_link_errors() {
        let mut filter = BpfFilter::new("udp port 53").unwrap();
        let dns = udp_raw_ipv6(53);
        assert_eq!(filter.matches(LinkType::RawIp, &dns, dns.len() as u32), Ok(true));
        let frame = tcp_frame(1, 53);
        assert_eq!(filter.matches(LinkType::Ethernet, &frame, frame.len() as u32), Ok(false));
        assert_eq!(filter.programs.len(), 2);
        // An Ethernet-only primitive has no meaning on raw IP.
        let mut ether_only = BpfFilter::new("ether host 02:00:00:00:00:01").unwrap();
        assert_eq!(ether_only.matches(LinkType::Ethernet, &frame, frame.len() as u32), Ok(true));
        let err = ether_only.matches(LinkType::RawIp, &dns, dns.len() as u32).unwrap_err();
        assert_eq!(err.link, LinkType::RawIp);
        assert!(err.to_string().contains("RAW"), "{err}");
    }

    #[test]
    fn empty_expression_passes_everything() {
        let mut filter = BpfFilter::new("").unwrap();
        let frame = tcp_frame(1, 2);
        assert_eq!(filter.matches(LinkType::Ethernet, &frame, frame.len() as u32), Ok(true));
    }

    #[test]
    fn programs_fit_a_socket_filter() {
        let program = BpfProgram::compile("tcp port 22 or udp port 53", LinkType::Ethernet).unwrap();
        assert!(!program.instructions().is_empty());
        assert!(program.instructions().len() <= MAX_SOCKET_FILTER_INSTRUCTIONS);
        assert_eq!(std::mem::size_of::<BpfInstruction>(), std::mem::size_of::<libc::sock_filter>());
        // The last instruction of a libpcap program is a return (BPF_RET = 0x06).
        assert_eq!(program.instructions().last().map(|i| i.code & 0x07), Some(0x06));
    }

    #[test]
    fn filter_file_comments_and_lines() {
        let text = "# only ssh\ntcp port 22 # the server\n\n  and not host 10.0.0.9\n#end";
        assert_eq!(expression_from_file_text(text), "tcp port 22 and not host 10.0.0.9");
        assert_eq!(expression_from_file_text("# nothing\n"), "");
    }

    #[test]
    fn compiles_from_many_threads() {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                std::thread::spawn(move || {
                    (0..20).all(|j| {
                        BpfProgram::compile(&format!("port {}", 1000 + i * 20 + j), LinkType::Ethernet).is_ok()
                    })
                })
            })
            .collect();
        assert!(handles.into_iter().all(|h| h.join().unwrap()));
    }
}
