#!/usr/bin/env python3
"""gen_skewed.py - a seeded generator of skewed captures for testing load-aware dispatch.

Real traffic is not spread evenly over flows: a few bulk transfers or media streams carry
most of the packets, and a few popular servers take most of the connections. A symmetric
flow hash then puts the heavy flows on whichever workers they hash to, and those workers
saturate while the others idle. This script writes captures with exactly that shape, so
picket's dispatch policies can be compared on them offline and replayed live.

What the capture holds (classic pcap, Ethernet, microsecond timestamps):
  * heavy flows: --heavy-tcp long TCP bulk downloads (one HTTP/1.1 GET answered by a large
    body in MSS-sized segments, the client ACKing every second segment) and --heavy-udp
    RTP-like UDP streams. Together they carry --heavy-share of all packets, split by
    --heavy-weights (explicit, e.g. "4,2,1,1") or a Zipf law (--heavy-zipf). Their packets
    are spread over the whole capture, interleaved with everything else.
  * hot servers: --hot-servers addresses receive --hot-share of the normal flows (DNS
    included: a busy resolver is a hot server too); the rest go to a large server pool.
  * the normal mix: short DNS query/answer pairs over UDP, HTTP/1.1 keep-alive
    connections (some with the curl and Go-http-client user agents that ET Open alerts
    on), TLS ClientHello with SNI + ServerHello + encrypted records, and ICMP echo;
    --ipv6 of the normal flows use IPv6. --inject-rate puts content that picket's bundled
    rules (rules/default.rules) alert on into that share of the HTTP connections.

Every TCP connection is consistent (three-way handshake with MSS/SACK/timestamp/window
scale options, exact seq/ack numbers, timestamps that only grow, FIN teardown), and every
IPv4, IPv6, TCP, UDP and ICMP checksum is correct, so flow tracking, reassembly and the
app-layer parsers see no anomalies. The output depends only on the arguments: the same
seed and arguments give a byte-identical file. Only the Python standard library is used.

A JSON summary (packets, flows, top-flow shares, per-protocol counts) goes to stdout and
to OUT.json.

Example:
  python3 scripts/gen_skewed.py -o skewed.pcap --packets 1000000 --seed 7
"""

import argparse
import heapq
import ipaddress
import json
import math
import random
import struct
import sys
import time

VERSION = "1.0"

# First capture timestamp (2024-01-02T03:04:05Z): fixed so that output is reproducible.
EPOCH = 1704164645

ETH_IPV4 = b"\x08\x00"
ETH_IPV6 = b"\x86\xdd"
PROTO_ICMP, PROTO_TCP, PROTO_UDP, PROTO_ICMPV6 = 1, 6, 17, 58

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10

# Payload per segment with the 12-byte timestamp option: 1500 - 20 - 32 (IPv4) or
# 1500 - 40 - 32 (IPv6).
MSS4 = 1448
MSS6 = 1428


# ---------------------------------------------------------------------------------------
# Internet checksum. The 16-bit ones'-complement sum of a byte string equals the string
# read as one big-endian integer modulo 0xFFFF (because 0x10000 = 1 mod 0xFFFF), which
# Python computes in C: much faster than summing 16-bit words in a loop.
# ---------------------------------------------------------------------------------------
def ones_sum(data):
    """Ones'-complement sum of data (padded to an even length) modulo 0xFFFF."""
    value = int.from_bytes(data, "big")
    if len(data) & 1:
        value <<= 8
    return value % 0xFFFF


def checksum_of(total):
    """Checksum field for a running sum: ones'-complement of the folded sum.

    A folded sum of 0 stands for 0xFFFF here (the data is never all zeroes because the
    pseudo-header holds addresses and the protocol), whose complement is 0.
    """
    total %= 0xFFFF
    if total == 0:
        return 0
    return 0xFFFF - total


# ---------------------------------------------------------------------------------------
# Addresses and framing
# ---------------------------------------------------------------------------------------
class Host:
    """An endpoint: IPv4 and IPv6 address and a MAC."""

    __slots__ = ("ip4", "ip6", "mac")

    def __init__(self, ip4, ip6, mac):
        self.ip4, self.ip6, self.mac = ip4, ip6, mac


def client_host(rng, index):
    """Clients sit in 10.0.0.0/8 (inside the default $HOME_NET) and fd00::/8 (outside it:
    the default $HOME_NET lists IPv4 ranges only, so rules with $HOME_NET skip IPv6 flows)."""
    # 250 hosts (.2 to .251) per /24, so every client index has its own address.
    net, host = divmod(index, 250)
    ip4 = bytes((10, (net >> 8) & 0x3F, net & 0xFF, 2 + host))
    ip6 = bytes.fromhex("fd00000000000001") + struct.pack("!Q", rng.getrandbits(64))
    mac = b"\x02\x00" + ip4
    return Host(ip4, ip6, mac)


# Public first octets (no private, loopback, multicast or documentation ranges), so that
# servers are $EXTERNAL_NET for the rules.
PUBLIC_OCTETS = (13, 18, 23, 31, 34, 45, 52, 54, 64, 69, 77, 81, 85, 91, 93, 104, 129, 142,
                 151, 157, 162, 176, 185, 188, 195, 199, 204, 208, 212, 217)


def server_host(rng):
    first = rng.choice(PUBLIC_OCTETS)
    ip4 = bytes((first, rng.randrange(256), rng.randrange(256), rng.randrange(1, 255)))
    ip6 = bytes.fromhex("2a0%x" % rng.randrange(1, 16)) + rng.randbytes(14)
    return Host(ip4, ip6, None)


