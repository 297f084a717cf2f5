#!/usr/bin/env bash
# What the differential oracles cost a campaign: executions per second with no check at all
# (`--check-share none`, crash-only), with the default budget (checked time at most 0.75 of the
# unchecked time; the rest of the cores go to shrinking and confirming findings) and with every
# case checked (`all`). The three runs are interleaved ROUNDS times on the same
# specs and seed, so that a noisy machine slows all of them alike; the ratios are to crash-only
# within each round.
#
#   scripts/oracle-cost.sh [SPECS] [SECONDS] [ROUNDS]      (default: specs/ 30 3)
set -euo pipefail
cd "$(dirname "$0")/.."
specs=${1:-specs}
seconds=${2:-30}
rounds=${3:-3}
sfz=./target/release/sfz
[ -x "$sfz" ] || cargo build --quiet --release --bins
python=$(command -v python3)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

rate() { # share (or `default`) -> "execs_per_second checked_cases"
    local share=()
    [ "$1" = default ] || share=(--check-share "$1")
    "$sfz" fuzz "$specs" --time "${seconds}s" --seed 1 --json "${share[@]}" --out "$out/$1" 2>/dev/null |
        "$python" -c 'import json,sys; d=json.load(sys.stdin); print(d["execs_per_second"], sum(c.get("cases", 0) for c in d.get("checks", {}).values()))'
}

echo "| round | crash-only execs/s | default execs/s | ratio | checked cases | all execs/s | ratio | checked cases |"
echo "|---|---|---|---|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
    read -r none _ < <(rate none)
    read -r one one_checked < <(rate default)
    read -r all all_checked < <(rate all)
    "$python" -c "print(f'| $r | {$none:,.0f} | {$one:,.0f} | {$one/$none:.2f} | {$one_checked:,} | {$all:,.0f} | {$all/$none:.2f} | {$all_checked:,} |')"
done
