#!/usr/bin/env bash
# The .deb's whole life on this machine, as root: build it with cargo-deb,
# `dpkg -i` it, use it as the walwatch user, edit its config, upgrade it to
# a rebuilt higher version, purge it. Fails on the first thing that is not
# as Debian policy and packaging/README.md say; never skips.
#
#     sudo packaging/test/deb-lifecycle.sh [--binary PATH]
#
# Without --binary it packages a release build (`cargo build --release`),
# as shipped. --binary packages a walwatch binary already built: tests/run.sh
# passes the debug one `cargo test` built, because the maintainer scripts,
# the conffile and the file list do not depend on optimisation and a release
# build costs minutes. It is copied into a scratch target directory as
# release/walwatch, so cargo-deb packages it as it would a release build.
#
# It needs a machine without walwatch installed. A `walwatch` user left by
# an earlier run (purge keeps it, see packaging/deb/postrm) is deleted first,
# so the install is seen to create it; the run ends with the package purged
# and that user deleted again, leaving the machine as it found it. systemd
# need not be the running init: the maintainer scripts then only record the
# enable state, and that is what is checked.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export DEBIAN_FRONTEND=noninteractive

binary=
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary=$(realpath "$2"); shift 2 ;;
        *) echo "usage: $0 [--binary PATH]" >&2; exit 2 ;;
    esac
done

START=$(date +%s)
step_start=$START
step() {
    local now
    now=$(date +%s)
    echo "== deb-lifecycle [$(date -u +%H:%M:%S)] +$((now - step_start))s (total $((now - START))s) :: $*"
    step_start=$now
}
fail() {
    echo "deb-lifecycle: FAIL: $*" >&2
    exit 1
}
ok() { echo "ok    $*"; }

[ "$(id -u)" = 0 ] || fail "run me as root: I install, upgrade and purge a package"

BIN=/usr/bin/walwatch
CONF=/etc/walwatch/walwatch.toml
STATE=/var/lib/walwatch
UNIT=/usr/lib/systemd/system/walwatch.service
WANTS=/etc/systemd/system/multi-user.target.wants/walwatch.service

status=$(dpkg-query -W -f '${Status}' walwatch 2>/dev/null || true)
if [ -n "$status" ] && [ "$status" != "unknown ok not-installed" ]; then
    fail "walwatch is on this machine ($status); this test installs and purges it, so run it where it is not"
fi
if getent passwd walwatch >/dev/null; then
    echo "deleting the walwatch user an earlier run (or purge) left, so the install is seen to create it"
    deluser --system --quiet walwatch
fi
if getent group walwatch >/dev/null; then
    delgroup --system --quiet walwatch
fi
[ ! -e "$STATE" ] || fail "$STATE exists before the install"

# --- cargo-deb -------------------------------------------------------------
if ! cargo deb --version >/dev/null 2>&1; then
    cargo install cargo-deb --locked
    step "cargo install cargo-deb --locked"
fi
cargo deb --version

# --- build -----------------------------------------------------------------
out=$(mktemp -d /tmp/walwatch-deb-lifecycle.XXXXXX)
chmod 0755 "$out"
trap 'rm -rf "$out"' EXIT

if [ -z "$binary" ]; then
    cargo build --release --bin walwatch
    deb_flags=()
else
    # A debug binary carries full debug info: strip it, without a dbgsym
    # package, and compress fast.
    [ -x "$binary" ] || fail "--binary $binary is not an executable"
    export CARGO_TARGET_DIR="$out/target"
    mkdir -p "$CARGO_TARGET_DIR/release"
    cp "$binary" "$CARGO_TARGET_DIR/release/walwatch"
    deb_flags=(--no-dbgsym --strip --fast)
