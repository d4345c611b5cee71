//! picket: a multi-core IPS. The pipeline, in the order a packet travels:
//!
//! ```text
//! capture (source) ─▶ dispatch (policy picks a worker) ─▶ SPSC ring ─▶ pipeline::worker
//!                                                                      └─ picket_core::inspect ─▶ events ─▶ output::eve
//!                                                        output (eve.json merge, stats.log, load table) ◀─┘
//! ```
//!
//! Everything that inspects packets lives in the `picket-core` crate, which touches no
//! sockets, files, threads or YAML. This crate is the edge around it: capture sources,
//! dispatch and worker threads, configuration, output files, the command line and tools.
//! The core's modules are re-exported here under their own names.

pub use picket_core::{
    applayer, bytes, counters, decode, defrag, detect, detectors, flow, inspect, packet, reject, settings, stream,
};

pub mod capture;
pub mod cli;
pub mod config;
pub mod ddos;
pub mod dispatch;
pub mod heap;
pub mod matchers;
pub mod ordered;
pub mod output;
pub mod pipeline;
pub mod rules;
pub mod service;
pub mod tools;
pub mod xdp;
