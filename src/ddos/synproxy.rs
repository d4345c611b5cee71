//! What the XDP SYN cookies need from the kernel, installed for the run and removed on
//! exit (`ddos.syn-cookies.synproxy: yes`, the default).
//!
//! The XDP program answers SYNs to protected destinations itself and passes the client's
//! ACK (cookie checked) to the kernel. That ACK belongs to no connection conntrack knows:
//! with `net.netfilter.nf_conntrack_tcp_loose=0` conntrack calls it INVALID instead of
//! picking the connection up mid-stream, and the iptables `SYNPROXY` target then checks
//! the cookie again, opens the real connection to the server and splices the two. So per
//! XDP interface, at the top of the filter table's INPUT chain (IPv4 and IPv6):
//!
//! ```text
//! -i IF -p tcp -m conntrack --ctstate INVALID,UNTRACKED -j SYNPROXY --sack-perm --timestamp --wscale 7 --mss MSS
//! -i IF -p tcp -m conntrack --ctstate INVALID -j DROP
//! ```
//!
//! Each rule carries the comment `picket-ddos:IF:loose=OLD`, which names the interface
//! and the sysctl's value before picket changed it. A run that died without cleaning up
//! (`kill -9`) is repaired by the next start on the same interface: its rules are deleted
//! and the old sysctl value comes from their comment. Rules of other interfaces (another
//! picket) are left alone.
//!
//! Side effect while installed: TCP connections on IF that conntrack did not see open
//! (opened before conntrack was loaded) are INVALID and dropped.

use std::fmt;
use std::io::ErrorKind;
use std::process::Command;

/// The comment tag of picket's rules (followed by `:IF:loose=N`).
pub const TAG: &str = "picket-ddos";
/// Window scale SYNPROXY announces to the client; `COOKIE_WSCALE` in bpf/syncookie.h.
pub const WSCALE: u8 = 7;
/// The IPv6 header is 20 bytes longer than IPv4's: the announced MSS is that much less
/// (`IPV6_MSS_LESS` in bpf/syncookie.h).
pub const IPV6_MSS_LESS: u16 = 20;
/// The sysctl that must be 0 for SYNPROXY to see the cookie ACKs (per network namespace).
pub const LOOSE_SYSCTL: &str = "/proc/sys/net/netfilter/nf_conntrack_tcp_loose";
const CHAIN: &str = "INPUT";

#[derive(Debug)]
pub struct SynproxyError(pub String);

impl fmt::Display for SynproxyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SynproxyError {}

/// The two iptables front ends, one per address family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tool {
    Ipv4,
    Ipv6,
}

impl Tool {
    fn program(self) -> &'static str {
        match self {
            Tool::Ipv4 => "iptables",
            Tool::Ipv6 => "ip6tables",
        }
    }
}

/// The installed rules and the sysctl's old value; dropping it removes the rules and
/// restores the value.
#[derive(Debug)]
pub struct SynproxyGuard {
    /// (front end, rule spec after the chain name), in installation order.
    rules: Vec<(Tool, Vec<String>)>,
    /// The value of [`LOOSE_SYSCTL`] before picket (restored on drop).
    old_loose: Option<String>,
}

impl SynproxyGuard {
    /// Removes what an earlier run left on `interfaces`, installs the rules and sets the
    /// sysctl. On error, whatever was installed is removed again.
    pub fn install(interfaces: &[String], mss: u16) -> Result<SynproxyGuard, SynproxyError> {
        let mut stale_loose = None;
        for tool in [Tool::Ipv4, Tool::Ipv6] {
            for (interface, loose) in remove_stale(tool, interfaces)? {
                eprintln!("picket: removed the {} SYNPROXY rules an earlier run left on {interface}", tool.program());
                stale_loose = stale_loose.or(loose);
            }
        }
        // An earlier run's saved value wins: the current one is what that run set.
        let current = std::fs::read_to_string(LOOSE_SYSCTL).ok().map(|v| v.trim().to_string());
        let old_loose = stale_loose.or(current).unwrap_or_else(|| "1".into());
        let mut guard = SynproxyGuard { rules: Vec::new(), old_loose: None };
        for interface in interfaces {
            let tag = format!("{TAG}:{interface}:loose={old_loose}");
            for tool in [Tool::Ipv4, Tool::Ipv6] {
                let tool_mss = if tool == Tool::Ipv6 { mss - IPV6_MSS_LESS } else { mss };
                // Inserted at the top, DROP first so that SYNPROXY ends up above it.
                for spec in [drop_rule(interface, &tag), synproxy_rule(interface, &tag, tool_mss)] {
                    iptables(tool, "-I", &spec, Some(1)).map_err(|e| e.with_interface(interface))?;
                    guard.rules.push((tool, spec));
                }
            }
        }
        // The conntrack sysctls exist once the conntrack module is loaded, which the
        // rules' `-m conntrack` did.
        std::fs::write(LOOSE_SYSCTL, "0").map_err(|e| {
            SynproxyError(format!(
                "cannot set {LOOSE_SYSCTL} to 0 ({e}); SYN cookies need it (or ddos.syn-cookies.synproxy: no)"
            ))
        })?;
        guard.old_loose = Some(old_loose);
        Ok(guard)
    }

    /// How many rules are installed (two per interface and address family).
    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }
}

impl Drop for SynproxyGuard {
    fn drop(&mut self) {
        for (tool, spec) in self.rules.drain(..).rev() {
            if let Err(e) = iptables(tool, "-D", &spec, None) {
                eprintln!("picket: {e}");
            }
        }
        if let Some(old) = self.old_loose.take() {
            if let Err(e) = std::fs::write(LOOSE_SYSCTL, &old) {
                eprintln!("picket: cannot restore {LOOSE_SYSCTL} to {old}: {e}");
            }
        }
    }
}

