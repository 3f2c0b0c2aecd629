#!/usr/bin/env bash
# The store at scale: a store of 1 000 000 checkpoint rows built
# with `walwatch import` from log text that replays the real checkpoint
# cycles of tests/fixtures (bench/store_bench_logs.py), then the query
# commands timed on it. Prints markdown for docs/dev/benchmarks.md on stdout
# (progress on stderr).
#
#   bench/store-bench.sh [all|generate|build|measure]     (default: all)
#
# generate: CLUSTERS files of PER_CLUSTER checkpoint cycles each, one cycle
#   every INTERVAL s, the newest ending at the hour before now (so that
#   `--since 1d` finds a day of rows): 20 x 50 000 x 300 s = 1 000 000 rows,
#   ~174 days a cluster, 2 000 000 log lines, ~345 MB.
# build: `$WALWATCH_BEFORE import` (or $WALWATCH when unset) of c01's file
#   into a fresh store, timed by /usr/bin/time: the import rate on a
#   checkpoint-dense log (every line a checkpoint start or complete), in
#   events per second, against `wc -l` on the same file. Importing all 20 files this way took ~105 s a file on this loaded
#   2-core machine (35 min in all), so the other clusters are made in SQL
#   (sqlite3) from what walwatch stored for c01: every event and checkpoint
#   row copied under cluster cNN, times 7 s later per cluster, in the
#   layout the binary wrote. Then the
#   store's size per checkpoint row (main file, WAL checkpointed).
# measure: on a copy of that store per binary (WALWATCH_BEFORE when set, then
#   WALWATCH; the newer binary migrates its copy on the first open, timed),
#   RUNS rounds, each running in turn the reference `wc -l` through all the
#   clusters' log files (~345 MB) before every query:
#     suggest --cluster c01, summary, checkpoints --since 1d,
#     checkpoints --format csv --cluster c01 (50 000 rows, stdout to /dev/null),
#     history --since 30d (every cluster, a row per day)
#   each measured by /usr/bin/time -v (wall, peak RSS). Quoted: the median
#   wall time, and the median over rounds of the query's wall time divided
#   by the reference's in the same round (holds when the machine's speed
#   drifts); with two binaries, also before / after per round.
#
# Environment (defaults):
#   BENCH_DIR=/tmp/walwatch-store-bench   CLUSTERS=20  PER_CLUSTER=50000
#   INTERVAL=300  RUNS=5  WALWATCH=$CARGO_TARGET_DIR/release/walwatch
#   WALWATCH_BEFORE= (a build of an earlier commit, for before/after)
#   SLOW_LIMIT=600   seconds after which one query run is cut (timeout)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-/tmp/walwatch-store-bench}
CLUSTERS=${CLUSTERS:-20}
PER_CLUSTER=${PER_CLUSTER:-50000}
INTERVAL=${INTERVAL:-300}
RUNS=${RUNS:-5}
SLOW_LIMIT=${SLOW_LIMIT:-600}
WALWATCH=${WALWATCH:-${CARGO_TARGET_DIR:-$REPO/target}/release/walwatch}
WALWATCH_BEFORE=${WALWATCH_BEFORE:-}
PREFIX='%m [%p] %q%u@%d '
LOGS=$BENCH_DIR/logs
BUILT=$BENCH_DIR/built.db

say() { echo "== $*" >&2; }

# One run of a command: prints "wall_s rss_kb exit cpu_s". Wall time from
# the clock around it (ns; /usr/bin/time rounds to 10 ms), peak RSS and CPU
# (user + sys) from /usr/bin/time -v.
timed() {
    local out=$BENCH_DIR/time.txt rc=0 t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -v -o "$out" timeout "$SLOW_LIMIT" "$@" >/dev/null 2>>"$BENCH_DIR/stderr.txt" || rc=$?
    t1=$(date +%s%N)
    awk -F': ' -v rc="$rc" -v ns="$((t1 - t0))" '
        /User time/ { cpu += $2 } /System time/ { cpu += $2 } /Maximum resident/ { rss = $2 }
        END { printf "%.4f %d %d %.2f\n", ns / 1e9, rss, rc, cpu }' "$out"
}

