#!/usr/bin/env bash
# A central walwatch at fleet size: HOSTS hosts x DAYS days of real log
# lines (tests/fixtures' stderr logs, re-dated and stretched per host: see
# bench/fleet_bench.py) shipped through `POST /ingest/vector` as Vector's
# http sink sends them, to one central daemon on this machine. Measured:
# the central's CPU and peak RSS for the catch-up, store and spool bytes
# per host per day, `status`, `summary`, `history` over 30 days of every
# cluster, the fleet digest of yesterday, a Prometheus scrape of the running
# central, and the daily prune of one day of every host (examples/prune_bench,
# the daemon's own batches). Prints markdown for docs/dev/benchmarks.md on
# stdout; progress on stderr.
#
#   bench/fleet-bench.sh
#
# Environment (defaults): HOSTS=1000 DAYS=7 SENDERS=8 RUNS=5
#   BENCH_DIR=/tmp/walwatch-fleet-bench (the generated bodies are reused
#   while HOSTS and DAYS stay the same)
#   WALWATCH=$CARGO_TARGET_DIR/release/walwatch, PRUNE_BENCH=…/release/examples/prune_bench
#   (both built by `cargo build --release --bin walwatch --example prune_bench` unless set)
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
if [ -z "${WALWATCH:-}" ] || [ -z "${PRUNE_BENCH:-}" ]; then
    (cd "$REPO" && cargo build --release -q --bin walwatch --example prune_bench)
fi
WALWATCH=${WALWATCH:-$TARGET/release/walwatch}
PRUNE_BENCH=${PRUNE_BENCH:-$TARGET/release/examples/prune_bench}
# Up to 64 spools and every sender's connection are open at once.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
exec python3 "$REPO/bench/fleet_bench.py" "$WALWATCH" "$PRUNE_BENCH" "${BENCH_DIR:-/tmp/walwatch-fleet-bench}" \
    "${HOSTS:-1000}" "${DAYS:-7}" "${SENDERS:-8}" "${RUNS:-5}"
