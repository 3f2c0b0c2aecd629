#!/usr/bin/env bash
# Daemon (`walwatch run`) benchmark; prints a markdown table for docs/dev/benchmarks.md.
#
#   bench/daemon-bench.sh            full run (~5 min plus the 1 GB burst)
#   QUICK=1 bench/daemon-bench.sh    shorter runs and a 100 MB burst (~2 min)
#
# Each scenario runs its own daemon (release build, default poll_interval
# 1 s, inotify active) on a fresh directory and store under $BENCH_DIR:
#
# (a) append-to-commit latency at 1, 100 and 10 000 lines/s: a writer appends
#     real-format stderr lines (pgbench-like statements, and a checkpoint
#     start/complete pair with a unique timestamp every N lines), one write()
#     per line; a watcher process polls the store read-only every 10 ms for
#     the number of checkpoint_start events. latency = first seen - written.
#     Target: p99 <= 1 s.
# (a') the same latency for the real pattern: a lone `checkpoint starting`
#     line followed by silence (the complete line comes minutes later on a
#     real server; here after $SILENCE_SECONDS, default 1.5 s), alternating
#     in one daemon with cycles where start and complete are written
#     together; p50/p99 of each and the per-cycle ratio lone / pair.
#     $SILENCE_CYCLES cycles (80; 16 with QUICK=1), 2 s each.
# (b) CPU of an idle daemon following 7 already-read files, from
#     /proc/<pid>/stat utime+stime over $IDLE_SECONDS (default 60).
#     Target: <= 0.5 % of a core.
# (c) peak RSS (VmHWM) while following a burst: the followed file (on
#     $BURST_DIR, tmpfs by default, so that the append is not throttled by
#     disk writeback) holds the first MiB of $BIG_LOG, the rest (~1 GB) is
#     appended at once (copy_file_range or sendfile). Target: <= 50 MB.
# (d) follow throughput: from the start of that append to the daemon's last
#     commit of a read position (source.last_read; the wait ends when
#     `walwatch status` shows lag 0), vs `walwatch import` of the final file
#     into a fresh store (page cache warm for both). Target: >= 0.8x.
#     Also shown, without a target: a daemon started with a fresh store on
#     the complete file (catch-up, spawn to last commit). The three stores'
#     summaries must be equal.
#
# Environment (defaults):
#   BENCH_DIR=/tmp/walwatch-daemon-bench  scratch space (stores, latency logs)
#   BURST_DIR=/dev/shm/walwatch-daemon-bench  the burst's followed file (needs
#     the size of BIG_LOG; removed afterwards)
#   BIG_LOG=/tmp/walwatch-bench/bench-1024MB.log  made by
#     `bench/import-bench.sh generate` when missing (a real PostgreSQL log)
#   QUICK=0  1: IDLE_SECONDS=15, LATENCY_SECONDS=12, BURST_MB=100
#   IDLE_SECONDS, LATENCY_SECONDS (per rate; 60 in a full run)
#   BURST_MB  only the first BURST_MB of BIG_LOG (whole lines) is used
#   ONLY=latency (a and a') | silence (a') | catchup: run only those
#   WALWATCH=$CARGO_TARGET_DIR/release/walwatch (target/ by default; cargo
#     build --release unless set)
#
# The table on stdout is what docs/dev/benchmarks.md shows (pasted as printed).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BENCH_DIR=${BENCH_DIR:-/tmp/walwatch-daemon-bench}
export QUICK=${QUICK:-0}
BIG_LOG=${BIG_LOG:-/tmp/walwatch-bench/bench-1024MB.log}
if [ "$QUICK" = 1 ]; then BURST_MB=${BURST_MB:-100}; else BURST_MB=${BURST_MB:-}; fi

# shellcheck source=bench/common.sh
. "$REPO/bench/common.sh"

command -v python3 >/dev/null || die "python3 is needed"
release_walwatch

if [ ! -s "$BIG_LOG" ]; then
    [ "$BIG_LOG" = /tmp/walwatch-bench/bench-1024MB.log ] || die "$BIG_LOG missing"
    say "$BIG_LOG missing: generating it with bench/import-bench.sh generate"
    # import-bench.sh writes into its own BENCH_DIR, not this script's.
    BENCH_DIR=/tmp/walwatch-bench "$REPO/bench/import-bench.sh" generate
fi

mkdir -p "$BENCH_DIR"
if [ -n "$BURST_MB" ]; then
    # whole lines only
    slice="$BENCH_DIR/burst-${BURST_MB}MB.log"
    if [ ! -s "$slice" ]; then
        head -c "${BURST_MB}M" "$BIG_LOG" | sed '$d' >"$slice"
    fi
    BIG_LOG=$slice
fi
export BIG_LOG
say "burst input: $BIG_LOG ($(du -m "$BIG_LOG" | cut -f1) MB)"

exec python3 "$REPO/bench/daemon_bench.py"
