#!/usr/bin/env python3
"""The measuring half of bench/pgbench-proof.sh (run that, not this).

pgbench before and after walwatch's max_wal_size advice, on a throwaway
cluster whose data directory sits on a write-capped block device:

setup    a sparse image file in $IMAGE_DIR on a loop device
         (`losetup --direct-io=on`), ext4, mounted at $BENCH_DIR/mnt; the
         cap is the blkio throttle of the root cgroup (cgroup v1) on that
         loop device, so every write to the data directory's device is
         capped, whichever process issues it (see "The cap" below). initdb
         as the postgres user, `pgbench -i -s $SCALE` (uncapped), VACUUM
         ANALYZE, a clean shutdown, and a copy of the data directory: every
         phase starts from that copy.
daemon   `walwatch run` with a config written into $BENCH_DIR follows the
         server's log directory for the whole benchmark (the product path),
         its data_directory for the conf files.
phase A  max_wal_size at PostgreSQL's default, 1GB (ALTER SYSTEM + reload,
         so the change is logged), min_wal_size 80MB (the default);
         unthrottled `pgbench -c $CLIENTS -j $THREADS -P 1 -T $DURATION`.
         Then `walwatch suggest --format json` from the daemon's store.
phase B  the suggested max_wal_size (and min_wal_size when it suggests one),
         applied with ALTER SYSTEM + reload; the same pgbench run.
repeats  A, B, A, B, ... ($REPEATS pairs), so the neighbours' load on the
         machine hits both; each B applies the suggestion read after the A
         just before it.

Every phase starts the same way: the server stopped, the data directory
restored from the copy (postgresql.auto.conf kept: the settings change is
then a logged reload, as on a production server), started, the phase's
settings applied, a select-only warm-up of $WARMUP s (fills shared_buffers,
writes nothing), CHECKPOINT, sync, the cap set, pgbench. After pgbench the
cap is lifted and a CHECKPOINT ends the checkpoint in progress, so its
`checkpoint complete` line (its distance) is logged.

Counted per phase, in [pgbench start, pgbench end]: checkpoints by trigger
and "checkpoints are occurring too frequently" warnings, twice -- from the
log text with regular expressions (independent of walwatch), and from
walwatch's store (`walwatch summary --since --until --format json`) -- and
checked to agree. TPS from pgbench's per-second progress lines: mean,
median, p5 of the series, and pgbench's own overall tps. Gain = B's mean
TPS / A's mean TPS, per pair.

The cap (verified at the start of every run, figures in results.json):
dd of $CAP_TEST_MB MB into the mounted file system with the cap set,
three ways: O_DIRECT; buffered + fsync (the writer's own context, as
PostgreSQL's WAL flushes and checkpoint fsyncs); buffered, then `sync -f`
from another process (the kernel flusher's context, as the writeback of
pages a backend evicted). Each must take about size / cap; the run stops
when any is more than 1.5 x the cap. A child blkio cgroup holding the
postmaster would not do: cgroup v1 attributes the kernel flusher's
writeback to the root cgroup, so only writes submitted by the processes
themselves (fsync, sync_file_range, O_DIRECT) are throttled -- buffered
dd then `sync` ran at disk speed while dd + fsync kept to the cap. The
cgroup v2 io controller is not available while blkio is mounted as v1.

Prints the markdown tables for docs/dev/benchmarks.md on stdout (REPORT_ONLY=1
prints them again, and redraws the chart, from $BENCH_DIR/results.json),
progress on stderr; draws $CHART (PNG).
"""

import glob
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone

from benchlib import say, bindir, trigger

WALWATCH = os.environ.get("WALWATCH", "walwatch")
BENCH_DIR = os.environ.get("BENCH_DIR", "/var/tmp/walwatch-pgbench-proof")
SCALE = int(os.environ.get("SCALE", "100"))
CLIENTS = int(os.environ.get("CLIENTS", "8"))
THREADS = int(os.environ.get("THREADS", "2"))
DURATION = int(os.environ.get("DURATION", "1200"))  # phase A's longest; B runs as long as A did
FORCED = int(os.environ.get("FORCED", "5"))  # phase A runs until this many WAL-triggered checkpoints started
WARMUP = int(os.environ.get("WARMUP", "20"))
REPEATS = int(os.environ.get("REPEATS", "1"))
CAP_MB = float(os.environ.get("CAP_MB", "10"))  # MB/s written to the data directory's device; 0: no cap
CAP_TEST_MB = int(os.environ.get("CAP_TEST_MB", "48"))
IMAGE_GB = int(os.environ.get("IMAGE_GB", "20"))
WAL_PREALLOC_MB = int(os.environ.get("WAL_PREALLOC_MB", "2560"))  # recycled WAL segments every phase starts with
SHARED_BUFFERS = os.environ.get("SHARED_BUFFERS", "128MB")
CHECKPOINT_TIMEOUT = os.environ.get("CHECKPOINT_TIMEOUT", "5min")
PGBENCH_ARGS = os.environ.get("PGBENCH_ARGS", "").split()
CHART = os.environ.get("CHART", os.path.join(BENCH_DIR, "pgbench-proof.png"))
KEEP_IMAGE = os.environ.get("KEEP_IMAGE", "0") == "1"
REPORT_ONLY = os.environ.get("REPORT_ONLY", "0") == "1"
RUN_AS = "postgres"
CLUSTER = "bench"
MB = 1024 * 1024

