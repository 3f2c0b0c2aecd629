#!/usr/bin/env python3
"""Log text for the store benchmark (bench/store-bench.sh): real checkpoint
rows replayed at scale.

Every checkpoint cycle written is one that a real PostgreSQL server logged in
a fixture under tests/fixtures/ (stderr, log_line_prefix '%m [%p] %q%u@%d '):
its `checkpoint starting` line and its `checkpoint complete` line, message
text untouched (flags, buffers, WAL files, write/sync times, distance,
estimate, LSNs), the start-to-complete duration and the checkpointer's pid as
logged. Only the times move: cluster c's k-th cycle starts INTERVAL seconds
after its (k-1)-th (plus the millisecond the original started at), the last
one INTERVAL before --end. The clusters replay the pool of cycles from
different offsets, so no two clusters log the same sequence.

    store_bench_logs.py --out DIR --clusters 20 --per-cluster 50000 \
        --interval 300 --end 2026-11-24T12:00:00Z

writes DIR/c01.log ... DIR/c20.log (one file per cluster, in time order)
and prints how many cycles it took from which fixture.
"""

import argparse
import datetime as dt
import json
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREFIX = "%m [%p] %q%u@%d "
LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\.(\d{3}) \S+ \[(\d+)\] (LOG:  checkpoint (starting|complete): .*)$")


def fixture_cycles():
    """(fixture, pid, start ms in its second, duration ms, start text, complete text) of every
    checkpoint whose start and complete lines follow each other from one pid."""
    pool, used = [], {}
    base = os.path.join(REPO, "tests", "fixtures")
    for name in sorted(os.listdir(base)):
        meta_path = os.path.join(base, name, "meta.json")
        if not os.path.exists(meta_path):
            continue
        meta = json.load(open(meta_path))
        if meta.get("format") != "stderr-default" or meta.get("log_line_prefix") != PREFIX:
            continue
        if "forged" in name:  # client look-alike lines: not a server's own record
            continue
        logdir = os.path.join(base, name, "log")
        for f in sorted(os.listdir(logdir)):
            if not f.endswith(".log"):
                continue
            open_start = None
            for line in open(os.path.join(logdir, f), encoding="utf-8", errors="replace"):
                m = LINE.match(line.rstrip("\n"))
                if not m:
                    continue
                when = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").replace(
                    microsecond=int(m.group(2)) * 1000
                )
                pid, text, what = int(m.group(3)), m.group(4), m.group(5)
                if what == "starting":
                    open_start = (when, pid, text)
                elif open_start and open_start[1] == pid:
                    ms = int((when - open_start[0]).total_seconds() * 1000)
                    if ms >= 0:
                        pool.append((name, pid, open_start[0].microsecond // 1000, ms, open_start[2], text))
                        used[name] = used.get(name, 0) + 1
                    open_start = None
                else:
                    open_start = None
    return pool, used


def stamp(epoch_ms):
    t = dt.datetime.fromtimestamp(epoch_ms // 1000, dt.timezone.utc)
    return f"{t:%Y-%m-%d %H:%M:%S}.{epoch_ms % 1000:03d} UTC"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--clusters", type=int, default=20)
    ap.add_argument("--per-cluster", type=int, default=50000)
    ap.add_argument("--interval", type=int, default=300, help="seconds between checkpoint starts")
    ap.add_argument("--end", required=True, help="RFC 3339 UTC time the newest cycle comes before")
    args = ap.parse_args()
    pool, used = fixture_cycles()
    if not pool:
        sys.exit("no checkpoint cycle found in tests/fixtures")
    end = dt.datetime.fromisoformat(args.end.replace("Z", "+00:00"))
    end_s = int(end.timestamp())
    os.makedirs(args.out, exist_ok=True)
    step = max(1, len(pool) // args.clusters)
    for c in range(args.clusters):
        path = os.path.join(args.out, f"c{c + 1:02d}.log")
        first_s = end_s - args.per_cluster * args.interval
        with open(path, "w", encoding="utf-8", buffering=1 << 20) as out:
            for k in range(args.per_cluster):
                _, pid, start_ms, ms, start_text, complete_text = pool[(c * step + k) % len(pool)]
                at = (first_s + k * args.interval) * 1000 + start_ms
                out.write(f"{stamp(at)} [{pid}] {start_text}\n{stamp(at + ms)} [{pid}] {complete_text}\n")
    print(f"{args.clusters} clusters x {args.per_cluster} checkpoint cycles, one every {args.interval} s, "
          f"ending before {args.end}; replayed from {len(pool)} real cycles: "
          + ", ".join(f"{k} {v}" for k, v in sorted(used.items())))


if __name__ == "__main__":
    main()
