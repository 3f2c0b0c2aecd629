#!/usr/bin/env python3
"""The measuring half of bench/advice-bench.sh (run that, not this).

The closed loop on a real PostgreSQL, for each workload
rate in $RATES (pgbench transactions per second):

phase 1  max_wal_size = 32MB (min_wal_size 32MB, checkpoint_timeout 30s,
         log_checkpoints on): a fixed-rate pgbench run (`--rate R -T D`) on a
         `pgbench -i -s $SCALE` database. The run's log file (the log is
         rotated before and after each run) is imported into a fresh walwatch
         store and `walwatch suggest --cluster C --format json` gives S.
verify   the same workload with max_wal_size = S: forced (wal-triggered)
         checkpoints must be zero.
bisect   the smallest sufficient max_wal_size to 32 MB (not the next power of
         two): a size is sufficient when a run of the same workload and
         duration at it has no WAL-triggered checkpoint and no "checkpoints
         are occurring too frequently" warning. Bisection between 32MB
         (phase 1: insufficient) and S (verified; when S is not sufficient,
         doubled until a size is), assuming monotonic sizes (a size above a
         sufficient one is sufficient). Reported: S ÷ smallest.
second   (SECOND_PASS=1, the default) the run at S (then at least 6
         checkpoint_timeouts long, so that walwatch has min_samples cycles at
         S and leaves phase 1's out) is imported into the same store and
         `walwatch suggest` asked again, the server's conf at S, as a DBA who
         applied S would: S2, run and reported ÷ the smallest.
burst    (BURST=FxS@T, e.g. 4x40@60) every run is bursty: T s into it, a
         second fixed-rate pgbench adds (F - 1) x R transactions per second
         for S s on top of the steady R, as a nightly batch job does on top of
         the day's traffic; S, the bisection and the second pass all see the
         same burst.
repeats  the whole loop (fresh cluster, phase 1, S, bisection) $REPEATS times
         per rate, repeat-major (every rate gets repeat 1 before repeat 2).

Every run starts the same way: ALTER SYSTEM SET max_wal_size, reload (the
`parameter "max_wal_size" changed` line must be logged), VACUUM, CHECKPOINT
(so the checkpointer uses the new size and the cycle starts fresh), rotate
the log, then pgbench. Forced checkpoints are counted from the log text
(`checkpoint starting: wal` lines started during the run); the WAL written is
pg_current_wal_lsn() before and after.

pg_walsizer's rule on the phase-1 observations: it wakes every
checkpoint_timeout, takes `requested` = requested checkpoints since its last
wake-up, and sets max_wal_size = current × (requested + 1), capped at 4096MB
(it acts only when requested >= its threshold, 2). Intervals are taken from
the phase-1 start; the first full interval and the max over all intervals are
reported.

Without $SUGGEST_FROM=walwatch (the default once `walwatch suggest` works),
$SUGGEST_FROM=formula computes S from the phase-1 log with the model's own
formula (src/analyze/sizing.rs) instead; the report says which was used.

Prints the markdown tables for docs/dev/benchmarks.md on stdout (REPORT_ONLY=1
prints them again from $BENCH_DIR/results.json, e.g. for a run cut short:
finished repeats are saved as they end), progress on stderr. The per-run
table also carries tests/postgres/advice_postgres.rs's independent bound (phase 1's
LSN mean rate per checkpoint_timeout × 1.25 through PostgreSQL's trigger
rule, and × 2 for the p95 over the mean) and the p95 ÷ mean it allows for.
"""

import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

from benchlib import say, bindir, trigger

