//! TCP stream reassembly, sans-IO: the caller keeps one [`TcpReassembly`] in each TCP
//! flow's state and feeds it every segment of that flow with [`TcpReassembly::on_segment`];
//! detection asks [`TcpReassembly::inspect_raw`] for stream data on every packet, and
//! application-layer parsers read [`TcpReassembly::app_data`]. Memory is charged to a
//! worker-wide [`ReassemblyMemory`].
//!
//! # When stream data is inspected (Suricata's raw reassembly)
//!
//! Suricata's detection engine inspects a TCP stream *in the direction of the packet being
//! processed*: a to-server packet can only make the client's bytes available, a to-client
//! packet the server's. Which bytes and when depends on the mode:
//!
//! **IDS mode** (`stream.inline: no`, the default). Only bytes the receiver has
//! *acknowledged* are inspected, because unacknowledged bytes may still be replaced by a
//! retransmission that the receiver will accept instead. The acknowledgement itself arrives
//! on a packet of the *other* direction and only moves the acknowledged edge; inspection
//! then happens on the next packet of the data's own direction, if one of these holds:
//! - at least `toserver-chunk-size` / `toclient-chunk-size` (default 2560) acknowledged
//!   bytes are waiting (acked edge − inspected edge ≥ chunk size);
//! - the app-layer asked for it ([`TcpReassembly::trigger_raw`], e.g. a complete HTTP
//!   request), or the direction just reached `reassembly.depth`;
//! - the session is closing: Suricata's states past TIME_WAIT (CLOSE_WAIT after the client's
//!   FIN, LAST_ACK, CLOSING, CLOSED — CLOSED includes an accepted RST).
//!
//! The inspected range runs from the inspected edge to the acknowledged edge, one chunk per
//! run of contiguous bytes: a hole that was acknowledged (the receiver accepted that data
//! but we never saw it) is skipped and counted once as `tcp.reassembly_gap`.
//! So with the default chunk size, a short request is usually inspected only at flow end,
//! which is why Suricata attributes such alerts to a pseudo packet ("stream (flow timeout)").
//!
//! **Flow end** ([`TcpReassembly::close`], Suricata's flow-timeout / end pseudo packets):
//! everything still buffered in each direction becomes inspectable, acknowledged or not.
//!
//! **Inline mode** (`stream.inline: yes`). Data is inspected on the packet that carries it,
//! without waiting for the acknowledgement: the chunk is a window of about one chunk size
//! of contiguous stream around the packet's bytes (the packet, plus earlier and, if already
//! buffered, later bytes), so a pattern split across packets still matches when its last
//! part arrives. Already accepted bytes always win over a conflicting retransmission (the
//! IPS forwards normalised data), which [`SegmentOutcome::payload_differs_from_stream`]
//! reports.
//!
//! # What is kept
//!
//! A direction keeps the bytes from `min(inspected edge − lookback, app-layer progress)`
//! onwards (inline mode also keeps one chunk before the inspected edge and everything not
//! yet acknowledged, for overlap checks). Data past `reassembly.depth` (default 1 MiB per
//! direction, 0 = unlimited) is never stored. Segments entirely before the kept window are
//! old retransmissions and are ignored. Out-of-order data is kept in separate blocks until
//! the hole fills; holes cost no memory. Everything stored, plus a fixed charge per
//! segment, counts against the worker's memcap; a segment that does not fit is not stored
//! (`tcp.segment_memcap_drop`) and later shows up as a gap.
//!
//! `lookback` (default 0, as Suricata) lets detection re-see already inspected bytes before
//! the new ones, so a pattern crossing an inspection boundary can still match: each
//! [`StreamChunk`] says where its new bytes start. Suricata itself re-inspects nothing in IDS
//! mode, so a non-zero lookback finds matches Suricata would miss.
//!
//! # Overlaps
//!
//! Segment boundaries are kept while their bytes are. A segment overlapping held bytes is
//! counted (`tcp.overlap`); where the bytes differ (`tcp.overlap_diff_data`, event
//! `stream.reassembly_overlap_different_data`) the receiving host's [`OverlapPolicy`]
//! decides, per overlapped segment, which copy the stream keeps.
//!
//! Deliberate differences: after inspecting past a hole at flow end Suricata leaves its
//! progress at the start of the last run (re-inspecting it on a later call); here progress
//! always ends after the inspected bytes. Suricata's "slide raw progress by the TCP window
//! when detection did not look" is not modelled: detection calls [`TcpReassembly::inspect_raw`]
//! on every packet.
//!
//! # Session state comes from the flow
//!
//! Reassembly keeps no TCP state machine: the flow's
//! [`TcpSession`](crate::flow::tcp::TcpSession) (one per flow) owns the handshake, ISNs,
//! midstream / `async_oneside` pickup and the established/closing/closed states. The
//! caller feeds each segment to the session first and then hands the session's view for
//! reassembly ([`StreamView`], see [`crate::flow::tcp`] for how its rules differ from the
//! flow's own) to [`TcpReassembly::on_segment`], which reads from it:
//! - whether the session is tracked at all;
//! - where each direction's stream starts ([`StreamView::base_seq`]); a direction
//!   without a start is not reassembled;
//! - whether it is closing ([`StreamView::is_closing`]), which flushes raw inspection.
//!
//! What reassembly owns: per-direction buffers and segment records, the acknowledged
//! edge of each direction, overlap policy, depth, memory, and the inspection and
//! app-layer progress. With `async_oneside`, a direction whose peer is never seen counts
//! its contiguous data as acknowledged. Sequence numbers are unwrapped into 64-bit
//! stream offsets, so wrap-around at 2^32 and streams above 4 GiB need no special cases.
//! Midstream pickups are counted by the flow (`tcp.midstream_pickups`), once.

