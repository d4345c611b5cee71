#!/usr/bin/env python3
"""Flood memory benchmark: peak RSS of an offline run against the sum of the memory caps.

Builds five captures deterministically (raw struct packing, fixed seed) in a temporary
directory, runs `picket -r CAP -S rules/default.rules -l OUT` on each with small caps set
through `--set`, reads the peak RSS (`/usr/bin/time -v`, "Maximum resident set size") and
prints one table row per flood:

    flood | packets | peak RSS | sum of caps | engine baseline | peak <= caps + baseline + slack

The engine baseline is the peak RSS of the same command on a tiny benign capture (rules
compiled, tables preallocated). The slack is a stated constant (SLACK_MB, default 16 MiB)
for what no cap covers: allocator fragmentation, per-packet scratch, output buffers.

    python3 scripts/flood_rss.py [--picket target/release/picket] [--scale 1.0] [--keep DIR]

--scale multiplies the flow counts (0.1 for a quick run). The counters of each run
(stats at the end of the eve log) are summarised under the table for the caps involved.
"""

import argparse
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile

MB = 1 << 20
SLACK_MB = 16
CAPS = {
    "flow.memcap": 32 * MB,
    "stream.memcap": 32 * MB,
    "stream.reassembly.memcap": 32 * MB,
    "defrag.memcap": 32 * MB,
    "app-layer.protocols.http.memcap": 32 * MB,
}
COUNTERS = [
    "flow.memuse", "flow.memcap", "flow.emerg_mode_entered", "flow.emerg_mode_over", "flow.get_used",
    "http.memuse", "http.memcap", "http.memcap_bytes_refused", "tcp.reassembly_memuse",
    "tcp.segment_memcap_drop", "defrag.memuse",
]


class Pcap:
    """Ethernet pcap writer with a monotonic clock (1 µs per packet)."""

    def __init__(self, path):
        self.f = open(path, "wb")
        self.f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        self.t = 1_700_000_000 * 1_000_000
        self.count = 0

    def write(self, ip_packet):
        frame = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip_packet
        self.t += 1
        self.f.write(struct.pack("<IIII", self.t // 1_000_000, self.t % 1_000_000, len(frame), len(frame)))
        self.f.write(frame)
        self.count += 1

    def close(self):
        self.f.close()


def checksum(data):
    if len(data) % 2:
        data += b"\x00"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(src, dst, proto, payload, ident=0, frag=0):
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, frag, 64, proto, 0, src, dst)
    return hdr[:10] + struct.pack("!H", checksum(hdr)) + hdr[12:] + payload


def l4_checksum(src, dst, proto, segment):
    return checksum(src + dst + struct.pack("!BBH", 0, proto, len(segment)) + segment)


def tcp(src, dst, sport, dport, seq, ack, flags, payload=b""):
    hdr = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
    c = l4_checksum(src, dst, 6, hdr + payload)
    return ipv4(src, dst, 6, hdr[:16] + struct.pack("!H", c) + hdr[18:] + payload)


def udp(src, dst, sport, dport, payload):
    hdr = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0)
    c = l4_checksum(src, dst, 17, hdr + payload) or 0xFFFF
    return ipv4(src, dst, 17, hdr[:6] + struct.pack("!H", c) + payload)


SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01
SERVER = bytes([10, 0, 0, 1])


def client(i):
    return bytes([172, 16 + (i >> 16) % 16, (i >> 8) & 0xFF, i & 0xFF])


def handshake(p, c, sport, cseq, sseq):
    p.write(tcp(c, SERVER, sport, 80, cseq, 0, SYN))
    p.write(tcp(SERVER, c, 80, sport, sseq, cseq + 1, SYN | ACK))
    p.write(tcp(c, SERVER, sport, 80, cseq + 1, sseq + 1, ACK))


def syn_flood(p, n, rng):
    for i in range(n):
        p.write(tcp(client(i), SERVER, 1024 + rng.randrange(60000), 80, rng.getrandbits(32), 0, SYN))


def udp_flood(p, n, rng):
    for i in range(n):
        p.write(udp(client(i), SERVER, 1024 + rng.randrange(60000), 1 + i % 60000, b"x" * 64))


def ooo_flood(p, n, rng):
    """Flows with a handshake, then segments past a hole the sender never fills."""
    seg = b"o" * 1000
    for i in range(n):
        c, sport = client(i), 1024 + i % 60000
        cseq, sseq = rng.getrandbits(32), rng.getrandbits(32)
        handshake(p, c, sport, cseq, sseq)
        for k in range(1, 16, 2):  # every other segment: 8 holes per flow
            p.write(tcp(c, SERVER, sport, 80, cseq + 1 + k * 1000, sseq + 1, ACK | PSH, seg))


