#!/usr/bin/env bash
# Builds picket's Debian package: the release binary, its man page and shell completions
# (generated from the command line definition by `picket generate`), then `cargo deb
# --no-build` with [package.metadata.deb] of Cargo.toml. Prints the .deb's path last.
#
# Needs cargo-deb (`cargo install cargo-deb --locked`). Honours CARGO_TARGET_DIR.
# Usage: scripts/package.sh [cargo-deb options]     (from anywhere)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo deb --version >/dev/null 2>&1; then
    echo "package: cargo-deb is missing: cargo install cargo-deb --locked" >&2
    exit 1
fi

# PICKET_SKIP_BUILD=1: package the binary already in the target directory (tests/packaging.rs,
# which runs on the binary `cargo test --release` built).
if [ "${PICKET_SKIP_BUILD:-0}" != 1 ]; then
    cargo build --release --locked --bin picket
fi
target_dir="${CARGO_TARGET_DIR:-target}"
bin="$target_dir/release/picket"
assets="$target_dir/release/dist"
rm -rf "$assets"
mkdir -p "$assets/completions"

"$bin" generate man --out "$assets"
gzip -9n -f "$assets/picket.1"
for shell in bash zsh fish; do
    "$bin" generate "$shell" --out "$assets/completions"
done

cargo deb --no-build --strip "$@" | tail -n 1
