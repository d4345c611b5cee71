//! The Ethernet addresses a flow was seen with (Suricata's `MacSet`), kept only when
//! eve-log's `ethernet: yes` asks for them: flow records list them (`ether.src_macs`,
//! `ether.dest_macs`), and records written without a captured packet (flow end) take the
//! first pair.
//!
//! Sides are the flow's: `client` holds the MAC addresses the client's packets came from
//! (and the server's packets went to), `server` the other end's. A path through several
//! routers or a load balancer shows more than one address per side; each side keeps at
//! most [`MAX_MACS_PER_SIDE`] distinct addresses, in the order first seen (Suricata's
//! limit), and ignores the rest.

/// Most distinct addresses kept per side (Suricata's `MacSetInit(10)`).
pub const MAX_MACS_PER_SIDE: usize = 10;

pub type Mac = [u8; 6];

/// Distinct addresses of one side, in the order first seen; at most
/// [`MAX_MACS_PER_SIDE`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MacList {
    macs: Vec<Mac>,
}

impl MacList {
    /// Adds `mac` unless it is known or the list is full (returns whether it was full).
    fn add(&mut self, mac: Mac) -> bool {
        // The latest address is the likeliest to repeat: search from the end.
        if self.macs.iter().rev().any(|m| *m == mac) {
            return false;
        }
        if self.macs.len() == MAX_MACS_PER_SIDE {
            return true;
        }
        self.macs.push(mac);
        false
    }

    pub fn iter(&self) -> impl Iterator<Item = &Mac> {
        self.macs.iter()
    }

    pub fn first(&self) -> Option<&Mac> {
        self.macs.first()
    }

    pub fn len(&self) -> usize {
        self.macs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.macs.is_empty()
    }
}

/// The MAC addresses of a flow's two sides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MacSet {
    pub client: MacList,
    pub server: MacList,
    /// Addresses not kept because their side was full.
    pub dropped: u64,
}

impl MacSet {
    /// Notes a frame of the flow: `frame` starts with its Ethernet header (destination,
    /// then source address); `to_server` tells which side sent it. Shorter frames are
    /// ignored.
    pub fn add_frame(&mut self, frame: &[u8], to_server: bool) {
        let Some((dst, src)) = frame_macs(frame) else { return };
        let (client, server) = if to_server { (src, dst) } else { (dst, src) };
        for full in [self.client.add(client), self.server.add(server)] {
            self.dropped += u64::from(full);
        }
    }

    /// The first (client, server) pair seen: what a record without a packet of its own
    /// carries.
    pub fn first(&self) -> Option<(Mac, Mac)> {
        Some((*self.client.first()?, *self.server.first()?))
    }

    /// Memory held beyond the struct itself (charged to the flow).
    pub fn heap_bytes(&self) -> usize {
        (self.client.macs.capacity() + self.server.macs.capacity()) * std::mem::size_of::<Mac>()
    }
}

/// (destination, source) of an Ethernet frame; `None` when it is shorter than the header.
pub fn frame_macs(frame: &[u8]) -> Option<(Mac, Mac)> {
    let dst: Mac = frame.get(0..6)?.try_into().ok()?;
    let src: Mac = frame.get(6..12)?.try_into().ok()?;
    // The EtherType must be there too for the frame to be Ethernet at all.
    frame.get(12..14)?;
    Some((dst, src))
}

/// The (client, server) addresses of a frame sent toward the server (`to_server`) or the
/// client: what a record about that packet carries, oriented by the flow.
pub fn frame_sides(frame: &[u8], to_server: bool) -> Option<(Mac, Mac)> {
    let (dst, src) = frame_macs(frame)?;
    Some(if to_server { (src, dst) } else { (dst, src) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(dst: u8, src: u8) -> Vec<u8> {
        let mut f = vec![dst; 6];
        f.extend_from_slice(&[src; 6]);
        f.extend_from_slice(&[0x08, 0x00, 0x45]);
        f
    }

    #[test]
    fn sides_follow_the_flow_not_the_packet() {
        let mut set = MacSet::default();
        set.add_frame(&frame(2, 1), true);
        set.add_frame(&frame(1, 2), false);
        assert_eq!(set.client.iter().copied().collect::<Vec<_>>(), vec![[1; 6]]);
        assert_eq!(set.server.iter().copied().collect::<Vec<_>>(), vec![[2; 6]]);
        assert_eq!(set.first(), Some(([1; 6], [2; 6])));
        assert_eq!(frame_sides(&frame(1, 2), false), Some(([1; 6], [2; 6])));
    }

    #[test]
    fn distinct_addresses_in_order_bounded_and_counted() {
        let mut set = MacSet::default();
        for i in 0..15u8 {
            set.add_frame(&frame(100, i), true);
            set.add_frame(&frame(100, 0), true);
        }
        let client: Vec<u8> = set.client.iter().map(|m| m[0]).collect();
        assert_eq!(client, (0..10).collect::<Vec<_>>());
        assert_eq!(set.server.len(), 1);
        assert_eq!(set.dropped, 5, "the five addresses beyond the limit");
    }

    #[test]
    fn short_frames_are_ignored() {
        let mut set = MacSet::default();
        set.add_frame(&[0u8; 13], true);
        set.add_frame(&[], false);
        assert!(set.client.is_empty() && set.server.is_empty());
        assert_eq!(set.first(), None);
    }
}
