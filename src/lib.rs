//! picket: a multi-core IPS. The pipeline, in the order a packet travels:
//!
//! ```text
//! capture (source) ─▶ dispatch (policy picks a worker) ─▶ SPSC ring ─▶ pipeline::worker
//!                                                                      └─ inspect: decode ─▶ flow ─▶ (detect) ─▶ events
//!                                                        output (eve.json merge, stats.log, load table) ◀─┘
//! ```
//!
//! `decode`, `flow` and `inspect` are sans-IO: they see byte slices and timestamps, never
//! sockets or files. `capture` and `output` are the only modules that touch the outside world.

pub mod applayer;
pub mod bench;
pub mod capture;
pub mod cli;
pub mod config;
pub mod counters;
pub mod decode;
pub mod defrag;
pub mod detect;
pub mod dispatch;
pub mod flow;
pub mod inspect;
pub mod matchers;
pub mod output;
pub mod packet;
pub mod pipeline;
pub mod stream;
pub mod tools;
