#!/usr/bin/env bash
# Every test: installs what is missing (as scripts/setup.sh does), then runs the whole suite
# against real libtorch and z3. `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --quiet
# A one-shot run gains nothing from incremental artefacts (GiBs on disk).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
cargo test --all-targets "$@"