mod half;
mod memory;
mod policy;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod worst_case_tests;

pub use half::InsertResult;
pub use memory::{ReassemblyCounters, ReassemblyMemory};
pub use policy::{HostOsPolicy, OverlapPolicy};

use half::{InsertLimits, StreamHalf};

use crate::flow::tcp::StreamView;

/// Settings from suricata.yaml's `stream:` section.
#[derive(Clone, Copy, Debug)]
pub struct StreamConfig {
    /// `stream.reassembly.depth`; 0 means unlimited.
    pub depth: u64,
    /// Policy for hosts without a `host-os-policy` entry.
    pub policy: OverlapPolicy,
    /// `stream.inline`.
    pub inline: bool,
    /// `stream.async-oneside`: a direction whose peer is never seen counts its contiguous
    /// data as acknowledged. (Whether such a session is tracked at all, like
    /// `stream.midstream` pickup, is the flow's TCP session's decision: see
    /// [`crate::flow::FlowConfig`].)
    pub async_oneside: bool,
    /// `stream.reassembly.toserver-chunk-size`. Suricata randomises both chunk sizes by
    /// ±10 % unless `randomize-chunk-size: no`; picking the value is the config loader's
    /// job, this module uses it as given (fixed values keep alert attribution reproducible).
    pub toserver_chunk_size: u32,
    /// `stream.reassembly.toclient-chunk-size`.
    pub toclient_chunk_size: u32,
    /// `stream.reassembly.max-regions`: most separate runs of held bytes (out-of-order
    /// regions) per direction; a segment that would open another is not buffered
    /// (`tcp.reassembly_region_limit_drop`) and becomes a gap. 0 = unlimited.
    pub max_regions: u32,
    /// Already inspected bytes repeated in front of new ones (see module doc).
    pub lookback: u32,
    /// Whether an app-layer parser consumes [`TcpReassembly::app_data`]; if not, its
    /// progress does not hold memory.
    pub app_layer: bool,
}

