# shellcheck shell=sh
# RPM %post scriptlet (cargo-generate-rpm: post_install_script).
# What %systemd_post walwatch.service does, written out because
# cargo-generate-rpm does not expand rpm macros. $1 is the number of walwatch
# packages installed after this transaction: 1 = first install, 2 = upgrade.
# Following Fedora/RHEL policy the unit is *preset* (enabled only if a preset
# file says so), not started: on RHEL the PostgreSQL log under $PGDATA is not
# readable by walwatch until the admin grants access (see the unit's header),
# so `systemctl enable --now walwatch` is a deliberate step.
if [ "$1" -eq 1 ] && command -v systemctl >/dev/null 2>&1; then
    systemctl --no-reload preset walwatch.service >/dev/null 2>&1 || :
fi
# Group walwatch may read the store (StateDirectoryMode=0750, UMask=0027);
# stores made before that are 0600. SQLite gives the -wal and -shm files the
# database's mode, so fixing these is enough.
for f in /var/lib/walwatch/walwatch.db /var/lib/walwatch/walwatch.db-wal /var/lib/walwatch/walwatch.db-shm; do
    if [ -f "$f" ]; then chmod g+r "$f"; fi
done
# Pick up the new or changed unit file (only when systemd is the running init).
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || :
fi
exit 0
