//! Everything picket writes: eve.json (merged in capture order from all workers),
//! stats.log, and the per-worker load table printed at exit.

pub mod eve;
pub mod fast;
pub mod json;
pub mod merge;
pub mod metrics;
pub mod redis;
pub mod sink;
pub mod stats;
pub mod target;
