#!/usr/bin/env python3
"""A central walwatch at fleet size: HOSTS database hosts, DAYS days of log
each, shipped through the fleet path (`POST /ingest/vector`, as Vector's
http sink sends it) to one central daemon, then the central's queries timed
on what it stored. bench/fleet-bench.sh runs it; see there for the figures.

Log content. Every line is one a real PostgreSQL server wrote, from the
stderr fixtures under tests/fixtures (prefixes '%m [%p] %q%u@%d ' and
pgBadger's '%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h '): a host
replays one fixture's log end to end, over and over, each copy's times
stretched so that the host logs its own number of checkpoints a day, the
copies back to back up to the hour before now. So each host keeps its
fixture's shape: a storm of forced checkpoints, a crash and its recovery
(15-stderr-default-crashimm), a standby's restartpoints, German, French or
Japanese messages, a statement-heavy log (15-stderr-default-noise). Rates:
most hosts one checkpoint every 5 min (288 a day), one in ten a storm (one
a minute), one in twenty every 15 min; the statement-heavy host's log is
60 KB per checkpoint, so one host in a hundred runs it, at 96 a day. What
the copies do not change: message text (the "shut down at" times in it
keep the fixture's dates), pids (each copy restarts with the same ones).

Shipping. The bodies are made beforehand (gzip'd JSON arrays of at most
BATCH events, as Vector's sink sends when it catches up), then SENDERS
threads ship them host after host, each batch answered before the next of
its host; 503 (every slot taken) is sent again after a pause, as Vector
does. The central's CPU is read from /proc over the whole catch-up, until
`walwatch status` shows every file read to its end.

Usage: fleet_bench.py WALWATCH PRUNE_BENCH DIR HOSTS DAYS SENDERS RUNS
"""

import concurrent.futures
import datetime as dt
import gzip
import http.client
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 1000
TOKEN = "fleet-bench-token-0123456789abcdef"
FILE = "/var/log/postgresql/postgresql-15-main.log"
# '%m': 2026-11-22 08:04:20.708 UTC   '%t': 2026-11-22 03:04:20 EST
STAMP = re.compile(rb"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(\.\d{3})? ([A-Z]{2,5}) ")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def templates():
    """(name, [(seconds since the log's first line or None, line bytes)], checkpoints) per fixture."""
    out = []
    base = os.path.join(REPO, "tests", "fixtures")
    for name in sorted(os.listdir(base)):
        meta = os.path.join(base, name, "meta.json")
        if not os.path.exists(meta) or "forged" in name:
            continue
        if json.load(open(meta)).get("format") not in ("stderr-default", "stderr-pgbadger"):
            continue
        lines, first = [], None
        logdir = os.path.join(base, name, "log")
        for f in sorted(os.listdir(logdir)):
            for raw in open(os.path.join(logdir, f), "rb").read().split(b"\n")[:-1]:
                m = STAMP.match(raw)
                at = None
                if m:
                    # One zone a log, so its offset cancels out of the times relative to the first line;
                    # every copy is written in UTC.
                    t = dt.datetime.strptime(m.group(1).decode(), "%Y-%m-%d %H:%M:%S")
                    at = t.replace(tzinfo=dt.timezone.utc).timestamp()
                    at += float(m.group(2) or b"0")
                    first = at if first is None else first
                lines.append((None if at is None else at - first, raw, m))
        # The fixture's own count (its truth.json: a format-aware parse in the log's language).
        counts = json.load(open(os.path.join(base, name, "truth.json")))["counts"]
        starts = counts["checkpoint_start"]["total"] + counts["restartpoint_start"]["total"]
        out.append((name, lines, max(1, starts)))
    return out


def host_plan(i, pool):
    """The fixture and the checkpoints a day host i replays."""
    noise = next(t for t in pool if t[0].endswith("-noise"))
    others = [t for t in pool if t is not noise]
    if i % 100 == 99:
        return noise, 96
    rate = 1440 if i % 10 == 3 else 96 if i % 20 == 7 else 288
    return others[i % len(others)], rate


