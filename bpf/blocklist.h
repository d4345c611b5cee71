/* SPDX-License-Identifier: GPL-2.0-only */
/* Blocklist stage: a source address inside a listed prefix is dropped, and the entry
 * counts it, until the entry expires. Expired entries are ignored here and removed by
 * user space (src/xdp/blocklist.rs). */
#ifndef PICKET_BLOCKLIST_H
#define PICKET_BLOCKLIST_H

#include "common.h"

static __always_inline int blocklist_stage(struct pkt *p)
{
	struct block_val *hit;

	if (p->v6) {
		struct lpm_v6 key = { .prefixlen = 128 };
		__builtin_memcpy(key.addr, p->saddr, 16);
		hit = bpf_map_lookup_elem(&picket_block_v6, &key);
	} else {
		struct lpm_v4 key = { .prefixlen = 32 };
		__builtin_memcpy(key.addr, p->saddr, 4);
		hit = bpf_map_lookup_elem(&picket_block_v4, &key);
	}
	if (!hit)
		return CONTINUE;
	if (hit->expires_ns && hit->expires_ns <= bpf_ktime_get_ns())
		return CONTINUE;
	__sync_fetch_and_add(&hit->packets, 1);
	__sync_fetch_and_add(&hit->bytes, p->len);
	count(R_BLOCKLISTED, p->len);
	return XDP_DROP;
}

#endif