ROUTER_MAC = bytes.fromhex("00005e0001fe")


class Wire:
    """Frames packets of one flow (one 5-tuple), in both directions.

    Keeps what is fixed per flow (Ethernet headers, addresses, the pseudo-header sum,
    TTLs, the IPv4 identification counters) so that a packet costs two struct.pack calls
    and two checksums.
    """

    __slots__ = ("v6", "proto", "l2", "src", "dst", "pseudo_sum", "ttl", "ipid", "csum_off")

    def __init__(self, rng, v6, client, server, proto):
        self.v6 = v6
        self.proto = proto
        ethertype = ETH_IPV6 if v6 else ETH_IPV4
        # Index 0: client to server, 1: server to client.
        self.l2 = (ROUTER_MAC + client.mac + ethertype, client.mac + ROUTER_MAC + ethertype)
        c, s = (client.ip6, server.ip6) if v6 else (client.ip4, server.ip4)
        self.src = (c, s)
        self.dst = (s, c)
        # The address part of the pseudo-header is the same both ways.
        self.pseudo_sum = ones_sum(c + s) + proto
        self.ttl = (64 if rng.random() < 0.7 else 128, rng.choice((48, 52, 56, 57, 58, 116, 118, 121)))
        self.ipid = [rng.randrange(65536), rng.randrange(65536)]
        self.csum_off = {PROTO_TCP: 16, PROTO_UDP: 6}.get(proto, 2)

    def frame(self, direction, l4_header, payload):
        """One frame; l4_header carries a zero checksum field that is filled in here."""
        l4_len = len(l4_header) + len(payload)
        total = self.pseudo_sum + l4_len + ones_sum(l4_header)
        if payload:
            total += ones_sum(payload)
        csum = checksum_of(total)
        if csum == 0 and self.proto == PROTO_UDP:
            csum = 0xFFFF  # UDP sends a computed zero as all ones
        off = self.csum_off
        l4 = l4_header[:off] + struct.pack("!H", csum) + l4_header[off + 2:]
        if self.v6:
            ip = struct.pack("!IHBB", 0x60000000, l4_len, self.proto, self.ttl[direction])
            ip += self.src[direction] + self.dst[direction]
        else:
            ipid = self.ipid[direction] = (self.ipid[direction] + 1) & 0xFFFF
            head = struct.pack("!BBHHHBB", 0x45, 0, 20 + l4_len, ipid, 0x4000, self.ttl[direction], self.proto)
            addrs = self.src[direction] + self.dst[direction]
            hsum = checksum_of(ones_sum(head) + ones_sum(addrs))
            ip = head + struct.pack("!H", hsum) + addrs
        return b"".join((self.l2[direction], ip, l4, payload))


def icmp_frame(wire, direction, icmp_type, ident, seq, data):
    """ICMP (v4) or ICMPv6 echo; ICMPv4's checksum has no pseudo-header."""
    header = struct.pack("!BBHHH", icmp_type, 0, 0, ident, seq)
    if wire.v6:
        return wire.frame(direction, header, data)
    csum = checksum_of(ones_sum(header) + ones_sum(data))
    l4 = header[:2] + struct.pack("!H", csum) + header[4:]
    head = struct.pack("!BBHHHBB", 0x45, 0, 20 + len(l4) + len(data),
                       wire.ipid[direction], 0, wire.ttl[direction], PROTO_ICMP)
    wire.ipid[direction] = (wire.ipid[direction] + 1) & 0xFFFF
    addrs = wire.src[direction] + wire.dst[direction]
    ip = head + struct.pack("!H", checksum_of(ones_sum(head) + ones_sum(addrs))) + addrs
    return b"".join((wire.l2[direction], ip, l4, data))


# ---------------------------------------------------------------------------------------
# TCP
# ---------------------------------------------------------------------------------------
class Tcp:
    """One TCP connection's sequence space, timestamps and windows.

    Direction 0 is the client, 1 the server. Every segment carries ACK with the peer's
    next expected byte (except the first SYN) and the timestamp option; a receiver never
    has more than two segments unacknowledged, far inside the advertised window.
    """

    __slots__ = ("wire", "ports", "seq", "tsval", "win", "mss")

    def __init__(self, rng, wire, client_port, server_port):
        self.wire = wire
        self.ports = ((client_port, server_port), (server_port, client_port))
        self.seq = [rng.getrandbits(32), rng.getrandbits(32)]
        self.tsval = [rng.getrandbits(31), rng.getrandbits(31)]
        # Window field after the handshake (scaled by 2^7): 501 * 128 is about 64 KiB.
        self.win = (rng.choice((501, 502, 1024, 2048)), rng.choice((235, 501, 1026, 8192)))
        self.mss = MSS6 if wire.v6 else MSS4

    def segment(self, direction, flags, payload=b""):
        peer = 1 - direction
        self.tsval[direction] = (self.tsval[direction] + 3) & 0xFFFFFFFF
        if flags & SYN:
            options = (struct.pack("!BBH", 2, 4, self.mss + 12) + b"\x04\x02"
                       + struct.pack("!BBII", 8, 10, self.tsval[direction],
                                     self.tsval[peer] if flags & ACK else 0)
                       + b"\x01\x03\x03\x07")
            window = 64240 if direction == 0 else 65160
        else:
            options = b"\x01\x01" + struct.pack("!BBII", 8, 10, self.tsval[direction], self.tsval[peer])
            window = self.win[direction]
        ack = self.seq[peer] if flags & ACK else 0
        sport, dport = self.ports[direction]
        header = struct.pack("!HHIIBBHHH", sport, dport, self.seq[direction], ack,
                             (20 + len(options)) << 2, flags, window, 0, 0) + options
        self.seq[direction] = (self.seq[direction] + len(payload) + (1 if flags & (SYN | FIN) else 0)) & 0xFFFFFFFF
        return self.wire.frame(direction, header, payload)


