#!/usr/bin/env bash
# The evaluation of `sfz hunt script.py` on examples/realworld: traces and hunts the 31 bug
# scripts and their 31 fixes with soft assertions, then hunts the same traced programs with soft
# assertions off (round-robin targets), with random targets, and with random search; prints, per configuration, the bugs found, the mean and
# median time to detection (ms, wall time in sfz) and the false alarms on the fixed versions.
# Usage: scripts/realworld-eval.sh [OUT_DIR] [SEED]
set -euo pipefail
out=${1:-target/realworld-eval}
seed=${2:-1}
sfz=${SFZ:-target/debug/sfz}
rm -rf "$out" && mkdir -p "$out"
set +e
"$sfz" hunt examples/realworld/*.py --json --seed "$seed" --out "$out/soft" >"$out/soft.json" 2>"$out/soft.err"
"$sfz" hunt "$out"/soft/*.sfz --no-soft --json --seed "$seed" --out "$out/nosoft" >"$out/nosoft.json" 2>"$out/nosoft.err"
"$sfz" hunt "$out"/soft/*.sfz --random-targets --json --seed "$seed" --out "$out/targets" >"$out/targets.json" 2>"$out/targets.err"
"$sfz" hunt "$out"/soft/*.sfz --strategy random --json --seed "$seed" --out "$out/random" >"$out/random.json" 2>"$out/random.err"
set -e
python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
for conf in ("soft", "nosoft", "targets", "random"):
    reports = json.load(open(f"{out}/{conf}.json"))
    bugs = [r for r in reports if not r["program"].endswith("_fixed")]
    fixed = [r for r in reports if r["program"].endswith("_fixed")]
    found = [r for r in bugs if r["status"] == "bug"]
    ms = [r["elapsed_ms"] for r in found]
    alarms = [r["program"] for r in fixed if r["status"] != "clean"]
    evals = [r["evals"] for r in found]
    print(f"{conf:>7}: {len(found)}/{len(bugs)} bugs found, mean {statistics.mean(ms) if ms else 0:.1f} ms, "
          f"median {statistics.median(ms) if ms else 0:.1f} ms to detection, "
          f"{statistics.mean(evals) if evals else 0:.1f} evaluations on average; "
          f"{len(alarms)}/{len(fixed)} false alarms on fixed versions {alarms}")
    missed = [r["program"] for r in bugs if r["status"] != "bug"]
    if missed:
        print(f"         missed: {missed}")
PY
