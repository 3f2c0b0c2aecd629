#!/usr/bin/env bash
# Import throughput benchmark for walwatch on a >= 1 GB *real* PostgreSQL log.
#
#   bench/import-bench.sh [all|generate|measure]      (default: all)
#
# generate: start a throwaway PostgreSQL cluster with statement logging on
#   (log_statement='all', as on a busy server), log_checkpoints=on,
#   max_wal_size=1GB and checkpoint_timeout=60s (a few checkpoint lines per
#   minute among ~100k statement lines: sparse, as in production), run
#   pgbench until the real log reaches $SEED_MB, then replicate that log to
#   >= $TARGET_MB. Each copy's timestamps get a different year, so the copies
#   are distinct records in chronological order, not byte-identical repeats.
# measure: on that one file, median of $RUNS runs (page cache warmed first):
#   walwatch import (fresh db each run; wall time, MB/s, peak RSS),
#   `grep -c checkpoint`, `cat > /dev/null`, and pgbadger (if installed) on
#   the first $PGBADGER_SLICE_MB MB, extrapolated per MB. Prints ratios and a
#   markdown table for BENCHMARKS.md.
#
# Environment (defaults):
#   BENCH_DIR=/tmp/walwatch-bench   where everything is written (not the repo)
#   TARGET_MB=1024  SEED_MB=150  SEED_MAX_SECONDS=600  RUNS=3
#   PGBADGER_SLICE_MB=100
#   WALWATCH=<repo>/target/release/walwatch (built with cargo build --release
#     unless WALWATCH is set)   SKIP_WALWATCH=1 skips build and walwatch runs
#   FORCE=1 regenerates the log even if it exists
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-/tmp/walwatch-bench}
TARGET_MB=${TARGET_MB:-1024}
SEED_MB=${SEED_MB:-150}
SEED_MAX_SECONDS=${SEED_MAX_SECONDS:-600}
RUNS=${RUNS:-3}
PGBADGER_SLICE_MB=${PGBADGER_SLICE_MB:-100}
SKIP_WALWATCH=${SKIP_WALWATCH:-0}
LOG_FILE="$BENCH_DIR/bench-${TARGET_MB}MB.log"
PREFIX='%m [%p] %q%u@%d '

say() { echo "== $*" >&2; }
die() { echo "error: $*" >&2; exit 1; }

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
replicate() {
    local seed="$BENCH_DIR/seed.log" seed_bytes target_bytes copies year k
    seed_bytes=$(stat -c %s "$seed")
    target_bytes=$((TARGET_MB * 1024 * 1024))
    copies=$(((target_bytes + seed_bytes - 1) / seed_bytes))
    year=$(head -c 4 "$seed")
    say "replicate: $copies copies of the seed -> $LOG_FILE"
    : >"$LOG_FILE.tmp"
    for ((k = 1; k <= copies; k++)); do
        sed -E "s/^${year}-/$((year - 4 * (copies - k)))-/" "$seed" >>"$LOG_FILE.tmp"
    done
    mv "$LOG_FILE.tmp" "$LOG_FILE"
}

generate() {
    mkdir -p "$BENCH_DIR"
    chmod 755 "$BENCH_DIR"
    if [ -s "$LOG_FILE" ] && [ "${FORCE:-0}" != 1 ]; then
        say "reusing $LOG_FILE (FORCE=1 to regenerate)"
        return
    fi
    if [ ! -s "$BENCH_DIR/seed.log" ] || [ "${FORCE:-0}" = 1 ]; then make_seed; fi
    replicate
}

# ---------------------------------------------------------------- measuring

now() { date +%s.%N; }
# median of the numbers given as arguments
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

# time_cmd LABEL CMD...: run RUNS times, print the median wall seconds.
time_cmd() {
    local label=$1 t0 t1 times=() i
    shift
    for ((i = 1; i <= RUNS; i++)); do
        t0=$(now)
        # Not >/dev/null: GNU grep stops at the first match when its output
        # is /dev/null (only the exit status could matter), timing nothing.
        "$@" >"$BENCH_DIR/cmd-output.txt"
        t1=$(now)
        times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')")
    done
    say "$label: ${times[*]} s"
    median "${times[@]}"
}

grep_count() { grep -c checkpoint "$1" || true; }
cat_null() { cat "$1"; }

ww_import() {
    rm -f "$BENCH_DIR"/bench.db*
    /usr/bin/time -v -o "$BENCH_DIR/time-v.txt" "$WALWATCH" import \
        --db "$BENCH_DIR/bench.db" --cluster bench "$LOG_FILE" >/dev/null
    awk -F': ' '/Maximum resident set size/ {print $2}' "$BENCH_DIR/time-v.txt" >>"$BENCH_DIR/rss.txt"
}