class Clock:
    """Packet times of one flow: only moves forward."""

    __slots__ = ("t",)

    def __init__(self, t):
        self.t = t


def tcp_open(tcp, clock, rtt, out):
    out.append((clock.t, tcp.segment(0, SYN)))
    clock.t += rtt / 2
    out.append((clock.t, tcp.segment(1, SYN | ACK)))
    clock.t += rtt / 2
    out.append((clock.t, tcp.segment(0, ACK)))


def tcp_send(tcp, clock, rtt, direction, data, out):
    """Sends data as MSS segments, PSH on the last; the receiver ACKs every second
    segment and the last one."""
    mss = tcp.mss
    n = len(data)
    off = 0
    count = 0
    while off < n:
        chunk = data[off:off + mss]
        off += len(chunk)
        last = off >= n
        clock.t += 0.00012
        out.append((clock.t, tcp.segment(direction, ACK | PSH if last else ACK, chunk)))
        count += 1
        if count % 2 == 0 or last:
            out.append((clock.t + 0.00005, tcp.segment(1 - direction, ACK)))
    clock.t += rtt / 2


def tcp_close(tcp, clock, rtt, first, out):
    """FIN from `first`, FIN+ACK from the peer, final ACK."""
    out.append((clock.t, tcp.segment(first, FIN | ACK)))
    clock.t += rtt / 2
    out.append((clock.t, tcp.segment(1 - first, FIN | ACK)))
    clock.t += rtt / 2
    out.append((clock.t, tcp.segment(first, ACK)))


# ---------------------------------------------------------------------------------------
# Content
# ---------------------------------------------------------------------------------------
WORDS = ("account api app archive blog cart cloud config content data download edit feed "
         "file forum help home image item list login media news order page photo policy "
         "portal post price product profile report search service shop static status store "
         "stream support system update user video view weather world").split()
TLDS = ("com", "com", "com", "net", "org", "io", "de", "fr", "nl", "co.uk", "jp")
BROWSERS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36",
    "okhttp/4.12.0",
)
# ET Open alerts on these two outbound (sids 2013028 and 2024897).
TOOL_AGENTS = ("curl/7.88.1", "Go-http-client/1.1")
SERVER_NAMES = ("nginx", "nginx/1.24.0", "Apache/2.4.58 (Ubuntu)", "cloudflare", "openresty")
TEXT_TYPES = ("text/html; charset=utf-8", "application/json", "text/css", "application/javascript")


def domain(rng):
    sub = rng.choice(("www", "www", "api", "cdn", "static", "m", "img"))
    return "%s.%s%s.%s" % (sub, rng.choice(WORDS), rng.choice(WORDS), rng.choice(TLDS))


class Pool:
    """Bodies are cut from fixed pools of text and random bytes."""

    def __init__(self, rng):
        words = [rng.choice(WORDS) for _ in range(60000)]
        text = " ".join(words).encode()
        self.text = text * 4
        self.binary = rng.randbytes(1 << 20)

    def take(self, rng, size, binary):
        pool = self.binary if binary else self.text
        if size >= len(pool):
            return (pool * (size // len(pool) + 1))[:size]
        off = rng.randrange(len(pool) - size)
        return pool[off:off + size]


def lognormal(rng, mu, sigma, lo, hi):
    return int(min(hi, max(lo, rng.lognormvariate(mu, sigma))))


# ---------------------------------------------------------------------------------------
# Normal flows: built whole when they start (a few to a few hundred packets each).
# Each returns a list of (time, frame).
# ---------------------------------------------------------------------------------------
class Stats:
    def __init__(self):
        self.flows = {}
        self.http_tx = 0
        self.injected = {}
        self.tool_agents = {a: 0 for a in TOOL_AGENTS}
        self.ipv6_flows = 0
        self.hot_flows = 0

    def flow(self, kind):
        self.flows[kind] = self.flows.get(kind, 0) + 1


INJECTIONS = ("cgi_id", "uid0_response", "dosexec")


def http_exchange(rng, pool, host, stats, inject):
    """One HTTP/1.1 request and its response, as bytes; `inject` names the rule-triggering
    content to carry, if any."""
    r = rng.random()
    if r < 0.05:
        agent = TOOL_AGENTS[0]
    elif r < 0.10:
        agent = TOOL_AGENTS[1]
    else:
        agent = rng.choice(BROWSERS)
    if agent in stats.tool_agents:
        stats.tool_agents[agent] += 1
    if inject == "cgi_id":
        # picket sid 9000002: a shell separator and `id` in a CGI query.
        path = "/cgi-bin/%s.cgi?host=127.0.0.1;id" % rng.choice(WORDS)
    else:
        path = "/" + "/".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 4)))
        if rng.random() < 0.3:
            path += "?%s=%d" % (rng.choice(WORDS), rng.randrange(100000))
    request = ("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\nAccept: */*\r\n"
               "Accept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\n\r\n" % (path, host, agent)).encode()
    binary = rng.random() < 0.4
    size = lognormal(rng, 8.0, 1.6, 60, 300000)
    if inject == "uid0_response":
        # picket sid 9000003 (and ET sid 2100498): output of `id` for root.
        body = b"uid=0(root) gid=0(root) groups=0(root)\n"
        ctype = "text/plain"
    elif inject == "dosexec":
        # picket sid 9000030: an executable content type.
        body = b"MZ\x90\x00\x03\x00\x00\x00" + pool.take(rng, size, True)
        ctype = "application/x-dosexec"
    else:
        body = pool.take(rng, size, binary)
        ctype = "application/octet-stream" if binary else rng.choice(TEXT_TYPES)
    if inject:
        stats.injected[inject] = stats.injected.get(inject, 0) + 1
    head = ("HTTP/1.1 200 OK\r\nServer: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
            "Cache-Control: max-age=600\r\nConnection: keep-alive\r\n\r\n"
            % (rng.choice(SERVER_NAMES), ctype, len(body))).encode()
    stats.http_tx += 1
    return request, head + body


