//! The kernel fast path: picket's XDP program (`bpf/picket_xdp.c`), loaded and steered
//! from here with aya.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | [`XdpLayer`]: load the object, attach to interfaces (native, else generic), detach |
//! | `maps.rs` | the maps' key/value layouts (mirrors `bpf/common.h`) and the counter reasons |
//! | `protect.rs` | [`protect::ProtectTable`]: destinations protected by SYN cookies |
//! | `bypass.rs` | per-worker handle on the flow bypass tables: install, refresh, remove |
//! | `stats.rs` | the per-reason counters, summed over CPUs (`stats.picket.xdp`) |
//! | `sys.rs` | the module's system calls: run the program on one frame (`BPF_PROG_TEST_RUN`), the BPF clock |
//!
//! The object is built by `build.rs` with Debian's clang (`-target bpf`) and embedded in
//! the binary. C rather than aya-ebpf: aya-ebpf needs a nightly toolchain and bpf-linker,
//! which stable Rust 1.95 here cannot provide; clang and libbpf's headers are one apt line.
//!
//! Lifetime: programs are attached through BPF links (kernel ≥ 5.9), which the kernel
//! detaches when their last file descriptor closes, so even `kill -9` leaves nothing
//! attached. At attach time a program left by an older picket (netlink-attached, or one
//! that survived some other way) is removed first ([`XdpLayer::attach`]).

pub mod blocklist;
pub mod bypass;
pub mod maps;
pub mod protect;
pub mod stats;
pub mod sys;

pub use sys::{monotonic_ns, TestRun};

use aya::maps::{Array, MapData};
use aya::programs::{SocketFilter, Xdp, XdpFlags};
use aya::{Ebpf, EbpfLoader};
use maps::XdpConfig;
use std::fmt;
use std::os::fd::AsFd;
use std::process::Command;

/// The program object built by build.rs (empty when clang was missing at build time).
/// Aligned: the ELF parser reads its headers in place and needs 8-byte alignment.
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/picket_xdp.o"));

/// The XDP program's name in the object and in `ip link` / `bpftool` listings.
pub const PROGRAM: &str = "picket_xdp";
/// The AF_PACKET socket filter's name in the object.
pub const SOCKET_FILTER: &str = "picket_sockfilter";

#[derive(Debug)]
pub struct XdpError(pub String);

impl fmt::Display for XdpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for XdpError {}

/// How the program is attached to an interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttachMode {
    /// In the driver (veth, most 10G+ NICs): before any socket buffer is allocated.
    Native,
    /// After the socket buffer is built (any interface): slower, same behaviour.
    Generic,
}

impl AttachMode {
    pub fn name(self) -> &'static str {
        match self {
            AttachMode::Native => "native",
            AttachMode::Generic => "generic",
        }
    }
}

/// Settings fixed when the program is loaded.
#[derive(Clone, Debug, Default)]
pub struct XdpOptions {
    /// `bpf/common.h` CFG_* flags.
    pub flags: u32,
    /// MSS announced in SYN cookies (0: 1460).
    pub cookie_mss: u16,
    /// Capacity of each blocklist trie (IPv4, IPv6).
    pub blocklist_entries: u32,
    /// Capacity of each bypass table (IPv4, IPv6); a flow takes two entries.
    pub bypass_entries: u32,
}

/// The loaded program and its maps, attached to zero or more interfaces. Dropping it
/// detaches the program from every interface.
pub struct XdpLayer {
    ebpf: Ebpf,
    attached: Vec<(String, AttachMode)>,
}

impl XdpLayer {
    /// Whether this build carries the XDP program (clang was found at build time).
    pub fn available() -> bool {
        !OBJECT.is_empty()
    }

