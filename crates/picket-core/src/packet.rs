//! Packet containers shared by every stage: timestamps, link types and the batches that
//! carry packets from the dispatcher to a worker without one allocation per packet.

/// Capture time in nanoseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub u64);

impl Timestamp {
    pub const NANOS_PER_SEC: u64 = 1_000_000_000;
    pub fn from_parts(secs: u64, nanos: u32) -> Self {
        Timestamp(secs * Self::NANOS_PER_SEC + nanos as u64)
    }
    pub fn secs(self) -> u64 {
        self.0 / Self::NANOS_PER_SEC
    }
    pub fn subsec_nanos(self) -> u32 {
        (self.0 % Self::NANOS_PER_SEC) as u32
    }
}

/// Link-layer framing of captured bytes, as named by pcap's LINKTYPE_* values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkType {
    Ethernet,
    /// Raw IP, version taken from the first nibble (LINKTYPE_RAW / DLT_RAW).
    RawIp,
    RawIpv4,
    RawIpv6,
    /// Linux cooked capture v1 (16-byte header).
    LinuxSll,
    /// Linux cooked capture v2 (20-byte header).
    LinuxSll2,
    /// BSD loopback, address family in host byte order (DLT_NULL).
    Null,
    /// OpenBSD loopback, address family in network byte order (DLT_LOOP).
    Loop,
    /// PPP (LINKTYPE_PPP 9): an optional 0xff 0x03 HDLC address/control pair, then the
    /// PPP protocol field (one byte when compressed).
    Ppp,
    /// Cisco HDLC (LINKTYPE_C_HDLC 104): address, control, then an EtherType.
    CiscoHdlc,
    /// Anything else: reported and counted, never decoded.
    Unsupported(u32),
}

impl LinkType {
    /// Maps a pcap/pcapng link-type number to the variants picket decodes.
    pub fn from_pcap(linktype: u32) -> Self {
        match linktype {
            1 => LinkType::Ethernet,
            // 101 is LINKTYPE_RAW; 12 and 14 are DLT_RAW on some BSDs.
            101 | 12 | 14 => LinkType::RawIp,
            228 => LinkType::RawIpv4,
            229 => LinkType::RawIpv6,
            113 => LinkType::LinuxSll,
            276 => LinkType::LinuxSll2,
            0 => LinkType::Null,
            108 => LinkType::Loop,
            9 => LinkType::Ppp,
            104 => LinkType::CiscoHdlc,
            other => LinkType::Unsupported(other),
        }
    }

    /// The LINKTYPE_* number to write in a pcap file header for this framing.
    pub fn pcap_number(self) -> u32 {
        match self {
            LinkType::Ethernet => 1,
            LinkType::RawIp => 101,
            LinkType::RawIpv4 => 228,
            LinkType::RawIpv6 => 229,
            LinkType::LinuxSll => 113,
            LinkType::LinuxSll2 => 276,
            LinkType::Null => 0,
            LinkType::Loop => 108,
            LinkType::Ppp => 9,
            LinkType::CiscoHdlc => 104,
            LinkType::Unsupported(n) => n,
        }
    }

    /// The number Suricata logs as eve `packet_info.linktype`: libpcap's DLT value on
    /// Linux, which differs from the file's LINKTYPE only for raw IP (101 in the file,
    /// DLT_RAW 12 in memory). Tunnel packets are logged as raw IP too.
    pub fn suricata_number(self) -> u32 {
        match self {
            LinkType::RawIp => 12,
            other => other.pcap_number(),
        }
    }

    /// Suricata's eve `packet_info.linktype_name`; "n/a" where Suricata has no name.
    pub fn suricata_name(self) -> &'static str {
        match self {
            LinkType::Ethernet => "EN10MB",
            LinkType::RawIp => "RAW",
            LinkType::RawIpv4 => "IPv4",
            LinkType::RawIpv6 => "IPv6",
            LinkType::LinuxSll => "LINUX_SLL",
            LinkType::LinuxSll2 => "LINUX_SLL2",
            LinkType::Null => "NULL",
            LinkType::Ppp => "PPP",
            LinkType::CiscoHdlc => "C_HDLC",
            LinkType::Loop | LinkType::Unsupported(_) => "n/a",
        }
    }
}

/// Per-packet metadata kept beside the bytes in a [`PacketBatch`].
#[derive(Clone, Copy, Debug)]
pub struct PacketMeta {
    /// 1-based position of the packet in the capture (Suricata's `pcap_cnt`); for live
    /// capture, the per-source arrival number.
    pub pcap_cnt: u64,
    pub ts: Timestamp,
    pub link: LinkType,
    /// Length on the wire; may exceed the captured length when the snaplen cut it.
    pub wire_len: u32,
    /// Dispatch bucket the packet was sent by (adaptive dispatch; 0 otherwise): a flow
    /// remembers the bucket of its first packet, so that the flows of a bucket can follow
    /// it to another worker.
    pub bucket: u16,
    start: u32,
    len: u32,
}