# Like timed, without the time limit: prints "wall_s cpu_s rss_kb exit".
timed_cpu() {
    local out=$BENCH_DIR/time.txt rc=0 t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -v -o "$out" "$@" >/dev/null 2>>"$BENCH_DIR/stderr.txt" || rc=$?
    t1=$(date +%s%N)
    awk -F': ' -v rc="$rc" -v ns="$((t1 - t0))" '
        /User time/ { cpu += $2 } /System time/ { cpu += $2 } /Maximum resident/ { rss = $2 }
        END { printf "%.4f %.2f %d %d\n", ns / 1e9, cpu, rss, rc }' "$out"
}

generate() {
    local end
    end=$(date -u +%Y-%m-%dT%H:00:00Z)
    say "generating $CLUSTERS x $PER_CLUSTER cycles ending $end into $LOGS"
    rm -rf "$LOGS"
    python3 "$REPO/bench/store_bench_logs.py" --out "$LOGS" --clusters "$CLUSTERS" \
        --per-cluster "$PER_CLUSTER" --interval "$INTERVAL" --end "$end" | tee "$BENCH_DIR/generated.txt" >&2
}

# The SQL copying cluster 1's checkpoint rows to every cluster n, for the
# layout the store was written in: rows pointing at their lines' events by
# id (before migrations/0022_point_lines.sql), or holding their places.
replicate_checkpoints() {
    local figures="flags, trigger, buffers_written, buffers_pct, slru_buffers_written, wal_files_added,
    wal_files_removed, wal_files_recycled, write_s, sync_s, total_s, sync_files, sync_longest_s, sync_average_s,
    distance_kb, estimate_kb, lsn, redo_lsn, truncated"
    if [ "$(sqlite3 "$BUILT" "SELECT count(*) FROM pragma_table_info('checkpoint') WHERE name = 'start_event_id'")" = 1 ]; then
        cat <<SQL
INSERT INTO checkpoint(cluster_id, kind, pid, pairable, start_event_id, complete_event_id, started_at, completed_at,
    $figures)
SELECT n, k.kind, k.pid, k.pairable, k.start_event_id + (n - 1) * m, k.complete_event_id + (n - 1) * m,
    k.started_at + (n - 1) * 7000000, k.completed_at + (n - 1) * 7000000, $(echo "$figures" | sed 's/\([a-z_][a-z_]*\)/k.\1/g')
FROM checkpoint k, n, m WHERE k.cluster_id = 1 ORDER BY n, k.id;
SQL
    else
        cat <<SQL
INSERT INTO checkpoint(cluster_id, kind, pid, pairable, started_at, completed_at,
    start_source_id, start_offset, start_line, start_ahead_us,
    complete_source_id, complete_offset, complete_line, complete_ahead_us, $figures)
SELECT n, k.kind, k.pid, k.pairable, k.started_at + (n - 1) * 7000000, k.completed_at + (n - 1) * 7000000,
    CASE WHEN k.start_source_id IS NOT NULL THEN n END, k.start_offset, k.start_line, k.start_ahead_us,
    CASE WHEN k.complete_source_id IS NOT NULL THEN n END, k.complete_offset, k.complete_line, k.complete_ahead_us,
    $(echo "$figures" | sed 's/\([a-z_][a-z_]*\)/k.\1/g')
FROM checkpoint k, n WHERE k.cluster_id = 1 ORDER BY n, k.id;
SQL
    fi
}

