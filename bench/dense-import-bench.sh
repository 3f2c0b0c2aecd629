#!/usr/bin/env bash
# The import on a checkpoint-dense log (>= 50 000 events/s).
#
#   bench/dense-import-bench.sh
#
# The log: one cluster of bench/store_bench_logs.py (100 000 lines, every one
# a checkpoint start or complete, real lines of tests/fixtures replayed;
# ~17 MB), made once in $BENCH_DIR/logs/c01.log. RUNS rounds, each running in
# turn: the references `wc -l` and `grep -c checkpoint` on the file, then
# `walwatch import` of it into a new store with $WALWATCH_BEFORE (when set)
# and with $WALWATCH. Each run is measured by /usr/bin/time -v (user + sys
# CPU) and a clock around it (wall). Quoted: medians over the rounds of the
# events per second of CPU time and of wall time, of the import ÷ reference
# wall time in the same round, and of before ÷ after per round (these hold
# while the shared machine's speed drifts). Markdown on stdout, progress on
# stderr.
#
# Environment (defaults):
#   BENCH_DIR=/tmp/walwatch-dense-bench   RUNS=5   PER_CLUSTER=50000
#   WALWATCH=$CARGO_TARGET_DIR/release/walwatch
#   WALWATCH_BEFORE= (a build of an earlier commit, for before/after)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-/tmp/walwatch-dense-bench}
RUNS=${RUNS:-5}
PER_CLUSTER=${PER_CLUSTER:-50000}
WALWATCH=${WALWATCH:-${CARGO_TARGET_DIR:-$REPO/target}/release/walwatch}
WALWATCH_BEFORE=${WALWATCH_BEFORE:-}
PREFIX='%m [%p] %q%u@%d '
LOG=$BENCH_DIR/logs/c01.log
TSV=$BENCH_DIR/runs.tsv

say() { echo "== $*" >&2; }

# One run: prints "wall_s cpu_s exit".
timed() {
    local out=$BENCH_DIR/time.txt rc=0 t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -v -o "$out" "$@" >/dev/null 2>>"$BENCH_DIR/stderr.txt" || rc=$?
    t1=$(date +%s%N)
    awk -F': ' -v rc="$rc" -v ns="$((t1 - t0))" '
        /User time/ { cpu += $2 } /System time/ { cpu += $2 }
        END { printf "%.4f %.2f %d\n", ns / 1e9, cpu, rc }' "$out"
}

import_once() {
    local bin=$1 db=$BENCH_DIR/import.db
    rm -f "$db" "$db"-wal "$db"-shm
    timed "$bin" import --db "$db" --cluster c01 --prefix "$PREFIX" --timezone UTC "$LOG"
}

mkdir -p "$BENCH_DIR"
if [ ! -s "$LOG" ]; then
    say "generating $LOG"
    python3 "$REPO/bench/store_bench_logs.py" --out "$BENCH_DIR/logs" --clusters 1 --per-cluster "$PER_CLUSTER" \
        --interval 300 --end "$(date -u +%Y-%m-%dT%H:00:00Z)" >&2
fi
cat "$LOG" >/dev/null
: >"$TSV"
: >"$BENCH_DIR/stderr.txt"
bins=() labels=()
if [ -n "$WALWATCH_BEFORE" ]; then bins+=("$WALWATCH_BEFORE"); labels+=(before); fi
bins+=("$WALWATCH"); labels+=(after)
for round in $(seq 1 "$RUNS"); do
    echo -e "wc -l\t$round\t$(timed wc -l "$LOG" | tr ' ' '\t')" >>"$TSV"
    echo -e "grep -c checkpoint\t$round\t$(timed grep -c checkpoint "$LOG" | tr ' ' '\t')" >>"$TSV"
    for i in "${!bins[@]}"; do
        r=$(import_once "${bins[$i]}")
        say "round $round ${labels[$i]}: $r"
        echo -e "${labels[$i]}\t$round\t$(echo "$r" | tr ' ' '\t')" >>"$TSV"
    done
done
python3 - "$TSV" "$(wc -l <"$LOG")" "$(wc -c <"$LOG")" <<'EOF'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
lines, size = int(sys.argv[2]), int(sys.argv[3])
runs = {}
for name, rnd, wall, cpu, rc in rows:
    runs.setdefault(name, {})[int(rnd)] = (float(wall), float(cpu), int(rc))
ref = runs["wc -l"]
print(f"Checkpoint-dense log: {lines:,} lines, every one a checkpoint start or complete; {size / 1e6:.1f} MB.\n")
print("| run | rounds | median wall | median CPU (user+sys) | events/s of CPU time | events/s of wall time | wall ÷ `wc -l` wall (median of rounds) | exit |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for name, v in runs.items():
    wall = st.median(x[0] for x in v.values())
    cpu = st.median(x[1] for x in v.values())
    ratio = st.median(v[k][0] / ref[k][0] for k in v if k in ref)
    rcs = ",".join(sorted({str(x[2]) for x in v.values()}))
    if name in ("before", "after"):
        eps_cpu = st.median(lines / max(x[1], 0.01) for x in v.values())
        eps_wall = st.median(lines / x[0] for x in v.values())
        print(f"| `walwatch import` ({name}) | {len(v)} | {wall:.2f} s | {cpu:.2f} s | **{eps_cpu:,.0f}** | {eps_wall:,.0f} | {ratio:,.0f} | {rcs} |")
    else:
        print(f"| `{name}` | {len(v)} | {wall * 1000:.1f} ms | {cpu:.2f} s | | | {ratio:.2f} | {rcs} |")
if "before" in runs:
    b, a = runs["before"], runs["after"]
    common = [k for k in b if k in a]
    cpu = [b[k][1] / a[k][1] for k in common]
    wall = [b[k][0] / a[k][0] for k in common]
    print(f"\nbefore ÷ after, median of per-round ratios (min–max): CPU **{st.median(cpu):.2f}×** ({min(cpu):.2f}–{max(cpu):.2f}), wall {st.median(wall):.2f}× ({min(wall):.2f}–{max(wall):.2f}).")
EOF
