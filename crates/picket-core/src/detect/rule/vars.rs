//! Address and port groups: the `vars:` section of the YAML and the address/port fields of a
//! rule header. Both compile to sorted, disjoint inclusive ranges so that matching a packet is a
//! binary search, however long the original list was.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

/// Nesting limit for `[...]` groups and variable references: hostile input must not blow the stack.
const MAX_GROUP_DEPTH: usize = 32;

/// Address groups or port groups (for messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    Address,
    Port,
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Group::Address => "address",
            Group::Port => "port",
        })
    }
}

/// Why an address or port specification (or a variable holding one) does not compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupError {
    /// The specification is valid but excludes everything (`!any`, `[1.2.3.4,!1.2.3.4]`).
    MatchesNothing {
        group: Group,
        spec: String,
    },
    /// Text left over after a complete specification.
    Trailing {
        group: Group,
        rest: String,
        text: String,
    },
    /// `[...]` groups or variable references nested deeper than [`MAX_GROUP_DEPTH`].
    TooDeep {
        group: Group,
    },
    /// An empty item (`[]`, `[1,,2]`, `!`).
    EmptyItem {
        group: Group,
        text: String,
    },
    /// A `[` without its `]`.
    Unterminated {
        group: Group,
        text: String,
    },
    /// A variable that refers back to itself; `chain` lists the names, first repeated last.
    Cycle {
        group: Group,
        chain: Vec<String>,
    },
    UnknownVariable {
        group: Group,
        name: String,
    },
    /// A variable whose value is not one item (`HOME_NET: "1.2.3.4 5.6.7.8"`).
    BadVariable {
        name: String,
        value: String,
    },
    BadAddress {
        atom: String,
    },
    BadPort {
        atom: String,
    },
    /// `1024:80`.
    ReversedPortRange {
        atom: String,
    },
}

impl fmt::Display for GroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupError::MatchesNothing { group, spec } => write!(f, "{group} '{spec}' matches no {group}"),
            GroupError::Trailing { group, rest, text } => write!(f, "unexpected '{rest}' in {group} '{text}'"),
            GroupError::TooDeep { group } => write!(f, "{group} group nested too deeply"),
            GroupError::EmptyItem { group, text } => write!(f, "empty {group} in '{text}'"),
            GroupError::Unterminated { group, text } => write!(f, "unterminated {group} list '{text}'"),
            GroupError::Cycle { group, chain } => write!(f, "{group} variable cycle: ${}", chain.join(" -> $")),
            GroupError::UnknownVariable { group, name } => write!(f, "unknown {group} variable ${name}"),
            GroupError::BadVariable { name, value } => write!(f, "bad value '{value}' for ${name}"),
            GroupError::BadAddress { atom } => write!(f, "invalid address '{atom}'"),
            GroupError::BadPort { atom } => write!(f, "invalid port '{atom}'"),
            GroupError::ReversedPortRange { atom } => write!(f, "invalid port range '{atom}': start above end"),
        }
    }
}

impl std::error::Error for GroupError {}

/// An integer type that can bound a range (u16 ports, u32 IPv4, u128 IPv6).
pub trait RangeBound: Copy + Ord + fmt::Debug {
    const MIN: Self;
    const MAX: Self;
    fn next(self) -> Option<Self>;
    fn prev(self) -> Option<Self>;
}

macro_rules! range_bound {
    ($t:ty) => {
        impl RangeBound for $t {
            const MIN: Self = <$t>::MIN;
            const MAX: Self = <$t>::MAX;
            fn next(self) -> Option<Self> {
                self.checked_add(1)
            }
            fn prev(self) -> Option<Self> {
                self.checked_sub(1)
            }
        }
    };
}
range_bound!(u16);
range_bound!(u32);
range_bound!(u128);

/// Sorted, disjoint, non-adjacent inclusive ranges.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Ranges<T: RangeBound> {
    ranges: Vec<(T, T)>,
}

