//! HTTP in a flow's app layer: the parser's events queue transactions for inspection.

use super::{BodyMemory, HttpConfig, HttpEvent, HttpParser};
use crate::applayer::{AppCtx, AppParser, AppTx, Pending};
use crate::stream::Direction;

/// The parser of a flow just detected as HTTP.
pub(crate) fn new_flow(config: HttpConfig, cx: &mut AppCtx<'_>) -> Box<dyn AppParser> {
    cx.counters.flows_http += 1;
    Box::new(HttpParser::new(config))
}

impl AppParser for HttpParser {
    fn on_data(&mut self, dir: Direction, data: &[u8], cx: &mut AppCtx<'_>) {
        let mut finished = Vec::new();
        HttpParser::on_data(self, dir, data, &mut |ev| note_event(cx, ev, &mut finished));
        report_done(self, &finished, cx);
    }

    fn on_gap(&mut self, dir: Direction, len: u64, cx: &mut AppCtx<'_>) {
        let mut finished = Vec::new();
        HttpParser::on_gap(self, dir, len, &mut |ev| note_event(cx, ev, &mut finished));
        report_done(self, &finished, cx);
    }

    /// Messages that run until close complete now; the transactions still open are done too.
    fn on_close(&mut self, cx: &mut AppCtx<'_>) {
        let mut finished = Vec::new();
        HttpParser::on_close(self, &mut |ev| note_event(cx, ev, &mut finished));
        report_done(self, &finished, cx);
        for tx in self.txs().filter(|t| !t.is_complete()) {
            cx.done(tx.id);
        }
    }

    fn h2c_upgrade(&mut self) -> Option<super::upgrade::H2cUpgrade> {
        self.take_h2c_upgrade()
    }

    fn tx(&self, id: u64) -> Option<AppTx<'_>> {
        HttpParser::tx(self, id).map(AppTx::Http)
    }

    fn tx_count(&self) -> u64 {
        HttpParser::tx_count(self)
    }

    fn heap_bytes(&self) -> u64 {
        self.heap_bytes_without_bodies()
    }

    fn capped_memory(&self) -> Option<BodyMemory> {
        Some(*self.body_memory())
    }

    fn set_capped_room(&mut self, room: u64) {
        self.set_body_room(room);
    }

    /// Completed transactions go once nothing waits for inspection.
    fn prune(&mut self, pending: &Pending) -> Option<u64> {
        if !pending.is_empty() {
            return None;
        }
        self.prune_completed();
        Some(self.txs().next().map_or(u64::MAX, |t| t.id))
    }
}

/// Transactions whose request or response completed are done once both are.
fn report_done(parser: &HttpParser, finished: &[u64], cx: &mut AppCtx<'_>) {
    for &id in finished {
        if parser.tx(id).is_some_and(|t| t.is_complete()) {
            cx.done(id);
        }
    }
}

fn note_event(cx: &mut AppCtx<'_>, ev: HttpEvent, finished: &mut Vec<u64>) {
    if let HttpEvent::RequestComplete { tx } | HttpEvent::ResponseComplete { tx } = ev {
        finished.push(tx);
    }
    match ev {
        HttpEvent::RequestComplete { .. } => cx.trigger_raw(Direction::ToServer),
        HttpEvent::ResponseComplete { .. } => cx.trigger_raw(Direction::ToClient),
        _ => {}
    }
    let (dir, tx) = match ev {
        HttpEvent::RequestLine { tx } => {
            cx.counters.http_tx += 1;
            (Direction::ToServer, tx)
        }
        HttpEvent::RequestHeaders { tx } | HttpEvent::RequestComplete { tx } => (Direction::ToServer, tx),
        HttpEvent::ResponseLine { tx } | HttpEvent::ResponseHeaders { tx } | HttpEvent::ResponseComplete { tx } => {
            (Direction::ToClient, tx)
        }
        // Body data does not queue the transaction: re-inspecting a growing body on every
        // packet is quadratic. Bodies are inspected whole when the message completes (or
        // the flow ends); Suricata inspects them in windows as they arrive.
        HttpEvent::RequestBodyData { .. } | HttpEvent::ResponseBodyData { .. } => return,
        HttpEvent::Anomaly { tx, anomaly } => {
            cx.counters.http_anomalies += 1;
            if let (Some(tx), Some((dir, event))) = (tx, anomaly.suricata_event()) {
                cx.anomaly(dir, tx, event);
            }
            return;
        }
    };
    cx.progressed(dir, tx);
}
