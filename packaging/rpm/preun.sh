# shellcheck shell=sh
# RPM %preun scriptlet (cargo-generate-rpm: pre_uninstall_script).
# What %systemd_preun walwatch.service does: $1 = 0 means the package is being
# erased (not upgraded), so stop and disable the service while its files
# still exist.
if [ "$1" -eq 0 ] && command -v systemctl >/dev/null 2>&1; then
    systemctl --no-reload disable --now walwatch.service >/dev/null 2>&1 || :
fi
exit 0
