#!/usr/bin/env bash
# Line coverage of libtorch for one sfz run. Needs a libtorch 2.13.0 built with clang source-based
# coverage and runtime counter relocation (docs/coverage.md says how), llvm-profdata and llvm-cov.
#
#   scripts/libtorch-coverage.sh LIBTORCH_COV_DIR SFZ_FUZZ_ARGS...
#   e.g. scripts/libtorch-coverage.sh ~/libtorch-cov specs/ --time 10m --seed 1
#
# Environment: SFZ_COVERAGE_DIR (default sfz-coverage), SFZ_COVERAGE_FILTER (a path regex, default
# aten/src/ATen/native/), LLVM_PROFDATA and LLVM_COV (default: from PATH).
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 LIBTORCH_COV_DIR SFZ_FUZZ_ARGS..." >&2
    exit 2
fi
libtorch=$(cd "$1" && pwd)
shift
root=$(cd "$(dirname "$0")/.." && pwd)
out=${SFZ_COVERAGE_DIR:-sfz-coverage}
filter=${SFZ_COVERAGE_FILTER:-aten/src/ATen/native/}
profdata=${LLVM_PROFDATA:-llvm-profdata}
cov=${LLVM_COV:-llvm-cov}
lib="$libtorch/lib/libtorch_cpu.so"

[ -f "$lib" ] || { echo "error: $lib not found: LIBTORCH_COV_DIR must hold lib/libtorch_cpu.so" >&2; exit 1; }
if ! nm -D "$lib" 2>/dev/null | grep -q __llvm_profile_runtime && ! nm "$lib" 2>/dev/null | grep -q __llvm_profile; then
    echo "error: $lib is not instrumented (no __llvm_profile symbols); build it as docs/coverage.md says" >&2
    exit 1
fi
command -v "$profdata" >/dev/null || { echo "error: $profdata not found (set LLVM_PROFDATA)" >&2; exit 1; }
command -v "$cov" >/dev/null || { echo "error: $cov not found (set LLVM_COV)" >&2; exit 1; }

# An environment LIBTORCH wins over .cargo/config.toml's [env] entry (which is not forced).
echo "building sfz against $libtorch into target/coverage/ ..."
(cd "$root" && LIBTORCH="$libtorch" LIBTORCH_CXX11_ABI=1 cargo build --release --target-dir target/coverage --bins)

rm -rf "$out" && mkdir -p "$out"
# %c: continuous mode, so SIGKILLed and crashed workers keep their counters; %p: one file per process.
echo "fuzzing ..."
LLVM_PROFILE_FILE="$(cd "$out" && pwd)/%c%p.profraw" "$root/target/coverage/release/sfz" fuzz --out "$out/findings" "$@"

shopt -s nullglob
raws=("$out"/*.profraw)
[ ${#raws[@]} -gt 0 ] || { echo "error: no profile was written; is the worker linked against $lib?" >&2; exit 1; }
"$profdata" merge -sparse "${raws[@]}" -o "$out/merged.profdata"
echo
echo "line coverage of $(basename "$lib") under $filter (${#raws[@]} worker profiles):"
"$cov" report "$lib" -instr-profile="$out/merged.profdata" | awk -v f="$filter" 'NR <= 2 || $0 ~ f || /^TOTAL/'
