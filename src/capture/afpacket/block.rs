//! Reading a TPACKET_V3 block (or a TPACKET_V2 frame) that the kernel has handed over
//! to user space.
//!
//! Safe code over a byte slice: every offset the kernel wrote is checked against the
//! block before use, so a corrupt header is counted and skipped instead of read past.
//! Field offsets come from the `libc` declarations of the kernel structures, not from
//! hand-written numbers.

use std::mem::offset_of;

use libc::{tpacket2_hdr, tpacket3_hdr, tpacket_block_desc, tpacket_hdr_v1};

use crate::bytes::{ne_u16, ne_u32};

const BLOCK_HEADER: usize = offset_of!(tpacket_block_desc, hdr);
/// Where `block_status` sits in a block; the ring reads and writes it atomically.
pub(super) const BLOCK_STATUS_OFFSET: usize = BLOCK_HEADER + offset_of!(tpacket_hdr_v1, block_status);
const NUM_PKTS_OFFSET: usize = BLOCK_HEADER + offset_of!(tpacket_hdr_v1, num_pkts);
const FIRST_PKT_OFFSET: usize = BLOCK_HEADER + offset_of!(tpacket_hdr_v1, offset_to_first_pkt);
/// Bytes of the block descriptor; the first packet header cannot start before it.
pub(super) const BLOCK_DESC_LEN: usize = std::mem::size_of::<tpacket_block_desc>();

const NEXT_OFFSET: usize = offset_of!(tpacket3_hdr, tp_next_offset);
const SEC: usize = offset_of!(tpacket3_hdr, tp_sec);
const NSEC: usize = offset_of!(tpacket3_hdr, tp_nsec);
const SNAPLEN: usize = offset_of!(tpacket3_hdr, tp_snaplen);
const LEN: usize = offset_of!(tpacket3_hdr, tp_len);
const STATUS: usize = offset_of!(tpacket3_hdr, tp_status);
const MAC: usize = offset_of!(tpacket3_hdr, tp_mac);
const VLAN_TCI: usize = offset_of!(tpacket3_hdr, hv1.tp_vlan_tci);
const VLAN_TPID: usize = offset_of!(tpacket3_hdr, hv1.tp_vlan_tpid);
const FRAME_HEADER_LEN: usize = std::mem::size_of::<tpacket3_hdr>();
/// The kernel writes the packet's link-level address (`sockaddr_ll`) right after the
/// packet header, aligned to TPACKET_ALIGNMENT; its `sll_pkttype` says whether the
/// packet was received or sent by this host.
const PKTTYPE: usize =
    FRAME_HEADER_LEN.next_multiple_of(libc::TPACKET_ALIGNMENT) + offset_of!(libc::sockaddr_ll, sll_pkttype);

/// TPACKET_V2: one packet per frame, its header at the start of the frame.
pub(super) const V2_STATUS_OFFSET: usize = offset_of!(tpacket2_hdr, tp_status);
const V2_LEN: usize = offset_of!(tpacket2_hdr, tp_len);
const V2_SNAPLEN: usize = offset_of!(tpacket2_hdr, tp_snaplen);
const V2_MAC: usize = offset_of!(tpacket2_hdr, tp_mac);
const V2_SEC: usize = offset_of!(tpacket2_hdr, tp_sec);
const V2_NSEC: usize = offset_of!(tpacket2_hdr, tp_nsec);
const V2_VLAN_TCI: usize = offset_of!(tpacket2_hdr, tp_vlan_tci);
const V2_VLAN_TPID: usize = offset_of!(tpacket2_hdr, tp_vlan_tpid);
const V2_HEADER_LEN: usize = std::mem::size_of::<tpacket2_hdr>();
const V2_PKTTYPE: usize =
    V2_HEADER_LEN.next_multiple_of(libc::TPACKET_ALIGNMENT) + offset_of!(libc::sockaddr_ll, sll_pkttype);

/// 802.1Q, used when the kernel reports a tag but not its protocol identifier.
const ETH_P_8021Q: u16 = 0x8100;
/// Destination and source MAC addresses: the tag goes right after them.
const MAC_ADDRESSES_LEN: usize = 12;

/// What a block holds: how many packets and where the first one starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BlockHeader {
    pub num_packets: u32,
    pub first_offset: usize,
}