impl<T: RangeBound> fmt::Debug for Ranges<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.ranges.iter()).finish()
    }
}

impl<T: RangeBound> Ranges<T> {
    pub fn empty() -> Self {
        Ranges { ranges: Vec::new() }
    }

    pub fn full() -> Self {
        Ranges { ranges: vec![(T::MIN, T::MAX)] }
    }

    /// Builds from arbitrary (possibly overlapping, unordered) ranges; `lo > hi` pairs are dropped.
    pub fn from_unsorted(mut ranges: Vec<(T, T)>) -> Self {
        ranges.retain(|(lo, hi)| lo <= hi);
        ranges.sort_unstable();
        let mut merged: Vec<(T, T)> = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            if let Some(last) = merged.last_mut() {
                // Merge overlapping and adjacent ranges (last.1 + 1 >= lo).
                let touches = match last.1.next() {
                    Some(after) => after >= lo,
                    None => true,
                };
                if touches {
                    if hi > last.1 {
                        last.1 = hi;
                    }
                    continue;
                }
            }
            merged.push((lo, hi));
        }
        Ranges { ranges: merged }
    }

    pub fn as_slice(&self) -> &[(T, T)] {
        &self.ranges
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.ranges.len() == 1 && self.ranges[0] == (T::MIN, T::MAX)
    }

    pub fn contains(&self, value: T) -> bool {
        // Index of the first range whose start is > value; the candidate is the one before it.
        let idx = self.ranges.partition_point(|(lo, _)| *lo <= value);
        idx > 0 && self.ranges[idx - 1].1 >= value
    }

    pub fn complement(&self) -> Self {
        let mut out = Vec::with_capacity(self.ranges.len() + 1);
        let mut cursor = Some(T::MIN);
        for &(lo, hi) in &self.ranges {
            if let Some(start) = cursor {
                if start < lo {
                    if let Some(end) = lo.prev() {
                        out.push((start, end));
                    }
                }
            }
            cursor = hi.next();
        }
        if let Some(start) = cursor {
            out.push((start, T::MAX));
        }
        Ranges { ranges: out }
    }

    pub fn union(&self, other: &Self) -> Self {
        let mut all = self.ranges.clone();
        all.extend_from_slice(&other.ranges);
        Self::from_unsorted(all)
    }

    pub fn subtract(&self, other: &Self) -> Self {
        self.intersect(&other.complement())
    }

    pub fn intersect(&self, other: &Self) -> Self {
        let (mut i, mut j) = (0, 0);
        let mut out = Vec::new();
        while i < self.ranges.len() && j < other.ranges.len() {
            let (alo, ahi) = self.ranges[i];
            let (blo, bhi) = other.ranges[j];
            let lo = alo.max(blo);
            let hi = ahi.min(bhi);
            if lo <= hi {
                out.push((lo, hi));
            }
            if ahi < bhi {
                i += 1;
            } else {
                j += 1;
            }
        }
        Ranges { ranges: out }
    }
}

/// A compiled address group: IPv4 and IPv6 ranges with all negations applied.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct AddressSet {
    pub v4: Ranges<u32>,
    pub v6: Ranges<u128>,
}

impl AddressSet {
    pub fn any() -> Self {
        AddressSet { v4: Ranges::full(), v6: Ranges::full() }
    }

    pub fn none() -> Self {
        AddressSet { v4: Ranges::empty(), v6: Ranges::empty() }
    }

    pub fn is_any(&self) -> bool {
        self.v4.is_full() && self.v6.is_full()
    }

    pub fn is_empty(&self) -> bool {
        self.v4.is_empty() && self.v6.is_empty()
    }

    pub fn contains(&self, addr: IpAddr) -> bool {
        match addr {
            IpAddr::V4(a) => self.contains_v4(u32::from(a)),
            IpAddr::V6(a) => self.contains_v6(u128::from(a)),
        }
    }

