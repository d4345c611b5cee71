// SPDX-License-Identifier: GPL-2.0-only
/*
 * picket's XDP program and AF_PACKET socket filter (one object, shared maps).
 *
 * Built by build.rs: clang -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu.
 * Loaded, attached and steered by src/xdp/ (aya). Per packet, in order:
 *
 *   parse ─▶ blocklist (drop) ─▶ SYN cookies (tx / pass / drop) ─▶ bypass, pass-through
 *         ─▶ deliver to picket (XDP_PASS to AF_PACKET, or redirect into an AF_XDP socket)
 *
 * Every packet ends in exactly one `picket_stats` reason besides R_SEEN (R_NOT_IP
 * packets also count in R_INSPECT, where they end).
 */
#include "common.h"
#include "blocklist.h"
#include "syncookie.h"
#include "bypass.h"

static __always_inline int deliver(struct xdp_md *ctx, const struct xdp_config *cfg, __u32 len)
{
	count(R_INSPECT, len);
	if (cfg->flags & CFG_AFXDP)
		return bpf_redirect_map(&picket_xsks, ctx->rx_queue_index, XDP_PASS);
	return XDP_PASS;
}

SEC("xdp")
int picket_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct xdp_config *cfg = config();
	struct pkt p;
	int rc;

	if (!cfg)
		return XDP_PASS;
	count(R_SEEN, data_end - data);
	if (parse(data, data_end, &p) < 0) {
		count(R_NOT_IP, p.len);
		return deliver(ctx, cfg, p.len);
	}
	rc = blocklist_stage(&p);
	if (rc != CONTINUE)
		return rc;
	rc = syncookie_stage(ctx, &p);
	if (rc != CONTINUE)
		return rc;
	rc = bypass_stage(&p, cfg);
	if (rc != CONTINUE)
		return rc;
	return deliver(ctx, cfg, p.len);
}

/*
 * AF_PACKET socket filter for `--ddos` with AF_PACKET capture: AF_PACKET sees what XDP
 * passed to the kernel, so what the XDP program passed through or bypassed must be
 * hidden from the capture socket here (returning 0), with the same maps. Outgoing
 * packets of bypassed flows (which XDP never sees) are counted here.
 */
SEC("socket")
int picket_sockfilter(struct __sk_buff *skb)
{
	struct xdp_config *cfg = config();
	struct pkt p = {};
	struct ethhdr eth;
	__u16 off = sizeof(eth);
	__u16 type;

	if (!cfg || bpf_skb_load_bytes(skb, 0, &eth, sizeof(eth)) < 0)
		return skb->len;
	type = eth.h_proto;
	if (type == bpf_htons(ETH_P_8021Q) || type == bpf_htons(ETH_P_8021AD)) {
		if (bpf_skb_load_bytes(skb, off + 2, &type, 2) < 0)
			return skb->len;
		off += 4;
	}
	p.len = skb->len;
	if (type == bpf_htons(ETH_P_IP)) {
		struct iphdr ip;
		if (bpf_skb_load_bytes(skb, off, &ip, sizeof(ip)) < 0 || ip.ihl < 5)
			return skb->len;
		p.proto = ip.protocol;
		p.saddr[0] = ip.saddr;
		p.daddr[0] = ip.daddr;
		if (ip.frag_off & bpf_htons(0x1fff))
			p.fragment = 1;
		off += ip.ihl * 4;
	} else if (type == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6;
		if (bpf_skb_load_bytes(skb, off, &ip6, sizeof(ip6)) < 0)
			return skb->len;
		p.v6 = 1;
		p.proto = ip6.nexthdr;
		__builtin_memcpy(p.saddr, &ip6.saddr, 16);
		__builtin_memcpy(p.daddr, &ip6.daddr, 16);
		if (p.proto == 44)
			p.fragment = 1;
		off += sizeof(ip6);
	} else {
		return skb->len;
	}
	if (!p.fragment && (p.proto == IPPROTO_TCP || p.proto == IPPROTO_UDP)) {
		__u16 ports[2];
		if (bpf_skb_load_bytes(skb, off, ports, sizeof(ports)) < 0)
			return skb->len;
		p.sport = bpf_ntohs(ports[0]);
		p.dport = bpf_ntohs(ports[1]);
	}
	struct bypass_val *v = bypass_lookup(&p);
	if (v) {
		if (skb->pkt_type == 4 /* PACKET_OUTGOING */)
			bypass_count(v, p.len);
		return 0;
	}
	if (!interesting(&p, cfg))
		return 0;
	return skb->len;
}

char LICENSE[] SEC("license") = "GPL";