    /// Loads the object, sizes its maps and writes the program's settings. Nothing is
    /// attached yet.
    pub fn load(opts: &XdpOptions) -> Result<XdpLayer, XdpError> {
        if !Self::available() {
            return Err(XdpError(
                "this picket was built without its XDP program (clang was missing at build time): \
                 apt install clang libbpf-dev, then rebuild"
                    .into(),
            ));
        }
        let mut loader = EbpfLoader::new();
        if opts.blocklist_entries > 0 {
            loader.set_max_entries("picket_block_v4", opts.blocklist_entries);
            loader.set_max_entries("picket_block_v6", opts.blocklist_entries);
        }
        if opts.bypass_entries > 0 {
            loader.set_max_entries("picket_bypass_v4", opts.bypass_entries);
            loader.set_max_entries("picket_bypass_v6", opts.bypass_entries);
        }
        let mut ebpf = loader.load(OBJECT).map_err(|e| XdpError(format!("cannot load the XDP program: {e}")))?;
        {
            let map = ebpf.map_mut("picket_config").ok_or_else(|| missing("picket_config"))?;
            let mut config: Array<&mut MapData, XdpConfig> =
                Array::try_from(map).map_err(|e| XdpError(format!("picket_config: {e}")))?;
            let value = XdpConfig { flags: opts.flags, cookie_mss: opts.cookie_mss, pad: 0 };
            config.set(0, value, 0).map_err(|e| XdpError(format!("picket_config: {e}")))?;
        }
        let program: &mut Xdp = program_mut(&mut ebpf, PROGRAM)?;
        program.load().map_err(|e| XdpError(format!("the kernel refused the XDP program: {}", verifier(&e))))?;
        let filter: &mut SocketFilter = program_mut(&mut ebpf, SOCKET_FILTER)?;
        filter.load().map_err(|e| XdpError(format!("the kernel refused the socket filter: {}", verifier(&e))))?;
        Ok(XdpLayer { ebpf, attached: Vec::new() })
    }

    /// Attaches the program to `interface`: in the driver where it supports XDP, else in
    /// generic mode (with a warning from the caller). A program an earlier picket left
    /// on the interface is removed first; any other XDP program is an error (picket
    /// does not replace what it did not install).
    pub fn attach(&mut self, interface: &str) -> Result<AttachMode, XdpError> {
        self.attach_preferring(interface, false)
    }

    /// [`XdpLayer::attach`], in generic mode only when `generic_only` (`ddos.attach-mode:
    /// generic`, `af-xdp.force-xdp-mode: skb`).
    pub fn attach_preferring(&mut self, interface: &str, generic_only: bool) -> Result<AttachMode, XdpError> {
        remove_stale(interface)?;
        let program: &mut Xdp = program_mut(&mut self.ebpf, PROGRAM)?;
        let native = if generic_only { None } else { Some(program.attach(interface, XdpFlags::DRV_MODE)) };
        let mode = match native {
            Some(Ok(_)) => AttachMode::Native,
            None => match program.attach(interface, XdpFlags::SKB_MODE) {
                Ok(_) => AttachMode::Generic,
                Err(generic) => {
                    return Err(XdpError(format!(
                        "cannot attach XDP to {interface} in generic mode: {}",
                        cause(&generic)
                    )))
                }
            },
            Some(Err(native)) => match program.attach(interface, XdpFlags::SKB_MODE) {
                Ok(_) => AttachMode::Generic,
                Err(generic) => {
                    return Err(XdpError(format!(
                        "cannot attach XDP to {interface}: native mode: {}; generic mode: {}",
                        cause(&native),
                        cause(&generic)
                    )))
                }
            },
        };
        self.attached.push((interface.to_string(), mode));
        Ok(mode)
    }

    /// The interfaces the program is attached to, and how.
    pub fn attached(&self) -> &[(String, AttachMode)] {
        &self.attached
    }

    /// Attaches the AF_PACKET socket filter to `socket`, so that it hides what the XDP
    /// program passed through or bypassed.
    pub fn filter_socket(&mut self, socket: impl AsFd) -> Result<(), XdpError> {
        let filter: &mut SocketFilter = program_mut(&mut self.ebpf, SOCKET_FILTER)?;
        filter.attach(socket).map(|_| ()).map_err(|e| XdpError(format!("cannot attach the socket filter: {e}")))
    }

    /// A descriptor of the loaded socket filter, for [`AfPacketConfig::socket_filter`]
    /// (`crate::capture::afpacket`): attached to each capture socket before it is bound.
    pub fn socket_filter_fd(&mut self) -> Result<std::os::fd::OwnedFd, XdpError> {
        let filter: &mut SocketFilter = program_mut(&mut self.ebpf, SOCKET_FILTER)?;
        let fd = filter.fd().map_err(|e| XdpError(format!("{SOCKET_FILTER}: {e}")))?;
        fd.as_fd().try_clone_to_owned().map_err(|e| XdpError(format!("{SOCKET_FILTER}: {e}")))
    }