    #[inline]
    pub fn contains_v4(&self, addr: u32) -> bool {
        self.v4.contains(addr)
    }

    #[inline]
    pub fn contains_v6(&self, addr: u128) -> bool {
        self.v6.contains(addr)
    }

    /// Address in the 16-byte form used by packet metadata (IPv4 in the first 4 bytes); the
    /// caller says which family it is rather than us guessing from zero bytes.
    pub fn contains_bytes(&self, addr: &[u8; 16], is_v4: bool) -> bool {
        if is_v4 {
            self.contains_v4(u32::from_be_bytes([addr[0], addr[1], addr[2], addr[3]]))
        } else {
            self.contains_v6(u128::from_be_bytes(*addr))
        }
    }

    fn complement(&self) -> Self {
        AddressSet { v4: self.v4.complement(), v6: self.v6.complement() }
    }

    fn union(&self, other: &Self) -> Self {
        AddressSet { v4: self.v4.union(&other.v4), v6: self.v6.union(&other.v6) }
    }

    fn subtract(&self, other: &Self) -> Self {
        AddressSet { v4: self.v4.subtract(&other.v4), v6: self.v6.subtract(&other.v6) }
    }
}

/// A compiled port group.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PortSet {
    pub ranges: Ranges<u16>,
}

impl PortSet {
    pub fn any() -> Self {
        PortSet { ranges: Ranges::full() }
    }

    pub fn is_any(&self) -> bool {
        self.ranges.is_full()
    }

    #[inline]
    pub fn contains(&self, port: u16) -> bool {
        self.ranges.contains(port)
    }
}

/// Address and port variables (`$HOME_NET`, `$HTTP_PORTS`...). Values are kept as text and
/// resolved when a rule uses them, so a variable may refer to one defined later.
#[derive(Debug)]
pub struct RuleVars {
    address_groups: HashMap<String, String>,
    port_groups: HashMap<String, String>,
    /// Specifications already resolved, by their text. ET Open's 24,818 rule headers use a
    /// few hundred distinct ones, and resolving their variables again for every rule was a
    /// fifth of a warm start. Emptied whenever a variable is set. (A mutex, not a
    /// `RefCell`: the variables are shared by reference and may be read from several
    /// threads; the lock is never contended while one thread parses.)
    resolved: std::sync::Mutex<ResolvedSpecs>,
}

#[derive(Debug, Default)]
struct ResolvedSpecs {
    addresses: HashMap<String, Result<AddressSet, GroupError>>,
    ports: HashMap<String, Result<PortSet, GroupError>>,
}

impl Clone for RuleVars {
    fn clone(&self) -> Self {
        RuleVars {
            address_groups: self.address_groups.clone(),
            port_groups: self.port_groups.clone(),
            resolved: Default::default(),
        }
    }
}

/// Suricata's stock `vars:` section, used when the configuration does not override them.
/// Suricata's default address variables (used when the YAML defines none).
pub const DEFAULT_ADDRESS_GROUPS: &[(&str, &str)] = &[
    ("HOME_NET", "[192.168.0.0/16,10.0.0.0/8,172.16.0.0/12]"),
    ("EXTERNAL_NET", "!$HOME_NET"),
    ("HTTP_SERVERS", "$HOME_NET"),
    ("SMTP_SERVERS", "$HOME_NET"),
    ("SQL_SERVERS", "$HOME_NET"),
    ("DNS_SERVERS", "$HOME_NET"),
    ("TELNET_SERVERS", "$HOME_NET"),
    ("AIM_SERVERS", "$EXTERNAL_NET"),
    ("DC_SERVERS", "$HOME_NET"),
    ("DNP3_SERVER", "$HOME_NET"),
    ("DNP3_CLIENT", "$HOME_NET"),
    ("MODBUS_CLIENT", "$HOME_NET"),
    ("MODBUS_SERVER", "$HOME_NET"),
    ("ENIP_CLIENT", "$HOME_NET"),
    ("ENIP_SERVER", "$HOME_NET"),
];

