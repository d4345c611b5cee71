//! Operator tools around a running picket: `picket top` (per-core, per-interface and
//! per-worker load) and `picket tune IFACE` (spread a NIC's queues, IRQs, RPS/RFS/XPS over
//! cores). They read and write /proc and /sys through injectable roots so tests run on
//! fixture trees.

pub mod cpuset;
pub mod procfs;
pub mod snapshot;
pub mod top;
pub mod tune;

pub use top::{run_top, TopArgs};
pub use tune::{run_tune, TuneArgs};
