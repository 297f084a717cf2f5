#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, fuzz the quickstart spec and
# show what was found. Extra arguments go to `sfz fuzz` (e.g. --time 60s).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
echo "sfz: building (the first build compiles libtorch bindings: a few minutes)" >&2
cargo build --release --quiet --bins
out=${SFZ_OUT:-sfz-out/quickstart}
./target/release/sfz check examples/quickstart.sfz
./target/release/sfz fuzz examples/quickstart.sfz --time 20s --out "$out" "$@"
echo >&2
echo "sfz: findings and reproducers are in $out/ (findings.jsonl, repro/*.py)" >&2