def start_tcp(g, t, server_port, out):
    """A new TCP flow to server_port, opened at time t: its Tcp, clock and RTT."""
    wire, cport = g.endpoints(PROTO_TCP)
    tcp = Tcp(g.rng, wire, cport, server_port)
    clock = Clock(t)
    rtt = g.rtt()
    tcp_open(tcp, clock, rtt, out)
    return tcp, clock, rtt


def build_http(g, t, out):
    rng = g.rng
    tcp, clock, rtt = start_tcp(g, t, 80, out)
    host = domain(rng)
    # An injected connection carries that one transaction only: the bundled rules anchor
    # their content at the start of the response, so it must open the stream.
    inject = rng.choice(INJECTIONS) if rng.random() < g.inject_rate else None
    exchanges = 1 if inject else 1 + (rng.random() < 0.3) + (rng.random() < 0.15)
    for _ in range(exchanges):
        request, response = http_exchange(rng, g.pool, host, g.stats, inject)
        tcp_send(tcp, clock, rtt, 0, request, out)
        tcp_send(tcp, clock, rtt, 1, response, out)
        clock.t += rng.random() * 0.05
    tcp_close(tcp, clock, rtt, 0 if rng.random() < 0.6 else 1, out)
    g.stats.flow("http")


def tls_client_hello(rng, sni):
    name = sni.encode()
    server_name = struct.pack("!HBH", len(name) + 3, 0, len(name)) + name
    ext = []

    def add(kind, body):
        ext.append(struct.pack("!HH", kind, len(body)) + body)

    add(0, server_name)
    add(10, struct.pack("!H", 6) + b"\x00\x1d\x00\x17\x00\x18")  # supported_groups
    add(11, b"\x01\x00")  # ec_point_formats
    add(13, struct.pack("!H", 8) + b"\x04\x03\x08\x04\x04\x01\x05\x03")  # signature_algorithms
    alpn = b"\x02h2\x08http/1.1"
    add(16, struct.pack("!H", len(alpn)) + alpn)
    add(43, b"\x04\x03\x04\x03\x03")  # supported_versions: TLS 1.3, 1.2
    add(51, struct.pack("!HHH", 36, 0x001D, 32) + rng.randbytes(32))  # key_share x25519
    extensions = b"".join(ext)
    suites = b"\x13\x01\x13\x02\x13\x03\xc0\x2b\xc0\x2f\xc0\x2c\xc0\x30"
    body = (b"\x03\x03" + rng.randbytes(32) + b"\x20" + rng.randbytes(32)
            + struct.pack("!H", len(suites)) + suites + b"\x01\x00"
            + struct.pack("!H", len(extensions)) + extensions)
    handshake = b"\x01" + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x01" + struct.pack("!H", len(handshake)) + handshake


def tls_server_hello(rng, session_id):
    extensions = (struct.pack("!HHH", 43, 2, 0x0304)
                  + struct.pack("!HHHH", 51, 36, 0x001D, 32) + rng.randbytes(32))
    body = (b"\x03\x03" + rng.randbytes(32) + b"\x20" + session_id + b"\x13\x01\x00"
            + struct.pack("!H", len(extensions)) + extensions)
    handshake = b"\x02" + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x03" + struct.pack("!H", len(handshake)) + handshake


def tls_records(rng, size):
    """Encrypted application data split into records of at most 16 KiB."""
    parts = []
    while size > 0:
        n = min(size, 16384 + 17)
        parts.append(b"\x17\x03\x03" + struct.pack("!H", n) + rng.randbytes(n))
        size -= n
    return b"".join(parts)


def build_tls(g, t, out):
    rng = g.rng
    tcp, clock, rtt = start_tcp(g, t, 443, out)
    # picket sid 9000021 alerts on this name.
    sni = "secure.example.org" if rng.random() < 0.02 else domain(rng)
    hello = tls_client_hello(rng, sni)
    tcp_send(tcp, clock, rtt, 0, hello, out)
    session_id = hello[44:76]
    flight = (tls_server_hello(rng, session_id) + b"\x14\x03\x03\x00\x01\x01"
              + tls_records(rng, rng.randrange(2500, 4500)))
    tcp_send(tcp, clock, rtt, 1, flight, out)
    tcp_send(tcp, clock, rtt, 0, b"\x14\x03\x03\x00\x01\x01" + tls_records(rng, 74), out)
    for _ in range(rng.randrange(1, 4)):
        tcp_send(tcp, clock, rtt, 0, tls_records(rng, rng.randrange(80, 900)), out)
        tcp_send(tcp, clock, rtt, 1, tls_records(rng, lognormal(rng, 8.0, 1.4, 100, 200000)), out)
    tcp_close(tcp, clock, rtt, 0 if rng.random() < 0.6 else 1, out)
    g.stats.flow("tls")