build() {
    local bin=${WALWATCH_BEFORE:-$WALWATCH}
    rm -f "$BUILT" "$BUILT"-wal "$BUILT"-shm
    : >"$BENCH_DIR/stderr.txt"
    local seed=$LOGS/c01.log lines bytes r g
    lines=$(wc -l <"$seed")
    bytes=$(wc -c <"$seed")
    say "importing $seed ($lines lines) with $bin"
    r=$(timed_cpu "$bin" import --db "$BUILT" --cluster c01 --prefix "$PREFIX" --timezone UTC "$seed")
    g=$(timed_cpu wc -l "$seed")
    say "import: $r; grep: $g"
    # The other clusters: the rows walwatch stored for c01, events and
    # checkpoints alike, copied under cluster cNN, their times 7 s later per
    # cluster (a fleet does not checkpoint in lockstep).
    say "replicating to $CLUSTERS clusters"
    sqlite3 "$BUILT" <<SQL
PRAGMA foreign_keys = ON;
BEGIN;
CREATE TEMP TABLE n AS SELECT value AS n FROM generate_series(2, $CLUSTERS);
INSERT INTO cluster(id, name) SELECT n, printf('c%02d', n) FROM n;
INSERT INTO source(id, cluster_id, path, dev, ino, fp_len, fp_hash, format, prefix, size, read_to, line,
                   first_read, last_read, head, unmatched)
SELECT n, n, replace(s.path, 'c01.log', printf('c%02d.log', n)), s.dev, s.ino, s.fp_len, s.fp_hash + n, s.format,
       s.prefix, s.size, s.read_to, s.line, s.first_read, s.last_read, s.head, s.unmatched
FROM source s, n WHERE s.cluster_id = 1;
CREATE TEMP TABLE m AS SELECT max(id) AS m FROM event;
INSERT INTO event(id, cluster_id, source_id, offset, line, at, pid, kind, nth, data, ahead_us)
SELECT e.id + (n - 1) * m, n, n, e.offset, e.line, e.at + (n - 1) * 7000000, e.pid, e.kind, e.nth, e.data, e.ahead_us
FROM event e, n, m WHERE e.cluster_id = 1;
$(replicate_checkpoints)
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
    local rows db_bytes
    rows=$(sqlite3 "$BUILT" 'SELECT count(*) FROM checkpoint')
    db_bytes=$(stat -c %s "$BUILT")
    # shellcheck disable=SC2086
    python3 - "$lines" "$bytes" "$rows" "$db_bytes" $r $g <<'EOF' | tee "$BENCH_DIR/build.md"
import sys
lines, size, rows, db = map(int, sys.argv[1:5])
wall, cpu, rc, gwall, gcpu = float(sys.argv[5]), float(sys.argv[6]), sys.argv[8], float(sys.argv[9]), float(sys.argv[10])
print("| what | figure |\n| --- | --- |")
print(f"| checkpoint-dense log (one cluster's file) | {lines:,} lines, every one a checkpoint start or complete; {size / 1e6:.1f} MB |")
print(f"| `walwatch import` of it into a new store | {wall:.1f} s wall, {cpu:.1f} s CPU: **{lines / wall:,.0f} events/s** of wall time, {lines / cpu:,.0f} events/s of CPU time; exit {rc} |")
print(f"| `wc -l` on the same file | {gwall * 1000:.1f} ms wall, {gcpu:.2f} s CPU; import ÷ wc = {wall / max(gwall, 0.0001):,.0f}× wall |")
print(f"| checkpoint rows in the benchmark store | {rows:,} |")
print(f"| store file (WAL checkpointed) | {db / 1e6:.1f} MB: **{db / rows:.0f} bytes per checkpoint row** |")
EOF
}

queries() {
    # name|command arguments (the store is appended as --db)
    cat <<'EOF'
suggest --cluster c01|suggest --cluster c01
summary|summary
checkpoints --since 1d|checkpoints --since 1d
checkpoints --format csv --cluster c01|checkpoints --format csv --cluster c01
history --since 30d|history --since 30d
EOF
}

