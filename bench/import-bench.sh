#!/usr/bin/env bash
# Import throughput benchmark for walwatch on *real* PostgreSQL logs.
#
#   bench/import-bench.sh [all|generate|measure]      (default: all)
#
# generate: start a throwaway PostgreSQL cluster with statement logging on
#   (log_statement='all', as on a busy server), log_checkpoints=on,
#   max_wal_size=1GB and checkpoint_timeout=60s (a few checkpoint lines per
#   minute among ~100k statement lines: sparse, as in production), run
#   pgbench until the real log reaches $SEED_MB, then replicate that log to
#   two files: >= $TARGET_MB (the big one) and >= $SMALL_MB (the one pgbadger
#   can read in a few minutes). Each copy's timestamps get a different year,
#   so the copies are distinct records in chronological order, not
#   byte-identical repeats.
# measure: $RUNS rounds, page cache warmed first; each round runs, in turn,
#   on the small file: walwatch import (fresh db), `grep -c checkpoint`,
#     pgbadger -j 1 and pgbadger -j $(nproc) (in the first $PGBADGER_RUNS
#     rounds only: ~0.65 MB/s per core),
#   on the big file: walwatch import, `grep -c checkpoint`, cat.
#   Every run is timed (wall clock) and measured by /usr/bin/time (CPU, peak
#   RSS). Ratios are taken within a round and the median over rounds is
#   quoted, so that they hold while the shared machine's speed drifts.
#   `report` prints the tables again from the last runs.tsv (also after an
#   interrupted measure).
#   Prints the markdown tables for docs/dev/benchmarks.md on stdout (also kept in
#   $BENCH_DIR/report.md, every run in $BENCH_DIR/runs.tsv); progress on
#   stderr.
#
# Environment (defaults):
#   BENCH_DIR=/tmp/walwatch-bench   where everything is written (not the repo)
#   TARGET_MB=1024  SMALL_MB=100  SEED_MB=150  SEED_MAX_SECONDS=600
#   RUNS=5  PGBADGER_RUNS=3  SKIP_BIG=1 leaves out the big file's runs
#   OUT_DIR=/dev/shm  where the tools' output goes (tmpfs: see run_one)
#   WALWATCH=$CARGO_TARGET_DIR/release/walwatch (target/ by default; built
#     with cargo build --release unless WALWATCH is set)
#   FORCE=1 regenerates the logs even if they exist
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-/tmp/walwatch-bench}
TARGET_MB=${TARGET_MB:-1024}
SEED_MB=${SEED_MB:-150}
SEED_MAX_SECONDS=${SEED_MAX_SECONDS:-600}
SMALL_MB=${SMALL_MB:-100}
RUNS=${RUNS:-5}
PGBADGER_RUNS=${PGBADGER_RUNS:-3}
SKIP_BIG=${SKIP_BIG:-0}
LOG_FILE="$BENCH_DIR/bench-${TARGET_MB}MB.log"
SMALL_FILE="$BENCH_DIR/bench-${SMALL_MB}MB.log"
PREFIX='%m [%p] %q%u@%d '

# shellcheck source=bench/common.sh
. "$REPO/bench/common.sh"

# ---------------------------------------------------------------- PostgreSQL

# Same search order as tests/support: pg_config, newest Debian dir, PATH.
pg_bindir() {
    local d
    d=$(pg_config --bindir 2>/dev/null || true)
    if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; return; fi
    d=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -t/ -k4 -n | tail -1)
    if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; return; fi
    d=$(command -v initdb 2>/dev/null || true)
    [ -n "$d" ] && { dirname "$d"; return; }
    die "PostgreSQL server binaries not found: install the 'postgresql' package"
}

# The server refuses to run as root: use the postgres user then.
as_pg() {
    if [ "$(id -u)" = 0 ]; then
        setpriv --reuid=postgres --regid=postgres --init-groups "$@"
    else
        "$@"
    fi
}