def restamp(raw, m, at):
    t = dt.datetime.fromtimestamp(at, dt.timezone.utc)
    ms = b".%03d" % (int(at * 1000) % 1000) if m.group(2) else b""
    return t.strftime("%Y-%m-%d %H:%M:%S").encode() + ms + b" UTC " + raw[m.end():]


def host_log(i, pool, days, end):
    """Host i's log: its fixture's copies back to back, stretched to its rate."""
    (name, lines, checkpoints), rate = host_plan(i, pool)
    span = max(t for t, _, _ in lines if t is not None) or 1.0
    copy_s = checkpoints * 86400.0 / rate  # one copy lasts this long at the host's rate
    factor = copy_s / span
    begin = end - days * 86400
    out, k = [], 0
    # Each host starts at its own second, so no two hosts log at the same instants.
    t0 = begin + (i * 7.31) % copy_s
    while t0 + copy_s < end:
        last = t0
        for rel, raw, m in lines:
            if rel is not None:
                last = t0 + rel * factor
                out.append(restamp(raw, m, last))
            else:
                out.append(raw)
        t0 += copy_s
        k += 1
    return name, rate, k, out


def bodies(host, lines):
    """Vector's events for a host's lines (TAB continuations joined), in gzip'd batches."""
    events, offset = [], 0
    for raw in lines:
        text = raw.decode("utf-8", "surrogateescape").encode("utf-8", "replace").decode()
        if raw.startswith(b"\t") and events:
            events[-1]["message"] += "\n" + text
        else:
            events.append({"message": text, "host": host, "file": FILE, "offset": offset,
                           "source_type": "file", "timestamp": "2026-11-25T07:00:00Z"})
        offset += len(raw) + 1
    return [gzip.compress(json.dumps(events[i:i + BATCH]).encode(), 1) for i in range(0, len(events), BATCH)], offset


def generate(work, hosts, days):
    pool = templates()
    end = (time.time() // 3600) * 3600 - 3600
    os.makedirs(f"{work}/bodies", exist_ok=True)
    summary = {"hosts": hosts, "days": days, "log_bytes": 0, "lines": 0, "batches": 0, "by_fixture": {}}
    for i in range(hosts):
        name, rate, copies, lines = host_log(i, pool, days, end)
        batches, size = bodies(f"db-{i:04d}", lines)
        with open(f"{work}/bodies/{i:04d}", "wb") as f:
            for b in batches:
                f.write(len(b).to_bytes(4, "big") + b)
        summary["log_bytes"] += size
        summary["lines"] += len(lines)
        summary["batches"] += len(batches)
        summary["by_fixture"].setdefault(f"{name} at {rate}/day", 0)
        summary["by_fixture"][f"{name} at {rate}/day"] += 1
        if i % 100 == 0:
            log(f"generated {i + 1}/{hosts} hosts")
    json.dump(summary, open(f"{work}/generated.json", "w"))
    return summary


def read_bodies(path):
    data = open(path, "rb").read()
    i = 0
    while i < len(data):
        n = int.from_bytes(data[i:i + 4], "big")
        yield data[i + 4:i + 4 + n]
        i += 4 + n


def ship_host(port, path, counts):
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip", "Authorization": f"Bearer {TOKEN}"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    for body in read_bodies(path):
        for attempt in range(1000):
            try:
                conn.request("POST", "/ingest/vector", body=body, headers=headers)
                r = conn.getresponse()
                answer = r.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                time.sleep(0.2)
                continue
            if r.status == 200:
                break
            if r.status in (408, 429, 503):
                counts[r.status] = counts.get(r.status, 0) + 1
                time.sleep(0.5)
                continue
            raise SystemExit(f"{path}: batch refused: {r.status} {answer[:200]!r}")
    conn.close()


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_peak_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(walwatch, db):
    r = subprocess.run([walwatch, "status", "--db", db, "--format", "json"], capture_output=True)
    return json.loads(r.stdout)


def caught_up(st, hosts, sizes):
    clusters = st.get("clusters", [])
    if len(clusters) < hosts:
        return False
    for c in clusters:
        for f in c["files"]:
            if f["offset"] != f["size"] or f["size"] != sizes.get(f["path"].split(":", 1)[0]):
                return False
    return True


def timed(cmd, runs):
    """Median wall seconds and the largest peak RSS (KB) of `runs` runs of cmd."""
    walls, rss = [], 0
    for _ in range(runs):
        t0 = time.monotonic()
        r = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        walls.append(time.monotonic() - t0)
        if r.returncode not in (0, 4):
            raise SystemExit(f"{cmd} exited {r.returncode}: {r.stderr.decode()[-2000:]}")
        rss = max(rss, int(r.stderr.decode().strip().splitlines()[-1]))
    return statistics.median(walls), rss


def scrape(port, runs):
    walls, body = [], b""
    for _ in range(runs):
        t0 = time.monotonic()
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60).read()
        walls.append(time.monotonic() - t0)
    series = sum(1 for l in body.split(b"\n") if l and not l.startswith(b"#"))
    return statistics.median(walls), len(body), series


