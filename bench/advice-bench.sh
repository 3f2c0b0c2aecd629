#!/usr/bin/env bash
# The max_wal_size advice, closed loop on a real PostgreSQL (issue 4, part 3);
# prints a markdown table for BENCHMARKS.md. Takes 30-60 min.
#
#   bench/advice-bench.sh                 RATES=100,300, 170 s per run
#   RATES=200 DURATION=120 bench/advice-bench.sh
#
# For each pgbench rate (transactions/s, `pgbench --rate`), on its own
# throwaway cluster (pgbench -i -s $SCALE; checkpoint_timeout 30s,
# min_wal_size 32MB, log_checkpoints on):
#   1. max_wal_size = 32MB, a fixed-rate run of $DURATION s; its log file is
#      imported and `walwatch suggest` gives S;
#   2. the same run at S: forced (wal-triggered) checkpoints must be 0;
#   3. the smallest power of two (64MB, 128MB, ...) with 0 forced checkpoints
#      over the same run (binary search below S); report S / that size
#      (target <= 2), and what pg_walsizer's rule (current x (requested + 1),
#      capped at 4GB) would set from phase 1's requested checkpoints per
#      checkpoint_timeout.
# Runs are sequential: the machine must keep the fixed rate (the table shows
# the achieved tps and pgbench's schedule lag).
#
# Environment (defaults):
#   RATES=100,300   SCALE=10   CLIENTS=4   DURATION=170 (>= 5 cycles of 30 s)
#   BENCH_DIR=/tmp/walwatch-advice-bench  clusters, stores, results.json
#   SUGGEST_FROM=walwatch  or `formula`: S from the model's formula applied by
#     the script to phase 1's log (for when `walwatch suggest` is unavailable)
#   PG_BINDIR  PostgreSQL server binaries (default: highest /usr/lib/postgresql/*/bin)
#   WALWATCH=<repo>/target/release/walwatch (cargo build --release unless set;
#     only import/suggest/checkpoints run, so a debug build does as well)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BENCH_DIR=${BENCH_DIR:-/tmp/walwatch-advice-bench}
export RATES=${RATES:-100,300}
export SCALE=${SCALE:-10} CLIENTS=${CLIENTS:-4} DURATION=${DURATION:-170}
export SUGGEST_FROM=${SUGGEST_FROM:-walwatch}

say() { echo "== $*" >&2; }
die() { echo "error: $*" >&2; exit 1; }

command -v python3 >/dev/null || die "python3 is needed"
if [ -z "${WALWATCH:-}" ]; then
    say "cargo build --release"
    (cd "$REPO" && cargo build --release --quiet)
    WALWATCH="${CARGO_TARGET_DIR:-$REPO/target}/release/walwatch"
fi
[ -x "$WALWATCH" ] || die "walwatch binary not found at $WALWATCH"
export WALWATCH

exec python3 "$REPO/bench/advice_bench.py"