WALWATCH = os.environ["WALWATCH"]
BENCH_DIR = os.environ.get("BENCH_DIR", "/tmp/walwatch-advice-bench")
RATES = [int(r) for r in os.environ.get("RATES", "100,300").split(",")]
SCALE = int(os.environ.get("SCALE", "10"))
CLIENTS = int(os.environ.get("CLIENTS", "4"))
DURATION = int(os.environ.get("DURATION", "170"))
SUGGEST_FROM = os.environ.get("SUGGEST_FROM", "walwatch")
ONLY_PHASE1 = os.environ.get("ONLY_PHASE1", "0") == "1"
REPEATS = int(os.environ.get("REPEATS", "2"))
# SECOND_PASS=1: after the run at S, its log joins phase 1's in the store and
# `walwatch suggest` is asked again (S2), as a DBA who applied S would; S2 is
# run too and reported against the smallest sufficient size.
SECOND_PASS = os.environ.get("SECOND_PASS", "1") == "1"
# REPORT_ONLY=1: print the tables from $BENCH_DIR/results.json (a run cut short keeps its finished repeats).
REPORT_ONLY = os.environ.get("REPORT_ONLY", "0") == "1"
# BURST=FxS@T: F times the rate for S seconds, starting T seconds into each run.
BURST = os.environ.get("BURST", "")
STEP_MB = 32
# walwatch's [advice] min_samples default: cycles since a settings change
# before the cycles from before it are left out.
MIN_SAMPLES = 5
MAX_MB = 4096
TIMEOUT_S = 30
CCT = 0.9
SEGMENT_MB = 16
START_MB = 32
WALSIZER_CAP_MB = 4096
WALSIZER_THRESHOLD = 2

SETTINGS = [
    ("max_wal_size", "'32MB'"),
    ("min_wal_size", "'32MB'"),
    ("checkpoint_timeout", "'30s'"),
    ("log_checkpoints", "on"),
    ("logging_collector", "on"),
    ("log_destination", "'stderr'"),
    ("log_filename", "'postgresql-%Y%m%d-%H%M%S.log'"),
    ("log_rotation_age", "0"),
    ("log_rotation_size", "0"),
    ("log_line_prefix", "'%m [%p] %q%u@%d '"),
    ("log_timezone", "'UTC'"),
    ("lc_messages", "'C'"),
    # Autovacuum writes WAL too: its runs in the log explain bursts.
    ("log_autovacuum_min_duration", "0"),
]


BINDIR = bindir()
RUN_AS = "postgres" if os.geteuid() == 0 else None


def utc_now():
    return datetime.now(timezone.utc)


def log_time(text):
    """'2026-11-22 12:00:00.123 UTC' -> aware datetime."""
    return datetime.strptime(text[:23], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc)


# ------------------------------------------------------------------ cluster


