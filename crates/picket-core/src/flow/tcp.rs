//! TCP session tracking by flags and handshake sequence numbers, after Suricata's
//! single-state model (one state per session, named from the client's side).
//!
//! ```text
//! none ─SYN─▶ syn_sent ─SYN/ACK─▶ syn_recv ─ACK─▶ established
//! established ─FIN from client─▶ fin_wait1 ─ACK of FIN─▶ fin_wait2 ─FIN─▶ time_wait ─ACK─▶ closed
//!             fin_wait1 ─FIN+ACK of FIN─▶ time_wait;   fin_wait1 ─FIN─▶ closing ─ACK─▶ time_wait
//! established ─FIN from server─▶ close_wait ─FIN from client─▶ last_ack ─ACK of FIN─▶ closed
//! any state ─RST─▶ closed
//! ```
//! What it checks: handshake ACK numbers (SYN/ACK acks the client ISN, the final ACK acks
//! the server ISN) and that a FIN was acknowledged before moving past it. What it does not
//! do (that is the stream-reassembly stage's job): window tracking, RST sequence
//! validation, retransmission detection, 4-way (simultaneous open) handshakes.
//!
//! Midstream pickup (`midstream = true`): a session whose first packet carries ACK is taken
//! as established; a first SYN/ACK starts in syn_recv with the roles swapped so the SYN/ACK
//! sender is the server. With midstream off such flows stay in state none ("new").

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
            StreamEvent::ThreeWhsSynackResendWithDifferentAck => {
                "3whs_synack_resend_with_different_ack"
            }
            StreamEvent::ThreeWhsSynackToserverOnSynRecv => "3whs_synack_toserver_on_syn_recv",
            StreamEvent::ThreeWhsSynackWithWrongAck => "3whs_synack_with_wrong_ack",
            StreamEvent::ThreeWhsSynResendDiffSeqOnSynRecv => {
                "3whs_syn_resend_diff_seq_on_syn_recv"
            }
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
    /// Advances the session with one segment. `from_client` is the packet's direction
    /// before any role swap this call may request; when `swap_roles` is returned, the
    /// session has already been updated as if the sender had the other role.
    pub fn on_segment(
        &mut self,
        seg: &TcpSegment,
        payload_len: u32,
        from_client: bool,
        cfg: TcpConfig,
    ) -> TcpOutcome {
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
            if cfg.midstream {
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

    fn on_syn_recv(
        &mut self,
        seg: &TcpSegment,
        syn: bool,
        ack: bool,
        from_client: bool,
        out: &mut TcpOutcome,
    ) {
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

    fn syn_on_open_session(
        &self,
        seg: &TcpSegment,
        ack: bool,
        from_client: bool,
        state: TcpState,
    ) -> StreamEvent {
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
    fn on_teardown(
        &mut self,
        seg: &TcpSegment,
        payload_len: u32,
        ack: bool,
        fin: bool,
        from_client: bool,
    ) {
        // Sequence number just past this segment's FIN: what the peer's ACK must reach.
        let fin_ack = seg.seq.wrapping_add(payload_len).wrapping_add(1);
        let acks = |fin_acked_by: Option<u32>| {
            ack && fin_acked_by.is_some_and(|need| seq_ge(seg.ack, need))
        };
        if fin {
            if from_client {
                self.client_fin_acked_by.get_or_insert(fin_ack);
            } else {
                self.server_fin_acked_by.get_or_insert(fin_ack);
            }
        }
        self.state = match (self.state, from_client) {
            (TcpState::Established, true) if fin => TcpState::FinWait1,
            (TcpState::Established, false) if fin => TcpState::CloseWait,
            (TcpState::FinWait1, false) if fin && acks(self.client_fin_acked_by) => {
                TcpState::TimeWait
            }
            (TcpState::FinWait1, false) if fin => TcpState::Closing,
            (TcpState::FinWait1, false) if acks(self.client_fin_acked_by) => TcpState::FinWait2,
            (TcpState::FinWait2, false) if fin => TcpState::TimeWait,
            (TcpState::Closing, false) if acks(self.client_fin_acked_by) => TcpState::TimeWait,
            (TcpState::TimeWait, true) if acks(self.server_fin_acked_by) => TcpState::Closed,
            (TcpState::CloseWait, true) if fin => TcpState::LastAck,
            (TcpState::LastAck, false) if acks(self.client_fin_acked_by) => TcpState::Closed,
            (state, _) => state,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: TcpConfig = TcpConfig {
        midstream: false,
        async_oneside: false,
    };
    const MIDSTREAM: TcpConfig = TcpConfig {
        midstream: true,
        async_oneside: false,
    };

    fn seg(flags: u8, seq: u32, ack: u32) -> TcpSegment {
        TcpSegment {
            flags,
            seq,
            ack,
            window: 1000,
        }
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
    fn client_close_walks_fin_wait_to_closed() {
        let mut s = handshake();
        // Client sends 10 bytes of data with its FIN: the FIN occupies seq 111.
        s.on_segment(&seg(f::FIN | f::ACK, 101, 501), 10, true, STRICT);
        assert_eq!(s.state, TcpState::FinWait1);
        s.on_segment(&seg(f::FIN | f::ACK, 501, 112), 0, false, STRICT);
        assert_eq!(s.state, TcpState::TimeWait);
        s.on_segment(&seg(f::ACK, 112, 502), 0, true, STRICT);
        assert_eq!(s.state, TcpState::Closed);
        assert_eq!(s.state.flow_state(), FlowState::Closed);
    }

    #[test]
    fn fin_wait1_needs_the_fin_acknowledged() {
        let mut s = handshake();
        s.on_segment(&seg(f::FIN | f::ACK, 101, 501), 10, true, STRICT);
        // ACK that does not cover the FIN: still fin_wait1.
        s.on_segment(&seg(f::ACK, 501, 105), 0, false, STRICT);
        assert_eq!(s.state, TcpState::FinWait1);
        s.on_segment(&seg(f::ACK, 501, 112), 0, false, STRICT);
        assert_eq!(s.state, TcpState::FinWait2);
        s.on_segment(&seg(f::FIN | f::ACK, 501, 112), 0, false, STRICT);
        assert_eq!(s.state, TcpState::TimeWait);
    }

    #[test]
    fn simultaneous_close_goes_through_closing() {
        let mut s = handshake();
        s.on_segment(&seg(f::FIN | f::ACK, 101, 501), 0, true, STRICT);
        // Server FIN crosses the client's FIN: it does not acknowledge it yet.
        s.on_segment(&seg(f::FIN | f::ACK, 501, 101), 0, false, STRICT);
        assert_eq!(s.state, TcpState::Closing);
        s.on_segment(&seg(f::ACK, 502, 102), 0, false, STRICT);
        assert_eq!(s.state, TcpState::TimeWait);
    }

    #[test]
    fn server_close_walks_close_wait_to_closed() {
        let mut s = handshake();
        s.on_segment(&seg(f::FIN | f::ACK, 501, 101), 0, false, STRICT);
        assert_eq!(s.state, TcpState::CloseWait);
        assert_eq!(s.state.flow_state(), FlowState::Established);
        s.on_segment(&seg(f::FIN | f::ACK, 101, 502), 0, true, STRICT);
        assert_eq!(s.state, TcpState::LastAck);
        assert_eq!(s.state.flow_state(), FlowState::Closed);
        s.on_segment(&seg(f::ACK, 502, 102), 0, false, STRICT);
        assert_eq!(s.state, TcpState::Closed);
    }

    #[test]
    fn rst_closes_from_any_session_state() {
        for steps in 1..=3 {
            let mut s = TcpSession::default();
            let script = [
                (seg(f::SYN, 1, 0), true),
                (seg(f::SYN | f::ACK, 9, 2), false),
                (seg(f::ACK, 2, 10), true),
            ];
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
        let cfg = TcpConfig {
            midstream: false,
            async_oneside: true,
        };
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
        assert_eq!(
            s.on_segment(&seg(f::SYN, 100, 0), 0, true, STRICT).event,
            Some(StreamEvent::EstSynResend)
        );
        assert_eq!(
            s.on_segment(&seg(f::SYN, 42, 0), 0, true, STRICT).event,
            Some(StreamEvent::EstSynResendDiffSeq)
        );
        assert_eq!(
            s.on_segment(&seg(f::SYN, 42, 0), 0, false, STRICT).event,
            Some(StreamEvent::EstSynToclient)
        );
        assert_eq!(
            s.on_segment(&seg(f::SYN | f::ACK, 500, 101), 0, false, STRICT)
                .event,
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
        assert!(
            s.on_segment(&seg(f::SYN | f::RST, 1, 0), 0, true, STRICT)
                .invalid_flags
        );
        assert!(s.on_segment(&seg(0, 1, 0), 0, true, STRICT).invalid_flags);
        assert_eq!(s.state, TcpState::Established);
    }

    #[test]
    fn event_names_are_unique() {
        let mut names: Vec<_> = StreamEvent::ALL.iter().map(|e| e.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), StreamEvent::ALL.len());
    }
}
