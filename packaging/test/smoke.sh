#!/bin/sh
# Post-install smoke test for the walwatch .deb / .rpm. Run it as root on a
# machine (or container) where the package has just been installed:
#
#     sudo packaging/test/smoke.sh
#
# It checks what the package promises: the service user, the installed files
# and their permissions, that the binary runs, that the shipped config passes
# `walwatch config check` (also as the service user, i.e. it is readable by
# the daemon), and that systemd accepts the installed unit (verify clean,
# security exposure <= 2.0). Checks that need systemd as the running init
# (containers usually lack it) are reported as skipped, never as passed.
set -eu

BIN=/usr/bin/walwatch
CONF=/etc/walwatch/walwatch.toml
UNIT=/usr/lib/systemd/system/walwatch.service
SYSUSERS=/usr/lib/sysusers.d/walwatch.conf
DOC=/usr/share/doc/walwatch/README.md
MAX_EXPOSURE=2.0

failures=0
ok() { echo "ok    $*"; }
fail() { echo "FAIL  $*" >&2; failures=$((failures + 1)); }
skip() { echo "skip  $*"; }
# check DESCRIPTION COMMAND...: ok if COMMAND succeeds (output hidden), else fail.
check() {
    desc=$1
    shift
    if "$@" >/dev/null 2>&1; then ok "$desc"; else fail "$desc"; fi
}

if [ "$(id -u)" -ne 0 ]; then
    echo "run me as root (I switch to the walwatch user and read root-only files)" >&2
    exit 2
fi

# --- the service user ---------------------------------------------------
if entry=$(getent passwd walwatch); then
    ok "user walwatch exists: $entry"
    home=$(echo "$entry" | cut -d: -f6)
    shell=$(echo "$entry" | cut -d: -f7)
    check "home is /var/lib/walwatch (is $home)" [ "$home" = /var/lib/walwatch ]
    case "$shell" in
        */nologin | */false) ok "no login shell ($shell)" ;;
        *) fail "walwatch has a login shell: $shell" ;;
    esac
    uid=$(id -u walwatch)
    check "system uid < 1000 (is $uid)" [ "$uid" -lt 1000 ]
else
    fail "user walwatch does not exist"
fi
check "group walwatch exists" getent group walwatch
# Debian's PostgreSQL logs are group adm readable; both packages add the user.
if getent group adm >/dev/null; then
    if id -nG walwatch 2>/dev/null | tr ' ' '\n' | grep -qx adm; then
        ok "walwatch is in group adm"
    else
        fail "walwatch is not in group adm"
    fi
fi

# --- installed files ----------------------------------------------------
check "$BIN is executable" [ -x "$BIN" ]
for f in "$CONF" "$UNIT" "$SYSUSERS" "$DOC"; do
    check "$f installed" [ -f "$f" ]
done
if [ -f "$CONF" ]; then
    # root:walwatch 0640 (SMTP credentials will live there).
    perms=$(stat -c '%U:%G %a' "$CONF")
    check "$CONF is root:walwatch 640 (is $perms)" [ "$perms" = "root:walwatch 640" ]
fi

# --- the binary ---------------------------------------------------------
if version=$("$BIN" --version 2>&1); then
    case "$version" in
        walwatch\ *) ok "walwatch --version: $version" ;;
        *) fail "walwatch --version printed: $version" ;;
    esac
else
    fail "walwatch --version failed: $version"
fi

if out=$("$BIN" config check --config "$CONF" 2>&1); then
    ok "walwatch config check passes on the shipped $CONF"
else
    fail "walwatch config check --config $CONF: $out"
fi
# As the service user, the way ExecStartPre= runs it (default config path).
if out=$(runuser -u walwatch -- "$BIN" config check 2>&1); then
    ok "walwatch config check passes as user walwatch"
else
    fail "walwatch config check as user walwatch: $out"
fi

# --- systemd ------------------------------------------------------------
if command -v systemd-analyze >/dev/null 2>&1; then
    # verify loads the whole dependency tree from this host; complaints
    # about other units are shown but only ours fail the test.
    if out=$(systemd-analyze verify "$UNIT" 2>&1) && ! echo "$out" | grep -q walwatch; then
        ok "systemd-analyze verify $UNIT is clean"
        [ -z "$out" ] || echo "      (about other units: $out)"
    else
        fail "systemd-analyze verify $UNIT: $out"
    fi

    report=$(SYSTEMD_COLORS=0 systemd-analyze security --offline=yes --no-pager "$UNIT" 2>&1 || true)
    exposure=$(echo "$report" | sed -n 's/.*Overall exposure level for walwatch\.service: \([0-9.]*\).*/\1/p')
    if [ -z "$exposure" ]; then
        fail "no exposure level in systemd-analyze security output: $report"
    elif awk -v x="$exposure" -v max="$MAX_EXPOSURE" 'BEGIN { exit !(x <= max) }'; then
        ok "systemd-analyze security exposure $exposure <= $MAX_EXPOSURE"
    else
        fail "systemd-analyze security exposure $exposure > $MAX_EXPOSURE"
    fi
else
    fail "systemd-analyze not found (install systemd)"
fi

if [ -d /run/systemd/system ]; then
    check "systemd knows walwatch.service" systemctl cat walwatch.service
    echo "      is-enabled: $(systemctl is-enabled walwatch.service 2>&1 || true)," \
        "is-active: $(systemctl is-active walwatch.service 2>&1 || true)"
    # The unit combines PrivateUsers=yes with SupplementaryGroups=adm; prove
    # on this host that a group-adm log stays readable under those settings.
    log=$(find /var/log/postgresql -maxdepth 1 -type f -group adm -name '*.log' 2>/dev/null | head -n 1)
    if [ -n "$log" ]; then
        if systemd-run --quiet --wait --pipe --collect -p User=walwatch -p PrivateUsers=yes \
            -p SupplementaryGroups=adm -- test -r "$log"; then
            ok "$log readable with User=walwatch PrivateUsers=yes SupplementaryGroups=adm"
        else
            fail "$log NOT readable with PrivateUsers=yes SupplementaryGroups=adm"
        fi
    else
        skip "no group-adm PostgreSQL log in /var/log/postgresql to test read access with"
    fi
else
    skip "systemd is not the running init: enable/start and sandboxed read access not checked"
fi

if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed" >&2
    exit 1
fi
echo "all smoke checks passed"
