//! The parts eve-log adds to records of every type when its options ask for them
//! (Suricata's "common options"): `suricata_version` (`suricata-version: yes`), the
//! `ether` object (`ethernet: yes`) and `community_id` (`community-id: yes`), plus the
//! flow's variables (`metadata`, `traffic`) on flow records (`metadata: yes`, the default).
//!
//! Transaction records carry the MAC addresses of the packet that completed the
//! transaction, oriented like the record's addresses; flow records carry every address
//! each side was seen with (`src_macs`/`dest_macs`, see `picket_core::flow::macs`).

use crate::output::json::JsonObject;
use picket_core::flow::macs::{Mac, MacSet};
use picket_core::inspect::{FlowBits, FlowExt, TxEvent};
use picket_core::stream::Direction;
use std::sync::atomic::{AtomicU32, Ordering};

/// eve-log's options for parts every record type carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommonOptions {
    /// `suricata-version: yes` (default no).
    pub suricata_version: bool,
    /// `ethernet: yes` (default no).
    pub ethernet: bool,
    /// `community-id: yes`, with its `community-id-seed`.
    pub community_id: Option<u16>,
    /// `metadata:` (default yes): flow records list the flow's flowbits.
    pub metadata: bool,
}

/// The options in force, packed in one word: one setting for the process, as there is one
/// eve-log (like `ipv6-compress`), set when the configuration is read and read by every
/// record writer without threading it through each protocol's writer. Bits: 0 version,
/// 1 ethernet, 2 community id, 3 metadata; 16..32 the community id seed.
static COMMON: AtomicU32 = AtomicU32::new(1 << 3);

/// Sets the [`CommonOptions`] every record writer uses from now on.
pub fn set_common_options(c: CommonOptions) {
    COMMON.store(pack(c), Ordering::Relaxed);
}

/// The [`CommonOptions`] in force (defaults until [`set_common_options`]).
pub fn common_options() -> CommonOptions {
    unpack(COMMON.load(Ordering::Relaxed))
}

fn pack(c: CommonOptions) -> u32 {
    u32::from(c.suricata_version)
        | u32::from(c.ethernet) << 1
        | u32::from(c.community_id.is_some()) << 2
        | u32::from(c.metadata) << 3
        | u32::from(c.community_id.unwrap_or(0)) << 16
}

fn unpack(bits: u32) -> CommonOptions {
    CommonOptions {
        suricata_version: bits & 1 != 0,
        ethernet: bits & 2 != 0,
        community_id: (bits & 4 != 0).then_some((bits >> 16) as u16),
        metadata: bits & 8 != 0,
    }
}

/// The `suricata_version` value: picket's own version, so that records tell which
/// producer wrote them (a dashboard comparing engines sees `picket-0.1.0`).
pub const PRODUCER_VERSION: &str = concat!("picket-", env!("CARGO_PKG_VERSION"));

/// `aa:bb:cc:dd:ee:ff`, lowercase, into a fixed buffer (no allocation per address).
fn mac_text<'t>(mac: &Mac, text: &'t mut [u8; 17]) -> &'t str {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, byte) in mac.iter().enumerate() {
        text[3 * i] = HEX[usize::from(byte >> 4)];
        text[3 * i + 1] = HEX[usize::from(byte & 0xf)];
        if i < 5 {
            text[3 * i + 2] = b':';
        }
    }
    std::str::from_utf8(text).unwrap_or_default()
}

/// `suricata_version`, when eve-log's `suricata-version: yes` asks for it.
pub fn write_version(o: &mut JsonObject<'_>, opts: &CommonOptions) {
    if opts.suricata_version {
        o.str("suricata_version", PRODUCER_VERSION);
    }
}

/// The common options of a transaction record whose addresses go in `dir` (client to
/// server for [`Direction::ToServer`]): version, `ether`, `community_id`.
pub fn write_tx_common(o: &mut JsonObject<'_>, t: &TxEvent<'_>, opts: &CommonOptions, dir: Direction) {
    write_version(o, opts);
    if let (true, Some((client, server))) = (opts.ethernet, t.ether) {
        let (src, dest) = match dir {
            Direction::ToServer => (client, server),
            Direction::ToClient => (server, client),
        };
        let mut text = [0u8; 17];
        o.open("ether").str("src_mac", mac_text(&src, &mut text));
        o.str("dest_mac", mac_text(&dest, &mut text)).close();
    }
    if let Some(seed) = opts.community_id {
        o.str("community_id", &super::community_id::community_id(&t.tuple, seed));
    }
}

/// The common options of a flow record (after its `flow` object, where Suricata puts
/// them): version, the flowbits (`metadata.flowbits`, `traffic`) and `ether`. Its
/// `community_id` is written with its addresses.
pub fn write_flow_common(o: &mut JsonObject<'_>, ext: &FlowExt, opts: &CommonOptions) {
    write_version(o, opts);
    if let (true, Some(bits)) = (opts.metadata, ext.flowbits()) {
        write_flowbits(o, bits);
    }
    if opts.ethernet {
        write_flow_macs(o, ext.macs.as_deref());
    }
}