fi
target_dir=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
[ -n "$target_dir" ] || fail "cargo metadata gave no target_directory"
packaging/build-assets.sh "$target_dir/release"
version=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"name":"walwatch","version":"\([^"]*\)".*/\1/p')
[ -n "$version" ] || fail "no walwatch version in cargo metadata"
v1="$version-1"
v2="$version-2"
deb() { # VERSION: builds $out/VERSION/walwatch_VERSION_<arch>.deb
    cargo deb --no-build ${deb_flags[@]+"${deb_flags[@]}"} --deb-version "$1" --output "$out/$1/"
    compgen -G "$out/$1/walwatch_$1_*.deb" >/dev/null || fail "cargo deb made no $out/$1/walwatch_$1_*.deb"
}
deb "$v1"
deb1=$(compgen -G "$out/$v1/walwatch_${v1}_*.deb")
step "built $deb1 (${binary:-release build}, $(du -h "$deb1" | cut -f1))"
dpkg-deb --info "$deb1" | sed -n 's/^ Version: /version /p'
contents=$(dpkg-deb --contents "$deb1" | awk '{print $NF}' | sed 's|^\./|/|')

# --- install ---------------------------------------------------------------
dpkg -i "$deb1" </dev/null
step "dpkg -i $v1"
[ "$(dpkg-query -W -f '${Version} ${Status}' walwatch)" = "$v1 install ok installed" ] ||
    fail "dpkg says: $(dpkg-query -W -f '${Version} ${Status}' walwatch)"
ok "installed $v1"

entry=$(getent passwd walwatch) || fail "the install did not create the walwatch user"
IFS=: read -r _ _ uid _ gecos home shell <<<"$entry"
[ "$uid" -lt 1000 ] || fail "walwatch uid $uid is not a system uid"
[ "$home" = "$STATE" ] || fail "walwatch home is $home"
case "$shell" in */nologin | */false) ;; *) fail "walwatch has a login shell: $shell" ;; esac
# adduser appends the empty room and phone fields: "...monitor,,,".
[ "${gecos%%,*}" = "walwatch PostgreSQL checkpoint monitor" ] || fail "walwatch gecos is $gecos"
[[ " $(id -nG walwatch) " == *" adm "* ]] || fail "walwatch is not in group adm: $(id -nG walwatch)"
ok "user: $entry, groups $(id -nG walwatch)"

