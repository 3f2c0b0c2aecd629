#!/usr/bin/env python3
"""The measuring half of bench/daemon-bench.sh (run that, not this).

Every scenario starts its own `walwatch run` on a fresh directory and store
under $BENCH_DIR, with the default poll_interval (1 s) and inotify active:

latency  A writer appends real-format stderr log lines (prefix
         '%m [%p] %q%u@%d ': pgbench-like `statement:` lines from a session,
         plus a checkpoint start/complete pair every N lines, each start
         with a unique timestamp) at a fixed rate, one write() per line like
         the logging collector. A watcher *process* polls the store read-only
         every 10 ms for the number of checkpoint_start events and notes when
         the count reaches k; latency_k = seen_k - written_k (same wall clock).
silence  The real pattern of a checkpoint: a lone `checkpoint starting` line,
         then nothing (the `checkpoint complete` line comes minutes later).
         One daemon, cycles alternating between (lone) the start line alone,
         $SILENCE_SECONDS of silence, then the complete line, and (pair) the
         start and complete lines written back to back, then the same
         silence. The watcher as above; latency = first seen - written, per
         kind, so the two are compared on the same daemon and minute.
idle     The daemon follows a few already-read files; CPU is utime+stime from
         /proc/<pid>/stat over $IDLE_SECONDS.
burst    The followed file (on $BURST_DIR, tmpfs by default) holds the first
         MiB of $BIG_LOG; once the daemon is caught up, the rest is appended
         at once (in-kernel copy). Follow time: from the start of the append
         to the daemon's last commit of a read position (source.last_read;
         `walwatch status` showing lag 0 is what ends the wait) vs `walwatch
         import` of the final file into a fresh store; peak RSS is VmHWM.
         Then a second daemon with a fresh store is started on the complete
         file (catch-up: spawn to last commit). All three stores' summaries
         must be equal.

Prints a markdown table on stdout; progress on stderr.
"""

import atexit
import json
import math
import multiprocessing as mp
import os
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timezone

from benchlib import say

WALWATCH = os.environ["WALWATCH"]
BENCH_DIR = os.environ.get("BENCH_DIR", "/tmp/walwatch-daemon-bench")
BIG_LOG = os.environ.get("BIG_LOG", "")
BURST_DIR = os.environ.get("BURST_DIR") or (
    "/dev/shm/walwatch-daemon-bench" if os.path.isdir("/dev/shm") else os.path.join(BENCH_DIR, "burst-log")
)
QUICK = os.environ.get("QUICK", "0") == "1"
CATCHUP_ROUNDS = int(os.environ.get("CATCHUP_ROUNDS", "3"))
IDLE_SECONDS = float(os.environ.get("IDLE_SECONDS", "15" if QUICK else "60"))
LATENCY_SECONDS = float(os.environ.get("LATENCY_SECONDS", "12" if QUICK else "60"))
SILENCE_CYCLES = int(os.environ.get("SILENCE_CYCLES", "16" if QUICK else "80"))
SILENCE_SECONDS = float(os.environ.get("SILENCE_SECONDS", "1.5"))
# rate (lines/s) -> a checkpoint every N lines (so ~0.5..10 checkpoints/s)
RATES = [(1, 2), (100, 20), (10000, 1000)]
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------ daemon


RUNNING = []


@atexit.register
def _kill_leftovers():
    """A failed scenario must not leave its daemon running."""
    for p in RUNNING:
        if p.poll() is None:
            p.kill()
            p.wait()


