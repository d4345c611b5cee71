/* SPDX-License-Identifier: GPL-2.0-only */
/* Bypass and pass-through: what picket does not need to see.
 * - A flow picket finished with (user space inserted both directions into
 *   picket_bypass_v4/v6) is counted in its entry and not inspected.
 * - With CFG_PASSTHROUGH, a packet no loaded rule or detector can match (picket_ports
 *   has neither of its ports; ICMP/other protocols by flag; TCP SYN/RST by flag when
 *   detectors run) is not inspected. picket_ports and the flags are derived from the
 *   rules by src/ddos/passthrough.rs.
 * Both are shared by the XDP program and the AF_PACKET socket filter. */
#ifndef PICKET_BYPASS_H
#define PICKET_BYPASS_H

#include "common.h"

/* The bypass entry of the packet's direction, or NULL. */
static __always_inline struct bypass_val *bypass_lookup(const struct pkt *p)
{
	if (p->fragment)
		return NULL;
	if (p->v6) {
		struct flow_v6 key = { .sport = p->sport, .dport = p->dport, .proto = p->proto };
		__builtin_memcpy(key.src, p->saddr, 16);
		__builtin_memcpy(key.dst, p->daddr, 16);
		return bpf_map_lookup_elem(&picket_bypass_v6, &key);
	}
	struct flow_v4 key = { .src = p->saddr[0], .dst = p->daddr[0], .sport = p->sport, .dport = p->dport, .proto = p->proto };
	return bpf_map_lookup_elem(&picket_bypass_v4, &key);
}

static __always_inline void bypass_count(struct bypass_val *v, __u32 len)
{
	__sync_fetch_and_add(&v->packets, 1);
	__sync_fetch_and_add(&v->bytes, len);
	v->last_ns = bpf_ktime_get_ns();
}

/* Whether some rule or detector may match the packet (always, without CFG_PASSTHROUGH). */
static __always_inline int interesting(const struct pkt *p, const struct xdp_config *cfg)
{
	if (!(cfg->flags & CFG_PASSTHROUGH) || p->fragment)
		return 1;
	/* Detectors count SYNs and RSTs to every port (SYN flood, port scan). */
	if (p->proto == IPPROTO_TCP && (cfg->flags & CFG_INSPECT_TCP_CTRL) && (p->tcp_flags & (TCP_SYN | TCP_RST)))
		return 1;
	if (p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP) {
		__u32 base = p->proto == IPPROTO_TCP ? 0 : PORT_SLOTS;
		__u32 sport = base + p->sport, dport = base + p->dport;
		__u8 *s = bpf_map_lookup_elem(&picket_ports, &sport);
		__u8 *d = bpf_map_lookup_elem(&picket_ports, &dport);
		return (s && *s) || (d && *d);
	}
	if (p->proto == IPPROTO_ICMP || p->proto == 58 /* ICMPv6 */)
		return !!(cfg->flags & CFG_INSPECT_ICMP);
	return !!(cfg->flags & CFG_INSPECT_OTHER);
}

static __always_inline int bypass_stage(struct pkt *p, const struct xdp_config *cfg)
{
	struct bypass_val *v = bypass_lookup(p);
	if (v) {
		bypass_count(v, p->len);
		count(R_BYPASSED, p->len);
		return (cfg->flags & CFG_BYPASS_DROP) ? XDP_DROP : XDP_PASS;
	}
	if (!interesting(p, cfg)) {
		count(R_PASSED_THROUGH, p->len);
		return XDP_PASS;
	}
	return CONTINUE;
}

#endif
