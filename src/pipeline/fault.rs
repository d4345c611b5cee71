//! Fault injection for tests, and turning a worker's panic into a report.
//!
//! `PICKET_FAULT=worker-panic@N` (read once, at the first packet) makes the worker that
//! inspects packet number N panic, so that the tests can check what a run does when a
//! worker dies: a clear error naming the worker, a non-zero exit status, the stats
//! gathered so far written, and no hang. Offline, N is the packet's `pcap_cnt`; live, it
//! is a worker's own arrival number (every worker panics at its N-th packet). This is a
//! test hook, not a user setting: anything else in the variable is ignored.

use std::any::Any;
use std::sync::OnceLock;

/// The environment variable of the test hook.
pub const FAULT_ENV: &str = "PICKET_FAULT";

fn panic_at() -> Option<u64> {
    static AT: OnceLock<Option<u64>> = OnceLock::new();
    *AT.get_or_init(|| parse(&std::env::var(FAULT_ENV).ok()?))
}

fn parse(spec: &str) -> Option<u64> {
    spec.strip_prefix("worker-panic@")?.trim().parse().ok()
}

/// Panics when the test hook asks for a panic at packet `pcap_cnt`.
#[inline]
pub fn check(pcap_cnt: u64) {
    if panic_at() == Some(pcap_cnt) {
        panic!("injected fault: worker panic at packet {pcap_cnt} ({FAULT_ENV})");
    }
}

/// The message a panic carried (`panic!` with a literal or a formatted string).
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic without a message".to_string()
    }
}

/// A worker that died: which one, and what its panic said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerFailure {
    pub worker: String,
    pub message: String,
}

impl std::fmt::Display for WorkerFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "worker {} panicked: {}", self.worker, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_spec_parses_only_its_form() {
        assert_eq!(parse("worker-panic@17"), Some(17));
        assert_eq!(parse("worker-panic@"), None);
        assert_eq!(parse("worker-hang@3"), None);
    }

    #[test]
    fn panic_messages_of_both_payload_kinds() {
        let literal = std::panic::catch_unwind(|| panic!("plain")).unwrap_err();
        assert_eq!(panic_message(&*literal), "plain");
        let formatted = std::panic::catch_unwind(|| panic!("at {}", 3)).unwrap_err();
        assert_eq!(panic_message(&*formatted), "at 3");
    }
}
