#!/usr/bin/env bash
# The cost of a Prometheus scrape of a daemon following 50 clusters: see
# bench/metrics_bench.py for what is measured. Prints
# markdown for docs/dev/benchmarks.md on stdout.
#
#   bench/metrics-bench.sh
#
# Environment (defaults): BENCH_DIR=/tmp/walwatch-metrics-bench
#   WALWATCH=$CARGO_TARGET_DIR/release/walwatch   CLUSTERS=50  PER_CLUSTER=2016
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WALWATCH=${WALWATCH:-${CARGO_TARGET_DIR:-$REPO/target}/release/walwatch}
exec python3 "$REPO/bench/metrics_bench.py" --walwatch "$WALWATCH" --dir "${BENCH_DIR:-/tmp/walwatch-metrics-bench}" \
    --clusters "${CLUSTERS:-50}" --per-cluster "${PER_CLUSTER:-2016}"