pub(super) fn read_block_header(block: &[u8]) -> Option<BlockHeader> {
    let num_packets = ne_u32(block, NUM_PKTS_OFFSET)?;
    let first_offset = ne_u32(block, FIRST_PKT_OFFSET)? as usize;
    if num_packets > 0 && first_offset < BLOCK_DESC_LEN {
        return None;
    }
    Some(BlockHeader { num_packets, first_offset })
}

/// One packet of a block, located but not yet copied: plain numbers, so the caller can
/// release its borrow of the block before building the [`super::RawPacket`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FrameLocation {
    pub sec: u32,
    pub nsec: u32,
    /// Length on the wire, as the kernel saw it (VLAN tag already stripped).
    pub wire_len: u32,
    /// Captured bytes: `block[data_start..data_end]`.
    pub data_start: usize,
    pub data_end: usize,
    /// The tag the kernel took out of the frame, if any: (TPID, TCI).
    pub vlan: Option<(u16, u16)>,
    /// Offset of the next packet header in the block; 0 when this was the last one.
    pub next_offset: u32,
    /// `PACKET_HOST`, `PACKET_OUTGOING`, ... (`sll_pkttype`); `None` when the kernel
    /// left no room for the address before the data.
    pub pkttype: Option<u8>,
    /// TP_STATUS_CSUMNOTREADY: the sender left the transport checksum to offload (a
    /// packet of this host, or from a veth peer): it is not valid in the frame.
    pub csum_not_ready: bool,
}

/// Reads the packet header at `offset` and checks that the captured bytes lie inside
/// the block. `None` means the header is corrupt; the rest of the block is skipped.
pub(super) fn read_frame(block: &[u8], offset: usize) -> Option<FrameLocation> {
    let end_of_header = offset.checked_add(FRAME_HEADER_LEN)?;
    if end_of_header > block.len() {
        return None;
    }
    let status = ne_u32(block, offset + STATUS)?;
    let snaplen = ne_u32(block, offset + SNAPLEN)? as usize;
    let mac = ne_u16(block, offset + MAC)? as usize;
    let data_start = offset.checked_add(mac)?;
    let data_end = data_start.checked_add(snaplen)?;
    if mac < FRAME_HEADER_LEN || data_end > block.len() {
        return None;
    }
    let vlan = if status & libc::TP_STATUS_VLAN_VALID != 0 {
        let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
            ne_u16(block, offset + VLAN_TPID)?
        } else {
            ETH_P_8021Q
        };
        // The kernel field is 32 bits wide but a TCI is 16: priority, DEI and VLAN id.
        Some((tpid, ne_u32(block, offset + VLAN_TCI)? as u16))
    } else {
        None
    };
    Some(FrameLocation {
        sec: ne_u32(block, offset + SEC)?,
        nsec: ne_u32(block, offset + NSEC)?,
        wire_len: ne_u32(block, offset + LEN)?,
        data_start,
        data_end,
        vlan,
        next_offset: ne_u32(block, offset + NEXT_OFFSET)?,
        pkttype: (offset + PKTTYPE < data_start).then(|| block.get(offset + PKTTYPE).copied()).flatten(),
        csum_not_ready: status & libc::TP_STATUS_CSUMNOTREADY != 0,
    })
}

/// Reads the TPACKET_V2 frame the kernel handed over (`frame` is the whole slot) and
/// checks that the captured bytes lie inside it. `None` means the header is corrupt.
pub(super) fn read_frame_v2(frame: &[u8]) -> Option<FrameLocation> {
    if frame.len() < V2_HEADER_LEN {
        return None;
    }
    let status = ne_u32(frame, V2_STATUS_OFFSET)?;
    let snaplen = ne_u32(frame, V2_SNAPLEN)? as usize;
    let data_start = ne_u16(frame, V2_MAC)? as usize;
    let data_end = data_start.checked_add(snaplen)?;
    if data_start < V2_HEADER_LEN || data_end > frame.len() {
        return None;
    }
    let vlan = if status & libc::TP_STATUS_VLAN_VALID != 0 {
        let tpid =
            if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 { ne_u16(frame, V2_VLAN_TPID)? } else { ETH_P_8021Q };
        Some((tpid, ne_u16(frame, V2_VLAN_TCI)?))
    } else {
        None
    };
    Some(FrameLocation {
        sec: ne_u32(frame, V2_SEC)?,
        nsec: ne_u32(frame, V2_NSEC)?,
        wire_len: ne_u32(frame, V2_LEN)?,
        data_start,
        data_end,
        vlan,
        next_offset: 0,
        pkttype: (V2_PKTTYPE < data_start).then(|| frame.get(V2_PKTTYPE).copied()).flatten(),
        csum_not_ready: status & libc::TP_STATUS_CSUMNOTREADY != 0,
    })
}