class Cluster:
    def __init__(self, name):
        self.dir = os.path.join(BENCH_DIR, name)
        self.port = free_port()
        if os.path.exists(self.dir):
            self.pg(["pg_ctl", "stop", "-m", "immediate", "-D", self.data], check=False, quiet=True)
            shutil.rmtree(self.dir)
        os.makedirs(os.path.join(self.dir, "sock"))
        os.makedirs(os.path.join(self.dir, "log"))
        if RUN_AS:
            subprocess.run(["chown", "-R", f"{RUN_AS}:", self.dir], check=True)
        self.pg(["initdb", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync", "-D", self.data])
        conf = [
            f"port = {self.port}",
            "listen_addresses = ''",
            f"unix_socket_directories = '{self.dir}/sock'",
            f"log_directory = '{self.dir}/log'",
        ] + [f"{k} = {v}" for k, v in SETTINGS]
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write("\n# --- advice bench ---\n" + "\n".join(conf) + "\n")
        self.running = False

    @property
    def data(self):
        return os.path.join(self.dir, "data")

    def pg(self, argv, check=True, quiet=False, stdin=None):
        cmd = [os.path.join(BINDIR, argv[0])] + argv[1:]
        if RUN_AS:
            cmd = ["setpriv", f"--reuid={RUN_AS}", f"--regid={RUN_AS}", "--init-groups"] + cmd
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C", HOME=self.dir, PGHOST=f"{self.dir}/sock", PGPORT=str(self.port), PGUSER="postgres")
        out = subprocess.run(cmd, cwd=self.dir, env=env, input=stdin, capture_output=True, text=True)
        if check and out.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
        if not quiet and out.stderr.strip() and argv[0] not in ("pgbench", "pg_ctl", "initdb"):
            say(f"{argv[0]}: {out.stderr.strip()}")
        return out.stdout

    def start(self):
        self.pg(["pg_ctl", "start", "-w", "-t", "60", "-D", self.data, "-l", os.path.join(self.dir, "pg_ctl.log")])
        self.running = True

    def stop(self):
        if self.running:
            self.pg(["pg_ctl", "stop", "-w", "-t", "120", "-m", "fast", "-D", self.data])
            self.running = False

    def psql(self, sql):
        return self.pg(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", "postgres", "-f", "-"], stdin=sql)

    def pgbench(self, args):
        return self.pg(["pgbench"] + args + ["postgres"])

    def log_files(self):
        return sorted(glob.glob(os.path.join(self.dir, "log", "*.log")))

    def log_text(self, files=None):
        return "".join(open(f, errors="replace").read() for f in (files or self.log_files()))

    def rotate(self):
        """A new log file from now on; returns it. File names have 1 s resolution."""
        before = set(self.log_files())
        time.sleep(1.1)
        self.psql("SELECT pg_rotate_logfile();")
        deadline = time.time() + 20
        while time.time() < deadline:
            new = sorted(set(self.log_files()) - before)
            if new:
                return new[-1]
            time.sleep(0.05)
        raise SystemExit(f"log rotation produced no new file in {self.dir}/log")

    def wait_log(self, needle, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if needle in self.log_text():
                return
            time.sleep(0.1)
        raise SystemExit(f"{needle!r} never appeared in the log of {self.dir}")

    def lsn_mb(self):
        return float(self.psql("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') / 1048576.0;").strip())

    def set_max_wal_size(self, mb):
        current = self.psql("SHOW max_wal_size;").strip()
        self.psql(f"ALTER SYSTEM SET max_wal_size = '{mb}MB';")
        self.pg(["pg_ctl", "reload", "-D", self.data])
        want = f"{mb // 1024}GB" if mb % 1024 == 0 else f"{mb}MB"
        if current != want:
            # The postmaster logs the value as written in postgresql.auto.conf.
            self.wait_log(f'parameter "max_wal_size" changed to "{mb}MB"')
        shown = self.psql("SHOW max_wal_size;").strip()
        if shown != want:
            raise SystemExit(f"SHOW max_wal_size = {shown!r}, wanted {want!r}")


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ the log


START = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC) \[\d+\] LOG:  checkpoint starting: (.*)$", re.M)
COMPLETE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC) \[\d+\] LOG:  checkpoint complete: .*?distance=(\d+) kB", re.M
)
TOO_FREQUENT = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC) \[\d+\] LOG:  checkpoints are occurring too frequently \((\d+) seconds? apart\)",
    re.M,
)


def checkpoints(text):
    """[(start datetime, trigger, distance_kb or None)], server-written lines only (no user@db)."""
    starts = [(log_time(m.group(1)), trigger(m.group(2))) for m in START.finditer(text)]
    completes = [(log_time(m.group(1)), int(m.group(2))) for m in COMPLETE.finditer(text)]
    out = []
    # One checkpoint at a time: the i-th complete after the i-th start belongs to it.
    ci = 0
    for i, (t, trig) in enumerate(starts):
        nxt = starts[i + 1][0] if i + 1 < len(starts) else None
        dist = None
        while ci < len(completes) and completes[ci][0] < t:
            ci += 1
        if ci < len(completes) and (nxt is None or completes[ci][0] <= nxt):
            dist = completes[ci][1]
            ci += 1
        out.append((t, trig, dist))
    return out


