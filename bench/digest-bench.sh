#!/usr/bin/env bash
# The daily digest's render on a store of a million checkpoint rows:
# `walwatch digest --eml` of one day for every cluster, and for one
# cluster, against a reference run in the same round: `walwatch history
# --by day` of one cluster over the year (what the digest reads per cluster
# is a few of history's queries plus the suggestion's). Prints markdown.
#
#   bench/digest-bench.sh [STORE]     (default /tmp/walwatch-digest-bench.db)
#
# The store is built when missing by bench/history_store.py (10 clusters
# over 2026, replayed from a real PostgreSQL 15 log's rows: ~1.05 million
# checkpoints). Environment: WALWATCH (default target/release/walwatch),
# RUNS (default 5), DAY (default 2026-06-15), TZ_NAME (default Europe/Berlin).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STORE=${1:-/tmp/walwatch-digest-bench.db}
WALWATCH=${WALWATCH:-${CARGO_TARGET_DIR:-$REPO/target}/release/walwatch}
RUNS=${RUNS:-5}
DAY=${DAY:-2026-06-15}
TZ_NAME=${TZ_NAME:-Europe/Berlin}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

[ -x "$WALWATCH" ] || { echo "no walwatch at $WALWATCH: cargo build --release" >&2; exit 1; }
if [ ! -f "$STORE" ]; then
    echo "== building $STORE (a few minutes)" >&2
    python3 "$REPO/bench/history_store.py" "$WALWATCH" "$STORE" >&2
fi

# One run: "wall_s cpu_s rss_kb", wall from the clock (ns), CPU and RSS from /usr/bin/time.
timed() {
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -f "%U %S %M" -o "$OUT/time" "$@" >/dev/null 2>"$OUT/stderr" || { cat "$OUT/stderr" >&2; exit 1; }
    t1=$(date +%s%N)
    read -r user sys rss <"$OUT/time"
    echo "$(( (t1 - t0) / 1000 ))e-6 $(echo "$user + $sys" | bc) $rss"
}

"$WALWATCH" summary --db "$STORE" >/dev/null # the first open migrates an older store
: >"$OUT/runs"
for round in $(seq 1 "$RUNS"); do
    ref=$(timed "$WALWATCH" history --db "$STORE" --cluster c003 --by day --tz "$TZ_NAME" --format json)
    all=$(timed "$WALWATCH" digest --db "$STORE" --date "$DAY" --tz "$TZ_NAME" --eml "$OUT/all.eml")
    one=$(timed "$WALWATCH" digest --db "$STORE" --date "$DAY" --tz "$TZ_NAME" --cluster c003 --eml "$OUT/one.eml")
    echo "round $round: reference $ref | all $all | one $one" >&2
    echo "$ref $all $one" >>"$OUT/runs"
done
clusters=$(sqlite3 "$STORE" 'SELECT count(*) FROM cluster')
rows=$(sqlite3 "$STORE" 'SELECT count(*) FROM checkpoint')
python3 - "$OUT/runs" "$clusters" "$rows" "$(stat -c %s "$OUT/all.eml")" "$(uptime | sed 's/.*average: //')" <<'EOF'
import sys, statistics as st
runs = [list(map(float, l.split())) for l in open(sys.argv[1])]
clusters, rows, eml, load = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
col = lambda i: [r[i] for r in runs]
ref_wall, ref_cpu = col(0), col(1)
print(f"Store: {rows:,} checkpoint rows in {clusters} clusters; {len(runs)} rounds; load average {load}.\n")
print("| what | median wall | median CPU | wall ÷ reference wall (median of rounds) | peak RSS |")
print("| --- | --- | --- | --- | --- |")
print(f"| reference: `history --cluster c003 --by day` (a year, 365 rows) | {st.median(ref_wall) * 1000:.0f} ms | {st.median(ref_cpu) * 1000:.0f} ms | 1 | {st.median(col(2)) / 1024:.0f} MB |")
for name, i in ((f"`digest --eml` of one day, all {clusters} clusters ({eml / 1024:.0f} KB mail)", 3), ("`digest --eml` of one day, one cluster", 6)):
    ratio = st.median([r[i] / r[0] for r in runs])
    print(f"| {name} | {st.median(col(i)) * 1000:.0f} ms | {st.median(col(i + 1)) * 1000:.0f} ms | {ratio:.2f} | {st.median(col(i + 2)) / 1024:.0f} MB |")
EOF