/// Puts back the 802.1Q/802.1ad tag the kernel moved out of an Ethernet frame, so the
/// decoder sees the frame as it was on the wire. `out` is reused between packets and
/// only grows to the largest tagged frame seen. Returns false, leaving `out` empty,
/// when the frame is too short to hold MAC addresses.
pub(super) fn restore_vlan_tag(frame: &[u8], tpid: u16, tci: u16, out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some((addresses, rest)) = frame.split_at_checked(MAC_ADDRESSES_LEN) else {
        return false;
    };
    out.reserve(frame.len() + 4);
    out.extend_from_slice(addresses);
    out.extend_from_slice(&tpid.to_be_bytes());
    out.extend_from_slice(&tci.to_be_bytes());
    out.extend_from_slice(rest);
    true
}

#[cfg(test)]
pub(super) mod testing {
    //! Builds blocks the way the kernel lays them out, for the parser's unit tests.
    use super::*;

    pub struct TestFrame<'a> {
        pub sec: u32,
        pub nsec: u32,
        pub wire_len: u32,
        pub data: &'a [u8],
        pub vlan: Option<(Option<u16>, u32)>,
    }

    fn put_u32(block: &mut [u8], at: usize, value: u32) {
        block[at..at + 4].copy_from_slice(&value.to_ne_bytes());
    }
    fn put_u16(block: &mut [u8], at: usize, value: u16) {
        block[at..at + 2].copy_from_slice(&value.to_ne_bytes());
    }

    /// A block of `size` bytes holding `frames`, each header 16-byte aligned and
    /// followed by 2 bytes of padding before the data, as the kernel does for Ethernet.
    pub fn build_block(size: usize, frames: &[TestFrame<'_>]) -> Vec<u8> {
        let mut block = vec![0u8; size];
        put_u32(&mut block, BLOCK_STATUS_OFFSET, libc::TP_STATUS_USER);
        put_u32(&mut block, NUM_PKTS_OFFSET, frames.len() as u32);
        let first = BLOCK_DESC_LEN.next_multiple_of(16);
        put_u32(&mut block, FIRST_PKT_OFFSET, first as u32);
        let mut offset = first;
        for (i, frame) in frames.iter().enumerate() {
            let mac = FRAME_HEADER_LEN + 2 + 16;
            let next = (mac + frame.data.len()).next_multiple_of(16);
            let last = i + 1 == frames.len();
            put_u32(&mut block, offset + NEXT_OFFSET, if last { 0 } else { next as u32 });
            put_u32(&mut block, offset + SEC, frame.sec);
            put_u32(&mut block, offset + NSEC, frame.nsec);
            put_u32(&mut block, offset + SNAPLEN, frame.data.len() as u32);
            put_u32(&mut block, offset + LEN, frame.wire_len);
            let mut status = libc::TP_STATUS_USER;
            if let Some((tpid, tci)) = frame.vlan {
                status |= libc::TP_STATUS_VLAN_VALID;
                put_u32(&mut block, offset + VLAN_TCI, tci);
                if let Some(tpid) = tpid {
                    status |= libc::TP_STATUS_VLAN_TPID_VALID;
                    put_u16(&mut block, offset + VLAN_TPID, tpid);
                }
            }
            put_u32(&mut block, offset + STATUS, status);
            put_u16(&mut block, offset + MAC, mac as u16);
            block[offset + mac..offset + mac + frame.data.len()].copy_from_slice(frame.data);
            offset += next;
        }
        block
    }

    pub fn first_frame_offset() -> usize {
        BLOCK_DESC_LEN.next_multiple_of(16)
    }

    pub fn frame_field_offsets() -> (usize, usize, usize) {
        (SNAPLEN, MAC, NEXT_OFFSET)
    }
    pub fn block_field_offsets() -> (usize, usize) {
        (NUM_PKTS_OFFSET, FIRST_PKT_OFFSET)
    }
}
