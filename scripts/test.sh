#!/usr/bin/env bash
# Every test: installs what is missing (as scripts/setup.sh does), then runs the whole suite
# against real libtorch and z3. `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --quiet
# A one-shot run gains nothing from incremental artefacts (GiBs on disk).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
# Style and lints first: they fail in seconds where the suite takes minutes.
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    rustup component add rustfmt clippy
fi
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace --all-targets --no-fail-fast "$@"
