#!/usr/bin/env python3
"""Writes data/sample.pcap: a small, deterministic Ethernet capture for picket's demos
and tests.

Contents (all addresses from documentation/private ranges):
  - ARP who-has / is-at
  - DNS over UDP 53: A, AAAA and an NXDOMAIN answer
  - ICMP echo request/reply
  - HTTP on port 80: a page download, and a CGI request whose response leaks `id`
    output ("uid=0(root)")
  - TLS-looking session on 443 (ClientHello with SNI, ServerHello, application data)
  - SSH on 22: version banners and binary packets
  - IPv6: one TCP (HTTP) flow and one UDP (DNS) flow
  - one VLAN-tagged (802.1Q, VLAN 100) TCP flow
  - one TCP flow ended by a RST, and one connection refused with RST
  - malformed on purpose: an IPv4 header cut short, a TCP header with data offset 3

Packet bytes are built with scapy; the pcap file is written here with fixed timestamps,
so the output is byte-identical on every run. Usage: scripts/make_sample.py [OUTPUT]
"""

import random
import struct
import sys
from pathlib import Path

from scapy.all import ARP, DNS, DNSQR, DNSRR, ICMP, IP, TCP, UDP, Dot1Q, Ether, IPv6, Raw

SEED = 20240601
START_US = 1_700_000_000 * 1_000_000  # 2023-11-14T22:13:20Z
MSS = 1448

CLIENT_MAC = "02:00:00:00:01:0a"
GATEWAY_MAC = "02:00:00:00:00:01"
CLIENT = "192.168.1.10"
CLIENT2 = "192.168.1.23"
CLIENT6 = "2001:db8:1::10"
RESOLVER = "192.168.1.1"
RESOLVER6 = "2001:db8:1::1"

rng = random.Random(SEED)