class Daemon:
    def __init__(self, name, pattern, tag="walwatch"):
        self.dir = os.path.join(BENCH_DIR, name)
        self.db = os.path.join(self.dir, f"{tag}.db")
        cfg = os.path.join(self.dir, f"{tag}.toml")
        with open(cfg, "w") as f:
            # poll_interval left at its default (1 s)
            f.write(f'[store]\npath = {json.dumps(self.db)}\n\n[[cluster]]\nname = "bench"\nlogs = [{json.dumps(pattern)}]\n')
        self.err = open(os.path.join(self.dir, f"{tag}.stderr"), "w")
        self.proc = subprocess.Popen(
            [WALWATCH, "run", "--config", cfg],
            stdin=subprocess.DEVNULL,
            stdout=self.err,
            stderr=self.err,
            env=dict(os.environ, RUST_LOG="warn"),
        )
        RUNNING.append(self.proc)
        self.wait(lambda s: s["daemon"]["running"], 20, "the first heartbeat")

    def status(self):
        out = subprocess.run(
            [WALWATCH, "status", "--db", self.db, "--format", "json"], capture_output=True, text=True
        )
        if out.returncode != 0:
            return None
        return json.loads(out.stdout)

    def alive(self):
        if self.proc.poll() is not None:
            raise SystemExit(f"daemon in {self.dir} exited {self.proc.returncode}; see its .stderr there")

    def wait(self, pred, timeout, what, every=0.1):
        deadline = time.time() + timeout
        while True:
            self.alive()
            s = self.status() if os.path.exists(self.db) else None
            if s is not None and pred(s):
                return s
            if time.time() > deadline:
                raise SystemExit(f"daemon in {self.dir}: no {what} within {timeout} s; last status {s}")
            time.sleep(every)

    def caught_up(self, paths):
        """True when every path is in status with lag 0."""

        def pred(s):
            files = {f["path"]: f for c in s["clusters"] for f in c["files"]}
            return all(p in files and files[p]["lag_bytes"] == 0 for p in paths)

        return pred

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        # fields[0] is state (field 3); utime, stime are fields 14, 15
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def proc_status(self, key):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])  # kB
        return None

    def stop(self):
        t = time.time()
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = "killed: no exit within 5 s of SIGTERM"
        self.err.close()
        return rc, time.time() - t


def fresh(name):
    d = os.path.join(BENCH_DIR, name)
    subprocess.run(["rm", "-rf", d], check=True)
    os.makedirs(os.path.join(d, "log"))
    return d


def pct(values, p):
    """Nearest-rank percentile."""
    v = sorted(values)
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)]


# ------------------------------------------------------------------ log lines


def stamp(t):
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


class Lines:
    """Real-format stderr lines, as PostgreSQL 15 writes them."""

    def __init__(self):
        self.n = 0
        self.last_cp_ms = 0

    def noise(self, t):
        self.n += 1
        n = self.n
        stmts = [
            f"UPDATE pgbench_accounts SET abalance = abalance + {n % 5000 - 2500} WHERE aid = {n * 7919 % 500000 + 1};",
            f"SELECT abalance FROM pgbench_accounts WHERE aid = {n * 7919 % 500000 + 1};",
            f"UPDATE pgbench_tellers SET tbalance = tbalance + {n % 5000 - 2500} WHERE tid = {n % 50 + 1};",
            f"INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ({n % 50 + 1}, {n % 5 + 1}, {n % 500000 + 1}, {n % 5000 - 2500}, CURRENT_TIMESTAMP);",
            "BEGIN;",
            "END;",
        ]
        return f"{stamp(t)} [{20000 + n % 8}] postgres@postgres LOG:  statement: {stmts[n % len(stmts)]}\n"

    def checkpoint(self, t):
        """A start line with a timestamp no earlier checkpoint line has, and its complete."""
        ms = max(int(t * 1000), self.last_cp_ms + 1)
        self.last_cp_ms = ms + 1
        start = f"{stamp(ms / 1000)} [4242] LOG:  checkpoint starting: time\n"
        done = (
            f"{stamp((ms + 1) / 1000)} [4242] LOG:  checkpoint complete: wrote 44 buffers (0.3%); "
            "0 WAL file(s) added, 0 removed, 0 recycled; write=4.311 s, sync=0.004 s, total=4.316 s; "
            "sync files=12, longest=0.002 s, average=0.001 s; distance=321 kB, estimate=16535 kB\n"
        )
        return start, done


