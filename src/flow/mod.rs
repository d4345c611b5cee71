//! Per-worker flow tracking. See the module docs of `table` and `tcp`.
