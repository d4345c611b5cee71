#!/usr/bin/env python3
"""Inline latency and throughput benchmark: what does putting picket in the path cost a packet?

Builds three network namespaces -- client, middle box, server -- joined by veth pairs, and
measures traffic between client and server through the middle box for six setups:

  route       plain kernel IPv4 forwarding in the middle (ip_forward=1), no picket
  nfq-empty   the same router, FORWARD -j NFQUEUE --queue-balance 0:N-1 --queue-bypass,
              `picket -q 0 -q 1 ...` with an empty rule file
  nfq-et      the same with ET Open
  bridge      a plain Linux bridge (br0) in the middle, no picket
  afp-empty   `picket --bridge veth-x,veth-y ...` in the middle (no br0), empty rule file
  afp-et      the same with ET Open

Client and server send with transmit offloads off (`ethtool -K eth0 tx off`: finished
checksums, no TSO), as hosts behind a real wire do; --end-offloads leaves them on (the
AF_PACKET bridge cannot forward frames whose checksum the veth peer has not computed).

For each setup:
  rtt     UDP request/response round-trip time (examples/udp_rtt.rs) at --rtt-rates
          datagrams/s over 8 flows from 8 client addresses (NFQUEUE's --queue-balance
          hashes addresses only): p50/p90/p99/p99.9/max and losses;
  loss    one-way 60-byte frames (64 on the wire with the FCS) from trafgen in the client
          namespace at each of --loss-rates, from 64 addresses and 256 ports; "arrived" is the packet counter of a
          DROP rule for them in the server's INPUT chain, so exactly the generated packets
          that crossed the box are counted. Also recorded per step: what left the client
          (its eth0 tx counter), the rate trafgen achieved, picket's CPU time (all threads,
          /proc/PID/task/*/schedstat; utime+stime from /proc/PID/stat as a cross-check), the
          NFQUEUE kernel counters (queued, queue-full drops, user drops) and the machine's CPU
          busy share (/proc/stat);
  tcp     iperf3 throughput client -> server for --iperf-seconds.

Writes RESULTS_DIR/results.json (everything raw), RESULTS_DIR/results.md (the tables) and
RESULTS_DIR/<setup>/ (picket's logs and console output). Needs root, iproute2, iptables
(nft or legacy backend), trafgen (Debian: netsniff-ng), iperf3, ethtool, a release build of picket
and of the udp_rtt example:

  cargo build --release && cargo build --release --example udp_rtt
  sudo python3 scripts/inline_bench.py bench-results/

The namespaces and every process started are removed at the end, on an error and on
Ctrl-C or SIGTERM. Every wait is bounded; the whole run stops at --time-limit.
"""

import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ALL_SETUPS = ["route", "nfq-empty", "nfq-et", "bridge", "afp-empty", "afp-et"]
# Which plain-kernel setup each picket setup is compared with.
BASELINE_OF = {"nfq-empty": "route", "nfq-et": "route", "afp-empty": "bridge", "afp-et": "bridge"}

# Addresses: routed topology (client and server in two subnets, the middle routes).
ROUTED = {"client": "10.199.1.2", "client_gw": "10.199.1.1", "server": "10.199.2.2", "server_gw": "10.199.2.1"}
# Bridged topology: one subnet, the middle has no address.
BRIDGED = {"client": "10.199.3.2", "server": "10.199.3.3"}
PREFIX_LEN = 24
# More client addresses, one per round-trip flow: --queue-balance hashes addresses, not ports.
RTT_FLOWS = 8
RTT_SOURCE_FIRST = 10  # last byte of the first extra client address (10.199.x.10 ..)
# trafgen's frames come from 64 source addresses (last byte 100..163) and 256 source ports.
TRAFGEN_SOURCE_FIRST, TRAFGEN_SOURCE_LAST = 100, 163
# Interface names: eth0 in client and server; in the middle veth-x faces the client, veth-y the server.
END_IF = "eth0"
MID_CLIENT_IF = "veth-x"
MID_SERVER_IF = "veth-y"

RTT_PORT = 7000
IPERF_PORT = 5201
SINK_PORT = 9  # trafgen's destination port; dropped (and counted) in the server's INPUT chain
RTT_SIZE = 64  # UDP payload bytes of a round-trip request
LOSS_SETTLE_S = 0.3  # after trafgen ends, before counters are read: packets still in flight
SNAPSHOT_SETTLE_S = 1.2  # the same with picket: its stats snapshot is rewritten every second
PICKET_READY_TIMEOUT_S = 90  # ET Open takes a few seconds to compile
PICKET_STOP_TIMEOUT_S = 20
IDLE_BUSY_PCT = 15  # the machine counts as idle below this CPU busy share (both cores)
TRAFGEN_SLACK_S = 15  # beyond the nominal sending time
IPERF_SLACK_S = 20
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

# One trafgen frame: Ethernet (MACs filled in), IPv4 from the client's subnet (source address
# last byte counting TRAFGEN_SOURCE_FIRST..LAST) to the server, UDP from 256 source ports
# (0x4e00-0x4eff) to SINK_PORT, 18 bytes of payload: 60 bytes, 64 on the wire.
TRAFGEN_FRAME = """{{ {dst_mac}, {src_mac}, c16(0x0800),
  0x45, 0x00, c16(46), drnd(2), c16(0), 64, 17, csumip(14, 33),
  {src_net}, dinc(%d, %d), {dst_ip},
  0x4e, drnd(1), c16(%d), c16(26), c16(0),
  fill(0x41, 18) }}
""" % (TRAFGEN_SOURCE_FIRST, TRAFGEN_SOURCE_LAST, SINK_PORT)
FRAME_BYTES = 60


