//! TCP session tracking by flags and handshake sequence numbers, after Suricata's
//! single-state model (one state per session, named from the client's side).
//!
//! ```text
//! none ─SYN─▶ syn_sent ─SYN/ACK─▶ syn_recv ─ACK─▶ established
//! established ─FIN from server─▶ fin_wait1 ─ACK of FIN─▶ fin_wait2 ─FIN─▶ time_wait ─ACK─▶ closed
//!             fin_wait1 ─FIN+ACK of FIN─▶ time_wait;   fin_wait1 ─FIN─▶ closing ─ACK─▶ time_wait
//! established ─FIN from client─▶ close_wait ─FIN from server─▶ last_ack ─ACK of FIN─▶ closed
//! any state ─RST─▶ closed
//! ```
//! The names are Suricata's, which are named from the server's side: a client that
//! closes first puts the session in close_wait (Suricata's `StreamTcpHandleFin`).
//! What it checks: handshake ACK numbers (SYN/ACK acks the client ISN, the final ACK acks
//! the server ISN) and that a FIN was acknowledged before moving past it. What it does not
//! do (that is the stream-reassembly stage's job): window tracking, RST sequence
//! validation, retransmission detection, 4-way (simultaneous open) handshakes.
//!
//! Midstream pickup (`midstream = true`): a session whose first packet carries ACK is taken
//! as established; a first SYN/ACK starts in syn_recv with the roles swapped so the SYN/ACK
//! sender is the server. With midstream off such flows stay in state none ("new"), except
//! that `async_oneside` alone also picks a session up from its SYN/ACK, as Suricata does.
//! A session picked up from its SYN/ACK becomes established on the server's own ACK when
//! that continues the server's sequence (`async_oneside`) or acknowledges client data never
//! seen (Suricata's "ACK for missing data").
//!
//! One-sided (`async_oneside`) captures: a client whose SYN gets no visible answer is
//! established by its next ACK; without `async_oneside`, the stream view ignores such
//! segments ([`StreamView::ignored`]) so none of their data is reassembled.
//!
//! # One owner, two views
//!
//! [`TcpSession`] is the only place TCP session state lives and is updated: stream
//! reassembly ([`crate::stream`]) keeps none and reads [`TcpSession::stream`], a
//! [`StreamView`] that the same [`TcpSession::on_segment`] call maintains. The flow's
//! view above drives timeouts, eve's `flow.state`/`tcp.state`, `flow:established`, port
//! reuse and the stream events. The stream view decides what reassembly needs: whether
//! the session is tracked at all, where each direction's stream starts (the only copy of
//! the base sequence numbers) and when it is closing (which flushes raw inspection).
//!
//! The stream view keeps the rules reassembly has always applied. They differ from the
//! flow's view in corner cases, and putting reassembly on the flow's rules changes which
//! alerts fire and on which packet (seen on the conformance suite's TCP Fast Open
//! captures and a FIN during SYN_RECV), so the difference stays, explicitly. The
//! stream view:
//! - does not check handshake ACK numbers: a SYN/ACK answering a TFO SYN also
//!   acknowledges the SYN's data, which the flow's view rejects
//!   (`3whs_synack_with_wrong_ack`) and Suricata's stream engine accepts;
//! - starts the teardown on a FIN during SYN_RECV, as Suricata does (the flow's view
//!   does not);
//! - acts on the FIN/RST bits of segments the flow's view rejects as invalid flag
//!   combinations (SYN+FIN, SYN+RST) and, with midstream pickup, picks a session up from
//!   any first segment without RST (the flow's view needs an ACK without FIN);
//! - counts a FIN as acknowledged once any plausible ACK passed it (the flow's view: the
//!   ACK of the packet that moves the state), and goes CLOSING → CLOSED once both FINs
//!   are acknowledged (the flow's view, like Suricata: CLOSING → TIME_WAIT → CLOSED).

use super::{tcp_flags as f, FlowState, TcpSegment};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TcpState {
    /// No session: non-TCP flow, or a TCP flow whose start was not seen.
    #[default]
    None,
    SynSent,
    SynRecv,
    Established,
    FinWait1,
    FinWait2,
    TimeWait,
    LastAck,
    CloseWait,
    Closing,
    Closed,
}

impl TcpState {
    /// Suricata's name, as in eve `tcp.state`.
    pub fn as_str(self) -> &'static str {
        match self {
            TcpState::None => "none",
            TcpState::SynSent => "syn_sent",
            TcpState::SynRecv => "syn_recv",
            TcpState::Established => "established",
            TcpState::FinWait1 => "fin_wait1",
            TcpState::FinWait2 => "fin_wait2",
            TcpState::TimeWait => "time_wait",
            TcpState::LastAck => "last_ack",
            TcpState::CloseWait => "close_wait",
            TcpState::Closing => "closing",
            TcpState::Closed => "closed",
        }
    }

    /// The coarse flow state used for timeouts and eve `flow.state`, grouped as Suricata
    /// does: the half-closed states still count as established.
    pub fn flow_state(self) -> FlowState {
        match self {
            TcpState::None | TcpState::SynSent | TcpState::SynRecv => FlowState::New,
            TcpState::Established
            | TcpState::FinWait1
            | TcpState::FinWait2
            | TcpState::Closing
            | TcpState::CloseWait => FlowState::Established,
            TcpState::LastAck | TcpState::TimeWait | TcpState::Closed => FlowState::Closed,
        }
    }

    /// Connection teardown begun (a FIN was seen).
    fn is_shutting_down(self) -> bool {
        matches!(
            self,
            TcpState::FinWait1
                | TcpState::FinWait2
                | TcpState::Closing
                | TcpState::CloseWait
                | TcpState::LastAck
                | TcpState::TimeWait
        )
    }
}

/// Stream anomalies with Suricata's `stream-event` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamEvent {
    ThreeWhsAckInWrongDir,
    ThreeWhsAsyncWrongSeq,
    ThreeWhsSynackInWrongDirection,
    ThreeWhsSynackResendWithDifferentAck,
    ThreeWhsSynackToserverOnSynRecv,
    ThreeWhsSynackWithWrongAck,
    ThreeWhsSynResendDiffSeqOnSynRecv,
    ThreeWhsSynToclientOnSynRecv,
    ThreeWhsWrongSeqWrongAck,
    EstSynackResend,
    EstSynackToserver,
    EstSynResend,
    EstSynResendDiffSeq,
    EstSynToclient,
    FinButNoSession,
    RstButNoSession,
    ShutdownSynResend,
    /// ACK number set while the ACK flag is not.
    PktBrokenAck,
    /// SYN and FIN in one packet.
    FinSyn,
}

