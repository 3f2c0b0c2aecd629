#!/usr/bin/env bash
# What can be checked of the .rpm on a Debian machine, as root: it is built
# by cargo-generate-rpm, `rpm -qpl` lists the same files as the .deb (but
# for the known differences), and it installs, with its scriptlets, into a
# scratch root (`rpm --root --nodeps`), which is then erased again.
#
#     sudo packaging/test/rpm-check.sh [--binary PATH]
#
# Needs `rpm` (Debian: apt-get install rpm), cargo-generate-rpm and
# cargo-deb (cargo install --locked ...). Not part of tests/run.sh: building
# cargo-generate-rpm takes 8 minutes of CPU.
#
# The scratch root is this machine's /usr under an overlay (so the
# scriptlets find /bin/sh, systemd-sysusers, getent; what rpm writes lands
# in the overlay) and an /etc of its own holding only the account files.
# What it cannot show: rpm's dependency resolution against RHEL/Fedora
# (--nodeps), SELinux contexts, and the scriptlets' systemctl calls, which
# need systemd as the running init.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

binary=
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary=$(realpath "$2"); shift 2 ;;
        *) echo "usage: $0 [--binary PATH]" >&2; exit 2 ;;
    esac
done
fail() {
    echo "rpm-check: FAIL: $*" >&2
    exit 1
}
ok() { echo "ok    $*"; }
[ "$(id -u)" = 0 ] || fail "run me as root (overlay mount, rpm --root)"
command -v rpm >/dev/null || fail "rpm is missing: apt-get install rpm"
cargo generate-rpm --version >/dev/null 2>&1 || fail "cargo-generate-rpm is missing: cargo install --locked cargo-generate-rpm"
cargo deb --version >/dev/null 2>&1 || fail "cargo-deb is missing: cargo install --locked cargo-deb"

out=$(mktemp -d /tmp/walwatch-rpm-check.XXXXXX)
root="$out/root"
cleanup() {
    umount "$root/dev/null" 2>/dev/null || true
    umount "$root/usr" 2>/dev/null || true
    rm -rf "$out"
}
trap cleanup EXIT

if [ -z "$binary" ]; then
    CARGO_PROFILE_RELEASE_STRIP=debuginfo cargo build --release --bin walwatch
else
    export CARGO_TARGET_DIR="$out/target"
    mkdir -p "$CARGO_TARGET_DIR/release"
    # cargo-generate-rpm does not strip.
    strip -o "$CARGO_TARGET_DIR/release/walwatch" "$binary"
fi
target_dir=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
packaging/build-assets.sh "$target_dir/release"
cargo generate-rpm -o "$out/"
rpm_file=$(compgen -G "$out/walwatch-*.rpm")
cargo deb --no-build --no-dbgsym --fast --output "$out/"
deb_file=$(compgen -G "$out/walwatch_*.deb")
ok "built $(basename "$rpm_file") and $(basename "$deb_file")"

# --- the same files ---------------------------------------------------------
# The deb's files, less what only Debian has (the generated copyright file,
# the Debian changelog when [package.metadata.deb] names one), with the
# rpm's places for the license texts and zsh's functions.
dpkg-deb --contents "$deb_file" | awk '$1 !~ /^d/ {print $NF}' | sed 's|^\./|/|' |
    grep -vx -e /usr/share/doc/walwatch/copyright -e /usr/share/doc/walwatch/changelog.Debian.gz | sort >"$out/deb.list"
rpm -qpl "$rpm_file" |
    sed 's|^/usr/share/licenses/walwatch/|/usr/share/doc/walwatch/|; s|^/usr/share/zsh/site-functions/|/usr/share/zsh/vendor-completions/|' |
    sort >"$out/rpm.list"
diff -u "$out/deb.list" "$out/rpm.list" || fail "rpm -qpl and the deb's files differ (above)"
ok "rpm -qpl lists the deb's $(wc -l <"$out/deb.list") files"
rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILEMODES:perms} %{FILEUSERNAME}:%{FILEGROUPNAME} %{FILENAMES}\n]' "$rpm_file" |
    grep -qx 'cn -rw-r----- root:walwatch /etc/walwatch/walwatch.toml' ||
    fail "the config is not %config(noreplace) root:walwatch 0640"
ok "/etc/walwatch/walwatch.toml is %config(noreplace) root:walwatch 0640"

# --- the scriptlets in a scratch root ---------------------------------------
mkdir -p "$root/usr" "$root/dev" "$root/etc" "$root/var/lib" "$root/run" "$root/tmp" "$out/upper" "$out/work"
mount -t overlay overlay -o "lowerdir=/usr,upperdir=$out/upper,workdir=$out/work" "$root/usr"
touch "$root/dev/null"
mount --bind /dev/null "$root/dev/null"
for l in bin sbin lib lib64; do [ -e "/$l" ] && ln -s "usr/$l" "$root/$l"; done
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nadm:x:4:\n' >"$root/etc/group"
printf 'root:*:1::::::\n' >"$root/etc/shadow"
printf 'root:*::\nadm:*::\n' >"$root/etc/gshadow"
chmod 0640 "$root/etc/shadow" "$root/etc/gshadow"
cp /etc/nsswitch.conf /etc/login.defs "$root/etc/"
rpm --root "$root" --initdb
rpm --root "$root" --nodeps -i "$rpm_file"
ok "rpm --root --nodeps -i: %pre and %post ran"
entry=$(grep '^walwatch:' "$root/etc/passwd") || fail "%pre did not create the walwatch user in the scratch root"
[[ "$(cut -d: -f5- <<<"$entry")" == "walwatch PostgreSQL checkpoint monitor:/var/lib/walwatch:"*/nologin ]] ||
    fail "walwatch user: $entry"
[ "$(cut -d: -f3 <<<"$entry")" -lt 1000 ] || fail "walwatch uid is not a system uid: $entry"
grep -q '^walwatch:' "$root/etc/group" || fail "%pre did not create the walwatch group"
! grep -q '^adm:.*walwatch' "$root/etc/group" || fail "the rpm put walwatch in adm"
ok "%pre created $entry (not in adm)"
conf="$root/etc/walwatch/walwatch.toml"
gid=$(grep '^walwatch:' "$root/etc/group" | cut -d: -f3)
[ "$(stat -c '%u:%g %a' "$conf")" = "0:$gid 640" ] || fail "config is $(stat -c '%u:%g %a' "$conf"), not 0:$gid 640"
ok "config is root:walwatch 0640 in the scratch root"
for f in usr/bin/walwatch usr/lib/systemd/system/walwatch.service usr/share/man/man1/walwatch-alerts-silence.1.gz \
    usr/share/zsh/site-functions/_walwatch usr/share/bash-completion/completions/walwatch; do
    [ -f "$root/$f" ] || fail "/$f is not in the scratch root"
done
ok "files in place in the scratch root"
echo "# admin edit" >>"$conf"
rpm --root "$root" --nodeps -e walwatch
ok "rpm --root --nodeps -e: %preun and %postun ran"
[ ! -e "$root/usr/bin/walwatch" ] || fail "erase left /usr/bin/walwatch"
[ -f "$conf.rpmsave" ] || fail "erase did not keep the edited config as walwatch.toml.rpmsave"
grep -q '^walwatch:' "$root/etc/passwd" || fail "erase deleted the walwatch user (it is kept)"
ok "erased: binary gone, edited config kept as .rpmsave, user kept"
echo "rpm check passed"
