#!/usr/bin/env python3
"""Skewed UDP traffic for the adaptive fanout test (tests/adaptive_fanout_netns.rs).

  skewed_replay.py write OUT.pcap [--seed N] [--packets N] [--tcp]
      one heavy flow carrying HEAVY_SHARE of the packets, plus LIGHT_FLOWS light flows,
      interleaved at random (seeded); every 50th heavy packet and the 5th packet of each
      light flow carry a marker a rule matches, and every packet the same filler.
      --tcp: the light flows are TCP connections (handshake, data from the client, an
      ACK from the server every 10th packet) whose alerts depend on flow state: a login
      marker early sets a flowbit that late markers check, and a marker split across
      two segments.
  skewed_replay.py send IN.pcap DEV --rate PPS
      sends the pcap's frames on DEV through an AF_PACKET socket, paced to PPS.

Bounded: the number of packets is fixed, the sender stops at the end of the file.
"""
import random
import socket
import struct
import sys
import time

HEAVY_SHARE = 0.35
LIGHT_FLOWS = 60
# The same bytes in every packet, so that inspecting a packet of any flow costs about the
# same (the test's scan rule reads all of it).
FILLER = b"z" * 900
SRC_MAC = bytes.fromhex("020000000001")
DST_MAC = bytes.fromhex("020000000002")


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def udp_frame(src, dst, sport, dport, payload):
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, socket.inet_aton(src), socket.inet_aton(dst))
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 17, len(udp))
    csum = checksum(pseudo + udp) or 0xFFFF
    udp = udp[:6] + struct.pack("!H", csum) + udp[8:]
    return DST_MAC + SRC_MAC + b"\x08\x00" + ip + udp


def tcp_frame(src, dst, sport, dport, seq, ack, flags, payload):
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, socket.inet_aton(src), socket.inet_aton(dst))
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(tcp))
    tcp = tcp[:16] + struct.pack("!H", checksum(pseudo + tcp)) + tcp[18:]
    return DST_MAC + SRC_MAC + b"\x08\x00" + ip + tcp


SYN, ACK, PSH = 0x02, 0x10, 0x08
TCP_FILLER = b"y" * 600


class TcpLight:
    """One light TCP connection, a packet per call, in order."""

    def __init__(self, item, per_flow):
        self.client = "10.98.%d.%d" % (8 + item // 200, 1 + item % 200)
        self.sport, self.dport = 30000 + item, 7000 + item % 50
        self.cseq, self.sseq = 1000 + item * 7919, 5000 + item * 104729
        self.per_flow = per_flow
        self.item = item

    def frame(self, n):
        c, s = (self.client, "10.98.7.2", self.sport, self.dport), ("10.98.7.2", self.client, self.dport, self.sport)
        if n == 0:
            self.cseq += 1
            return tcp_frame(*c, self.cseq - 1, 0, SYN, b"")
        if n == 1:
            self.sseq += 1
            return tcp_frame(*s, self.sseq - 1, self.cseq, SYN | ACK, b"")
        if n == 2 or n % 10 == 9:
            who = c if n == 2 else s
            seq, ack = (self.cseq, self.sseq) if n == 2 else (self.sseq, self.cseq)
            return tcp_frame(*who, seq, ack, ACK, b"")
        if n == 3:
            body = b"PICKET-LOGIN user%04d " % self.item
        elif n == 4:
            body = b"PICKET-LIGHT-MARK %04d " % self.item
        elif n >= self.per_flow // 2 and n % 100 == 50:
            body = b"PICKET-LATE-MARK %04d %04d " % (self.item, n)
        elif n >= self.per_flow // 2 and n % 100 == 70:
            body = b"%04d %04d PICKET-SPL" % (self.item, n)
        elif n >= self.per_flow // 2 and n % 100 == 71:
            body = b"IT-MARK %04d %04d " % (self.item, n)
        else:
            body = b"data %04d %04d " % (self.item, n)
        payload = body + TCP_FILLER if not body.endswith(b"SPL") else TCP_FILLER + body
        self.cseq += len(payload)
        return tcp_frame(*c, self.cseq - len(payload), self.sseq, ACK | PSH, payload)


def write(path, seed, total, tcp=False):
    rng = random.Random(seed)
    heavy = int(total * HEAVY_SHARE)
    per_light = (total - heavy) // LIGHT_FLOWS
    order = ["h"] * heavy + [i for i in range(LIGHT_FLOWS) for _ in range(per_light)]
    rng.shuffle(order)
    sent = {}
    frames = []
    conns = {i: TcpLight(i, per_light) for i in range(LIGHT_FLOWS)} if tcp else {}
    for item in order:
        n = sent.get(item, 0)
        sent[item] = n + 1
        if item == "h":
            mark = b"PICKET-HEAVY-MARK" if n % 50 == 0 else b"heavy"
            payload = mark + b" %08d " % n + FILLER
            frames.append(udp_frame("10.98.7.1", "10.98.7.2", 40000, 5001, payload))
        elif tcp:
            frames.append(conns[item].frame(n))
        else:
            mark = b"PICKET-LIGHT-MARK" if n == 4 else b"light"
            payload = mark + b" %04d %04d " % (item, n) + FILLER
            client = "10.98.%d.%d" % (8 + item // 200, 1 + item % 200)
            frames.append(udp_frame(client, "10.98.7.2", 20000 + item, 6000 + item % 50, payload))
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, frame in enumerate(frames):
            ts = 1_700_000_000 * 1_000_000 + i * 50
            f.write(struct.pack("<IIII", ts // 1_000_000, ts % 1_000_000, len(frame), len(frame)))
            f.write(frame)


def frames_of(path):
    with open(path, "rb") as f:
        data = f.read()
    off = 24
    while off + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, off + 8)[0]
        yield data[off + 16 : off + 16 + caplen]
        off += 16 + caplen


def send(path, dev, rate):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((dev, 0))
    start = time.monotonic()
    for i, frame in enumerate(frames_of(path)):
        s.send(frame)
        if i % 64 == 63:
            ahead = (i + 1) / rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)


def main(argv):
    if len(argv) >= 2 and argv[0] == "write":
        seed = int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 1
        total = int(argv[argv.index("--packets") + 1]) if "--packets" in argv else 60000
        write(argv[1], seed, total, "--tcp" in argv)
    elif len(argv) >= 3 and argv[0] == "send":
        rate = float(argv[argv.index("--rate") + 1]) if "--rate" in argv else 10000
        send(argv[1], argv[2], rate)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
