//! TLS in a flow's app layer: the session is one transaction, due for inspection in a
//! direction whenever that direction's handshake moved on (a hello or certificates parsed),
//! and done ([`TlsState::log_complete`]) when Suricata's would be: its record is then due.

use super::buffers::{TlsProgress, TLS_TX_ID};
use super::{TlsConfig, TlsState};
use crate::applayer::{AppCtx, AppParser, AppTx};
use crate::stream::Direction;

/// The parser of a flow just detected as TLS: its session is its one transaction.
pub(crate) fn new_flow(cx: &mut AppCtx<'_>) -> Box<dyn AppParser> {
    cx.counters.flows_tls += 1;
    cx.counters.tls_tx += 1;
    Box::new(TlsState::new(TlsConfig::default()))
}

impl AppParser for TlsState {
    fn on_data(&mut self, dir: Direction, data: &[u8], cx: &mut AppCtx<'_>) {
        if data.is_empty() {
            return;
        }
        let before = TlsProgress::of(self, dir);
        let was_done = self.log_complete();
        let records = |c: &super::TlsCounters| c.records + c.encrypted_records + c.sslv2_records + c.invalid_records;
        let records_before = records(&cx.counters.tls);
        self.parse(dir, data, &mut cx.counters.tls);
        if records(&cx.counters.tls) != records_before {
            cx.trigger_raw(dir);
        }
        if TlsProgress::of(self, dir) != before {
            cx.progressed(dir, TLS_TX_ID);
        }
        if !was_done && self.log_complete() {
            cx.done(TLS_TX_ID);
        }
    }

    /// A session whose handshake never finished is done when the flow ends.
    fn on_close(&mut self, cx: &mut AppCtx<'_>) {
        if !self.log_complete() && (self.client_hello().is_some() || self.server_hello().is_some()) {
            cx.done(TLS_TX_ID);
        }
    }

    fn skippable(&self, dir: Direction) -> u64 {
        self.skippable_body(dir)
    }

    fn skip(&mut self, dir: Direction, len: u64) {
        self.skip_body(dir, len);
    }

    fn on_gap(&mut self, dir: Direction, _len: u64, cx: &mut AppCtx<'_>) {
        TlsState::on_gap(self, dir, &mut cx.counters.tls);
    }

    fn tx(&self, id: u64) -> Option<AppTx<'_>> {
        (id == TLS_TX_ID).then_some(AppTx::Tls(self))
    }

    fn flow_tx(&self) -> Option<AppTx<'_>> {
        Some(AppTx::Tls(self))
    }

    /// The session is the flow's one transaction.
    fn tx_count(&self) -> u64 {
        1
    }
}