def dns_name(name):
    return b"".join(bytes((len(label),)) + label.encode() for label in name.split(".")) + b"\x00"


def build_dns(g, t, out):
    rng = g.rng
    wire, cport = g.endpoints(PROTO_UDP)
    clock = Clock(t)
    # picket sid 9000020 alerts on queries for example.com.
    name = "www.example.com" if rng.random() < 0.02 else domain(rng)
    qtype = 28 if wire.v6 and rng.random() < 0.6 else 1
    for _ in range(1 + (rng.random() < 0.2)):
        ident = rng.randrange(65536)
        question = dns_name(name) + struct.pack("!HH", qtype, 1)
        query = struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 1) + question
        query += b"\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00"  # EDNS0 OPT record
        answers = rng.randrange(1, 4)
        rdata = [rng.randbytes(16 if qtype == 28 else 4) for _ in range(answers)]
        records = b"".join(struct.pack("!HHHIH", 0xC00C, qtype, 1, rng.randrange(30, 3600), len(r)) + r
                           for r in rdata)
        answer = struct.pack("!HHHHHH", ident, 0x8180, 1, answers, 0, 0) + question + records
        udp = struct.pack("!HHHH", cport, 53, 8 + len(query), 0)
        out.append((clock.t, wire.frame(0, udp, query)))
        clock.t += g.rtt()
        udp = struct.pack("!HHHH", 53, cport, 8 + len(answer), 0)
        out.append((clock.t, wire.frame(1, udp, answer)))
        clock.t += rng.random() * 0.01
        if qtype == 1 and wire.v6:
            qtype = 28
    g.stats.flow("dns")


def build_icmp(g, t, out):
    rng = g.rng
    wire, _ = g.endpoints(PROTO_ICMPV6 if rng.random() < g.ipv6 else PROTO_ICMP)
    clock = Clock(t)
    ident = rng.randrange(1, 65536)
    data = struct.pack("!Q", rng.getrandbits(64)) + bytes(range(16, 56))
    request, reply = (128, 129) if wire.v6 else (8, 0)
    for seq in range(1, 1 + rng.randrange(1, 5)):
        out.append((clock.t, icmp_frame(wire, 0, request, ident, seq, data)))
        out.append((clock.t + g.rtt(), icmp_frame(wire, 1, reply, ident, seq, data)))
        clock.t += 1.0
    g.stats.flow("icmp")


# Share of normal flows per kind (by flow count).
NORMAL_MIX = (("dns", 0.46, build_dns), ("http", 0.25, build_http),
              ("tls", 0.25, build_tls), ("icmp", 0.04, build_icmp))