/// Suricata's default port variables.
pub const DEFAULT_PORT_GROUPS: &[(&str, &str)] = &[
    ("HTTP_PORTS", "80"),
    ("SHELLCODE_PORTS", "!80"),
    ("ORACLE_PORTS", "1521"),
    ("SSH_PORTS", "22"),
    ("DNP3_PORTS", "20000"),
    ("MODBUS_PORTS", "502"),
    ("FILE_DATA_PORTS", "[$HTTP_PORTS,110,143]"),
    ("FTP_PORTS", "21"),
    ("GENEVE_PORTS", "6081"),
    ("VXLAN_PORTS", "4789"),
    ("TEREDO_PORTS", "3544"),
    ("SIP_PORTS", "[5060, 5061]"),
];

impl Default for RuleVars {
    fn default() -> Self {
        let mut vars = RuleVars::empty();
        for (name, value) in DEFAULT_ADDRESS_GROUPS {
            vars.set_address(name, value);
        }
        for (name, value) in DEFAULT_PORT_GROUPS {
            vars.set_port(name, value);
        }
        vars
    }
}

fn var_key(name: &str) -> String {
    name.trim().trim_start_matches('$').to_string()
}

impl RuleVars {
    /// No variables at all (`RuleVars::default()` has Suricata's defaults).
    pub fn empty() -> Self {
        RuleVars { address_groups: HashMap::new(), port_groups: HashMap::new(), resolved: Default::default() }
    }

    /// Defines or overrides an address group; `name` may carry a leading `$`.
    pub fn set_address(&mut self, name: &str, value: &str) {
        self.address_groups.insert(var_key(name), value.trim().to_string());
        self.forget_resolved();
    }

    pub fn set_port(&mut self, name: &str, value: &str) {
        self.port_groups.insert(var_key(name), value.trim().to_string());
        self.forget_resolved();
    }

    fn forget_resolved(&mut self) {
        *self.resolved.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner()) = ResolvedSpecs::default();
    }

    fn resolved(&self) -> std::sync::MutexGuard<'_, ResolvedSpecs> {
        // A panic elsewhere while the lock was held leaves a map of whole entries.
        self.resolved.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn address(&self, name: &str) -> Option<&str> {
        self.address_groups.get(name.trim_start_matches('$')).map(String::as_str)
    }

    pub fn port(&self, name: &str) -> Option<&str> {
        self.port_groups.get(name.trim_start_matches('$')).map(String::as_str)
    }

    /// Resolves every variable once; returns one message per broken variable (syntax, unknown
    /// reference, cycle), sorted by name. Call after loading the YAML to report problems early.
    pub fn validate(&self) -> Vec<String> {
        let mut errors = Vec::new();
        let mut names: Vec<&String> = self.address_groups.keys().collect();
        names.sort();
        for name in names {
            if let Err(e) = self.resolve_address(&format!("${name}")) {
                errors.push(format!("address-groups {name}: {e}"));
            }
        }
        let mut names: Vec<&String> = self.port_groups.keys().collect();
        names.sort();
        for name in names {
            if let Err(e) = self.resolve_port(&format!("${name}")) {
                errors.push(format!("port-groups {name}: {e}"));
            }
        }
        errors
    }

    /// Compiles an address specification (`any`, `!1.2.3.4`, `[$HOME_NET,!10.0.0.0/8]`...).
    pub fn resolve_address(&self, spec: &str) -> Result<AddressSet, GroupError> {
        self.remembered(|r| &mut r.addresses, spec, || self.resolve_address_uncached(spec))
    }

    /// `spec` resolved before, or resolved now by `resolve` and remembered in `map`.
    fn remembered<T: Clone>(
        &self,
        map: impl Fn(&mut ResolvedSpecs) -> &mut HashMap<String, Result<T, GroupError>>,
        spec: &str,
        resolve: impl FnOnce() -> Result<T, GroupError>,
    ) -> Result<T, GroupError> {
        if let Some(known) = map(&mut self.resolved()).get(spec) {
            return known.clone();
        }
        let resolved = resolve();
        map(&mut self.resolved()).insert(spec.to_string(), resolved.clone());
        resolved
    }

    fn resolve_address_uncached(&self, spec: &str) -> Result<AddressSet, GroupError> {
        let mut stack = Vec::new();
        let set = GroupParser::<AddressKind>::new(spec, self, &mut stack).parse_top()?;
        if set.is_empty() {
            return Err(GroupError::MatchesNothing { group: Group::Address, spec: spec.to_string() });
        }
        Ok(set)
    }

    /// Compiles a port specification (`any`, `80`, `!80`, `[1024:,!8080]`, `$HTTP_PORTS`...).
    pub fn resolve_port(&self, spec: &str) -> Result<PortSet, GroupError> {
        self.remembered(|r| &mut r.ports, spec, || self.resolve_port_uncached(spec))
    }

    fn resolve_port_uncached(&self, spec: &str) -> Result<PortSet, GroupError> {
        let mut stack = Vec::new();
        let ranges = GroupParser::<PortKind>::new(spec, self, &mut stack).parse_top()?;
        if ranges.is_empty() {
            return Err(GroupError::MatchesNothing { group: Group::Port, spec: spec.to_string() });
        }
        Ok(PortSet { ranges })
    }
}