impl Default for StreamConfig {
    fn default() -> Self {
        StreamConfig {
            depth: 1024 * 1024,
            policy: OverlapPolicy::Bsd,
            inline: false,
            async_oneside: false,
            toserver_chunk_size: 2560,
            toclient_chunk_size: 2560,
            max_regions: StreamConfig::DEFAULT_MAX_REGIONS,
            lookback: 0,
            app_layer: false,
        }
    }
}

impl StreamConfig {
    /// Default `stream.reassembly.max-regions`.
    pub const DEFAULT_MAX_REGIONS: u32 = 1024;

    fn chunk_size(&self, dir: Direction) -> u64 {
        match dir {
            Direction::ToServer => self.toserver_chunk_size as u64,
            Direction::ToClient => self.toclient_chunk_size as u64,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Client to server: the side that sent the first SYN (or the first packet seen).
    ToServer,
    ToClient,
}

impl Direction {
    pub fn index(self) -> usize {
        match self {
            Direction::ToServer => 0,
            Direction::ToClient => 1,
        }
    }
    pub fn opposite(self) -> Direction {
        match self {
            Direction::ToServer => Direction::ToClient,
            Direction::ToClient => Direction::ToServer,
        }
    }
}

/// TCP header flag bits as on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }
}

/// The parts of a TCP segment reassembly looks at.
#[derive(Clone, Copy, Debug)]
pub struct Segment<'a> {
    pub seq: u32,
    pub ack: u32,
    pub flags: TcpFlags,
    pub window: u16,
    pub payload: &'a [u8],
}

/// What [`TcpReassembly::on_segment`] did with a segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SegmentOutcome {
    /// False when the session is not tracked (no handshake seen and midstream pickup off).
    pub tracked: bool,
    /// What happened to the payload, if there was one and the direction is tracked.
    pub data: Option<InsertResult>,
    pub overlap: bool,
    pub overlap_different_data: bool,
    /// Inline mode: the packet's bytes differ from the bytes the stream already accepted.
    pub payload_differs_from_stream: bool,
    /// A hole was acknowledged past on this packet (`stream.reassembly_seq_gap`).
    pub gap: bool,
}

/// Contiguous stream bytes handed to detection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamChunk<'a> {
    /// Stream offset of `data[0]` (offset 0 is the first byte after the ISN).
    pub offset: u64,
    pub data: &'a [u8],
    /// `[new_start, new_end)`: the bytes not inspected before (in inline mode, the current
    /// packet's bytes). Everything else in `data` is context.
    pub new_start: u64,
    pub new_end: u64,
    /// Bytes missing between the previous inspection and this chunk (acknowledged hole).
    pub gap_before: u64,
}

impl<'a> StreamChunk<'a> {
    /// The not-yet-inspected part of `data`.
    pub fn new_data(&self) -> &'a [u8] {
        let a = (self.new_start - self.offset) as usize;
        let b = (self.new_end - self.offset) as usize;
        &self.data[a..b]
    }
}

/// Everything a direction still holds, seen from inside an inspection callback: what an
/// alert on stream data logs as its payload (Suricata logs the stream, not the chunk).
#[derive(Clone, Copy, Debug)]
pub struct HeldStream<'a> {
    blocks: &'a std::collections::BTreeMap<u64, half::Block>,
    /// Offset before which data was freed: not a gap.
    left: u64,
}

impl<'a> HeldStream<'a> {
    /// The held runs as (stream offset, bytes), in order; holes lie between runs.
    pub fn runs(&self) -> impl Iterator<Item = (u64, &'a [u8])> + 'a {
        let left = self.left;
        self.blocks.values().map(move |b| {
            let skip = left.saturating_sub(b.offset).min(b.bytes().len() as u64) as usize;
            (b.offset.max(left), &b.bytes()[skip..])
        })
    }

    /// Where the held window starts (freed data before it is not a hole).
    pub fn start(&self) -> u64 {
        self.left
    }
}

/// Data for an app-layer parser.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppData<'a> {
    Data {
        offset: u64,
        data: &'a [u8],
    },
    /// Acknowledged bytes that were never seen; consume them to move past the hole.
    Gap {
        offset: u64,
        len: u64,
    },
}

