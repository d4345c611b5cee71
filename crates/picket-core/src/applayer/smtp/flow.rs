//! SMTP in a flow's app layer: the parser's events queue transactions for inspection and
//! report anomalies; a mail is done when both its sides completed (or the flow ends).

use super::record::SmtpView;
use super::{SmtpConfig, SmtpEvent, SmtpState};
use crate::applayer::http::file::FileConfig;
use crate::applayer::{AppCtx, AppParser, AppTx, Pending};
use crate::stream::Direction;

/// The parser of one SMTP flow.
pub(crate) struct SmtpFlow {
    state: SmtpState,
    /// Events of the last call (reused).
    events: Vec<SmtpEvent>,
}

/// The parser of a flow just detected as SMTP.
pub(crate) fn new_flow(cfg: SmtpConfig, files: FileConfig, cx: &mut AppCtx<'_>) -> Box<dyn AppParser> {
    cx.counters.smtp.flows += 1;
    Box::new(SmtpFlow { state: SmtpState::new(cfg, files), events: Vec::new() })
}

impl SmtpFlow {
    /// Passes the parser's events on and reports the mails that completed.
    fn report(&mut self, cx: &mut AppCtx<'_>) {
        for ev in self.events.drain(..) {
            match ev {
                SmtpEvent::NewTx(_) => cx.counters.smtp.tx += 1,
                SmtpEvent::Progressed(dir, tx) => cx.progressed(dir, tx),
                SmtpEvent::Anomaly(dir, tx, name) => cx.anomaly(dir, tx, name),
            }
        }
        for tx in self.state.txs_mut() {
            if !tx.reported && tx.is_complete() {
                tx.reported = true;
                cx.done(tx.id);
            }
        }
    }
}

impl AppParser for SmtpFlow {
    fn on_data(&mut self, dir: Direction, data: &[u8], cx: &mut AppCtx<'_>) {
        self.state.parse(dir, data, &mut cx.counters.smtp.parser, &mut self.events);
        self.report(cx);
    }

    fn on_gap(&mut self, dir: Direction, len: u64, cx: &mut AppCtx<'_>) {
        self.state.on_gap(dir, len);
        self.report(cx);
    }

    /// Mails not complete yet are done at flow end (open attachments truncated).
    fn on_close(&mut self, cx: &mut AppCtx<'_>) {
        self.state.on_close();
        self.report(cx);
        for tx in self.state.txs_mut() {
            if !tx.reported {
                tx.reported = true;
                cx.done(tx.id);
            }
        }
    }

    fn tx(&self, id: u64) -> Option<AppTx<'_>> {
        let tx = self.state.tx(id)?;
        Some(AppTx::Smtp(SmtpView { helo: self.state.helo.as_deref(), tx }))
    }

    fn tx_count(&self) -> u64 {
        self.state.tx_count()
    }

    fn heap_bytes(&self) -> u64 {
        (std::mem::size_of::<Self>() + self.state.heap_bytes()) as u64
    }

    /// Mails reported done go once nothing waits for inspection.
    fn prune(&mut self, pending: &Pending) -> Option<u64> {
        if !pending.is_empty() {
            return None;
        }
        self.state.prune(u64::MAX);
        Some(self.state.txs().next().map_or(u64::MAX, |t| t.id))
    }
}
