/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * SYN-cookie stage: for destinations in picket_protect_v4/v6, SYNs are answered from
 * XDP with a SYN-ACK carrying a kernel SYN cookie (XDP_TX), and the client's ACK is
 * checked and passed to the kernel, whose iptables SYNPROXY target (installed by
 * src/ddos/synproxy.rs) checks the same cookie again and opens the real connection to
 * the server. Spoofed SYNs create no state anywhere: not here, not in conntrack, not in
 * the server's SYN queue.
 *
 * Per TCP packet to a protected destination (lookup: (daddr, dport), (daddr, any port),
 * (any address, dport)):
 *   - SYN (no ACK, no FIN/RST): SYN-ACK built in place, seq = cookie, XDP_TX.
 *     SYN+FIN / SYN+RST, IPv4 options, truncated headers: R_COOKIE_ERROR, XDP_DROP.
 *   - ACK (no SYN/RST): a socket for the 4-tuple that is not listening (an established
 *     connection, one in TIME_WAIT, ...) continues; otherwise the cookie in ack-1 decides:
 *     valid → XDP_PASS to SYNPROXY, invalid → XDP_DROP.
 *   - anything else (RST, FIN without ACK, SYN-ACK, data without ACK): CONTINUE. A RST
 *     is left to the kernel, which checks its sequence number (RFC 5961): dropping it
 *     here would keep a real connection from being reset.
 *
 * The SYN-ACK's options follow the kernel's SYNPROXY (`--timestamp --sack-perm
 * --wscale 7`): MSS (ddos.syn-cookies.mss; 20 less for IPv6), and when the client sent
 * timestamps, a timestamp whose low 6 bits carry the client's window scale and SACK
 * permission, so that SYNPROXY can restore them from the echoed value. Without
 * timestamps from the client, window scaling and SACK are off on that connection (a
 * SYN cookie has no room for them). The window is one segment (see build_synack);
 * SYNPROXY sends the server's window once the server answered.
 */
#ifndef PICKET_SYNCOOKIE_H
#define PICKET_SYNCOOKIE_H

#include "common.h"

#define TCP_HDR_LEN 20       /* TCP header without options */
#define TCP_MAX_HDR_LEN 60   /* data offset 15 */
#define SYNACK_SHORT_LEN 24  /* SYN-ACK with MSS only (the SYN had no timestamp) */
#define SYNACK_MID_LEN 36    /* ... MSS, SACK/NOPs, timestamp */
#define SYNACK_LONG_LEN 40   /* ... MSS, SACK/NOPs, timestamp, window scale */
#define IPV4_HDR_LEN 20      /* IPv4 header without options (ihl 5) */
#define IPV6_HDR_LEN 40
#define COOKIE_TTL 64        /* TTL / hop limit of the SYN-ACK */
#define COOKIE_WSCALE 7      /* window scale announced (SYNPROXY --wscale 7) */
#define COOKIE_DEFAULT_MSS 1460
#define IPV6_MSS_LESS 20     /* the IPv6 header is 20 bytes longer than IPv4's */
#define IP_DF 0x4000
#define BPF_TCP_LISTEN_STATE 10 /* BPF_TCP_LISTEN */

/* TCP options */
#define OPT_EOL 0
#define OPT_NOP 1
#define OPT_MSS 2
#define OPT_WSCALE 3
#define OPT_SACK_PERM 4
#define OPT_TIMESTAMP 8
#define OPT_TIMESTAMP_LEN 10

/* Timestamp cookie, as SYNPROXY decodes the echoed value (nf_synproxy_core.c). */
#define TS_WSCALE_MASK 0x0f  /* the client's window scale; 0xf: none */
#define TS_SACK_PERM 0x10
#define TS_LOW_BITS 0x3f

/* What the SYN's options say, for the timestamp cookie. */
struct syn_opts {
	__u32 tsval;   /* the client's timestamp (network order), echoed as our tsecr */
	__u8 has_ts;
	__u8 has_ws;
	__u8 wscale;
	__u8 sack;
};

