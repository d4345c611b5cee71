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
//!
//! Inline modes answer a `reject` verdict with the packets [`reject::replies`] builds.
//!
//! The fences are enforced, not promised: this crate forbids `unsafe`, does not depend on
//! `serde_yaml` or `libc`, and `clippy.toml` beside its manifest denies file, socket,
//! thread, process and environment APIs (clippy runs with `-D warnings` in `.ci/run`).
//! Only tests may read fixture files.

#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

pub mod applayer;
pub mod bytes;
pub mod counters;
pub mod decode;
pub mod defrag;
pub mod detect;
pub mod detectors;
pub mod flow;
pub mod inspect;
pub mod packet;
pub mod record;
pub mod reject;
pub mod settings;
pub mod stream;
#[cfg(test)]
mod test_rng;