BLKIO_ROOT = "/sys/fs/cgroup/blkio"
THROTTLE = os.path.join(BLKIO_ROOT, "blkio.throttle.write_bps_device")

# The image may go elsewhere (IMAGE_DIR, e.g. a tmpfs) when BENCH_DIR's disk is short of space.
IMAGE_DIR = os.environ.get("IMAGE_DIR", BENCH_DIR)
IMAGE = os.path.join(IMAGE_DIR, "walwatch-pgbench-proof.img")
MNT = os.path.join(BENCH_DIR, "mnt")
DATA = os.path.join(MNT, "data")
GOLDEN = os.path.join(MNT, "golden")  # the copy every phase starts from, on the same file system
LOGDIR = os.path.join(BENCH_DIR, "log")
SOCK = os.path.join(BENCH_DIR, "sock")
STORE = os.path.join(BENCH_DIR, "walwatch.db")
WCONF = os.path.join(BENCH_DIR, "walwatch.toml")
STATE = os.path.join(BENCH_DIR, "loopdev")  # the loop device, for the shell's trap
RESULTS = os.path.join(BENCH_DIR, "results.json")


BINDIR = bindir()


def utc_now():
    return datetime.now(timezone.utc)


def sh(argv, check=True, **kw):
    out = subprocess.run(argv, capture_output=True, text=True, **kw)
    if check and out.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return out


# ------------------------------------------------------------------ the device and its cap