# ------------------------------------------------------------------ latency


def watcher(db, expected, deadline, conn_out):
    """Polls the store every 10 ms; returns when the k-th start was first seen."""
    seen = []
    con = None
    while len(seen) < expected and time.time() < deadline:
        try:
            if con is None:
                con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
            (count,) = con.execute("SELECT count(*) FROM line WHERE kind = 'checkpoint_start'").fetchone()
            now = time.time()
            while len(seen) < count:
                seen.append(now)
        except sqlite3.Error:
            con = None
        time.sleep(0.01)
    conn_out.send(seen)


def latency(rate, every):
    name = f"latency-{rate}"
    d = fresh(name)
    path = os.path.join(d, "log", "postgresql.log")
    lines = Lines()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    # A first screenful, so the prefix can be inferred before the clock starts.
    os.write(fd, "".join(lines.noise(time.time()) for _ in range(50)).encode())
    daemon = Daemon(name, os.path.join(d, "log", "*.log"))
    daemon.wait(daemon.caught_up([path]), 20, "catch-up on the first lines")
    total = int(rate * LATENCY_SECONDS)
    expected = total // every
    parent, child = mp.Pipe()
    w = mp.Process(target=watcher, args=(daemon.db, expected, time.time() + LATENCY_SECONDS + 30, child))
    w.start()
    cpu0, t0 = daemon.cpu_seconds(), time.time()
    written = []
    n = 0
    while n < total:
        due = min(total, int((time.time() - t0) * rate) + 1)
        batch = []
        while n < due:
            n += 1
            if n % every == 0:
                if batch:
                    os.write(fd, "".join(batch).encode())
                    batch = []
                start, done = lines.checkpoint(time.time())
                written.append(time.time())
                os.write(fd, start.encode())
                batch.append(done)
            else:
                batch.append(lines.noise(time.time()))
        if batch:
            os.write(fd, "".join(batch).encode())
        pause = t0 + n / rate - time.time()
        if pause > 0:
            time.sleep(pause)
    wall = time.time() - t0
    seen = parent.recv()
    w.join()
    cpu = (daemon.cpu_seconds() - cpu0) / wall * 100
    os.close(fd)
    rc, _ = daemon.stop()
    if len(seen) < len(written):
        say(f"latency {rate}/s: only {len(seen)} of {len(written)} checkpoints reached the store")
    lat = [s - w for s, w in zip(seen, written)]
    res = {
        "rate": rate,
        "samples": len(lat),
        "written": len(written),
        "p50": pct(lat, 50) if lat else float("nan"),
        "p99": pct(lat, 99) if lat else float("nan"),
        "max": max(lat) if lat else float("nan"),
        "cpu": cpu,
        "achieved": total / wall,
        "rc": rc,
    }
    say(
        f"latency {rate} lines/s (achieved {res['achieved']:.0f}): {res['samples']}/{res['written']} checkpoints, "
        f"p50 {res['p50'] * 1000:.0f} ms, p99 {res['p99'] * 1000:.0f} ms, max {res['max'] * 1000:.0f} ms, "
        f"daemon CPU {cpu:.1f} %, exit {rc}"
    )
    return res


# ------------------------------------------------------------------ silence


