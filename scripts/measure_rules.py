#!/usr/bin/env python3
"""Figures of the rules pipeline, from the runs of scripts/grow_specs.py (data/ops/*.json) and
two fuzzing campaigns over the same operators: schema-only skeletons vs the inferred specs.

Usage: python3 scripts/measure_rules.py [--sfz target/debug/sfz] [--time 120s] [--seed 1]
       python3 scripts/measure_rules.py --reach
"""
import argparse
import json
import re
import statistics
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def inference_figures():
    # Candidate counts and times over every run (first pass and retries); per API, the last
    # run decides whether it was kept.
    per_source = {}
    seconds, last, best, runs = [], {}, {}, 0
    files = sorted(f for f in (ROOT / "data/ops").glob("*.json") if not f.name.startswith("fuzz-"))
    files.sort(key=lambda f: ("-retry" in f.name, f.name))
    for f in files:
        for r in json.loads(f.read_text() or "[]"):
            runs += 1
            for key in ("proposed", "validated", "rejected"):
                for source, n in r.get(key, []):
                    per_source.setdefault(source, {"proposed": 0, "validated": 0, "rejected": 0})[key] += n
            seconds.append(r.get("seconds", 0.0))
            last[r["api"]] = r
            if r.get("conclusive") and (r.get("valid_after") or 0.0) >= 0.9:
                best[r["api"]] = r
    # The run that kept an API is its last passing one (a pass never retries what an earlier one
    # kept; a regrown API replaced its rules); APIs left out after inference (noise, random
    # results) are not counted.
    in_files = set()
    for f in (ROOT / "specs/inferred").glob("*.sfz"):
        in_files.update(re.findall(r"^api ([\w.]+)\(", f.read_text(), re.M))
    kept_runs = [r for r in best.values() if r["api"] in in_files]
    before = [r.get("valid_before") or 0.0 for r in kept_runs]
    after = [r["valid_after"] for r in kept_runs]
    kept = len(kept_runs)
    print(f"operators tried: {len(last)} ({runs} runs), kept (>= 90% valid after inference, in specs/inferred): {kept}")
    for s, c in per_source.items():
        print(f"  candidates from {s}: proposed {c['proposed']}, validated {c['validated']}, rejected {c['rejected']}")
    if seconds:
        print(f"  time per API: mean {statistics.mean(seconds):.1f} s, median {statistics.median(seconds):.1f} s, max {max(seconds):.1f} s")
    if after:
        print(f"  valid inputs during inference (kept APIs): skeleton {100*statistics.mean(before):.1f}% -> inferred {100*statistics.mean(after):.1f}%")


def reach_table():
    """The distribution the ATen-surface issue asks for: per operator any pass of
    scripts/grow_specs.py tried, the best valid-input rate inference ended at."""
    best = {}
    for f in (ROOT / "data/ops").glob("*.json"):
        if f.name.startswith("fuzz-"):
            continue
        for r in json.loads(f.read_text() or "[]"):
            best[r["api"]] = max(best.get(r["api"], 0.0), r.get("valid_after") or 0.0)
    in_specs = set()
    for f in (ROOT / "specs").rglob("*.sfz"):
        in_specs.update(re.findall(r"^api ([\w.]+)\(", f.read_text(), re.M))
    bands = [(0.9, 1.01), (0.75, 0.9), (0.5, 0.75), (0.2, 0.5), (0.0, 0.2)]
    print(f"operators inference tried: {len(best)}; APIs in specs/: {len(in_specs)}")
    for lo, hi in bands:
        n = sum(lo <= v < hi for v in best.values())
        print(f"  best valid after inference in [{lo:.2f}, {min(hi, 1.0):.2f}{']' if hi > 1 else ')'}: {n} ({100 * n / max(len(best), 1):.1f}%)")
    # Operators with no CPU kernel: no input made on this machine can be valid, so `sfz infer`
    # no longer runs them.
    no_cpu = without_cpu_kernel(sorted(best))
    if no_cpu is not None:
        rest = [v for a, v in best.items() if a not in no_cpu]
        k = sum(v >= 0.9 for v in rest)
        print(f"  of which {len(no_cpu)} have no CPU kernel; of the other {len(rest)}: {k} at >= 90% ({100 * k / max(len(rest), 1):.1f}%)")
    # A CPU kernel that only hands the call to another backend: libtorch says so for every input.
    elsewhere = other_backend(best) - (no_cpu or set())
    if elsewhere:
        rest = [v for a, v in best.items() if a not in (no_cpu or set()) | elsewhere]
        k = sum(v >= 0.9 for v in rest)
        print(f"  and {len(elsewhere)} whose CPU kernel only calls another backend's, by libtorch's complaint ({', '.join(sorted(a.removeprefix('torch.') for a in elsewhere))});"
              f" of the other {len(rest)}: {k} at >= 90% ({100 * k / max(len(rest), 1):.1f}%)")
    for drawn in sorted((ROOT / "data/ops").glob("drawn-*.txt")):
        single_pass(drawn, best, no_cpu or set(), elsewhere)