/// Reassembly state for both directions of one TCP session.
#[derive(Debug)]
pub struct TcpReassembly {
    cfg: StreamConfig,
    halves: [StreamHalf; 2],
    /// The session was closing ([`StreamView::is_closing`]) after the latest segment: raw
    /// inspection flushes without waiting for a full chunk.
    session_closing: bool,
    /// Flow ended: everything buffered is inspectable.
    eof: bool,
    /// Raw inspection is off for both directions (Suricata's DISABLE_RAW, set once the
    /// payload is encrypted): no more chunks; held data is kept only for the app layer.
    raw_disabled: bool,
    /// Session state charged to `stream.memcap` (from the first tracked segment on).
    session_charge: SessionCharge,
}

/// Whether a session's state is charged to `stream.memcap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SessionCharge {
    /// Not yet tracked: nothing charged.
    None,
    Charged,
    /// `stream.memcap` was reached when the session started: it is not reassembled, as
    /// Suricata does not create a session then (`tcp.ssn_memcap_drop`).
    Refused,
}

/// What one session's reassembly state costs against `stream.memcap`: the boxed state the
/// inspector keeps per TCP flow.
const SESSION_COST: u64 = memory::heap_cost(std::mem::size_of::<TcpReassembly>());

impl TcpReassembly {
    pub fn new(cfg: StreamConfig) -> Self {
        TcpReassembly {
            cfg,
            halves: [StreamHalf::new(cfg.policy), StreamHalf::new(cfg.policy)],
            session_closing: false,
            eof: false,
            raw_disabled: false,
            session_charge: SessionCharge::None,
        }
    }

    /// Sets the overlap policy of the host *receiving* `dir` (from `host-os-policy`).
    /// The direction reached `stream.reassembly.depth`: later data is not reassembled.
    pub fn depth_reached(&self, dir: Direction) -> bool {
        self.halves[dir.index()].depth_reached
    }

    /// For state created after the flow's first packets (the inspector creates it with
    /// the first payload): how many packets each direction sent before, so the one-sided
    /// capture check (`stream.async-oneside`) sees a peer that only sent a SYN-ACK or ACKs.
    pub fn note_packets_before_data(&mut self, to_server: u64, to_client: u64) {
        self.halves[Direction::ToServer.index()].packets = to_server;
        self.halves[Direction::ToClient.index()].packets = to_client;
    }

    pub fn set_policy(&mut self, dir: Direction, policy: OverlapPolicy) {
        self.halves[dir.index()].policy = policy;
    }

