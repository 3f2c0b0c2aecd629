#!/usr/bin/env bash
# The max_wal_size advice, closed loop on a real PostgreSQL; prints the
# markdown tables for docs/dev/benchmarks.md. Takes about
# (2 + bisection steps) runs of $DURATION s per rate and repeat: 60-80 min
# with the defaults, ~50 min at DURATION=120.
#
#   bench/advice-bench.sh                 RATES=100,300, REPEATS=2, 170 s per run
#   RATES=200 REPEATS=1 DURATION=120 bench/advice-bench.sh
#   REPORT_ONLY=1 bench/advice-bench.sh   the tables again from results.json
#   RATES=100 BURST=4x40@60 BENCH_DIR=/tmp/walwatch-advice-burst bench/advice-bench.sh
#                                         a bursty workload: 4x the rate for 40 s, 60 s into every run
#
# For each pgbench rate (transactions/s, `pgbench --rate`) and repeat, on its
# own throwaway cluster (pgbench -i -s $SCALE; checkpoint_timeout 30s,
# min_wal_size 32MB, log_checkpoints on) -- the setup of
# tests/postgres/advice_postgres.rs, plus a VACUUM before every run:
#   1. max_wal_size = 32MB, a fixed-rate run of $DURATION s; its log file is
#      imported and `walwatch suggest` gives S;
#   2. the same run at S: must be sufficient (0 WAL-triggered checkpoints,
#      0 "too frequently" warnings);
#   3. the smallest sufficient size to 32 MB, by bisection between 32MB and
#      S; report S / that size, and what pg_walsizer's rule (current x
#      (requested + 1), capped at 4GB) would set from phase 1.
# DURATION below the test's 170 s (5 cycles of 30 s) is allowed and printed
# in the table's header: fewer cycles per run can only let a borderline size
# pass, so a shorter run makes "smallest" smaller or equal and S / smallest
# larger or equal (it does not flatter S).
# Runs are sequential: the machine must keep the fixed rate (the table shows
# the achieved tps and pgbench's schedule lag).
#
# Environment (defaults):
#   RATES=100,300   REPEATS=2   SCALE=10   CLIENTS=4   DURATION=170 (>= 5 cycles of 30 s)
#   BENCH_DIR=/tmp/walwatch-advice-bench  clusters, stores, results.json
#   SUGGEST_FROM=walwatch  or `formula`: S from the model's formula applied by
#     the script to phase 1's log (for when `walwatch suggest` is unavailable)
#   SECOND_PASS=1  the run at S imported into the same store and suggest asked
#     again (S2, as a DBA who applied S would), S2 run and reported; 0: skip
#   BURST=FxS@T  every run gets F x its rate for S s, T s after it starts (a
#     second pgbench on top of the steady one, like a batch job); unset: steady
#   PG_BINDIR  PostgreSQL server binaries (default: highest /usr/lib/postgresql/*/bin)
#   WALWATCH=<repo>/target/release/walwatch (cargo build --release unless set;
#     only import/suggest/checkpoints run, so a debug build does as well)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BENCH_DIR=${BENCH_DIR:-/tmp/walwatch-advice-bench}
export RATES=${RATES:-100,300}
export SCALE=${SCALE:-10} CLIENTS=${CLIENTS:-4} DURATION=${DURATION:-170}
export SUGGEST_FROM=${SUGGEST_FROM:-walwatch} SECOND_PASS=${SECOND_PASS:-1}

# shellcheck source=bench/common.sh
. "$REPO/bench/common.sh"

command -v python3 >/dev/null || die "python3 is needed"
release_walwatch

exec python3 "$REPO/bench/advice_bench.py"