def silence():
    name = "silence"
    d = fresh(name)
    path = os.path.join(d, "log", "postgresql.log")
    lines = Lines()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, "".join(lines.noise(time.time()) for _ in range(50)).encode())
    daemon = Daemon(name, os.path.join(d, "log", "*.log"))
    daemon.wait(daemon.caught_up([path]), 20, "catch-up on the first lines")
    parent, child = mp.Pipe()
    deadline = time.time() + SILENCE_CYCLES * (SILENCE_SECONDS + 0.5) + 30
    w = mp.Process(target=watcher, args=(daemon.db, SILENCE_CYCLES, deadline, child))
    w.start()
    time.sleep(0.5)
    cpu0, t0 = daemon.cpu_seconds(), time.time()
    written, kinds = [], []
    for i in range(SILENCE_CYCLES):
        lone = i % 2 == 0
        start, done = lines.checkpoint(time.time())
        written.append(time.time())
        kinds.append("lone" if lone else "pair")
        os.write(fd, start.encode())
        if not lone:
            os.write(fd, done.encode())
        time.sleep(SILENCE_SECONDS)
        if lone:
            os.write(fd, done.encode())
        time.sleep(0.5)
    wall = time.time() - t0
    seen = parent.recv()
    w.join()
    cpu = (daemon.cpu_seconds() - cpu0) / wall * 100
    os.close(fd)
    rc, _ = daemon.stop()
    res = {"cpu": cpu, "rc": rc, "written": len(written), "samples": len(seen)}
    for kind in ("lone", "pair"):
        lat = [s - t for s, t, k in zip(seen, written, kinds) if k == kind]
        n = kinds.count(kind)
        res[kind] = {
            "samples": len(lat),
            "written": n,
            "p50": pct(lat, 50) if lat else float("nan"),
            "p99": pct(lat, 99) if lat else float("nan"),
            "max": max(lat) if lat else float("nan"),
            # a start seen only after its complete line was written
            "late": sum(1 for x in lat if x >= SILENCE_SECONDS),
        }
    # paired: each lone cycle with the pair cycle right after it
    ratios = [
        (seen[i] - written[i]) / (seen[i + 1] - written[i + 1])
        for i in range(0, min(len(seen), len(written)) - 1, 2)
        if kinds[i] == "lone" and seen[i + 1] > written[i + 1]
    ]
    res["ratio_p50"] = pct(ratios, 50) if ratios else float("nan")
    for kind in ("lone", "pair"):
        r = res[kind]
        say(
            f"silence, {kind}: {r['samples']}/{r['written']} starts, p50 {r['p50'] * 1000:.0f} ms, "
            f"p99 {r['p99'] * 1000:.0f} ms, max {r['max'] * 1000:.0f} ms, {r['late']} seen after the complete line"
        )
    say(f"silence: lone ÷ pair (per cycle pair, median) {res['ratio_p50']:.2f}; daemon CPU {cpu:.2f} %, exit {rc}")
    return res


# ------------------------------------------------------------------ idle


def idle():
    name = "idle"
    d = fresh(name)
    lines = Lines()
    paths = []
    # A week of small daily files, already read.
    for day in range(7):
        p = os.path.join(d, "log", f"postgresql-{day}.log")
        with open(p, "w") as f:
            t = time.time() - (7 - day) * 86400
            for i in range(2000):
                if i % 500 == 499:
                    f.writelines(lines.checkpoint(t + i))
                else:
                    f.write(lines.noise(t + i))
        paths.append(p)
    daemon = Daemon(name, os.path.join(d, "log", "*.log"))
    daemon.wait(daemon.caught_up(paths), 60, "catch-up")
    time.sleep(2)
    cpu0, t0 = daemon.cpu_seconds(), time.time()
    time.sleep(IDLE_SECONDS)
    cpu1, t1 = daemon.cpu_seconds(), time.time()
    rss = daemon.proc_status("VmRSS")
    rc, _ = daemon.stop()
    res = {"seconds": t1 - t0, "cpu_s": cpu1 - cpu0, "pct": (cpu1 - cpu0) / (t1 - t0) * 100, "rss_kb": rss, "rc": rc}
    say(f"idle: {res['cpu_s']:.2f} s CPU in {res['seconds']:.0f} s = {res['pct']:.3f} % of a core, RSS {rss} kB, exit {rc}")
    return res


# ------------------------------------------------------------------ burst


