#!/usr/bin/env bash
# `walwatch whatif` against a real PostgreSQL: a fixed-rate pgbench run is
# recorded at a small max_wal_size S, whatif predicts S/2, S and 2S from its
# log, then each is run and measured (forced checkpoints and warnings from
# the log, peak pg_wal from pg_ls_waldir()). Prints a markdown table.
# About 5 x $DURATION s plus pgbench -i.
#
#   bench/whatif-bench.sh                      SIZE_MB=64 RATE=200 DURATION=90
#   SIZE_MB=128 RATE=300 DURATION=170 bench/whatif-bench.sh
#
# Environment: SIZE_MB RATE SCALE=10 CLIENTS=4 DURATION=90
#   BENCH_DIR=/tmp/walwatch-whatif-bench  PG_BINDIR  WALWATCH (as advice-bench.sh)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BENCH_DIR=${BENCH_DIR:-/tmp/walwatch-whatif-bench}
export SCALE=${SCALE:-10} CLIENTS=${CLIENTS:-4} DURATION=${DURATION:-90}
# shellcheck source=bench/common.sh
. "$REPO/bench/common.sh"
release_walwatch
exec python3 "$REPO/bench/whatif_bench.py"