# Unix socket only (listen_addresses=''), in our own dir: no port clashes.
CLUSTER=""
start_cluster() {
    local bin=$1
    CLUSTER="$BENCH_DIR/cluster"
    rm -rf "$CLUSTER"
    mkdir -p "$CLUSTER/sock" "$CLUSTER/log"
    if [ "$(id -u)" = 0 ]; then chown -R postgres: "$CLUSTER"; fi
    (cd "$CLUSTER" && as_pg "$bin/initdb" -A trust -U postgres -E UTF8 --locale=C \
        --no-sync -D "$CLUSTER/data" >/dev/null)
    cat >>"$CLUSTER/data/postgresql.conf" <<EOF
listen_addresses = ''
port = 5432
unix_socket_directories = '$CLUSTER/sock'
logging_collector = on
log_destination = 'stderr'
log_directory = '$CLUSTER/log'
log_rotation_size = 0
log_line_prefix = '$PREFIX'
log_timezone = 'UTC'
lc_messages = 'C'
log_statement = 'all'
log_checkpoints = on
max_wal_size = '1GB'
checkpoint_timeout = '60s'
shared_buffers = '128MB'
# Commit fsyncs would cap pgbench (and so log volume per minute) on slow
# disks; the statements logged are the same either way.
synchronous_commit = off
EOF
    trap stop_cluster EXIT
    (cd "$CLUSTER" && as_pg "$bin/pg_ctl" start -w -D "$CLUSTER/data" -l "$CLUSTER/pg_ctl.log" >/dev/null)
}

stop_cluster() {
    [ -n "$CLUSTER" ] && [ -f "$CLUSTER/data/postmaster.pid" ] || return 0
    (cd "$CLUSTER" && as_pg "$(pg_bindir)/pg_ctl" stop -w -m fast -D "$CLUSTER/data" >/dev/null) || true
}