# Every file the package should have, from the package's file list and on disk.
man_pages=$("$BIN" man --dir "$out/man" -q && ls "$out/man")
expected=(
    "$BIN" "$CONF" "$UNIT" /usr/lib/sysusers.d/walwatch.conf
    /usr/share/bash-completion/completions/walwatch
    /usr/share/zsh/vendor-completions/_walwatch
    /usr/share/fish/vendor_completions.d/walwatch.fish
    /usr/share/doc/walwatch/README.md /usr/share/doc/walwatch/CHANGELOG.md
    /usr/share/doc/walwatch/copyright /usr/share/doc/walwatch/changelog.Debian.gz
    /usr/share/walwatch/prometheus/walwatch-rules.yml /usr/share/walwatch/prometheus/walwatch-promql-rules.yml
    /usr/share/walwatch/prometheus/walwatch-rules.test.yml /usr/share/walwatch/prometheus/walwatch-promql-rules.test.yml
    /usr/share/walwatch/vector/vector.toml
)
for page in $man_pages; do expected+=("/usr/share/man/man1/$page.gz"); done
# The docs the README links to, each where the README's relative links lead.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
for doc in "$repo"/docs/guide/*.md "$repo"/docs/reference/*.md "$repo"/docs/dev/*.md "$repo"/docs/*.png; do
    expected+=("/usr/share/doc/walwatch/${doc#"$repo"/}")
done
for f in "${expected[@]}"; do
    grep -qx "$f" <<<"$contents" || fail "the package does not ship $f"
    [ -f "$f" ] || fail "$f is not installed"
done
shipped_pages=$(grep -c '^/usr/share/man/man1/.*\.1\.gz$' <<<"$contents")
[ "$shipped_pages" = "$(wc -w <<<"$man_pages")" ] ||
    fail "the package ships $shipped_pages man pages, walwatch man --dir writes $(wc -w <<<"$man_pages")"
ok "${#expected[@]} files shipped and installed, $shipped_pages of them man pages"

[ "$(stat -c '%U:%G %a' "$CONF")" = "root:walwatch 640" ] || fail "$CONF is $(stat -c '%U:%G %a' "$CONF")"
ok "$CONF is root:walwatch 640"
grep -qx "$CONF" /var/lib/dpkg/info/walwatch.conffiles || fail "$CONF is not a conffile"
ok "$CONF is a conffile"

# The completions and pages are those of the installed binary, and work.
cmp -s /usr/share/bash-completion/completions/walwatch <("$BIN" completions bash) || fail "installed bash completion differs"
cmp -s /usr/share/zsh/vendor-completions/_walwatch <("$BIN" completions zsh) || fail "installed zsh completion differs"
cmp -s /usr/share/fish/vendor_completions.d/walwatch.fish <("$BIN" completions fish) || fail "installed fish completion differs"
for page in $man_pages; do
    cmp -s "/usr/share/man/man1/$page.gz" <(gzip -9 -n -c "$out/man/$page") || fail "installed $page.gz differs from walwatch man --dir"
done
registered=$(bash -c 'source /usr/share/bash-completion/completions/walwatch && complete -p walwatch')
[[ "$registered" == *" walwatch" ]] || fail "the bash completion does not register for walwatch: $registered"
man -w walwatch-alerts-silence >/dev/null || fail "man -w walwatch-alerts-silence finds no page"
th=$(zcat /usr/share/man/man1/walwatch-alerts-silence.1.gz | sed -n '/^\.TH /p')
[[ "$th" == ".TH walwatch-alerts-silence 1 "* ]] || fail "walwatch-alerts-silence.1.gz has .TH line '$th'"
ok "completions and pages are the installed binary's; bash completion loads; man -w walwatch-alerts-silence: $(man -w walwatch-alerts-silence)"

# Without systemd as init, postinst records the enable state only.
[ -L "$WANTS" ] || fail "postinst did not enable walwatch.service ($WANTS missing)"
ok "enabled: $WANTS -> $(readlink "$WANTS")"

# --- use it as the walwatch user ---------------------------------------------
runuser -u walwatch -- "$BIN" config check
ok "walwatch config check as walwatch"
# systemd's StateDirectory= makes it at the first start; without systemd as
# init, make it the same way (walwatch:walwatch 0750).
install -d -o walwatch -g walwatch -m 0750 "$STATE"
fixture=tests/fixtures/15-stderr-default-std
cp "$fixture/log/postgresql-2026-11-22_080420.log" "$out/"
chmod 0644 "$out/postgresql-2026-11-22_080420.log"
runuser -u walwatch -- "$BIN" import --cluster main "$out/postgresql-2026-11-22_080420.log"
[ -f "$STATE/walwatch.db" ] || fail "the import did not write the config's store $STATE/walwatch.db"
# The fixture's truth (tests/fixtures/*/truth.json): 28 checkpoints started,
# 28 completed.
rows=$(runuser -u walwatch -- "$BIN" checkpoints --format csv | tail -n +2 | wc -l)
[ "$rows" = 28 ] || fail "walwatch checkpoints lists $rows checkpoints, the fixture has 28"
ok "imported the fixture as walwatch into $STATE/walwatch.db: $rows checkpoints"

# --- edit the config, upgrade ------------------------------------------------
edit="# deb-lifecycle edit $(date +%s)"
echo "$edit" >>"$CONF"
deb "$v2"
deb2=$(compgen -G "$out/$v2/walwatch_${v2}_*.deb")
step "rebuilt as $deb2"
dpkg -i "$deb2" </dev/null
step "dpkg -i $v2 (upgrade)"
[ "$(dpkg-query -W -f '${Version} ${Status}' walwatch)" = "$v2 install ok installed" ] ||
    fail "after the upgrade dpkg says: $(dpkg-query -W -f '${Version} ${Status}' walwatch)"