impl StreamEvent {
    pub const ALL: [StreamEvent; 19] = [
        StreamEvent::ThreeWhsAckInWrongDir,
        StreamEvent::ThreeWhsAsyncWrongSeq,
        StreamEvent::ThreeWhsSynackInWrongDirection,
        StreamEvent::ThreeWhsSynackResendWithDifferentAck,
        StreamEvent::ThreeWhsSynackToserverOnSynRecv,
        StreamEvent::ThreeWhsSynackWithWrongAck,
        StreamEvent::ThreeWhsSynResendDiffSeqOnSynRecv,
        StreamEvent::ThreeWhsSynToclientOnSynRecv,
        StreamEvent::ThreeWhsWrongSeqWrongAck,
        StreamEvent::EstSynackResend,
        StreamEvent::EstSynackToserver,
        StreamEvent::EstSynResend,
        StreamEvent::EstSynResendDiffSeq,
        StreamEvent::EstSynToclient,
        StreamEvent::FinButNoSession,
        StreamEvent::RstButNoSession,
        StreamEvent::ShutdownSynResend,
        StreamEvent::PktBrokenAck,
        StreamEvent::FinSyn,
    ];

    /// The name used in `stream-event:<name>` rules (without the `stream.` prefix).
    pub fn name(self) -> &'static str {
        match self {
            StreamEvent::ThreeWhsAckInWrongDir => "3whs_ack_in_wrong_dir",
            StreamEvent::ThreeWhsAsyncWrongSeq => "3whs_async_wrong_seq",
            StreamEvent::ThreeWhsSynackInWrongDirection => "3whs_synack_in_wrong_direction",
            StreamEvent::ThreeWhsSynackResendWithDifferentAck => "3whs_synack_resend_with_different_ack",
            StreamEvent::ThreeWhsSynackToserverOnSynRecv => "3whs_synack_toserver_on_syn_recv",
            StreamEvent::ThreeWhsSynackWithWrongAck => "3whs_synack_with_wrong_ack",
            StreamEvent::ThreeWhsSynResendDiffSeqOnSynRecv => "3whs_syn_resend_diff_seq_on_syn_recv",
            StreamEvent::ThreeWhsSynToclientOnSynRecv => "3whs_syn_toclient_on_syn_recv",
            StreamEvent::ThreeWhsWrongSeqWrongAck => "3whs_wrong_seq_wrong_ack",
            StreamEvent::EstSynackResend => "est_synack_resend",
            StreamEvent::EstSynackToserver => "est_synack_toserver",
            StreamEvent::EstSynResend => "est_syn_resend",
            StreamEvent::EstSynResendDiffSeq => "est_syn_resend_diff_seq",
            StreamEvent::EstSynToclient => "est_syn_toclient",
            StreamEvent::FinButNoSession => "fin_but_no_session",
            StreamEvent::RstButNoSession => "rst_but_no_session",
            StreamEvent::ShutdownSynResend => "shutdown_syn_resend",
            StreamEvent::PktBrokenAck => "pkt_broken_ack",
            StreamEvent::FinSyn => "fin_syn",
        }
    }
}

/// Session options taken from the flow config.
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpConfig {
    pub midstream: bool,
    pub async_oneside: bool,
    /// `stream.reassembly.depth` (0: unlimited), for the [`StreamView`]'s bookkeeping.
    pub reassembly_depth: u64,
}

/// Per-flow TCP session. "Client" is the flow's initiator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpSession {
    pub state: TcpState,
    /// The session reached established at some point (3WHS or midstream pickup).
    pub reached_established: bool,
    /// Picked up without seeing the SYN.
    pub midstream: bool,
    client_isn: Option<u32>,
    server_isn: Option<u32>,
    /// The ACK number that acknowledges the client's FIN, once it sent one.
    client_fin_acked_by: Option<u32>,
    server_fin_acked_by: Option<u32>,
    /// The session as stream reassembly sees it (see the module doc).
    stream: StreamView,
}

/// Result of feeding one segment to [`TcpSession::on_segment`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpOutcome {
    pub event: Option<StreamEvent>,
    /// The segment was not a valid flag combination and did not drive the state machine.
    pub invalid_flags: bool,
    /// The flow's roles must be swapped: the packet's sender turned out to be the client
    /// (SYN) or the server (midstream SYN/ACK) opposite to what the first packet suggested.
    pub swap_roles: bool,
    pub session_started: bool,
    pub midstream_pickup: bool,
    /// A non-RST packet arrived after the session had closed.
    pub after_close: bool,
    /// The packet arrived while no session is tracked and did not start one.
    pub no_session: bool,
}