    /// Processes one segment travelling in `dir` (`ToServer`: sent by the session's
    /// client). `session` is the flow's view of the TCP session for reassembly
    /// ([`crate::flow::tcp::TcpSession::stream`]) *after* the session processed this
    /// segment: reassembly keeps no session state of its own and takes from it whether the
    /// session is tracked at all, where each direction's stream starts and whether it is
    /// closing.
    pub fn on_segment(
        &mut self,
        dir: Direction,
        seg: &Segment<'_>,
        session: &StreamView,
        mem: &mut ReassemblyMemory,
    ) -> SegmentOutcome {
        let mut out = SegmentOutcome::default();
        let flags = seg.flags;
        let (d, o) = (dir.index(), dir.opposite().index());
        self.halves[d].last_packet = None;
        self.session_closing = session.is_closing();

        // No handshake seen and no midstream pickup: nothing to reassemble.
        if !session.is_tracked() {
            return out;
        }
        match self.session_charge {
            SessionCharge::Charged => {}
            SessionCharge::Refused => return out,
            SessionCharge::None => {
                if !mem.charge_session(SESSION_COST) {
                    self.session_charge = SessionCharge::Refused;
                    return out;
                }
                self.session_charge = SessionCharge::Charged;
            }
        }
        out.tracked = true;
        if session.ignored() {
            return out;
        }
        let base = |dir: Direction| session.base_seq(dir == Direction::ToServer);
        let (base_d, base_o) = (base(dir), base(dir.opposite()));
        self.halves[d].initialized = base_d.is_some();
        self.halves[o].initialized = base_o.is_some();
        self.halves[d].packets += 1;

        if let (true, Some(base_o)) = (flags.has(TcpFlags::ACK), base_o) {
            self.halves[o].on_ack(seg.ack, base_o);
        }

        // A direction the session gave no start (seen after a handshake it was not part of,
        // without pickup): there is no trustworthy ISN for it, so its data is not reassembled.
        let Some(base_d) = base_d else {
            return out;
        };
        let half = &mut self.halves[d];
        // SYN occupies one sequence number before the first data byte (TCP Fast Open data).
        let data_seq = if flags.has(TcpFlags::SYN) { seg.seq.wrapping_add(1) } else { seg.seq };
        let off = half.offset_of(data_seq, base_d);
        if !seg.payload.is_empty() && !self.eof {
            let limits =
                InsertLimits { depth: self.cfg.depth, max_regions: self.cfg.max_regions, inline: self.cfg.inline };
            let (result, detail) = half.insert(off, seg.payload, limits, mem);
            out.data = Some(result);
            out.overlap = detail.overlap;
            out.overlap_different_data = detail.different_data;
            out.payload_differs_from_stream = detail.payload_differs_from_stream;
            let stored = matches!(result, InsertResult::Inserted | InsertResult::NothingNew);
            if off >= 0 {
                half.last_packet = Some((off as u64, seg.payload.len() as u32, stored));
            }
        }
        // One-sided capture: nobody will acknowledge this direction, so treat what
        // arrived contiguously as acknowledged.
        if self.cfg.async_oneside && self.halves[o].packets == 0 {
            let half = &mut self.halves[d];
            let edge = half.contiguous_end(half.last_ack_off.max(half.left));
            if !half.ack_seen || edge > half.last_ack_off {
                half.last_ack_off = edge;
                half.ack_seen = true;
            }
        }

        for i in [d, o] {
            let h = &mut self.halves[i];
            if h.ack_seen && h.check_gaps(mem, h.last_ack_off) {
                out.gap = true;
            }
        }
        out
    }

    /// App-layer request for immediate inspection of `dir` (Suricata's
    /// `AppLayerParserTriggerRawStreamReassembly`).
    pub fn trigger_raw(&mut self, dir: Direction) {
        self.halves[dir.index()].trigger_raw = true;
    }

    /// Stops raw (detection) inspection of both directions for good: the data held and to
    /// come is inspected no more and is freed once the app layer has read it.
    pub fn disable_raw(&mut self) {
        self.raw_disabled = true;
    }

    pub fn raw_disabled(&self) -> bool {
        self.raw_disabled
    }

    /// The app layer has read `dir` up to its progress and will discard the next `len`
    /// bytes unseen (the rest of an encrypted TLS record's body). With raw inspection off
    /// (IDS mode), nothing else reads them either: they are consumed now, what is held of
    /// them is freed, and segments carrying them are accepted without being stored
    /// ([`InsertResult::Skipped`]). Returns whether the stream took the skip; if not, the
    /// bytes are handed to the app layer as usual.
    pub fn app_skip(&mut self, dir: Direction, len: u64, mem: &mut ReassemblyMemory) -> bool {
        if !self.raw_disabled || self.cfg.inline || len == 0 {
            return false;
        }
        let h = &mut self.halves[dir.index()];
        if !h.initialized || h.app_progress < h.left {
            return false;
        }
        let (from, to) = (h.app_progress, h.app_progress + len);
        h.skip = from..to;
        h.app_progress = to;
        h.raw_progress = h.raw_progress.max(to);
        h.free_before(to, mem);
        true
    }

    /// Flow end: everything buffered in both directions becomes inspectable and no more
    /// data is accepted.
    pub fn close(&mut self) {
        self.eof = true;
    }

    pub fn is_closed(&self) -> bool {
        self.eof
    }

