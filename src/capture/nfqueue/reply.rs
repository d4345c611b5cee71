//! Reject replies of an NFQUEUE port: the packets `picket_core::reject` builds for a
//! rejected packet (TCP RST, ICMP unreachable), sent as whole IP packets through a raw
//! socket of the router's network namespace, so the kernel routes each to its side.

use std::io;
use std::net::IpAddr;
use std::os::fd::OwnedFd;

use super::sys;
use super::NfQueueStats;
use crate::inspect::Reject;
use crate::packet::LinkType;
use crate::reject::{replies, Reply};

/// The raw sockets replies leave through, one per IP version.
pub(super) struct Replier {
    v4: OwnedFd,
    /// `None` when the kernel has no IPv6: IPv6 replies then count as TX errors.
    v6: Option<OwnedFd>,
    /// The replies of the packet being answered; reused.
    scratch: Vec<Reply>,
}

impl Replier {
    /// Opens the raw sockets (needs CAP_NET_RAW); a kernel without IPv6 is not an error.
    pub(super) fn open() -> io::Result<Self> {
        let v4 = sys::raw_ip_socket(false)?;
        let v6 = match sys::raw_ip_socket(true) {
            Ok(fd) => Some(fd),
            Err(e) if e.raw_os_error() == Some(libc::EAFNOSUPPORT) => None,
            Err(e) => return Err(e),
        };
        Ok(Replier { v4, v6, scratch: Vec::new() })
    }

    /// Builds and sends the replies `reject` asks for to the blocked IP packet `packet`.
    pub(super) fn send(&mut self, packet: &[u8], reject: Reject, stats: &mut NfQueueStats) {
        self.scratch.clear();
        if replies(LinkType::RawIp, packet, reject, &mut self.scratch).is_err() {
            stats.reply_errors += 1;
            return;
        }
        for reply in &self.scratch {
            let fd = match reply.dst {
                IpAddr::V4(_) => Some(&self.v4),
                IpAddr::V6(_) => self.v6.as_ref(),
            };
            match fd.map(|fd| sys::send_ip_packet(fd, &reply.frame, reply.dst)) {
                Some(Ok(())) => stats.replies += 1,
                _ => stats.tx_errors += 1,
            }
        }
    }
}