def frag_flood(p, n, rng):
    """First fragments (MF set, offset 0) of datagrams whose rest never comes."""
    body = b"f" * 1200
    for i in range(n):
        udp_part = struct.pack("!HHHH", 1024 + i % 60000, 53, 8 + 4000, 0) + body
        p.write(ipv4(client(i), SERVER, 17, udp_part, ident=i & 0xFFFF, frag=0x2000))


def http_upload_flood(p, n, rng, body_len):
    """POSTs with large bodies, acked by the server, never answered."""
    chunk = b"B" * 1400
    for i in range(n):
        c, sport = client(i), 1024 + i % 60000
        cseq, sseq = rng.getrandbits(32), rng.getrandbits(32)
        handshake(p, c, sport, cseq, sseq)
        head = b"POST /upload HTTP/1.1\r\nHost: example\r\nContent-Length: %d\r\n\r\n" % body_len
        seq = cseq + 1
        p.write(tcp(c, SERVER, sport, 80, seq, sseq + 1, ACK | PSH, head))
        seq += len(head)
        sent = 0
        while sent < body_len:
            data = chunk[: min(len(chunk), body_len - sent)]
            p.write(tcp(c, SERVER, sport, 80, seq, sseq + 1, ACK | PSH, data))
            seq += len(data)
            sent += len(data)
            if sent % (8 * len(chunk)) == 0 or sent == body_len:
                p.write(tcp(SERVER, c, 80, sport, sseq + 1, seq, ACK))


def benign(p, rng):
    c = client(1)
    handshake(p, c, 40000, 1000, 5000)
    req = b"GET / HTTP/1.1\r\nHost: example\r\n\r\n"
    p.write(tcp(c, SERVER, 40000, 80, 1001, 5001, ACK | PSH, req))
    resp = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    p.write(tcp(SERVER, c, 80, 40000, 5001, 1001 + len(req), ACK | PSH, resp))
    p.write(tcp(c, SERVER, 40000, 80, 1001 + len(req), 5001 + len(resp), ACK))


def build(directory, scale):
    rng = random.Random(16)
    s = lambda n: max(1, int(n * scale))
    floods = [
        ("benign", lambda p: benign(p, rng)),
        ("syn", lambda p: syn_flood(p, s(400_000), rng)),
        ("udp", lambda p: udp_flood(p, s(400_000), rng)),
        ("tcp-ooo", lambda p: ooo_flood(p, s(40_000), rng)),
        ("fragments", lambda p: frag_flood(p, s(100_000), rng)),
        ("http-upload", lambda p: http_upload_flood(p, s(800), rng, 300_000)),
    ]
    caps = []
    for name, gen in floods:
        path = os.path.join(directory, name + ".pcap")
        p = Pcap(path)
        gen(p)
        p.close()
        caps.append((name, path, p.count))
    return caps


def run(picket, pcap, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    cmd = ["/usr/bin/time", "-v", picket, "-r", pcap, "-S", "rules/default.rules", "-l", out_dir]
    for key, value in CAPS.items():
        cmd += ["--set", f"{key}={value}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    if proc.returncode != 0 or not m:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return int(m.group(1)) * 1024, counters(out_dir)


def counters(out_dir):
    """The last stats record of eve.json, flattened to dotted names."""
    last = None
    try:
        with open(os.path.join(out_dir, "eve.json")) as f:
            for line in f:
                if '"event_type":"stats"' in line.replace(" ", ""):
                    last = json.loads(line)["stats"]
    except OSError:
        return {}
    flat = {}

    def walk(prefix, node):
        for k, v in node.items():
            name = f"{prefix}.{k}" if prefix else k
            if isinstance(v, dict):
                walk(name, v)
            else:
                flat[name] = v

    walk("", last or {})
    return flat


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--picket", default="target/release/picket")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--keep", help="build the captures and outputs here and keep them")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="flood_rss.")
    os.makedirs(work, exist_ok=True)
    try:
        captures = build(work, args.scale)
        results = [(name, pkts, *run(args.picket, path, os.path.join(work, "out-" + name)))
                   for name, path, pkts in captures]
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    baseline = results[0][2]
    cap_sum = sum(CAPS.values())
    print(f"caps: {', '.join(f'{k}={v // MB}MiB' for k, v in CAPS.items())}; slack {SLACK_MB} MiB")
    print(f"{'flood':<12} {'packets':>9} {'peak RSS':>10} {'sum caps':>9} {'baseline':>9}  within")
    for name, pkts, rss, _ in results[1:]:
        ok = rss <= cap_sum + baseline + SLACK_MB * MB
        print(f"{name:<12} {pkts:>9} {rss / MB:>8.1f}M {cap_sum / MB:>8.0f}M {baseline / MB:>8.1f}M  {'yes' if ok else 'NO'}")
    print()
    for name, _, _, c in results[1:]:
        shown = ", ".join(f"{k}={c[k]}" for k in COUNTERS if c.get(k))
        print(f"{name}: {shown or '(no stats record)'}")


if __name__ == "__main__":
    main()