    /// Whether a packet hands the app layer data of its own direction. In IDS mode only
    /// an acknowledgement releases data, and it travels the other way: Suricata's default
    /// `UPDATE_DIR_OPPOSING`. Inline mode and one-sided pickup parse the data on the packet
    /// that carries it.
    pub fn app_feeds_own_direction(&self) -> bool {
        self.cfg.inline || self.cfg.async_oneside
    }

    /// Runs detection's stream inspection for a packet travelling in `dir` (or, after
    /// [`close`](Self::close), for the flow-end pseudo packet of `dir`). Calls `f` for each
    /// chunk that Suricata would inspect at this point, then marks it inspected and frees
    /// what is no longer needed. Returns whether any chunk was produced.
    pub fn inspect_raw(
        &mut self,
        dir: Direction,
        mem: &mut ReassemblyMemory,
        mut f: impl FnMut(StreamChunk<'_>),
    ) -> bool {
        self.inspect_raw_held(dir, mem, |chunk, _| f(chunk))
    }

    /// [`inspect_raw`](Self::inspect_raw), also showing the callback everything the
    /// direction holds (for logging an alert's stream payload).
    pub fn inspect_raw_held(
        &mut self,
        dir: Direction,
        mem: &mut ReassemblyMemory,
        mut f: impl FnMut(StreamChunk<'_>, HeldStream<'_>),
    ) -> bool {
        let cfg = self.cfg;
        let eof = self.eof;
        let closing = self.session_closing;
        let chunk_size = cfg.chunk_size(dir);
        let h = &mut self.halves[dir.index()];
        if !h.initialized {
            return false;
        }
        let produced = if self.raw_disabled {
            h.raw_progress = h.raw_progress.max(h.next_off);
            h.trigger_raw = false;
            false
        } else if cfg.inline && !eof {
            Self::inspect_inline(h, chunk_size, &mut f)
        } else {
            let acked = if h.ack_seen { h.last_ack_off } else { 0 };
            let due = eof
                || h.depth_reached
                || h.trigger_raw
                || closing
                || acked.saturating_sub(h.raw_progress) >= chunk_size;
            if due {
                let right_edge = if eof { u64::MAX } else { acked };
                let progress = Self::walk_raw(h, right_edge, cfg.lookback as u64, &mut f);
                let produced = progress > h.raw_progress;
                h.raw_progress = progress;
                h.trigger_raw = false;
                produced
            } else {
                false
            }
        };
        Self::prune(h, &cfg, chunk_size, mem);
        produced
    }

    /// IDS walk: each contiguous run between the inspected edge and `right_edge`.
    fn walk_raw(
        h: &StreamHalf,
        right_edge: u64,
        lookback: u64,
        f: &mut impl FnMut(StreamChunk<'_>, HeldStream<'_>),
    ) -> u64 {
        let mut progress = h.raw_progress;
        for b in h.blocks_from(progress) {
            let new_start = b.offset.max(progress);
            let new_end = b.end().min(right_edge);
            if new_start >= new_end {
                break;
            }
            let start = b.offset.max(new_start.saturating_sub(lookback)).max(h.left);
            let bytes = b.bytes();
            f(
                StreamChunk {
                    offset: start,
                    data: &bytes[(start - b.offset) as usize..(new_end - b.offset) as usize],
                    new_start,
                    new_end,
                    gap_before: new_start - progress,
                },
                HeldStream { blocks: h.blocks(), left: h.left },
            );
            progress = new_end;
        }
        progress
    }

    /// Inline: a window of about one chunk around the current packet's bytes.
    fn inspect_inline(
        h: &mut StreamHalf,
        chunk_size: u64,
        f: &mut impl FnMut(StreamChunk<'_>, HeldStream<'_>),
    ) -> bool {
        let Some((pkt_start, pkt_len, true)) = h.last_packet else {
            return false;
        };
        let pkt_len = pkt_len as u64;
        // Large packets get a larger window so some context always surrounds them.
        let chunk =
            if chunk_size <= pkt_len || chunk_size / 3 * 2 < pkt_len { pkt_len + chunk_size / 3 } else { chunk_size };
        let blocks = h.blocks();
        let Some(b) = h.blocks_from(pkt_start.max(h.left)).next() else { return false };
        let pkt_start = pkt_start.max(b.offset);
        let pkt_end = (pkt_start + pkt_len).min(b.end());
        if pkt_start >= pkt_end {
            return false;
        }
        let (mut start, mut end) = (b.offset, b.end());
        let pkt_len = pkt_end - pkt_start;
        if end - start > chunk {
            if end == pkt_end {
                start = end - chunk;
            } else if start == pkt_start {
                end = start + chunk;
            } else {
                let spare = chunk.saturating_sub(pkt_len);
                let mut before = pkt_start - start;
                let mut after = end - pkt_end;
                if after >= spare / 2 {
                    if before >= spare / 2 {
                        before = spare / 2;
                        after = spare / 2;
                    } else {
                        after = spare - before;
                    }
                } else if before >= spare / 2 {
                    before = spare - after;
                }
                start = pkt_start - before;
                end = pkt_end + after;
            }
        }
        let bytes = b.bytes();
        f(
            StreamChunk {
                offset: start,
                data: &bytes[(start - b.offset) as usize..(end - b.offset) as usize],
                new_start: pkt_start,
                new_end: pkt_end,
                gap_before: 0,
            },
            HeldStream { blocks, left: h.left },
        );
        let single_run = blocks.len() == 1;
        let acked = if h.ack_seen { h.last_ack_off } else { 0 };
        let progress = if single_run {
            end
        } else if h.raw_progress < acked {
            if start > acked {
                acked
            } else {
                end
            }
        } else {
            h.raw_progress
        };
        h.raw_progress = h.raw_progress.max(progress);
        h.last_packet = None;
        true
    }

    fn prune(h: &mut StreamHalf, cfg: &StreamConfig, chunk_size: u64, mem: &mut ReassemblyMemory) {
        let keep_before = if cfg.inline { chunk_size } else { cfg.lookback as u64 };
        let mut target = h.raw_progress.saturating_sub(keep_before);
        if cfg.app_layer {
            target = target.min(h.app_progress);
        }
        if cfg.inline {
            target = target.min(if h.ack_seen { h.last_ack_off } else { 0 });
        }
        h.free_before(target, mem);
    }

    /// Data the app-layer parser may read next in `dir`: acknowledged bytes in IDS mode,
    /// all contiguous bytes in inline mode or after [`close`](Self::close). Requires
    /// `StreamConfig::app_layer`, otherwise the bytes may already be freed.
    pub fn app_data(&self, dir: Direction) -> Option<AppData<'_>> {
        let h = &self.halves[dir.index()];
        if !h.initialized {
            return None;
        }
        let limit = if self.eof || self.cfg.inline {
            u64::MAX
        } else if h.ack_seen {
            h.last_ack_off
        } else {
            return None;
        };
        // A hole is only a gap once the receiver acknowledged past it: in inline mode an
        // out-of-order segment must not make the parser skip bytes that a retransmission
        // is still going to fill, and at the flow's end (as in Suricata) data beyond a
        // hole nobody acknowledged is not handed on: the peer never got it either. A side
        // whose acknowledgements were never seen (a one-sided capture) skips its holes at
        // the end.
        let gap_limit = if h.ack_seen {
            h.last_ack_off
        } else if self.eof {
            u64::MAX
        } else {
            0
        };
        let at = h.app_progress.max(h.left);
        if at > h.app_progress {
            return Some(AppData::Gap { offset: h.app_progress, len: at - h.app_progress });
        }
        match h.blocks_from(at).next() {
            Some(b) if b.offset <= at => {
                let end = b.end().min(limit);
                if end <= at {
                    return None;
                }
                let bytes = b.bytes();
                Some(AppData::Data { offset: at, data: &bytes[(at - b.offset) as usize..(end - b.offset) as usize] })
            }
            Some(b) if b.offset <= limit.min(gap_limit) => Some(AppData::Gap { offset: at, len: b.offset - at }),
            Some(_) => None,
            // Nothing buffered past `at`, but bytes up to `next_off` were seen and lost
            // (memcap) and acknowledged: report them as a gap.
            None if limit != u64::MAX && h.next_off > at && limit > at => {
                Some(AppData::Gap { offset: at, len: h.next_off.min(limit) - at })
            }
            None => None,
        }
    }

