//! Named counters. Workers keep plain integer fields on the hot path; at report time each
//! stage lists its counters under Suricata-style dotted names ("decoder.pkts",
//! "flow.memcap") into a [`CounterSet`], which can be summed across workers.

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CounterSet {
    entries: Vec<(String, u64)>,
}

impl CounterSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `value` to `name`, creating it (in first-seen order) if new.
    pub fn add(&mut self, name: &str, value: u64) {
        match self.entries.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => *v += value,
            None => self.entries.push((name.to_string(), value)),
        }
    }

    pub fn get(&self, name: &str) -> Option<u64> {
        self.entries.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), *v))
    }

    pub fn sum<'a>(sets: impl IntoIterator<Item = &'a CounterSet>) -> CounterSet {
        let mut total = CounterSet::new();
        for set in sets {
            for (name, value) in set.iter() {
                total.add(name, value);
            }
        }
        total
    }
}

/// Adds a component's process-wide counters to the set it is given (the XDP layer's, the
/// DDoS controller's, the Redis output's, the rule reloader's): the live run reads every
/// source once a second for eve `stats`, stats.log, picket-stats.json and Prometheus.
pub type CounterSource = Box<dyn Fn(&mut CounterSet) + Send + Sync>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_by_name() {
        let mut a = CounterSet::new();
        a.add("decoder.pkts", 3);
        a.add("decoder.event.ipv4.trunc_pkt", 1);
        let mut b = CounterSet::new();
        b.add("decoder.pkts", 4);
        b.add("flow.memcap", 2);
        let t = CounterSet::sum([&a, &b]);
        assert_eq!(t.get("decoder.pkts"), Some(7));
        assert_eq!(t.get("flow.memcap"), Some(2));
    }
}