measure() {
    local bins=() labels=()
    if [ -n "$WALWATCH_BEFORE" ]; then bins+=("$WALWATCH_BEFORE"); labels+=(before); fi
    bins+=("$WALWATCH"); labels+=(after)
    # The reference: wc -l through every cluster's log (~345 MB, page cache
    # warm). Not grep: GNU grep writing to /dev/null stops at the first match.
    REFERENCE=("$LOGS"/*.log)
    cat "${REFERENCE[@]}" >/dev/null
    local tsv=$BENCH_DIR/runs.tsv
    : >"$tsv"
    : >"$BENCH_DIR/stderr.txt"
    local i
    for i in "${!bins[@]}"; do
        local db=$BENCH_DIR/${labels[$i]}.db
        rm -f "$db" "$db"-wal "$db"-shm
        cp "$BUILT" "$db"
        # The first open migrates a store written by an older walwatch.
        say "${labels[$i]}: first open (migration)"
        echo -e "${labels[$i]}\tfirst open (migration)\t0\t$(timed "${bins[$i]}" summary --db "$db" | tr ' ' '\t')" >>"$tsv"
        echo -e "${labels[$i]}\tstore bytes\t0\t$(( $(stat -c %s "$db") + $(stat -c %s "$db-wal" 2>/dev/null || echo 0) ))\t0\t0" >>"$tsv"
    done
    local round
    for round in $(seq 1 "$RUNS"); do
        for i in "${!bins[@]}"; do
            local db=$BENCH_DIR/${labels[$i]}.db
            while IFS='|' read -r name args; do
                # shellcheck disable=SC2086
                local ref q
                ref=$(timed wc -l "${REFERENCE[@]}")
                q=$(timed "${bins[$i]}" $args --db "$db")
                say "round $round ${labels[$i]} $name: $q (reference $ref)"
                echo -e "${labels[$i]}\t$name\t$round\t$(echo "$q" | tr ' ' '\t')\t$(echo "$ref" | cut -d' ' -f1)\t$(echo "$ref" | cut -d' ' -f4)" >>"$tsv"
            done < <(queries)
        done
    done
    report
}

report() {
    python3 - "$BENCH_DIR/runs.tsv" <<'EOF'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
runs, extra = {}, {}
for r in rows:
    label, name, rnd = r[0], r[1], int(r[2])
    if rnd == 0:
        extra[(label, name)] = r[3:]
        continue
    wall, rss, rc, cpu, ref, refcpu = float(r[3]), int(r[4]), int(r[5]), float(r[6]), float(r[7]), float(r[8])
    runs.setdefault((label, name), []).append((rnd, wall, rss, rc, cpu, ref, refcpu))
labels = sorted({k[0] for k in runs}, key=lambda l: l != "before")
names = list(dict.fromkeys(k[1] for k in runs))
print("| query | binary | runs | median wall | median CPU (user+sys) | wall ÷ reference wall (median of rounds) | peak RSS (median) | exit |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for n in names:
    for l in labels:
        v = runs.get((l, n))
        if not v:
            continue
        wall = st.median(x[1] for x in v)
        cpu = st.median(x[4] for x in v)
        ratio = st.median(x[1] / x[5] for x in v)
        rss = st.median(x[2] for x in v) / 1024
        rcs = ",".join(sorted({str(x[3]) for x in v}))
        print(f"| `{n}` | {l} | {len(v)} | {wall * 1000:,.0f} ms | {cpu:.2f} s | {ratio:.3f} | {rss:.1f} MB | {rcs} |")
if len(labels) == 2:
    print()
    print("| query | before ÷ after, wall (median of per-round ratios; min–max) | before ÷ after, peak RSS |")
    print("| --- | --- | --- |")
    for n in names:
        b = {x[0]: x for x in runs[("before", n)]}
        a = {x[0]: x for x in runs[("after", n)]}
        ratios = [b[k][1] / max(a[k][1], 0.0001) for k in b if k in a]
        rss = st.median(x[2] for x in b.values()) / st.median(x[2] for x in a.values())
        print(f"| `{n}` | **{st.median(ratios):.1f}×** ({min(ratios):.1f}–{max(ratios):.1f}×) | {rss:.1f}× |")
refs = [x[5] for v in runs.values() for x in v]
refcpu = [x[6] for v in runs.values() for x in v]
print()
print(f"Reference: `wc -l` through all the clusters' logs (345 MB, page cache warm), run just before each query in the same round: median {st.median(refs) * 1000:,.0f} ms wall, {st.median(refcpu):.2f} s CPU over {len(refs)} runs.")
for (l, n), v in extra.items():
    if n == "store bytes":
        print(f"{l}: store file {int(v[0]) / 1e6:.1f} MB after its first open.")
    else:
        print(f"{l}: {n}: {float(v[0]):.2f} s wall, {float(v[3]):.2f} s CPU, peak RSS {int(v[1]) / 1024:.1f} MB, exit {v[2]}.")
EOF
}

mkdir -p "$BENCH_DIR"
case "${1:-all}" in
    generate) generate ;;
    build) build ;;
    measure) measure ;;
    report) report ;;
    all) generate; build; measure ;;
    *) echo "usage: $0 [all|generate|build|measure|report]" >&2; exit 2 ;;
esac
