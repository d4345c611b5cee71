//! Detection: rule language and (later) the engine that compiles and runs rules.

pub mod rule;
