/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * picket's XDP layer, shared part: the maps user space steers (layouts mirrored by
 * src/xdp/maps.rs; change both together), the per-reason counters, and the parser
 * that turns a frame into a `struct pkt` for the stages.
 *
 * Byte order: addresses are kept as on the wire (network order); ports in map keys
 * are in host order, as user space writes them.
 */
#ifndef PICKET_COMMON_H
#define PICKET_COMMON_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* A stage's answer: an XDP action, or CONTINUE to the next stage. */
#define CONTINUE (-1)

/* Why a packet ended where it did: indices of `picket_stats` (src/xdp/maps.rs Reason). */
enum reason {
	R_SEEN = 0,          /* every frame the program saw */
	R_INSPECT,           /* handed to picket: XDP_PASS to AF_PACKET, or redirected to AF_XDP */
	R_BLOCKLISTED,       /* source in the blocklist: XDP_DROP */
	R_COOKIE_SENT,       /* SYN to a protected destination answered with a SYN cookie (XDP_TX) */
	R_COOKIE_ACK_PASSED, /* ACK carrying a valid cookie, passed to the kernel's SYNPROXY */
	R_COOKIE_ACK_BAD,    /* ACK to a protected destination, no socket, no valid cookie: XDP_DROP */
	R_COOKIE_ERROR,      /* a SYN that could not be answered (too short, helper error): XDP_DROP */
	R_PASSED_THROUGH,    /* no loaded rule or detector can match: XDP_PASS, not inspected */
	R_BYPASSED,          /* flow in the bypass map: not inspected */
	R_NOT_IP,            /* not IPv4/IPv6 (ARP, ...), or truncated headers: inspected as usual (also in R_INSPECT) */
	R_MAX,
};

struct counter {
	__u64 packets;
	__u64 bytes;
};

/* Program-wide settings, written once by user space before attaching. */
struct xdp_config {
	__u32 flags;
	/* MSS announced in SYN cookies (0: 1460). */
	__u16 cookie_mss;
	__u16 pad;
};

#define CFG_AFXDP (1u << 0)        /* deliver by redirecting into picket_xsks */
#define CFG_PASSTHROUGH (1u << 1)  /* consult picket_ports: pass what no rule can match */
#define CFG_BYPASS_DROP (1u << 2)  /* bypassed flows are dropped (a tap), not passed to the kernel */
#define CFG_INSPECT_ICMP (1u << 3) /* with CFG_PASSTHROUGH: ICMP/ICMPv6 is inspected */
#define CFG_INSPECT_OTHER (1u << 4) /* with CFG_PASSTHROUGH: other IP protocols are inspected */

/* Blocklist: longest-prefix match on the source address. */
struct lpm_v4 {
	__u32 prefixlen;
	__u8 addr[4];
};
struct lpm_v6 {
	__u32 prefixlen;
	__u8 addr[16];
};
struct block_val {
	__u64 expires_ns; /* bpf_ktime_get_ns() time the entry stops applying; 0: never */
	__u64 packets;
	__u64 bytes;
};

/* SYN-cookie protection: destination address and port (port 0: every port). */
struct protect_v4 {
	__u32 addr;
	__u16 port;
	__u16 pad;
};
struct protect_v6 {
	__u8 addr[16];
	__u16 port;
	__u16 pad;
};
struct protect_val {
	__u64 syns;        /* SYNs answered with a cookie */
	__u64 acks_passed; /* ACKs with a valid cookie */
	__u64 acks_bad;    /* ACKs dropped */
	__u64 pad;
};

/* Flow bypass: one entry per direction, as the packet appears on the wire. */
struct flow_v4 {
	__u32 src;
	__u32 dst;
	__u16 sport;
	__u16 dport;
	__u8 proto;
	__u8 pad[3];
};
struct flow_v6 {
	__u8 src[16];
	__u8 dst[16];
	__u16 sport;
	__u16 dport;
	__u8 proto;
	__u8 pad[3];
};
struct bypass_val {
	__u64 packets;
	__u64 bytes;
	__u64 last_ns; /* bpf_ktime_get_ns() of the last packet */
};