static __always_inline __u16 csum_fold(__u64 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* The protection entry of the packet's destination, or NULL. */
static __always_inline struct protect_val *protect_lookup(const struct pkt *p)
{
	struct protect_val *v;

	if (p->v6) {
		struct protect_v6 key = { .port = p->dport };
		__builtin_memcpy(key.addr, p->daddr, 16);
		v = bpf_map_lookup_elem(&picket_protect_v6, &key);
		if (v)
			return v;
		key.port = 0;
		v = bpf_map_lookup_elem(&picket_protect_v6, &key);
		if (v)
			return v;
		__builtin_memset(key.addr, 0, 16);
		key.port = p->dport;
		return bpf_map_lookup_elem(&picket_protect_v6, &key);
	}
	struct protect_v4 key = { .addr = p->daddr[0], .port = p->dport };
	v = bpf_map_lookup_elem(&picket_protect_v4, &key);
	if (v)
		return v;
	key.port = 0;
	v = bpf_map_lookup_elem(&picket_protect_v4, &key);
	if (v)
		return v;
	key.addr = 0;
	key.port = p->dport;
	return bpf_map_lookup_elem(&picket_protect_v4, &key);
}

/* The SYN's TCP header length from its data offset, or 0 when it is malformed or longer
 * than what the frame carries. */
static __always_inline __u32 syn_header_len(struct xdp_md *ctx, __u32 l4)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct tcphdr *tcp = data + l4;

	if ((void *)(tcp + 1) > data_end)
		return 0;
	__u32 len = tcp->doff * 4;
	if (len < TCP_HDR_LEN || data + l4 + len > data_end)
		return 0;
	return len;
}

/* Copies the SYN's TCP header (`tcp_len` bytes) into `syn` (TCP_MAX_HDR_LEN bytes,
 * zeroed: the rest reads as end-of-options) and sets the copy's data offset to the
 * maximum, so that the cookie helper can be given a constant length: the cookie depends
 * on addresses, ports, sequence number and MSS option, not on the header length. With
 * `tcp_len` only compared, never used as a size, the verifier follows one path for
 * every header length. 0, or -1. */
static __always_inline int copy_syn(struct xdp_md *ctx, __u32 l4, __u32 tcp_len, __u32 *syn)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	void *tcp = data + l4;

#pragma unroll
	for (int i = 0; i < TCP_MAX_HDR_LEN / 4; i++) {
		if (i * 4 >= tcp_len)
			break;
		__u32 *word = tcp + i * 4;
		if ((void *)(word + 1) > data_end)
			return -1;
		syn[i] = *word;
	}
	((struct tcphdr *)syn)->doff = TCP_MAX_HDR_LEN / 4;
	return 0;
}

/* Reads window scale, SACK permission and timestamp from a SYN's options (`hdr` holds
 * TCP_MAX_HDR_LEN bytes, `len` of them the header). Every option byte position is
 * visited once with a constant index, and `skip` counts the bytes left of the current
 * option: the verifier then keeps no exact position and its work stays small (a loop
 * over a variable index made it explore every option layout). */
static __always_inline void scan_options(const __u8 *hdr, __u32 len, struct syn_opts *o)
{
	__u32 skip = 0;
	int done = 0;

#pragma unroll
	for (__u32 pos = TCP_HDR_LEN; pos < TCP_MAX_HDR_LEN; pos++) {
		if (done || pos >= len)
			break;
		if (skip) {
			skip--;
			continue;
		}
		__u8 kind = hdr[pos];
		if (kind == OPT_EOL) {
			done = 1;
			continue;
		}
		if (kind == OPT_NOP)
			continue;
		if (pos + 1 >= TCP_MAX_HDR_LEN)
			break;
		__u8 olen = hdr[pos + 1];
		if (olen < 2 || pos + olen > len) {
			done = 1;
			continue;
		}
		if (kind == OPT_WSCALE && olen == 3 && pos + 2 < TCP_MAX_HDR_LEN) {
			o->has_ws = 1;
			o->wscale = hdr[pos + 2];
		} else if (kind == OPT_SACK_PERM && olen == 2) {
			o->sack = 1;
		} else if (kind == OPT_TIMESTAMP && olen == OPT_TIMESTAMP_LEN && pos + 5 < TCP_MAX_HDR_LEN) {
			o->has_ts = 1;
			__builtin_memcpy(&o->tsval, hdr + pos + 2, 4);
		}
		skip = olen - 1;
	}
}

