//! The inspector's events into log lines: [`LogSink`] is the [`EventSink`] a worker hands
//! its inspector. It formats every event on the worker thread (eve.json records through
//! `output::eve`, alerts also as fast.log lines) into the worker's [`EventBuf`], which the
//! merger writes in capture order.

use super::eve::{self, AlertLogOptions};
use super::fast;
use super::merge::{EventBuf, Sink};
use picket_core::inspect::{Event, EventSink};
use std::sync::Arc;

/// A worker's log writer: formats each event into the worker's buffer as it arrives.
#[derive(Default)]
pub struct LogSink {
    pub events: EventBuf,
    opts: Arc<AlertLogOptions>,
    /// Alerts formatted since the sink was made (progress reports).
    pub alerts: u64,
}

impl LogSink {
    pub fn new(opts: Arc<AlertLogOptions>) -> Self {
        LogSink { events: EventBuf::default(), opts, alerts: 0 }
    }

    /// The lines formatted so far, in (key, sub) order; the sink starts a new buffer.
    pub fn take(&mut self) -> EventBuf {
        self.events.settle();
        std::mem::take(&mut self.events)
    }
}

impl EventSink for LogSink {
    fn event(&mut self, key: u64, event: &Event<'_>) {
        self.event_sub(key, 0, event)
    }

    fn event_sub(&mut self, key: u64, sub: u64, event: &Event<'_>) {
        self.alerts += u64::from(matches!(event, Event::Alert(_)));
        let lines = &mut self.events;
        match event {
            Event::Alert(a) => {
                if self.opts.types.alert {
                    lines.push_sub(Sink::Eve, key, sub, |buf| eve::alert::write_alert(buf, a, &self.opts));
                }
                if self.opts.fast_log {
                    lines.push_sub(Sink::FastLog, key, sub, |buf| fast::write_fast_line(buf, a));
                }
            }
            Event::Drop(d) => {
                if self.opts.types.drop && eve::drop::wanted(d, &self.opts.drop) {
                    lines.push_sub(Sink::Eve, key, sub, |buf| eve::drop::write_drop(buf, d, &self.opts.drop));
                }
            }
            Event::Flow(rec) => {
                if self.opts.types.flow {
                    lines.push_sub(Sink::Eve, key, sub, |buf| eve::flow::write_flow(buf, rec, self.opts.community_id))
                }
            }
            Event::Transaction(t) => eve::tx::write_transaction(lines, key, sub, t, &self.opts),
            Event::Anomaly(a) => {
                if self.opts.types.anomaly {
                    lines
                        .push_sub(Sink::Eve, key, sub, |buf| eve::anomaly::write_anomalies(buf, a, &self.opts.anomaly));
                }
            }
            Event::AppAnomaly(a) => {
                if self.opts.types.anomaly && self.opts.anomaly.applayer {
                    lines.push_sub(Sink::Eve, key, sub, |buf| eve::anomaly::write_app_anomaly(buf, a));
                }
            }
        }
    }
}