def cycles(cps):
    """Per-cycle WAL rates as the model measures them: distance / time since the previous start."""
    out = []
    for prev, cur in zip(cps, cps[1:]):
        if cur[2] is None or prev[1] in ("shutdown", "end-of-recovery") or cur[1] in ("shutdown", "end-of-recovery"):
            continue
        secs = (cur[0] - prev[0]).total_seconds()
        if secs >= 1.0:
            out.append({"at": cur[0].isoformat(), "trigger": cur[1], "seconds": secs, "distance_kb": cur[2], "rate_kb_s": cur[2] / secs})
    return out


def pct(values, p):
    """Nearest rank, as the model."""
    v = sorted(values)
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)] if v else None


def formula_mb(peak_kb_s, headroom=1.25):
    """src/analyze/sizing.rs, PG 11+: the smallest whole-segment size whose trigger
    ((floor(size / seg / (1 + cct)) - 1) segments) stays above W × headroom, then
    up to the next 64MB (up to 1GB), 256MB (up to 4GB) or GB."""
    wal = peak_kb_s * TIMEOUT_S / 1024 * headroom
    seg = max(2, math.ceil(wal * (1 + CCT) / SEGMENT_MB))
    while (math.floor(seg * SEGMENT_MB / SEGMENT_MB / (1 + CCT)) - 1) * SEGMENT_MB < wal:
        seg += 1
    mb = seg * SEGMENT_MB
    step = 64 if mb <= 1024 else 256 if mb <= 4096 else 1024
    return int(max(1, math.ceil(mb / step)) * step)


def walsizer(cps, t0, t1, current_mb=START_MB):
    """pg_walsizer on these observations: wal-triggered starts per checkpoint_timeout interval from t0."""
    n = int((t1 - t0).total_seconds() // TIMEOUT_S)
    counts = []
    for i in range(n):
        a = t0.timestamp() + i * TIMEOUT_S
        b = a + TIMEOUT_S
        counts.append(sum(1 for t, trig, _ in cps if trig == "wal" and a <= t.timestamp() < b))
    rule = lambda req: min(WALSIZER_CAP_MB, current_mb * (req + 1)) if req >= WALSIZER_THRESHOLD else current_mb
    first = counts[0] if counts else 0
    most = max(counts) if counts else 0
    return {"intervals": counts, "first_requested": first, "first_mb": rule(first), "max_requested": most, "max_mb": rule(most)}


# ------------------------------------------------------------------ a run


PGBENCH = {
    "processed": re.compile(r"number of transactions actually processed: (\d+)"),
    "latency_ms": re.compile(r"latency average = ([\d.]+) ms"),
    "lag_ms": re.compile(r"rate limit schedule lag: avg ([\d.]+) \(max ([\d.]+)\) ms"),
    "tps": re.compile(r"tps = ([\d.]+) \(without initial connection time\)"),
}


def parse_pgbench(out):
    r = {}
    for k, rx in PGBENCH.items():
        m = rx.search(out)
        if m and k == "lag_ms":
            r["lag_avg_ms"], r["lag_max_ms"] = float(m.group(1)), float(m.group(2))
        elif m:
            r[k] = float(m.group(1))
    return r


def parse_burst(spec):
    """BURST=FxS@T -> (factor, seconds, at), or None when unset."""
    if not spec:
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)x(\d+)@(\d+)", spec)
    if not m:
        raise SystemExit(f"BURST={spec!r}: expected FxS@T, e.g. 4x40@60")
    return float(m.group(1)), int(m.group(2)), int(m.group(3))


def pgbench_with_burst(cl, rate, duration):
    """The steady run, with BURST's extra pgbench on top when set; returns
    the steady run's output (its tps is the steady rate's)."""
    steady = ["--rate", str(rate), "-T", str(duration), "-c", str(CLIENTS), "-j", str(CLIENTS)]
    burst = parse_burst(BURST)
    if not burst:
        return cl.pgbench(steady)
    factor, seconds, at = burst
    if at + seconds > duration:
        raise SystemExit(f"BURST={BURST}: the burst must end within the {duration} s run")
    with ThreadPoolExecutor(max_workers=1) as pool:
        main = pool.submit(cl.pgbench, steady)
        time.sleep(at)
        extra = round((factor - 1) * rate)
        cl.pgbench(["--rate", str(extra), "-T", str(seconds), "-c", str(CLIENTS), "-j", str(CLIENTS)])
        return main.result()