# ---------------------------------------------------------------------------------------
# Heavy flows: generators that yield (time, frame) lazily, spread evenly over the capture.
# ---------------------------------------------------------------------------------------
def heavy_tcp_segments(budget):
    """Data segments S such that 7 + S + ceil(S/2) <= budget (handshake 3, GET 1,
    segments S, client ACKs ceil(S/2), teardown 3)."""
    s = max(1, (2 * (budget - 7)) // 3)
    while s > 1 and 7 + s + (s + 1) // 2 > budget:
        s -= 1
    return s


def heavy_tcp(g, budget, start, end):
    """A bulk HTTP download of exactly 7 + S + ceil(S/2) packets, spread over [start, end]."""
    rng = g.rng
    wire, cport = g.endpoints(PROTO_TCP, heavy=True)
    tcp = Tcp(rng, wire, cport, 80)
    segments = heavy_tcp_segments(budget)
    count = 7 + segments + (segments + 1) // 2
    step = (end - start) / count
    host = domain(rng)
    path = "/%s/%s-%d.%s" % (rng.choice(WORDS), rng.choice(WORDS), rng.randrange(1000),
                             rng.choice(("iso", "mp4", "tar.gz", "bin")))
    request = ("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\nAccept: */*\r\n"
               "Connection: keep-alive\r\n\r\n" % (path, host, rng.choice(BROWSERS))).encode()
    mss = tcp.mss
    # Body length so that header + body fill exactly `segments` segments (the header's
    # length depends on the Content-Length digits: iterate until it settles).
    total_bytes = (segments - 1) * mss + rng.randrange(1, mss)
    server = rng.choice(SERVER_NAMES)
    length = 0
    for attempt in range(12):
        head = ("HTTP/1.1 200 OK\r\nServer: %s\r\nContent-Type: application/octet-stream\r\n"
                "Content-Length: %d\r\nAccept-Ranges: bytes\r\nConnection: keep-alive\r\n\r\n"
                % (server, length)).encode()
        if len(head) + length == total_bytes:
            break
        if attempt % 3 == 2:
            # Oscillating at a power of ten (9999 <-> 10000): one byte less settles it.
            total_bytes -= 1
        length = max(0, total_bytes - len(head))
    pool = g.pool.binary
    plen = len(pool)
    stats = g.stats
    stats.flow("heavy_tcp")
    stats.http_tx += 1

    i = 0

    def at():
        # Even spacing with jitter smaller than the step keeps the flow's order.
        return start + (i + rng.random() * 0.5) * step

    for direction, flags in ((0, SYN), (1, SYN | ACK), (0, ACK)):
        yield at(), tcp.segment(direction, flags)
        i += 1
    yield at(), tcp.segment(0, ACK | PSH, request)
    i += 1
    sent = 0
    body_off = rng.randrange(plen)
    for n in range(segments):
        if n == 0:
            size = min(mss, len(head) + length)
            body = head + pool[:size - len(head)] if size > len(head) else head[:size]
        else:
            size = min(mss, len(head) + length - sent)
            if body_off + size > plen:
                body_off = 0
            body = pool[body_off:body_off + size]
            body_off += size
        sent += size
        last = n == segments - 1
        yield at(), tcp.segment(1, ACK | PSH if last else ACK, body)
        i += 1
        if n % 2 == 1 or last:
            yield at(), tcp.segment(0, ACK)
            i += 1
    yield at(), tcp.segment(0, FIN | ACK)
    i += 1
    yield at(), tcp.segment(1, FIN | ACK)
    i += 1
    yield at(), tcp.segment(0, ACK)


def heavy_udp(g, budget, start, end):
    """An RTP-like media stream (both directions on one 5-tuple) of exactly `budget`
    packets spread over [start, end]."""
    rng = g.rng
    wire, cport = g.endpoints(PROTO_UDP, heavy=True)
    sport = 2 * rng.randrange(8000, 30000)
    ports = ((cport & ~1, sport), (sport, cport & ~1))
    # G.711 voice (160 bytes per 20 ms) or a video stream with larger payloads.
    video = rng.random() < 0.5
    ptype = 96 if video else 0
    ssrc = (rng.getrandbits(32), rng.getrandbits(32))
    seq = [rng.randrange(65536), rng.randrange(65536)]
    ts = [rng.getrandbits(32), rng.getrandbits(32)]
    back_share = rng.uniform(0.1, 0.5)
    step = (end - start) / budget
    noise = g.pool.binary
    g.stats.flow("heavy_udp")
    for i in range(budget):
        d = 1 if rng.random() < back_share else 0
        size = rng.randrange(900, 1200) if video else 160
        off = rng.randrange(len(noise) - size)
        rtp = struct.pack("!BBHII", 0x80, ptype, seq[d], ts[d], ssrc[d]) + noise[off:off + size]
        seq[d] = (seq[d] + 1) & 0xFFFF
        ts[d] = (ts[d] + (3000 if video else 160)) & 0xFFFFFFFF
        udp = struct.pack("!HHHH", ports[d][0], ports[d][1], 8 + len(rtp), 0)
        yield start + (i + rng.random() * 0.5) * step, wire.frame(d, udp, rtp)


def heavy_weights(args, count):
    if args.heavy_weights:
        weights = [float(w) for w in args.heavy_weights.split(",") if w.strip()]
        if len(weights) < count:
            weights += [weights[-1]] * (count - len(weights))
        weights = weights[:count]
        if any(w <= 0 for w in weights):
            raise SystemExit("gen_skewed: --heavy-weights must be positive numbers")
    else:
        weights = [1.0 / (i + 1) ** args.heavy_zipf for i in range(count)]
    return weights


# ---------------------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------------------
class Generator:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        rng = self.rng
        self.pool = Pool(rng)
        self.stats = Stats()
        self.ipv6 = args.ipv6
        self.inject_rate = args.inject_rate
        self.clients = [client_host(rng, i) for i in range(args.clients)]
        self.servers = [server_host(rng) for _ in range(args.servers)]
        self.hot = [server_host(rng) for _ in range(args.hot_servers)]
        # Hot servers are not equally hot either: Zipf-like among themselves.
        self.hot_cum = []
        acc = 0.0
        for i in range(len(self.hot)):
            acc += 1.0 / (i + 1)
            self.hot_cum.append(acc)
        # Next ephemeral port per client, so that no two flows share a 5-tuple.
        self.next_port = [rng.randrange(32768, 61000) for _ in self.clients]
        self.flow_packets = []  # (packets, kind) of heavy flows, for the summary

    def rtt(self):
        return self.rng.uniform(0.002, 0.06)

    def endpoints(self, proto, heavy=False):
        """A Wire for a new flow and the client's next ephemeral port."""
        rng = self.rng
        index = rng.randrange(len(self.clients))
        client = self.clients[index]
        if not heavy and self.hot and rng.random() < self.args.hot_share:
            x = rng.random() * self.hot_cum[-1]
            k = 0
            while self.hot_cum[k] < x:
                k += 1
            server = self.hot[k]
            self.stats.hot_flows += 1
        else:
            server = rng.choice(self.servers)
        if proto == PROTO_ICMPV6:
            v6 = True
        elif proto == PROTO_ICMP:
            v6 = False
        else:
            v6 = rng.random() < self.ipv6
        if v6:
            self.stats.ipv6_flows += 1
        port = self.next_port[index]
        self.next_port[index] = 32768 if port >= 60999 else port + 1
        return Wire(rng, v6, client, server, proto), port

    def run(self, write):
        args = self.args
        rng = self.rng
        total = args.packets
        duration = args.duration
        count = args.heavy_tcp + args.heavy_udp
        heap = []
        tie = 0
        heavy_total = 0
        if count:
            weights = heavy_weights(args, count)
            kinds = ["tcp"] * args.heavy_tcp + ["udp"] * args.heavy_udp
            rng.shuffle(kinds)
            budget_all = int(round(args.heavy_share * total))
            wsum = sum(weights)
            for weight, kind in zip(weights, kinds):
                budget = max(12, int(budget_all * weight / wsum))
                start = rng.uniform(0, 0.03 * duration)
                end = duration * rng.uniform(0.95, 0.99)
                if kind == "tcp":
                    segments = heavy_tcp_segments(budget)
                    budget = 7 + segments + (segments + 1) // 2
                    flow = heavy_tcp(self, budget, start, end)
                else:
                    flow = heavy_udp(self, budget, start, end)
                heavy_total += budget
                self.flow_packets.append((budget, "heavy_" + kind))
                t, frame = next(flow)
                heapq.heappush(heap, (t, tie, frame, flow))
                tie += 1
        normal_budget = max(0, total - heavy_total)

        # Normal flows arrive as a Poisson process whose rate follows the packets still
        # to place: flows start in [0, 0.9 * duration) and end before the capture does.
        kinds = [k for k, _, _ in NORMAL_MIX]
        cum = []
        acc = 0.0
        for _, share, _ in NORMAL_MIX:
            acc += share
            cum.append(acc)
        builders = {k: b for k, _, b in NORMAL_MIX}
        arrival_end = 0.9 * duration
        placed = 0
        flows = 0
        next_arrival = 0.0
        written = 0
        while True:
            remaining = normal_budget - placed
            if remaining > 0 and (not heap or next_arrival <= heap[0][0]):
                built = []
                if remaining >= 60:
                    x = rng.random() * acc
                    k = 0
                    while cum[k] < x:
                        k += 1
                    counts = (self.stats.ipv6_flows, self.stats.hot_flows)
                    builders[kinds[k]](self, next_arrival, built)
                    if len(built) > remaining - 2:
                        # This flow would overshoot the packet count: drop it, fill instead.
                        self.stats.flows[kinds[k]] -= 1
                        self.stats.ipv6_flows, self.stats.hot_flows = counts
                        built = []
                if not built:
                    fill(self, next_arrival, remaining, built)
                placed += len(built)
                flows += 1
                it = iter(built)
                t, frame = next(it)
                heapq.heappush(heap, (t, tie, frame, it))
                tie += 1
                left = normal_budget - placed
                if left > 0:
                    mean_packets = placed / flows
                    span = max(0.02 * duration, arrival_end - next_arrival)
                    next_arrival += rng.expovariate(left / (mean_packets * span))
                continue
            if not heap:
                break
            t, _, frame, it = heapq.heappop(heap)
            write(t, frame)
            written += 1
            nxt = next(it, None)
            if nxt is not None:
                heapq.heappush(heap, (nxt[0], tie, nxt[1], it))
                tie += 1
        return written, heavy_total


def fill(g, t, count, out):
    """Exactly `count` packets to end the normal mix on the requested packet count:
    DNS query/answer pairs, and one echo request without a reply when count is odd."""
    while count >= 2:
        build_dns_single(g, t, out)
        count -= 2
        t += 0.0005
    if count:
        build_icmp_request(g, t, out)
    # Several flows in one list: order their packets by time (stable, so causal order stays).
    out.sort(key=lambda p: p[0])


def build_dns_single(g, t, out):
    rng = g.rng
    wire, cport = g.endpoints(PROTO_UDP)
    name = domain(rng)
    ident = rng.randrange(65536)
    question = dns_name(name) + struct.pack("!HH", 1, 1)
    query = struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0) + question
    answer = (struct.pack("!HHHHHH", ident, 0x8180, 1, 1, 0, 0) + question
              + struct.pack("!HHHIH", 0xC00C, 1, 1, 300, 4) + rng.randbytes(4))
    out.append((t, wire.frame(0, struct.pack("!HHHH", cport, 53, 8 + len(query), 0), query)))
    out.append((t + g.rtt(), wire.frame(1, struct.pack("!HHHH", 53, cport, 8 + len(answer), 0), answer)))
    g.stats.flow("dns")


