#!/usr/bin/env python3
"""Capture cost benchmark: CPU per packet for the ways a packet can reach (or not reach) picket.

Two namespaces joined by one veth pair: `gen` runs trafgen, `cap` receives. trafgen sends the
same 64-byte UDP packets (10.79.0.2 -> 10.79.0.1 port 9, 256 source ports) at a fixed rate
for a fixed count in every mode:

  idle      no picket: the capture side's kernel drops the packets (iptables INPUT DROP);
            the baseline subtracted from every other mode's machine CPU
  afpacket  `picket -i cap0 --workers 1`, no rules; the kernel still drops them after the copy
  afxdp     `picket --af-xdp=cap0 --workers 1`, no rules; the XDP program redirects every
            packet into the AF_XDP socket (copy mode on veth), the stack never sees them
  xdp-drop  `picket -i cap0 --ddos` with the sender's /24 in the XDP blocklist (YAML
            `ddos.blocklist.static`; also written into the `picket_block_v4` map of that
            picket process with the bpf() system call, so the mode works before the YAML key
            is implemented): the packets die in XDP
  nfq-drop  the user-space alternative: iptables INPUT -j NFQUEUE --queue-num 0 and
            `picket -q 0` with a drop rule for them, so picket drops each packet inline

Measured per mode over the trafgen run: the receive side's CPU -- the machine's irq+softirq
time (/proc/stat; on veth the receive path, XDP included, runs as softirq, which this kernel
accounts apart from tasks) less its rate with no traffic, plus picket's own CPU (/proc/PID/stat
utime+stime) -- the packets the capture interface received (its rx_packets) and what picket
read. Reported: receive ns per packet, picket's own ns per packet, and the ratios
afpacket/afxdp and nfq-drop/xdp-drop. Whole-machine busy CPU and trafgen's CPU are in the raw
results (--json) but not in the table: other work on the machine (builds) makes the first
noisy, and the second is the same in every mode.

Needs root, iproute2, iptables, trafgen (netsniff-ng) and a release build of picket:

  cargo build --release && sudo python3 scripts/capture_bench.py [--rate 200000] [--seconds 10]

Namespaces and processes are removed at the end, on errors and on Ctrl-C. Each run is bounded
by its packet count and a deadline.
"""

import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN, CAP = "pk-cbench-gen", "pk-cbench-cap"
GEN_DEV, CAP_DEV = "gen0", "cap0"
GEN_IP, CAP_IP = "10.79.0.2", "10.79.0.1"
MODES = ["idle", "afpacket", "afxdp", "xdp-drop", "nfq-drop"]
USER_HZ = os.sysconf("SC_CLK_TCK")

# bpf(2) on x86_64 and the commands used here (linux/bpf.h).
SYS_BPF = 321
BPF_MAP_UPDATE_ELEM = 2
BPF_MAP_GET_FD_BY_ID = 14
BPF_OBJ_GET_INFO_BY_FD = 15
BPF_MAP_INFO_NAME_OFFSET = 24  # type, id, key_size, value_size, max_entries, map_flags: 6 x u32


def sh(*args, check=True, **kw):
    return subprocess.run(list(args), check=check, capture_output=True, text=True, **kw)


def in_ns(ns, *args, check=True):
    return sh("ip", "netns", "exec", ns, *args, check=check)