log_mb() { du -cm "$CLUSTER"/log/* | tail -1 | cut -f1; }

pgb() { (cd "$CLUSTER" && as_pg "$1/pgbench" -h "$CLUSTER/sock" -U postgres "${@:2}" postgres); }

# Real server output: pgbench in 10 s rounds until the log is big enough.
make_seed() {
    local bin start
    bin=$(pg_bindir)
    say "seed: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') in $BENCH_DIR/cluster"
    start_cluster "$bin"
    pgb "$bin" -i -s 10 -q >/dev/null 2>&1
    start=$(date +%s)
    while [ "$(log_mb)" -lt "$SEED_MB" ]; do
        [ $(($(date +%s) - start)) -lt "$SEED_MAX_SECONDS" ] || { say "seed: time cap reached"; break; }
        pgb "$bin" -c 4 -j 2 -T 10 -n >/dev/null 2>&1
        say "seed: $(log_mb) MB of log after $(($(date +%s) - start)) s"
    done
    pgb "$bin" -c 1 -t 1 -n >/dev/null 2>&1   # a last statement or two
    (cd "$CLUSTER" && as_pg "$bin/psql" -X -q -h "$CLUSTER/sock" -U postgres -c CHECKPOINT postgres)
    stop_cluster
    trap - EXIT
    cat "$CLUSTER"/log/* >"$BENCH_DIR/seed.log"
    rm -rf "$CLUSTER"
    say "seed: $(du -m "$BENCH_DIR/seed.log" | cut -f1) MB, $(grep -c 'checkpoint starting' "$BENCH_DIR/seed.log" || true) checkpoint starts"
}

# Copy k of n gets year Y - 4(n - k) on every prefixed line, so the file
# stays chronological and no record repeats; steps of 4 years keep Feb 29
# valid. TAB continuation lines are untouched.
# replicate MB FILE
replicate() {
    local seed="$BENCH_DIR/seed.log" seed_bytes target_bytes copies year k out=$2
    seed_bytes=$(stat -c %s "$seed")
    target_bytes=$(($1 * 1024 * 1024))
    copies=$(((target_bytes + seed_bytes - 1) / seed_bytes))
    year=$(head -c 4 "$seed")
    say "replicate: $copies copies of the seed -> $out"
    : >"$out.tmp"
    for ((k = 1; k <= copies; k++)); do
        sed -E "s/^${year}-/$((year - 4 * (copies - k)))-/" "$seed" >>"$out.tmp"
    done
    mv "$out.tmp" "$out"
}

generate() {
    mkdir -p "$BENCH_DIR"
    chmod 755 "$BENCH_DIR"
    if [ -s "$LOG_FILE" ] && [ -s "$SMALL_FILE" ] && [ "${FORCE:-0}" != 1 ]; then
        say "reusing $LOG_FILE and $SMALL_FILE (FORCE=1 to regenerate)"
        return
    fi
    if [ ! -s "$BENCH_DIR/seed.log" ] || [ "${FORCE:-0}" = 1 ]; then make_seed; fi
    replicate "$TARGET_MB" "$LOG_FILE"
    replicate "$SMALL_MB" "$SMALL_FILE"
}

# ---------------------------------------------------------------- measuring

now() { date +%s.%N; }

# run_one LABEL FILE CMD...: one timed run of CMD (a program, not a shell
# function: /usr/bin/time runs it); appends
# "label<TAB>round<TAB>file MB<TAB>wall s<TAB>user s<TAB>sys s<TAB>peak RSS kB"
# to $RUNS_TSV. Output goes to a regular file, never /dev/null: GNU grep stops
# at the first match when its output is /dev/null, timing nothing, and run as
# root pgbadger replaces /dev/null with a regular file (it writes its report
# through a rename). That file is on tmpfs ($OUT_DIR): `cat` writes 1 GB to
# it, and dirty pages of a disk file would make the next run's fsyncs (the
# walwatch store's) wait for their writeback (measured: 0.4 s -> 1.3 s).
OUT_DIR=${OUT_DIR:-$([ -d /dev/shm ] && echo /dev/shm || echo "$BENCH_DIR")}
CMD_OUT="$OUT_DIR/walwatch-bench-output.$$"
ROUND=0
run_one() {
    local label=$1 file=$2 t0 t1 mb user sys rss
    shift 2
    mb=$(awk -v b="$(stat -L -c %s "$file")" 'BEGIN {printf "%.1f", b / 1048576}')
    t0=$(now)
    /usr/bin/time -f '%U %S %M' -o "$BENCH_DIR/time.txt" "$@" >"$CMD_OUT" ||
        [ "$1" = grep ] || die "$label failed (exit $?)"
    t1=$(now)
    read -r user sys rss <"$BENCH_DIR/time.txt"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$ROUND" "$mb" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')" "$user" "$sys" "$rss" >>"$RUNS_TSV"
    say "round $ROUND: $label on $mb MB: $(tail -1 "$RUNS_TSV" | cut -f4) s wall, RSS $rss kB"
}

# a fresh store each run, removed outside the timing
ww_import() {
    rm -f "$BENCH_DIR"/bench.db*
    run_one "walwatch import" "$1" "$WALWATCH" import --db "$BENCH_DIR/bench.db" --cluster bench "$1"
}
grep_count() { run_one "grep -c checkpoint" "$1" grep -c checkpoint "$1"; }
pgbadger_report() {
    rm -f "$BENCH_DIR/pgbadger-report.txt"
    run_one "pgbadger -j $1" "$2" pgbadger -f stderr --prefix "$PREFIX" -j "$1" -q -x text \
        -o "$BENCH_DIR/pgbadger-report.txt" "$2"
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
RUNS_TSV="$BENCH_DIR/runs.tsv"

# Rounds: every command once per round, in the same order, so that each
# ratio is taken within one round (the machine's speed drifts between
# rounds) and the median of the per-round ratios is quoted.
measure() {
    [ -s "$LOG_FILE" ] || die "$LOG_FILE missing: run '$0 generate' first"
    [ -s "$SMALL_FILE" ] || die "$SMALL_FILE missing: run '$0 generate' first"
    command -v /usr/bin/time >/dev/null || die "/usr/bin/time missing: apt-get install time"
    local have_pgb=0 r
    if command -v pgbadger >/dev/null; then have_pgb=1; else
        say "pgbadger not installed (apt-get install pgbadger): its rows are left out"
    fi
    : >"$RUNS_TSV"
    local t_start
    t_start=$(date +%s)
    {
        echo "started $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(loadavg) (1/5/15 min) at the start;"
        echo "$(nproc) CPUs ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo));"
        echo "walwatch $("$WALWATCH" --version 2>/dev/null | awk '{print $2}') release build; $(pgbadger --version 2>/dev/null || echo 'no pgbadger'); $(grep --version | head -1);"
    } >"$BENCH_DIR/context.txt"
    say "warming the page cache"
    cat "$SMALL_FILE" "$LOG_FILE" >/dev/null
    for ((r = 1; r <= RUNS; r++)); do
        ROUND=$r
        ww_import "$SMALL_FILE"
        grep_count "$SMALL_FILE"
        if [ "$have_pgb" = 1 ] && [ "$r" -le "$PGBADGER_RUNS" ]; then
            pgbadger_report 1 "$SMALL_FILE"
            pgbadger_report "$(nproc)" "$SMALL_FILE"
        fi
        if [ "$SKIP_BIG" != 1 ]; then
            ww_import "$LOG_FILE"
            grep_count "$LOG_FILE"
            run_one "cat (to a file)" "$LOG_FILE" cat "$LOG_FILE"
        fi
    done
    rm -f "$CMD_OUT"
    echo "load average $(loadavg) at the end, $(($(date +%s) - t_start)) s of measuring." >>"$BENCH_DIR/context.txt"
    report | tee "$BENCH_DIR/report.md"
}

# Markdown for docs/dev/benchmarks.md, from $RUNS_TSV (all figures are medians over
# rounds; ratios are medians of the per-round ratios).
report() {
    python3 - "$RUNS_TSV" "$BENCH_DIR/context.txt" "$RUNS" "$PGBADGER_RUNS" <<'PYEOF'
import statistics as st
import sys
from collections import defaultdict

tsv, ctx, runs, pgb_runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rows = defaultdict(dict)  # (label, mb) -> round -> (wall, cpu, rss_kb)
sizes = []
for line in open(tsv):
    label, rnd, mb, wall, user, sys_, rss = line.rstrip("\n").split("\t")
    rows[(label, mb)][int(rnd)] = (float(wall), float(user) + float(sys_), int(rss))
    if mb not in sizes:
        sizes.append(mb)
sizes.sort(key=float)
med = st.median


def fig(label, mb, i):
    return [v[i] for v in rows[(label, mb)].values()]


def ratio(a, b, mb, i=0):
    """Per-round b/a (i = 0 wall, 1 CPU) for the rounds both ran in: median, min, max."""
    ra, rb = rows.get((a, mb), {}), rows.get((b, mb), {})
    r = [rb[k][i] / ra[k][i] for k in ra if k in rb and ra[k][i] > 0]
    return (med(r), min(r), max(r), len(r)) if r else None


def show(r, fmt, x=""):
    return f"**{r[0]:{fmt}}{x}** ({r[1]:{fmt}}–{r[2]:{fmt}}{x}, {r[3]} rounds)"


print(" ".join(l.strip() for l in open(ctx)))
print()
print(f"{runs} rounds planned, pgbadger in the first {pgb_runs}; files replicated from one real PostgreSQL 15 log.")
print()
print("| tool | input | runs | median wall time | throughput | median CPU (user+sys) | peak RSS (median, max) |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for mb in sizes:
    for label in [l for (l, m) in rows if m == mb]:
        wall, cpu, rss = med(fig(label, mb, 0)), med(fig(label, mb, 1)), fig(label, mb, 2)
        print(
            f"| `{label}` | {mb} MB | {len(rows[(label, mb)])} | {wall:.3f} s | {float(mb) / wall:.1f} MB/s "
            f"| {cpu:.2f} s | {med(rss) / 1024:.1f} MB, {max(rss) / 1024:.1f} MB |"
        )
print()
print("Wall time ÷ wall time is walwatch's throughput ÷ the other's on the same file; CPU time (user + sys, from")
print("/usr/bin/time, children included) is less disturbed by a loaded machine's scheduling delays.")
print()
print("| ratio (median of per-round ratios; min–max) | input | measured | target |")
print("| --- | --- | --- | --- |")
for mb in sizes:
    for i, what in ((0, "wall time"), (1, "CPU time")):
        r = ratio("grep -c checkpoint", "walwatch import", mb, i)
        if r:
            # Wall time on the largest file: the floor itself (read-ahead
            # and framing share two cores; grep has one).
            target = "≤ 1" if i == 0 and mb == sizes[-1] and len(sizes) > 1 else "≤ 2"
            print(f"| walwatch {what} ÷ grep {what} | {mb} MB | {show(r, '.2f')} | {target} |")
    for label in sorted(l for (l, m) in rows if m == mb and l.startswith("pgbadger")):
        for i, what in ((0, "wall time"), (1, "CPU time")):
            r = ratio("walwatch import", label, mb, i)
            if r:
                print(f"| `{label}` {what} ÷ walwatch {what} | {mb} MB | {show(r, '.0f', '×')} | ≥ 100× |")
ww = [(mb, fig("walwatch import", mb, 2)) for mb in sizes if ("walwatch import", mb) in rows]
if ww:
    rss = "; ".join(f"{med(v) / 1024:.1f} MB at {mb} MB (max {max(v) / 1024:.1f})" for mb, v in ww)
    growth = ""
    if len(ww) > 1:
        growth = f"; largest ÷ smallest file: {med(ww[-1][1]) / med(ww[0][1]):.2f} for {float(ww[-1][0]) / float(ww[0][0]):.1f}× the bytes"
    print(f"| walwatch peak RSS by file size | {', '.join(mb + ' MB' for mb, _ in ww)} | **{rss}**{growth} | ≤ 32 MB at every size |")
PYEOF
}

build() {
    release_walwatch
}

case "${1:-all}" in
generate) generate ;;
measure) build; measure ;;
all) build; generate; measure ;;
# the tables again from the last measure's runs (also of an interrupted one)
report) report ;;
*) die "usage: $0 [all|generate|measure|report]" ;;
esac