#define PORT_SLOTS 65536 /* picket_ports: [0, 65536) TCP ports, [65536, 131072) UDP ports */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, R_MAX);
	__type(key, __u32);
	__type(value, struct counter);
} picket_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdp_config);
} picket_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm_v4);
	__type(value, struct block_val);
} picket_block_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm_v6);
	__type(value, struct block_val);
} picket_block_v6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct protect_v4);
	__type(value, struct protect_val);
} picket_protect_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct protect_v6);
	__type(value, struct protect_val);
} picket_protect_v6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow_v4);
	__type(value, struct bypass_val);
} picket_bypass_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow_v6);
	__type(value, struct bypass_val);
} picket_bypass_v6 SEC(".maps");

/* Pass-through: 1 where some rule or detector may match a TCP/UDP port (either side). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * PORT_SLOTS);
	__type(key, __u32);
	__type(value, __u8);
} picket_ports SEC(".maps");

/* AF_XDP: the socket of each RX queue. */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} picket_xsks SEC(".maps");

/* What the stages know of a packet. Addresses in network order; ports in host order. */
struct pkt {
	__u32 len;     /* frame length */
	__u16 l3_off;  /* offset of the IP header in the frame */
	__u16 l4_off;  /* offset of the transport header (0: none parsed) */
	__u8 v6;       /* 0: IPv4, 1: IPv6 */
	__u8 proto;    /* IPPROTO_* of the transport header */
	__u8 tcp_flags; /* TCP flags byte (FIN 0x01, SYN 0x02, RST 0x04, ACK 0x10) */
	__u8 fragment; /* a non-first IPv4 fragment or an IPv6 fragment header: no ports */
	__u16 sport;
	__u16 dport;
	__u32 saddr[4]; /* IPv4 in saddr[0] */
	__u32 daddr[4];
};

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_ACK 0x10

static __always_inline struct xdp_config *config(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&picket_config, &zero);
}

static __always_inline void count(__u32 reason, __u32 len)
{
	struct counter *c = bpf_map_lookup_elem(&picket_stats, &reason);
	if (c) {
		c->packets += 1; /* per-CPU slot: no atomics needed */
		c->bytes += len;
	}
}

/* Parses Ethernet (one 802.1Q/802.1ad tag at most), IPv4/IPv6 and the TCP/UDP ports.
 * Returns 0 when `p` describes an IP packet, -1 otherwise (not IP, truncated). */
static __always_inline int parse(void *data, void *data_end, struct pkt *p)
{
	struct ethhdr *eth = data;
	__u16 off = sizeof(*eth);
	__u16 type;

	__builtin_memset(p, 0, sizeof(*p));
	p->len = data_end - data;
	if ((void *)(eth + 1) > data_end)
		return -1;
	type = eth->h_proto;
	if (type == bpf_htons(ETH_P_8021Q) || type == bpf_htons(ETH_P_8021AD)) {
		__u16 *inner = data + off + 2;
		if ((void *)(inner + 1) > data_end)
			return -1;
		type = *inner;
		off += 4;
	}
	p->l3_off = off;
	if (type == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + off;
		if ((void *)(ip + 1) > data_end || ip->ihl < 5)
			return -1;
		p->proto = ip->protocol;
		p->saddr[0] = ip->saddr;
		p->daddr[0] = ip->daddr;
		/* Offset set: not the first fragment, no transport header. */
		if (ip->frag_off & bpf_htons(0x1fff)) {
			p->fragment = 1;
			return 0;
		}
		off += ip->ihl * 4;
	} else if (type == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data + off;
		if ((void *)(ip6 + 1) > data_end)
			return -1;
		p->v6 = 1;
		p->proto = ip6->nexthdr;
		__builtin_memcpy(p->saddr, &ip6->saddr, 16);
		__builtin_memcpy(p->daddr, &ip6->daddr, 16);
		off += sizeof(*ip6);
		/* Extension headers are not walked: such packets carry no ports here and go
		 * to user space, which decodes them fully. */
		if (p->proto == 44 /* fragment */)
			p->fragment = 1;
	} else {
		return -1;
	}
	if (p->proto == IPPROTO_TCP) {
		struct tcphdr *tcp = data + off;
		if ((void *)(tcp + 1) > data_end)
			return -1;
		p->l4_off = off;
		p->sport = bpf_ntohs(tcp->source);
		p->dport = bpf_ntohs(tcp->dest);
		p->tcp_flags = ((__u8 *)tcp)[13];
	} else if (p->proto == IPPROTO_UDP) {
		struct udphdr *udp = data + off;
		if ((void *)(udp + 1) > data_end)
			return -1;
		p->l4_off = off;
		p->sport = bpf_ntohs(udp->source);
		p->dport = bpf_ntohs(udp->dest);
	}
	return 0;
}

#endif