def run(cl, mb, rate, label, duration=None):
    """One fixed-rate run at max_wal_size = mb MB (for `duration` s, DURATION
    unless given); returns its figures and log file."""
    duration = duration or DURATION
    cl.set_max_wal_size(mb)
    cl.psql("VACUUM;")
    cl.psql("CHECKPOINT;")
    logfile = cl.rotate()
    lsn0, t0 = cl.lsn_mb(), utc_now()
    out = pgbench_with_burst(cl, rate, duration)
    t1, lsn1 = utc_now(), cl.lsn_mb()
    cl.psql("CHECKPOINT;")  # waits for the checkpoint in progress: its complete line is in this file
    cl.rotate()
    text = open(logfile, errors="replace").read()
    cps = checkpoints(text)
    inside = [c for c in cps if t0 <= c[0] <= t1]
    freq = [(log_time(m.group(1)), int(m.group(2))) for m in TOO_FREQUENT.finditer(text)]
    cyc = [c for c in cycles(cps) if t0 <= datetime.fromisoformat(c["at"]) <= t1]
    res = {
        "label": label,
        "rate": rate,
        "max_wal_size_mb": mb,
        "t0": t0.isoformat(),
        "t1": t1.isoformat(),
        "seconds": (t1 - t0).total_seconds(),
        "wal_mb": lsn1 - lsn0,
        "wal_mb_s": (lsn1 - lsn0) / (t1 - t0).total_seconds(),
        "forced": sum(1 for c in inside if c[1] == "wal"),
        "timed": sum(1 for c in inside if c[1] == "time"),
        "too_frequent": sum(1 for t, _ in freq if t0 <= t <= t1),
        "cycles": cyc,
        "p95_rate_kb_s": pct([c["rate_kb_s"] for c in cyc], 95),
        "logfile": logfile,
        "autovacuum": re.findall(r"^(\S+ \S+) UTC \[\d+\] LOG:  automatic (?:vacuum|analyze) of table \"([^\"]+)\"", text, re.M),
        "pgbench": parse_pgbench(out),
        "walsizer": walsizer(cps, t0, t1),
    }
    pb = res["pgbench"]
    say(
        f"{label}: rate {rate} tps, max_wal_size {mb}MB: tps {pb.get('tps', 0):.1f}, latency {pb.get('latency_ms', 0):.1f} ms, "
        f"lag avg {pb.get('lag_avg_ms', 0):.1f} max {pb.get('lag_max_ms', 0):.0f} ms; WAL {res['wal_mb']:.0f} MB "
        f"({res['wal_mb_s']:.2f} MB/s); forced {res['forced']}, timed {res['timed']}, too frequent {res['too_frequent']}; "
        f"p95 cycle rate {res['p95_rate_kb_s'] or 0:.0f} kB/s over {len(cyc)} cycles; "
        f"autovacuum/analyze: {sorted(set(t for _, t in res['autovacuum']))}"
    )
    return res


