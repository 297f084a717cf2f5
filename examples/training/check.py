"""check.py: verify the training evaluation set without sfz.

For every pair `NN_name.py` / `NN_name_fixed.py` in this folder, run the script (in this process,
with runpy) under a TorchFunctionMode that looks at every tensor each torch call returns, and
report whether a NaN or an infinity appeared in the forward computation. The scripts are plain;
the checker moves their trainable weights from outside by patching `torch.optim.Optimizer`:
when the script builds its optimizer, the parameters it was given are changed, and watching
starts. The trials:

  init        the script as written, every step (the bug should not show yet)
  train       the learning rate x100, every step of the script's own loop
  scale C     every parameter multiplied by C (0, 0.01, 10, 100, -1, -10, -100)
  noise C/S   every parameter replaced by N(0, 1) * C * its initial scale (max |p|, or 1 when
              the parameter starts at zero), C in 3, 10, 30, 100, seeds S 0..3

`scale` and `noise` watch the forward pass up to the first `loss.backward()`, as sfz records it;
`init` and `train` watch every forward pass (ops run inside `optimizer.step()` are not looked
at). A bug script passes when some trial other than `init` reaches NaN/INF; a fixed script
passes when no trial does. Each script is also run once as written in a subprocess (exit status
and wall time, beside the time Python takes to import torch and build an optimizer, which
imports torch._dynamo: most of each script's time); `--quick` skips that.

Usage: python examples/training/check.py [--quick] [-v] [NAME_FILTER]
"""
import difflib
import glob
import linecache
import os
import runpy
import subprocess
import sys
import time

import torch
from torch.overrides import TorchFunctionMode

HERE = os.path.dirname(os.path.abspath(__file__))

SCALES = (0.0, 0.01, 10.0, 100.0, -1.0, -10.0, -100.0)
NOISES = (3.0, 10.0, 30.0, 100.0)
SEEDS = range(4)


class _Stop(BaseException):
    """Ends a script once the watched forward pass is over (its first backward())."""


def _tensors(out):
    if isinstance(out, torch.Tensor):
        yield out
    elif isinstance(out, (tuple, list)):
        for o in out:
            yield from _tensors(o)


class Watch(TorchFunctionMode):
    """Records the first call whose output holds a NaN or an infinity, and how many did."""

    def __init__(self, script, first_step_only):
        super().__init__()
        self.script = script
        self.first_step_only = first_step_only
        self.active = False  # opened once the optimizer is built (and the weights moved)
        self.paused = 0  # inside optimizer.step() / zero_grad()
        self.hits = 0
        self.first = None  # (line, op name, "nan"/"inf")

    def _line(self):
        f = sys._getframe(2)
        while f is not None:
            if os.path.abspath(f.f_code.co_filename) == self.script:
                return f.f_lineno
            f = f.f_back
        return 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", repr(func))
        if name == "backward" and self.active and self.first_step_only:
            raise _Stop()
        out = func(*args, **kwargs)
        if self.active and not self.paused and name not in ("__get__", "__set__"):
            for t in _tensors(out):
                if not (t.is_floating_point() or t.is_complex()) or t.numel() == 0:
                    continue
                finite = torch.isfinite(t)
                if not bool(finite.all()):
                    self.hits += 1
                    if self.first is None:
                        kind = "nan" if bool(torch.isnan(t).any()) else "inf"
                        self.first = (self._line(), name, kind)
                    break
        return out


def _initial_scale(p):
    m = float(p.detach().abs().max()) if p.numel() else 0.0
    return m if m > 0 else 1.0


def run_trial(script, trial):
    """Run `script` once under `trial`; returns the Watch (hits, first) and an error or None."""
    kind, c, seed = trial
    watch = Watch(script, first_step_only=kind in ("scale", "noise"))
    original_init = torch.optim.Optimizer.__init__

    def patched_init(self, params, defaults):
        original_init(self, params, defaults)
        with torch.no_grad():
            for group in self.param_groups:
                if kind == "train":
                    group["lr"] = group["lr"] * 100
                for i, p in enumerate(group["params"]):
                    if kind == "scale":
                        p.mul_(c)
                    elif kind == "noise":
                        n = len(group["params"])
                        g = torch.Generator().manual_seed(1000 * seed + 17 * n + i)
                        r = _initial_scale(p)
                        p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * (c * r))
        step, zero_grad = self.step, self.zero_grad

        def watched_step(*a, **k):
            watch.paused += 1
            try:
                return step(*a, **k)
            finally:
                watch.paused -= 1

        def watched_zero_grad(*a, **k):
            watch.paused += 1
            try:
                return zero_grad(*a, **k)
            finally:
                watch.paused -= 1

        self.step, self.zero_grad = watched_step, watched_zero_grad
        watch.active = True

    torch.optim.Optimizer.__init__ = patched_init
    error = None
    try:
        with watch:
            runpy.run_path(script, run_name="__main__")
    except _Stop:
        pass
    except Exception as e:  # a script that fails under a trial is reported, not fatal
        error = f"{type(e).__name__}: {e}"
    finally:
        torch.optim.Optimizer.__init__ = original_init
    return watch, error