/// What differs between address groups and port groups; the list/negation grammar is shared.
trait GroupKind {
    type Set: Clone;
    const GROUP: Group;
    fn any() -> Self::Set;
    fn none() -> Self::Set;
    fn complement(set: &Self::Set) -> Self::Set;
    fn union(a: &Self::Set, b: &Self::Set) -> Self::Set;
    fn subtract(a: &Self::Set, b: &Self::Set) -> Self::Set;
    fn lookup<'v>(vars: &'v RuleVars, name: &str) -> Option<&'v str>;
    fn parse_atom(text: &str) -> Result<Self::Set, GroupError>;
}

struct AddressKind;
struct PortKind;

impl GroupKind for AddressKind {
    type Set = AddressSet;
    const GROUP: Group = Group::Address;
    fn any() -> AddressSet {
        AddressSet::any()
    }
    fn none() -> AddressSet {
        AddressSet::none()
    }
    fn complement(set: &AddressSet) -> AddressSet {
        set.complement()
    }
    fn union(a: &AddressSet, b: &AddressSet) -> AddressSet {
        a.union(b)
    }
    fn subtract(a: &AddressSet, b: &AddressSet) -> AddressSet {
        a.subtract(b)
    }
    fn lookup<'v>(vars: &'v RuleVars, name: &str) -> Option<&'v str> {
        vars.address_groups.get(name).map(String::as_str)
    }
    fn parse_atom(text: &str) -> Result<AddressSet, GroupError> {
        parse_address_atom(text)
    }
}

impl GroupKind for PortKind {
    type Set = Ranges<u16>;
    const GROUP: Group = Group::Port;
    fn any() -> Ranges<u16> {
        Ranges::full()
    }
    fn none() -> Ranges<u16> {
        Ranges::empty()
    }
    fn complement(set: &Ranges<u16>) -> Ranges<u16> {
        set.complement()
    }
    fn union(a: &Ranges<u16>, b: &Ranges<u16>) -> Ranges<u16> {
        a.union(b)
    }
    fn subtract(a: &Ranges<u16>, b: &Ranges<u16>) -> Ranges<u16> {
        a.subtract(b)
    }
    fn lookup<'v>(vars: &'v RuleVars, name: &str) -> Option<&'v str> {
        vars.port_groups.get(name).map(String::as_str)
    }
    fn parse_atom(text: &str) -> Result<Ranges<u16>, GroupError> {
        parse_port_atom(text)
    }
}