def build_icmp_request(g, t, out):
    """One ICMP echo request without a reply (fills an odd last packet)."""
    wire, _ = g.endpoints(PROTO_ICMP)
    data = bytes(range(16, 56))
    out.append((t, icmp_frame(wire, 0, 8, g.rng.randrange(1, 65536), 1, data)))
    g.stats.flow("icmp")


# ---------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------
class Counter:
    """Counts what is written, for the summary, and writes pcap records."""

    def __init__(self, out):
        self.out = out
        self.packets = 0
        self.bytes = 0
        self.proto = {"tcp": 0, "udp": 0, "icmp": 0, "icmpv6": 0}
        self.ipv6 = 0
        self.last = 0.0
        # Records are written in chunks. (No per-flow packet counts here: a dict update per
        # packet costs time, and the heavy flows' counts are known exactly anyway.)
        self.buffer = []

    def write(self, t, frame):
        if t < self.last:
            t = self.last  # a flow's jitter never reorders, but keep the file monotonic
        self.last = t
        usec_total = int(round(t * 1e6))
        sec, usec = divmod(usec_total, 1000000)
        n = len(frame)
        self.buffer.append(struct.pack("<IIII", EPOCH + sec, usec, n, n))
        self.buffer.append(frame)
        if len(self.buffer) >= 8192:
            self.out.write(b"".join(self.buffer))
            self.buffer.clear()
        self.packets += 1
        self.bytes += n
        if frame[12] == 0x86:
            self.ipv6 += 1
            nh = frame[20]
            key = "tcp" if nh == PROTO_TCP else "udp" if nh == PROTO_UDP else "icmpv6"
        else:
            p = frame[23]
            key = "tcp" if p == PROTO_TCP else "udp" if p == PROTO_UDP else "icmp"
        self.proto[key] += 1

    def flush(self):
        if self.buffer:
            self.out.write(b"".join(self.buffer))
            self.buffer.clear()


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Write a seeded, reproducible pcap with skewed traffic: a few heavy flows "
                    "carrying most packets, hot servers, and a normal mix of DNS/HTTP/TLS/ICMP.")
    p.add_argument("-o", "--output", required=True, help="pcap file to write (summary in OUTPUT.json)")
    p.add_argument("--packets", type=int, default=1000000, help="packets in the capture (default 1000000)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--duration", type=float, default=30.0, help="capture seconds (default 30)")
    p.add_argument("--heavy-tcp", type=int, default=6, help="heavy TCP bulk downloads (default 6)")
    p.add_argument("--heavy-udp", type=int, default=2, help="heavy RTP-like UDP streams (default 2)")
    p.add_argument("--heavy-share", type=float, default=0.75,
                   help="share of all packets carried by the heavy flows (default 0.75; with the default "
                        "weights the top flow carries about 19%%, so a perfect balancer can still even out "
                        "4 workers)")
    p.add_argument("--heavy-weights", default="",
                   help="comma-separated relative weights of the heavy flows, e.g. 4,2,1,1 "
                        "(default: Zipf law, see --heavy-zipf)")
    p.add_argument("--heavy-zipf", type=float, default=0.6,
                   help="Zipf exponent of the heavy flows' weights when --heavy-weights is not given: "
                        "flow i gets 1/i^s (default 0.6; 0 = all equal)")
    p.add_argument("--hot-servers", type=int, default=4, help="hot server addresses (default 4)")
    p.add_argument("--hot-share", type=float, default=0.4,
                   help="share of the normal flows that go to the hot servers (default 0.4)")
    p.add_argument("--servers", type=int, default=2000, help="other servers (default 2000)")
    p.add_argument("--clients", type=int, default=3000, help="client addresses (default 3000)")
    p.add_argument("--ipv6", type=float, default=0.05, help="share of normal flows over IPv6 (default 0.05)")
    p.add_argument("--inject-rate", type=float, default=0.01,
                   help="share of HTTP connections carrying content picket's bundled rules alert on "
                        "(a CGI `;id` request, `uid=0(root)` output, an x-dosexec download; default 0.01)")
    p.add_argument("--quiet", action="store_true", help="do not print the summary on stdout")
    args = p.parse_args(argv)
    if args.packets < 100:
        p.error("--packets must be at least 100")
    if not 0.0 <= args.heavy_share < 1.0:
        p.error("--heavy-share must be in [0, 1)")
    if not 0.0 <= args.hot_share <= 1.0:
        p.error("--hot-share must be in [0, 1]")
    if args.duration <= 0:
        p.error("--duration must be positive")
    if min(args.heavy_tcp, args.heavy_udp, args.hot_servers) < 0 or args.servers < 1 or args.clients < 1:
        p.error("flow and host counts must not be negative (servers and clients at least 1)")
    if args.clients > 4000000:
        p.error("--clients must be at most 4000000 (10.0.0.0/10 with 250 hosts per /24)")
    if args.heavy_share > 0 and args.heavy_tcp + args.heavy_udp == 0:
        p.error("--heavy-share needs --heavy-tcp or --heavy-udp")
    return args


