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

    /// The counters as a nested JSON object ("decoder.event.ipv4.trunc_pkt" becomes
    /// decoder → event → ipv4 → trunc_pkt), as Suricata's eve `stats` event nests them.
    pub fn to_nested_json(&self) -> serde_json::Value {
        let mut root = serde_json::Map::new();
        for (name, value) in self.iter() {
            let mut node = &mut root;
            let mut parts = name.split('.').peekable();
            while let Some(part) = parts.next() {
                if parts.peek().is_none() {
                    node.insert(part.to_string(), value.into());
                } else {
                    let child = node
                        .entry(part.to_string())
                        .or_insert_with(|| serde_json::Value::Object(Default::default()));
                    if !child.is_object() {
                        // A counter and a group share a name; keep the group.
                        *child = serde_json::Value::Object(Default::default());
                    }
                    node = child.as_object_mut().expect("object just ensured");
                }
            }
        }
        serde_json::Value::Object(root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_by_name_and_nests() {
        let mut a = CounterSet::new();
        a.add("decoder.pkts", 3);
        a.add("decoder.event.ipv4.trunc_pkt", 1);
        let mut b = CounterSet::new();
        b.add("decoder.pkts", 4);
        b.add("flow.memcap", 2);
        let t = CounterSet::sum([&a, &b]);
        assert_eq!(t.get("decoder.pkts"), Some(7));
        assert_eq!(t.get("flow.memcap"), Some(2));
        let j = t.to_nested_json();
        assert_eq!(j["decoder"]["event"]["ipv4"]["trunc_pkt"], 1);
        assert_eq!(j["decoder"]["pkts"], 7);
    }
}