class Device:
    """The loop device under the data directory and the write cap on it."""

    def __init__(self):
        self.loop = None
        self.majmin = None
        self.capped = False

    def create(self):
        os.makedirs(IMAGE_DIR, exist_ok=True)
        with open(IMAGE, "wb") as f:
            f.truncate(IMAGE_GB * 1024 * MB)
        self.loop = sh(["losetup", "--find", "--show", "--direct-io=on", IMAGE]).stdout.strip()
        with open(STATE, "w") as f:
            f.write(self.loop + "\n")
        name = os.path.basename(self.loop)
        self.majmin = open(f"/sys/block/{name}/dev").read().strip()
        dio = open(f"/sys/block/{name}/loop/dio").read().strip()
        sh(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", self.loop])
        os.makedirs(MNT, exist_ok=True)
        sh(["mount", self.loop, MNT])
        say(f"{self.loop} ({self.majmin}, direct I/O {dio}) on {IMAGE}, ext4 at {MNT}")
        fs = sh(["df", "--output=fstype", IMAGE_DIR]).stdout.split()[-1]
        return {"loop": self.loop, "majmin": self.majmin, "direct_io": dio == "1", "image_gb": IMAGE_GB, "image_on": fs}

    def cap(self, on):
        if CAP_MB <= 0 or self.majmin is None:
            return
        bps = int(CAP_MB * MB) if on else 0
        with open(THROTTLE, "w") as f:
            f.write(f"{self.majmin} {bps}\n")
        self.capped = on

    def teardown(self):
        if self.majmin and os.path.exists(THROTTLE):
            try:
                self.cap(False)
            except OSError:
                pass
        if os.path.ismount(MNT):
            sh(["umount", MNT], check=False)
        if self.loop:
            sh(["losetup", "-d", self.loop], check=False)
            self.loop = None
        if os.path.exists(STATE):
            os.remove(STATE)
        if not KEEP_IMAGE and os.path.exists(IMAGE):
            os.remove(IMAGE)


def timed_dd(how, size_mb):
    """Write size_mb MB into the mounted file system; returns MB/s."""
    path = os.path.join(MNT, f"ddtest-{how}")
    dd = ["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={size_mb}", "status=none"]
    t = time.monotonic()
    if how == "direct":
        sh(dd + ["oflag=direct"])
    elif how == "fsync":
        sh(dd + ["conv=fsync"])
    else:  # buffered: the kernel's flusher writes it back, on `sync -f` from another process
        sh(dd)
        sh(["sync", "-f", path])
    secs = time.monotonic() - t
    os.remove(path)
    sh(["sync", "-f", MNT])
    return round(size_mb / secs, 1)


def verify_cap(dev):
    """dd three ways, uncapped then capped; stop when the cap does not hold."""
    res = {"cap_mb_s": CAP_MB, "size_mb": CAP_TEST_MB, "uncapped": {}, "capped": {}}
    dev.cap(False)
    for how in ("direct", "fsync", "flusher"):
        res["uncapped"][how] = timed_dd(how, CAP_TEST_MB * 4)
    if CAP_MB > 0:
        dev.cap(True)
        for how in ("direct", "fsync", "flusher"):
            res["capped"][how] = timed_dd(how, CAP_TEST_MB)
        dev.cap(False)
    say(f"dd MB/s uncapped {res['uncapped']}, capped at {CAP_MB} MB/s: {res['capped']}")
    bad = {k: v for k, v in res["capped"].items() if v > 1.5 * CAP_MB}
    if bad:
        raise SystemExit(f"the write cap does not hold on {dev.loop}: {bad} MB/s against {CAP_MB} MB/s")
    return res


# ------------------------------------------------------------------ the server


def pg(argv, check=True, stdin=None, stderr_to=None):
    cmd = ["setpriv", f"--reuid={RUN_AS}", f"--regid={RUN_AS}", "--init-groups", os.path.join(BINDIR, argv[0])] + argv[1:]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update(LC_ALL="C", HOME=BENCH_DIR, PGHOST=SOCK, PGPORT="5432", PGUSER="postgres", PGDATABASE="postgres")
    out = subprocess.run(cmd, cwd=BENCH_DIR, env=env, input=stdin, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return out


def pg_popen(argv):
    cmd = ["setpriv", f"--reuid={RUN_AS}", f"--regid={RUN_AS}", "--init-groups", os.path.join(BINDIR, argv[0])] + argv[1:]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update(LC_ALL="C", HOME=BENCH_DIR, PGHOST=SOCK, PGPORT="5432", PGUSER="postgres", PGDATABASE="postgres")
    return subprocess.Popen(cmd, cwd=BENCH_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def psql(sql):
    return pg(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-f", "-"], stdin=sql).stdout.strip()


def server_running():
    return os.path.exists(os.path.join(DATA, "postmaster.pid"))


def start():
    pg(["pg_ctl", "start", "-w", "-t", "120", "-D", DATA, "-l", os.path.join(BENCH_DIR, "pg_ctl.log")])


def stop(mode="fast"):
    if server_running():
        pg(["pg_ctl", "stop", "-w", "-t", "300", "-m", mode, "-D", DATA], check=False)


SETTINGS = [
    ("listen_addresses", "''"),
    ("port", "5432"),
    ("unix_socket_directories", f"'{SOCK}'"),
    ("shared_buffers", f"'{SHARED_BUFFERS}'"),
    ("checkpoint_timeout", f"'{CHECKPOINT_TIMEOUT}'"),
    ("log_checkpoints", "on"),
    ("logging_collector", "on"),
    ("log_destination", "'stderr'"),
    ("log_directory", f"'{LOGDIR}'"),
    ("log_filename", "'postgresql-%Y%m%d-%H%M%S.log'"),
    ("log_rotation_age", "0"),
    ("log_rotation_size", "0"),
    ("log_line_prefix", "'%m [%p] '"),
    ("log_timezone", "'UTC'"),
    ("lc_messages", "'C'"),
    ("log_autovacuum_min_duration", "0"),
]


def init_cluster():
    for d in (SOCK, LOGDIR):
        os.makedirs(d, exist_ok=True)
    os.makedirs(DATA, exist_ok=True)
    sh(["chown", f"{RUN_AS}:", BENCH_DIR, SOCK, LOGDIR, MNT, DATA])
    os.chmod(DATA, 0o700)
    pg(["initdb", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "-D", DATA])
    with open(os.path.join(DATA, "postgresql.conf"), "a") as f:
        f.write("\n# --- pgbench proof ---\n" + "\n".join(f"{k} = {v}" for k, v in SETTINGS) + "\n")
    start()
    say(f"pgbench -i -s {SCALE} (uncapped)")
    t = time.monotonic()
    pg(["pgbench", "-i", "-q", "-s", str(SCALE)])
    psql("VACUUM ANALYZE;")
    size_mb = float(psql("SELECT pg_database_size('postgres') / 1048576.0;"))
    say(f"loaded in {time.monotonic() - t:.0f} s: database {size_mb:.0f} MB, shared_buffers {SHARED_BUFFERS}")
    version = psql("SHOW server_version;")
    wal_mb = prealloc_wal()
    stop()
    shutil.rmtree(GOLDEN, ignore_errors=True)
    sh(["cp", "-a", DATA, GOLDEN])
    # The load's own checkpoints are no part of phase A's history.
    for f in glob.glob(os.path.join(LOGDIR, "*")):
        os.remove(f)
    return {"database_mb": round(size_mb), "server_version": version, "pg_wal_start_mb": wal_mb}


def prealloc_wal():
    """pg_wal of $WAL_PREALLOC_MB of recycled segments in the copy every phase
    starts from. A server keeps recycled segments up to what its checkpoints
    need; one just restored has few, and each segment it lacks is created
    by a backend writing 16 MB of zeros (wal_init_zero) while it holds the
    WAL insert position: through the cap, a commit stall of seconds every few
    seconds. At a larger max_wal_size pg_wal grows, so a phase starting from
    a small pg_wal would pay for the growth a running server paid once. With
    the segments already there, each phase runs as in its steady state: A
    removes the ones beyond its need at its first checkpoints, B reuses
    them. Made uncapped: min_wal_size held at the size (ALTER SYSTEM without
    reload until the shutdown checkpoint has recycled them), segments
    created by pg_switch_wal."""
    if WAL_PREALLOC_MB <= 0:
        return 0
    for k in ("max_wal_size", "min_wal_size"):
        psql(f"ALTER SYSTEM SET {k} = '{WAL_PREALLOC_MB}MB';")
    pg(["pg_ctl", "reload", "-D", DATA])
    time.sleep(1)
    need = WAL_PREALLOC_MB // 16 + 2
    have = int(psql("SELECT count(*) FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$';"))
    psql("".join("SELECT txid_current();\nSELECT pg_switch_wal();\n" for _ in range(max(0, need - have))))
    psql("CHECKPOINT;")
    for k in ("max_wal_size", "min_wal_size"):
        psql(f"ALTER SYSTEM RESET {k};")  # read at the next start: the phases begin at the defaults
    mb = float(psql("SELECT sum(size) / 1048576.0 FROM pg_ls_waldir();"))
    say(f"pg_wal holds {mb:.0f} MB of segments for the phases to start from")
    return round(mb)


def restore():
    """The data directory as the load left it, postgresql.auto.conf kept."""
    auto = open(os.path.join(DATA, "postgresql.auto.conf")).read()
    shutil.rmtree(DATA)
    sh(["cp", "-a", GOLDEN, DATA])
    with open(os.path.join(DATA, "postgresql.auto.conf"), "w") as f:
        f.write(auto)
    sh(["sync", "-f", DATA])
    sh(["fstrim", MNT], check=False)  # the removed copy's blocks back to the image's file system


def logged(needle, since_bytes, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if needle in log_text()[since_bytes:]:
            return True
        time.sleep(0.2)
    raise SystemExit(f"{needle!r} never appeared in the server log")


def log_files():
    return sorted(glob.glob(os.path.join(LOGDIR, "*.log")))


def log_text():
    return "".join(open(f, errors="replace").read() for f in log_files())


def apply(max_wal_mb, min_wal_mb, daemon):
    """ALTER SYSTEM + reload of the values that differ; waits for the server
    to log each change, then has the daemon read the conf files (SIGHUP), so
    the change is dated at the reload. A value already in force is not
    written: phase A1 runs with nothing in postgresql.auto.conf, at
    PostgreSQL's defaults."""
    mark = len(log_text())
    want = {"max_wal_size": max_wal_mb, "min_wal_size": min_wal_mb}
    current = {k: int(psql(f"SELECT setting FROM pg_settings WHERE name = '{k}';")) for k in want}  # MB
    changed = [k for k in want if current[k] != want[k]]
    for k in changed:
        psql(f"ALTER SYSTEM SET {k} = '{want[k]}MB';")
    if changed:
        pg(["pg_ctl", "reload", "-D", DATA])
        for k in changed:
            logged(f'parameter "{k}" changed to "{want[k]}MB"', mark)
        daemon.reread()
    shown = {k: psql(f"SHOW {k};") for k in want}
    say(f"settings {shown}" + (f" ({', '.join(changed)} changed)" if changed else " (unchanged)"))
    return shown


# ------------------------------------------------------------------ walwatch


def write_walwatch_config():
    with open(WCONF, "w") as f:
        f.write(
            "# walwatch for bench/pgbench-proof.sh: follows the throwaway cluster's log.\n"
            f"[store]\npath = {json.dumps(STORE)}\n\n"
            '[daemon]\npoll_interval = "1s"\n\n'
            f"[[cluster]]\nname = {json.dumps(CLUSTER)}\n"
            f"logs = [{json.dumps(os.path.join(LOGDIR, '*.log'))}]\n"
            f"data_directory = {json.dumps(DATA)}\n"
            'start_at = "beginning"\n'
        )


class Daemon:
    def __init__(self):
        self.proc = None

    def start(self):
        for f in (STORE, STORE + "-wal", STORE + "-shm"):
            if os.path.exists(f):
                os.remove(f)
        self.log = open(os.path.join(BENCH_DIR, "walwatch-run.log"), "w")
        self.proc = subprocess.Popen([WALWATCH, "run", "--config", WCONF], stdout=self.log, stderr=subprocess.STDOUT)
        with open(os.path.join(BENCH_DIR, "walwatch.pid"), "w") as f:
            f.write(f"{self.proc.pid}\n")
        time.sleep(2)
        if self.proc.poll() is not None:
            raise SystemExit(f"walwatch run exited {self.proc.returncode}: see {self.log.name}")
        say(f"walwatch run (pid {self.proc.pid}) follows {LOGDIR}")

    def reread(self):
        """SIGHUP: the daemon reads the conf files again."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGHUP)
            time.sleep(2)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        pid = os.path.join(BENCH_DIR, "walwatch.pid")
        if os.path.exists(pid):
            os.remove(pid)


def walwatch(*args):
    out = subprocess.run([WALWATCH, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"walwatch {' '.join(args)} failed ({out.returncode}): {out.stderr}")
    return out.stdout


def caught_up(daemon, timeout=60):
    """Until the daemon has stored the log's last checkpoint line (its time)."""
    last = None
    for m in re.finditer(r"^(\S+ \S+) UTC \[\d+\] LOG:  checkpoint complete", log_text(), re.M):
        last = m.group(1)
    if last is None:
        return
    want = datetime.strptime(last, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if daemon.proc.poll() is not None:
            raise SystemExit("walwatch run exited during the benchmark")
        s = json.loads(walwatch("summary", "--db", STORE, "--cluster", CLUSTER, "--format", "json"))
        if s.get("last_at") and datetime.fromisoformat(s["last_at"].replace("Z", "+00:00")) >= want:
            return
        time.sleep(1)
    raise SystemExit(f"walwatch run did not store the log's events up to {last} within {timeout} s")


# ------------------------------------------------------------------ the log text (independent of walwatch)

LINE = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) UTC \[\d+\] LOG:  "
START = re.compile(LINE + r"checkpoint starting: (.*)$", re.M)
TOO_FREQUENT = re.compile(LINE + r"checkpoints are occurring too frequently \((\d+) seconds? apart\)", re.M)


def log_time(text):
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc)


def from_log(t0, t1):
    """Checkpoint starts by trigger (with their times) and warnings in [t0, t1]."""
    text = log_text()
    starts = [(log_time(m.group(1)), trigger(m.group(2))) for m in START.finditer(text)]
    starts = [(t, trig) for t, trig in starts if t0 <= t <= t1]
    warnings = [log_time(m.group(1)) for m in TOO_FREQUENT.finditer(text)]
    by = {k: sum(1 for _, trig in starts if trig == k) for k in ("wal", "time", "manual", "shutdown", "end-of-recovery")}
    return {
        "checkpoints": by,
        "too_frequent": sum(1 for t in warnings if t0 <= t <= t1),
        "wal_at_s": [round((t - t0).total_seconds(), 1) for t, trig in starts if trig == "wal"],
        "time_at_s": [round((t - t0).total_seconds(), 1) for t, trig in starts if trig == "time"],
    }


def from_walwatch(t0, t1):
    s = json.loads(
        walwatch("summary", "--db", STORE, "--cluster", CLUSTER, "--since", iso(t0), "--until", iso(t1), "--format", "json")
    )
    return {"summary": s, "checkpoints": s["checkpoints"]["by_trigger"], "too_frequent": s["too_frequent"]}


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ------------------------------------------------------------------ a phase

PROGRESS = re.compile(r"^progress: ([\d.]+) s, ([\d.]+) tps, lat ([\d.]+) ms", re.M)
TPS = re.compile(r"^tps = ([\d.]+) \(without initial connection time\)", re.M)


def pct(values, p):
    v = sorted(values)
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)] if v else None


def pgbench_run(label, t0, duration):
    """Unthrottled pgbench, a TPS figure per second. With `duration` (phase
    B) it runs that long. Without (phase A) it runs until the server has
    logged $FORCED WAL-triggered checkpoint starts since t0 -- the cycles
    `walwatch suggest` needs ([advice] min_samples, 5) -- and then half a
    mean cycle more, so that it stops mid-cycle, neither in the slump after
    a checkpoint start nor just before the next; $DURATION at most."""
    argv = ["pgbench", "-n", "-c", str(CLIENTS), "-j", str(THREADS), "-P", "1", "-T", str(duration or DURATION)] + PGBENCH_ARGS
    proc = pg_popen(argv)
    if duration is None:
        stop_at = None
        while proc.poll() is None:
            time.sleep(1)
            if stop_at is None:
                starts = [t for t, trig in ((log_time(m.group(1)), trigger(m.group(2))) for m in START.finditer(log_text())) if trig == "wal" and t >= t0]
                if len(starts) >= FORCED:
                    last = (starts[-1] - t0).total_seconds()
                    stop_at = time.monotonic() + last / len(starts) / 2
                    say(f"{label}: {len(starts)} WAL-triggered checkpoints in {last:.0f} s; stopping in {last / len(starts) / 2:.0f} s")
            elif time.monotonic() >= stop_at:
                proc.send_signal(signal.SIGINT)
                break
    stdout, stderr = proc.communicate()
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def phase(label, max_wal_mb, min_wal_mb, dev, daemon, duration=None):
    say(f"{label}: max_wal_size {max_wal_mb}MB, min_wal_size {min_wal_mb}MB")
    dev.cap(False)
    stop()
    restore()
    start()
    shown = apply(max_wal_mb, min_wal_mb, daemon)
    pg(["pgbench", "-S", "-n", "-c", str(CLIENTS), "-j", str(THREADS), "-T", str(WARMUP)])
    psql("CHECKPOINT;")
    sh(["sync", "-f", DATA])
    dev.cap(True)
    lsn0 = psql("SELECT pg_current_wal_lsn();")
    t0 = utc_now()
    out = pgbench_run(label, t0, duration)
    t1 = utc_now()
    wal_mb = float(psql(f"SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '{lsn0}') / 1048576.0;"))
    dev.cap(False)
    psql("CHECKPOINT;")  # ends the checkpoint in progress: its complete line (distance) is logged
    with open(os.path.join(BENCH_DIR, f"pgbench-{label}.txt"), "w") as f:
        f.write(out.stdout + out.stderr)
    series = [float(m.group(2)) for m in PROGRESS.finditer(out.stderr)]
    m = TPS.search(out.stdout)
    caught_up(daemon)
    log = from_log(t0, t1)
    ww = from_walwatch(t0, t1)
    agree = all(log["checkpoints"][k] == ww["checkpoints"].get(k, 0) for k in ("wal", "time")) and log["too_frequent"] == ww["too_frequent"]
    res = {
        "label": label,
        "seconds": round((t1 - t0).total_seconds(), 1),
        "max_wal_size": shown["max_wal_size"],
        "min_wal_size": shown["min_wal_size"],
        "max_wal_size_mb": max_wal_mb,
        "t0": t0.isoformat(),
        "t1": t1.isoformat(),
        "wal_mb": round(wal_mb, 1),
        "tps_series": series,
        "tps_pgbench": float(m.group(1)) if m else None,
        "mean": statistics.fmean(series) if series else None,
        "median": statistics.median(series) if series else None,
        "p5": pct(series, 5),
        "log": log,
        "walwatch": ww,
        "agree": agree,
        "load": os.getloadavg()[0],
    }
    say(
        f"{label}: mean {res['mean']:.0f} tps (pgbench {res['tps_pgbench']}), median {res['median']:.0f}, p5 {res['p5']:.0f}; "
        f"WAL {wal_mb:.0f} MB; log: wal {log['checkpoints']['wal']} time {log['checkpoints']['time']} "
        f"too frequent {log['too_frequent']}; walwatch: {ww['checkpoints']} too frequent {ww['too_frequent']}; "
        f"{'agree' if agree else 'DISAGREE'}; load {res['load']:.1f}"
    )
    return res


def suggest():
    s = json.loads(walwatch("suggest", "--config", WCONF, "--db", STORE, "--cluster", CLUSTER, "--utc", "--format", "json"))
    sug = s.get("suggested") or {}
    if not sug.get("max_wal_size_mb"):
        raise SystemExit(
            "walwatch suggest has no max_wal_size to suggest after phase A (lengthen DURATION):\n"
            + "\n".join(s.get("explanation", []) if isinstance(s.get("explanation"), list) else [str(s.get("explanation"))])
        )
    say(f"walwatch suggests max_wal_size {sug['max_wal_size_mb']}MB, min_wal_size {sug.get('min_wal_size_mb')}; confidence {s.get('confidence')}")
    return s


# ------------------------------------------------------------------ report and chart


def gain(a, b):
    return b["mean"] / a["mean"] if a.get("mean") and b.get("mean") else None


def report(saved):
    pairs = saved["pairs"]
    setup = saved["setup"]
    cap = setup.get("cap") or {}
    print()
    print(
        f"pgbench before and after walwatch's advice, {saved['started']}–{saved['ended']} UTC: PostgreSQL {setup.get('server_version')}, "
        f"shared_buffers {SHARED_BUFFERS}, checkpoint_timeout {CHECKPOINT_TIMEOUT}, pgbench -s {saved['scale']} "
        f"({setup.get('database_mb')} MB) -c {saved['clients']} -j {saved['threads']}; phase A until {saved.get('forced', 5)} WAL-triggered "
        f"checkpoints and half a cycle (at most {saved['duration']} s), B as long; "
        f"writes capped at {cap.get('cap_mb_s')} MB/s; {os.cpu_count()} CPUs"
    )
    if cap:
        print()
        print("| dd into the data directory's file system, MB/s | O_DIRECT | buffered + fsync | buffered, then `sync -f` (flusher) |")
        print("| --- | --- | --- | --- |")
        for k in ("uncapped", "capped"):
            if cap.get(k):
                c = cap[k]
                print(f"| {k} | {c['direct']} | {c['fsync']} | {c['flusher']} |")
    print()
    print("| pair | phase | max_wal_size | seconds | mean TPS | median | p5 | transactions/s overall | forced (wal) checkpoints | time checkpoints | too frequent warnings | WAL MB | walwatch agrees | load |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for i, p in enumerate(pairs, 1):
        for ph in ("A", "B"):
            r = p.get(ph)
            if not r:
                continue
            c = r["log"]["checkpoints"]
            overall = f"{r['tps_pgbench']:.0f}" if r.get("tps_pgbench") else "-"
            print(
                f"| {i} | {ph} | {r['max_wal_size']} | {r['seconds']:.0f} | {r['mean']:.0f} | {r['median']:.0f} | {r['p5']:.0f} | {overall} | "
                f"{c['wal']} | {c['time']} | {r['log']['too_frequent']} | {r['wal_mb']:.0f} | {'yes' if r['agree'] else 'NO'} | {r['load']:.1f} |"
            )
    print()
    gains = [gain(p["A"], p["B"]) for p in pairs if p.get("A") and p.get("B")]
    for i, p in enumerate(pairs, 1):
        if p.get("B"):
            s = p["suggest"]
            print(
                f"- pair {i}: walwatch suggested max_wal_size {s['suggested']['max_wal_size_mb']}MB, min_wal_size "
                f"{s['suggested'].get('min_wal_size_mb') or '-'} (confidence {s.get('confidence')}); "
                f"gain B ÷ A mean TPS **{gain(p['A'], p['B']):.2f}**"
            )
    if gains:
        print()
        print(f"gain (B ÷ A mean TPS), median over {len(gains)} pair(s): **{statistics.median(gains):.2f}**")
    print(f"\nchart: {CHART}")


def chart(saved):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = [p for p in saved["pairs"] if p.get("A") and p.get("B")]
    if not pairs:
        return
    fig, axes = plt.subplots(len(pairs), 1, figsize=(11, 3.8 * len(pairs) + 1.2), sharex=True, squeeze=False)
    gains = [gain(p["A"], p["B"]) for p in pairs]
    setup = saved["setup"]
    cap = (setup.get("cap") or {}).get("cap_mb_s")
    for ax, (i, p) in zip(axes[:, 0], enumerate(pairs, 1)):
        top = 0
        for ph, color in (("A", "tab:red"), ("B", "tab:blue")):
            r = p[ph]
            ys = r["tps_series"]
            xs = list(range(1, len(ys) + 1))
            top = max(top, max(ys) if ys else 0)
            c = r["log"]["checkpoints"]
            ax.plot(xs, ys, color=color, lw=0.6, alpha=0.35)
            k = 10
            smooth = [statistics.fmean(ys[max(0, j - k + 1) : j + 1]) for j in range(len(ys))]
            ax.plot(
                xs,
                smooth,
                color=color,
                lw=1.8,
                label=f"{ph}: max_wal_size {r['max_wal_size']}, mean {r['mean']:.0f} TPS, "
                f"{c['wal']} forced + {c['time']} timed checkpoints",
            )
            ax.axhline(r["mean"], color=color, lw=0.8, ls=":")
        for ph, color, y in (("A", "tab:red", 1.0), ("B", "tab:blue", 0.93)):
            for j, t in enumerate(p[ph]["log"]["wal_at_s"]):
                ax.axvline(t, color=color, lw=1.0, ls="--", alpha=0.8)
                ax.plot([t], [top * 1.06 * y], marker="v", color=color, ms=7, label=f"{ph}: WAL-forced checkpoint starts (log)" if j == 0 else None)
            for j, t in enumerate(p[ph]["log"]["time_at_s"]):
                ax.plot([t], [top * 1.06 * y], marker="o", mfc="none", color=color, ms=6, label=f"{ph}: time checkpoint starts (log)" if j == 0 else None)
        ax.set_ylim(0, top * 1.15)
        ax.set_ylabel("TPS (transactions/s)")
        ax.set_title(f"pair {i}: B ÷ A mean TPS = {gains[i - 1]:.2f}", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8, framealpha=0.9)
    axes[-1, 0].set_xlabel("seconds since pgbench start (thin: per second; thick: 10 s mean; dotted: phase mean)")
    med = statistics.median(gains)
    version = str(setup.get("server_version", "")).split(" ")[0]
    fig.suptitle(
        f"pgbench at PostgreSQL's default max_wal_size (A), then at walwatch's suggestion (B): B's mean TPS = {med:.2f} x A's\n"
        f"PostgreSQL {version}, pgbench scale {saved['scale']} ({setup.get('database_mb')} MB) over shared_buffers {SHARED_BUFFERS}, "
        f"-c {saved['clients']} -j {saved['threads']}, checkpoint_timeout {CHECKPOINT_TIMEOUT}, writes capped at {cap:g} MB/s",
        fontsize=11,
    )
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(CHART)), exist_ok=True)
    fig.savefig(CHART, dpi=100)
    say(f"chart: {CHART}")


# ------------------------------------------------------------------ main


def save(saved):
    saved["ended"] = time.strftime("%H:%M", time.gmtime())
    with open(RESULTS, "w") as f:
        json.dump(saved, f, indent=1, default=str)


def main():
    if REPORT_ONLY:
        saved = json.load(open(RESULTS))
        chart(saved)
        report(saved)
        return 0
    if os.geteuid() != 0:
        raise SystemExit("run as root: the loop device, its mount and the blkio cap need it (PostgreSQL runs as postgres)")
    if CAP_MB > 0 and not os.path.exists(THROTTLE):
        raise SystemExit(f"no {THROTTLE}: this needs the cgroup v1 blkio controller (or CAP_MB=0 to run uncapped)")
    os.makedirs(BENCH_DIR, exist_ok=True)
    shutil.rmtree(LOGDIR, ignore_errors=True)
    t_start = time.monotonic()
    saved = {
        "started": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "scale": SCALE,
        "clients": CLIENTS,
        "threads": THREADS,
        "duration": DURATION,
        "warmup": WARMUP,
        "forced": FORCED,
        "pgbench_args": PGBENCH_ARGS,
        "setup": {},
        "pairs": [],
    }
    dev, daemon = Device(), Daemon()

    def on_signal(signum, _frame):
        raise SystemExit(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        saved["setup"]["device"] = dev.create()
        saved["setup"]["cap"] = verify_cap(dev)
        saved["setup"].update(init_cluster())
        write_walwatch_config()
        start()  # from here on the log is the benchmark's
        daemon.start()
        default_max, default_min = 1024, 80
        for i in range(1, REPEATS + 1):
            pair = {}
            saved["pairs"].append(pair)
            pair["A"] = phase(f"A{i}", default_max, default_min, dev, daemon)
            save(saved)
            s = suggest()
            pair["suggest"] = s
            sug = s["suggested"]
            pair["B"] = phase(
                f"B{i}", sug["max_wal_size_mb"], sug.get("min_wal_size_mb") or default_min, dev, daemon, round(pair["A"]["seconds"])
            )
            save(saved)
        saved["seconds"] = round(time.monotonic() - t_start)
        save(saved)
    finally:
        dev.cap(False) if dev.majmin else None
        stop("fast")
        daemon.stop()
        dev.teardown()
    say(f"done in {saved['seconds'] / 60:.1f} min")
    chart(saved)
    report(saved)
    return 0


if __name__ == "__main__":
    sys.exit(main())
