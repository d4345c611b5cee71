//! Zero-copy protocol decoders. Each header type is a view over the captured bytes,
//! checked once for length when it is made, after which every accessor is a plain read.
//! `decode` walks link layer → VLAN → IP → transport and records anomalies as
//! [`DecodeEvent`]s (Suricata's decoder event names) instead of failing: a malformed packet
//! is decoded as far as it goes, counted, and never panics.
//!
//! CONTRACT (filled in by the decode work; `inspect` and `dispatch` rely on exactly this):
//! - `decode(link, data, &opts) -> Decoded<'_>`
//! - `Decoded { vlan: [u16; 2], vlan_depth: u8, ip: Option<IpLayer>, l4: L4, payload: &[u8],
//!    events: EventSet, bad_checksum: bool, fragment: bool }`
//! - `Decoded::tuple() -> Option<FiveTuple>` (addresses as [u8; 16], IPv4 as v4-mapped)
//! - `TcpView::{src_port, dst_port, seq, ack, flags, window, header_len}`,
//!   `UdpView::{src_port, dst_port}`, `IcmpView::{icmp_type, code}`
//! - `DecodeEvent::{ALL, name()}` with names like "ipv4.trunc_pkt"; `EventSet::{insert, iter}`
