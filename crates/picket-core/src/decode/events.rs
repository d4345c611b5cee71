//! Decoder anomalies. Names follow Suricata's `decode-event` keywords without the
//! `decoder.` prefix (the stats writer adds `decoder.event.`), so rules and dashboards
//! written for Suricata keep working. The few events Suricata has no name for are marked.

macro_rules! decode_events {
    ($( $(#[$doc:meta])* $variant:ident => $name:literal, )*) => {
        /// One kind of anomaly found while decoding a packet.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum DecodeEvent { $( $(#[$doc])* $variant, )* }

        impl DecodeEvent {
            /// Every event, in `index()` order.
            pub const ALL: &'static [DecodeEvent] = &[ $(DecodeEvent::$variant,)* ];
            pub const COUNT: usize = Self::ALL.len();

            /// Suricata's name without the `decoder.` prefix, e.g. `"ipv4.trunc_pkt"`.
            pub fn name(self) -> &'static str {
                match self { $(DecodeEvent::$variant => $name,)* }
            }
        }
    };
}

decode_events! {
    /// Shorter than the 14-byte Ethernet header.
    EthernetPktTooSmall => "ethernet.pkt_too_small",
    /// EtherType picket does not decode and does not know as harmless (ARP, LLDP, ...).
    EthernetUnknownEthertype => "ethernet.unknown_ethertype",
    /// IEEE 802.3 frame (length instead of EtherType: LLC/SNAP, STP). Not in Suricata;
    /// counted so that these frames are visible, never decoded.
    EthernetIeee8023Frame => "ethernet.ieee8023_frame",
    VlanHeaderTooSmall => "vlan.header_too_small",
    /// Unknown EtherType after a VLAN tag.
    VlanUnknownType => "vlan.unknown_type",
    /// More than two stacked tags; decoding stops at the third.
    VlanTooManyLayers => "vlan.too_many_layers",
    /// Linux cooked capture (v1 or v2) shorter than its header.
    SllPktTooSmall => "sll.pkt_too_small",
    /// BSD Null / Loop header shorter than 4 bytes.
    LtnullPktTooSmall => "ltnull.pkt_too_small",
    /// Null / Loop address family that is neither IPv4 nor IPv6.
    LtnullUnsupportedType => "ltnull.unsupported_type",
    /// Raw IP whose first nibble is neither 4 nor 6.
    IprawInvalidIpVersion => "ipraw.invalid_ip_version",
    /// The capture's link type is not decoded. Not in Suricata (which logs and drops).
    LinkUnsupportedType => "link.unsupported_type",

    Ipv4PktTooSmall => "ipv4.pkt_too_small",
    Ipv4HlenTooSmall => "ipv4.hlen_too_small",
    Ipv4IplenSmallerThanHlen => "ipv4.iplen_smaller_than_hlen",
    /// Header or total length runs past the captured bytes.
    Ipv4TruncPkt => "ipv4.trunc_pkt",
    /// An option whose type must not appear in a datagram (reserved classes).
    Ipv4OptInvalid => "ipv4.opt_invalid",
    Ipv4OptInvalidLen => "ipv4.opt_invalid_len",
    /// Option with a legal length but inconsistent content (pointer out of range, ...).
    Ipv4OptMalformed => "ipv4.opt_malformed",
    /// Bytes after the End-of-Options-List option are not zero.
    Ipv4OptPadRequired => "ipv4.opt_pad_required",
    /// A lone option type byte at the end of the header, with no room for its length.
    Ipv4OptEolRequired => "ipv4.opt_eol_required",
    Ipv4OptDuplicate => "ipv4.opt_duplicate",
    Ipv4OptUnknown => "ipv4.opt_unknown",
    Ipv4WrongIpVersion => "ipv4.wrong_ip_version",
    /// ICMPv6 carried over IPv4.
    Ipv4Icmpv6 => "ipv4.icmpv6",

    Ipv6PktTooSmall => "ipv6.pkt_too_small",
    Ipv6TruncPkt => "ipv6.trunc_pkt",
    Ipv6TruncExthdr => "ipv6.trunc_exthdr",
    Ipv6ExthdrDuplFh => "ipv6.exthdr_dupl_fh",
    /// Fragment header with offset 0 and no more fragments (an "atomic" fragment).
    Ipv6ExthdrUselessFh => "ipv6.exthdr_useless_fh",
    Ipv6ExthdrDuplRh => "ipv6.exthdr_dupl_rh",
    Ipv6ExthdrDuplHh => "ipv6.exthdr_dupl_hh",
    Ipv6ExthdrDuplDh => "ipv6.exthdr_dupl_dh",
    Ipv6ExthdrDuplAh => "ipv6.exthdr_dupl_ah",
    Ipv6ExthdrDuplEh => "ipv6.exthdr_dupl_eh",
    /// An option inside hop-by-hop / destination options runs past its header.
    Ipv6ExthdrInvalidOptlen => "ipv6.exthdr_invalid_optlen",
    Ipv6WrongIpVersion => "ipv6.wrong_ip_version",
    Ipv6ExthdrAhResNotNull => "ipv6.exthdr_ah_res_not_null",
    Ipv6HopoptsUnknownOpt => "ipv6.hopopts_unknown_opt",
    Ipv6HopoptsOnlyPadding => "ipv6.hopopts_only_padding",
    Ipv6DstoptsUnknownOpt => "ipv6.dstopts_unknown_opt",
    Ipv6DstoptsOnlyPadding => "ipv6.dstopts_only_padding",
    Ipv6RhType0 => "ipv6.rh_type_0",
    Ipv6ZeroLenPadn => "ipv6.zero_len_padn",
    Ipv6FhNonZeroReservedField => "ipv6.fh_non_zero_reserved_field",
    Ipv6DataAfterNoneHeader => "ipv6.data_after_none_header",
    /// Next header value that IANA has not assigned.
    Ipv6UnknownNextHeader => "ipv6.unknown_next_header",
    /// ICMPv4 carried over IPv6.
    Ipv6Icmpv4 => "ipv6.icmpv4",

    Icmpv4PktTooSmall => "icmpv4.pkt_too_small",
    Icmpv4UnknownType => "icmpv4.unknown_type",
    Icmpv4UnknownCode => "icmpv4.unknown_code",
    /// Error message quoting an IPv4 header that is cut short.
    Icmpv4Ipv4TruncPkt => "icmpv4.ipv4_trunc_pkt",
    /// Error message quoting a header that is not IPv4.
    Icmpv4Ipv4UnknownVer => "icmpv4.ipv4_unknown_ver",

    Icmpv6PktTooSmall => "icmpv6.pkt_too_small",
    Icmpv6UnknownType => "icmpv6.unknown_type",
    Icmpv6UnknownCode => "icmpv6.unknown_code",
    Icmpv6Ipv6UnknownVersion => "icmpv6.ipv6_unknown_version",
    Icmpv6Ipv6TruncPkt => "icmpv6.ipv6_trunc_pkt",
    /// MLD message whose hop limit is not 1.
    Icmpv6MldMessageWithInvalidHl => "icmpv6.mld_message_with_invalid_hl",
    Icmpv6UnassignedType => "icmpv6.unassigned_type",
    Icmpv6ExperimentationType => "icmpv6.experimentation_type",

    TcpPktTooSmall => "tcp.pkt_too_small",
    TcpHlenTooSmall => "tcp.hlen_too_small",
    /// An option kind byte at the end of the header with no room for its length byte.
    TcpInvalidOptlen => "tcp.invalid_optlen",
    /// An option whose length byte is wrong for its kind or runs past the header.
    TcpOptInvalidLen => "tcp.opt_invalid_len",
    TcpOptDuplicate => "tcp.opt_duplicate",

    UdpPktTooSmall => "udp.pkt_too_small",
    /// UDP length field below 8.
    UdpHlenTooSmall => "udp.hlen_too_small",
    /// UDP length field larger than the IP payload.
    UdpHlenInvalid => "udp.hlen_invalid",

    /// More encapsulation layers than `DecodeOptions::max_layers`; decoding stops.
    TooManyLayers => "too_many_layers",

    PppPktTooSmall => "ppp.pkt_too_small",
    /// Van Jacobson uncompressed TCP/IP shorter than an IPv4 header.
    PppVjuPktTooSmall => "ppp.vju_pkt_too_small",
    PppIp4PktTooSmall => "ppp.ip4_pkt_too_small",
    PppIp6PktTooSmall => "ppp.ip6_pkt_too_small",
    /// PPP protocol number that is not assigned.
    PppWrongType => "ppp.wrong_type",
    /// A valid PPP protocol that carries no IP (LCP, IPCP, IPX, ...).
    PppUnsupProto => "ppp.unsup_proto",

    PppoePktTooSmall => "pppoe.pkt_too_small",
    /// PPPoE session frame with a non-zero code, or a PPP protocol not decoded.
    PppoeWrongCode => "pppoe.wrong_code",
    PppoeMalformedTags => "pppoe.malformed_tags",

    GrePktTooSmall => "gre.pkt_too_small",
    GreWrongVersion => "gre.wrong_version",
    GreVersion0Recur => "gre.version0_recur",
    GreVersion0Flags => "gre.version0_flags",
    GreVersion0HdrTooBig => "gre.version0_hdr_too_big",
    GreVersion0MalformedSreHdr => "gre.version0_malformed_sre_hdr",
    GreVersion1Chksum => "gre.version1_chksum",
    GreVersion1Route => "gre.version1_route",
    GreVersion1Ssr => "gre.version1_ssr",
    GreVersion1Recur => "gre.version1_recur",
    GreVersion1Flags => "gre.version1_flags",
    GreVersion1NoKey => "gre.version1_no_key",
    GreVersion1WrongProtocol => "gre.version1_wrong_protocol",
    GreVersion1MalformedSreHdr => "gre.version1_malformed_sre_hdr",
    GreVersion1HdrTooBig => "gre.version1_hdr_too_big",

    MplsHeaderTooSmall => "mpls.header_too_small",
    MplsPktTooSmall => "mpls.pkt_too_small",
    MplsBadLabelRouterAlert => "mpls.bad_label_router_alert",
    MplsBadLabelImplicitNull => "mpls.bad_label_implicit_null",
    MplsBadLabelReserved => "mpls.bad_label_reserved",
    MplsUnknownPayloadType => "mpls.unknown_payload_type",

    /// VXLAN inner Ethernet frame that is neither IP, VLAN nor ARP.
    VxlanUnknownPayloadType => "vxlan.unknown_payload_type",
    GeneveUnknownPayloadType => "geneve.unknown_payload_type",

    ErspanHeaderTooSmall => "erspan.header_too_small",
    ErspanUnsupportedVersion => "erspan.unsupported_version",
    ErspanTooManyVlanLayers => "erspan.too_many_vlan_layers",

    ChdlcPktTooSmall => "chdlc.pkt_too_small",

    NshHeaderTooSmall => "nsh.header_too_small",
    NshUnsupportedVersion => "nsh.unsupported_version",
    NshBadHeaderLength => "nsh.bad_header_length",
    NshReservedType => "nsh.reserved_type",
    NshUnsupportedType => "nsh.unsupported_type",
    NshUnknownPayload => "nsh.unknown_payload",

    Ipv4InIpv6TooSmall => "ipv6.ipv4_in_ipv6_too_small",
    Ipv4InIpv6WrongVersion => "ipv6.ipv4_in_ipv6_wrong_version",
    Ipv6InIpv6TooSmall => "ipv6.ipv6_in_ipv6_too_small",
    Ipv6InIpv6WrongVersion => "ipv6.ipv6_in_ipv6_wrong_version",

    /// Raised by the defragmenter: the reassembled datagram would exceed 65535 bytes.
    Ipv4FragPktTooLarge => "ipv4.frag_pkt_too_large",
    Ipv6FragPktTooLarge => "ipv6.frag_pkt_too_large",
    /// Fragments of one datagram overlap (the policy decides whose bytes win).
    Ipv4FragOverlap => "ipv4.frag_overlap",
    Ipv6FragOverlap => "ipv6.frag_overlap",
    /// IPv6 fragment with M set whose length is not a multiple of 8.
    Ipv6FragInvalidLength => "ipv6.frag_invalid_length",
    /// Fragment not reassembled (no tracker available: memcap or tracker limit).
    Ipv4FragIgnored => "ipv4.frag_ignored",
    Ipv6FragIgnored => "ipv6.frag_ignored",
}

impl DecodeEvent {
    /// Position in [`DecodeEvent::ALL`], for counter arrays.
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// Whether Suricata has this event (all but the few picket adds to make anomalies
    /// visible); only those become eve `anomaly` records, under Suricata's name.
    pub fn in_suricata(self) -> bool {
        !matches!(self, DecodeEvent::EthernetIeee8023Frame | DecodeEvent::LinkUnsupportedType)
    }

    /// Looks an event up by name, with or without the `decoder.` prefix (as written in
    /// a `decode-event:` rule keyword).
    pub fn from_name(name: &str) -> Option<DecodeEvent> {
        let name = name.strip_prefix("decoder.").unwrap_or(name);
        Self::ALL.iter().copied().find(|e| e.name() == name)
    }
}

const EVENT_WORDS: usize = 3;
const _: () = assert!(DecodeEvent::COUNT <= EVENT_WORDS * 64, "EventSet too small for DecodeEvent");

/// A fixed-size set of [`DecodeEvent`]s: 24 bytes, no allocation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EventSet {
    bits: [u64; EVENT_WORDS],
}