    /// Runs the XDP program once on `frame` in the kernel, attached or not.
    pub fn test_run(&mut self, frame: &[u8]) -> Result<sys::TestRun, XdpError> {
        let program: &mut Xdp = program_mut(&mut self.ebpf, PROGRAM)?;
        let fd = program.fd().map_err(|e| XdpError(format!("{PROGRAM}: {e}")))?;
        sys::test_run(fd.as_fd(), frame).map_err(|e| XdpError(format!("BPF_PROG_TEST_RUN: {e}")))
    }

    /// The loaded object, for the map handles of the stages (`take_map`, `map_mut`).
    pub fn ebpf_mut(&mut self) -> &mut Ebpf {
        &mut self.ebpf
    }
}

pub(crate) fn missing(name: &str) -> XdpError {
    XdpError(format!("the XDP object has no map {name} (stale build?)"))
}

fn program_mut<'a, T>(ebpf: &'a mut Ebpf, name: &str) -> Result<&'a mut T, XdpError>
where
    &'a mut T: TryFrom<&'a mut aya::programs::Program, Error = aya::programs::ProgramError>,
{
    let program = ebpf.program_mut(name).ok_or_else(|| XdpError(format!("the XDP object has no program {name}")))?;
    program.try_into().map_err(|e| XdpError(format!("{name}: {e}")))
}

/// The innermost message of an aya error (the kernel's errno text).
fn cause(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text
}

/// A load error with the verifier's last lines, which say why.
fn verifier(e: &aya::programs::ProgramError) -> String {
    match e {
        aya::programs::ProgramError::LoadError { io_error, verifier_log } => {
            let log = verifier_log.to_string();
            let tail: Vec<&str> = log.lines().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
            format!("{io_error}; verifier: {}", tail.join(" | "))
        }
        other => cause(other),
    }
}

/// Removes an XDP program named [`PROGRAM`] left attached to `interface` (by a picket
/// that attached through netlink, or a pinned link), and refuses to touch any other
/// program. Uses iproute2's view of the interface.
fn remove_stale(interface: &str) -> Result<(), XdpError> {
    let Ok(out) = Command::new("ip").args(["-j", "-d", "link", "show", "dev", interface]).output() else {
        return Ok(()); // no iproute2: nothing to look at; attaching will say if busy
    };
    if !out.status.success() {
        return Err(XdpError(format!("no interface {interface}: {}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    let Ok(links) = serde_json::from_slice::<serde_json::Value>(&out.stdout) else { return Ok(()) };
    let Some(xdp) = links.get(0).and_then(|l| l.get("xdp")) else { return Ok(()) };
    let attached: Vec<(String, String)> = match xdp.get("attached").and_then(|a| a.as_array()) {
        Some(list) => list
            .iter()
            .map(|a| {
                let mode = a.get("mode").and_then(|m| m.as_u64()).unwrap_or(0);
                let name = a.pointer("/prog/name").and_then(|n| n.as_str()).unwrap_or("").to_string();
                (mode_word(mode), name)
            })
            .collect(),
        None => {
            let mode = xdp.get("mode").and_then(|m| m.as_u64()).unwrap_or(0);
            let name = xdp.pointer("/prog/name").and_then(|n| n.as_str()).unwrap_or("").to_string();
            vec![(mode_word(mode), name)]
        }
    };
    for (word, name) in attached {
        if name != PROGRAM {
            return Err(XdpError(format!(
                "{interface} already has an XDP program ({}); remove it first: ip link set dev {interface} {word} off",
                if name.is_empty() { "unnamed" } else { &name }
            )));
        }
        let status = Command::new("ip").args(["link", "set", "dev", interface, &word, "off"]).status();
        if !status.is_ok_and(|s| s.success()) {
            return Err(XdpError(format!(
                "{interface} has a {PROGRAM} program left by an earlier run that cannot be removed; \
                 try: ip link set dev {interface} {word} off"
            )));
        }
        eprintln!("picket: removed the XDP program an earlier run left on {interface} ({word})");
    }
    Ok(())
}

/// iproute2's keyword for an XDP attach mode number (XDP_ATTACHED_*).
fn mode_word(mode: u64) -> String {
    match mode {
        2 => "xdpgeneric",
        3 => "xdpoffload",
        _ => "xdpdrv",
    }
    .to_string()
}
