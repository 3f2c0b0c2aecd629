#!/usr/bin/env bash
# The recovery time walwatch predicts against a real crash, in rounds: each
# round runs the postgres tier's recovery test (two kill -9 under pgbench;
# the first measures the replay speed, the second is predicted as the WAL
# since the last completed REDO over that speed) and reads the figures it
# prints. Prints a markdown table and the median deviation.
# About 2.5 minutes a round.
#
#   bench/recovery-bench.sh            ROUNDS=5
#
# Environment: ROUNDS=5  PG_BINDIR (as the postgres tier)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROUNDS=${ROUNDS:-5}
cd "$REPO"
cargo test --quiet --test postgres --no-run >&2
echo "| round | speed measured MB/s | WAL to replay MB | predicted s | logged s | deviation | load average |"
echo "|---|---|---|---|---|---|---|"
deviations=()
for round in $(seq 1 "$ROUNDS"); do
    echo "round $round of $ROUNDS" >&2
    line=$(cargo test --quiet --test postgres recovery_postgres -- --nocapture 2>&1 | grep '^speed measured' || true)
    if [ -z "$line" ]; then
        echo "| $round | (the test failed) | | | | | |"
        continue
    fi
    # speed measured S MB/s; second crash: W MB to replay …, R MB replayed; predicted P s, logged L s (D %)
    read -r speed wal predicted logged deviation < <(
        sed -E 's/^speed measured ([0-9.]+) MB\/s; second crash: ([0-9.]+) MB to replay.*predicted ([0-9.]+) s, logged ([0-9.]+) s \(([-+0-9]+) %\)$/\1 \2 \3 \4 \5/' <<<"$line"
    )
    load=$(cut -d' ' -f1 /proc/loadavg)
    echo "| $round | $speed | $wal | $predicted | $logged | $deviation % | $load |"
    deviations+=("$deviation")
done
if [ "${#deviations[@]}" -gt 0 ]; then
    median=$(printf '%s\n' "${deviations[@]}" | sort -n |
        awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2] + a[NR/2+1]) / 2}')
    echo
    echo "median deviation of the logged time from the predicted: $median %"
fi
