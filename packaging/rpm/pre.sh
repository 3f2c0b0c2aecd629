# shellcheck shell=sh
# RPM %pre scriptlet (cargo-generate-rpm: pre_install_script).
# Runs before the files are unpacked, so the walwatch group exists when rpm
# sets /etc/walwatch/walwatch.toml to root:walwatch 0640 (rpm would fall back
# to root:root otherwise, and the service could not read its config).
# rpm >= 4.19 would create the user from the packaged sysusers.d file by
# itself; RHEL 8/9 (rpm 4.14/4.16) do not. So, like Fedora's
# %sysusers_create_compat, feed the snippet (packaging/rpm/walwatch.sysusers,
# installed later in this transaction) to systemd-sysusers now. Keep the line
# below identical to that file; tests/daemon/systemd_unit.rs checks that it is.
if command -v systemd-sysusers >/dev/null 2>&1; then
    systemd-sysusers --replace=/usr/lib/sysusers.d/walwatch.conf - <<'SYSUSERS'
u walwatch - "walwatch PostgreSQL checkpoint monitor" /var/lib/walwatch
SYSUSERS
else
    # No systemd (container image): shadow-utils does the same.
    getent group walwatch >/dev/null || groupadd -r walwatch
    getent passwd walwatch >/dev/null || \
        useradd -r -g walwatch -d /var/lib/walwatch -M -s /sbin/nologin \
            -c "walwatch PostgreSQL checkpoint monitor" walwatch
fi
exit 0