    /// Marks app-layer data before stream offset `upto` as consumed.
    pub fn app_consume(&mut self, dir: Direction, upto: u64, mem: &mut ReassemblyMemory) {
        let cfg = self.cfg;
        let chunk_size = cfg.chunk_size(dir);
        let h = &mut self.halves[dir.index()];
        if upto > h.app_progress {
            h.app_progress = upto;
        }
        Self::prune(h, &cfg, chunk_size, mem);
    }

    /// The retained bytes of `dir` as (stream offset, bytes) runs in order; holes lie
    /// between runs. Used to log the stream payload of an alert.
    pub fn retained(&self, dir: Direction) -> impl Iterator<Item = (u64, &[u8])> + '_ {
        self.halves[dir.index()].blocks().values().map(|b| (b.offset, b.bytes()))
    }

    /// Stream offset before which `dir`'s data has been freed.
    pub fn retained_from(&self, dir: Direction) -> u64 {
        self.halves[dir.index()].left
    }

    /// Offset acknowledged by the receiver of `dir`, if any acknowledgement was seen.
    pub fn acked(&self, dir: Direction) -> Option<u64> {
        let h = &self.halves[dir.index()];
        h.ack_seen.then_some(h.last_ack_off)
    }

    /// Detection progress in `dir`: bytes before this offset were inspected.
    pub fn inspected(&self, dir: Direction) -> u64 {
        self.halves[dir.index()].raw_progress
    }

    /// Sequence space seen in `dir`, Suricata's `next_seq - isn` used by `stream_size`: one
    /// for the SYN plus the highest data offset seen; 0 while `dir` is not initialised.
    pub fn seq_space_seen(&self, dir: Direction) -> u64 {
        let h = &self.halves[dir.index()];
        if h.initialized {
            h.next_off + 1
        } else {
            0
        }
    }

    /// Most memory regions Suricata's streaming buffer would have needed at once for `dir`
    /// (eve flow `tcp.ts_max_regions` / `tc_max_regions`); at least 1.
    pub fn max_regions(&self, dir: Direction) -> u16 {
        self.halves[dir.index()].max_regions
    }

    /// What this stream is charged to its worker's budgets: (segment bytes, session).
    fn charges(&self) -> (u64, u64) {
        let segments = self.halves.iter().map(|h| h.accounted()).sum();
        let session = if self.session_charge == SessionCharge::Charged { SESSION_COST } else { 0 };
        (segments, session)
    }

    /// The flow leaves this worker (its dispatch bucket moved): its charges leave this
    /// worker's budget, to be taken up by the next one with [`TcpReassembly::charge_to`].
    pub fn uncharge_from(&self, mem: &mut ReassemblyMemory) {
        let (segments, session) = self.charges();
        mem.adjust(segments, 0);
        mem.refund_session(session);
    }

    /// The flow arrives at this worker: what it holds is charged here, past the memcaps if
    /// need be (the memory exists already; the next allocations see the cap).
    pub fn charge_to(&self, mem: &mut ReassemblyMemory) {
        let (segments, session) = self.charges();
        mem.adjust(0, segments);
        mem.force_session(session);
    }

    /// Returns all memory to the worker's budget. Call before dropping the flow.
    pub fn release(&mut self, mem: &mut ReassemblyMemory) {
        for h in &mut self.halves {
            h.release(mem);
        }
        if self.session_charge == SessionCharge::Charged {
            mem.refund_session(SESSION_COST);
            self.session_charge = SessionCharge::None;
        }
    }
}