impl EventSet {
    pub const fn new() -> Self {
        EventSet { bits: [0; EVENT_WORDS] }
    }

    #[inline]
    pub fn insert(&mut self, event: DecodeEvent) {
        let i = event.index();
        self.bits[i / 64] |= 1u64 << (i % 64);
    }

    #[inline]
    pub fn contains(&self, event: DecodeEvent) -> bool {
        let i = event.index();
        self.bits[i / 64] & (1u64 << (i % 64)) != 0
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|w| *w == 0)
    }

    pub fn len(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Adds every event of `other`.
    pub fn union(&mut self, other: EventSet) {
        for (mine, theirs) in self.bits.iter_mut().zip(other.bits) {
            *mine |= theirs;
        }
    }

    /// Events in `index()` order.
    pub fn iter(&self) -> impl Iterator<Item = DecodeEvent> + '_ {
        DecodeEvent::ALL.iter().copied().filter(move |e| self.contains(*e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_in_index_order_and_names_are_unique() {
        for (i, e) in DecodeEvent::ALL.iter().enumerate() {
            assert_eq!(e.index(), i);
        }
        let mut names: Vec<_> = DecodeEvent::ALL.iter().map(|e| e.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), DecodeEvent::COUNT);
        // Suricata's one event without a protocol prefix is `decoder.too_many_layers`.
        assert!(names.iter().all(|n| (n.contains('.') || *n == "too_many_layers") && !n.starts_with("decoder.")));
    }

    #[test]
    fn from_name_accepts_rule_spelling() {
        assert_eq!(DecodeEvent::from_name("decoder.ipv4.trunc_pkt"), Some(DecodeEvent::Ipv4TruncPkt));
        assert_eq!(DecodeEvent::from_name("tcp.opt_duplicate"), Some(DecodeEvent::TcpOptDuplicate));
        assert_eq!(DecodeEvent::from_name("tcp.nope"), None);
    }

    #[test]
    fn event_set_operations() {
        let mut s = EventSet::new();
        assert!(s.is_empty());
        let last = *DecodeEvent::ALL.last().unwrap();
        s.insert(last);
        s.insert(DecodeEvent::EthernetPktTooSmall);
        s.insert(last);
        assert!(s.contains(last) && s.contains(DecodeEvent::EthernetPktTooSmall));
        assert!(!s.contains(DecodeEvent::Ipv4TruncPkt));
        assert_eq!(s.len(), 2);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![DecodeEvent::EthernetPktTooSmall, last]);
        let mut t = EventSet::new();
        t.insert(DecodeEvent::Ipv4TruncPkt);
        t.union(s);
        assert_eq!(t.len(), 3);
    }
}