/// Suricata's `traffic` object (flowbits named `traffic/id/X` or `traffic/label/X`) and
/// `metadata.flowbits` (every other flowbit set on the flow).
pub fn write_flowbits(o: &mut JsonObject<'_>, bits: FlowBits<'_>) {
    let names: Vec<&str> = bits.names().collect();
    let ids: Vec<&str> = names.iter().filter_map(|n| n.strip_prefix("traffic/id/")).collect();
    let labels: Vec<&str> = names.iter().filter_map(|n| n.strip_prefix("traffic/label/")).collect();
    let others: Vec<&str> = names.iter().copied().filter(|n| !n.starts_with("traffic/")).collect();
    let list = |o: &mut JsonObject<'_>, key: &str, items: &[&str]| {
        o.open_list(key);
        for item in items {
            o.item_str(item);
        }
        o.close_list();
    };
    let mut entropy = bits.entropy().peekable();
    if !others.is_empty() || entropy.peek().is_some() {
        o.open("metadata");
        if !others.is_empty() {
            list(o, "flowbits", &others);
        }
        write_entropy(o, entropy);
        o.close();
    }
    if !ids.is_empty() || !labels.is_empty() {
        o.open("traffic");
        if !ids.is_empty() {
            list(o, "id", &ids);
        }
        if !labels.is_empty() {
            list(o, "label", &labels);
        }
        o.close();
    }
}

/// A flow record's `ether`: the addresses of each side, client first (`src_macs`), in
/// the order seen. Absent when none were seen (not Ethernet, or not tracked).
pub fn write_flow_macs(o: &mut JsonObject<'_>, macs: Option<&MacSet>) {
    let Some(set) = macs.filter(|s| !s.client.is_empty() || !s.server.is_empty()) else { return };
    let mut text = [0u8; 17];
    o.open("ether");
    for (key, side) in [("dest_macs", &set.server), ("src_macs", &set.client)] {
        if side.is_empty() {
            continue;
        }
        o.open_list(key);
        for mac in side.iter() {
            o.item_str(mac_text(mac, &mut text));
        }
        o.close_list();
    }
    o.close();
}

/// `metadata.entropy`: the flow's last `entropy` value per buffer, keyed by Suricata's
/// buffer type name (`file.data` → `file_data`).
fn write_entropy(o: &mut JsonObject<'_>, mut values: std::iter::Peekable<impl Iterator<Item = (&'static str, f64)>>) {
    if values.peek().is_none() {
        return;
    }
    o.open("entropy");
    let mut key = [0u8; 64];
    for (name, value) in values {
        // Buffer names are short ASCII; one that does not fit is logged as it is.
        let n = name.len();
        match key.get_mut(..n) {
            Some(k) => {
                for (dst, &b) in k.iter_mut().zip(name.as_bytes()) {
                    *dst = if b == b'.' { b'_' } else { b };
                }
                o.f64(std::str::from_utf8(&key[..n]).unwrap_or(name), value);
            }
            None => {
                o.f64(name, value);
            }
        }
    }
    o.close();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::json::object_text as json;

    #[test]
    fn mac_text_is_lowercase_colon_separated() {
        let mut text = [0u8; 17];
        assert_eq!(mac_text(&[0x0c, 0xc4, 0x7a, 0xac, 0x83, 0xd7], &mut text), "0c:c4:7a:ac:83:d7");
        assert_eq!(mac_text(&[0xff; 6], &mut text), "ff:ff:ff:ff:ff:ff");
    }

    #[test]
    fn flow_macs_list_each_side_in_order_seen() {
        let frame = |dst: u8, src: u8| {
            let mut f = vec![dst; 6];
            f.extend_from_slice(&[src; 6]);
            f.extend_from_slice(&[8, 0]);
            f
        };
        let mut set = MacSet::default();
        set.add_frame(&frame(0x20, 0x11), true);
        set.add_frame(&frame(0x12, 0x20), false);
        set.add_frame(&frame(0x21, 0x11), true);
        assert_eq!(
            json(|o| write_flow_macs(o, Some(&set))),
            concat!(
                r#"{"ether":{"dest_macs":["20:20:20:20:20:20","21:21:21:21:21:21"],"#,
                r#""src_macs":["11:11:11:11:11:11","12:12:12:12:12:12"]}}"#
            )
        );
        assert_eq!(json(|o| write_flow_macs(o, Some(&MacSet::default()))), "{}");
        assert_eq!(json(|o| write_flow_macs(o, None)), "{}");
    }

    #[test]
    fn options_round_trip_through_the_packed_word() {
        for c in [
            CommonOptions::default(),
            CommonOptions { suricata_version: true, ethernet: true, community_id: Some(0), metadata: true },
            CommonOptions { suricata_version: false, ethernet: true, community_id: Some(65535), metadata: false },
        ] {
            assert_eq!(unpack(pack(c)), c);
        }
        assert_eq!(unpack(1 << 3), CommonOptions { metadata: true, ..CommonOptions::default() }, "the default");
    }

    #[test]
    fn version_only_when_asked() {
        let mut opts = CommonOptions::default();
        assert_eq!(json(|o| write_version(o, &opts)), "{}");
        opts.suricata_version = true;
        let text = json(|o| write_version(o, &opts));
        assert!(text.starts_with(r#"{"suricata_version":"picket-"#), "{text}");
    }
}