impl PacketMeta {
    /// Metadata for a packet that is not stored in a batch (the single-thread run mode
    /// inspects the source's buffer in place).
    pub fn standalone(pcap_cnt: u64, ts: Timestamp, link: LinkType, wire_len: u32, captured_len: usize) -> Self {
        PacketMeta { pcap_cnt, ts, link, wire_len, bucket: 0, start: 0, len: captured_len as u32 }
    }
}

/// A borrowed packet: metadata plus captured bytes.
#[derive(Clone, Copy, Debug)]
pub struct PacketRef<'a> {
    pub meta: &'a PacketMeta,
    pub data: &'a [u8],
}

/// Packets stored back to back in one buffer, so that handing 64 packets to a worker
/// costs one ring slot and no allocation once the batch has been recycled.
#[derive(Default)]
pub struct PacketBatch {
    bytes: Vec<u8>,
    metas: Vec<PacketMeta>,
    /// A control marker riding with the batch: the dispatcher's clock, so that idle
    /// workers still expire flows and release output in order.
    pub clock: Option<ClockTick>,
    /// Dispatch buckets that change worker after this batch (adaptive dispatch): acted on
    /// after the batch's packets and clock.
    pub moves: Option<BucketMoves>,
}

/// Dispatch buckets changing worker: the old worker hands the buckets' flows to the new
/// one after its last packet of them, the new one takes them before its first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BucketMoves {
    /// Rebalancing round, numbered from 1: pairs a worker's export with its import.
    pub round: u64,
    /// The last packet dispatched under the old table.
    pub after: u64,
    /// (bucket, from worker, to worker).
    pub moves: Vec<(u16, u16, u16)>,
}

/// The dispatcher's view of time, sent to every worker so that flow timeouts and the
/// ordered output merge follow the capture, not each worker's share of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockTick {
    pub ts: Timestamp,
    /// Every packet up to and including this `pcap_cnt` has been dispatched.
    pub pcap_cnt: u64,
}

impl PacketBatch {
    pub fn with_capacity(packets: usize, bytes: usize) -> Self {
        PacketBatch { bytes: Vec::with_capacity(bytes), metas: Vec::with_capacity(packets), clock: None, moves: None }
    }
    pub fn push(&mut self, pcap_cnt: u64, ts: Timestamp, link: LinkType, wire_len: u32, data: &[u8]) {
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(data);
        self.metas.push(PacketMeta { pcap_cnt, ts, link, wire_len, bucket: 0, start, len: data.len() as u32 });
    }

    /// Sets the dispatch bucket of the packet pushed last.
    pub fn set_last_bucket(&mut self, bucket: u16) {
        if let Some(meta) = self.metas.last_mut() {
            meta.bucket = bucket;
        }
    }
    pub fn len(&self) -> usize {
        self.metas.len()
    }
    pub fn is_empty(&self) -> bool {
        self.metas.is_empty()
    }
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.metas.clear();
        self.clock = None;
        self.moves = None;
    }
    pub fn get(&self, i: usize) -> PacketRef<'_> {
        let meta = &self.metas[i];
        PacketRef { meta, data: &self.bytes[meta.start as usize..(meta.start + meta.len) as usize] }
    }
    pub fn iter(&self) -> impl Iterator<Item = PacketRef<'_>> + '_ {
        (0..self.metas.len()).map(move |i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_round_trips_packets() {
        let mut b = PacketBatch::with_capacity(4, 64);
        b.push(1, Timestamp::from_parts(10, 5), LinkType::Ethernet, 3, &[1, 2, 3]);
        b.push(2, Timestamp::from_parts(11, 0), LinkType::RawIp, 9, &[4, 5]);
        let got: Vec<_> = b.iter().map(|p| (p.meta.pcap_cnt, p.data.to_vec(), p.meta.wire_len)).collect();
        assert_eq!(got, vec![(1, vec![1, 2, 3], 3), (2, vec![4, 5], 9)]);
        b.clear();
        assert!(b.is_empty());
    }

    #[test]
    fn link_type_numbers_and_names() {
        for n in [0, 1, 9, 101, 104, 108, 113, 228, 229, 276, 147] {
            assert_eq!(LinkType::from_pcap(n).pcap_number(), n);
        }
        assert_eq!(LinkType::from_pcap(12).pcap_number(), 101);
        assert_eq!(LinkType::from_pcap(104).suricata_name(), "C_HDLC");
        assert_eq!(LinkType::from_pcap(276).suricata_name(), "LINUX_SLL2");
        assert_eq!(LinkType::from_pcap(9).suricata_name(), "PPP");
        assert_eq!(LinkType::from_pcap(1).suricata_name(), "EN10MB");
        assert_eq!((LinkType::RawIp.suricata_number(), LinkType::RawIp.suricata_name()), (12, "RAW"));
        assert_eq!((LinkType::RawIpv4.suricata_number(), LinkType::RawIpv4.suricata_name()), (228, "IPv4"));
        assert_eq!(LinkType::Unsupported(147).suricata_name(), "n/a");
    }

    #[test]
    fn timestamp_parts() {
        let t = Timestamp::from_parts(1_700_000_000, 123_456_789);
        assert_eq!((t.secs(), t.subsec_nanos()), (1_700_000_000, 123_456_789));
    }
}
