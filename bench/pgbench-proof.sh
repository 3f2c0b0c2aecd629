#!/usr/bin/env bash
# pgbench before and after walwatch's max_wal_size advice, on a real
# PostgreSQL whose data directory's device is write-capped; prints the
# markdown tables for docs/dev/benchmarks.md and draws the chart.
# About 2 x 13 min per A/B pair on a shared 2-CPU machine, plus 2 min.
#
#   bench/pgbench-proof.sh                              one pair
#   REPEATS=2 CHART=docs/pgbench-proof.png bench/pgbench-proof.sh
#   IMAGE_DIR=/dev/shm/wpp bench/pgbench-proof.sh       the device's image in RAM
#   REPORT_ONLY=1 bench/pgbench-proof.sh                tables and chart again from results.json
#
# A throwaway cluster (initdb as the postgres user; shared_buffers 128MB,
# checkpoint_timeout 5min, log_checkpoints on, log_line_prefix '%m [%p] ')
# holds `pgbench -i -s $SCALE` (100: 1.5 GB, twelve times shared_buffers).
# Its data directory is on a loop device (`losetup --direct-io=on`, an ext4
# image) whose writes the root blkio cgroup caps at $CAP_MB MB/s.
# `walwatch run` follows the server's log throughout. Then, $REPEATS times:
#   A  max_wal_size at PostgreSQL's default, 1GB: unthrottled pgbench
#      (-c $CLIENTS -j $THREADS -P 1) until the server has logged $FORCED
#      WAL-triggered checkpoints (the cycles `walwatch suggest` needs), and
#      half a cycle more;
#   B  what `walwatch suggest` says after A (max_wal_size, and min_wal_size
#      when it suggests one), applied with ALTER SYSTEM + reload: the same
#      pgbench for as long as A ran.
# Every phase starts from the same data directory (a copy taken after the
# load, its pg_wal holding $WAL_PREALLOC_MB of recycled segments as a
# running server's does, so that neither phase pays for zero-filling new WAL
# segments through the cap), a select-only warm-up and a CHECKPOINT.
# Reported per phase: the per-second TPS (mean, median, p5), the
# checkpoints by trigger and the "too frequently" warnings -- counted in the
# log text and in walwatch's store, checked to agree -- and the gain, B / A
# mean TPS.
#
# The cap, and why this one: cgroup v1's blkio throttle on the disk, with
# the postmaster in a child cgroup, only throttles the writes its processes
# submit themselves (O_DIRECT, fsync, sync_file_range); the kernel flusher
# writes back their dirty pages as the root cgroup, at disk speed (buffered
# dd + `sync` from another process: 200 MB in 0.1 s, while dd + fsync kept
# to the cap). The cgroup v2 io controller cannot be enabled while blkio is
# bound to v1. So the data directory gets a device of its own, a loop
# device doing direct I/O to its image, and the root cgroup's throttle caps
# every write to it, from any process or the flusher. Every run verifies
# this first with dd (O_DIRECT; buffered + fsync; buffered, then `sync -f`
# from another process) and stops if any runs faster than 1.5 x the cap.
# CAP_MB=0 runs uncapped.
#
# Needs: root, cgroup v1 blkio (/sys/fs/cgroup/blkio), losetup, mkfs.ext4,
# fstrim, the PostgreSQL server binaries and pgbench, python3 with
# matplotlib (Debian: python3-matplotlib), and about 10 GB where the sparse
# image goes (the database twice, the preallocated WAL twice, pg_wal).
#
# Environment (defaults):
#   SCALE=100  CLIENTS=8  THREADS=2  FORCED=5  DURATION=1200 (phase A's longest, s)
#   WARMUP=20  REPEATS=1 (A/B pairs, alternated)  CAP_MB=10 (MB/s)  CAP_TEST_MB=48
#   SHARED_BUFFERS=128MB  CHECKPOINT_TIMEOUT=5min  PGBENCH_ARGS (extra)
#   WAL_PREALLOC_MB=2560  IMAGE_GB=20 (sparse)  KEEP_IMAGE=0
#   BENCH_DIR=/var/tmp/walwatch-pgbench-proof  logs, store, results.json, the mount point
#   IMAGE_DIR=$BENCH_DIR  where the image goes (a tmpfs takes the disk out of the measurement)
#   CHART=$BENCH_DIR/pgbench-proof.png
#   PYTHON  a python3 with matplotlib (default: the first of python3, /usr/bin/python3 that has it)
#   PG_BINDIR  PostgreSQL server binaries (default: highest /usr/lib/postgresql/*/bin)
#   WALWATCH=<repo>/target/release/walwatch (cargo build --release unless set)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BENCH_DIR=${BENCH_DIR:-/var/tmp/walwatch-pgbench-proof}

# shellcheck source=bench/common.sh
. "$REPO/bench/common.sh"

# The first python3 with matplotlib: $PYTHON, the one on PATH, the system's
# (where Debian's python3-matplotlib goes when PATH leads to another).
PY=
for py in ${PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$py" >/dev/null && "$py" -c 'import matplotlib' 2>/dev/null; then PY=$py; break; fi
done
[ -n "$PY" ] || die "python3 with matplotlib is needed (Debian: apt-get install python3-matplotlib)"
if [ "${REPORT_ONLY:-0}" = 1 ]; then
    exec "$PY" "$REPO/bench/pgbench_proof.py"
fi
[ "$(id -u)" = 0 ] || die "run as root (the loop device and its cap); PostgreSQL runs as postgres"
for tool in losetup mkfs.ext4 setpriv dd; do
    command -v "$tool" >/dev/null || die "$tool is needed"
done
release_walwatch

# The helper tears everything down itself; this is the net for when it is
# killed: no server, daemon, cap or loop device is left behind.
cleanup() {
    local data="$BENCH_DIR/mnt/data" pid loop dev bindir
    bindir=${PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n | tail -1)}
    if [ -f "$data/postmaster.pid" ]; then
        setpriv --reuid=postgres --regid=postgres --init-groups "$bindir/pg_ctl" stop -m immediate -D "$data" >/dev/null 2>&1 || true
    fi
    if [ -f "$BENCH_DIR/walwatch.pid" ]; then
        pid=$(cat "$BENCH_DIR/walwatch.pid")
        kill "$pid" 2>/dev/null || true
        rm -f "$BENCH_DIR/walwatch.pid"
    fi
    if [ -f "$BENCH_DIR/loopdev" ]; then
        loop=$(cat "$BENCH_DIR/loopdev")
        dev=$(cat "/sys/block/${loop#/dev/}/dev" 2>/dev/null || true)
        [ -n "$dev" ] && echo "$dev 0" >/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device 2>/dev/null || true
        mountpoint -q "$BENCH_DIR/mnt" && umount "$BENCH_DIR/mnt" || true
        losetup -d "$loop" 2>/dev/null || true
        rm -f "$BENCH_DIR/loopdev"
    fi
    [ "${KEEP_IMAGE:-0}" = 1 ] || rm -f "${IMAGE_DIR:-$BENCH_DIR}/walwatch-pgbench-proof.img"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

started=$(date +%s)
"$PY" "$REPO/bench/pgbench_proof.py"
say "the script took $(( ($(date +%s) - started) / 60 )) min"