class BenchError(Exception):
    """A step that cannot go on; the message names what failed and how to fix it."""


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run(cmd, check=True, timeout=30, capture=True):
    """Runs a command (a list), returns CompletedProcess; raises BenchError on failure."""
    try:
        proc = subprocess.run(cmd, capture_output=capture, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"`{' '.join(cmd)}` did not finish in {timeout} s")
    except FileNotFoundError:
        raise BenchError(f"`{cmd[0]}` not found: install it (see the script's doc)")
    if check and proc.returncode != 0:
        raise BenchError(f"`{' '.join(cmd)}` failed ({proc.returncode}): {(proc.stderr or '').strip()[:300]}")
    return proc


def nsexec(ns, *cmd):
    return ["ip", "netns", "exec", ns, *cmd]


class Lab:
    """Three namespaces and the processes started in them; close() removes everything."""

    def __init__(self, tag):
        self.tag = tag
        self.names = {role: f"pkb-{role}-{tag}" for role in ("cli", "mid", "srv")}
        self.procs = []
        self.created = []

    @property
    def cli(self):
        return self.names["cli"]

    @property
    def mid(self):
        return self.names["mid"]

    @property
    def srv(self):
        return self.names["srv"]

    def build(self, routed, end_tx_off):
        for ns in self.names.values():
            run(["ip", "netns", "del", ns], check=False)
            run(["ip", "netns", "add", ns])
            self.created.append(ns)
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
            # No IPv6 chatter (router solicitations, DAD) in the counters.
            run(nsexec(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"), check=False)
            run(nsexec(ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"), check=False)
        run(["ip", "-n", self.cli, "link", "add", END_IF, "type", "veth", "peer", "name", MID_CLIENT_IF, "netns", self.mid])
        run(["ip", "-n", self.srv, "link", "add", END_IF, "type", "veth", "peer", "name", MID_SERVER_IF, "netns", self.mid])
        if routed:
            a = ROUTED
            run(["ip", "-n", self.cli, "addr", "add", f"{a['client']}/{PREFIX_LEN}", "dev", END_IF])
            run(["ip", "-n", self.srv, "addr", "add", f"{a['server']}/{PREFIX_LEN}", "dev", END_IF])
            run(["ip", "-n", self.mid, "addr", "add", f"{a['client_gw']}/{PREFIX_LEN}", "dev", MID_CLIENT_IF])
            run(["ip", "-n", self.mid, "addr", "add", f"{a['server_gw']}/{PREFIX_LEN}", "dev", MID_SERVER_IF])
            run(nsexec(self.mid, "sysctl", "-qw", "net.ipv4.ip_forward=1"))
        else:
            run(["ip", "-n", self.cli, "addr", "add", f"{BRIDGED['client']}/{PREFIX_LEN}", "dev", END_IF])
            run(["ip", "-n", self.srv, "addr", "add", f"{BRIDGED['server']}/{PREFIX_LEN}", "dev", END_IF])
        for ip in client_flow_addresses(routed):
            run(["ip", "-n", self.cli, "addr", "add", f"{ip}/{PREFIX_LEN}", "dev", END_IF])
        for ns, dev in ((self.cli, END_IF), (self.srv, END_IF), (self.mid, MID_CLIENT_IF), (self.mid, MID_SERVER_IF)):
            run(["ip", "-n", ns, "link", "set", dev, "up"])
        if end_tx_off:
            # Client and server send finished frames, like hosts with a NIC on a wire: no
            # checksum or segmentation offload left for the veth peer (a bridge cannot pass a
            # frame whose checksum is not yet computed).
            for ns in (self.cli, self.srv):
                run(nsexec(ns, "ethtool", "-K", END_IF, "tx", "off"))
        if routed:
            run(["ip", "-n", self.cli, "route", "add", "default", "via", ROUTED["client_gw"]])
            run(["ip", "-n", self.srv, "route", "add", "default", "via", ROUTED["server_gw"]])

    def add_linux_bridge(self):
        run(["ip", "-n", self.mid, "link", "add", "br0", "type", "bridge"])
        for dev in (MID_CLIENT_IF, MID_SERVER_IF):
            run(["ip", "-n", self.mid, "link", "set", dev, "master", "br0"])
        run(["ip", "-n", self.mid, "link", "set", "br0", "up"])
        # A plain bridge: bridged IPv4 does not go through iptables here.
        run(nsexec(self.mid, "sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=0"), check=False)

    def spawn(self, ns, cmd, stdout, stderr):
        proc = subprocess.Popen(nsexec(ns, *cmd), stdout=stdout, stderr=stderr, text=True)
        self.procs.append(proc)
        return proc

    def close(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
        for ns in self.created:
            pids = run(["ip", "netns", "pids", ns], check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            run(["ip", "netns", "del", ns], check=False)
        self.created = []


def client_flow_addresses(routed):
    """The client's extra addresses, one per round-trip flow."""
    net = (ROUTED if routed else BRIDGED)["client"].rsplit(".", 1)[0]
    return [f"{net}.{RTT_SOURCE_FIRST + i}" for i in range(RTT_FLOWS)]


def stop(proc, timeout):
    """SIGTERM, then SIGKILL after `timeout`; returns the exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    return proc.returncode


def link_stats(ns, dev):
    out = run(["ip", "-n", ns, "-s", "-j", "link", "show", dev]).stdout
    s = json.loads(out)[0]["stats64"]
    return {"rx_packets": s["rx"]["packets"], "rx_dropped": s["rx"]["dropped"],
            "tx_packets": s["tx"]["packets"], "tx_dropped": s["tx"]["dropped"]}


def mac_of(ns, dev):
    return json.loads(run(["ip", "-n", ns, "-j", "link", "show", dev]).stdout)[0]["address"]


def sink_rule_packets(ns, iptables):
    """Packets counted by the server's DROP rule for trafgen's frames."""
    out = run(nsexec(ns, iptables, "-L", "INPUT", "-v", "-x", "-n")).stdout
    for line in out.splitlines():
        if "DROP" in line and f"dpt:{SINK_PORT}" in line:
            return int(line.split()[0])
    raise BenchError(f"no DROP rule for udp port {SINK_PORT} in {ns}'s INPUT chain")


def nfq_counters(ns):
    """Per-queue kernel counters of /proc/net/netfilter/nfnetlink_queue in `ns` (per namespace)."""
    out = run(nsexec(ns, "cat", "/proc/net/netfilter/nfnetlink_queue"), check=False).stdout
    queues = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8:
            queues[int(f[0])] = {"portid": int(f[1]), "waiting": int(f[2]), "queue_dropped": int(f[5]),
                                 "user_dropped": int(f[6]), "id_sequence": int(f[7])}
    return queues


def nfq_delta(before, after):
    total = {"queued": 0, "queue_dropped": 0, "user_dropped": 0}
    per_queue = {}
    for q, a in after.items():
        b = before.get(q, {"queue_dropped": 0, "user_dropped": 0, "id_sequence": 0})
        d = {"queued": a["id_sequence"] - b["id_sequence"], "queue_dropped": a["queue_dropped"] - b["queue_dropped"],
             "user_dropped": a["user_dropped"] - b["user_dropped"]}
        per_queue[q] = d
        for k in total:
            total[k] += d[k]
    total["per_queue"] = per_queue
    return total


def process_cpu(pid):
    """(schedstat ns summed over threads, utime+stime ns from /proc/PID/stat) of a process."""
    sched = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as f:
                sched += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    ticks = 0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15 of stat)
    except (OSError, ValueError, IndexError):
        pass
    return sched, ticks * 1_000_000_000 // CLOCK_TICKS


def picket_snapshot(logdir):
    """Per-worker totals (packets, kernel drops, fail-open accepts, TX errors) from
    LOGDIR/picket-stats.json, which picket rewrites every second."""
    try:
        with open(os.path.join(logdir, "picket-stats.json")) as f:
            workers = json.load(f).get("workers", [])
    except (OSError, ValueError):
        return {}
    out = {}
    for w in workers:
        ips = w.get("ips") or {}
        out[w.get("name", "?")] = {"packets": w.get("packets", 0), "drops": w.get("drops", 0),
                                   "fail_open": ips.get("fail_open", 0), "tx_errors": ips.get("tx_errors", 0)}
    return out


def snapshot_delta(before, after):
    return {name: {k: v - before.get(name, {}).get(k, 0) for k, v in counts.items()} for name, counts in after.items()}


def backlog_drops():
    """Packets dropped because a CPU's input backlog was full (net.core.netdev_max_backlog),
    summed over CPUs from /proc/net/softnet_stat (machine-wide): where veth traffic is lost
    when the receiving side cannot keep up."""
    total = 0
    with open("/proc/net/softnet_stat") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 1:
                total += int(fields[1], 16)
    return total


def process_ticks():
    """utime+stime+cutime+cstime (clock ticks) of every process, by pid: the basis of the
    share of other work on the machine during a measurement (children that end in between
    are caught in their parent's cutime/cstime)."""
    ticks = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks[int(d)] = sum(int(x) for x in fields[11:15])
        except (OSError, ValueError, IndexError):
            pass
    return ticks


def other_work_pct(before, after, ours, wall_s):
    """Share of both cores used by processes not ours (not in the lab, not this script)."""
    used = sum(t - before.get(pid, 0) for pid, t in after.items() if pid not in ours)
    return round(100.0 * used / CLOCK_TICKS / wall_s / os.cpu_count(), 1)


def machine_cpu():
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return sum(v) - idle, sum(v)


class Bench:
    def __init__(self, args):
        self.args = args
        self.deadline = time.monotonic() + args.time_limit
        self.results = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "args": vars(args), "setups": {}}
        self.lab = None
        self.rules = {}

    def left(self):
        return self.deadline - time.monotonic()

    def check_time(self, what):
        if self.left() <= 0:
            raise BenchError(f"time limit ({self.args.time_limit} s) reached before {what}; raise --time-limit")

    # ---------------------------------------------------------------- preparation

    def prepare(self):
        a = self.args
        if os.geteuid() != 0:
            raise BenchError("needs root (namespaces, iptables): run with sudo")
        for tool in ("ip", "trafgen", "iperf3", "ethtool", a.iptables):
            if shutil.which(tool) is None:
                raise BenchError(f"`{tool}` not found: apt-get install iproute2 netsniff-ng iperf3 ethtool iptables")
        if not os.access(a.udp_rtt, os.X_OK):
            raise BenchError(f"{a.udp_rtt} missing: cargo build --release --example udp_rtt")
        needs_picket = any(s not in ("route", "bridge") for s in a.setups)
        if needs_picket and not os.access(a.picket, os.X_OK):
            raise BenchError(f"{a.picket} missing: cargo build --release")
        os.makedirs(a.results, exist_ok=True)
        empty = os.path.join(a.results, "empty.rules")
        open(empty, "w").close()
        self.rules["empty"] = empty
        if any(s.endswith("-et") for s in a.setups):
            files = sorted(glob.glob(os.path.join(a.et_open, "*.rules")))
            if not files:
                raise BenchError(f"no *.rules in {a.et_open}: pass --et-open DIR")
            et = os.path.join(a.results, "et-open.rules")
            with open(et, "w") as out:
                for path in files:
                    with open(path, errors="replace") as f:
                        out.write(f.read())
                        out.write("\n")
            self.rules["et"] = et
        if needs_picket:
            self.results["picket_version"] = (run([a.picket, "--version"], check=False).stdout.strip().splitlines() or [""])[0]
        self.results["kernel"] = os.uname().release
        self.results["cpus"] = os.cpu_count()

    # ---------------------------------------------------------------- one setup

    def run_setup(self, name):
        a = self.args
        routed = name in ("route", "nfq-empty", "nfq-et")
        addr = ROUTED if routed else BRIDGED
        out_dir = os.path.join(a.results, name)
        os.makedirs(out_dir, exist_ok=True)
        result = {"topology": "routed" if routed else "bridged"}
        self.lab = Lab(f"{os.getpid()}")
        lab = self.lab
        picket = None
        try:
            lab.build(routed, not a.end_offloads)
            if name == "bridge":
                lab.add_linux_bridge()
            # The server drops (and counts) trafgen's frames before UDP: no ICMP back through the box.
            run(nsexec(lab.srv, a.iptables, "-A", "INPUT", "-p", "udp", "--dport", str(SINK_PORT), "-j", "DROP"))
            if name.startswith("nfq"):
                balance = ["--queue-num", "0"] if a.queues == 1 else ["--queue-balance", f"0:{a.queues - 1}"]
                run(nsexec(lab.mid, a.iptables, "-A", "FORWARD", "-j", "NFQUEUE", *balance, "--queue-bypass"))
                result["ruleset"] = run(nsexec(lab.mid, a.iptables, "-S", "FORWARD")).stdout.strip().splitlines()
            responder_out = open(os.path.join(out_dir, "responder.json"), "w")
            responder = lab.spawn(lab.srv, [a.udp_rtt, "responder", "--bind", f"0.0.0.0:{RTT_PORT}"],
                                  responder_out, subprocess.PIPE)
            if name not in ("route", "bridge"):
                picket = self.start_picket(name, out_dir)
                result["picket_cmd"] = picket["cmd"]
            result["offloads_mid"] = self.offloads(lab.mid)
            self.warm_up(lab, addr)
            self.check_time(f"{name}: rtt")
            result["rtt"] = self.measure_rtt(lab, addr, picket)
            self.check_time(f"{name}: loss")
            result["loss"] = self.measure_loss(lab, addr, routed, picket, out_dir)
            self.check_time(f"{name}: tcp")
            result["tcp"] = self.measure_tcp(lab, addr, picket)
            stop(responder, 5)
            responder_out.close()
            try:
                with open(os.path.join(out_dir, "responder.json")) as f:
                    result["responder"] = json.loads(f.read().strip().splitlines()[-1])
            except (OSError, ValueError, IndexError):
                pass
            if picket is not None:
                if name.startswith("nfq"):
                    result["nfq_total"] = nfq_counters(lab.mid)
                result["picket_exit"] = self.stop_picket(picket, out_dir)
        finally:
            if picket is not None and picket["proc"].poll() is None:
                stop(picket["proc"], PICKET_STOP_TIMEOUT_S)
            lab.close()
            self.lab = None
        return result

    def offloads(self, ns):
        """Segmentation/receive offloads of the middle interfaces (picket may turn some off)."""
        if shutil.which("ethtool") is None:
            return None
        out = {}
        for dev in (MID_CLIENT_IF, MID_SERVER_IF):
            text = run(nsexec(ns, "ethtool", "-k", dev), check=False).stdout
            keep = ("generic-receive-offload", "tcp-segmentation-offload", "generic-segmentation-offload",
                    "rx-gro-hw", "large-receive-offload", "rx-checksumming", "tx-checksumming")
            out[dev] = {k: v.split()[0] for k, v in (l.strip().split(":", 1) for l in text.splitlines() if ":" in l)
                        if k in keep and v.strip()}
        return out

    def start_picket(self, name, out_dir):
        a = self.args
        rules = self.rules["et" if name.endswith("-et") else "empty"]
        logdir = os.path.join(out_dir, "logs")
        shutil.rmtree(logdir, ignore_errors=True)
        os.makedirs(logdir)
        if name.startswith("nfq"):
            mode = [arg for q in range(a.queues) for arg in ("-q", str(q))]
        else:
            mode = ["--bridge", f"{MID_CLIENT_IF},{MID_SERVER_IF}", "--workers", str(a.workers)]
        cmd = [a.picket, *mode, "-S", rules, "-l", logdir, "-k", "none", *a.picket_arg]
        console = open(os.path.join(out_dir, "picket-console.txt"), "w")
        log(f"{name}: starting picket: {' '.join(cmd)}")
        proc = self.lab.spawn(self.lab.mid, cmd, console, subprocess.STDOUT)
        started = time.monotonic()
        stats = os.path.join(logdir, "picket-stats.json")
        while True:
            if proc.poll() is not None:
                console.flush()
                with open(console.name) as f:
                    tail = f.read().strip().splitlines()[-3:]
                raise BenchError(f"{name}: picket exited with {proc.returncode} at start-up: {' / '.join(tail)}")
            ready = os.path.exists(stats)
            if ready and name.startswith("nfq"):
                bound = nfq_counters(self.lab.mid)
                ready = all(q in bound for q in range(a.queues))
            if ready:
                break
            if time.monotonic() - started > PICKET_READY_TIMEOUT_S:
                raise BenchError(f"{name}: picket not ready after {PICKET_READY_TIMEOUT_S} s "
                                 f"(no {stats}{' or queues not bound' if name.startswith('nfq') else ''})")
            time.sleep(0.1)
        log(f"{name}: picket ready after {time.monotonic() - started:.1f} s")
        return {"proc": proc, "cmd": " ".join(cmd), "logdir": logdir, "console": console,
                "startup_s": round(time.monotonic() - started, 2)}

    def stop_picket(self, picket, out_dir):
        code = stop(picket["proc"], PICKET_STOP_TIMEOUT_S)
        picket["console"].close()
        out = {"exit_code": code}
        try:
            with open(os.path.join(picket["logdir"], "picket-stats.json")) as f:
                out["final_stats"] = json.load(f)
        except (OSError, ValueError):
            pass
        return out

    def our_pids(self):
        """This script and every process in the lab's namespaces."""
        pids = {os.getpid()}
        for ns in self.lab.created:
            pids.update(int(p) for p in run(["ip", "netns", "pids", ns], check=False).stdout.split() if p.isdigit())
        return pids

    def udp_client(self, ns, server, rate, count, timeout_ms=1000):
        a = self.args
        routed = server == ROUTED["server"]
        cmd = nsexec(ns, a.udp_rtt, "client", "--to", f"{server}:{RTT_PORT}", "--rate", str(rate),
                     "--count", str(count), "--size", str(RTT_SIZE), "--flows", str(RTT_FLOWS),
                     "--from", ",".join(client_flow_addresses(routed)), "--timeout-ms", str(timeout_ms))
        out = run(cmd, timeout=count / rate + timeout_ms / 1000 + 30).stdout
        return json.loads(out.strip().splitlines()[-1])

    def warm_up(self, lab, addr):
        """Some round trips before measuring: ARP resolved, flows known, the path proven to work."""
        deadline = time.monotonic() + 10
        while True:
            r = self.udp_client(lab.cli, addr["server"], 1000, 200, 500)
            if r["received"] > 0:
                return
            if time.monotonic() > deadline:
                raise BenchError("no UDP reply through the middle box in 10 s (warm-up): the path is broken")

    def measure_rtt(self, lab, addr, picket):
        """--rtt-repeat runs per rate in which other processes used at most --max-other-work %
        of the machine (up to three times as many tries; the noisy ones are kept too). The
        table shows the quiet run with the median p99."""
        a = self.args
        out = {}
        for rate in a.rtt_rates:
            runs = []
            for _ in range(3 * a.rtt_repeat):
                if sum(r["other_work_pct"] <= a.max_other_work for r in runs) >= a.rtt_repeat:
                    break
                cpu0 = process_cpu(picket["proc"].pid) if picket else None
                m0, t0, w0 = machine_cpu(), process_ticks(), time.monotonic()
                r = self.udp_client(lab.cli, addr["server"], rate, int(rate * a.rtt_seconds))
                m1, t1, wall = machine_cpu(), process_ticks(), time.monotonic() - w0
                r["machine_cpu_busy_pct"] = round(100.0 * (m1[0] - m0[0]) / max(m1[1] - m0[1], 1), 1)
                # Never above the machine's busy share (a reaped child can be counted twice).
                r["other_work_pct"] = min(other_work_pct(t0, t1, self.our_pids(), wall), r["machine_cpu_busy_pct"])
                if picket:
                    cpu1 = process_cpu(picket["proc"].pid)
                    r["picket_cpu_ns_per_round_trip"] = round((cpu1[0] - cpu0[0]) / max(r["received"], 1))
                log(f"  rtt at {rate} pps: p50 {r['p50_us']} p99 {r['p99_us']} p99.9 {r['p99_9_us']} µs, "
                    f"lost {r['lost']} of {r['sent']}, machine {r['machine_cpu_busy_pct']} % busy, "
                    f"other work {r['other_work_pct']} %")
                runs.append(r)
            quiet = [r for r in runs if r["other_work_pct"] <= a.max_other_work] or runs
            median = sorted(quiet, key=lambda r: r["p99_us"])[len(quiet) // 2]
            out[str(rate)] = dict(median, runs=runs, quiet_runs=len(quiet) if quiet is not runs else 0)
        return out

    def measure_loss(self, lab, addr, routed, picket, out_dir):
        a = self.args
        next_hop_mac = mac_of(lab.mid, MID_CLIENT_IF) if routed else mac_of(lab.srv, END_IF)
        src_mac = mac_of(lab.cli, END_IF)
        hexmac = lambda mac: ", ".join("0x" + b for b in mac.split(":"))
        dotted = lambda ip: ", ".join(ip.split("."))
        src_net = ", ".join(addr["client"].split(".")[:3])
        conf = os.path.join(out_dir, "trafgen.cfg")
        with open(conf, "w") as f:
            f.write(TRAFGEN_FRAME.format(dst_mac=hexmac(next_hop_mac), src_mac=hexmac(src_mac),
                                         src_net=src_net, dst_ip=dotted(addr["server"])))
        steps = []
        for rate in a.loss_rates:
            self.check_time(f"loss step {rate}")
            count = int(rate * a.loss_seconds)
            cli0, srv0 = link_stats(lab.cli, END_IF), sink_rule_packets(lab.srv, a.iptables)
            mid0 = {d: link_stats(lab.mid, d) for d in (MID_CLIENT_IF, MID_SERVER_IF)}
            nfq0 = nfq_counters(lab.mid) if picket and routed else None
            cpu0 = process_cpu(picket["proc"].pid) if picket else None
            snap0 = picket_snapshot(picket["logdir"]) if picket else None
            m0, backlog0 = machine_cpu(), backlog_drops()
            t0 = time.monotonic()
            run(nsexec(lab.cli, "trafgen", "--dev", END_IF, "--conf", conf, "-P", "1", "-C", "-q",
                       "-b", f"{rate}pps", "-n", str(count)),
                timeout=a.loss_seconds + TRAFGEN_SLACK_S)
            sending = time.monotonic() - t0
            m1 = machine_cpu()  # busy share over the sending time only
            # picket's snapshot file is a second old at most: wait for one written after the step.
            time.sleep(SNAPSHOT_SETTLE_S if picket else LOSS_SETTLE_S)
            cli1, srv1 = link_stats(lab.cli, END_IF), sink_rule_packets(lab.srv, a.iptables)
            mid1 = {d: link_stats(lab.mid, d) for d in (MID_CLIENT_IF, MID_SERVER_IF)}
            # Sent: what trafgen was asked for, unless fewer frames left the client's interface
            # (its tx counter also counts the odd ARP packet, so it is only an upper bound).
            sent = min(count, cli1["tx_packets"] - cli0["tx_packets"])
            arrived = srv1 - srv0
            step = {"rate_pps": rate, "count": count, "sending_s": round(sending, 3),
                    "achieved_pps": round(count / sending), "sent": sent, "arrived": arrived,
                    "lost": max(sent - arrived, 0),
                    "loss_pct": round(100.0 * max(sent - arrived, 0) / max(sent, 1), 3),
                    "machine_cpu_busy_pct": round(100.0 * (m1[0] - m0[0]) / max(m1[1] - m0[1], 1), 1),
                    "backlog_drops": backlog_drops() - backlog0,
                    "mid_drops": {d: {k: mid1[d][k] - mid0[d][k] for k in ("rx_dropped", "tx_dropped")}
                                  for d in mid1}}
            if picket:
                cpu1 = process_cpu(picket["proc"].pid)
                wall = time.monotonic() - t0
                step["picket_cpu_ns"] = cpu1[0] - cpu0[0]
                step["picket_cpu_ns_stat"] = cpu1[1] - cpu0[1]
                step["picket_cpu_pct"] = round(100.0 * step["picket_cpu_ns"] / 1e9 / wall, 1)
                step["picket_ns_per_packet"] = round(step["picket_cpu_ns"] / max(arrived, 1))
                step["picket_workers"] = snapshot_delta(snap0, picket_snapshot(picket["logdir"]))
            if nfq0 is not None:
                step["nfq"] = nfq_delta(nfq0, nfq_counters(lab.mid))
            # Forwarded but never inspected: accepted by the kernel when picket's socket was
            # full (fail-open, counted by picket) or when the queue itself was full (no id given).
            if picket:
                fail_open = sum(w["fail_open"] for w in step["picket_workers"].values())
                not_queued = max(arrived - step["nfq"]["queued"], 0) if nfq0 is not None else 0
                step["uninspected"] = fail_open + not_queued
            log(f"  loss at {rate} pps: sent {sent} at {step['achieved_pps']} pps, arrived {arrived} "
                f"({step['loss_pct']} % lost)" + (f", picket {step['picket_ns_per_packet']} ns/packet" if picket else "")
                + (f", queued {step['nfq']['queued']}" if nfq0 is not None else "")
                + (f", picket kernel drops {sum(w['drops'] for w in step['picket_workers'].values())}, "
                   f"uninspected {step['uninspected']}" if picket else ""))
            steps.append(step)
        return steps

    def measure_tcp(self, lab, addr, picket):
        a = self.args
        server = lab.spawn(lab.srv, ["iperf3", "-s", "-1", "-p", str(IPERF_PORT)], subprocess.DEVNULL, subprocess.DEVNULL)
        time.sleep(0.5)
        srv0 = link_stats(lab.srv, END_IF)
        cpu0 = process_cpu(picket["proc"].pid) if picket else None
        t0 = time.monotonic()
        proc = run(nsexec(lab.cli, "iperf3", "-c", addr["server"], "-p", str(IPERF_PORT), "-t", str(a.iperf_seconds),
                          "-J"), check=False, timeout=a.iperf_seconds + IPERF_SLACK_S)
        wall = time.monotonic() - t0
        stop(server, 5)
        try:
            j = json.loads(proc.stdout)
        except ValueError:
            return {"error": f"iperf3 gave no JSON (exit {proc.returncode}): {proc.stderr.strip()[:200]}"}
        if "error" in j:
            return {"error": j["error"]}
        end = j["end"]
        srv1 = link_stats(lab.srv, END_IF)
        out = {"gbit_s": round(end["sum_received"]["bits_per_second"] / 1e9, 3),
               "retransmits": end["sum_sent"].get("retransmits"),
               "server_rx_packets": srv1["rx_packets"] - srv0["rx_packets"]}
        if picket:
            cpu1 = process_cpu(picket["proc"].pid)
            out["picket_cpu_pct"] = round(100.0 * (cpu1[0] - cpu0[0]) / 1e9 / wall, 1)
        log(f"  tcp: {out['gbit_s']} Gbit/s, {out['retransmits']} retransmits")
        return out

    # ---------------------------------------------------------------- all

    def wait_idle(self):
        """Waits (at most --wait-idle s) for a second in which the machine is mostly idle: other
        work on the same cores shows up as latency tails. Returns the last busy share seen."""
        limit = time.monotonic() + min(self.args.wait_idle, max(self.left() - 60, 0))
        while True:
            m0 = machine_cpu()
            time.sleep(1)
            m1 = machine_cpu()
            busy = round(100.0 * (m1[0] - m0[0]) / max(m1[1] - m0[1], 1), 1)
            if busy <= IDLE_BUSY_PCT or time.monotonic() >= limit:
                if busy > IDLE_BUSY_PCT:
                    log(f"machine still {busy} % busy with other work: measuring anyway")
                return busy

    def run_all(self):
        self.prepare()
        for name in self.args.setups:
            self.check_time(name)
            busy = self.wait_idle()
            log(f"setup {name} (machine {busy} % busy before)")
            try:
                self.results["setups"][name] = self.run_setup(name)
                self.results["setups"][name]["machine_busy_before_pct"] = busy
                self.results["setups"][name]["loadavg_before"] = os.getloadavg()
            except BenchError as e:
                log(f"{name}: FAILED: {e}")
                self.results["setups"][name] = {"error": str(e)}
            self.save()
        self.results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
        self.save()

    def save(self):
        with open(os.path.join(self.args.results, "results.json"), "w") as f:
            json.dump(self.results, f, indent=1, default=str)
        with open(os.path.join(self.args.results, "results.md"), "w") as f:
            f.write(markdown(self.results, self.args))


def fmt(v, digits=0):
    if v is None:
        return "–"
    return f"{v:,.{digits}f}".replace(",", " ") if isinstance(v, (int, float)) else str(v)


def ratio(a, b):
    if a is None or b in (None, 0):
        return "–"
    return f"{a / b:.2f}x"


def markdown(results, args):
    setups = results["setups"]
    lines = []
    rtt_rate = str(args.rtt_rates[0])
    lines.append(f"UDP round trip at {int(rtt_rate):,} requests/s ({RTT_FLOWS} flows, {RTT_SIZE}-byte payloads, "
                 f"{args.rtt_seconds:g} s, the run with the median p99 of {args.rtt_repeat} in which other work "
                 f"used at most {args.max_other_work:g} % of the machine), "
                 f"TCP throughput (iperf3, {args.iperf_seconds} s, 1 stream); µs; ratios to the plain kernel "
                 "setup of the same topology (routing for NFQUEUE, br0 for the bridge).".replace(",", " ", 1))
    lines.append("")
    lines.append("| setup | p50 | p99 | p99.9 | max | lost | p50 ratio | p99 ratio | added p99 | busy / other work "
                 "| TCP Gbit/s | TCP ratio | picket CPU during TCP |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

    def rtt_of(name):
        r = setups.get(name, {}).get("rtt", {}).get(rtt_rate)
        return r

    def tcp_of(name):
        return setups.get(name, {}).get("tcp", {}).get("gbit_s")

    for name in args.setups:
        s = setups.get(name, {})
        if "error" in s:
            lines.append(f"| {name} | failed: {s['error'][:120]} ||||||||||||")
            continue
        r = rtt_of(name) or {}
        base = BASELINE_OF.get(name)
        b = rtt_of(base) if base else None
        added = (r.get("p99_us") - b["p99_us"]) if (b and r.get("p99_us") is not None) else None
        tcp = s.get("tcp", {})
        lines.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            name, fmt(r.get("p50_us"), 1), fmt(r.get("p99_us"), 1), fmt(r.get("p99_9_us"), 1), fmt(r.get("max_us"), 0),
            fmt(r.get("lost")),
            ratio(r.get("p50_us"), b["p50_us"]) if b else "", ratio(r.get("p99_us"), b["p99_us"]) if b else "",
            fmt(added, 1) if base else "",
            f"{fmt(r.get('machine_cpu_busy_pct'), 0)} % / {fmt(r.get('other_work_pct'), 0)} %",
            fmt(tcp.get("gbit_s"), 2) if "gbit_s" in tcp else tcp.get("error", "–")[:60],
            ratio(tcp_of(name), tcp_of(base)) if base else "",
            (fmt(tcp.get("picket_cpu_pct"), 0) + " %") if "picket_cpu_pct" in tcp else ""))
    lines.append("")
    lines.append(f"One-way 64-byte frames (trafgen, one process, 64 source addresses x 256 ports, {args.loss_seconds} s a step): "
                 "packets lost in the box (left the client, did not reach the server) and (NFQUEUE) passed "
                 "uninspected / the rate trafgen "
                 "achieved; picket's CPU time per forwarded packet (all threads) and the machine's busy share "
                 f"(both cores, trafgen included).")
    lines.append("")
    head = "| setup | " + " | ".join(f"{r // 1000}k pps: lost (sent/s) | ns/pkt, busy" for r in args.loss_rates) + " | loss point |"
    lines.append(head)
    lines.append("|---|" + "---:|---:|" * len(args.loss_rates) + "---|")
    for name in args.setups:
        s = setups.get(name, {})
        if "error" in s or "loss" not in s:
            continue
        cells = []
        loss_point = None
        for step in s["loss"]:
            unins = step.get("uninspected", 0)
            cells.append(f"{fmt(step['lost'])}" + (f" + {fmt(unins)} uninspected" if unins else "")
                         + f" ({fmt(step['achieved_pps'] / 1000, 0)}k/s)")
            ns = step.get("picket_ns_per_packet")
            cells.append((f"{fmt(ns)} ns, " if ns is not None else "") + f"{fmt(step['machine_cpu_busy_pct'], 0)} %")
            missed_pct = 100.0 * (step["lost"] + unins) / max(step["sent"], 1)
            if loss_point is None and missed_pct > args.loss_threshold:
                loss_point = step["rate_pps"]
        top = max((st["achieved_pps"] for st in s["loss"]), default=0)
        lp = f"{loss_point // 1000}k pps" if loss_point else f"none up to {fmt(top / 1000, 0)}k/s sent"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {lp} |")
    lines.append("")
    lines.append(f"Loss point: the lowest step where more than {args.loss_threshold} % of what left the client was "
                 "lost or passed uninspected (NFQUEUE fail-open: accepted by the kernel without a verdict).")
    notes = []
    for name in args.setups:
        s = setups.get(name, {})
        for step in s.get("loss", []):
            q = step.get("nfq")
            if q is not None and q["queued"] == 0:
                notes.append(f"WARNING {name}: nothing was queued at {step['rate_pps']} pps (NFQUEUE not in the path?)")
            if step["lost"] and "picket_workers" in step:
                ring = sum(w["drops"] for w in step["picket_workers"].values())
                notes.append(f"{name} at {step['rate_pps'] // 1000}k pps: {step['lost']} lost; picket's kernel "
                             f"counters (ring or queue full) show {ring}, the CPUs' input backlogs "
                             f"{step['backlog_drops']}")
            if q and (q["queue_dropped"] or q["user_dropped"]):
                notes.append(f"{name} at {step['rate_pps']} pps: queue full {q['queue_dropped']}, "
                             f"netlink drops {q['user_dropped']} (with --queue-bypass/fail-open, queue-full packets may be accepted)")
    if notes:
        lines.append("")
        lines.extend(f"- {n}" for n in notes)
    lines.append("")
    lines.append(f"Machine: {results.get('cpus')} CPUs, kernel {results.get('kernel')}; run {results.get('started')}; "
                 f"{results.get('picket_version', '')}".strip())
    return "\n".join(lines) + "\n"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("results", help="directory for results.json, results.md and per-setup logs")
    ints = lambda s: [int(x) for x in s.split(",") if x]
    p.add_argument("--setups", type=lambda s: s.split(","), default=ALL_SETUPS,
                   help=f"comma list of {','.join(ALL_SETUPS)} (default all)")
    p.add_argument("--picket", default=os.path.join(REPO, "target", "release", "picket"))
    p.add_argument("--udp-rtt", default=os.path.join(REPO, "target", "release", "examples", "udp_rtt"))
    p.add_argument("--et-open", default=os.path.join(REPO, "..", "shared", "rules", "et-open-2024-04-21"),
                   help="directory of ET Open *.rules (concatenated into one file)")
    p.add_argument("--iptables", default="iptables",
                   help="iptables binary for the NFQUEUE rule (iptables-nft translates NFQUEUE to nft `queue`; "
                        "use iptables-legacy where that is not built)")
    p.add_argument("--end-offloads", action="store_true",
                   help="leave tx checksum/segmentation offload on in client and server (default: off, as "
                        "hosts behind a wire; the AF_PACKET bridge cannot forward unfinished checksums)")
    p.add_argument("--queues", type=int, default=2, help="NFQUEUE queues (picket -q 0 .. -q N-1)")
    p.add_argument("--workers", type=int, default=2, help="picket --bridge workers")
    p.add_argument("--picket-arg", action="append", default=[], help="extra argument for picket (repeat)")
    p.add_argument("--rtt-rates", type=ints, default=[10000], help="round-trip request rates (first one in the table)")
    p.add_argument("--rtt-seconds", type=float, default=3.0)
    p.add_argument("--rtt-repeat", type=int, default=3, help="round-trip runs per rate (the median p99 is shown)")
    p.add_argument("--max-other-work", type=float, default=10.0,
                   help="a round-trip run counts only if other processes used at most this %% of the machine")
    p.add_argument("--loss-rates", type=ints, default=[50000, 100000, 200000, 300000])
    p.add_argument("--loss-seconds", type=float, default=2.0)
    p.add_argument("--loss-threshold", type=float, default=0.1, help="loss %% that marks the loss point")
    p.add_argument("--iperf-seconds", type=int, default=5)
    p.add_argument("--wait-idle", type=int, default=60,
                   help="seconds to wait, before each setup, for other work on the machine to stop")
    p.add_argument("--time-limit", type=int, default=900, help="seconds for the whole run")
    args = p.parse_args()
    bad = [s for s in args.setups if s not in ALL_SETUPS]
    if bad:
        p.error(f"unknown setup(s) {','.join(bad)}; choose from {','.join(ALL_SETUPS)}")
    if not 1 <= args.queues <= 16 or not 1 <= args.workers <= 64 or args.rtt_repeat < 1:
        p.error("--queues must be 1..16, --workers 1..64 and --rtt-repeat at least 1")
    return args


def main():
    args = parse_args()
    bench = Bench(args)

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    try:
        bench.run_all()
    except KeyboardInterrupt:
        log("interrupted: cleaning up")
        return 130
    except BenchError as e:
        log(f"error: {e}")
        return 1
    finally:
        if bench.lab is not None:
            bench.lab.close()
    print(open(os.path.join(args.results, "results.md")).read())
    return 0


if __name__ == "__main__":
    sys.exit(main())
