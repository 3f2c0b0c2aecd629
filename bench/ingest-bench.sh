#!/usr/bin/env bash
# Central ingest benchmark: a central walwatch taking Vector
# agents' gzip'd batches of a statement-heavy log, against a local
# `walwatch import` of the same file. See bench/ingest_bench.py for what is
# measured; prints a markdown table for docs/dev/benchmarks.md.
#
#   bench/ingest-bench.sh [LINES]    (default 1 000 000 lines, ~150 MiB)
#
# WALWATCH=$CARGO_TARGET_DIR/release/walwatch (cargo build --release unless set)
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -z "${WALWATCH:-}" ]; then
    (cd "$REPO" && cargo build --release -q)
    WALWATCH=${CARGO_TARGET_DIR:-$REPO/target}/release/walwatch
fi
exec python3 "$REPO/bench/ingest_bench.py" "$WALWATCH" "${1:-1000000}"
