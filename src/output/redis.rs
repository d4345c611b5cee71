//! eve-log `filetype: redis`: events pushed to a Redis server (see the README).

use std::io::Write;

/// Opens the Redis output of an eve-log whose YAML mapping is `eve_log` (its `redis:` keys).
/// Returns the writer the eve writer thread writes whole lines to, and the source of its
/// counters.
pub fn open(
    eve_log: &serde_yaml::Value,
) -> Result<(Box<dyn Write + Send>, crate::pipeline::live::CounterSource), String> {
    let _ = eve_log;
    Err("eve-log filetype redis is not built yet".into())
}
