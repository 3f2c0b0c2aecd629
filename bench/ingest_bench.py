#!/usr/bin/env python3
"""Central ingest benchmark: how many log lines a central
walwatch takes per second from Vector agents' gzip'd batches, against a
local `walwatch import` of the same log in the same run.

The log is statement-heavy, as a busy server with log_statement = 'all'
writes it: real-format stderr lines (prefix '%m [%p] %q%u@%d '), pgbench-like
statements from a few sessions, and a checkpoint start/complete pair every
CHECKPOINT_EVERY lines. The batches are what Vector's http sink sends with
walwatch's multiline rule and no filter (the worst case: every line shipped):
a JSON array of {message, host, file, offset, source_type, timestamp},
gzip'd, BATCH lines each (Vector batches up to 10 MB), made before the clock
starts. They are posted one after another on one keep-alive connection, as
one sink does; the time is from the first post to the last 2xx, and the
daemon's CPU (utime+stime) over the same span.

Usage: bench/ingest_bench.py WALWATCH [LINES]   (bench/ingest-bench.sh runs it)
Prints a markdown table on stdout.
"""

import gzip
import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

LINES = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
BATCH = 10_000
CHECKPOINT_EVERY = 5_000
TOKEN = "bench-token"


def make_log(path):
    rnd = random.Random(7)
    t = 1_795_000_000.0
    offsets = []
    with open(path, "w") as f:
        pos = 0
        for i in range(LINES):
            t += 0.0007
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + ".%03d UTC" % int((t % 1) * 1000)
            if i % CHECKPOINT_EVERY == CHECKPOINT_EVERY - 2:
                line = f"{stamp} [812] LOG:  checkpoint starting: wal\n"
            elif i % CHECKPOINT_EVERY == CHECKPOINT_EVERY - 1:
                line = (f"{stamp} [812] LOG:  checkpoint complete: wrote 1930 buffers (47.1%); 0 WAL file(s) added, "
                        "0 removed, 1 recycled; write=2.955 s, sync=0.004 s, total=2.980 s; sync files=8, "
                        "longest=0.001 s, average=0.001 s; distance=16384 kB, estimate=36452 kB\n")
            else:
                pid = 900 + rnd.randrange(8)
                aid = rnd.randrange(1, 10_000_000)
                line = (f"{stamp} [{pid}] app@bench LOG:  statement: UPDATE pgbench_accounts SET abalance = "
                        f"abalance + {rnd.randrange(-5000, 5000)} WHERE aid = {aid};\n")
            offsets.append(pos)
            f.write(line)
            pos += len(line.encode())
    return offsets


def batches(path, offsets):
    out = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")[:-1]
    for start in range(0, len(lines), BATCH):
        events = [{"message": lines[i], "host": "db-1", "file": "/var/log/postgresql/postgresql-16-main.log",
                   "offset": offsets[i], "source_type": "file", "timestamp": "2026-11-25T07:00:00Z"}
                  for i in range(start, min(start + BATCH, len(lines)))]
        out.append(gzip.compress(json.dumps(events).encode(), compresslevel=6))
    return out


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def central(walwatch, work, bodies):
    port = free_port()
    tokens = os.path.join(work, "tokens")
    with open(tokens, "w") as f:
        f.write(TOKEN + "\n")
    conf = os.path.join(work, "central.toml")
    with open(conf, "w") as f:
        f.write(f'[store]\npath = "{work}/central.db"\n[ingest]\nlisten = "127.0.0.1:{port}"\n'
                f'token_file = "{tokens}"\nsettle = "1s"\n')
    log = open(os.path.join(work, "central.log"), "w")
    daemon = subprocess.Popen([walwatch, "run", "--config", conf], stderr=log, stdout=log)
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip", "Authorization": f"Bearer {TOKEN}"}
    for _ in range(100):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            conn.request("POST", "/ingest/vector", body=b"[]", headers=headers)
            conn.getresponse().read()
            break
        except OSError:
            time.sleep(0.1)
    cpu0, t0 = cpu_seconds(daemon.pid), time.monotonic()
    taken = 0
    for body in bodies:
        conn.request("POST", "/ingest/vector", body=body, headers=headers)
        r = conn.getresponse()
        answer = r.read()
        if r.status != 200:
            sys.exit(f"batch refused: {r.status} {answer!r}")
        taken += json.loads(answer)["taken"]
    elapsed, cpu = time.monotonic() - t0, cpu_seconds(daemon.pid) - cpu0
    time.sleep(1.5)  # the last entry, held for settle
    daemon.terminate()
    daemon.wait()
    if taken != LINES:
        sys.exit(f"taken {taken} of {LINES} lines")
    return elapsed, cpu


def summary(walwatch, db):
    out = subprocess.run([walwatch, "summary", "--db", db, "--format", "json"], check=True, capture_output=True)
    s = json.loads(out.stdout)
    return s["checkpoints"]["completed"], s["checkpoints"]["started"]


def main():
    walwatch = sys.argv[1]
    work = tempfile.mkdtemp(prefix="walwatch-ingest-bench-")
    try:
        log = os.path.join(work, "postgresql-16-main.log")
        offsets = make_log(log)
        size = os.path.getsize(log)
        bodies = batches(log, offsets)
        sent = sum(len(b) for b in bodies)
        elapsed, cpu = central(walwatch, work, bodies)
        t0 = time.monotonic()
        subprocess.run([walwatch, "import", "--db", f"{work}/local.db", "-q", log], check=True)
        local = time.monotonic() - t0
        got, want = summary(walwatch, f"{work}/central.db"), summary(walwatch, f"{work}/local.db")
        if got != want:
            sys.exit(f"central {got} != local import {want}")
        print(f"| log | {LINES:,} lines, {size / 2**20:.0f} MiB, {want[0]} checkpoints; "
              f"{len(bodies)} gzip'd batches of {BATCH:,} lines, {sent / 2**20:.1f} MiB sent |")
        print("| --- | --- |")
        print(f"| central ingest (post to last 2xx) | {elapsed:.2f} s: **{LINES / elapsed:,.0f} lines/s**, "
              f"{size / 2**20 / elapsed:.1f} MiB/s of log; daemon CPU {cpu:.2f} s "
              f"({size / 2**20 / max(cpu, 1e-9):.1f} MiB/s per CPU second) |")
        print(f"| local `walwatch import` of the same file (reference) | {local:.2f} s: {LINES / local:,.0f} lines/s |")
        print(f"| ratio ingest / import time | {elapsed / local:.2f}x |")
        print(f"| stores equal (checkpoints completed, started) | {got} = {want} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
