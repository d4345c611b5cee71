use proptest::prelude::*;

use super::block::testing::{block_field_offsets, build_block, first_frame_offset, frame_field_offsets, TestFrame};
use super::block::{read_block_header, read_frame, read_frame_v2, restore_vlan_tag, FrameLocation};
use super::*;

fn config() -> AfPacketConfig {
    AfPacketConfig::for_interface("eth0")
}

fn invalid_field(cfg: &AfPacketConfig) -> &'static str {
    match cfg.validate() {
        Err(AfPacketError::InvalidConfig { field, .. }) => field,
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn default_config_is_valid_and_sane() {
    let cfg = config();
    cfg.validate().unwrap();
    assert_eq!(cfg.fanout_mode, FanoutMode::Hash);
    assert_eq!(cfg.ring_bytes(), 32 << 20);
    assert!(!cfg.stop.load(Ordering::Relaxed));
}

#[test]
fn validation_names_the_bad_setting() {
    let mut cfg = config();
    cfg.interface = String::new();
    assert_eq!(invalid_field(&cfg), "interface");
    cfg.interface = "a-name-of-16-chr".into();
    assert_eq!(invalid_field(&cfg), "interface");
    cfg.interface = "a-name-of-15-ch".into();
    cfg.validate().unwrap();
    for bad in ["eth 0", "../x", "..", "et\0h"] {
        cfg.interface = bad.into();
        assert_eq!(invalid_field(&cfg), "interface", "{bad:?}");
    }

    let mut cfg = config();
    cfg.block_size = 1000;
    assert_eq!(invalid_field(&cfg), "block_size");
    cfg.block_size = 0;
    assert_eq!(invalid_field(&cfg), "block_size");

    let mut cfg = config();
    cfg.frame_size = 2040; // not a multiple of 16
    assert_eq!(invalid_field(&cfg), "frame_size");
    cfg.frame_size = 32; // smaller than the packet header
    assert_eq!(invalid_field(&cfg), "frame_size");
    cfg.frame_size = cfg.block_size * 2;
    assert_eq!(invalid_field(&cfg), "frame_size");

    let mut cfg = config();
    cfg.block_count = 1;
    assert_eq!(invalid_field(&cfg), "block_count");
    cfg.block_count = 8192; // 8 GiB of 1 MiB blocks
    assert_eq!(invalid_field(&cfg), "block_count");

    let mut cfg = config();
    cfg.retire_timeout_ms = MAX_RETIRE_TIMEOUT_MS + 1;
    assert_eq!(invalid_field(&cfg), "retire_timeout_ms");
    cfg.retire_timeout_ms = 0;
    cfg.validate().unwrap();

    let mut cfg = config();
    cfg.fanout_mode = FanoutMode::Ebpf(-1);
    assert_eq!(invalid_field(&cfg), "fanout_mode");
}

#[test]
fn error_messages_say_what_to_do() {
    let eperm =
        AfPacketError::NeedsPrivilege { interface: "eth0".into(), source: io::Error::from_raw_os_error(libc::EPERM) };
    assert!(eperm.to_string().contains("needs root or CAP_NET_RAW"), "{eperm}");
    let missing = AfPacketError::NoSuchInterface { interface: "eth9".into() };
    assert_eq!(missing.to_string(), "no such interface eth9");
    let down = AfPacketError::InterfaceDown { interface: "eth1".into() };
    assert!(down.to_string().starts_with("interface eth1 is down"), "{down}");
    let cfg = AfPacketConfig { block_size: 1000, ..config() };
    assert!(cfg.validate().unwrap_err().to_string().starts_with("af-packet block_size: 1000"));
}

#[test]
fn sockets_can_move_to_their_worker_thread() {
    fn assert_send<T: Send>() {}
    assert_send::<AfPacketSocket>();
}

#[test]
fn link_types_follow_the_hardware_type() {
    assert_eq!(link_type_for(libc::ARPHRD_ETHER), Some(LinkType::Ethernet));
    assert_eq!(link_type_for(libc::ARPHRD_LOOPBACK), Some(LinkType::Ethernet));
    assert_eq!(link_type_for(libc::ARPHRD_NONE), Some(LinkType::RawIp));
    assert_eq!(link_type_for(libc::ARPHRD_IEEE80211_RADIOTAP), None);
}

fn frames_of(block: &[u8]) -> Vec<FrameLocation> {
    let header = read_block_header(block).unwrap();
    let mut offset = header.first_offset;
    let mut out = Vec::new();
    for _ in 0..header.num_packets {
        let frame = read_frame(block, offset).unwrap();
        out.push(frame);
        offset += frame.next_offset as usize;
    }
    out
}

#[test]
fn block_parser_reads_kernel_layout() {
    let first = [0xaa_u8; 60];
    let second = [0x55_u8; 1514];
    let block = build_block(
        8192,
        &[
            TestFrame { sec: 7, nsec: 999, wire_len: 60, data: &first, vlan: None },
            TestFrame { sec: 8, nsec: 1, wire_len: 9000, data: &second, vlan: Some((Some(0x88a8), 0x2064)) },
        ],
    );
    let frames = frames_of(&block);
    assert_eq!(frames.len(), 2);
    assert_eq!((frames[0].sec, frames[0].nsec, frames[0].wire_len, frames[0].vlan), (7, 999, 60, None));
    assert_eq!(&block[frames[0].data_start..frames[0].data_end], &first);
    assert_eq!((frames[1].wire_len, frames[1].vlan), (9000, Some((0x88a8, 0x2064))));
    assert_eq!(&block[frames[1].data_start..frames[1].data_end], &second[..]);
    assert_eq!(frames[1].next_offset, 0);

    // Without TP_STATUS_VLAN_TPID_VALID the tag is taken as 802.1Q.
    let block = build_block(4096, &[TestFrame { sec: 1, nsec: 0, wire_len: 60, data: &first, vlan: Some((None, 5)) }]);
    assert_eq!(frames_of(&block)[0].vlan, Some((0x8100, 5)));
}

#[test]
fn corrupt_offsets_are_rejected_not_followed() {
    let data = [1u8; 100];
    let clean = build_block(4096, &[TestFrame { sec: 1, nsec: 0, wire_len: 100, data: &data, vlan: None }]);
    let (snaplen_at, mac_at, _) = frame_field_offsets();
    let first = first_frame_offset();

    let mut block = clean.clone();
    block[first + snaplen_at..first + snaplen_at + 4].copy_from_slice(&5000u32.to_ne_bytes());
    assert_eq!(read_frame(&block, first), None, "snaplen past the block end");

    let mut block = clean.clone();
    block[first + mac_at..first + mac_at + 2].copy_from_slice(&4090u16.to_ne_bytes());
    assert_eq!(read_frame(&block, first), None, "data offset past the block end");

    let mut block = clean.clone();
    block[first + mac_at..first + mac_at + 2].copy_from_slice(&4u16.to_ne_bytes());
    assert_eq!(read_frame(&block, first), None, "data overlapping its own header");

    assert_eq!(read_frame(&clean, 4090), None, "header past the block end");
    assert_eq!(read_frame(&clean, usize::MAX - 2), None, "offset overflow");

    let (_, first_at) = block_field_offsets();
    let mut block = clean;
    block[first_at..first_at + 4].copy_from_slice(&8u32.to_ne_bytes());
    assert_eq!(read_block_header(&block), None, "first packet inside the block descriptor");
    assert_eq!(read_block_header(&block[..10]), None, "block shorter than its descriptor");
}

#[test]
fn vlan_tag_goes_back_after_the_mac_addresses() {
    let frame: Vec<u8> = (0u8..12).chain([0x08, 0x00, 0x45, 0x00]).collect();
    let mut out = Vec::new();
    assert!(restore_vlan_tag(&frame, 0x8100, 0x6064, &mut out));
    let mut expected: Vec<u8> = (0u8..12).collect();
    expected.extend_from_slice(&[0x81, 0x00, 0x60, 0x64, 0x08, 0x00, 0x45, 0x00]);
    assert_eq!(out, expected);

    assert!(!restore_vlan_tag(&frame[..11], 0x8100, 1, &mut out));
    assert!(out.is_empty());
}

#[test]
fn restored_frame_decodes_as_tagged_udp() {
    // A UDP frame as the kernel delivers it: tag stripped.
    let builder =
        etherparse::PacketBuilder::ethernet2([1; 6], [2; 6]).ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).udp(1234, 53);
    let mut untagged = Vec::new();
    builder.write(&mut untagged, b"query").unwrap();
    let mut out = Vec::new();
    assert!(restore_vlan_tag(&untagged, 0x8100, 0x2000 | 100, &mut out));
    let parsed = etherparse::SlicedPacket::from_ethernet(&out).unwrap();
    match parsed.vlan() {
        Some(etherparse::VlanSlice::SingleVlan(tag)) => {
            assert_eq!(tag.vlan_identifier().value(), 100);
            assert_eq!(tag.priority_code_point().value(), 1);
        }
        other => panic!("decoder did not see the tag: {other:?}"),
    }
    match parsed.transport {
        Some(etherparse::TransportSlice::Udp(udp)) => assert_eq!(udp.payload(), b"query"),
        other => panic!("no UDP after the tag: {other:?}"),
    }
}

