//! Flow and TCP counters of one worker, named like Suricata's `stats.log` entries.
//! Names not found in Suricata are marked "picket" below.

use super::tcp::StreamEvent;

macro_rules! flow_counters {
    ($( $(#[$doc:meta])* $field:ident => $name:literal, )*) => {
        /// Plain counters owned by one worker; sum them across workers with [`FlowCounters::add`].
        /// Gauges (`flow.active*`, `flow.memuse`) describe the current table and add up too.
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct FlowCounters {
            $( $(#[$doc])* pub $field: u64, )*
        }

        impl FlowCounters {
            /// Every counter with its dotted name, in a fixed order.
            pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
                [$( ($name, self.$field), )*].into_iter()
            }

            /// Adds `other` into `self` (for merging per-worker counters).
            pub fn add(&mut self, other: &FlowCounters) {
                $( self.$field = self.$field.wrapping_add(other.$field); )*
            }
        }
    };
}

flow_counters! {
    /// Flows created.
    total => "flow.total",
    tcp => "flow.tcp",
    udp => "flow.udp",
    icmpv4 => "flow.icmpv4",
    icmpv6 => "flow.icmpv6",
    /// picket: flows of any other IP protocol.
    other => "flow.other",
    /// Gauge: flows currently in the table.
    active => "flow.active",
    /// picket: gauges per protocol family.
    active_tcp => "flow.active.tcp",
    active_udp => "flow.active.udp",
    active_icmpv4 => "flow.active.icmpv4",
    active_icmpv6 => "flow.active.icmpv6",
    active_other => "flow.active.other",
    /// Gauge: bytes the table holds: slab and hash index at their allocated capacity plus
    /// the heap of the flows' app-layer state.
    memuse => "flow.memuse",
    /// Times a new flow found the memcap full (flow limit reached, or the memory in use).
    memcap => "flow.memcap",
    /// Flows evicted to make room for a new one (Suricata's "get used flow").
    get_used => "flow.get_used",
    /// picket: packets that got no flow because the limit was reached and nothing could be
    /// evicted (only possible when the memcap is smaller than one flow).
    memcap_drop => "flow.memcap_drop",
    emerg_mode_entered => "flow.emerg_mode_entered",
    emerg_mode_over => "flow.emerg_mode_over",
    /// A SYN on a closed TCP session started a new flow on the same tuple.
    tcp_reuse => "flow.tcp_reuse",
    /// picket: flows ended by reason.
    end_timeout => "flow.end.reason.timeout",
    end_forced => "flow.end.reason.forced",
    end_shutdown => "flow.end.reason.shutdown",
    end_tcp_reuse => "flow.end.reason.tcp_reuse",
    /// Flows ended, by their state at the end.
    end_state_new => "flow.end.state.new",
    end_state_established => "flow.end.state.established",
    end_state_closed => "flow.end.state.closed",

    /// TCP sessions started (SYN seen or midstream pickup).
    tcp_sessions => "tcp.sessions",
    tcp_midstream_pickups => "tcp.midstream_pickups",
    /// Packets with SYN and without ACK.
    tcp_syn => "tcp.syn",
    tcp_synack => "tcp.synack",
    tcp_rst => "tcp.rst",
    /// picket: packets with SYN+RST or no flags at all; ignored by the state machine.
    tcp_invalid_flags => "tcp.invalid_flags",
    /// picket: non-RST packets on a TCP session that is already closed.
    tcp_pkt_after_close => "tcp.pkt_after_close",
    /// picket: TCP packets on a flow whose session was not picked up (handshake missed,
    /// midstream off).
    tcp_no_session => "tcp.no_session",

    // Stream events (Suricata `stream-event` names, counted as in `stats.stream-events`).
    stream_3whs_ack_in_wrong_dir => "stream.3whs_ack_in_wrong_dir",
    stream_3whs_async_wrong_seq => "stream.3whs_async_wrong_seq",
    stream_3whs_synack_in_wrong_direction => "stream.3whs_synack_in_wrong_direction",
    stream_3whs_synack_resend_with_different_ack => "stream.3whs_synack_resend_with_different_ack",
    stream_3whs_synack_toserver_on_syn_recv => "stream.3whs_synack_toserver_on_syn_recv",
    stream_3whs_synack_with_wrong_ack => "stream.3whs_synack_with_wrong_ack",
    stream_3whs_syn_resend_diff_seq_on_syn_recv => "stream.3whs_syn_resend_diff_seq_on_syn_recv",
    stream_3whs_syn_toclient_on_syn_recv => "stream.3whs_syn_toclient_on_syn_recv",
    stream_3whs_wrong_seq_wrong_ack => "stream.3whs_wrong_seq_wrong_ack",
    stream_est_synack_resend => "stream.est_synack_resend",
    stream_est_synack_toserver => "stream.est_synack_toserver",
    stream_est_syn_resend => "stream.est_syn_resend",
    stream_est_syn_resend_diff_seq => "stream.est_syn_resend_diff_seq",
    stream_est_syn_toclient => "stream.est_syn_toclient",
    stream_fin_but_no_session => "stream.fin_but_no_session",
    stream_rst_but_no_session => "stream.rst_but_no_session",
    stream_shutdown_syn_resend => "stream.shutdown_syn_resend",
    stream_pkt_broken_ack => "stream.pkt_broken_ack",
    stream_fin_syn => "stream.fin_syn",
}

impl FlowCounters {
    pub(crate) fn add_stream_event(&mut self, event: StreamEvent) {
        use StreamEvent as E;
        let counter = match event {
            E::ThreeWhsAckInWrongDir => &mut self.stream_3whs_ack_in_wrong_dir,
            E::ThreeWhsAsyncWrongSeq => &mut self.stream_3whs_async_wrong_seq,
            E::ThreeWhsSynackInWrongDirection => &mut self.stream_3whs_synack_in_wrong_direction,
            E::ThreeWhsSynackResendWithDifferentAck => &mut self.stream_3whs_synack_resend_with_different_ack,
            E::ThreeWhsSynackToserverOnSynRecv => &mut self.stream_3whs_synack_toserver_on_syn_recv,
            E::ThreeWhsSynackWithWrongAck => &mut self.stream_3whs_synack_with_wrong_ack,
            E::ThreeWhsSynResendDiffSeqOnSynRecv => &mut self.stream_3whs_syn_resend_diff_seq_on_syn_recv,
            E::ThreeWhsSynToclientOnSynRecv => &mut self.stream_3whs_syn_toclient_on_syn_recv,
            E::ThreeWhsWrongSeqWrongAck => &mut self.stream_3whs_wrong_seq_wrong_ack,
            E::EstSynackResend => &mut self.stream_est_synack_resend,
            E::EstSynackToserver => &mut self.stream_est_synack_toserver,
            E::EstSynResend => &mut self.stream_est_syn_resend,
            E::EstSynResendDiffSeq => &mut self.stream_est_syn_resend_diff_seq,
            E::EstSynToclient => &mut self.stream_est_syn_toclient,
            E::FinButNoSession => &mut self.stream_fin_but_no_session,
            E::RstButNoSession => &mut self.stream_rst_but_no_session,
            E::ShutdownSynResend => &mut self.stream_shutdown_syn_resend,
            E::PktBrokenAck => &mut self.stream_pkt_broken_ack,
            E::FinSyn => &mut self.stream_fin_syn,
        };
        *counter += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_values_follow_fields() {
        let c = FlowCounters { tcp_syn: 7, active: 3, ..FlowCounters::default() };
        let names: Vec<_> = c.iter().map(|(n, _)| n).collect();
        let mut dedup = names.clone();
        dedup.sort_unstable();
        dedup.dedup();
        assert_eq!(names.len(), dedup.len());
        assert!(c.iter().any(|(n, v)| n == "tcp.syn" && v == 7));
        assert!(c.iter().any(|(n, v)| n == "flow.active" && v == 3));
        let mut sum = FlowCounters::default();
        sum.add(&c);
        sum.add(&c);
        assert_eq!((sum.tcp_syn, sum.active), (14, 6));
    }

    #[test]
    fn every_stream_event_has_its_counter() {
        for event in StreamEvent::ALL {
            let mut c = FlowCounters::default();
            c.add_stream_event(event);
            let name = format!("stream.{}", event.name());
            let hits: Vec<_> = c.iter().filter(|&(_, v)| v != 0).collect();
            assert_eq!(hits, vec![(name.as_str(), 1)], "{event:?}");
        }
    }
}