[ "$(tail -n 1 "$CONF")" = "$edit" ] || fail "the upgrade lost the edit of $CONF"
[ ! -e "$CONF.dpkg-new" ] && [ ! -e "$CONF.dpkg-dist" ] || fail "the upgrade left $CONF.dpkg-new/-dist"
[ "$(stat -c '%U:%G %a' "$CONF")" = "root:walwatch 640" ] || fail "after the upgrade $CONF is $(stat -c '%U:%G %a' "$CONF")"
ok "upgraded to $v2; $CONF kept its edit and root:walwatch 640"
rows=$(runuser -u walwatch -- "$BIN" checkpoints --format csv | tail -n +2 | wc -l)
[ "$rows" = 28 ] || fail "after the upgrade the store lists $rows checkpoints, not 28"
runuser -u walwatch -- "$BIN" config check >/dev/null
ok "the store and config still work after the upgrade"

# An upstream change to the conffile on top of the admin's edit: with
# --force-confold (as unattended upgrades run) dpkg keeps the admin's file
# and puts the package's beside it as .dpkg-dist. The package is $v2
# repacked with a changed config, as a new upstream version would be.
v3="$version-3"
repack="$out/repack"
dpkg-deb -R "$deb2" "$repack"
upstream="# changed upstream in $v3"
echo "$upstream" >>"$repack$CONF"
sed -i "s/^Version: .*/Version: $v3/" "$repack/DEBIAN/control"
(cd "$repack" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum >DEBIAN/md5sums)
dpkg-deb --root-owner-group -Znone -b "$repack" "$out/walwatch_$v3.deb" >/dev/null
dpkg -i --force-confold "$out/walwatch_$v3.deb" </dev/null
[ "$(dpkg-query -W -f '${Version}' walwatch)" = "$v3" ] || fail "not upgraded to $v3"
[ "$(tail -n 1 "$CONF")" = "$edit" ] || fail "the upgrade to $v3 replaced the edited $CONF"
[ "$(tail -n 1 "$CONF.dpkg-dist")" = "$upstream" ] || fail "no $CONF.dpkg-dist with the package's new config"
step "dpkg -i --force-confold $v3 (config changed upstream too)"
ok "upgraded to $v3: the admin's $CONF kept, the package's new one in $CONF.dpkg-dist"

# --- remove, purge -------------------------------------------------------------
dpkg --remove walwatch
[ ! -e "$BIN" ] || fail "remove left $BIN"
[ -f "$CONF" ] || fail "remove deleted the conffile $CONF (only purge may)"
[ -f "$STATE/walwatch.db" ] || fail "remove deleted the store (only purge may)"
ok "removed: binary gone, config and store kept"
dpkg --purge walwatch
step "dpkg --remove, --purge"
status=$(dpkg-query -W -f '${Status}' walwatch 2>/dev/null || true)
[ -z "$status" ] || [ "$status" = "unknown ok not-installed" ] || fail "after purge dpkg says: $status"
for gone in /etc/walwatch "$STATE" "$UNIT" "$WANTS" /var/lib/systemd/deb-systemd-helper-enabled/walwatch.service.dsh-also \
    /var/lib/systemd/deb-systemd-helper-masked/walwatch.service /usr/share/doc/walwatch /usr/share/man/man1/walwatch.1.gz; do
    [ ! -e "$gone" ] && [ ! -L "$gone" ] || fail "purge left $gone"
done
ok "purged: config, state (the store), unit, enable state, docs and man pages gone"
# packaging/deb/postrm keeps the system user: a deleted system user's UID
# could go to a later account that would own whatever it left behind.
getent passwd walwatch >/dev/null || fail "purge deleted the walwatch user (postrm keeps it)"
ok "purge kept the walwatch user, as postrm says"

# The test's own clean-up, not the package's: leave the machine as found.
deluser --system --quiet walwatch
if getent group walwatch >/dev/null; then delgroup --system --quiet walwatch; fi
step "deb lifecycle passed"
