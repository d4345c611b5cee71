//! Detection: the rule language (`rule`), the multi-pattern prefilter (`mpm`) and the
//! engine that compiles rules and runs them against packets and streams (`engine`).

pub mod engine;
pub mod mpm;
pub mod rule;