def setup():
    teardown()
    for ns in (GEN, CAP):
        sh("ip", "netns", "add", ns)
        in_ns(ns, "ip", "link", "set", "lo", "up")
        in_ns(ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")
        in_ns(ns, "sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1")
    sh("ip", "-n", CAP, "link", "add", CAP_DEV, "type", "veth", "peer", "name", GEN_DEV, "netns", GEN)
    in_ns(CAP, "ip", "addr", "add", CAP_IP + "/24", "dev", CAP_DEV)
    in_ns(GEN, "ip", "addr", "add", GEN_IP + "/24", "dev", GEN_DEV)
    for ns, dev in ((CAP, CAP_DEV), (GEN, GEN_DEV)):
        in_ns(ns, "ip", "link", "set", dev, "up")
    cap_mac = in_ns(CAP, "cat", f"/sys/class/net/{CAP_DEV}/address").stdout.strip()
    gen_mac = in_ns(GEN, "cat", f"/sys/class/net/{GEN_DEV}/address").stdout.strip()
    return cap_mac, gen_mac


def teardown():
    for ns in (GEN, CAP):
        sh("ip", "netns", "del", ns, check=False)


def trafgen_config(path, cap_mac, gen_mac):
    mac = lambda m: ", ".join("0x" + b for b in m.split(":"))
    ip = lambda a: ", ".join(a.split("."))
    with open(path, "w") as f:
        f.write(
            "{ %s, %s, c16(0x0800),\n"
            "  0x45, 0x00, c16(46), drnd(2), c16(0), 64, 17, csumip(14, 33),\n"
            "  %s, %s,\n"
            "  0x4e, drnd(1), c16(9), c16(26), c16(0),\n"
            "  fill(0x41, 18) }\n" % (mac(cap_mac), mac(gen_mac), ip(GEN_IP), ip(CAP_IP))
        )


def cpu_ticks():
    """(busy, irq + softirq) ticks of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields[:8]) - idle, fields[5] + fields[6]  # user..steal (guest is in user)


def process_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return int(rest[11]) + int(rest[12])  # utime, stime
    except OSError:
        return 0


def rx_packets():
    return int(in_ns(CAP, "cat", f"/sys/class/net/{CAP_DEV}/statistics/rx_packets").stdout)


def bpf(cmd, attr):
    libc = ctypes.CDLL(None, use_errno=True)
    rc = libc.syscall(SYS_BPF, cmd, ctypes.byref(attr), ctypes.sizeof(attr))
    if rc < 0:
        raise OSError(ctypes.get_errno(), f"bpf({cmd}) failed: {os.strerror(ctypes.get_errno())}")
    return rc


def block_by_hand(pid, prefix, prefix_len):
    """Puts PREFIX/LEN into the picket_block_v4 map that process PID holds (no expiry)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for fd_name in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd_name}") as f:
                info = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        except OSError:
            continue
        if "map_id" not in info:
            continue
        attr = (ctypes.c_uint32 * 4)(int(info["map_id"]), 0, 0, 0)
        fd = bpf(BPF_MAP_GET_FD_BY_ID, attr)
        try:
            buf = ctypes.create_string_buffer(256)
            req = (ctypes.c_uint64 * 2)(fd | (ctypes.sizeof(buf) << 32), ctypes.addressof(buf))
            bpf(BPF_OBJ_GET_INFO_BY_FD, req)
            name = buf.raw[BPF_MAP_INFO_NAME_OFFSET : BPF_MAP_INFO_NAME_OFFSET + 16].split(b"\0")[0]
            if name != b"picket_block_v4":
                continue
            key = ctypes.create_string_buffer(prefix_len.to_bytes(4, "little") + bytes(int(x) for x in prefix.split(".")), 8)
            value = ctypes.create_string_buffer(24)  # expires_ns 0 (never), packets, bytes
            req = (ctypes.c_uint64 * 4)(fd, ctypes.addressof(key), ctypes.addressof(value), 0)
            bpf(BPF_MAP_UPDATE_ELEM, req)
            return True
        finally:
            libc.close(fd)
    return False


class Picket:
    def __init__(self, binary, args, workdir, mode):
        self.logs = os.path.join(workdir, mode)
        os.makedirs(self.logs, exist_ok=True)
        self.err_path = os.path.join(self.logs, "stderr")
        self.out_path = os.path.join(self.logs, "stdout")
        cmd = ["ip", "netns", "exec", CAP, binary, *args, "-l", self.logs, "-k", "none", "--no-pin"]
        self.proc = subprocess.Popen(cmd, stdout=open(self.out_path, "w"), stderr=open(self.err_path, "w"))
        deadline = time.time() + 20
        while True:
            text = open(self.err_path).read()
            if "capturing on" in text or "inline on" in text:
                break
            if self.proc.poll() is not None or time.time() > deadline:
                self.stop()
                raise RuntimeError(f"picket did not start ({mode}): {text}")
            time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def packets(self):
        """What picket read, from its closing line."""
        for line in open(self.out_path):
            if line.startswith("picket: ") and " packets from " in line:
                return int(line.split()[1])
        return None


