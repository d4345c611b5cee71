//! picket-core: the sans-IO inspection core of picket.
//!
//! A worker owns one [`inspect::Inspector`] and feeds it packets and clock ticks; the
//! inspector decodes, tracks flows, reassembles TCP streams, parses application protocols,
//! runs the rules, and hands what it found to an [`inspect::EventSink`] as typed events,
//! returning a [`inspect::Verdict`] per packet. Nothing here touches sockets, files, threads
//! or configuration files: the `picket` crate does capture, threads, YAML and output.
//!
//! ```text
//! packet ─▶ decode ─▶ defrag ─▶ flow ─▶ stream ─▶ applayer ─▶ detect ─▶ inspect: events + verdict
//! ```

pub mod applayer;
pub mod bytes;
pub mod counters;
pub mod decode;
pub mod defrag;
pub mod detect;
pub mod flow;
pub mod inspect;
pub mod packet;
pub mod record;
pub mod settings;
pub mod stream;