/* Writes the SYN-ACK's TCP header into `out` (zeroed, 60 bytes); returns its length. */
static __always_inline __u32 build_synack(__u8 *out, const struct tcphdr *syn, __u32 cookie, __u16 mss,
					  const struct syn_opts *o)
{
	struct tcphdr *th = (struct tcphdr *)out;
	__u32 len = TCP_HDR_LEN + 4;
	__u8 *opt = out + TCP_HDR_LEN;

	th->source = syn->dest;
	th->dest = syn->source;
	th->seq = bpf_htonl(cookie);
	th->ack_seq = bpf_htonl(bpf_ntohl(syn->seq) + 1);
	th->syn = 1;
	th->ack = 1;
	/* One segment of window (SYNPROXY's own SYN-ACK has 0): the client's first data
	 * segment then also completes the handshake if its ACK was lost, where a zero
	 * window would leave it sending probes the cookie check rejects. */
	th->window = bpf_htons(mss);
	opt[0] = OPT_MSS;
	opt[1] = 4;
	opt[2] = mss >> 8;
	opt[3] = mss & 0xff;
	if (o->has_ts) {
		__u32 ms = bpf_ktime_get_ns() / 1000000;
		__u32 tsval = ms & ~TS_LOW_BITS;
		tsval |= o->has_ws ? (o->wscale & TS_WSCALE_MASK) : TS_WSCALE_MASK;
		if (o->sack)
			tsval |= TS_SACK_PERM;
		if (o->sack) {
			opt[4] = OPT_SACK_PERM;
			opt[5] = 2;
		} else {
			opt[4] = OPT_NOP;
			opt[5] = OPT_NOP;
		}
		opt[6] = OPT_TIMESTAMP;
		opt[7] = OPT_TIMESTAMP_LEN;
		__u32 ts_be = bpf_htonl(tsval);
		__builtin_memcpy(opt + 8, &ts_be, 4);
		__builtin_memcpy(opt + 12, &o->tsval, 4);
		len += 12;
		if (o->has_ws) {
			opt[16] = OPT_NOP;
			opt[17] = OPT_WSCALE;
			opt[18] = 3;
			opt[19] = COOKIE_WSCALE;
			len += 4;
		}
	}
	th->doff = len / 4;
	return len;
}

/* Resizes the frame to the reply (growing it by 8 bytes at most: a SYN without options
 * gets a 24-byte SYN-ACK, one with a timestamp a 40-byte one at most) and writes it:
 * Ethernet addresses swapped, `ip` (`ip_len` bytes, a constant after inlining) and the
 * SYN-ACK's `tcp_len` bytes (24, 36 or 40). 0, or -1 when the frame cannot grow. */
static __always_inline int emit(struct xdp_md *ctx, const struct pkt *p, const void *ip, const __u32 ip_len,
				const __u32 *tcp, __u32 tcp_len)
{
	__u32 l3 = p->l3_off & 0xff;
	int delta = (int)(l3 + ip_len + tcp_len) - (int)(ctx->data_end - ctx->data);

	if (delta && bpf_xdp_adjust_tail(ctx, delta) < 0)
		return -1;
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	void *l3p = data + l3;
	void *l4p = l3p + ip_len;
	__u8 mac[ETH_ALEN];

	if ((void *)(eth + 1) > data_end || l4p + SYNACK_SHORT_LEN > data_end)
		return -1;
	__builtin_memcpy(mac, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, mac, ETH_ALEN);
	__builtin_memcpy(l3p, ip, ip_len);
	if (tcp_len == SYNACK_SHORT_LEN) {
		__builtin_memcpy(l4p, tcp, SYNACK_SHORT_LEN);
	} else if (tcp_len == SYNACK_MID_LEN) {
		if (l4p + SYNACK_MID_LEN > data_end)
			return -1;
		__builtin_memcpy(l4p, tcp, SYNACK_MID_LEN);
	} else {
		if (l4p + SYNACK_LONG_LEN > data_end)
			return -1;
		__builtin_memcpy(l4p, tcp, SYNACK_LONG_LEN);
	}
	return 0;
}

static __always_inline __u16 announced_mss(int v6)
{
	struct xdp_config *cfg = config();
	__u16 mss = cfg && cfg->cookie_mss ? cfg->cookie_mss : COOKIE_DEFAULT_MSS;
	return v6 ? mss - IPV6_MSS_LESS : mss;
}

/* The SYN-ACK's TCP checksum (over the pseudo-header `pseudo` and the header `out`),
 * then the frame rewritten with the IP header `ip` and sent back: XDP_TX, or -1. */
static __always_inline int send_synack(struct xdp_md *ctx, const struct pkt *p, const void *ip, const __u32 ip_len,
				       void *pseudo, const __u32 pseudo_len, __u32 *out, __u32 out_len)
{
	__s64 sum = bpf_csum_diff(0, 0, pseudo, pseudo_len, 0);
	if (sum < 0)
		return -1;
	sum = bpf_csum_diff(0, 0, out, out_len, (__u32)sum);
	if (sum < 0)
		return -1;
	((struct tcphdr *)out)->check = csum_fold((__u32)sum);
	if (emit(ctx, p, ip, ip_len, out, out_len) < 0)
		return -1;
	return XDP_TX;
}

