#!/usr/bin/env python3
"""SYN-flood benchmark: the same spoofed SYN flood (trafgen, one core, as fast as it
goes) against `python3 -m http.server` in a server namespace, with and without picket's
XDP layer, while N sequential curl requests run from the client namespace.

  with picket:    picket -i <server veth> --ddos (SYN cookies from XDP + SYNPROXY)
  without:        no picket; the kernel's own SYN cookies (net.ipv4.tcp_syncookies=1)

Measured per run: flood rate (frames the client veth sent / seconds), legitimate success
rate (curls answered 200 within 5 s), picket's CPU (/proc/PID/stat utime+stime) and the
machine's softirq CPU (/proc/stat; the server's XDP and TCP work runs there on veth), as
a share of one core over the flood. Prints markdown table rows for the README.

Needs root, iproute2, trafgen, curl, clang (for the client veth's XDP pass program: on
veth, XDP_TX reaches a peer only when the peer has an XDP program) and a release build.
Usage: scripts/synflood_bench.py [--picket target/release/picket] [--seconds 8] [--curls 20]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time

CLIENT, SERVER = "pk-sfb-c", "pk-sfb-s"
CDEV, SDEV = "sfb-c", "sfb-s"
CIP, SIP, PORT = "10.81.0.1", "10.81.0.2", 8080
PASS_C = (
    '#include <linux/bpf.h>\n#include <bpf/bpf_helpers.h>\n'
    'SEC("xdp") int pass(struct xdp_md *ctx) { return XDP_PASS; }\n'
    'char LICENSE[] SEC("license") = "GPL";\n'
)
TICK = os.sysconf("SC_CLK_TCK")


def sh(*args, check=True, **kw):
    return subprocess.run(list(args), check=check, capture_output=True, text=True, **kw)


def ns(name, *args, **kw):
    return sh("ip", "netns", "exec", name, *args, **kw)


def setup(tmp):
    for n in (CLIENT, SERVER):
        sh("ip", "netns", "del", n, check=False)
        sh("ip", "netns", "add", n)
        sh("ip", "-n", n, "link", "set", "lo", "up")
    sh("ip", "-n", CLIENT, "link", "add", CDEV, "type", "veth", "peer", "name", SDEV, "netns", SERVER)
    sh("ip", "-n", CLIENT, "addr", "add", f"{CIP}/24", "dev", CDEV)
    sh("ip", "-n", SERVER, "addr", "add", f"{SIP}/24", "dev", SDEV)
    sh("ip", "-n", CLIENT, "link", "set", CDEV, "up")
    sh("ip", "-n", SERVER, "link", "set", SDEV, "up")
    src, obj = os.path.join(tmp, "pass.c"), os.path.join(tmp, "pass.o")
    with open(src, "w") as f:
        f.write(PASS_C)
    sh("clang", "-O2", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c", src, "-o", obj)
    sh("ip", "-n", CLIENT, "link", "set", "dev", CDEV, "xdpdrv", "obj", obj, "sec", "xdp")
    ns(SERVER, "sysctl", "-qw", "net.ipv4.tcp_syncookies=1")
    mac = ns(SERVER, "cat", f"/sys/class/net/{SDEV}/address").stdout.strip().split(":")
    conf = os.path.join(tmp, "synflood.cfg")
    ip = ", ".join(SIP.split("."))
    with open(conf, "w") as f:
        f.write(
            "{ " + ",".join("0x" + b for b in mac) + ", 0x02,0x00,0x00,0x00,0x00,0x01, c16(0x0800),\n"
            "0x45, 0x00, c16(40), drnd(2), c16(0x4000), 64, 6, csumip(14, 33),\n"
            f"198, 18, drnd(2), {ip},\n"
            f"drnd(2), c16({PORT}), drnd(4), c32(0), 0x50, 0x02, c16(64240), csumtcp(14, 34), c16(0) }}\n"
        )
    return conf


def teardown():
    for n in (CLIENT, SERVER):
        sh("ip", "netns", "del", n, check=False)


def softirq_ticks():
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[7])  # cpu user nice system idle iowait irq softirq


def proc_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime stime
    except OSError:
        return 0


def tx_packets():
    return int(ns(CLIENT, "cat", f"/sys/class/net/{CDEV}/statistics/tx_packets").stdout)


def curl():
    t = time.monotonic()
    out = ns(CLIENT, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
             f"http://{SIP}:{PORT}/", check=False)
    return out.stdout == "200", time.monotonic() - t


def flood(conf, seconds, limit, result):
    start, t0 = tx_packets(), time.monotonic()
    while True:
        left = seconds - (time.monotonic() - t0)
        sent = tx_packets() - start
        if left < 0.2 or sent >= limit:
            break
        # trafgen gives up when the veth pushes back: start it again.
        ns(CLIENT, "timeout", f"{left:.1f}", "trafgen", "--dev", CDEV, "--conf", conf, "-P", "1",
           "-n", str(limit - sent), check=False)
    result["sent"], result["seconds"] = tx_packets() - start, time.monotonic() - t0


def run(label, conf, args, picket_pid):
    res = {}
    soft0, pk0 = softirq_ticks(), proc_ticks(picket_pid) if picket_pid else 0
    th = threading.Thread(target=flood, args=(conf, args.seconds, args.packets, res))
    th.start()
    time.sleep(0.5)
    ok, times = 0, []
    for _ in range(args.curls):
        good, t = curl()
        ok += good
        times.append(t)
    th.join()
    secs = res["seconds"]
    soft = (softirq_ticks() - soft0) / TICK / secs * 100
    pk = (proc_ticks(picket_pid) - pk0) / TICK / secs * 100 if picket_pid else 0.0
    times.sort()
    return (f"| {label} | {res['sent'] / secs / 1000:.0f} kpps ({res['sent']} SYNs, {secs:.1f} s) | "
            f"{ok}/{args.curls} | {times[len(times) // 2] * 1000:.1f} ms | "
            f"{f'{pk:.0f} %' if picket_pid else '-'} | {soft:.0f} % |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--picket", default="target/release/picket")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--packets", type=int, default=3_000_000)
    ap.add_argument("--curls", type=int, default=20)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (namespaces, XDP)")
    with tempfile.TemporaryDirectory() as tmp:
        conf = setup(tmp)
        http = subprocess.Popen(["ip", "netns", "exec", SERVER, "python3", "-m", "http.server", str(PORT),
                                 "--bind", SIP], cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        picket = None
        try:
            time.sleep(1)
            rows = [run("kernel SYN cookies, no picket", conf, args, None)]
            yaml = os.path.join(tmp, "picket.yaml")
            with open(yaml, "w") as f:
                f.write(f"ddos:\n  syn-cookies:\n    ports: [{PORT}]\n")
            logs = os.path.join(tmp, "logs")
            os.mkdir(logs)
            picket = subprocess.Popen(["ip", "netns", "exec", SERVER, os.path.abspath(args.picket), "-i", SDEV,
                                       "--ddos", "-c", yaml, "-l", logs],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 60
            while not os.path.exists(os.path.join(logs, "picket-stats.json")):
                if picket.poll() is not None or time.monotonic() > deadline:
                    sys.exit("picket did not start")
                time.sleep(0.1)
            rows.append(run("picket --ddos (XDP SYN cookies + SYNPROXY)", conf, args, picket.pid))
        finally:
            if picket:
                picket.terminate()
                picket.wait(20)
            http.terminate()
            http.wait(5)
            teardown()
    print("| run | flood rate | curls OK | median curl | picket CPU | softirq CPU (machine) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
