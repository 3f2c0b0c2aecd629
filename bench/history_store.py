#!/usr/bin/env python3
"""A large store for timing `walwatch history`, made of real rows.

Usage: history_store.py WALWATCH STORE [CLUSTERS] [DAYS]

Imports the real log of tests/fixtures/15-stderr-default-crashimm (a forced
checkpoint storm, a SIGHUP, a crash and its recovery: 73 checkpoints in
260 s) as cluster "seed", then replays its checkpoint and event rows into
CLUSTERS clusters (default 10) over DAYS days (default 365): each copy
stretched x84 so that its 73 checkpoints come about every 5 minutes, copies
back to back. 10 x 365 days is about 1.07 million checkpoint rows.
"""
import glob
import os
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
walwatch, store = sys.argv[1], sys.argv[2]
clusters = int(sys.argv[3]) if len(sys.argv) > 3 else 10
days = int(sys.argv[4]) if len(sys.argv) > 4 else 365
K = 84
BASE = 1767225600 * 1_000_000  # 2026-01-01T00:00:00Z in µs

logs = sorted(glob.glob(os.path.join(HERE, "../tests/fixtures/15-stderr-default-crashimm/log/*")))
subprocess.run([walwatch, "import", "--db", store, "--cluster", "seed", *logs], check=True, stdout=subprocess.DEVNULL)
db = sqlite3.connect(store)
t0, t1 = db.execute("SELECT min(at), max(at) FROM line").fetchone()
span = (t1 - t0 + 1_000_000) * K
copies = days * 86_400_000_000 // span
print(f"{clusters} clusters x {copies} copies of {span / 1e6:.0f} s", file=sys.stderr)
db.execute("CREATE TEMP TABLE n(i INTEGER PRIMARY KEY)")
db.executemany("INSERT INTO n VALUES (?)", [(i,) for i in range(copies)])
cols = ("kind, pid, pairable, start_source_id, start_line, start_ahead_us, complete_source_id, complete_line, "
        "complete_ahead_us, flags, trigger, buffers_written, buffers_pct, "
        "slru_buffers_written, wal_files_added, wal_files_removed, wal_files_recycled, write_s, sync_s, total_s, "
        "sync_files, sync_longest_s, sync_average_s, distance_kb, estimate_kb, lsn, redo_lsn")
for c in range(clusters):
    cid = db.execute("INSERT INTO cluster(name) VALUES (?)", (f"c{c:03}",)).lastrowid
    shift = f"? + n.i * ? + ({{}} - ?) * {K}"
    db.execute(
        f"INSERT INTO checkpoint(cluster_id, started_at, completed_at, start_offset, complete_offset, {cols}) "
        f"SELECT ?, {shift.format('s.started_at')}, {shift.format('s.completed_at')}, "
        "s.start_offset + n.i * 1000000 + ? * 10000000000, s.complete_offset + n.i * 1000000 + ? * 10000000000, "
        f"{cols} FROM checkpoint s, n WHERE s.cluster_id = 1 ORDER BY n.i, s.id",
        (cid, BASE, span, t0, BASE, span, t0, cid, cid))
    db.execute(
        "INSERT INTO event(cluster_id, source_id, offset, line, at, pid, kind, nth, data) "
        f"SELECT ?, source_id, offset + n.i * 1000000 + ? * 10000000000, line, {shift.format('at')}, pid, kind, nth, data "
        "FROM event, n WHERE cluster_id = 1 ORDER BY n.i, id",
        (cid, cid, BASE, span, t0))
    db.commit()
print(db.execute("SELECT count(*) FROM checkpoint").fetchone()[0], "checkpoint rows", file=sys.stderr)
db.execute("ANALYZE")
db.commit()
