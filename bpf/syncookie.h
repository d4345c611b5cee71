/* SPDX-License-Identifier: GPL-2.0-only */
/* SYN-cookie stage: for destinations in picket_protect_v4/v6, SYNs are answered from
 * XDP with a SYN-ACK carrying a kernel SYN cookie (XDP_TX), and the client's ACK is
 * checked and passed to the kernel, whose iptables SYNPROXY target opens the real
 * connection to the server. Spoofed SYNs create no state anywhere. */
#ifndef PICKET_SYNCOOKIE_H
#define PICKET_SYNCOOKIE_H

#include "common.h"

/* TODO(syncookie): the stage. CONTINUE leaves every packet to the later stages. */
static __always_inline int syncookie_stage(struct xdp_md *ctx, struct pkt *p)
{
	(void)ctx;
	(void)p;
	return CONTINUE;
}

#endif
