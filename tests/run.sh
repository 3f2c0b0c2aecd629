#!/usr/bin/env bash
# The test suite, on a fresh Debian machine by itself:
#   tests/run.sh          installs what the tests need when it is missing
#                         (as root: the PostgreSQL server, rsyslog,
#                         python3-aiosmtpd, openssl, mount, e2fsprogs,
#                         prometheus), then
#                         runs every test (`cargo test`) and the .deb's
#                         install-upgrade-purge test
#                         (packaging/test/deb-lifecycle.sh, root only);
#   tests/run.sh --fast   the fast tier only: unit, property and fixture
#                         tests, no server, nothing installed but the zstd
#                         and faketime tools when missing
#                         (`cargo test --lib --test fast`).
# Missing components make the run fail, never skip: a test that needs a
# server always runs. `.ci/run` calls this after fmt and clippy.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export DEBIAN_FRONTEND=noninteractive

# The zstd tool writes the compressed logs the import tests read (as
# logrotate's compresscmd would); faketime freezes the clock for the
# clock-skew tolerance tests (a line exactly 300 s ahead when read). The
# fast tier needs both.
missing=()
for tool in zstd faketime; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"
    else
        echo "missing and not root: install the Debian package(s) ${missing[*]}" >&2
        exit 1
    fi
fi

if [ "${1:-}" = --fast ]; then
    exec cargo test --lib --test fast
fi

START=$(date +%s)
step_start=$START
# Print how long the previous step took and the running total.
step() {
    local now
    now=$(date +%s)
    echo "== [$(date -u +%H:%M:%S)] +$((now - step_start))s (total $((now - START))s) :: $*"
    step_start=$now
}

is_root() { [ "$(id -u)" = 0 ]; }
have_pg_server() { compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; }

have_rsyslogd() { command -v rsyslogd >/dev/null || [ -x /usr/sbin/rsyslogd ]; }

# Install Debian packages without letting them start their services
# (policy-rc.d): the tests run their own servers. apt-get update runs once.
apt_updated=no
apt_install_no_start() {
    local policy=/usr/sbin/policy-rc.d created_policy=no
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod +x "$policy"
        created_policy=yes
    fi
    if [ "$apt_updated" = no ]; then
        apt-get update -q
        apt_updated=yes
    fi
    apt-get install -y -q --no-install-recommends "$@"
    if [ "$created_policy" = yes ]; then rm -f "$policy"; fi
}

# Debian's postgresql package creates a "main" cluster and may start it. Keep
# it from starting during the install, and stop any that runs anyway: the
# tests use their own clusters and must not share the machine with a stray
# server.
install_postgresql() {
    apt_install_no_start postgresql postgresql-contrib
    stop_packaged_clusters
}

# The syslog test runs its own rsyslogd on /dev/log and refuses to take the
# socket from a live daemon, so the packaged one must not be left running.
install_rsyslog() {
    apt_install_no_start rsyslog
    local pidfile=/run/rsyslogd.pid
    if [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
        echo "stopping packaged rsyslogd (the syslog test runs its own)"
        kill "$(cat "$pidfile")" || true
    fi
    if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
        systemctl disable --now rsyslog >/dev/null 2>&1 || true
    fi
}

stop_packaged_clusters() {
    command -v pg_lsclusters >/dev/null || return 0
    pg_lsclusters --no-header 2>/dev/null | while read -r ver name _port status _rest; do
        if [ "$status" = online ]; then
            echo "stopping packaged cluster $ver/$name (tests run their own)"
            pg_ctlcluster "$ver" "$name" stop || true
        fi
    done
    if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
        systemctl disable --now postgresql >/dev/null 2>&1 || true
    fi
}

step "start"
if ! have_pg_server; then
    if is_root; then
        install_postgresql
    else
        echo "PostgreSQL server binaries missing and not root: install the 'postgresql' package" >&2
        exit 1
    fi
fi
# The server refuses to run as root; as root, the tests run it as `postgres`.
if is_root && ! id postgres >/dev/null 2>&1; then
    useradd --system --user-group --home-dir /var/lib/postgresql --shell /bin/bash postgres
fi
ls -d /usr/lib/postgresql/*/bin
step "postgresql ready"

if ! have_rsyslogd; then
    if is_root; then
        install_rsyslog
    else
        echo "rsyslogd missing and not root: install the 'rsyslog' package" >&2
        exit 1
    fi
fi
step "rsyslog ready"

have_aiosmtpd() { /usr/bin/python3 -c 'import aiosmtpd' >/dev/null 2>&1; }
missing=()
have_aiosmtpd || missing+=(python3-aiosmtpd)
command -v openssl >/dev/null || missing+=(openssl)
# The slow_sync test (tests/postgres/alerts_postgres.rs) puts a data directory on a
# loop device with an ext4 filesystem of its own, throttled by a cgroup:
# losetup and mount (Debian: mount), mkfs.ext4 (e2fsprogs).
have_sbin() { command -v "$1" >/dev/null || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }
have_sbin losetup || missing+=(mount)
have_sbin mkfs.ext4 || missing+=(e2fsprogs)
# The metrics tests (tests/daemon/prometheus.rs) run Debian's prometheus
# server as a child of their own and its promtool on the rules file; the
# packaged service is never started (policy-rc.d, see apt_install_no_start).
{ command -v prometheus >/dev/null && command -v promtool >/dev/null; } || missing+=(prometheus)
if [ ${#missing[@]} -gt 0 ]; then
    if is_root; then
        apt_install_no_start "${missing[@]}"
    else
        echo "missing and not root: install ${missing[*]}" >&2
        exit 1
    fi
fi
have_aiosmtpd
step "SMTP test server (aiosmtpd), openssl, losetup, mkfs.ext4 and prometheus ready"

cargo test --no-run
step "cargo test --no-run (the test binaries built)"

# cargo-deb, for the deb lifecycle step below, is built while the tests run
# (they mostly wait on servers and daemons), at the lowest priority so that
# it takes only the CPU they leave: about 2.5 min of CPU off the critical path.
deb_install_pid=
deb_install_log=$(mktemp)
if is_root && ! command -v cargo-deb >/dev/null; then
    nice -n 19 cargo install cargo-deb --locked >"$deb_install_log" 2>&1 &
    deb_install_pid=$!
fi

cargo test
step "cargo test"

if [ -n "$deb_install_pid" ]; then
    if ! wait "$deb_install_pid"; then
        cat "$deb_install_log" >&2
        echo "cargo install cargo-deb --locked failed" >&2
        exit 1
    fi
    step "cargo-deb installed (built during the tests)"
fi

# The .deb's life on this machine (packaging/test/deb-lifecycle.sh): built
# by cargo-deb from the binary `cargo test` just built (no release build),
# installed with dpkg -i, used as the walwatch user,
# upgraded, purged. Needs root; installs cargo-deb when it is missing.
packaging/test/deb-lifecycle.sh --binary "$(cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/debug/walwatch"
step "deb lifecycle"