/// Recursive-descent parser for `item := '!'* (group | atom)`, `group := '[' item (',' item)* ']'`.
/// A list is the union of its positive items minus the union of its negated ones; a list with
/// only negated items starts from `any`.
struct GroupParser<'a, 'v, K: GroupKind> {
    text: &'a str,
    pos: usize,
    vars: &'v RuleVars,
    /// Variables being resolved, outermost first: a name seen twice is a cycle.
    stack: &'a mut Vec<String>,
    _kind: std::marker::PhantomData<K>,
}

impl<'a, 'v, K: GroupKind> GroupParser<'a, 'v, K> {
    fn new(text: &'a str, vars: &'v RuleVars, stack: &'a mut Vec<String>) -> Self {
        GroupParser { text, pos: 0, vars, stack, _kind: std::marker::PhantomData }
    }

    fn parse_top(mut self) -> Result<K::Set, GroupError> {
        let (negated, set) = self.parse_item(0)?;
        self.skip_ws();
        if self.pos != self.text.len() {
            return Err(GroupError::Trailing {
                group: K::GROUP,
                rest: self.text[self.pos..].to_string(),
                text: self.text.to_string(),
            });
        }
        Ok(if negated { K::complement(&set) } else { set })
    }

    fn skip_ws(&mut self) {
        while self.pos < self.text.len() && self.text.as_bytes()[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    /// Returns (negated, set) so that a list can subtract negated members instead of
    /// intersecting complements (same result, less work).
    fn parse_item(&mut self, depth: usize) -> Result<(bool, K::Set), GroupError> {
        if depth > MAX_GROUP_DEPTH {
            return Err(GroupError::TooDeep { group: K::GROUP });
        }
        self.skip_ws();
        let mut negated = false;
        while self.peek() == Some(b'!') {
            negated = !negated;
            self.pos += 1;
            self.skip_ws();
        }
        let set = match self.peek() {
            None => return Err(self.empty_item()),
            Some(b'[') => {
                self.pos += 1;
                self.parse_list(depth)?
            }
            Some(_) => {
                let start = self.pos;
                while let Some(c) = self.peek() {
                    if c == b',' || c == b']' || c == b'[' || c.is_ascii_whitespace() {
                        break;
                    }
                    self.pos += 1;
                }
                let atom = &self.text[start..self.pos];
                if atom.is_empty() {
                    return Err(self.empty_item());
                }
                self.parse_atom(atom, depth)?
            }
        };
        Ok((negated, set))
    }

    fn empty_item(&self) -> GroupError {
        GroupError::EmptyItem { group: K::GROUP, text: self.text.to_string() }
    }

    fn parse_list(&mut self, depth: usize) -> Result<K::Set, GroupError> {
        let mut positive: Option<K::Set> = None;
        let mut negative = K::none();
        loop {
            let (negated, set) = self.parse_item(depth + 1)?;
            if negated {
                negative = K::union(&negative, &set);
            } else {
                positive = Some(match positive {
                    Some(p) => K::union(&p, &set),
                    None => set,
                });
            }
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    break;
                }
                _ => return Err(GroupError::Unterminated { group: K::GROUP, text: self.text.to_string() }),
            }
        }
        let base = positive.unwrap_or_else(K::any);
        Ok(K::subtract(&base, &negative))
    }

    fn parse_atom(&mut self, atom: &str, depth: usize) -> Result<K::Set, GroupError> {
        if atom.eq_ignore_ascii_case("any") {
            return Ok(K::any());
        }
        let Some(name) = atom.strip_prefix('$') else {
            return K::parse_atom(atom);
        };
        if self.stack.iter().any(|n| n == name) {
            let mut chain = self.stack.clone();
            chain.push(name.to_string());
            return Err(GroupError::Cycle { group: K::GROUP, chain });
        }
        let Some(value) = K::lookup(self.vars, name) else {
            return Err(GroupError::UnknownVariable { group: K::GROUP, name: name.to_string() });
        };
        self.stack.push(name.to_string());
        let vars = self.vars;
        let result = {
            let mut inner = GroupParser::<K>::new(value, vars, self.stack);
            inner.parse_item(depth + 1).and_then(|(neg, set)| {
                inner.skip_ws();
                if inner.pos != value.len() {
                    Err(GroupError::BadVariable { name: name.to_string(), value: value.to_string() })
                } else {
                    Ok(if neg { K::complement(&set) } else { set })
                }
            })
        };
        self.stack.pop();
        result
    }
}