/// `a >= b` in 32-bit sequence space.
#[inline]
fn seq_ge(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

impl TcpSession {
    /// The session as stream reassembly sees it: pass this to
    /// [`crate::stream::TcpReassembly::on_segment`] after each segment.
    #[inline]
    pub fn stream(&self) -> &StreamView {
        &self.stream
    }

    /// Advances the session with one segment. `from_client` is the packet's direction
    /// before any role swap this call may request; when `swap_roles` is returned, the
    /// session has already been updated as if the sender had the other role (and so has
    /// the stream view, which only sees the sender's final role).
    pub fn on_segment(&mut self, seg: &TcpSegment, payload_len: u32, from_client: bool, cfg: TcpConfig) -> TcpOutcome {
        let out = self.advance(seg, payload_len, from_client, cfg);
        self.stream.on_segment(seg, payload_len, from_client != out.swap_roles, cfg);
        out
    }

    /// Client and server trade places after the fact: the app layer found that the
    /// session, picked up midstream, was first seen from its server (Suricata's
    /// `StreamTcpReverseSession`). Every per-side field of both views moves with its
    /// owner; the state itself is named from the client's side and stays.
    pub fn swap_sides(&mut self) {
        std::mem::swap(&mut self.client_isn, &mut self.server_isn);
        std::mem::swap(&mut self.client_fin_acked_by, &mut self.server_fin_acked_by);
        self.stream.sides.swap(0, 1);
    }

    /// The flow's view.
    fn advance(&mut self, seg: &TcpSegment, payload_len: u32, from_client: bool, cfg: TcpConfig) -> TcpOutcome {
        let mut out = TcpOutcome::default();
        let flags = seg.flags;
        let syn = flags & f::SYN != 0;
        let ack = flags & f::ACK != 0;
        let fin = flags & f::FIN != 0;
        let rst = flags & f::RST != 0;

        if syn && fin {
            out.event = Some(StreamEvent::FinSyn);
            out.invalid_flags = true;
            return out;
        }
        if (syn && rst) || flags & (f::SYN | f::ACK | f::FIN | f::RST) == 0 {
            out.invalid_flags = true;
            return out;
        }
        if !ack && seg.ack != 0 && !rst {
            // Counted but not fatal: broken middleboxes produce these routinely.
            out.event = Some(StreamEvent::PktBrokenAck);
        }

        if rst {
            if self.state == TcpState::None {
                out.event = Some(StreamEvent::RstButNoSession);
                out.no_session = true;
            } else {
                self.state = TcpState::Closed;
            }
            return out;
        }

        match self.state {
            TcpState::None => self.on_no_session(seg, syn, ack, fin, from_client, cfg, &mut out),
            TcpState::SynSent => self.on_syn_sent(seg, syn, ack, from_client, cfg, &mut out),
            // A session picked up from its SYN/ACK: the server's own ACKs may come first
            // (the client's side is not captured); see `synack_pickup_ack`.
            TcpState::SynRecv if !syn && ack && !from_client && self.midstream && self.synack_pickup_ack(seg, cfg) => {
                self.state = TcpState::Established;
                self.reached_established = true;
            }
            TcpState::SynRecv => self.on_syn_recv(seg, syn, ack, from_client, &mut out),
            TcpState::Closed => {
                out.after_close = true;
            }
            state => {
                if syn {
                    out.event = Some(self.syn_on_open_session(seg, ack, from_client, state));
                    return out;
                }
                self.on_teardown(seg, payload_len, ack, fin, from_client);
            }
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn on_no_session(
        &mut self,
        seg: &TcpSegment,
        syn: bool,
        ack: bool,
        fin: bool,
        from_client: bool,
        cfg: TcpConfig,
        out: &mut TcpOutcome,
    ) {
        if fin {
            out.event = Some(StreamEvent::FinButNoSession);
            out.no_session = true;
        } else if syn && !ack {
            self.state = TcpState::SynSent;
            self.client_isn = Some(seg.seq);
            out.session_started = true;
            out.swap_roles = !from_client;
        } else if syn && ack {
            // Suricata picks a session up from its SYN/ACK with midstream pickup or with
            // `async-oneside` (a capture that only sees the server's side).
            if cfg.midstream || cfg.async_oneside {
                self.state = TcpState::SynRecv;
                self.server_isn = Some(seg.seq);
                self.client_isn = Some(seg.ack.wrapping_sub(1));
                self.midstream = true;
                out.session_started = true;
                out.midstream_pickup = true;
                out.swap_roles = from_client;
            } else {
                out.no_session = true;
            }
        } else if cfg.midstream {
            self.state = TcpState::Established;
            self.reached_established = true;
            self.midstream = true;
            out.session_started = true;
            out.midstream_pickup = true;
        } else {
            out.no_session = true;
        }
    }

    fn on_syn_sent(
        &mut self,
        seg: &TcpSegment,
        syn: bool,
        ack: bool,
        from_client: bool,
        cfg: TcpConfig,
        out: &mut TcpOutcome,
    ) {
        let client_isn = self.client_isn.unwrap_or(seg.seq);
        match (syn, ack, from_client) {
            // SYN retransmission, possibly with a new ISN: the latest one counts.
            (true, false, true) => self.client_isn = Some(seg.seq),
            (true, true, false) => {
                if seg.ack == client_isn.wrapping_add(1) {
                    self.state = TcpState::SynRecv;
                    self.server_isn = Some(seg.seq);
                } else {
                    out.event = Some(StreamEvent::ThreeWhsSynackWithWrongAck);
                }
            }
            (true, true, true) => out.event = Some(StreamEvent::ThreeWhsSynackInWrongDirection),
            // Simultaneous open (SYN from the server) is not modelled; the session waits.
            (true, false, false) => {}
            // The client talks on without a visible SYN/ACK: asymmetric routing.
            (false, true, true) if cfg.async_oneside => {
                if seg.seq == client_isn.wrapping_add(1) {
                    self.state = TcpState::Established;
                    self.reached_established = true;
                } else {
                    out.event = Some(StreamEvent::ThreeWhsAsyncWrongSeq);
                }
            }
            _ => {}
        }
    }

    fn on_syn_recv(&mut self, seg: &TcpSegment, syn: bool, ack: bool, from_client: bool, out: &mut TcpOutcome) {
        match (syn, ack, from_client) {
            (true, true, false) => {
                let expected = self.client_isn.map(|isn| isn.wrapping_add(1));
                if expected.is_some_and(|e| e != seg.ack) {
                    out.event = Some(StreamEvent::ThreeWhsSynackResendWithDifferentAck);
                }
            }
            (true, true, true) => out.event = Some(StreamEvent::ThreeWhsSynackToserverOnSynRecv),
            (true, false, true) if self.client_isn.is_some_and(|isn| isn != seg.seq) => {
                out.event = Some(StreamEvent::ThreeWhsSynResendDiffSeqOnSynRecv);
            }
            (true, false, false) => out.event = Some(StreamEvent::ThreeWhsSynToclientOnSynRecv),
            (false, true, true) => {
                let expected = self.server_isn.map(|isn| isn.wrapping_add(1));
                if expected.is_none_or(|e| e == seg.ack) {
                    self.state = TcpState::Established;
                    self.reached_established = true;
                } else {
                    out.event = Some(StreamEvent::ThreeWhsWrongSeqWrongAck);
                }
            }
            (false, true, false) => out.event = Some(StreamEvent::ThreeWhsAckInWrongDir),
            _ => {}
        }
    }

    /// Whether the server's ACK establishes a session picked up from its SYN/ACK (in
    /// SYN_RECV). Suricata takes it as established on an ACK that continues the server's
    /// sequence with `async-oneside`, or on an "ACK for missing data": sequence and ACK
    /// number both past what the SYN/ACK told of the client (its ISN + 1).
    fn synack_pickup_ack(&self, seg: &TcpSegment, cfg: TcpConfig) -> bool {
        let (Some(server_isn), Some(client_isn)) = (self.server_isn, self.client_isn) else {
            return false;
        };
        let gt = |a: u32, b: u32| (a.wrapping_sub(b) as i32) > 0;
        let client_next = client_isn.wrapping_add(1);
        (cfg.async_oneside && seg.seq == server_isn.wrapping_add(1))
            || (gt(seg.seq, client_next) && gt(seg.ack, client_next))
    }

    fn syn_on_open_session(&self, seg: &TcpSegment, ack: bool, from_client: bool, state: TcpState) -> StreamEvent {
        if state.is_shutting_down() {
            return StreamEvent::ShutdownSynResend;
        }
        match (ack, from_client) {
            (true, false) => StreamEvent::EstSynackResend,
            (true, true) => StreamEvent::EstSynackToserver,
            (false, false) => StreamEvent::EstSynToclient,
            (false, true) if self.client_isn == Some(seg.seq) => StreamEvent::EstSynResend,
            (false, true) => StreamEvent::EstSynResendDiffSeq,
        }
    }

    /// Established and the FIN states.
    fn on_teardown(&mut self, seg: &TcpSegment, payload_len: u32, ack: bool, fin: bool, from_client: bool) {
        // Sequence number just past this segment's FIN: what the peer's ACK must reach.
        let fin_ack = seg.seq.wrapping_add(payload_len).wrapping_add(1);
        let acks = |fin_acked_by: Option<u32>| ack && fin_acked_by.is_some_and(|need| seq_ge(seg.ack, need));
        if fin {
            if from_client {
                self.client_fin_acked_by.get_or_insert(fin_ack);
            } else {
                self.server_fin_acked_by.get_or_insert(fin_ack);
            }
        }
        // Suricata's names: a FIN from the server opens FIN_WAIT1, one from the client
        // CLOSE_WAIT (its `StreamTcpHandleFin`); eve's `tcp.state` shows them.
        self.state = match (self.state, from_client) {
            (TcpState::Established, false) if fin => TcpState::FinWait1,
            (TcpState::Established, true) if fin => TcpState::CloseWait,
            (TcpState::FinWait1, true) if fin && acks(self.server_fin_acked_by) => TcpState::TimeWait,
            (TcpState::FinWait1, true) if fin => TcpState::Closing,
            (TcpState::FinWait1, true) if acks(self.server_fin_acked_by) => TcpState::FinWait2,
            (TcpState::FinWait2, true) if fin => TcpState::TimeWait,
            (TcpState::Closing, true) if acks(self.server_fin_acked_by) => TcpState::TimeWait,
            (TcpState::TimeWait, false) if acks(self.client_fin_acked_by) => TcpState::Closed,
            (TcpState::CloseWait, false) if fin => TcpState::LastAck,
            (TcpState::LastAck, true) if acks(self.server_fin_acked_by) => TcpState::Closed,
            (state, _) => state,
        };
    }
}

/// The session as stream reassembly sees it, kept by [`TcpSession`] (see the module doc
/// for why its rules differ from the flow's view in corner cases). Read-only outside
/// this module: reassembly takes from it whether the session is tracked, where each
/// direction's stream starts and whether it is closing.
///
/// State names and order are Suricata's ([`TcpState`]). To tell when a FIN is
/// acknowledged, it keeps the sequence bookkeeping reassembly does, in the same stream
/// offsets (unwrapped against the highest offset seen, which stops at
/// `reassembly.depth`): a FIN counts as acknowledged once a plausible ACK (not before the
/// stream start, at most 2^30 past the data seen) or, in a one-sided capture, the data
/// seen passes it. Offsets are 32-bit: with an unlimited depth, streams beyond 4 GiB wrap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamView {
    state: TcpState,
    /// The client's direction (to server), then the server's.
    sides: [StreamSide; 2],
    /// The latest segment was not accepted by the session (see [`StreamView::ignored`]).
    ignored: bool,
}

/// One direction of a [`StreamView`]. Offsets count from the stream start (`base_seq`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct StreamSide {
    /// Sequence number of stream offset 0 (ISN + 1, or where a pickup starts the stream);
    /// valid with [`StreamSide::BASE`], otherwise this direction is not reassembled.
    base_seq: u32,
    /// Highest right edge of the data seen, capped at the depth: the unwrapping reference.
    next_off: u32,
    /// Highest plausible offset acknowledged by the peer (with [`StreamSide::ACKED`]).
    acked_off: u32,
    /// Offset of the latest FIN, i.e. its sequence number (with [`StreamSide::FIN`]).
    fin_off: u32,
    /// Which of the above are set, and [`StreamSide::SEEN`].
    has: u8,
}

/// Furthest an ACK or a segment may reach past the data seen: the largest scaled TCP
/// window (reassembly's `MAX_AHEAD`).
const MAX_AHEAD: i64 = 1 << 30;

impl StreamSide {
    const BASE: u8 = 1;
    const ACKED: u8 = 2;
    const FIN: u8 = 4;
    /// A tracked segment came from this side.
    const SEEN: u8 = 8;

    fn base(&self) -> Option<u32> {
        (self.has & Self::BASE != 0).then_some(self.base_seq)
    }

    fn init(&mut self, base_seq: u32) {
        self.base_seq = base_seq;
        self.has |= Self::BASE;
    }

    /// `seq` as a signed offset from the stream start, unwrapped against `next_off`.
    fn offset_of(&self, seq: u32) -> i64 {
        let reference = self.next_off;
        let delta = seq.wrapping_sub(self.base_seq.wrapping_add(reference)) as i32 as i64;
        reference as i64 + delta
    }

    /// Raises the acknowledged offset to `off`.
    fn ack_to(&mut self, off: u32) {
        if self.has & Self::ACKED == 0 || off > self.acked_off {
            self.acked_off = off;
            self.has |= Self::ACKED;
        }
    }

    fn on_ack(&mut self, ack: u32) {
        if self.has & Self::BASE == 0 {
            return;
        }
        let off = self.offset_of(ack);
        if off < 0 || off > self.next_off as i64 + MAX_AHEAD {
            return;
        }
        self.ack_to(off as u32);
    }

    /// Data `[off, off + len)` arrived; reassembly keeps nothing from `depth` on (0:
    /// unlimited) and ignores data beyond any TCP window.
    fn on_data(&mut self, off: i64, len: u32, depth: u64) {
        if off > self.next_off as i64 + MAX_AHEAD {
            return;
        }
        let mut end = off + len as i64;
        if depth > 0 {
            if off >= depth as i64 {
                return;
            }
            end = end.min(depth as i64);
        }
        if end > self.next_off as i64 {
            self.next_off = end as u32;
        }
    }

    fn fin_acked(&self) -> bool {
        let both = Self::FIN | Self::ACKED;
        self.has & both == both && self.acked_off > self.fin_off
    }
}

impl StreamView {
    /// Session states in Suricata's order.
    #[inline]
    pub fn state(&self) -> TcpState {
        self.state
    }

    /// Whether reassembly tracks the session at all: a handshake was seen, or a midstream
    /// pickup allowed.
    #[inline]
    pub fn is_tracked(&self) -> bool {
        self.state != TcpState::None
    }

    /// Sequence number of stream offset 0 of the client's (`client == true`) or the
    /// server's direction; `None` while that direction has no known start and is not
    /// reassembled.
    #[inline]
    pub fn base_seq(&self, client: bool) -> Option<u32> {
        self.sides[!client as usize].base()
    }

    /// Past TIME_WAIT (CLOSE_WAIT, LAST_ACK, CLOSING, CLOSED): raw inspection flushes
    /// acknowledged data without waiting for a full chunk.
    #[inline]
    pub fn is_closing(&self) -> bool {
        self.state > TcpState::TimeWait
    }

    /// Whether the latest segment was rejected by a tracked session (e.g. the client's
    /// ACKs after its SYN when no SYN/ACK was seen, without `async-oneside`): reassembly
    /// takes neither its data nor its ACK, as Suricata's stream engine does not.
    #[inline]
    pub fn ignored(&self) -> bool {
        self.ignored
    }

    /// One segment from the client (`from_client`, the sender's final role) or server.
    fn on_segment(&mut self, seg: &TcpSegment, payload_len: u32, from_client: bool, cfg: TcpConfig) {
        let flags = seg.flags;
        let (d, o) = if from_client { (0, 1) } else { (1, 0) };
        let tracked = self.track_handshake(seg, d, o, cfg);
        self.ignored = !tracked && self.state != TcpState::None;
        if !tracked {
            return;
        }
        self.sides[d].has |= StreamSide::SEEN;
        if flags & f::ACK != 0 {
            self.sides[o].on_ack(seg.ack);
        }
        if self.sides[d].base().is_none() {
            // Direction first seen after the handshake state was set up (e.g. midstream
            // pickup from a packet without ACK): its first segment defines offset 0. Without
            // pickup there is no trustworthy ISN for it, so it is not reassembled.
            if !(cfg.midstream || cfg.async_oneside) || flags & f::RST != 0 {
                self.track_close(flags, from_client);
                return;
            }
            self.sides[d].init(seg.seq);
        }
        let side = &mut self.sides[d];
        // SYN occupies one sequence number before the first data byte (TCP Fast Open data).
        let data_seq = if flags & f::SYN != 0 { seg.seq.wrapping_add(1) } else { seg.seq };
        let off = side.offset_of(data_seq);
        if payload_len > 0 {
            side.on_data(off, payload_len, cfg.reassembly_depth);
        }
        if flags & f::FIN != 0 && off >= 0 {
            side.fin_off = (off + payload_len as i64) as u32;
            side.has |= StreamSide::FIN;
        }
        // One-sided capture: while the peer is never seen, reassembly counts this side's
        // contiguous data as acknowledged. Holes are not tracked here: the data seen
        // counts, which only differs for a FIN below data seen past a hole.
        if cfg.async_oneside && self.sides[o].has & StreamSide::SEEN == 0 {
            let side = &mut self.sides[d];
            let acked = if side.has & StreamSide::ACKED != 0 { side.acked_off } else { 0 };
            side.ack_to(acked.max(side.next_off));
        }
        self.track_close(flags, from_client);
    }

    /// Handshake and pickup; returns false if the session is not tracked.
    fn track_handshake(&mut self, seg: &TcpSegment, d: usize, o: usize, cfg: TcpConfig) -> bool {
        let flags = seg.flags;
        let syn = flags & f::SYN != 0;
        let ack = flags & f::ACK != 0;
        let from_client = d == 0;
        match self.state {
            TcpState::None => {
                if syn && !ack {
                    self.sides[d].init(seg.seq.wrapping_add(1));
                    self.state = TcpState::SynSent;
                } else if syn && ack {
                    if !(cfg.midstream || cfg.async_oneside) {
                        return false;
                    }
                    self.sides[d].init(seg.seq.wrapping_add(1));
                    self.sides[o].init(seg.ack);
                    self.state = TcpState::SynRecv;
                } else {
                    if !cfg.midstream || flags & f::RST != 0 {
                        return false;
                    }
                    self.sides[d].init(seg.seq);
                    if ack {
                        self.sides[o].init(seg.ack);
                    }
                    self.state = TcpState::Established;
                }
            }
            // Without `async-oneside`, Suricata ignores the client's segments after its
            // SYN while nothing came back: none of their data is reassembled. (A server
            // that answered with a SYN of its own, a split handshake, is not modelled
            // here: its client's data stays reassembled as before.)
            TcpState::SynSent
                if !syn && ack && from_client && !cfg.async_oneside && self.sides[o].has & StreamSide::SEEN == 0 =>
            {
                return false
            }
            TcpState::SynSent => {
                if syn && ack && !from_client {
                    self.sides[d].init(seg.seq.wrapping_add(1));
                    self.state = TcpState::SynRecv;
                } else if !syn && ack && from_client && cfg.async_oneside {
                    // The SYN/ACK was not captured: the client's ACK tells the server's ISN.
                    self.sides[o].init(seg.ack);
                    self.state = TcpState::Established;
                }
            }
            TcpState::SynRecv if !syn && ack && from_client => {
                self.state = TcpState::Established;
            }
            _ => {}
        }
        true
    }

    /// FIN/RST state changes.
    fn track_close(&mut self, flags: u8, from_client: bool) {
        if flags & f::RST != 0 {
            if self.state >= TcpState::SynSent {
                self.state = TcpState::Closed;
            }
            return;
        }
        let fin = flags & f::FIN != 0;
        let client_fin_acked = self.sides[0].fin_acked();
        let server_fin_acked = self.sides[1].fin_acked();
        // Suricata's names (see the module doc): the server's FIN opens FIN_WAIT1, the
        // client's CLOSE_WAIT, which is past TIME_WAIT and so flushes raw inspection.
        self.state = match self.state {
            TcpState::SynRecv | TcpState::Established if fin => {
                if from_client {
                    TcpState::CloseWait
                } else {
                    TcpState::FinWait1
                }
            }
            TcpState::FinWait1 if from_client && fin => {
                if server_fin_acked {
                    TcpState::TimeWait
                } else {
                    TcpState::Closing
                }
            }
            TcpState::FinWait1 if from_client && server_fin_acked => TcpState::FinWait2,
            TcpState::FinWait2 if from_client && fin => TcpState::TimeWait,
            TcpState::CloseWait if !from_client && fin => TcpState::LastAck,
            TcpState::LastAck if from_client && server_fin_acked => TcpState::Closed,
            TcpState::TimeWait if !from_client && client_fin_acked => TcpState::Closed,
            TcpState::Closing if client_fin_acked && server_fin_acked => TcpState::Closed,
            s => s,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: TcpConfig = TcpConfig { midstream: false, async_oneside: false, reassembly_depth: 0 };
    const MIDSTREAM: TcpConfig = TcpConfig { midstream: true, async_oneside: false, reassembly_depth: 0 };

    fn seg(flags: u8, seq: u32, ack: u32) -> TcpSegment {
        TcpSegment { flags, seq, ack, window: 1000 }
    }

    fn handshake() -> TcpSession {
        let mut s = TcpSession::default();
        s.on_segment(&seg(f::SYN, 100, 0), 0, true, STRICT);
        assert_eq!(s.state, TcpState::SynSent);
        s.on_segment(&seg(f::SYN | f::ACK, 500, 101), 0, false, STRICT);
        assert_eq!(s.state, TcpState::SynRecv);
        s.on_segment(&seg(f::ACK, 101, 501), 0, true, STRICT);
        assert_eq!(s.state, TcpState::Established);
        s
    }

    #[test]
    fn three_way_handshake_establishes() {
        let s = handshake();
        assert!(s.reached_established);
        assert!(!s.midstream);
    }

    #[test]
    fn synack_with_wrong_ack_is_flagged_and_ignored() {
        let mut s = TcpSession::default();
        s.on_segment(&seg(f::SYN, 100, 0), 0, true, STRICT);
        let out = s.on_segment(&seg(f::SYN | f::ACK, 500, 999), 0, false, STRICT);
        assert_eq!(out.event, Some(StreamEvent::ThreeWhsSynackWithWrongAck));
        assert_eq!(s.state, TcpState::SynSent);
    }

    #[test]
    fn final_ack_with_wrong_number_does_not_establish() {
        let mut s = TcpSession::default();
        s.on_segment(&seg(f::SYN, 100, 0), 0, true, STRICT);
        s.on_segment(&seg(f::SYN | f::ACK, 500, 101), 0, false, STRICT);
        let out = s.on_segment(&seg(f::ACK, 101, 7), 0, true, STRICT);
        assert_eq!(out.event, Some(StreamEvent::ThreeWhsWrongSeqWrongAck));
        assert_eq!(s.state, TcpState::SynRecv);
    }

    #[test]
    fn server_close_walks_fin_wait_to_closed() {
        let mut s = handshake();
        // Server sends 10 bytes of data with its FIN: the FIN occupies seq 511.
        s.on_segment(&seg(f::FIN | f::ACK, 501, 101), 10, false, STRICT);
        assert_eq!(s.state, TcpState::FinWait1);
        s.on_segment(&seg(f::FIN | f::ACK, 101, 512), 0, true, STRICT);
        assert_eq!(s.state, TcpState::TimeWait);
        s.on_segment(&seg(f::ACK, 512, 102), 0, false, STRICT);
        assert_eq!(s.state, TcpState::Closed);
        assert_eq!(s.state.flow_state(), FlowState::Closed);
    }

    #[test]
    fn fin_wait1_needs_the_fin_acknowledged() {
        let mut s = handshake();
        s.on_segment(&seg(f::FIN | f::ACK, 501, 101), 10, false, STRICT);
        // ACK that does not cover the FIN: still fin_wait1.
        s.on_segment(&seg(f::ACK, 101, 505), 0, true, STRICT);
        assert_eq!(s.state, TcpState::FinWait1);
        s.on_segment(&seg(f::ACK, 101, 512), 0, true, STRICT);
        assert_eq!(s.state, TcpState::FinWait2);
        s.on_segment(&seg(f::FIN | f::ACK, 101, 512), 0, true, STRICT);
        assert_eq!(s.state, TcpState::TimeWait);
    }

    #[test]
    fn simultaneous_close_goes_through_closing() {
        let mut s = handshake();
        s.on_segment(&seg(f::FIN | f::ACK, 501, 101), 0, false, STRICT);
        // Client FIN crosses the server's FIN: it does not acknowledge it yet.
        s.on_segment(&seg(f::FIN | f::ACK, 101, 501), 0, true, STRICT);
        assert_eq!(s.state, TcpState::Closing);
        s.on_segment(&seg(f::ACK, 102, 502), 0, true, STRICT);
        assert_eq!(s.state, TcpState::TimeWait);
    }

    #[test]
    fn client_close_walks_close_wait_to_closed() {
        // Suricata names the client's FIN first CLOSE_WAIT (eve `tcp.state`).
        let mut s = handshake();
        s.on_segment(&seg(f::FIN | f::ACK, 101, 501), 0, true, STRICT);
        assert_eq!(s.state, TcpState::CloseWait);
        assert_eq!(s.state.flow_state(), FlowState::Established);
        s.on_segment(&seg(f::FIN | f::ACK, 501, 102), 0, false, STRICT);
        assert_eq!(s.state, TcpState::LastAck);
        assert_eq!(s.state.flow_state(), FlowState::Closed);
        s.on_segment(&seg(f::ACK, 102, 502), 0, true, STRICT);
        assert_eq!(s.state, TcpState::Closed);
    }

    const ASYNC: TcpConfig = TcpConfig { midstream: false, async_oneside: true, reassembly_depth: 0 };

    /// `async-oneside` alone picks a session up from its SYN/ACK (the server's side of an
    /// asymmetric capture), turned round; the server's next ACK, continuing its own
    /// sequence, makes it established. Its FIN is Suricata's FIN_WAIT1.
    #[test]
    fn async_oneside_picks_up_a_synack_and_the_server_ack_establishes() {
        let mut s = TcpSession::default();
        let out = s.on_segment(&seg(f::SYN | f::ACK, 5000, 101), 0, true, ASYNC);
        assert!(out.swap_roles && out.midstream_pickup);
        assert_eq!((s.state, s.stream().state()), (TcpState::SynRecv, TcpState::SynRecv));
        assert_eq!(s.stream().base_seq(false), Some(5001));
        s.on_segment(&seg(f::ACK, 5001, 141), 0, false, ASYNC);
        assert_eq!(s.state, TcpState::Established);
        s.on_segment(&seg(f::FIN | f::ACK, 5001, 141), 100, false, ASYNC);
        assert_eq!((s.state, s.state.flow_state()), (TcpState::FinWait1, FlowState::Established));
        // Without either option, the SYN/ACK starts nothing.
        let mut s = TcpSession::default();
        assert!(s.on_segment(&seg(f::SYN | f::ACK, 5000, 101), 0, true, STRICT).no_session);
    }

    /// Midstream pickup from a SYN/ACK without `async-oneside`: the server's ACK for client
    /// data never captured (sequence and ACK number both past the client's ISN + 1, as
    /// Suricata compares them) establishes the session.
    #[test]
    fn midstream_synack_pickup_established_by_an_ack_for_missing_data() {
        let mut s = TcpSession::default();
        s.on_segment(&seg(f::SYN | f::ACK, 2_548_486_694, 2_059_970_494), 0, true, MIDSTREAM);
        s.on_segment(&seg(f::ACK, 2_548_486_695, 2_059_970_575), 0, false, MIDSTREAM);
        assert_eq!(s.state, TcpState::Established);
        // An ACK that acknowledges nothing new is still the wrong direction.
        let mut s = TcpSession::default();
        s.on_segment(&seg(f::SYN | f::ACK, 500, 101), 0, true, MIDSTREAM);
        let out = s.on_segment(&seg(f::ACK, 501, 101), 0, false, MIDSTREAM);
        assert_eq!((s.state, out.event), (TcpState::SynRecv, Some(StreamEvent::ThreeWhsAckInWrongDir)));
    }

    /// A client talking on after its SYN with no answer seen: without `async-oneside` the
    /// stream view rejects its segments (reassembly takes no data), with it they establish.
    #[test]
    fn client_segments_after_an_unanswered_syn_need_async_oneside() {
        let mut s = TcpSession::default();
        s.on_segment(&seg(f::SYN, 100, 0), 0, true, MIDSTREAM);
        s.on_segment(&seg(f::ACK | f::PSH, 101, 900), 40, true, MIDSTREAM);
        assert!(s.stream().ignored());
        assert_eq!((s.state, s.stream().state()), (TcpState::SynSent, TcpState::SynSent));
        let mut s = TcpSession::default();
        s.on_segment(&seg(f::SYN, 100, 0), 0, true, ASYNC);
        s.on_segment(&seg(f::ACK | f::PSH, 101, 900), 40, true, ASYNC);
        assert!(!s.stream().ignored());
        assert_eq!((s.state, s.stream().state()), (TcpState::Established, TcpState::Established));
        // A client FIN is Suricata's CLOSE_WAIT, which flushes raw inspection.
        s.on_segment(&seg(f::FIN | f::ACK, 141, 900), 0, true, ASYNC);
        assert_eq!(s.state, TcpState::CloseWait);
        assert!(s.stream().is_closing());
    }

    #[test]
    fn rst_closes_from_any_session_state() {
        for steps in 1..=3 {
            let mut s = TcpSession::default();
            let script = [(seg(f::SYN, 1, 0), true), (seg(f::SYN | f::ACK, 9, 2), false), (seg(f::ACK, 2, 10), true)];
            for (sg, dir) in &script[..steps] {
                s.on_segment(sg, 0, *dir, STRICT);
            }
            s.on_segment(&seg(f::RST, 10, 0), 0, false, STRICT);
            assert_eq!(s.state, TcpState::Closed, "after {steps} handshake steps");
        }
    }

    #[test]
    fn rst_without_session_is_an_event() {
        let mut s = TcpSession::default();
        let out = s.on_segment(&seg(f::RST | f::ACK, 1, 1), 0, true, STRICT);
        assert_eq!(out.event, Some(StreamEvent::RstButNoSession));
        assert_eq!(s.state, TcpState::None);
    }

    #[test]
    fn midstream_pickup_only_when_enabled() {
        let mut off = TcpSession::default();
        let out = off.on_segment(&seg(f::ACK | f::PSH, 1, 1), 100, true, STRICT);
        assert!(out.no_session && !out.midstream_pickup);
        assert_eq!(off.state, TcpState::None);

        let mut on = TcpSession::default();
        let out = on.on_segment(&seg(f::ACK | f::PSH, 1, 1), 100, true, MIDSTREAM);
        assert!(out.midstream_pickup && out.session_started);
        assert_eq!(on.state, TcpState::Established);
        assert!(on.midstream && on.reached_established);
    }

    #[test]
    fn swap_sides_moves_each_direction_with_its_owner() {
        let mut s = TcpSession::default();
        // Picked up from the server's data packet, taken for the client's: its sequence
        // number starts the "client" direction, its ACK the other.
        s.on_segment(&seg(f::ACK | f::PSH, 500, 100), 10, true, MIDSTREAM);
        assert_eq!((s.stream().base_seq(true), s.stream().base_seq(false)), (Some(500), Some(100)));
        s.swap_sides();
        assert_eq!((s.stream().base_seq(true), s.stream().base_seq(false)), (Some(100), Some(500)));
        // The real client's ACK of the server's data moves the session on, from its side.
        s.on_segment(&seg(f::ACK, 100, 510), 0, true, MIDSTREAM);
        assert_eq!(s.stream().base_seq(true), Some(100));
        assert_eq!(s.state, TcpState::Established);
    }

    #[test]
    fn midstream_synack_swaps_roles_and_waits_for_ack() {
        let mut s = TcpSession::default();
        // The first packet seen is a SYN/ACK: its sender is the server.
        let out = s.on_segment(&seg(f::SYN | f::ACK, 500, 101), 0, true, MIDSTREAM);
        assert!(out.swap_roles && out.midstream_pickup);
        assert_eq!(s.state, TcpState::SynRecv);
        // After the swap the original sender's peer is the client.
        s.on_segment(&seg(f::ACK, 101, 501), 0, true, MIDSTREAM);
        assert_eq!(s.state, TcpState::Established);
    }

    #[test]
    fn async_oneside_accepts_client_ack_after_syn() {
        let cfg = TcpConfig { midstream: false, async_oneside: true, reassembly_depth: 0 };
        let mut s = TcpSession::default();
        s.on_segment(&seg(f::SYN, 100, 0), 0, true, cfg);
        s.on_segment(&seg(f::ACK, 101, 777), 0, true, cfg);
        assert_eq!(s.state, TcpState::Established);

        let mut strict = TcpSession::default();
        strict.on_segment(&seg(f::SYN, 100, 0), 0, true, STRICT);
        strict.on_segment(&seg(f::ACK, 101, 777), 0, true, STRICT);
        assert_eq!(strict.state, TcpState::SynSent);
    }

    #[test]
    fn syn_on_established_is_classified() {
        let mut s = handshake();
        assert_eq!(s.on_segment(&seg(f::SYN, 100, 0), 0, true, STRICT).event, Some(StreamEvent::EstSynResend));
        assert_eq!(s.on_segment(&seg(f::SYN, 42, 0), 0, true, STRICT).event, Some(StreamEvent::EstSynResendDiffSeq));
        assert_eq!(s.on_segment(&seg(f::SYN, 42, 0), 0, false, STRICT).event, Some(StreamEvent::EstSynToclient));
        assert_eq!(
            s.on_segment(&seg(f::SYN | f::ACK, 500, 101), 0, false, STRICT).event,
            Some(StreamEvent::EstSynackResend)
        );
        assert_eq!(s.state, TcpState::Established);
    }

    #[test]
    fn invalid_flag_combinations_do_not_move_the_state() {
        let mut s = handshake();
        let out = s.on_segment(&seg(f::SYN | f::FIN, 1, 0), 0, true, STRICT);
        assert_eq!(out.event, Some(StreamEvent::FinSyn));
        assert!(out.invalid_flags);
        assert!(s.on_segment(&seg(f::SYN | f::RST, 1, 0), 0, true, STRICT).invalid_flags);
        assert!(s.on_segment(&seg(0, 1, 0), 0, true, STRICT).invalid_flags);
        assert_eq!(s.state, TcpState::Established);
    }

    // The stream view (what reassembly reads) and where it deliberately differs from the
    // flow's view: see the module doc.

    #[test]
    fn stream_view_follows_the_handshake_and_gives_stream_starts() {
        let s = handshake();
        let v = s.stream();
        assert!(v.is_tracked() && !v.is_closing());
        assert_eq!(v.state(), TcpState::Established);
        assert_eq!((v.base_seq(true), v.base_seq(false)), (Some(101), Some(501)));

        let mut picked = TcpSession::default();
        picked.on_segment(&seg(f::ACK | f::PSH, 7_000, 9_000), 10, true, MIDSTREAM);
        let v = picked.stream();
        assert_eq!((v.base_seq(true), v.base_seq(false)), (Some(7_000), Some(9_000)));
        let mut off = TcpSession::default();
        off.on_segment(&seg(f::ACK | f::PSH, 7_000, 9_000), 10, true, STRICT);
        assert!(!off.stream().is_tracked());
    }

    #[test]
    fn stream_view_accepts_a_fast_open_synack() {
        let mut s = TcpSession::default();
        // 8 bytes of data on the SYN; the SYN/ACK acknowledges them too.
        s.on_segment(&seg(f::SYN, 50, 0), 8, true, STRICT);
        let out = s.on_segment(&seg(f::SYN | f::ACK, 60, 59), 0, false, STRICT);
        assert_eq!(out.event, Some(StreamEvent::ThreeWhsSynackWithWrongAck));
        assert_eq!(s.state, TcpState::SynSent);
        assert_eq!(s.stream().state(), TcpState::SynRecv);
        assert_eq!(s.stream().base_seq(false), Some(61));
    }

    #[test]
    fn stream_view_starts_the_teardown_on_a_fin_in_syn_recv() {
        let mut s = TcpSession::default();
        s.on_segment(&seg(f::SYN | f::ACK, 500, 101), 0, true, MIDSTREAM);
        // The SYN/ACK sender, the server after the role swap, sends its FIN before any
        // client ACK.
        s.on_segment(&seg(f::FIN | f::ACK, 501, 101), 0, false, MIDSTREAM);
        assert_eq!(s.state, TcpState::SynRecv);
        assert_eq!(s.stream().state(), TcpState::FinWait1);
        assert!(!s.stream().is_closing());
    }

    #[test]
    fn stream_view_closes_a_simultaneous_close_without_time_wait() {
        let mut s = handshake();
        s.on_segment(&seg(f::FIN | f::ACK, 501, 101), 0, false, STRICT);
        s.on_segment(&seg(f::FIN | f::ACK, 101, 501), 0, true, STRICT);
        assert_eq!((s.state, s.stream().state()), (TcpState::Closing, TcpState::Closing));
        s.on_segment(&seg(f::ACK, 102, 502), 0, true, STRICT);
        assert_eq!((s.state, s.stream().state()), (TcpState::TimeWait, TcpState::Closing));
        s.on_segment(&seg(f::ACK, 502, 102), 0, false, STRICT);
        assert_eq!((s.state, s.stream().state()), (TcpState::Closed, TcpState::Closed));
    }

    #[test]
    fn stream_view_acts_on_invalid_flag_combinations() {
        let mut s = handshake();
        let out = s.on_segment(&seg(f::SYN | f::RST, 101, 0), 0, true, STRICT);
        assert!(out.invalid_flags);
        assert_eq!(s.state, TcpState::Established);
        assert_eq!(s.stream().state(), TcpState::Closed);
    }

    #[test]
    fn event_names_are_unique() {
        let mut names: Vec<_> = StreamEvent::ALL.iter().map(|e| e.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), StreamEvent::ALL.len());
    }
}
