//! SSH in a flow's app layer: the session is one transaction, due for inspection in a
//! direction when that side's banner or KEXINIT parsed, done when both sides sent NEWKEYS
//! (or the flow ends), as Suricata's SSH transaction.

use super::buffers::SSH_TX_ID;
use super::SshState;
use crate::applayer::{AppCtx, AppParser, AppTx};
use crate::stream::Direction;

/// The parser of one SSH flow.
pub(crate) struct SshFlow {
    state: SshState,
    /// The transaction was reported done.
    done: bool,
}

/// The parser of a flow just detected as SSH.
pub(crate) fn new_flow(cx: &mut AppCtx<'_>) -> Box<dyn AppParser> {
    cx.counters.ssh.flows += 1;
    cx.counters.ssh.tx += 1;
    Box::new(SshFlow { state: SshState::default(), done: false })
}

impl AppParser for SshFlow {
    fn on_data(&mut self, dir: Direction, data: &[u8], cx: &mut AppCtx<'_>) {
        let side = self.state.side(dir);
        let before = (side.banner_done(), side.hassh.len(), side.finished());
        self.state.parse(dir, data, &mut cx.counters.ssh.parser);
        let side = self.state.side(dir);
        if (side.banner_done(), side.hassh.len(), side.finished()) != before {
            cx.progressed(dir, SSH_TX_ID);
        }
        if !self.done && self.state.complete() {
            self.done = true;
            cx.done(SSH_TX_ID);
        }
    }

    fn on_gap(&mut self, dir: Direction, _len: u64, _cx: &mut AppCtx<'_>) {
        self.state.on_gap(dir);
    }

    /// A session that did not reach NEWKEYS on both sides is done when the flow ends.
    fn on_close(&mut self, cx: &mut AppCtx<'_>) {
        if !self.done && self.state.has_record() {
            self.done = true;
            cx.done(SSH_TX_ID);
        }
    }

    fn tx(&self, id: u64) -> Option<AppTx<'_>> {
        (id == SSH_TX_ID).then_some(AppTx::Ssh(&self.state))
    }

    fn heap_bytes(&self) -> u64 {
        (std::mem::size_of::<Self>() + self.state.heap_bytes()) as u64
    }
}
