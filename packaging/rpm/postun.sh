# shellcheck shell=sh
# RPM %postun scriptlet (cargo-generate-rpm: post_uninstall_script).
# What %systemd_postun_with_restart walwatch.service does: after an upgrade
# ($1 >= 1) restart the daemon if it was running, so the new binary is used;
# after an erase ($1 = 0) just let systemd forget the unit. The walwatch user
# and /var/lib/walwatch (checkpoint history) are kept, as is usual for RPMs.
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || :
    if [ "$1" -ge 1 ]; then
        systemctl try-restart walwatch.service >/dev/null 2>&1 || :
    fi
fi
exit 0