def dir_bytes(path):
    """Bytes on disk (allocated blocks, as du counts them: a spool's read part is given back)."""
    return sum(os.stat(os.path.join(d, f)).st_blocks * 512 for d, _, fs in os.walk(path) for f in fs)


def main():
    walwatch, prune_bench, work, hosts, days, senders, runs = sys.argv[1:8]
    hosts, days, senders, runs = int(hosts), int(days), int(senders), int(runs)
    os.makedirs(work, exist_ok=True)
    gen = f"{work}/generated.json"
    if os.path.exists(gen) and json.load(open(gen))["hosts"] == hosts and json.load(open(gen))["days"] == days:
        summary = json.load(open(gen))
        log("reusing the generated bodies")
    else:
        shutil.rmtree(f"{work}/bodies", ignore_errors=True)
        summary = generate(work, hosts, days)
    central = f"{work}/central"
    shutil.rmtree(central, ignore_errors=True)
    os.makedirs(central)
    port, metrics = free_port(), free_port()
    open(f"{central}/tokens", "w").write(f"{TOKEN} db-*\n")
    open(f"{central}/central.toml", "w").write(
        f'[store]\npath = "{central}/central.db"\n[metrics]\nlisten = "127.0.0.1:{metrics}"\n'
        f'[ingest]\nlisten = "127.0.0.1:{port}"\ntoken_file = "{central}/tokens"\nsettle = "1s"\n')
    daemon = subprocess.Popen([walwatch, "run", "--config", f"{central}/central.toml"],
                              stdout=open(f"{central}/daemon.log", "w"), stderr=subprocess.STDOUT)
    try:
        time.sleep(1)
        sizes = host_sizes(work, hosts)
        counts = {}
        cpu0, t0 = cpu_seconds(daemon.pid), time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(senders) as pool:
            list(pool.map(lambda i: ship_host(port, f"{work}/bodies/{i:04d}", counts), range(hosts)))
        shipped = time.monotonic() - t0
        log(f"shipped in {shipped:.0f} s; waiting for the central to read every spool")
        while not caught_up(status(walwatch, f"{central}/central.db"), hosts, sizes):
            time.sleep(5)
        wall = time.monotonic() - t0
        cpu = cpu_seconds(daemon.pid) - cpu0
        rss = rss_peak_kb(daemon.pid)
        db = f"{central}/central.db"
        subprocess.run(["sqlite3", db, "PRAGMA wal_checkpoint(TRUNCATE);"], capture_output=True)
        rows = subprocess.run(["sqlite3", db, "SELECT (SELECT count(*) FROM checkpoint), (SELECT count(*) FROM line)"],
                              capture_output=True, text=True).stdout.strip().split("|")
        store_bytes = os.path.getsize(db)
        spool_bytes = dir_bytes(f"{central}/central-ingest")
        q = {}
        q["status"] = timed([walwatch, "status", "--db", db], runs)
        q["summary"] = timed([walwatch, "summary", "--db", db], runs)
        q["history"] = timed([walwatch, "history", "--db", db, "--since", "30d", "--by", "day"], runs)
        day = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=1)).strftime("%Y-%m-%d")
        q["digest"] = timed([walwatch, "digest", "--db", db, "--date", day, "--tz", "UTC", "--eml",
                             f"{work}/digest.eml"], 1)
        scrape_s, scrape_bytes, series = scrape(metrics, runs)
        daemon.terminate()
        daemon.wait(timeout=60)
        shutil.copy(db, f"{work}/prune.db")
        now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        pr = subprocess.run([prune_bench, f"{work}/prune.db", now, str(days - 1)], capture_output=True, text=True)
        prune = dict(kv.split("=", 1) for kv in pr.stdout.split()) if pr.returncode == 0 else {"error": pr.stderr[-500:]}
        os.remove(f"{work}/prune.db")
    finally:
        if daemon.poll() is None:
            daemon.kill()
    report(summary, hosts, days, senders, shipped, wall, cpu, rss, rows, store_bytes, spool_bytes, q,
           (scrape_s, scrape_bytes, series), prune, counts, day)