/* A SYN to a protected IPv4 destination: XDP_TX with the SYN-ACK, or -1 (error). */
static __always_inline int cookie_syn_v4(struct xdp_md *ctx, const struct pkt *p)
{
	__u32 l3 = p->l3_off & 0xff, l4 = l3 + IPV4_HDR_LEN;
	__u32 syn[TCP_MAX_HDR_LEN / 4] = {};
	__u32 out[TCP_MAX_HDR_LEN / 4] = {};
	struct syn_opts o = {};
	struct iphdr iph;

	{
		void *data = (void *)(long)ctx->data;
		void *data_end = (void *)(long)ctx->data_end;
		struct iphdr *ip = data + l3;
		if ((void *)(ip + 1) > data_end || ip->ihl != IPV4_HDR_LEN / 4)
			return -1;
	}
	__u32 tcp_len = syn_header_len(ctx, l4);
	if (!tcp_len || copy_syn(ctx, l4, tcp_len, syn) < 0)
		return -1;
	{
		void *data = (void *)(long)ctx->data;
		void *data_end = (void *)(long)ctx->data_end;
		if (data + l3 + IPV4_HDR_LEN > data_end)
			return -1;
		__builtin_memcpy(&iph, data + l3, IPV4_HDR_LEN);
	}
	__s64 cookie = bpf_tcp_raw_gen_syncookie_ipv4(&iph, (struct tcphdr *)syn, TCP_MAX_HDR_LEN);
	if (cookie < 0)
		return -1;
	scan_options((__u8 *)syn, tcp_len, &o);
	__u32 out_len = build_synack((__u8 *)out, (struct tcphdr *)syn, (__u32)cookie, announced_mss(0), &o);
	out_len &= 0x3c;

	struct iphdr rip = {};
	rip.version = 4;
	rip.ihl = IPV4_HDR_LEN / 4;
	rip.tot_len = bpf_htons(IPV4_HDR_LEN + out_len);
	rip.frag_off = bpf_htons(IP_DF);
	rip.ttl = COOKIE_TTL;
	rip.protocol = IPPROTO_TCP;
	rip.saddr = iph.daddr;
	rip.daddr = iph.saddr;
	rip.check = csum_fold((__u32)bpf_csum_diff(0, 0, (__be32 *)&rip, IPV4_HDR_LEN, 0));

	struct {
		__be32 saddr, daddr;
		__u8 zero, proto;
		__be16 len;
	} pseudo = { rip.saddr, rip.daddr, 0, IPPROTO_TCP, bpf_htons(out_len) };
	return send_synack(ctx, p, &rip, IPV4_HDR_LEN, &pseudo, sizeof(pseudo), out, out_len);
}

/* A SYN to a protected IPv6 destination (no extension headers: parse() saw TCP as the
 * next header): XDP_TX with the SYN-ACK, or -1 (error). */
static __always_inline int cookie_syn_v6(struct xdp_md *ctx, const struct pkt *p)
{
	__u32 l3 = p->l3_off & 0xff, l4 = l3 + IPV6_HDR_LEN;
	__u32 syn[TCP_MAX_HDR_LEN / 4] = {};
	__u32 out[TCP_MAX_HDR_LEN / 4] = {};
	struct syn_opts o = {};
	struct ipv6hdr iph;

	__u32 tcp_len = syn_header_len(ctx, l4);
	if (!tcp_len || copy_syn(ctx, l4, tcp_len, syn) < 0)
		return -1;
	{
		void *data = (void *)(long)ctx->data;
		void *data_end = (void *)(long)ctx->data_end;
		if (data + l3 + IPV6_HDR_LEN > data_end)
			return -1;
		__builtin_memcpy(&iph, data + l3, IPV6_HDR_LEN);
	}
	__s64 cookie = bpf_tcp_raw_gen_syncookie_ipv6(&iph, (struct tcphdr *)syn, TCP_MAX_HDR_LEN);
	if (cookie < 0)
		return -1;
	scan_options((__u8 *)syn, tcp_len, &o);
	__u32 out_len = build_synack((__u8 *)out, (struct tcphdr *)syn, (__u32)cookie, announced_mss(1), &o);
	out_len &= 0x3c;

	struct ipv6hdr rip = {};
	rip.version = 6;
	rip.payload_len = bpf_htons(out_len);
	rip.nexthdr = IPPROTO_TCP;
	rip.hop_limit = COOKIE_TTL;
	rip.saddr = iph.daddr;
	rip.daddr = iph.saddr;

	struct {
		struct in6_addr saddr, daddr;
		__be32 len;
		__u8 zero[3], proto;
	} pseudo = { rip.saddr, rip.daddr, bpf_htonl(out_len), { 0, 0, 0 }, IPPROTO_TCP };
	return send_synack(ctx, p, &rip, IPV6_HDR_LEN, &pseudo, sizeof(pseudo), out, out_len);
}

