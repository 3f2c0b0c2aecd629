#!/usr/bin/env bash
# The main job on a fresh machine: build walwatch, let the daemon follow the
# logs of two real PostgreSQL 15 servers (bundled as test fixtures: an English
# and a German one, each its own cluster) for three seconds, then show what it
# recorded: `status`, `summary` and the alerts it raised.
#
#   examples/quickstart.sh            (builds with cargo build --release)
#   WALWATCH=path/to/walwatch examples/quickstart.sh
#
# Everything it writes goes to a fresh temporary directory, named at the end.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -z "${WALWATCH:-}" ]; then
    (cd "$REPO" && cargo build --release -q)
    WALWATCH=${CARGO_TARGET_DIR:-$REPO/target}/release/walwatch
fi
DEMO=$(mktemp -d "${TMPDIR:-/tmp}/walwatch-demo.XXXXXX")
mkdir -p "$DEMO/english" "$DEMO/german"
cp "$REPO"/tests/fixtures/15-stderr-default-std/log/*.log "$DEMO/english/"
cp "$REPO"/tests/fixtures/15-stderr-default-i18n-de/log/*.log "$DEMO/german/"
cat >"$DEMO/walwatch.toml" <<TOML
[store]
path = "$DEMO/walwatch.db"

[[cluster]]
name = "english"
logs = ["$DEMO/english/*.log"]

[[cluster]]
name = "german"
logs = ["$DEMO/german/*.log"]
TOML
# The daemon, stopped with SIGTERM after three seconds (a clean stop).
timeout -s TERM 3 "$WALWATCH" run --config "$DEMO/walwatch.toml" 2>"$DEMO/daemon.log" || true
# status exits 5 here: the daemon was stopped, which it says first.
"$WALWATCH" status --db "$DEMO/walwatch.db" || true
echo
"$WALWATCH" summary --db "$DEMO/walwatch.db"
echo
"$WALWATCH" alerts --db "$DEMO/walwatch.db"
echo
echo "The logs, the config, the store and the daemon's log are in $DEMO;"
echo "the max_wal_size walwatch would set: walwatch suggest --db $DEMO/walwatch.db"