# Asked of torch in sfz's venv as the worker asks libtorch (`sfz_op_cpu_kernel`, and
# `ops::catalog`'s rule for out= forms): an operator none of whose functional overloads has a
# computed CPU kernel.
NO_CPU_QUERY = """
import sys, torch
for api in sys.stdin.read().split():
    name = api.removeprefix("torch.").replace(".", "_")
    packet = getattr(torch.ops.aten, name, None)
    if packet is None:
        continue
    functional = []
    for o in packet.overloads():
        schema = getattr(packet, o)._schema
        if not any(a.kwarg_only and a.alias_info is not None and a.alias_info.is_write for a in schema.arguments):
            functional.append(f"aten::{name}" if o == "default" else f"aten::{name}.{o}")
    try:
        if functional and not any(torch._C._dispatch_has_computed_kernel_for_dispatch_key(f, "CPU") for f in functional):
            print(api)
    except RuntimeError:
        pass
"""


def without_cpu_kernel(apis):
    """The APIs whose operator has no CPU kernel; None without sfz's venv."""
    python = Path.home() / ".cache/sfz/venv/bin/python"
    if not python.exists():
        return None
    out = subprocess.run([str(python), "-c", NO_CPU_QUERY], input="\n".join(apis), capture_output=True, text=True)
    return set(out.stdout.split()) if out.returncode == 0 else None


# What libtorch says when the CPU kernel it found hands the call to a kernel of another backend
# (a CUDA, privateuse1 or sparse one): no input made on this machine can be valid.
ELSEWHERE = re.compile(r"with arguments from the 'CPU' backend|operator for privateuse1 backends|tensor backend other than CPU|"
                       r"without ATen_cuda library|Cannot access accelerator device when none is available")


def other_backend(best):
    """The APIs below 90% whose every recorded run ended at 0% valid with libtorch's complaint
    that only another backend runs the operator (`ELSEWHERE`)."""
    seen, other = {}, set()
    for f in (ROOT / "data/ops").glob("*.json"):
        if f.name.startswith("fuzz-"):
            continue
        for r in json.loads(f.read_text() or "[]"):
            c = r.get("complaint")
            said = bool(c) and bool(ELSEWHERE.search(c[0])) and not (r.get("valid_after") or 0.0)
            seen.setdefault(r["api"], []).append(said)
    for api, says in seen.items():
        if best.get(api, 0.0) < 0.9 and any(says):
            other.add(api)
    return other


