//! HTTP/2 in a flow's app layer: the parser's events queue transactions for inspection
//! and report them done; its anomalies become Suricata's `http2` app-layer events.

use super::{Http2Counters, Http2Event, Http2Parser};
use crate::applayer::http::upgrade::H2cUpgrade;
use crate::applayer::http::HttpConfig;
use crate::applayer::{AppCtx, AppParser, AppProto, AppTx, Pending};
use crate::stream::Direction;

/// Worker-wide HTTP/2 counters (Suricata's `app_layer.flow.http2`, `app_layer.tx.http2`)
/// plus the parser's own limits.
#[derive(Default, Clone, Copy)]
pub(crate) struct Http2AppCounters {
    pub flows: u64,
    pub tx: u64,
    pub parser: Http2Counters,
}

impl Http2AppCounters {
    fn add(&mut self, c: Http2Counters) {
        let p = &mut self.parser;
        p.frames_too_long += c.frames_too_long;
        p.header_blocks_too_long += c.header_blocks_too_long;
        p.fields_dropped += c.fields_dropped;
        p.table_size_capped += c.table_size_capped;
        p.streams_refused += c.streams_refused;
        p.body_bytes_cut += c.body_bytes_cut;
    }
}

/// The parser of a flow just detected as HTTP/2 (prior knowledge).
pub(crate) fn new_flow(config: HttpConfig, cx: &mut AppCtx<'_>) -> Box<dyn AppParser> {
    cx.counters.http2.flows += 1;
    Box::new(Http2Parser::new(config))
}

/// The parser of a flow upgraded from HTTP/1.1 (`Upgrade: h2c`): the upgrade's
/// SETTINGS and request become HTTP/2 transactions, then the bytes already seen after the
/// HTTP/1 messages are parsed as HTTP/2.
pub(crate) fn upgraded_flow(up: H2cUpgrade, config: HttpConfig, cx: &mut AppCtx<'_>) -> Box<dyn AppParser> {
    cx.counters.http2.flows += 1;
    let mut p = Http2Parser::new(config);
    p.continue_from(up.next_tx_id, up.txs);
    p.upgraded(&up.request, up.settings.as_deref(), &mut |ev| note(cx, ev));
    for dir in [Direction::ToServer, Direction::ToClient] {
        if !up.rest[dir.index()].is_empty() {
            AppParser::on_data(&mut p, dir, &up.rest[dir.index()], cx);
        }
    }
    p.drain_counters(cx);
    Box::new(p)
}

/// Hands what the parser reported to the app layer.
fn note(cx: &mut AppCtx<'_>, ev: Http2Event) {
    match ev {
        Http2Event::NewTx { .. } => cx.counters.http2.tx += 1,
        Http2Event::Progress { dir, tx } => cx.progressed(dir, tx),
        Http2Event::Complete { tx } => cx.done(tx),
        Http2Event::Anomaly { dir, tx, event } => {
            if let Some(tx) = tx {
                cx.anomaly(dir, tx, event);
            }
        }
    }
}

impl Http2Parser {
    fn drain_counters(&mut self, cx: &mut AppCtx<'_>) {
        cx.counters.http2.add(std::mem::take(&mut self.counters));
    }
}

impl AppParser for Http2Parser {
    fn on_data(&mut self, dir: Direction, data: &[u8], cx: &mut AppCtx<'_>) {
        Http2Parser::on_data(self, dir, data, &mut |ev| note(cx, ev));
        self.drain_counters(cx);
    }

    fn on_gap(&mut self, dir: Direction, len: u64, _cx: &mut AppCtx<'_>) {
        Http2Parser::on_gap(self, dir, len);
    }

    fn on_close(&mut self, cx: &mut AppCtx<'_>) {
        Http2Parser::on_close(self, &mut |ev| note(cx, ev));
    }

    fn tx(&self, id: u64) -> Option<AppTx<'_>> {
        if let Some(t) = self.http1_tx(id) {
            return Some(AppTx::Http(t));
        }
        Http2Parser::tx(self, id).map(AppTx::Http2)
    }

    /// A stream carried DNS: the flow is DNS over HTTP/2 from now on.
    fn proto_change(&self) -> Option<AppProto> {
        self.doh.then_some(AppProto::Doh2)
    }

    fn tx_count(&self) -> u64 {
        Http2Parser::tx_count(self)
    }

    fn heap_bytes(&self) -> u64 {
        std::mem::size_of::<Self>() as u64 + Http2Parser::heap_bytes(self)
    }

    /// Complete transactions go once nothing waits for inspection.
    fn prune(&mut self, pending: &Pending) -> Option<u64> {
        if !pending.is_empty() {
            return None;
        }
        self.prune_completed();
        let first = self.txs().next().map_or(u64::MAX, |t| t.id);
        Some(self.http1_first_id().map_or(first, |h| h.min(first)))
    }
}