/* An ACK to a protected destination: CONTINUE (a connection exists), XDP_PASS (valid
 * cookie, for SYNPROXY) or XDP_DROP. */
static __always_inline int cookie_ack(struct xdp_md *ctx, const struct pkt *p, struct protect_val *pv)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	void *l3 = data + (p->l3_off & 0xff);
	struct bpf_sock_tuple tuple = {};
	struct bpf_sock *sk;
	long valid;

	if (p->v6) {
		struct ipv6hdr *ip6 = l3;
		if ((void *)(ip6 + 1) > data_end)
			return CONTINUE;
		struct tcphdr *tcp = (void *)(ip6 + 1);
		if ((void *)(tcp + 1) > data_end)
			return CONTINUE;
		__builtin_memcpy(tuple.ipv6.saddr, &ip6->saddr, 16);
		__builtin_memcpy(tuple.ipv6.daddr, &ip6->daddr, 16);
		tuple.ipv6.sport = tcp->source;
		tuple.ipv6.dport = tcp->dest;
		sk = bpf_skc_lookup_tcp(ctx, &tuple, sizeof(tuple.ipv6), BPF_F_CURRENT_NETNS, 0);
		if (sk) {
			int listening = sk->state == BPF_TCP_LISTEN_STATE;
			bpf_sk_release(sk);
			if (!listening)
				return CONTINUE;
		}
		valid = bpf_tcp_raw_check_syncookie_ipv6(ip6, tcp);
	} else {
		struct iphdr *ip = l3;
		if ((void *)(ip + 1) > data_end || ip->ihl < 5)
			return CONTINUE;
		struct tcphdr *tcp = (void *)ip + (ip->ihl & 0xf) * 4;
		if ((void *)(tcp + 1) > data_end)
			return CONTINUE;
		tuple.ipv4.saddr = ip->saddr;
		tuple.ipv4.daddr = ip->daddr;
		tuple.ipv4.sport = tcp->source;
		tuple.ipv4.dport = tcp->dest;
		sk = bpf_skc_lookup_tcp(ctx, &tuple, sizeof(tuple.ipv4), BPF_F_CURRENT_NETNS, 0);
		if (sk) {
			int listening = sk->state == BPF_TCP_LISTEN_STATE;
			bpf_sk_release(sk);
			if (!listening)
				return CONTINUE;
		}
		valid = bpf_tcp_raw_check_syncookie_ipv4(ip, tcp);
	}
	if (valid == 0) {
		__sync_fetch_and_add(&pv->acks_passed, 1);
		count(R_COOKIE_ACK_PASSED, p->len);
		return XDP_PASS;
	}
	__sync_fetch_and_add(&pv->acks_bad, 1);
	count(R_COOKIE_ACK_BAD, p->len);
	return XDP_DROP;
}

static __always_inline int syncookie_stage(struct xdp_md *ctx, struct pkt *p)
{
	__u8 flags = p->tcp_flags;
	struct protect_val *pv;
	int rc;

	if (p->proto != IPPROTO_TCP || p->fragment || !p->l4_off)
		return CONTINUE;
	if (flags & TCP_SYN) {
		if (flags & TCP_ACK)
			return CONTINUE; /* a SYN-ACK: the answer to a connection of this host */
	} else if (!(flags & TCP_ACK) || (flags & TCP_RST)) {
		return CONTINUE;
	}
	pv = protect_lookup(p);
	if (!pv)
		return CONTINUE;
	if (!(flags & TCP_SYN))
		return cookie_ack(ctx, p, pv);
	if (flags & (TCP_FIN | TCP_RST)) {
		count(R_COOKIE_ERROR, p->len);
		return XDP_DROP;
	}
	rc = p->v6 ? cookie_syn_v6(ctx, p) : cookie_syn_v4(ctx, p);
	if (rc < 0) {
		count(R_COOKIE_ERROR, p->len);
		return XDP_DROP;
	}
	__sync_fetch_and_add(&pv->syns, 1);
	count(R_COOKIE_SENT, p->len);
	return rc;
}

#endif