def run_mode(mode, opts, binary, workdir, conf):
    rules = os.path.join(workdir, "rules")
    empty = os.path.join(workdir, "empty.rules")
    yaml = os.path.join(workdir, "picket.yaml")
    open(empty, "w").close()
    with open(rules, "w") as f:
        f.write('drop udp any any -> any 9 (msg:"bench drop"; sid:1;)\n')
    with open(yaml, "w") as f:
        f.write("%YAML 1.1\n---\nddos:\n  blocklist:\n    static: [\"10.79.0.0/24\"]\n")
    ipt = lambda *a: in_ns(CAP, "iptables", *a)
    ipt("-F", "INPUT")
    if mode == "nfq-drop":
        ipt("-A", "INPUT", "-p", "udp", "--dport", "9", "-j", "NFQUEUE", "--queue-num", "0")
    else:
        ipt("-A", "INPUT", "-p", "udp", "--dport", "9", "-j", "DROP")
    picket = None
    note = ""
    if mode == "afpacket":
        picket = Picket(binary, ["-i", CAP_DEV, "--workers", "1", "-S", empty], workdir, mode)
    elif mode == "afxdp":
        picket = Picket(binary, [f"--af-xdp={CAP_DEV}", "--workers", "1", "-S", empty], workdir, mode)
    elif mode == "xdp-drop":
        picket = Picket(binary, ["-i", CAP_DEV, "--ddos", "--workers", "1", "-c", yaml, "-S", empty], workdir, mode)
        if block_by_hand(picket.proc.pid, "10.79.0.0", 24):
            note = "blocklist entry written with bpf()"
    elif mode == "nfq-drop":
        picket = Picket(binary, ["-q", "0", "-S", rules], workdir, mode)
    time.sleep(1.0)
    count = opts.rate * opts.seconds
    (busy0, soft0), rx0 = cpu_ticks(), rx_packets()
    own0 = process_ticks(picket.proc.pid) if picket else 0
    t0 = time.time()
    gen = subprocess.Popen(
        ["ip", "netns", "exec", GEN, "trafgen", "--dev", GEN_DEV, "--conf", conf, "-P", "1", "-C",
         "-b", f"{opts.rate}pps", "-n", str(count)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    deadline = t0 + opts.seconds * 3 + 20
    while True:
        pid, status, usage = os.wait4(gen.pid, os.WNOHANG)
        if pid:
            break
        if time.time() > deadline:
            gen.kill()
            pid, status, usage = os.wait4(gen.pid, 0)
            raise RuntimeError("trafgen did not finish in time")
        time.sleep(0.02)
    gen.returncode = os.waitstatus_to_exitcode(status)
    gen_cpu = usage.ru_utime + usage.ru_stime
    time.sleep(0.3)  # let the receive side drain
    wall = time.time() - t0
    (busy1, soft1), rx1 = cpu_ticks(), rx_packets()
    own1 = process_ticks(picket.proc.pid) if picket else 0
    seen = None
    if picket:
        picket.stop()
        seen = picket.packets()
    ipt("-F", "INPUT")
    if gen.returncode != 0:
        raise RuntimeError(f"trafgen failed: {gen.stderr.read().decode(errors='replace')}")
    return {
        "mode": mode,
        "sent": count,
        "received": rx1 - rx0,
        "wall_s": round(wall, 3),
        "machine_cpu_s": (busy1 - busy0) / USER_HZ,
        "softirq_cpu_s": (soft1 - soft0) / USER_HZ,
        "trafgen_cpu_s": round(gen_cpu, 3),
        "picket_cpu_s": (own1 - own0) / USER_HZ,
        "picket_packets": seen,
        "note": note,
    }


def receive_cpu(r, quiet_softirq_per_s):
    """CPU the packets cost on the receiving side: the machine's irq+softirq time (on veth
    the receive path, XDP included, runs as softirq; this kernel accounts it apart from
    tasks), less what softirq costs with no traffic, plus picket's own CPU. trafgen's cost
    is the same in every mode and left out."""
    return r["softirq_cpu_s"] - quiet_softirq_per_s * r["wall_s"] + r["picket_cpu_s"]


def table(results, quiet):
    lines = [
        "| mode | received | pps | picket read | softirq s | picket s | receive ns/pkt | picket ns/pkt |",
        "|---|---|---|---|---|---|---|---|",
    ]
    per = {}
    for mode in MODES:
        r = results.get(mode)
        if not r:
            continue
        pkts = max(r["received"], 1)
        total = receive_cpu(r, quiet) / pkts * 1e9
        own = r["picket_cpu_s"] / pkts * 1e9
        per[mode] = (total, own)
        lines.append(
            "| %s | %d | %.0f | %s | %.2f | %.2f | %.0f | %.0f |"
            % (mode, r["received"], r["received"] / r["wall_s"],
               r["picket_packets"] if r["picket_packets"] is not None else "-", r["softirq_cpu_s"],
               r["picket_cpu_s"], total, own)
        )

    def ratio(a, b, i):
        x, y = per.get(a, (None, None))[i], per.get(b, (None, None))[i]
        if x is None or y is None:
            return "n/a"
        if y <= 0:
            return "n/a (%s: %.0f ns)" % (b, y)
        return "%.1fx" % (x / y)

    lines.append("")
    lines.append("quiet softirq: %.3f CPU-s per s (subtracted)" % quiet)
    lines.append("afpacket / afxdp, per inspected packet: receive %s, picket's own %s"
                 % (ratio("afpacket", "afxdp", 0), ratio("afpacket", "afxdp", 1)))
    lines.append("nfq-drop / xdp-drop, per dropped packet: receive %s" % ratio("nfq-drop", "xdp-drop", 0))
    lines.append("idle / xdp-drop (the kernel stack dropping them / XDP dropping them): receive %s"
                 % ratio("idle", "xdp-drop", 0))
    return "\n".join(lines)


def quiet_softirq(seconds=2.0):
    """Softirq CPU-seconds per second with no test traffic (timers, RCU, other work)."""
    _, s0 = cpu_ticks()
    time.sleep(seconds)
    _, s1 = cpu_ticks()
    return (s1 - s0) / USER_HZ / seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rate", type=int, default=200_000, help="packets per second (default 200000)")
    ap.add_argument("--seconds", type=int, default=10, help="seconds per mode, at most 10 (default 10)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of " + ",".join(MODES))
    ap.add_argument("--binary", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")), "release", "picket"))
    ap.add_argument("--json", help="also write the raw results here")
    opts = ap.parse_args()
    opts.seconds = max(1, min(opts.seconds, 10))
    if os.geteuid() != 0:
        sys.exit("capture_bench: needs root (namespaces, XDP, NFQUEUE)")
    modes = [m for m in opts.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            sys.exit(f"capture_bench: unknown mode {m} ({', '.join(MODES)})")
    if "idle" not in modes:
        modes.insert(0, "idle")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    results = {}
    with tempfile.TemporaryDirectory(prefix="capture-bench-") as workdir:
        try:
            cap_mac, gen_mac = setup()
            conf = os.path.join(workdir, "packet.cfg")
            trafgen_config(conf, cap_mac, gen_mac)
            quiet = quiet_softirq()
            for mode in modes:
                r = run_mode(mode, opts, opts.binary, workdir, conf)
                results[mode] = r
                print(json.dumps(r), file=sys.stderr)
        finally:
            teardown()
    print(f"rate {opts.rate} pps for {opts.seconds} s per mode, 64-byte UDP frames over veth, {os.cpu_count()} cores")
    print(table(results, quiet))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