def single_pass(drawn, best, no_cpu, elsewhere=frozenset()):
    """What one run reaches, from `grow_specs.py --sample`: the share of a uniform random draw
    of the operators above whose one run of that pass ended at >= 90% valid, with a 95% Wilson
    interval, beside the same draw's best-of-all-passes share."""
    tag = drawn.stem.split("-", 1)[1]
    lines = drawn.read_text().splitlines()
    # `# after T`: this pass ran again only the operators pass T left below 90%.
    after = [l.split()[-1] for l in lines if l.startswith("# after ")]
    ops = [l for l in lines if l and not l.startswith("#")]
    runs = {}
    for t in after + [tag]:
        for f in (ROOT / "data/ops").glob(f"*-{t}-*.json"):
            for r in json.loads(f.read_text() or "[]"):
                runs[r["api"]] = r.get("valid_after") or 0.0
    done = [o for o in ops if o in runs]
    if not done:
        return
    n, k = len(done), sum(runs[o] >= 0.9 for o in done)
    p = k / n
    lo, hi = wilson(k, n)
    b = sum(best.get(o, 0.0) >= 0.9 for o in done)
    print(f"one pass ({tag}{''.join(' after ' + t for t in after)}) over {n} of {len(ops)} drawn operators: {k} at >= 90% valid ({100 * p:.1f}%, "
          f"95% interval {100 * lo:.1f}-{100 * hi:.1f}%); the same operators' best of all passes: {b} ({100 * b / n:.1f}%)")
    cpu = [o for o in done if o not in no_cpu]
    if len(cpu) < n:
        kc = sum(runs[o] >= 0.9 for o in cpu)
        lo, hi = wilson(kc, len(cpu))
        print(f"  without the {n - len(cpu)} with no CPU kernel: {kc} of {len(cpu)} ({100 * kc / len(cpu):.1f}%, 95% interval {100 * lo:.1f}-{100 * hi:.1f}%)")
    here = [o for o in cpu if o not in elsewhere]
    if len(here) < len(cpu):
        kh = sum(runs[o] >= 0.9 for o in here)
        lo, hi = wilson(kh, len(here))
        print(f"  and without the {len(cpu) - len(here)} whose CPU kernel only calls another backend's: {kh} of {len(here)} ({100 * kh / len(here):.1f}%, 95% interval {100 * lo:.1f}-{100 * hi:.1f}%)")


def wilson(k, n, z=1.96):
    """The 95% Wilson interval of a share k of n."""
    p = k / n
    mid, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return mid - half, mid + half


def fuzz(sfz, paths, time, seed, out):
    r = subprocess.run([sfz, "fuzz", "--json", "--time", time, "--seed", str(seed), "--out", str(out)] + [str(p) for p in paths], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stderr[-2000:])
        return None
    return json.loads(r.stdout)


def summary(name, s):
    rates = [a["valid_rate"] for a in s["apis"] if a["executions"] > 0]
    print(f"  {name}: {len(s['apis'])} APIs, {s['executions']} executions in {s['seconds']:.0f} s, mean valid rate {100*statistics.mean(rates):.1f}% "
          f"(median {100*statistics.median(rates):.1f}%), findings {s['findings']} {s.get('findings_by_oracle', {})}, skipped {len(s['skipped'])}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sfz", default=str(ROOT / "target/debug/sfz"))
    ap.add_argument("--time", default="120s")
    ap.add_argument("--seed", default="1")
    ap.add_argument("--reach", action="store_true", help="only the reach table, from data/ops/*.json; no fuzzing")
    args = ap.parse_args()
    inference_figures()
    reach_table()
    if args.reach:
        return
    inferred = sorted((ROOT / "specs/inferred").glob("*.sfz"))
    names = []
    for f in inferred:
        names += re.findall(r"^api ([\w.]+)\(", f.read_text(), re.M)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        skel = subprocess.run([args.sfz, "init"] + names, capture_output=True, text=True).stdout
        (tmp / "skeletons.sfz").write_text(skel)
        print(f"fuzzing {len(names)} operators for {args.time} each way (seed {args.seed}):")
        for name, paths in (("skeletons", [tmp / "skeletons.sfz"]), ("inferred", inferred)):
            s = fuzz(args.sfz, paths, args.time, args.seed, tmp / f"out-{name}")
            if s:
                summary(name, s)
                (ROOT / f"data/ops/fuzz-{name}.json").write_text(json.dumps(s, indent=1) + "\n")


if __name__ == "__main__":
    main()
