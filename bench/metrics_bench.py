#!/usr/bin/env python3
"""The cost of a Prometheus scrape: `walwatch run` (release
build) following 50 clusters' logs, its /metrics endpoint scraped.

Logs: bench/store_bench_logs.py replays real checkpoint cycles of
tests/fixtures (message text untouched, only the times moved), CLUSTERS
files of PER_CLUSTER cycles one every 300 s (default 50 x 2016: a week per
cluster, the suggest model's default lookback; 100 800 checkpoints).

Measured, each scrape timed by the client around one HTTP GET with
Prometheus' own Accept header (OpenMetrics):
  1. first scrape right after a start, RESTARTS times (the daemon restarted
     on its caught-up store each time, scraped as soon as its port answers):
     it waits for the endpoint's first read, which counts the histograms
     and newest events from the whole store (the advice, settings + suggest,
     is computed by the endpoint's advisor thread, never by a scrape);
  2. steady scrapes, SCRAPES of them back to back: nothing new;
  3. scrapes while every cluster logs a new checkpoint between two scrapes
     (the advisor recomputes every cluster's advice meanwhile);
  4. following while scraped: a checkpoint cycle appended to one log, the
     time until it is in the store (polled read-only every 2 ms), FOLLOWS
     times with the endpoint idle and FOLLOWS times with a client scraping
     it back to back.

    metrics_bench.py --walwatch target/release/walwatch --dir /tmp/walwatch-metrics-bench

Prints markdown for docs/dev/benchmarks.md.
"""

import argparse
import datetime as dt
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREFIX = "%m [%p] %q%u@%d "
ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
          "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
# A real cycle (fixture 15-stderr-default-std) appended live; only its times change.
START = "LOG:  checkpoint starting: wal"
COMPLETE = ("LOG:  checkpoint complete: wrote 100 buffers (2.4%); 0 WAL file(s) added, 1 removed, 0 recycled; "
            "write=0.385 s, sync=0.207 s, total=0.813 s; sync files=30, longest=0.082 s, average=0.007 s; "
            "distance=12284 kB, estimate=12284 kB")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Accept": ACCEPT})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=30) as r:
        body = r.read()
    return time.perf_counter() - t0, body.decode()


def total_checkpoints(text):
    return sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines() if l.startswith("walwatch_checkpoints_total{"))


