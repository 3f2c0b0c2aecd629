#!/usr/bin/env python3
"""A central walwatch under hostile load, against itself unloaded.

The agent ships a real server's log (the noise fixture: statements and
checkpoints) as Vector's http sink does: gzip'd JSON batches of BATCH lines
on one keep-alive connection, one every PACE seconds, each answered before
the next is sent. Each
batch's latency (post to 2xx) is measured twice in the same run:

* reference: nothing else on the port;
* under attack, from other loopback addresses (each a peer to the central):
  IDLE connections that never send a byte, SLOW ones sending their head a
  byte a second, and FLOODERS posting oversized requests as fast as they
  are answered (a 100 TB Content-Length, a 64 KiB header line, a body over
  max_batch_bytes), none of them with a token.

Reported: p50 and p99 of both runs and their ratio, the daemon's peak RSS
(sampled every 50 ms) and CPU in each, the refusals `status` counted, and
that the store took every line once.

Usage: bench/hostile_bench.py WALWATCH LOGDIR   (bench/hostile-bench.sh runs it)
"""

import asyncio
import glob
import gzip
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

BATCH = 50
# One batch every PACE seconds, as ten agents shipping once a second would:
# the attack runs for the whole phase (some 15 s).
PACE = 0.1
IDLE, SLOW, FLOODERS = 1000, 100, 8
TOKEN = "hostile-bench-token-0123456789"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def batches(log, host):
    out, offset, events = [], 0, []
    with open(log, "rb") as f:
        data = f.read()
    for raw in data.split(b"\n")[:-1]:
        text = raw.decode("utf-8", "replace")
        if text.startswith("\t") and events:
            events[-1]["message"] += "\n" + text
        else:
            events.append({"message": text, "host": host, "file": "/var/log/postgresql/postgresql-15-main.log",
                           "offset": offset, "source_type": "file", "timestamp": "2026-11-25T07:00:00Z"})
        offset += len(raw) + 1
    for i in range(0, len(events), BATCH):
        out.append(gzip.compress(json.dumps(events[i:i + BATCH]).encode()))
    return out, len(events)


def ship(port, bodies):
    """Latencies of each batch, in seconds."""
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip", "Authorization": f"Bearer {TOKEN}"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    took = []
    for body in bodies:
        t0 = time.monotonic()
        for attempt in range(50):
            try:
                conn.request("POST", "/ingest/vector", body=body, headers=headers)
                r = conn.getresponse()
                answer = r.read()
                break
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        if r.status != 200:
            sys.exit(f"batch refused: {r.status} {answer!r}")
        took.append(time.monotonic() - t0)
        time.sleep(max(0.0, PACE - took[-1]))
    return took


async def attack(port, stop):
    """Idle, slow and flooding unauthenticated peers until `stop` is set."""
    counts = {"idle": 0, "slow": 0, "flood requests": 0}
    held = []

    async def opened(source):
        try:
            r, w = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
            return r, w
        except OSError:
            return None

    for i in range(IDLE):
        c = await opened(f"127.0.1.{1 + i % 20}")
        if c:
            held.append(c)
            counts["idle"] += 1

    async def slow(i):
        c = await opened(f"127.0.2.{1 + i % 50}")
        if not c:
            return
        counts["slow"] += 1
        r, w = c
        head = b"POST /ingest/vector HTTP/1.1\r\nHost: central\r\nX-Slow: " + b"a" * 200
        for byte in head:
            if stop.is_set():
                break
            try:
                w.write(bytes([byte]))
                await w.drain()
            except OSError:
                c = await opened(f"127.0.2.{1 + i % 50}")
                if not c:
                    return
                r, w = c
            await asyncio.sleep(1.0)

    oversized = [
        b"POST /ingest/vector HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000000000\r\n\r\n",
        b"GET /" + b"a" * (64 << 10) + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        b"POST /ingest/vector HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * (64 << 10) + b"\r\n\r\n",
    ]

    async def flood(i):
        n = 0
        while not stop.is_set():
            c = await opened(f"127.0.3.{1 + i}")
            if not c:
                await asyncio.sleep(0.01)
                continue
            r, w = c
            try:
                w.write(oversized[n % len(oversized)])
                await w.drain()
                await asyncio.wait_for(r.read(4096), 5)
            except (OSError, asyncio.TimeoutError):
                pass
            w.close()
            n += 1
            counts["flood requests"] += 1

    tasks = [asyncio.create_task(slow(i)) for i in range(SLOW)] + [asyncio.create_task(flood(i)) for i in range(FLOODERS)]
    while not stop.is_set():
        await asyncio.sleep(0.1)
    for t in tasks:
        t.cancel()
    for _, w in held:
        w.close()
    return counts


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))]


class Sampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.running = pid, 0, True

    def run(self):
        while self.running:
            self.peak = max(self.peak, rss_kb(self.pid))
            time.sleep(0.05)


def phase(pid, port, bodies, attacked):
    stop = threading.Event()
    counts = {}
    attacker = None
    if attacked:
        loop = asyncio.new_event_loop()
        attacker = threading.Thread(target=lambda: counts.update(loop.run_until_complete(attack(port, stop))))
        attacker.start()
        time.sleep(3)  # the idle connections open, the slow ones start
    sampler = Sampler(pid)
    sampler.start()
    cpu0, t0 = cpu_seconds(pid), time.monotonic()
    took = ship(port, bodies)
    cpu = (cpu_seconds(pid) - cpu0) / (time.monotonic() - t0)
    stop.set()
    sampler.running = False
    if attacker:
        attacker.join()
    return took, sampler.peak, cpu, counts


def main():
    walwatch, logdir = sys.argv[1], sys.argv[2]
    log = sorted(glob.glob(os.path.join(logdir, "*.log")))[0]
    work = tempfile.mkdtemp(prefix="walwatch-hostile-bench-")
    try:
        port, metrics = free_port(), free_port()
        with open(f"{work}/tokens", "w") as f:
            f.write(f"{TOKEN} db-*\n")
        with open(f"{work}/central.toml", "w") as f:
            f.write(f'[store]\npath = "{work}/central.db"\n[metrics]\nlisten = "127.0.0.1:{metrics}"\n'
                    f'[ingest]\nlisten = "127.0.0.1:{port}"\ntoken_file = "{work}/tokens"\nsettle = "1s"\n')
        out = open(f"{work}/central.log", "w")
        daemon = subprocess.Popen([walwatch, "run", "--config", f"{work}/central.toml"], stdout=out, stderr=out)
        time.sleep(1)
        idle_rss = rss_kb(daemon.pid)
        ref_bodies, lines = batches(log, "db-ref")
        hot_bodies, _ = batches(log, "db-hot")
        ref, ref_peak, ref_cpu, _ = phase(daemon.pid, port, ref_bodies, False)
        hot, hot_peak, hot_cpu, counts = phase(daemon.pid, port, hot_bodies, True)
        time.sleep(2.5)
        status = json.loads(subprocess.run([walwatch, "status", "--db", f"{work}/central.db", "--format", "json"],
                                           capture_output=True).stdout)
        daemon.terminate()
        daemon.wait()
        refused = next(l for l in status["listeners"] if l["name"] == "ingest")["refused"]
        taken = {c["name"]: sum(f["size"] for f in c["files"]) for c in status["clusters"]}
        size = os.path.getsize(log)
        same = taken.get("db-ref:15-main") == size and taken.get("db-hot:15-main") == size
        ms = lambda s: f"{s * 1000:.1f} ms"
        print(f"| agent | {lines:,} lines of {os.path.basename(log)} ({size / 2**20:.1f} MiB) in {len(ref_bodies)} "
              f"gzip'd batches of {BATCH} |")
        print("| --- | --- |")
        print(f"| reference (no attack) | p50 {ms(percentile(ref, 50))}, p99 {ms(percentile(ref, 99))}; "
              f"peak RSS {ref_peak / 1024:.1f} MiB; daemon CPU {ref_cpu:.0%} of a core |")
        print(f"| under attack ({counts.get('idle', 0)} idle, {counts.get('slow', 0)} slow, "
              f"{counts.get('flood requests', 0):,} oversized requests) | p50 {ms(percentile(hot, 50))}, "
              f"p99 **{ms(percentile(hot, 99))}**; peak RSS **{hot_peak / 1024:.1f} MiB**; daemon CPU {hot_cpu:.0%} of a core |")
        print(f"| ratio attack / reference | p50 {percentile(hot, 50) / percentile(ref, 50):.2f}x, "
              f"p99 {percentile(hot, 99) / percentile(ref, 99):.2f}x |")
        print(f"| daemon RSS idle before | {idle_rss / 1024:.1f} MiB |")
        print(f"| refused by the central | {json.dumps(refused, sort_keys=True)} |")
        print(f"| every line taken once (both spools = the log) | {same} |")
        if not same or percentile(hot, 99) > 1.0:
            sys.exit("FAILED: a batch was lost or the p99 is over 1 s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