fn synproxy_rule(interface: &str, tag: &str, mss: u16) -> Vec<String> {
    let mut spec = matcher(interface, "INVALID,UNTRACKED", tag);
    spec.extend(
        ["-j", "SYNPROXY", "--sack-perm", "--timestamp", "--wscale", &WSCALE.to_string(), "--mss", &mss.to_string()]
            .map(String::from),
    );
    spec
}

fn drop_rule(interface: &str, tag: &str) -> Vec<String> {
    let mut spec = matcher(interface, "INVALID", tag);
    spec.extend(["-j", "DROP"].map(String::from));
    spec
}

fn matcher(interface: &str, states: &str, tag: &str) -> Vec<String> {
    ["-i", interface, "-p", "tcp", "-m", "conntrack", "--ctstate", states, "-m", "comment", "--comment", tag]
        .map(String::from)
        .to_vec()
}

struct ToolError {
    text: String,
}

impl ToolError {
    fn with_interface(self, interface: &str) -> SynproxyError {
        SynproxyError(format!("SYN cookies on {interface}: {}", self.text))
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl From<ToolError> for SynproxyError {
    fn from(e: ToolError) -> Self {
        SynproxyError(e.text)
    }
}

/// `iptables -w OP INPUT [POS] SPEC...`.
fn iptables(tool: Tool, op: &str, spec: &[String], position: Option<u32>) -> Result<(), ToolError> {
    let program = tool.program();
    let mut command = Command::new(program);
    command.args(["-w", op, CHAIN]);
    if let Some(p) = position {
        command.arg(p.to_string());
    }
    let out = command.args(spec).output().map_err(|e| ToolError {
        text: if e.kind() == ErrorKind::NotFound {
            format!("{program} not found: apt install iptables (or ddos.syn-cookies.synproxy: no)")
        } else {
            format!("cannot run {program}: {e}")
        },
    })?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr).trim().replace('\n', "; ");
    let text =
        if op != "-D" && (said.contains("SYNPROXY") || said.contains("No such file") || said.contains("conntrack")) {
            format!(
                "{program} cannot add the SYNPROXY rule ({said}): the kernel needs the xt_SYNPROXY, nf_synproxy_core \
             and nf_conntrack modules (CONFIG_IP_NF_TARGET_SYNPROXY)"
            )
        } else {
            format!("{program} {op} {CHAIN} {} failed: {said}", spec.join(" "))
        };
    Err(ToolError { text })
}

/// Deletes picket's rules for `interfaces` from `tool`'s INPUT chain; returns each
/// deleted rule's interface and the sysctl value its comment saved.
fn remove_stale(tool: Tool, interfaces: &[String]) -> Result<Vec<(String, Option<String>)>, SynproxyError> {
    let program = tool.program();
    let out = match Command::new(program).args(["-w", "-S", CHAIN]).output() {
        Ok(out) if out.status.success() => out,
        Ok(out) => {
            return Err(SynproxyError(format!(
                "{program} -S {CHAIN} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(SynproxyError(format!(
                "{program} not found: apt install iptables (or ddos.syn-cookies.synproxy: no)"
            )))
        }
        Err(e) => return Err(SynproxyError(format!("cannot run {program}: {e}"))),
    };
    let mut removed = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((interface, loose)) = parse_tag(line) else { continue };
        if !interfaces.contains(&interface) {
            continue;
        }
        // `-A INPUT spec...` as iptables -S prints it; the comment is quoted.
        let spec: Vec<String> = line.split_whitespace().skip(2).map(|t| t.trim_matches('"').to_string()).collect();
        iptables(tool, "-D", &spec, None)?;
        removed.push((interface, loose));
    }
    Ok(removed)
}

/// The interface and saved sysctl value of a `iptables -S` line carrying picket's tag.
fn parse_tag(line: &str) -> Option<(String, Option<String>)> {
    let comment = line.split("--comment ").nth(1)?.split_whitespace().next()?.trim_matches('"');
    let rest = comment.strip_prefix(TAG)?.strip_prefix(':')?;
    let (interface, saved) = match rest.split_once(':') {
        Some((i, s)) => (i, s.strip_prefix("loose=").map(String::from)),
        None => (rest, None),
    };
    (!interface.is_empty()).then(|| (interface.to_string(), saved))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_read_back_from_iptables_listings() {
        let line = "-A INPUT -i veth0 -p tcp -m conntrack --ctstate INVALID -m comment --comment \
                    \"picket-ddos:veth0:loose=1\" -j DROP";
        assert_eq!(parse_tag(line), Some(("veth0".into(), Some("1".into()))));
        assert_eq!(parse_tag("-A INPUT -m comment --comment \"other\" -j DROP"), None);
        assert_eq!(parse_tag("-A INPUT -j DROP"), None);
        assert_eq!(parse_tag("-A INPUT -m comment --comment picket-ddos:eth1 -j DROP"), Some(("eth1".into(), None)));
    }

    #[test]
    fn rules_name_the_interface_and_the_mss() {
        let spec = synproxy_rule("eth0", "picket-ddos:eth0:loose=1", 1400).join(" ");
        assert!(spec.starts_with("-i eth0 -p tcp -m conntrack --ctstate INVALID,UNTRACKED"), "{spec}");
        assert!(spec.ends_with("-j SYNPROXY --sack-perm --timestamp --wscale 7 --mss 1400"), "{spec}");
        assert!(drop_rule("eth0", "t").join(" ").ends_with("--ctstate INVALID -m comment --comment t -j DROP"));
    }
}