/// A TPACKET_V2 frame slot as the kernel fills it: header, link-level address (with its
/// packet type), then the data at `mac`.
fn v2_frame(slot: usize, data: &[u8], status: u32, vlan_tci: u16, pkttype: u8) -> Vec<u8> {
    let mut frame = vec![0u8; slot];
    let mac = 66usize; // TPACKET_ALIGN(TPACKET2_HDRLEN + 16) - 14, as the kernel places Ethernet
    let hdr =
        |field: usize, bytes: &[u8], frame: &mut Vec<u8>| frame[field..field + bytes.len()].copy_from_slice(bytes);
    hdr(std::mem::offset_of!(libc::tpacket2_hdr, tp_status), &status.to_ne_bytes(), &mut frame);
    hdr(std::mem::offset_of!(libc::tpacket2_hdr, tp_len), &(data.len() as u32 + 100).to_ne_bytes(), &mut frame);
    hdr(std::mem::offset_of!(libc::tpacket2_hdr, tp_snaplen), &(data.len() as u32).to_ne_bytes(), &mut frame);
    hdr(std::mem::offset_of!(libc::tpacket2_hdr, tp_mac), &(mac as u16).to_ne_bytes(), &mut frame);
    hdr(std::mem::offset_of!(libc::tpacket2_hdr, tp_sec), &7u32.to_ne_bytes(), &mut frame);
    hdr(std::mem::offset_of!(libc::tpacket2_hdr, tp_vlan_tci), &vlan_tci.to_ne_bytes(), &mut frame);
    let sll = std::mem::size_of::<libc::tpacket2_hdr>().next_multiple_of(libc::TPACKET_ALIGNMENT);
    frame[sll + std::mem::offset_of!(libc::sockaddr_ll, sll_pkttype)] = pkttype;
    frame[mac..mac + data.len()].copy_from_slice(data);
    frame
}