def host_sizes(work, hosts):
    """Each host's log size, from the generated bodies' last event (offset + message)."""
    sizes = {}
    for i in range(hosts):
        last = None
        for body in read_bodies(f"{work}/bodies/{i:04d}"):
            last = body
        ev = json.loads(gzip.decompress(last))[-1]
        sizes[f"db-{i:04d}"] = ev["offset"] + len(ev["message"].encode()) + 1
    return sizes


def report(s, hosts, days, senders, shipped, wall, cpu, rss, rows, store_bytes, spool_bytes, q, sc, prune, counts, day):
    hd = hosts * days
    mib = lambda b: f"{b / 2**20:,.1f} MiB"
    print(f"Fleet: {hosts:,} hosts x {days} days = {hd:,} host-days; {s['lines']:,} log lines, "
          f"{mib(s['log_bytes'])} of log, {int(rows[0]):,} checkpoints and {int(rows[1]):,} events stored; "
          f"shipped in {s['batches']:,} gzip'd batches of up to {BATCH} events by {senders} senders "
          f"(sent again after 408/429/503: {json.dumps(counts, sort_keys=True)}).")
    print()
    print("| measure | figure | per host per day | target |")
    print("| --- | --- | --- | --- |")
    print(f"| central CPU for the catch-up (user+sys) | {cpu:,.1f} s in {wall:,.0f} s wall (shipping {shipped:,.0f} s) "
          f"| {cpu / hd * 1000:,.1f} ms | |")
    print(f"| central peak RSS | {rss / 1024:,.1f} MiB | | |")
    print(f"| store (SQLite, WAL checkpointed) | {mib(store_bytes)} | {store_bytes / hd / 1024:,.1f} KiB | |")
    print(f"| spools on disk (each host's log until read, and its line index) | {mib(spool_bytes)} | {spool_bytes / hd / 1024:,.1f} KiB | |")
    print(f"| `status` (all {hosts:,} clusters) | {q['status'][0] * 1000:,.0f} ms, {q['status'][1] / 1024:.1f} MiB | | |")
    print(f"| `summary` | {q['summary'][0] * 1000:,.0f} ms, {q['summary'][1] / 1024:.1f} MiB | | |")
    print(f"| `history --since 30d --by day` (every cluster) | {q['history'][0] * 1000:,.0f} ms, "
          f"{q['history'][1] / 1024:.1f} MiB | | ≤ 200 ms |")
    print(f"| fleet digest of {day} (`digest --eml`, every cluster) | {q['digest'][0]:,.1f} s, peak RSS "
          f"{q['digest'][1] / 1024:.1f} MiB | | ≤ 30 s |")
    print(f"| Prometheus scrape | {sc[0] * 1000:,.0f} ms, {sc[1] / 1024:,.0f} KiB, {sc[2]:,} series | "
          f"{sc[2] / hosts:,.1f} series per cluster | ≤ 1 s |")
    if "error" in prune:
        print(f"| daily prune (one day of every host) | failed: {prune['error']} | | |")
    else:
        print(f"| daily prune (one day of every host) | {json.dumps(prune, sort_keys=True)} | | |")
    print()
    print("Hosts by fixture and checkpoints a day: " + ", ".join(f"{k}: {v}" for k, v in sorted(s["by_fixture"].items())))


if __name__ == "__main__":
    main()
