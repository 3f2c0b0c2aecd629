"""`walwatch whatif` against a real PostgreSQL (see whatif-bench.sh).

One throwaway cluster (the advice bench's settings: checkpoint_timeout 30s,
min_wal_size 32MB, log_checkpoints on), `pgbench -i -s $SCALE`, then fixed-rate
runs of $DURATION s:
  1. after a warm-up run, a recorded run at max_wal_size = $SIZE_MB; its log is imported and
     `walwatch whatif --since t0 --until t1 --max-wal-size S/2 S 2S` predicts;
  2. a run at each of S/2, S and 2S, measured: WAL-triggered checkpoints and
     "too frequently" warnings from the log text, the peak of pg_wal from the
     server's own pg_ls_waldir() sampled every 0.2 s.
Prints one markdown table: predicted against measured per size.
"""

import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import advice_bench as ab  # noqa: E402  (its Cluster, run() and log parsing)

SIZE_MB = int(os.environ.get("SIZE_MB", "64"))
RATE = int(os.environ.get("RATE", "200"))


def peak_pg_wal(cl, stop, out):
    """The largest sum(size) of pg_ls_waldir() seen until `stop` is set, MB."""
    while not stop.is_set():
        try:
            mb = float(cl.psql("SELECT sum(size) / 1048576.0 FROM pg_ls_waldir();").strip())
            out[0] = max(out[0], mb)
        except SystemExit:
            pass
        time.sleep(0.2)


def measured(cl, mb, label):
    stop, peak = threading.Event(), [0.0]
    sampler = threading.Thread(target=peak_pg_wal, args=(cl, stop, peak))
    sampler.start()
    try:
        r = ab.run(cl, mb, RATE, label)
    finally:
        stop.set()
        sampler.join()
    r["peak_pg_wal_mb"] = peak[0]
    return r


def walwatch(*args):
    out = subprocess.run([ab.WALWATCH, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"walwatch {' '.join(args)}: {out.stderr}")
    return out.stdout


def main():
    os.makedirs(ab.BENCH_DIR, exist_ok=True)
    cl = ab.Cluster("whatif")
    cl.start()
    try:
        cl.pgbench(["-i", "-s", str(ab.SCALE), "-q"])
        # The first run after the load writes less WAL than the ones after it.
        measured(cl, SIZE_MB, "warm-up")
        rec = measured(cl, SIZE_MB, "recorded")
        db = os.path.join(ab.BENCH_DIR, "whatif.db")
        if os.path.exists(db):
            os.remove(db)
        walwatch("import", "-q", "--db", db, "--cluster", "bench", rec["logfile"])
        sizes = [SIZE_MB // 2, SIZE_MB, SIZE_MB * 2]
        args = ["whatif", "--db", db, "--cluster", "bench", "--since", rec["t0"], "--until", rec["t1"], "--format", "json"]
        predicted = json.loads(walwatch(*args, "--max-wal-size", *[f"{s}MB" for s in sizes]))
        runs = [measured(cl, s, f"{s}MB") for s in sizes]
    finally:
        cl.stop()
    print(f"whatif against PostgreSQL ({ab.BINDIR}), pgbench --rate {RATE} -s {ab.SCALE}, {ab.DURATION} s per run; "
          f"recorded at {SIZE_MB}MB: {rec['forced']} forced, {rec['timed']} timed, {rec['wal_mb']:.0f} MB of WAL, "
          f"peak pg_wal {rec['peak_pg_wal_mb']:.0f} MB\n")
    print("| max_wal_size | forced predicted | forced measured | too frequent predicted / measured | "
          "peak pg_wal predicted | peak pg_wal measured | WAL measured |")
    print("|---|---|---|---|---|---|---|")
    for s, p, m in zip(sizes, predicted, runs):
        print(f"| {s}MB | {p['checkpoints']['wal']} | {m['forced']} | {p['too_frequent']} / {m['too_frequent']} | "
              f"{p['peak_pg_wal_mb']:.0f} MB | {m['peak_pg_wal_mb']:.0f} MB | {m['wal_mb']:.0f} MB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