# Never `-o /dev/null`: run as root, pgbadger replaced /dev/null with a
# regular file (it writes the report through a rename). Use a real file.
pgbadger_slice() {
    rm -f "$BENCH_DIR/pgbadger-report.txt"
    pgbadger -f stderr --prefix "$PREFIX" -j 1 -q -x text -o "$BENCH_DIR/pgbadger-report.txt" "$1"
}

measure() {
    [ -s "$LOG_FILE" ] || die "$LOG_FILE missing: run '$0 generate' first"
    command -v /usr/bin/time >/dev/null || die "/usr/bin/time missing: apt-get install time"
    local mb ww_s="" grep_s cat_s rss_kb="" pgb_s="" slice_mb slice rss
    mb=$(awk -v b="$(stat -c %s "$LOG_FILE")" 'BEGIN {printf "%.1f", b / 1048576}')
    say "file: $LOG_FILE ($mb MB); warming the page cache"
    cat "$LOG_FILE" >/dev/null
    if [ "$SKIP_WALWATCH" != 1 ]; then
        rm -f "$BENCH_DIR/rss.txt"
        ww_s=$(time_cmd "walwatch import" ww_import)
        mapfile -t rss <"$BENCH_DIR/rss.txt"
        rss_kb=$(median "${rss[@]}")
    fi
    grep_s=$(time_cmd "grep -c checkpoint" grep_count "$LOG_FILE")
    cat_s=$(time_cmd "cat > /dev/null" cat_null "$LOG_FILE")
    if command -v pgbadger >/dev/null; then
        slice="$BENCH_DIR/slice-${PGBADGER_SLICE_MB}MB.log"
        # whole lines only: drop the partial last line head -c leaves
        head -c "${PGBADGER_SLICE_MB}M" "$LOG_FILE" | sed '$d' >"$slice"
        slice_mb=$(awk -v b="$(stat -c %s "$slice")" 'BEGIN {printf "%.1f", b / 1048576}')
        pgb_s=$(time_cmd "pgbadger ($slice_mb MB slice)" pgbadger_slice "$slice")
    else
        say "pgbadger not installed (apt-get install pgbadger): skipped"
    fi
    report "$mb" "$ww_s" "$grep_s" "$cat_s" "$rss_kb" "$pgb_s" "${slice_mb:-}"
}

report() {
    local mb=$1 ww_s=$2 grep_s=$3 cat_s=$4 rss_kb=$5 pgb_s=$6 slice_mb=$7
    local ww_mbs="" grep_mbs cat_mbs pgb_mbs=""
    grep_mbs=$(div "$mb" "$grep_s")
    cat_mbs=$(div "$mb" "$cat_s")
    [ -n "$ww_s" ] && ww_mbs=$(div "$mb" "$ww_s")
    [ -n "$pgb_s" ] && pgb_mbs=$(div "$slice_mb" "$pgb_s")
    echo
    echo "file: $mb MB, median of $RUNS runs, page cache warm, $(nproc) CPUs"
    if [ -n "$ww_s" ]; then
        echo "walwatch import: ${ww_s} s = ${ww_mbs} MB/s, peak RSS $(div "$rss_kb" 1024) MB"
        echo "walwatch/grep throughput ratio: $(div "$ww_mbs" "$grep_mbs")"
        echo "walwatch/cat  throughput ratio: $(div "$ww_mbs" "$cat_mbs")"
        [ -n "$pgb_mbs" ] && echo "walwatch/pgbadger throughput ratio: $(div "$ww_mbs" "$pgb_mbs")"
    fi
    echo
    echo "| tool | input | median wall time | throughput | peak RSS |"
    echo "| --- | --- | --- | --- | --- |"
    [ -n "$ww_s" ] && echo "| \`walwatch import\` (fresh db) | $mb MB | ${ww_s} s | ${ww_mbs} MB/s | $(div "$rss_kb" 1024) MB |"
    echo "| \`grep -c checkpoint\` | $mb MB | ${grep_s} s | ${grep_mbs} MB/s | |"
    echo "| \`cat > /dev/null\` | $mb MB | ${cat_s} s | ${cat_mbs} MB/s | |"
    [ -n "$pgb_s" ] && echo "| pgbadger $(pgbadger --version | awk '{print $3}') (\`-j 1\`, text report) | $slice_mb MB slice | ${pgb_s} s | ${pgb_mbs} MB/s | |"
    return 0
}

build() {
    [ "$SKIP_WALWATCH" = 1 ] && return
    if [ -z "${WALWATCH:-}" ]; then
        say "cargo build --release"
        (cd "$REPO" && cargo build --release --quiet)
        WALWATCH="$REPO/target/release/walwatch"
    fi
    [ -x "$WALWATCH" ] || die "walwatch binary not found at $WALWATCH"
}

case "${1:-all}" in
generate) generate ;;
measure) build; measure ;;
all) build; generate; measure ;;
*) die "usage: $0 [all|generate|measure]" ;;
esac