#[test]
fn v2_frames_give_data_vlan_and_packet_type() {
    let data = b"0123456789abcdefghij";
    let frame = v2_frame(2048, data, libc::TP_STATUS_USER | libc::TP_STATUS_VLAN_VALID, 42, libc::PACKET_OUTGOING);
    let loc = read_frame_v2(&frame).unwrap();
    assert_eq!(&frame[loc.data_start..loc.data_end], data);
    assert_eq!(loc.wire_len, data.len() as u32 + 100, "snaplen shorter than the wire length is reported");
    assert_eq!(loc.vlan, Some((0x8100, 42)));
    assert_eq!(loc.pkttype, Some(libc::PACKET_OUTGOING));
    assert_eq!((loc.sec, loc.next_offset), (7, 0));
    let plain = v2_frame(2048, data, libc::TP_STATUS_USER, 0, libc::PACKET_HOST);
    assert_eq!(read_frame_v2(&plain).unwrap().vlan, None);
    // Data running past the slot, or starting inside the header: refused.
    assert!(read_frame_v2(&v2_frame(2048, data, 0, 0, 0)[..80]).is_none());
    let mut inside = plain.clone();
    inside[std::mem::offset_of!(libc::tpacket2_hdr, tp_mac)..][..2].copy_from_slice(&4u16.to_ne_bytes());
    assert!(read_frame_v2(&inside).is_none());
}

#[test]
fn v3_frames_report_the_packet_type() {
    let block = build_block(4096, &[TestFrame { sec: 1, nsec: 0, wire_len: 3, data: b"abc", vlan: None }]);
    // The test layout leaves the link-level address zeroed: PACKET_HOST.
    assert_eq!(frames_of(&block)[0].pkttype, Some(libc::PACKET_HOST));
}

#[test]
fn v2_rings_need_frames_that_fill_blocks() {
    let cfg = AfPacketConfig { tpacket_v3: false, frame_size: 3072, ..config() };
    assert_eq!(invalid_field(&cfg), "frame_size");
    AfPacketConfig { tpacket_v3: false, frame_size: 4096, ..config() }.validate().unwrap();
}

proptest! {
    /// Whatever bytes a V2 frame slot holds, reading it never panics or escapes it.
    #[test]
    fn arbitrary_v2_frames_never_escape(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        if let Some(frame) = read_frame_v2(&bytes) {
            prop_assert!(frame.data_start <= frame.data_end && frame.data_end <= bytes.len());
        }
    }

    /// Whatever bytes a block holds, walking it never panics and never yields a range
    /// outside the block.
    #[test]
    fn arbitrary_blocks_never_escape(bytes in proptest::collection::vec(any::<u8>(), 0..600), count in 0u32..50) {
        let mut block = bytes;
        let (num_at, _) = block_field_offsets();
        if block.len() >= num_at + 4 {
            block[num_at..num_at + 4].copy_from_slice(&count.to_ne_bytes());
        }
        if let Some(header) = read_block_header(&block) {
            let mut offset = header.first_offset;
            for _ in 0..header.num_packets {
                let Some(frame) = read_frame(&block, offset) else { break };
                prop_assert!(frame.data_start <= frame.data_end && frame.data_end <= block.len());
                if frame.next_offset == 0 { break }
                offset = offset.saturating_add(frame.next_offset as usize);
            }
        }
    }
}