def catchup(name, logdir, path, size, rounds=CATCHUP_ROUNDS):
    """A daemon with a fresh store started on the complete file (spawn to its
    last commit of a read position) against `walwatch import` of the same
    file, alternated `rounds` times so that both see the same machine; the
    medians are compared. Status is polled only every 0.5 s: the end time is
    the commit time recorded in the store, and a poller spawning `walwatch
    status` every few ms would compete with the daemon for the CPUs."""
    imports, daemons, hwms, rcs = [], [], [], []
    for i in range(rounds):
        db = os.path.join(BENCH_DIR, name, f"catch-up-import-{i}.db")
        t = time.time()
        subprocess.run([WALWATCH, "import", "--db", db, "--cluster", "bench", path], check=True, stdout=subprocess.DEVNULL)
        imports.append(time.time() - t)
        t = time.time()
        cold = Daemon(name, os.path.join(logdir, "*.log"), tag=f"catch-up-{i}")
        cold.wait(cold.caught_up([path]), 600, "catch-up on the complete file", every=0.5)
        hwms.append(cold.proc_status("VmHWM"))
        rc, _ = cold.stop()
        rcs.append(rc)
        daemons.append(last_commit(cold.db) - t)
        say(f"catch-up round {i + 1}: import {imports[-1]:.2f} s, daemon {daemons[-1]:.2f} s (spawn to last commit)")
    mb = size / 1048576
    imp, dae = pct(imports, 50), pct(daemons, 50)
    return {"db": cold.db, "import_s": imp, "daemon_s": dae, "ratio": imp / dae, "mb": mb, "hwm_kb": max(hwms), "rc": max(rcs), "rounds": rounds}


