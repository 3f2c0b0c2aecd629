#!/usr/bin/env bash
# A central walwatch under hostile load: valid agents' batches while 1 000
# idle and 100 slow unauthenticated connections and a flood of oversized
# requests hit the same port, against the same agent with no attack, in one
# run. See bench/hostile_bench.py; prints a markdown table.
#
#   bench/hostile-bench.sh
#
# WALWATCH=$CARGO_TARGET_DIR/release/walwatch (cargo build --release unless set)
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -z "${WALWATCH:-}" ]; then
    (cd "$REPO" && cargo build --release -q)
    WALWATCH=${CARGO_TARGET_DIR:-$REPO/target}/release/walwatch
fi
# The attackers hold over a thousand sockets.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
exec python3 "$REPO/bench/hostile_bench.py" "$WALWATCH" "$REPO/tests/fixtures/15-stderr-default-noise/log"