def main(argv):
    args = parse_args(argv)
    began = time.time()
    gen = Generator(args)
    with open(args.output, "wb") as f:
        # Classic pcap: microsecond timestamps, snaplen 65535, Ethernet.
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        counter = Counter(f)
        written, heavy_total = gen.run(counter.write)
        counter.flush()
    elapsed = time.time() - began
    stats = gen.stats
    heavy = sorted(gen.flow_packets, reverse=True)
    normal_flows = sum(v for k, v in stats.flows.items() if not k.startswith("heavy"))
    summary = {
        "generator": "gen_skewed.py " + VERSION,
        "output": args.output,
        "seed": args.seed,
        "arguments": {k: v for k, v in sorted(vars(args).items()) if k not in ("output", "quiet")},
        "packets": written,
        "bytes": counter.bytes,
        "capture_seconds": round(counter.last, 3),
        "flows": sum(stats.flows.values()),
        "flows_by_kind": dict(sorted(stats.flows.items())),
        "heavy_packets": heavy_total,
        "heavy_share": round(heavy_total / written, 4) if written else 0.0,
        # Normal flows are at most a few hundred packets, so the heavy flows are the top.
        "top_flows": [{"kind": k, "packets": n, "share": round(n / written, 4)} for n, k in heavy],
        "top_flow_share": round(heavy[0][0] / written, 4) if heavy else 0.0,
        "normal_flows": normal_flows,
        "packets_by_protocol": counter.proto,
        "ipv6_packets": counter.ipv6,
        "ipv6_flows": stats.ipv6_flows,
        "hot_server_flows": stats.hot_flows,
        "hot_server_share": round(stats.hot_flows / normal_flows, 4) if normal_flows else 0.0,
        "hot_server_addresses": [str(ipaddress.ip_address(a)) for h in gen.hot for a in (h.ip4, h.ip6)],
        "http_transactions": stats.http_tx,
        "tool_user_agents": stats.tool_agents,
        "injected": dict(sorted(stats.injected.items())),
        "generation_seconds": round(elapsed, 2),
        "packets_per_second_generated": int(written / elapsed) if elapsed > 0 else 0,
    }
    # Timing fields would make the JSON differ between identical runs; the pcap does not.
    text = json.dumps(summary, indent=1)
    with open(args.output + ".json", "w") as f:
        f.write(text + "\n")
    if not args.quiet:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
