//! DNS in a flow's app layer: [`DnsState`] fed from UDP datagrams or the TCP stream.
//!
//! Transactions follow Suricata 8: every message (request or response) is its own
//! transaction, complete when parsed. A request is inspected on a to-server packet, a
//! response on a to-client packet: over UDP the datagram's own packet, over TCP the packet
//! on which the stream releases the message (in IDS mode after the peer acked it).

use super::DnsState;
use crate::applayer::probe::Transport;
use crate::applayer::{AppCtx, AppParser, AppTx, Pending};
use crate::stream::Direction;

/// The DNS parser of one flow.
pub(crate) struct DnsFlow {
    state: DnsState,
}

/// The parser of a flow just detected as DNS over `transport`.
pub(crate) fn new_flow(transport: Transport, cx: &mut AppCtx<'_>) -> Box<dyn AppParser> {
    let dns = &mut cx.counters.dns;
    match transport {
        Transport::Tcp => dns.flows_tcp += 1,
        Transport::Udp => dns.flows_udp += 1,
    }
    Box::new(DnsFlow { state: DnsState::default() })
}

impl DnsFlow {
    /// Reports the protocol anomalies of message `id` that Suricata raises as app-layer
    /// events: an opcode of 7 or more (unassigned) is `invalid_opcode`, the reserved Z bit
    /// set is `z_flag_set`.
    fn note_anomalies(&self, dir: Direction, id: u64, cx: &mut AppCtx<'_>) {
        let Some(tx) = self.state.tx(id) else { return };
        if tx.z_flag() {
            cx.anomaly(dir, id, "z_flag_set");
        }
        if tx.opcode() >= 7 {
            cx.anomaly(dir, id, "invalid_opcode");
        }
    }
}

impl AppParser for DnsFlow {
    /// Stream bytes: each message they complete is a transaction.
    fn on_data(&mut self, dir: Direction, data: &[u8], cx: &mut AppCtx<'_>) {
        let first_new = self.state.next_tx_id();
        self.state.parse_tcp(dir, data, &mut cx.counters.dns.parser);
        // Transaction ids are handed out consecutively, and only to parsed messages.
        let next = self.state.next_tx_id();
        cx.counters.dns.tx_tcp += next - first_new;
        if next > first_new {
            cx.trigger_raw(dir);
        }
        for id in first_new..next {
            cx.progressed(dir, id);
            self.note_anomalies(dir, id, cx);
            cx.done(id);
        }
    }

    fn on_gap(&mut self, dir: Direction, _len: u64, _cx: &mut AppCtx<'_>) {
        self.state.on_gap(dir);
    }

    /// One message; its transaction, if it parsed, is inspected on this datagram's packet.
    fn on_datagram(&mut self, dir: Direction, datagram: &[u8], cx: &mut AppCtx<'_>) {
        if let Some(id) = self.state.parse_udp(dir, datagram, &mut cx.counters.dns.parser) {
            cx.counters.dns.tx_udp += 1;
            cx.progressed(dir, id);
            self.note_anomalies(dir, id, cx);
            cx.done(id);
        }
    }

    fn tx(&self, id: u64) -> Option<AppTx<'_>> {
        self.state.tx(id).map(AppTx::Dns)
    }

    fn tx_count(&self) -> u64 {
        self.state.next_tx_id()
    }

    /// Transactions are complete when parsed: all go but those still waiting.
    fn prune(&mut self, pending: &Pending) -> Option<u64> {
        let keep_from = pending.min().unwrap_or_else(|| self.state.next_tx_id());
        self.state.free_below(keep_from);
        Some(keep_from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::applayer::dns::buffers::tests::{request, response};
    use crate::applayer::AppCounters;

    #[test]
    fn tcp_stream_yields_each_framed_message() {
        let (mut pending, mut c) = (Pending::default(), AppCounters::default());
        let mut flow = new_flow(Transport::Tcp, &mut AppCtx::new(&mut pending, &mut c));
        let mut framed = Vec::new();
        for name in ["one.example", "two.example"] {
            let m = request(1, 0, &[name]);
            framed.extend((m.len() as u16).to_be_bytes());
            framed.extend(m);
        }
        let (head, tail) = framed.split_at(20);
        flow.on_data(Direction::ToServer, head, &mut AppCtx::new(&mut pending, &mut c));
        assert!(pending.is_empty(), "first message incomplete");
        flow.on_data(Direction::ToServer, tail, &mut AppCtx::new(&mut pending, &mut c));
        assert_eq!(pending.take(Direction::ToServer), Some(0));
        assert_eq!(pending.take(Direction::ToServer), Some(1));
        assert_eq!(pending.take(Direction::ToServer), None);
        assert_eq!((c.dns.flows_tcp, c.dns.tx_tcp), (1, 2));
        // Transaction 1 still waits for inspection: it stays, 0 goes.
        AppCtx::new(&mut pending, &mut c).progressed(Direction::ToServer, 1);
        assert_eq!(flow.prune(&pending), Some(1));
        assert!(flow.tx(0).is_none() && flow.tx(1).is_some());
    }

    #[test]
    fn each_datagram_is_a_transaction_inspected_in_its_direction() {
        let (mut pending, mut c) = (Pending::default(), AppCounters::default());
        let mut flow = new_flow(Transport::Udp, &mut AppCtx::new(&mut pending, &mut c));
        flow.on_datagram(Direction::ToServer, &request(7, 0, &["a.example"]), &mut AppCtx::new(&mut pending, &mut c));
        flow.on_datagram(
            Direction::ToClient,
            &response(7, "a.example", "b.example", "ns.example"),
            &mut AppCtx::new(&mut pending, &mut c),
        );
        flow.on_datagram(Direction::ToClient, b"junk", &mut AppCtx::new(&mut pending, &mut c));
        assert_eq!((c.dns.flows_udp, c.dns.tx_udp), (1, 2));
        assert_eq!(pending.take(Direction::ToServer), Some(0));
        assert_eq!(pending.take(Direction::ToClient), Some(1));
        assert!(pending.is_empty());
        assert!(matches!(flow.tx(1), Some(AppTx::Dns(tx)) if !tx.is_request()));
        assert_eq!(flow.prune(&pending), Some(2), "nothing waits: every transaction goes");
        assert!(flow.tx(1).is_none());
    }

    /// An unassigned opcode (7..=15) is Suricata's `invalid_opcode` app-layer event, in
    /// the message's direction; a standard query raises nothing.
    #[test]
    fn invalid_opcode_is_an_app_layer_anomaly() {
        use crate::applayer::AppAnomaly;
        let (mut pending, mut c) = (Pending::default(), AppCounters::default());
        let mut flow = new_flow(Transport::Udp, &mut AppCtx::new(&mut pending, &mut c));
        flow.on_datagram(Direction::ToServer, &request(1, 0, &["a.example"]), &mut AppCtx::new(&mut pending, &mut c));
        assert_eq!(pending.take_anomaly(), None);
        flow.on_datagram(Direction::ToServer, &request(2, 9, &["a.example"]), &mut AppCtx::new(&mut pending, &mut c));
        assert_eq!(
            pending.take_anomaly(),
            Some(AppAnomaly { dir: Direction::ToServer, tx: 1, event: "invalid_opcode" })
        );
        assert_eq!(pending.take_anomaly(), None);
    }
}
