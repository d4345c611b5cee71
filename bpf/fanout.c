// SPDX-License-Identifier: GPL-2.0-only
/*
 * picket's adaptive fanout program (`--fanout adaptive`, `cluster-type: cluster_adaptive`).
 *
 * A BPF_PROG_TYPE_SOCKET_FILTER program the kernel runs for every packet of an AF_PACKET
 * fanout group joined with PACKET_FANOUT_EBPF; its return value is the index of the
 * group member (= picket worker) that receives the packet (the kernel takes it modulo
 * the group's size).
 *
 *   symmetric flow hash ─▶ bucket = hash & (BUCKETS - 1) ─▶ worker = picket_fanout_table[bucket]
 *
 * picket rewrites picket_fanout_table from user space as it moves buckets between
 * workers (src/capture/afpacket/adaptive.rs); the hash never changes, so a flow stays in
 * its bucket and only moves when its whole bucket does.
 *
 * The Rust twin, crates/picket-core/src/flow/fanout_hash.rs, computes the same bucket
 * from a captured frame; a test runs both on the same packets (BPF_PROG_TEST_RUN).
 * Change the two together.
 *
 * In a fanout program packet data starts at the network header: the kernel has pulled
 * the Ethernet header, and took the outer VLAN tag into the skb's metadata. skb->protocol
 * is the EtherType after that tag; a second (inner) tag is still in the data and is
 * skipped here, as are further ones, up to MAX_VLAN_TAGS.
 *
 * The hash, on 32-bit words read in host byte order:
 *   endpoint(addr, port) = mix(mix(...mix(SEED, addr word 0)..., addr word n), port)
 *   hash = avalanche(mix(endpoint(src) + endpoint(dst), proto))
 * The sum makes it the same in both directions. Ports count for TCP, UDP and SCTP only,
 * and not for fragments (IPv4: MF set or an offset; IPv6: a fragment header): a fragment
 * hashes on its addresses and protocol, so all fragments of a datagram share a bucket
 * (with the fanout group's defrag flag, the default, IPv4 fragments are reassembled
 * before the program runs anyway). Packets that are neither IPv4 nor IPv6 go to bucket 0.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* Buckets of the indirection table: a power of two (the bucket is a mask of the hash). */
#define BUCKETS 256
#define MAX_VLAN_TAGS 4
#define MAX_V6_EXT_HEADERS 4
#define SEED 0x2545F491u

char LICENSE[] SEC("license") = "GPL";

/* Bucket -> worker, written by picket. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BUCKETS);
	__type(key, __u32);
	__type(value, __u32);
} picket_fanout_table SEC(".maps");

/* Entry 0: the number of workers (an out-of-range table entry falls back to
 * bucket % workers; 0 workers means 1). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} picket_fanout_config SEC(".maps");

static __always_inline __u32 mix(__u32 h, __u32 w)
{
	h ^= w;
	h *= 0x9E3779B1u;
	return h ^ (h >> 16);
}

static __always_inline __u32 avalanche(__u32 h)
{
	h ^= h >> 15;
	h *= 0x2C1B3C6Du;
	return h ^ (h >> 12);
}

static __always_inline int port_proto(__u8 proto)
{
	return proto == 6 || proto == 17 || proto == 132;
}

/* The bucket of the packet at the network header of `skb`. */
static __always_inline __u32 bucket_of(struct __sk_buff *skb)
{
	__u32 off = 0, proto_type = skb->protocol;
	__u16 type = (__u16)proto_type;
	__u32 src[4] = {}, dst[4] = {};
	__u32 words, es, ed, h;
	__u16 ports[2] = {};
	__u8 proto;
	int fragment = 0;

#pragma unroll
	for (int i = 0; i < MAX_VLAN_TAGS; i++) {
		if (type != bpf_htons(ETH_P_8021Q) && type != bpf_htons(ETH_P_8021AD))
			break;
		/* TCI (2 bytes), then the EtherType it carries. */
		if (bpf_skb_load_bytes(skb, off + 2, &type, 2) < 0)
			return 0;
		off += 4;
	}
	if (type == bpf_htons(ETH_P_IP)) {
		__u8 vihl;
		__u16 frag;
		if (bpf_skb_load_bytes(skb, off, &vihl, 1) < 0 || (vihl >> 4) != 4 || (vihl & 0xf) < 5)
			return 0;
		if (bpf_skb_load_bytes(skb, off + 6, &frag, 2) < 0 || bpf_skb_load_bytes(skb, off + 9, &proto, 1) < 0 ||
		    bpf_skb_load_bytes(skb, off + 12, &src[0], 4) < 0 || bpf_skb_load_bytes(skb, off + 16, &dst[0], 4) < 0)
			return 0;
		fragment = (frag & bpf_htons(0x3fff)) != 0;
		off += (vihl & 0xf) * 4;
		words = 1;
	} else if (type == bpf_htons(ETH_P_IPV6)) {
		__u8 vtc;
		if (bpf_skb_load_bytes(skb, off, &vtc, 1) < 0 || (vtc >> 4) != 6)
			return 0;
		if (bpf_skb_load_bytes(skb, off + 6, &proto, 1) < 0 || bpf_skb_load_bytes(skb, off + 8, src, 16) < 0 ||
		    bpf_skb_load_bytes(skb, off + 24, dst, 16) < 0)
			return 0;
		off += 40;
#pragma unroll
		for (int i = 0; i < MAX_V6_EXT_HEADERS; i++) {
			__u8 ext[2];
			if (proto == 44) {
				/* Fragment header: the protocol after it names the payload. */
				if (bpf_skb_load_bytes(skb, off, ext, 2) < 0)
					break;
				proto = ext[0];
				fragment = 1;
				break;
			}
			if (proto != 0 && proto != 43 && proto != 60)
				break;
			if (bpf_skb_load_bytes(skb, off, ext, 2) < 0)
				break;
			proto = ext[0];
			off += ((__u32)ext[1] + 1) * 8;
		}
		words = 4;
	} else {
		return 0;
	}
	if (!fragment && port_proto(proto) && bpf_skb_load_bytes(skb, off, ports, 4) < 0) {
		ports[0] = 0;
		ports[1] = 0;
	}
	if (fragment || !port_proto(proto)) {
		ports[0] = 0;
		ports[1] = 0;
	}
	es = SEED;
	ed = SEED;
#pragma unroll
	for (int i = 0; i < 4; i++) {
		if (i < words) {
			es = mix(es, src[i]);
			ed = mix(ed, dst[i]);
		}
	}
	es = mix(es, ports[0]);
	ed = mix(ed, ports[1]);
	h = avalanche(mix(es + ed, proto));
	return h & (BUCKETS - 1);
}

SEC("socket")
int picket_fanout(struct __sk_buff *skb)
{
	__u32 bucket = bucket_of(skb);
	__u32 key = 0, workers = 1;
	__u32 *n = bpf_map_lookup_elem(&picket_fanout_config, &key);
	__u32 *worker;

	if (n && *n > 0)
		workers = *n;
	worker = bpf_map_lookup_elem(&picket_fanout_table, &bucket);
	if (worker && *worker < workers)
		return *worker;
	return bucket % workers;
}