def last_commit(db):
    """Wall time (s) of the daemon's last commit of a read position."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    (us,) = con.execute("SELECT max(last_read) FROM source").fetchone()
    con.close()
    return us / 1e6


def burst():
    name = "burst"
    d = fresh(name)
    # The followed file lives on $BURST_DIR (tmpfs by default): appending 1 GB
    # to a disk-backed file is throttled by writeback far below the daemon's
    # speed, and this measures the daemon, not the disk.
    logdir = os.path.join(BURST_DIR, "log")
    subprocess.run(["rm", "-rf", BURST_DIR], check=True)
    os.makedirs(logdir)
    path = os.path.join(logdir, "postgresql.log")
    size = os.path.getsize(BIG_LOG)
    with open(BIG_LOG, "rb") as src, open(path, "wb") as dst:
        head = src.read(1 << 20)
        head = head[: head.rindex(b"\n") + 1]
        dst.write(head)
    daemon = Daemon(name, os.path.join(logdir, "*.log"))
    daemon.wait(daemon.caught_up([path]), 60, "catch-up on the first MiB")
    hwm_before = daemon.proc_status("VmHWM")
    # Warm the page cache now: on this kind of VM, proactive reclaim (DAMON)
    # drops a file that was read minutes ago, and the append would time the disk.
    t = time.time()
    with open(BIG_LOG, "rb") as src:
        while src.read(8 << 20):
            pass
    say(f"burst: page cache warmed in {time.time() - t:.2f} s")
    say(f"burst: appending {(size - len(head)) / 1048576:.0f} MiB of {BIG_LOG}")
    t0 = time.time()
    # In-kernel copy, 8 MiB per call, to the end of the file (nothing else
    # writes it): copy_file_range, or sendfile across filesystems.
    with open(BIG_LOG, "rb") as src, open(path, "r+b") as dst:
        dst.seek(0, os.SEEK_END)
        off = len(head)
        while off < size:
            count = min(8 << 20, size - off)
            try:
                n = os.copy_file_range(src.fileno(), dst.fileno(), count, off)
            except OSError:
                n = os.sendfile(dst.fileno(), src.fileno(), off, count)
            if n == 0:
                break
            off += n
    t_appended = time.time() - t0
    daemon.wait(daemon.caught_up([path]), 600, "catch-up after the burst", every=0.05)
    hwm = daemon.proc_status("VmHWM")
    rc, stop_s = daemon.stop()
    t_follow = last_commit(daemon.db) - t0
    appended = size - len(head)
    say(f"burst: appended in {t_appended:.2f} s, caught up after {t_follow:.2f} s, VmHWM {hwm} kB (before the burst {hwm_before} kB), exit {rc} after {stop_s:.2f} s")

    imp_db = os.path.join(d, "import.db")
    t = time.time()
    subprocess.run(
        [WALWATCH, "import", "--db", imp_db, "--cluster", "bench", path], check=True, stdout=subprocess.DEVNULL
    )
    t_import = time.time() - t
    say(f"burst: walwatch import of the same file: {t_import:.2f} s")

    def summary(db):
        out = subprocess.run(
            [WALWATCH, "summary", "--db", db, "--cluster", "bench", "--format", "json"],
            check=True,
            capture_output=True,
            text=True,
        )
        return json.loads(out.stdout)

    cold = catchup(name, logdir, path, size)
    same = summary(daemon.db) == summary(imp_db) == summary(cold["db"])
    if not same:
        say(f"burst: STORES DIFFER\n daemon {summary(daemon.db)}\n catch-up {summary(cold['db'])}\n import {summary(imp_db)}")
    subprocess.run(["rm", "-rf", BURST_DIR], check=True)
    mb = appended / 1048576
    return {
        "mb": mb,
        "append_s": t_appended,
        "follow_s": t_follow,
        "after_append_s": t_follow - t_appended,
        "follow_mbs": mb / t_follow,
        "import_s": t_import,
        "import_mbs": (size / 1048576) / t_import,
        "hwm_kb": hwm,
        "cold": cold,
        "same": same,
        "rc": rc,
        "cold_rc": cold["rc"],
    }


# ------------------------------------------------------------------ report


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "?"


def ok(cond):
    return "yes" if cond else "**NO**"


def catchup_only():
    """ONLY=catchup: just the catch-up comparison, on $BIG_LOG copied to $BURST_DIR."""
    d = fresh("catchup")
    logdir = os.path.join(BURST_DIR, "catchup")
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, "postgresql.log")
    subprocess.run(["cp", BIG_LOG, path], check=True)
    c = catchup("catchup", logdir, path, os.path.getsize(path))
    subprocess.run(["rm", "-rf", logdir], check=True)
    print(
        f"| catch-up throughput | {c['mb']:.0f} MB, median of {c['rounds']} rounds | daemon {c['daemon_s']:.2f} s, "
        f"import {c['import_s']:.2f} s; ratio {c['ratio']:.2f} (VmHWM {c['hwm_kb'] / 1024:.1f} MB) | ≥ 0.8 × import "
        f"| {ok(c['ratio'] >= 0.8)} |"
    )
    return 0


def main():
    os.makedirs(BENCH_DIR, exist_ok=True)
    if os.environ.get("ONLY") == "catchup":
        return catchup_only()
    started, load0, t_start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), loadavg(), time.time()
    only = os.environ.get("ONLY", "")
    lat = [latency(r, e) for r, e in RATES] if only in ("", "latency") else []
    sil = silence() if only in ("", "latency", "silence") else None
    idl = idle() if only == "" else None
    bur = burst() if only == "" else None

    print()
    print(
        f"walwatch run, release build, poll_interval 1 s, entry_settle 100 ms, inotify; "
        f"{'QUICK run' if QUICK else 'full run'}{' (ONLY=' + only + ')' if only else ''}; started {started}, "
        f"load average {load0} (1/5/15 min) at the start, {loadavg()} at the end; "
        f"{time.time() - t_start:.0f} s; {os.cpu_count()} CPUs ({cpu_model()})"
    )
    print()
    print("| measure | condition | result | target | met |")
    print("| --- | --- | --- | --- | --- |")
    for r in lat:
        print(
            f"| append-to-commit latency | {r['rate']} lines/s ({r['samples']} checkpoints, {LATENCY_SECONDS:.0f} s) "
            f"| p50 {r['p50'] * 1000:.0f} ms, p99 {r['p99'] * 1000:.0f} ms (max {r['max'] * 1000:.0f} ms; daemon CPU {r['cpu']:.1f} %) "
            f"| p99 ≤ 1 s | {ok(r['p99'] <= 1.0 and r['samples'] == r['written'])} |"
        )
    if sil:
        for kind, what in (
            ("lone", f"a lone `checkpoint starting` line, then {SILENCE_SECONDS:g} s of silence before its complete line"),
            ("pair", f"start and complete lines written together, then {SILENCE_SECONDS + 0.5:g} s of silence"),
        ):
            r = sil[kind]
            late = f"; {r['late']} seen only after the complete line" if r["late"] else ""
            print(
                f"| append-to-commit latency of the start | {what} ({r['samples']} of {r['written']} cycles, "
                f"alternating lone/pair in one daemon) | p50 {r['p50'] * 1000:.0f} ms, p99 {r['p99'] * 1000:.0f} ms "
                f"(max {r['max'] * 1000:.0f} ms{late}) | p99 ≤ 1 s | {ok(r['p99'] <= 1.0 and r['samples'] == r['written'])} |"
            )
        print(
            f"| lone ÷ pair | each lone cycle ÷ the pair cycle after it, median | **{sil['ratio_p50']:.2f}** "
            f"(p50 {sil['lone']['p50'] * 1000:.0f} vs {sil['pair']['p50'] * 1000:.0f} ms; daemon CPU {sil['cpu']:.2f} %) | | |"
        )
    if idl is None:
        print()
        rcs = [r["rc"] for r in lat] + ([sil["rc"]] if sil else [])
        print(f"daemon exit codes after SIGTERM: {rcs}")
        return 0
    print(
        f"| idle CPU | {idl['seconds']:.0f} s, 7 followed files, nothing written | {idl['pct']:.3f} % of a core "
        f"({idl['cpu_s']:.2f} s CPU; RSS {idl['rss_kb'] / 1024:.1f} MB) | ≤ 0.5 % | {ok(idl['pct'] <= 0.5)} |"
    )
    print(
        f"| peak RSS | {bur['mb']:.0f} MB appended at once (in-kernel copy) | VmHWM {bur['hwm_kb'] / 1024:.1f} MB | ≤ 50 MB "
        f"| {ok(bur['hwm_kb'] <= 50 * 1024)} |"
    )
    ratio = bur["follow_mbs"] / bur["import_mbs"]
    # When appending the data takes longer than importing it, the follow time
    # measures the writer; what is left to judge is whether the daemon kept pace.
    writer_bound = bur["append_s"] * 0.8 > bur["import_s"] and bur["after_append_s"] <= max(0.25, 0.05 * bur["import_s"])
    verdict = ok(ratio >= 0.8) if ratio >= 0.8 or not writer_bound else "writer-bound: the daemon kept pace"
    print(
        f"| follow throughput | same {bur['mb']:.0f} MB (file on {BURST_DIR}); the append itself took {bur['append_s']:.2f} s "
        f"| lag 0 {bur['follow_s']:.2f} s after the append began ({bur['after_append_s']:.2f} s after it ended) "
        f"= {bur['follow_mbs']:.0f} MB/s; import {bur['import_s']:.2f} s = {bur['import_mbs']:.0f} MB/s; "
        f"ratio {ratio:.2f} | ≥ 0.8 × import | {verdict} |"
    )
    c = bur["cold"]
    print(
        f"| catch-up throughput | daemon started with a fresh store on the complete {c['mb']:.0f} MB file, "
        f"median of {c['rounds']} rounds alternating with import | daemon {c['daemon_s']:.2f} s spawn to last commit, "
        f"import {c['import_s']:.2f} s; ratio {c['ratio']:.2f} (VmHWM {c['hwm_kb'] / 1024:.1f} MB) | ≥ 0.8 × import "
        f"| {ok(c['ratio'] >= 0.8)} |"
    )
    print()
    rcs = [r["rc"] for r in lat] + [sil["rc"], idl["rc"], bur["rc"], bur["cold_rc"]]
    print(f"daemon exit codes after SIGTERM: {rcs}; burst and catch-up stores equal the import: {bur['same']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