class Capture:
    """Packets with integer-microsecond timestamps; written sorted by time."""

    def __init__(self):
        self.packets = []  # (time_us, sequence, bytes)

    def add(self, time_us, frame):
        self.packets.append((time_us, len(self.packets), bytes(frame)))

    def write(self, path):
        out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for time_us, _, data in sorted(self.packets):
            out += struct.pack("<IIII", time_us // 1_000_000, time_us % 1_000_000, len(data), len(data))
            out += data
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(out)
        return len(self.packets), len(out)


def ether(src_mac=CLIENT_MAC, dst_mac=GATEWAY_MAC, vlan=None):
    if vlan is None:
        return Ether(src=src_mac, dst=dst_mac)
    return Ether(src=src_mac, dst=dst_mac) / Dot1Q(vlan=vlan, prio=0)


class TcpSession:
    """A TCP connection between a client and a server, tracking sequence numbers so that
    the capture reassembles cleanly."""

    def __init__(self, cap, t_us, client, server, cport, sport, ipv6=False, vlan=None, rtt_us=20_000):
        self.cap, self.t = cap, t_us
        self.client, self.server, self.cport, self.sport = client, server, cport, sport
        self.ipv6, self.vlan, self.rtt = ipv6, vlan, rtt_us
        self.seq = {"c": rng.randrange(1 << 32), "s": rng.randrange(1 << 32)}
        self.ip_id = {"c": rng.randrange(1 << 16), "s": rng.randrange(1 << 16)}

    def _frame(self, side, flags, payload=b"", ack=True, window=64240, options=None):
        if side == "c":
            src, dst, sport, dport = self.client, self.server, self.cport, self.sport
            macs = (CLIENT_MAC, GATEWAY_MAC)
        else:
            src, dst, sport, dport = self.server, self.client, self.sport, self.cport
            macs = (GATEWAY_MAC, CLIENT_MAC)
        other = "s" if side == "c" else "c"
        if self.ipv6:
            ip = IPv6(src=src, dst=dst, hlim=64 if side == "c" else 57)
        else:
            ip = IP(src=src, dst=dst, id=self.ip_id[side], flags="DF", ttl=64 if side == "c" else 52)
            self.ip_id[side] = (self.ip_id[side] + 1) & 0xFFFF
        tcp = TCP(
            sport=sport,
            dport=dport,
            seq=self.seq[side] & 0xFFFFFFFF,
            ack=(self.seq[other] & 0xFFFFFFFF) if ack else 0,
            flags=flags,
            window=window,
            options=options or [],
        )
        frame = ether(*macs, vlan=self.vlan) / ip / tcp
        if payload:
            frame = frame / Raw(load=payload)
        return frame

    def _send(self, side, flags, payload=b"", gap_us=300, **kw):
        self.t += gap_us
        self.cap.add(self.t, self._frame(side, flags, payload, **kw))
        self.seq[side] += len(payload) + (1 if ("S" in flags or "F" in flags) else 0)

    def handshake(self):
        syn_opts = [("MSS", 1460), ("SAckOK", b""), ("Timestamp", (rng.randrange(1 << 32), 0)), ("NOP", None), ("WScale", 7)]
        self._send("c", "S", ack=False, gap_us=0, options=syn_opts)
        self._send("s", "SA", gap_us=self.rtt // 2, window=65160, options=[("MSS", 1460), ("NOP", None), ("WScale", 7)])
        self._send("c", "A", gap_us=self.rtt // 2)

    def send(self, side, data, think_us=1_000):
        """Sends `data` in MSS-sized segments, the receiver ACKing every second one."""
        receiver = "s" if side == "c" else "c"
        self.t += think_us
        segments = [data[i : i + MSS] for i in range(0, len(data), MSS)]
        for n, segment in enumerate(segments):
            last = n == len(segments) - 1
            self._send(side, "PA" if last else "A", segment, gap_us=120)
            if n % 2 == 1 or last:
                self._send(receiver, "A", gap_us=self.rtt // 2)

    def close(self, first="c"):
        second = "s" if first == "c" else "c"
        self._send(first, "FA", gap_us=2_000)
        self._send(second, "FA", gap_us=self.rtt // 2)
        self._send(first, "A", gap_us=self.rtt // 2)

    def reset(self, side):
        self._send(side, "RA", gap_us=1_500)


def http_page(title, body_paragraphs):
    body = "".join(f"<p>{p}</p>\n" for p in body_paragraphs)
    return (f"<!DOCTYPE html>\n<html><head><title>{title}</title></head>\n<body><h1>{title}</h1>\n{body}</body></html>\n").encode()


def http_response(body, content_type="text/html; charset=utf-8", status="200 OK"):
    head = (
        f"HTTP/1.1 {status}\r\nServer: nginx/1.24.0\r\nDate: Tue, 14 Nov 2023 22:13:21 GMT\r\n"
        f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


def http_request(path, host, agent="Mozilla/5.0 (X11; Linux x86_64; rv:119.0) Gecko/20100101 Firefox/119.0"):
    return (
        f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {agent}\r\n"
        "Accept: text/html,application/xhtml+xml,*/*;q=0.8\r\nAccept-Language: en-US,en;q=0.5\r\n"
        "Accept-Encoding: gzip, deflate\r\nConnection: close\r\n\r\n"
    ).encode()


LOREM = [
    "Network monitoring lets operators see which hosts talk to which services, and how much.",
    "An intrusion prevention system inspects traffic inline and drops what matches its rules.",
    "Flows are tracked by their five-tuple; each direction is reassembled before inspection.",
    "Rate limits protect servers from floods without blocking legitimate clients.",
    "Logs in eve.json format feed dashboards, alerting pipelines and long-term storage.",
]


def random_bytes(n):
    return bytes(rng.randrange(256) for _ in range(n))


def tls_record(content_type, payload, version=0x0303):
    return struct.pack(">BHH", content_type, version, len(payload)) + payload


def tls_client_hello(server_name):
    name = server_name.encode()
    sni = struct.pack(">HBH", len(name) + 3, 0, len(name)) + name
    extensions = b"".join(
        struct.pack(">HH", ext_type, len(data)) + data
        for ext_type, data in [
            (0x0000, sni),  # server_name
            (0x000A, bytes.fromhex("0006001d00170018")),  # supported_groups
            (0x000D, bytes.fromhex("000804030503080408050806")),  # signature_algorithms
            (0x0010, bytes.fromhex("000c02683208687474702f312e31")),  # ALPN: h2, http/1.1
            (0x002B, bytes.fromhex("0403040303")),  # supported_versions: 1.3, 1.2
            (0x0033, bytes.fromhex("0024001d0020") + random_bytes(32)),  # key_share x25519
        ]
    )
    ciphers = bytes.fromhex("130113021303c02bc02fc02cc030cca9cca8")
    body = (
        struct.pack(">H", 0x0303)
        + random_bytes(32)
        + bytes([32])
        + random_bytes(32)
        + struct.pack(">H", len(ciphers))
        + ciphers
        + bytes([1, 0])
        + struct.pack(">H", len(extensions))
        + extensions
    )
    handshake = bytes([1]) + len(body).to_bytes(3, "big") + body
    return tls_record(0x16, handshake, version=0x0301)


def tls_server_hello():
    extensions = struct.pack(">HH", 0x002B, 2) + b"\x03\x04" + struct.pack(">HH", 0x0033, 36) + bytes.fromhex("001d0020") + random_bytes(32)
    body = struct.pack(">H", 0x0303) + random_bytes(32) + bytes([32]) + random_bytes(32) + bytes.fromhex("130100") + struct.pack(">H", len(extensions)) + extensions
    handshake = bytes([2]) + len(body).to_bytes(3, "big") + body
    # ServerHello, ChangeCipherSpec, then encrypted handshake (certificate etc.) as app data.
    return tls_record(0x16, handshake) + tls_record(0x14, b"\x01") + tls_record(0x17, random_bytes(2900))


def ssh_kexinit(kex_algorithms):
    """A cleartext SSH_MSG_KEXINIT binary packet (RFC 4253 7.1), as sent before keys exist."""
    name_lists = [
        kex_algorithms,
        "ssh-ed25519,ecdsa-sha2-nistp256,rsa-sha2-512,rsa-sha2-256",
        "chacha20-poly1305@openssh.com,aes128-ctr,aes256-ctr,aes128-gcm@openssh.com",
        "chacha20-poly1305@openssh.com,aes128-ctr,aes256-ctr,aes128-gcm@openssh.com",
        "umac-64-etm@openssh.com,hmac-sha2-256-etm@openssh.com,hmac-sha2-256",
        "umac-64-etm@openssh.com,hmac-sha2-256-etm@openssh.com,hmac-sha2-256",
        "none,zlib@openssh.com",
        "none,zlib@openssh.com",
        "",
        "",
    ]
    payload = bytes([20]) + random_bytes(16)
    for names in name_lists:
        payload += struct.pack(">I", len(names)) + names.encode()
    payload += b"\x00" + struct.pack(">I", 0)
    padding = 8 - (len(payload) + 5) % 8
    padding += 8 if padding < 4 else 0
    return struct.pack(">IB", len(payload) + padding + 1, padding) + payload + bytes(padding)


def ssh_binary_packet(length):
    """An encrypted SSH packet: to an observer, random bytes."""
    return random_bytes(length)


def dns_exchange(cap, t, client, resolver, qname, qtype, answers, rcode=0, ipv6=False, sport=None, txid=None):
    sport = sport or rng.randrange(32768, 60999)
    txid = rng.randrange(1 << 16) if txid is None else txid
    if ipv6:
        ip_q, ip_a = IPv6(src=client, dst=resolver), IPv6(src=resolver, dst=client, hlim=64)
    else:
        ip_q = IP(src=client, dst=resolver, id=rng.randrange(1 << 16))
        ip_a = IP(src=resolver, dst=client, id=rng.randrange(1 << 16))
    query = DNS(id=txid, rd=1, qd=DNSQR(qname=qname, qtype=qtype))
    cap.add(t, ether() / ip_q / UDP(sport=sport, dport=53) / query)
    an = None
    for rr in answers:
        an = rr if an is None else an / rr
    reply = DNS(id=txid, qr=1, rd=1, ra=1, rcode=rcode, qd=DNSQR(qname=qname, qtype=qtype), an=an)
    cap.add(t + 14_000, ether(GATEWAY_MAC, CLIENT_MAC) / ip_a / UDP(sport=53, dport=sport) / reply)


def build():
    cap = Capture()
    t = START_US

    # ARP for the gateway.
    cap.add(t, Ether(src=CLIENT_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=CLIENT_MAC, psrc=CLIENT, pdst=RESOLVER))
    cap.add(t + 400, Ether(src=GATEWAY_MAC, dst=CLIENT_MAC) / ARP(op=2, hwsrc=GATEWAY_MAC, psrc=RESOLVER, hwdst=CLIENT_MAC, pdst=CLIENT))

    # DNS lookups before each connection.
    dns_exchange(cap, t + 5_000, CLIENT, RESOLVER, "www.example.com", "A", [DNSRR(rrname="www.example.com", type="A", ttl=300, rdata="198.51.100.80")])
    dns_exchange(cap, t + 6_000, CLIENT, RESOLVER, "www.example.com", "AAAA", [DNSRR(rrname="www.example.com", type="AAAA", ttl=300, rdata="2001:db8:80::80")])
    dns_exchange(cap, t + 900_000, CLIENT, RESOLVER, "secure.example.org", "A", [DNSRR(rrname="secure.example.org", type="A", ttl=60, rdata="203.0.113.43")])
    dns_exchange(
        cap,
        t + 1_400_000,
        CLIENT,
        RESOLVER,
        "cdn.example.net",
        "A",
        [
            DNSRR(rrname="cdn.example.net", type="CNAME", ttl=3600, rdata="edge.cdn.example.net"),
            DNSRR(rrname="edge.cdn.example.net", type="A", ttl=20, rdata="198.51.100.7"),
        ],
    )
    dns_exchange(cap, t + 2_100_000, CLIENT, RESOLVER, "no-such-host.example.com", "A", [], rcode=3)
    for n, name in enumerate(["mail.example.com", "ntp.example.org", "updates.example.net", "api.example.com", "static.example.org", "login.example.com"]):
        address = f"198.51.100.{100 + n}"
        dns_exchange(cap, t + 2_200_000 + n * 37_000, CLIENT2, RESOLVER, name, "A", [DNSRR(rrname=name, type="A", ttl=120, rdata=address)])

    # ICMP echo to the gateway and a server.
    for n in range(3):
        for dst, rtt in ((RESOLVER, 400), ("198.51.100.80", 18_000)):
            ts = t + 50_000 + n * 1_000_000 + (0 if dst == RESOLVER else 500_000)
            payload = bytes(range(0x10, 0x10 + 48))
            cap.add(ts, ether() / IP(src=CLIENT, dst=dst, id=0x4000 + n) / ICMP(type=8, id=0x1234, seq=n + 1) / Raw(payload))
            cap.add(ts + rtt, ether(GATEWAY_MAC, CLIENT_MAC) / IP(src=dst, dst=CLIENT, id=0x7000 + n, ttl=61) / ICMP(type=0, id=0x1234, seq=n + 1) / Raw(payload))

    # HTTP page download.
    s = TcpSession(cap, t + 30_000, CLIENT, "198.51.100.80", 51512, 80)
    s.handshake()
    s.send("c", http_request("/index.html", "www.example.com"))
    page = http_page("Example Domain", LOREM * 6)
    s.send("s", http_response(page), think_us=25_000)
    s.close(first="s")

    # The page's stylesheet and logo, on a second connection.
    s = TcpSession(cap, t + 120_000, CLIENT, "198.51.100.80", 51514, 80)
    s.handshake()
    s.send("c", http_request("/static/site.css", "www.example.com"))
    css = b"".join(b".block-%d { margin: %dpx; padding: %dpx; color: #%06x; }\n" % (n, n % 17, n % 5, rng.randrange(1 << 24)) for n in range(120))
    s.send("s", http_response(css, content_type="text/css"), think_us=12_000)
    s.send("c", http_request("/static/logo.png", "www.example.com"), think_us=500)
    png = b"\x89PNG\r\n\x1a\n" + random_bytes(18_000)
    s.send("s", http_response(png, content_type="image/png"), think_us=15_000)
    s.close(first="s")

    # HTTP CGI request whose response shows a command ran as root.
    s = TcpSession(cap, t + 300_000, CLIENT2, "198.51.100.80", 40288, 80)
    s.handshake()
    s.send("c", http_request("/cgi-bin/status.cgi?host=127.0.0.1;id", "198.51.100.80", agent="curl/8.4.0"))
    leaked = b"PING 127.0.0.1 (127.0.0.1) 56(84) bytes of data.\n" b"uid=0(root) gid=0(root) groups=0(root)\n"
    s.send("s", http_response(leaked, content_type="text/plain"), think_us=40_000)
    s.close()

    # TLS on 443.
    s = TcpSession(cap, t + 930_000, CLIENT, "203.0.113.43", 51520, 443, rtt_us=30_000)
    s.handshake()
    s.send("c", tls_client_hello("secure.example.org"))
    s.send("s", tls_server_hello(), think_us=5_000)
    s.send("c", tls_record(0x14, b"\x01") + tls_record(0x17, random_bytes(74)))
    s.send("c", tls_record(0x17, random_bytes(420)), think_us=2_000)
    s.send("s", b"".join(tls_record(0x17, random_bytes(4096)) for _ in range(4)), think_us=35_000)
    s.send("c", tls_record(0x17, random_bytes(24)), think_us=10_000)
    s.close()

    # SSH on 22.
    s = TcpSession(cap, t + 1_200_000, CLIENT, "198.51.100.22", 51530, 22)
    s.handshake()
    s.send("s", b"SSH-2.0-OpenSSH_8.9p1 Ubuntu-3ubuntu0.6\r\n", think_us=3_000)
    s.send("c", b"SSH-2.0-OpenSSH_9.6\r\n")
    s.send("c", ssh_kexinit("curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,ext-info-c"))
    s.send("s", ssh_kexinit("curve25519-sha256,curve25519-sha256@libssh.org,diffie-hellman-group14-sha256"), think_us=2_000)
    s.send("c", ssh_binary_packet(48), think_us=1_000)
    s.send("s", ssh_binary_packet(1080), think_us=2_000)
    s.send("c", ssh_binary_packet(48), think_us=2_000)
    s.send("s", ssh_binary_packet(564), think_us=8_000)
    for n in range(10):
        s.send("c", ssh_binary_packet(36), think_us=90_000)
        s.send("s", ssh_binary_packet(52 + 16 * n), think_us=3_000)
    s.close()

    # IPv6: DNS over UDP and an HTTP fetch over TCP.
    dns_exchange(cap, t + 1_500_000, CLIENT6, RESOLVER6, "v6.example.com", "AAAA", [DNSRR(rrname="v6.example.com", type="AAAA", ttl=600, rdata="2001:db8:80::80")], ipv6=True)
    s = TcpSession(cap, t + 1_520_000, CLIENT6, "2001:db8:80::80", 52000, 80, ipv6=True)
    s.handshake()
    s.send("c", http_request("/ipv6-check.txt", "v6.example.com", agent="Wget/1.21.4"))
    s.send("s", http_response(b"You are connected over IPv6.\n", content_type="text/plain"), think_us=20_000)
    s.close(first="s")

    # VLAN 100: an internal API call.
    s = TcpSession(cap, t + 1_700_000, "10.100.0.15", "10.100.0.2", 45870, 8080, vlan=100, rtt_us=400)
    s.handshake()
    s.send("c", b"POST /api/v1/metrics HTTP/1.1\r\nHost: 10.100.0.2:8080\r\nContent-Type: application/json\r\nContent-Length: 41\r\n\r\n" b'{"host":"db-1","load":0.42,"disk":71.5}\r\n')
    s.send("s", b"HTTP/1.1 204 No Content\r\nServer: api-gw\r\n\r\n", think_us=800)
    s.close()

    # A connection cut by RST mid-transfer, and one refused with RST.
    s = TcpSession(cap, t + 1_900_000, CLIENT, "198.51.100.7", 51544, 80)
    s.handshake()
    s.send("c", http_request("/video/stream.mp4", "cdn.example.net"))
    s.send("s", http_response(random_bytes(6000), content_type="video/mp4")[:4000], think_us=15_000)
    s.reset("c")
    s = TcpSession(cap, t + 2_000_000, CLIENT, "198.51.100.80", 51550, 23)
    s._send("c", "S", ack=False, gap_us=0, options=[("MSS", 1460)])
    s._send("s", "RA", gap_us=9_000)

    # Malformed on purpose, so decoder anomaly counters have something to show.
    cut_ip = bytes(IP(src=CLIENT, dst="198.51.100.80", id=0xBEEF) / UDP(sport=5353, dport=5353) / Raw(b"x" * 16))[:12]
    cap.add(t + 2_300_000, Ether(src=CLIENT_MAC, dst=GATEWAY_MAC, type=0x0800) / Raw(cut_ip))
    bad_offset = ether() / IP(src=CLIENT, dst="198.51.100.80", id=0xBEF0) / TCP(sport=51560, dport=80, seq=1, flags="S", dataofs=3)
    cap.add(t + 2_300_500, bad_offset)

    return cap


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parent.parent / "data" / "sample.pcap")
    count, size = build().write(out)
    print(f"wrote {out}: {count} packets, {size} bytes")


if __name__ == "__main__":
    main()
