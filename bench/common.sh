# Shared by the bench scripts (sourced after REPO is set): their messages,
# and the release binary they time.

say() { echo "== $*" >&2; }
die() { echo "error: $*" >&2; exit 1; }

# WALWATCH as given, else this tree's release build (built when needed); exported.
release_walwatch() {
    if [ -z "${WALWATCH:-}" ]; then
        say "cargo build --release"
        (cd "$REPO" && cargo build --release --quiet)
        WALWATCH="${CARGO_TARGET_DIR:-$REPO/target}/release/walwatch"
    fi
    [ -x "$WALWATCH" ] || die "walwatch binary not found at $WALWATCH"
    export WALWATCH
}