def walwatch_suggest(cl, logfiles, name, fresh=True):
    """Import log files into the rate's store (a fresh one for phase 1, the
    same one for the second pass); `walwatch suggest` reads the server's
    conf files."""
    logfiles = [logfiles] if isinstance(logfiles, str) else logfiles
    logfile = logfiles[-1]
    work = os.path.join(BENCH_DIR, f"{name}-walwatch")
    if fresh:
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    db = os.path.join(work, "walwatch.db")
    cfg = os.path.join(work, "walwatch.toml")
    with open(cfg, "w") as f:
        f.write(
            f"[store]\npath = {json.dumps(db)}\n\n[[cluster]]\nname = {json.dumps(name)}\n"
            f"logs = [{json.dumps(logfile)}]\ndata_directory = {json.dumps(cl.data)}\n"
        )
    subprocess.run([WALWATCH, "import", "--db", db, "--cluster", name, *logfiles], check=True, stdout=subprocess.DEVNULL)
    out = subprocess.run(
        [WALWATCH, "suggest", "--config", cfg, "--db", db, "--cluster", name, "--format", "json"],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(f"walwatch suggest failed:\n{out.stdout}\n{out.stderr}")
    s = json.loads(out.stdout)
    cps = subprocess.run(
        [WALWATCH, "checkpoints", "--db", db, "--cluster", name, "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
    )
    return s, json.loads(cps.stdout)


# ------------------------------------------------------------------ per rate


def sufficient(r):
    """A size is sufficient when its run had no WAL-triggered checkpoint and no "too frequently" warning."""
    return r["forced"] == 0 and r["too_frequent"] == 0


def lsn_bound(p1, slack=2.0, headroom=1.25):
    """tests/postgres/advice_postgres.rs's independent upper bound, from phase 1's LSNs:
    (WAL per checkpoint_timeout at the phase's mean rate) x headroom x slack
    through PostgreSQL's trigger rule, rounded like the model. Returns (need at
    slack 1, bound)."""
    w = p1["wal_mb_s"] * TIMEOUT_S

    def size_for(wal):
        seg = 2
        while (math.floor(seg / (1 + CCT)) - 1) * SEGMENT_MB < wal:
            seg += 1
        mb = seg * SEGMENT_MB
        step = 64 if mb <= 1024 else 256 if mb <= 4096 else 1024
        return int(math.ceil(mb / step) * step)

    return size_for(w * headroom), size_for(w * headroom * slack)


def bisect(cl, rate, name, runs, lo_mb, hi_mb):
    """The smallest sufficient multiple of STEP_MB in (lo_mb, hi_mb], lo_mb known
    insufficient and hi_mb known sufficient; sizes are assumed monotonic (a
    size above a sufficient one is sufficient). Returns the trail."""
    lo, hi = lo_mb // STEP_MB, -(-hi_mb // STEP_MB)
    trail = []
    while hi - lo > 1:
        mid = (lo + hi) // 2
        mb = mid * STEP_MB
        if mb not in runs:
            runs[mb] = run(cl, mb, rate, f"{name} bisect")
        ok = sufficient(runs[mb])
        trail.append((mb, runs[mb]["forced"], runs[mb]["too_frequent"], ok))
        if ok:
            hi = mid
        else:
            lo = mid
    return hi * STEP_MB, trail


def one_rate(rate, repeat):
    name = f"rate{rate}-r{repeat}"
    say(f"{name}: initdb, pgbench -i -s {SCALE}")
    cl = Cluster(name)
    cl.start()
    try:
        cl.pgbench(["-i", "-s", str(SCALE), "-q"])
        p1 = run(cl, START_MB, rate, f"{name} phase 1")
        formula = formula_mb(p1["p95_rate_kb_s"]) if p1["p95_rate_kb_s"] else None
        res = {"rate": rate, "repeat": repeat, "phase1": p1, "formula_mb": formula, "runs": {START_MB: p1}}
        if SUGGEST_FROM == "walwatch":
            s, cps = walwatch_suggest(cl, p1["logfile"], name)
            res["suggest"] = s
            res["walwatch_checkpoints"] = cps
            S = s["suggested"]["max_wal_size_mb"]
            say(f"{name}: walwatch suggests {S}MB (the formula on the bench's own cycle list: {formula}MB); basis {s['basis']}")
        else:
            S = formula
            say(f"{name}: S from the model's formula: {S}MB")
        res["S"] = S
        res["S_from"] = SUGGEST_FROM
        if S is None or ONLY_PHASE1 or sufficient(p1):
            return res
        runs = res["runs"]
        # For the second pass the run at S must hold walwatch's min_samples
        # (5) cycles, so that suggest leaves phase 1's forced cycles out,
        # as it does once a day at S has passed.
        at_s = max(DURATION, TIMEOUT_S * (MIN_SAMPLES + 1) + 15) if SECOND_PASS else DURATION
        runs[S] = run(cl, S, rate, f"{name} verify S", at_s)
        if SECOND_PASS and SUGGEST_FROM == "walwatch":
            # The DBA applied S and asks again: every log file up to the run
            # at S goes into the same store (the reload that logged the new
            # max_wal_size is in the file before the run's, as a daemon
            # following the log reads it), the server's conf still says S.
            upto = [f for f in cl.log_files() if f <= runs[S]["logfile"]]
            s2, _ = walwatch_suggest(cl, upto, name, fresh=False)
            res["suggest2"] = s2
            res["S2"] = s2["suggested"]["max_wal_size_mb"]
            say(f"{name}: second pass at {S}MB suggests {res['S2']}MB; basis {s2['basis']}")
        # S not sufficient: double until a size is (the bisection then runs between).
        lo, hi = START_MB, S
        while not sufficient(runs[hi]) and hi < MAX_MB:
            lo, hi = hi, min(MAX_MB, hi * 2)
            if hi not in runs:
                runs[hi] = run(cl, hi, rate, f"{name} above S")
        if not sufficient(runs[hi]):
            return res
        res["smallest_mb"], res["trail"] = bisect(cl, rate, name, runs, lo, hi)
        say(f"{name}: S {S}MB, smallest sufficient {res['smallest_mb']}MB, S / smallest {S / res['smallest_mb']:.2f}")
        S2 = res.get("S2")
        if S2:
            if S2 not in runs:
                runs[S2] = run(cl, S2, rate, f"{name} verify S2")
            say(f"{name}: S2 {S2}MB sufficient: {sufficient(runs[S2])}, S2 / smallest {S2 / res['smallest_mb']:.2f}")
        return res
    finally:
        cl.stop()


# ------------------------------------------------------------------ report


def fmt_run(x):
    if not x:
        return "-"
    return f"{x['pgbench'].get('tps', 0):.0f}, {x['wal_mb_s']:.2f}, {x['forced']} / {x['timed']} / {x['too_frequent']}"


def report(results, started, ended, duration=DURATION, load=None):
    for r in results:  # results.json keys are strings
        r["runs"] = {int(k): v for k, v in r["runs"].items()}
    print()
    print(
        f"advice closed loop, {started}–{ended} UTC: PostgreSQL ({BINDIR}), pgbench -s {SCALE} -c {CLIENTS} -j {CLIENTS}, "
        f"{duration} s per run{f', burst {BURST} (F x the rate for S s at T s)' if BURST else ''}, checkpoint_timeout {TIMEOUT_S}s; bisection to {STEP_MB} MB; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0] if load is None else load:.1f} at the end; S from {SUGGEST_FROM}"
    )
    print()
    print(
        "| rate (tps) | repeat | phase 1 @ 32MB: tps, WAL MB/s, forced / timed / too frequent; p95 cycle rate (÷ mean) "
        "| S | run @ S: tps, WAL MB/s, forced / timed / too frequent | bisection: size → forced / too frequent "
        "| smallest sufficient | **S ÷ smallest** | LSN need ×1.25 / test bound ×2 |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        p1 = r["phase1"]
        atS = r["runs"].get(r["S"]) if r.get("S") != START_MB else None
        sm = r.get("smallest_mb")
        mean_kb_s = p1["wal_mb_s"] * 1024
        p95 = p1["p95_rate_kb_s"] or 0
        trail = ", ".join(f"{mb}MB → {f} / {t}" for mb, f, t, _ in r.get("trail", [])) or "-"
        need, bound = lsn_bound(p1)
        ratio = f"**{r['S'] / sm:.2f}**" if sm and r.get("S") else "-"
        print(
            f"| {r['rate']} | {r['repeat']} | {fmt_run(p1)}; {p95:.0f} kB/s ({p95 / mean_kb_s:.2f}) | {r.get('S')}MB | "
            f"{fmt_run(atS)} | {trail} | {f'{sm}MB' if sm else '-'} | {ratio} | {need}MB / {bound}MB |"
        )
    print()
    print("| rate (tps) | S per repeat | smallest sufficient per repeat | S ÷ smallest per repeat | pg_walsizer's first step on phase 1 |")
    print("| --- | --- | --- | --- | --- |")
    for rate in dict.fromkeys(r["rate"] for r in results):
        rs = [r for r in results if r["rate"] == rate]
        ratios = [f"{r['S'] / r['smallest_mb']:.2f}" if r.get("smallest_mb") and r.get("S") else "-" for r in rs]
        ws = [f"{r['phase1']['walsizer']['first_mb']}MB ({r['phase1']['walsizer']['first_requested']} requested)" for r in rs]
        sizes = ", ".join(f"{r.get('S')}MB" for r in rs)
        smallest = ", ".join(f"{r['smallest_mb']}MB" if r.get("smallest_mb") else "-" for r in rs)
        print(f"| {rate} | {sizes} | {smallest} | **{', '.join(ratios)}** | {', '.join(ws)} |")
    second = [r for r in results if r.get("S2") and r.get("smallest_mb")]
    if second:
        print()
        print("Second pass (the run at S imported too, `suggest` asked again at S):")
        print()
        print("| rate (tps) | repeat | S | S2 | run @ S2: forced / timed / too frequent | smallest sufficient | **S2 ÷ smallest** |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for r in second:
            at2 = r["runs"].get(r["S2"])
            counts = f"{at2['forced']} / {at2['timed']} / {at2['too_frequent']}" if at2 else "-"
            print(
                f"| {r['rate']} | {r['repeat']} | {r['S']}MB | {r['S2']}MB | {counts} | {r['smallest_mb']}MB | "
                f"**{r['S2'] / r['smallest_mb']:.2f}** |"
            )
    print()
    print("All runs (max_wal_size → forced / timed checkpoints, too frequent, WAL MB/s, achieved tps, schedule lag avg/max ms):")
    print()
    for r in results:
        runs = "; ".join(
            f"{mb}MB → {x['forced']} / {x['timed']}, {x['too_frequent']}, {x['wal_mb_s']:.2f}, "
            f"{x['pgbench'].get('tps', 0):.1f}, {x['pgbench'].get('lag_avg_ms', 0):.1f}/{x['pgbench'].get('lag_max_ms', 0):.0f}"
            for mb, x in sorted(r["runs"].items(), key=lambda kv: int(kv[0]))
        )
        print(f"- {r['rate']} tps, repeat {r['repeat']}: {runs}")


def main():
    os.makedirs(BENCH_DIR, exist_ok=True)
    path = os.path.join(BENCH_DIR, "results.json")
    if REPORT_ONLY:
        with open(path) as f:
            saved = json.load(f)
        report(saved["results"], saved["started"], saved["ended"], saved.get("duration", DURATION), saved.get("load"))
        return 0
    if RUN_AS:
        subprocess.run(["chown", f"{RUN_AS}:", BENCH_DIR], check=True)
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    results = []
    # Repeat-major: when time runs short, every rate has its first repeat.
    for repeat in range(1, REPEATS + 1):
        for rate in RATES:
            results.append(one_rate(rate, repeat))
            ended = time.strftime("%H:%M", time.gmtime())
            with open(path, "w") as f:
                json.dump({"started": started, "ended": ended, "duration": DURATION, "load": os.getloadavg()[0], "results": results}, f, indent=1, default=str)
    report(results, started, ended)
    return 0


if __name__ == "__main__":
    sys.exit(main())