def trials():
    yield ("init", None, None)
    yield ("train", None, None)
    for c in SCALES:
        yield ("scale", c, None)
    for c in NOISES:
        for s in SEEDS:
            yield ("noise", c, s)


def label(trial):
    kind, c, s = trial
    if kind == "scale":
        return f"scale {c:g}"
    if kind == "noise":
        return f"noise {c:g}/{s}"
    return kind


def check_script(script):
    results = []
    for trial in trials():
        watch, error = run_trial(script, trial)
        results.append((trial, watch, error))
    return results


def changed_lines(bug, fixed):
    a = open(bug).read().splitlines()
    b = open(fixed).read().splitlines()
    out = set()
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if tag != "equal" and i1 > 0:  # line 1 (the docstring's title) always differs
            out.update(range(i1 + 1, max(i2, i1 + 1) + 1))
    return out


def run_startup():
    t0 = time.time()
    code = "import torch; torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)"
    subprocess.run([sys.executable, "-c", code], capture_output=True)
    return time.time() - t0


def run_as_written(script):
    t0 = time.time()
    p = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=60)
    tail = p.stderr.strip().splitlines()[-1:] if p.returncode else []
    return p.returncode, time.time() - t0, tail


def main(argv):
    quick = "--quick" in argv
    verbose = "-v" in argv
    names = [a for a in argv if not a.startswith("-")]
    bugs = sorted(
        f for f in glob.glob(os.path.join(HERE, "[0-9][0-9]_*.py")) if not f.endswith("_fixed.py")
    )
    if names:
        bugs = [b for b in bugs if any(n in os.path.basename(b) for n in names)]
    torch.set_num_threads(1)
    startup = 0.0
    if not quick:  # warm the file cache, then time the start-up every script pays
        startup = min(run_startup() for _ in range(3))
    slowest = 0.0
    ok = True
    n_found = n_clean = n_init_clean = 0
    for bug in bugs:
        fixed = bug[:-3] + "_fixed.py"
        name = os.path.basename(bug)[:-3]
        if not os.path.exists(fixed):
            print(f"{name}: no fixed version")
            ok = False
            continue
        rb = check_script(bug)
        rf = check_script(fixed)
        errors = [(label(t), e) for t, _, e in rb + rf if e]
        init_clean = rb[0][1].hits == 0
        reached = [(t, w) for t, w, _ in rb[1:] if w.hits]
        dirty = [(t, w) for t, w, _ in rf if w.hits]
        found = bool(reached)
        clean = not dirty
        n_found += found
        n_clean += clean
        n_init_clean += init_clean
        where = ""
        if reached:
            # The first forward pass of a moved-weights trial if there is one (a `train` trial's
            # first hit may come from weights already made NaN by an earlier step).
            first = next((w for t, w in reached if t[0] != "train"), reached[0][1])
            line, op, k = first.first
            fix_lines = sorted(changed_lines(bug, fixed))
            code = linecache.getline(bug, line).strip()
            where = (f"first {k} from {op} at line {line}: {code}"
                     f"   [the fix edits line{'s' if len(fix_lines) > 1 else ''} "
                     f"{', '.join(map(str, fix_lines))}]")
        print(
            f"{name:34s} bug: NaN/INF reached {'yes' if found else 'NO '} "
            f"({len(reached):2d}/{len(rb) - 1} trials, "
            f"clean as written: {'yes' if init_clean else 'no'})"
            f"   fixed: clean {'yes' if clean else 'NO '}"
        )
        if where:
            print(f"{'':34s}   {where}")
        if verbose and reached:
            print(f"{'':34s}   bug trials reaching it: {', '.join(label(t) for t, _ in reached)}")
        for t, w in dirty:
            line, op, k = w.first
            print(f"{'':34s}   FIXED NOT CLEAN under {label(t)}: {k} from {op} at line {line}: "
                  f"{linecache.getline(fixed, line).strip()}")
        for t, e in errors:
            print(f"{'':34s}   error under {t}: {e}")
        if not quick:
            for s in (bug, fixed):
                rc, secs, tail = run_as_written(s)
                slowest = max(slowest, secs)
                if rc != 0 or secs - startup > 1.0:
                    ok = False
                    print(f"{'':34s}   {os.path.basename(s)} as written: "
                          f"exit {rc} in {secs:.1f}s {tail}")
        ok = ok and found and clean and not errors
    print()
    print(f"{len(bugs)} pairs: NaN/INF reached in {n_found} bug scripts, "
          f"{n_clean} fixed scripts clean, "
          f"{n_init_clean} bug scripts clean as written"
          + ("" if quick else f"; as written, every script exits 0 "
             f"(slowest {slowest:.1f} s, of which {startup:.1f} s is Python, torch and optimizer "
             f"start-up)" if ok else ""))
    print("OK" if ok else "NOT OK")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
