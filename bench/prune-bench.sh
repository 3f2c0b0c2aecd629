#!/usr/bin/env bash
# The daemon's daily prune at scale ("the daemon's CPU for the
# daily prune"). Prints markdown for docs/dev/benchmarks.md on stdout (progress on
# stderr).
#
#   bench/prune-bench.sh
#
# Store: bench/history_store.py with this walwatch (the store is created by
# its `import`, so with auto_vacuum = INCREMENTAL): CLUSTERS clusters x DAYS
# days of the real crashimm fixture's rows replayed (10 x 365 = 1.07 million
# checkpoint rows, 2026-01-01 to 2026-12-31). Built once into
# $BENCH_DIR/built.db and reused.
# Prune: to NOW - KEEP_DAYS (default 2027-01-01 - 334 d = 2026-02-01): the
# oldest month of the year, ~1/12 of the rows, as a daemon with keep = "334d"
# does on its first day. RUNS rounds, each on a fresh copy of the store:
#   walwatch: examples/prune_bench.rs, i.e. the retention prune in the daemon's
#     5 000-row transactions, then its reclaim (incremental vacuum in
#     2 000-page steps); CPU of the pruning thread from /proc/self/schedstat.
#   reference: the sqlite3 shell deleting the same checkpoint rows (their
#     lines with them) and old events in ONE transaction (same triggers,
#     same indexes),
#     user + sys CPU by /usr/bin/time, minus the shell's start on an empty
#     statement. No vacuum.
# Quoted: medians, and the median of walwatch / reference per round.
#
# Environment (defaults): BENCH_DIR=/tmp/walwatch-prune-bench CLUSTERS=10
#   DAYS=365 NOW=2027-01-01T00:00:00Z KEEP_DAYS=334 RUNS=3
#   PRUNE_BENCH=$CARGO_TARGET_DIR/debug/examples/prune_bench (cargo build --example prune_bench)
#   WALWATCH=$CARGO_TARGET_DIR/debug/walwatch
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
BENCH_DIR=${BENCH_DIR:-/tmp/walwatch-prune-bench}
CLUSTERS=${CLUSTERS:-10}
DAYS=${DAYS:-365}
NOW=${NOW:-2027-01-01T00:00:00Z}
KEEP_DAYS=${KEEP_DAYS:-334}
RUNS=${RUNS:-3}
PRUNE_BENCH=${PRUNE_BENCH:-$TARGET/debug/examples/prune_bench}
WALWATCH=${WALWATCH:-$TARGET/debug/walwatch}
BUILT=$BENCH_DIR/built.db
say() { echo "== $*" >&2; }
mkdir -p "$BENCH_DIR"

if [ ! -s "$BUILT" ]; then
    say "building $CLUSTERS clusters x $DAYS days into $BUILT"
    python3 "$REPO/bench/history_store.py" "$WALWATCH" "$BUILT" "$CLUSTERS" "$DAYS" >&2
    sqlite3 "$BUILT" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null
fi
cutoff_us=$(( ($(date -ud "$NOW" +%s) - KEEP_DAYS * 86400) * 1000000 ))
rows=$(sqlite3 "$BUILT" "SELECT count(*) FROM checkpoint")
old=$(sqlite3 "$BUILT" "SELECT count(*) FROM checkpoint WHERE COALESCE(started_at, completed_at) < $cutoff_us")
events=$(sqlite3 "$BUILT" "SELECT count(*) FROM event")
size=$(stat -c %s "$BUILT")
say "store: $rows checkpoint rows ($old before the cutoff), $events events, $size bytes"

REFERENCE="PRAGMA foreign_keys = ON; BEGIN;
DELETE FROM checkpoint WHERE COALESCE(started_at, completed_at) < $cutoff_us;
DELETE FROM event WHERE at < $cutoff_us;
COMMIT;"

# "cpu_s wall_s" of a command by /usr/bin/time.
cpu_of() {
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -f '%U %S' -o "$BENCH_DIR/time.txt" "$@" >/dev/null
    t1=$(date +%s%N)
    awk -v ns=$((t1 - t0)) '{ printf "%.3f %.3f\n", $1 + $2, ns / 1e9 }' "$BENCH_DIR/time.txt"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

: >"$BENCH_DIR/rounds.txt"
for round in $(seq "$RUNS"); do
    cp "$BUILT" "$BENCH_DIR/a.db"
    line=$("$PRUNE_BENCH" "$BENCH_DIR/a.db" "$NOW" "$KEEP_DAYS")
    say "round $round walwatch: $line"
    cp "$BUILT" "$BENCH_DIR/b.db"
    read -r shell_cpu _ < <(cpu_of sqlite3 "$BENCH_DIR/b.db" "SELECT 1;")
    read -r ref_cpu ref_wall < <(cpu_of sqlite3 "$BENCH_DIR/b.db" "$REFERENCE")
    ref_rows=$(sqlite3 "$BENCH_DIR/b.db" "SELECT count(*) FROM checkpoint")
    ref_cpu=$(awk -v a="$ref_cpu" -v b="$shell_cpu" 'BEGIN { printf "%.3f", a - b }')
    say "round $round reference: cpu $ref_cpu s, wall $ref_wall s, $ref_rows rows left"
    echo "$line ref_cpu_s=$ref_cpu ref_wall_s=$ref_wall ref_rows_left=$ref_rows" >>"$BENCH_DIR/rounds.txt"
done
rm -f "$BENCH_DIR"/a.db* "$BENCH_DIR"/b.db*

field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" "$BENCH_DIR/rounds.txt"; }
ratio() { awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } printf "%.2f\n", f["prune_cpu_s"] / f["ref_cpu_s"] }' "$BENCH_DIR/rounds.txt"; }
echo "| figure | median of $RUNS |"
echo "|---|---|"
echo "| checkpoint rows in the store / pruned | $rows / $(field checkpoints | head -1) |"
echo "| rows pruned in all (checkpoints + events) | $(field rows | head -1) in $(field batches | head -1) transactions (largest $(field largest_batch | head -1)) |"
echo "| walwatch prune CPU s (wall s) | $(field prune_cpu_s | median) ($(field prune_wall_s | median)) |"
echo "| reference: one DELETE transaction in sqlite3, CPU s (wall s) | $(field ref_cpu_s | median) ($(field ref_wall_s | median)) |"
echo "| walwatch / reference, CPU | $(ratio | median) |"
echo "| incremental vacuum CPU s (wall s), pages freed | $(field vacuum_cpu_s | median) ($(field vacuum_wall_s | median)), $(field free_pages | head -1) in $(field vacuum_steps | head -1) steps |"
echo "| store pages before / after | $(field pages_before | head -1) / $(field pages_after | head -1) |"
