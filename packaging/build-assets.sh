#!/bin/sh
# Generates the files the packages ship but the repository does not hold:
# the shell completions and the manual pages, from the release binary
# itself (`walwatch completions`, `walwatch man --dir`), so they always
# describe the binary they are packaged with.
#
#     cargo build --release && packaging/build-assets.sh && cargo deb --no-build
#
# They go beside the binary, into <target dir>/release/assets/: cargo-deb
# (and cargo-generate-rpm) resolve the metadata's `target/release/` prefix
# to the real target directory (CARGO_TARGET_DIR included), as for
# target/release/walwatch. Usage: packaging/build-assets.sh [RELEASE_DIR]
# (default: ${CARGO_TARGET_DIR:-target}/release; the binary run is
# RELEASE_DIR/walwatch, the files go to RELEASE_DIR/assets).
set -eu

# Like cargo: a relative CARGO_TARGET_DIR is relative to where we run.
release="${1:-${CARGO_TARGET_DIR:-$(dirname "$0")/../target}/release}"
bin="$release/walwatch"
out="$release/assets"

if [ ! -x "$bin" ]; then
    echo "$bin is missing: run cargo build --release first" >&2
    exit 1
fi

rm -rf "$out"
mkdir -p "$out/completions" "$out/man"
"$bin" completions bash >"$out/completions/walwatch.bash"
"$bin" completions zsh >"$out/completions/_walwatch"
"$bin" completions fish >"$out/completions/walwatch.fish"
"$bin" -q man --dir "$out/man"
# Debian policy 12.1 (and Fedora's): manual pages are installed gzipped.
# -n: no name or time stamp in the header, so a rebuild is byte-identical.
gzip -9 -n "$out"/man/*.1
echo "$(ls "$out"/man | wc -l) manual pages and 3 completion scripts in $out"