def stamp(t):
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{t.microsecond // 1000:03d} UTC"


def append_cycle(path, at):
    with open(path, "a") as f:
        f.write(f"{stamp(at)} [4242] {START}\n{stamp(at + dt.timedelta(seconds=1))} [4242] {COMPLETE}\n")


class Daemon:
    def __init__(self, walwatch, config, log):
        self.proc = subprocess.Popen([walwatch, "run", "--config", config], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=open(log, "a"),
                                     env={**os.environ, "RUST_LOG": "warn"})

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def wait_for(what, probe, limit=1800):
    t0 = time.time()
    while True:
        try:
            v = probe()
            if v:
                return v
        except OSError:
            pass
        if time.time() - t0 > limit:
            sys.exit(f"no {what} after {limit} s")
        time.sleep(0.2)


def ms(xs):
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]
    return f"{statistics.median(xs) * 1000:.1f} ms", f"{p95 * 1000:.1f} ms", f"{xs[-1] * 1000:.1f} ms"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--walwatch", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--clusters", type=int, default=50)
    ap.add_argument("--per-cluster", type=int, default=2016)
    ap.add_argument("--restarts", type=int, default=5)
    ap.add_argument("--scrapes", type=int, default=200)
    ap.add_argument("--live", type=int, default=20)
    ap.add_argument("--follows", type=int, default=20)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    logs, db, config = os.path.join(a.dir, "logs"), os.path.join(a.dir, "w.db"), os.path.join(a.dir, "walwatch.toml")
    for f in [db, db + "-wal", db + "-shm"]:
        if os.path.exists(f):
            os.remove(f)
    end = dt.datetime.now(dt.timezone.utc).replace(minute=0, second=0, microsecond=0)
    subprocess.run([sys.executable, os.path.join(REPO, "bench", "store_bench_logs.py"), "--out", logs,
                    "--clusters", str(a.clusters), "--per-cluster", str(a.per_cluster), "--interval", "300",
                    "--end", end.strftime("%Y-%m-%dT%H:%M:%SZ")], check=True, stdout=sys.stderr)
    port = free_port()
    text = f'[store]\npath = "{db}"\n\n[metrics]\nlisten = "127.0.0.1:{port}"\n'
    for c in range(1, a.clusters + 1):
        text += (f'\n[[cluster]]\nname = "c{c:02d}"\nlogs = ["{logs}/c{c:02d}.log"]\nformat = "stderr"\n'
                 f'prefix = "{PREFIX}"\ntimezone = "UTC"\n')
    open(config, "w").write(text)
    started = dt.datetime.now(dt.timezone.utc)
    log = os.path.join(a.dir, "daemon.log")
    daemon = Daemon(a.walwatch, config, log)
    want = a.clusters * a.per_cluster
    t0 = time.time()
    wait_for("catch-up", lambda: total_checkpoints(scrape(port)[1]) >= want)
    caught_up = time.time() - t0
    print(f"started {started:%Y-%m-%d %H:%M} UTC, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"at the start; {os.cpu_count()} CPUs; {a.walwatch}.\n")
    print(f"{a.clusters} clusters x {a.per_cluster} checkpoints ({want:,} in the store), followed by one "
          f"`walwatch run`; it read them all in {caught_up:.0f} s.\n")
    rows = []

    # 1. The first scrape after a start.
    firsts = []
    for _ in range(a.restarts):
        daemon.stop()
        daemon = Daemon(a.walwatch, config, log)
        wait_for("the endpoint", lambda: socket.create_connection(("127.0.0.1", port), timeout=1).close() or True)
        took, body = scrape(port)
        assert total_checkpoints(body) == want, "a restart lost no count"
        firsts.append(took)
    rows.append(("first scrape the moment the port answers after a start (waits for the first read of the whole store)", len(firsts), *ms(firsts)))

    # 2. Steady scrapes.
    steady = [scrape(port)[0] for _ in range(a.scrapes)]
    size = len(scrape(port)[1])
    rows.append((f"steady scrape, nothing new ({size / 1024:.0f} KiB of text)", len(steady), *ms(steady)))

    # 3. Every cluster checkpoints between two scrapes.
    live, at = [], end
    for i in range(a.live):
        at += dt.timedelta(seconds=300)
        for c in range(1, a.clusters + 1):
            append_cycle(f"{logs}/c{c:02d}.log", at)
        target = want + (i + 1) * a.clusters
        wait_for("the new checkpoints", lambda: sqlite_count(db) >= target)
        live.append(scrape(port)[0])
    rows.append(("scrape after every cluster logged a new checkpoint", len(live), *ms(live)))
    want += a.live * a.clusters

    # 4. Following with the endpoint idle, then scraped back to back.
    def follow_latency(n, at):
        out = []
        for _ in range(n):
            at += dt.timedelta(seconds=300)
            before = sqlite_count(db)
            t = time.perf_counter()
            append_cycle(f"{logs}/c01.log", at)
            while sqlite_count(db) <= before:
                time.sleep(0.002)
            out.append(time.perf_counter() - t)
        return out, at

    idle, at = follow_latency(a.follows, at)
    stop, during = threading.Event(), []

    def hammer():
        while not stop.is_set():
            during.append(scrape(port)[0])

    th = threading.Thread(target=hammer)
    th.start()
    busy, at = follow_latency(a.follows, at)
    stop.set()
    th.join()
    daemon.stop()

    print("| scrape (client wall time, OpenMetrics) | n | median | p95 | max |\n| --- | --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    print(f"\n| following one appended checkpoint (append → in the store) | n | median | p95 | max |\n"
          f"| --- | --- | --- | --- | --- |")
    print("| endpoint idle | %d | %s | %s | %s |" % (len(idle), *ms(idle)))
    print("| endpoint scraped back to back (%d scrapes meanwhile) | %d | %s | %s | %s |" % (len(during), len(busy),
                                                                                          *ms(busy)))
    ratio = statistics.median(busy) / statistics.median(idle)
    print(f"\nMedian follow latency scraped ÷ idle: **{ratio:.2f}**. Load average at the end "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}.")


def sqlite_count(db):
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute("SELECT count(complete_source_id) FROM checkpoint").fetchone()[0]
    finally:
        conn.close()


if __name__ == "__main__":
    main()