fn parse_address_atom(atom: &str) -> Result<AddressSet, GroupError> {
    let bad = || GroupError::BadAddress { atom: atom.to_string() };
    // Range form a.b.c.d-e.f.g.h
    if let Some((lo, hi)) = atom.split_once('-') {
        let lo: IpAddr = lo.parse().map_err(|_| bad())?;
        let hi: IpAddr = hi.parse().map_err(|_| bad())?;
        let mut set = AddressSet::none();
        match (lo, hi) {
            (IpAddr::V4(l), IpAddr::V4(h)) if u32::from(l) <= u32::from(h) => {
                set.v4 = Ranges::from_unsorted(vec![(u32::from(l), u32::from(h))]);
            }
            (IpAddr::V6(l), IpAddr::V6(h)) if u128::from(l) <= u128::from(h) => {
                set.v6 = Ranges::from_unsorted(vec![(u128::from(l), u128::from(h))]);
            }
            _ => return Err(bad()),
        }
        return Ok(set);
    }
    let (ip_text, mask_text) = match atom.split_once('/') {
        Some((ip, mask)) => (ip, Some(mask)),
        None => (atom, None),
    };
    let ip: IpAddr = ip_text.parse().map_err(|_| bad())?;
    let mut set = AddressSet::none();
    match ip {
        IpAddr::V4(a) => {
            let prefix = match mask_text {
                None => 32,
                Some(m) => match m.parse::<u32>() {
                    Ok(p) if p <= 32 => p,
                    Ok(_) => return Err(bad()),
                    // Dotted netmask form 255.255.255.0, which must be contiguous.
                    Err(_) => {
                        let mask = u32::from(m.parse::<Ipv4Addr>().map_err(|_| bad())?);
                        if mask.leading_ones() + mask.trailing_zeros() != 32 {
                            return Err(bad());
                        }
                        mask.leading_ones()
                    }
                },
            };
            let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix) };
            let lo = u32::from(a) & mask;
            set.v4 = Ranges::from_unsorted(vec![(lo, lo | !mask)]);
        }
        IpAddr::V6(a) => {
            let prefix = match mask_text {
                None => 128,
                Some(m) => match m.parse::<u32>() {
                    Ok(p) if p <= 128 => p,
                    _ => return Err(bad()),
                },
            };
            let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - prefix) };
            let lo = u128::from(a) & mask;
            set.v6 = Ranges::from_unsorted(vec![(lo, lo | !mask)]);
        }
    }
    Ok(set)
}

fn parse_port_number(text: &str, atom: &str) -> Result<u16, GroupError> {
    text.trim().parse::<u16>().map_err(|_| GroupError::BadPort { atom: atom.to_string() })
}

fn parse_port_atom(atom: &str) -> Result<Ranges<u16>, GroupError> {
    let (lo, hi) = match atom.split_once(':') {
        None => {
            let p = parse_port_number(atom, atom)?;
            (p, p)
        }
        Some((lo, hi)) => {
            let lo = if lo.is_empty() { 0 } else { parse_port_number(lo, atom)? };
            let hi = if hi.is_empty() { u16::MAX } else { parse_port_number(hi, atom)? };
            if lo > hi {
                return Err(GroupError::ReversedPortRange { atom: atom.to_string() });
            }
            (lo, hi)
        }
    };
    Ok(Ranges::from_unsorted(vec![(lo, hi)]))
}
