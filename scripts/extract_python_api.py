#!/usr/bin/env python3
"""Write data/python_api.txt: the public callables of torch 2.13.0's Python API, one qualified name
per line (torch.X, torch.linalg.X, torch.special.X, torch.fft.X, torch.nn.functional.X,
torch.Tensor.X). A reproducer calls an API by this name only when it is listed; otherwise it calls
the operator itself through torch.ops.aten (`torch.mse_loss` does not exist in Python, although
aten::mse_loss does).

A function written in Python has its parameters after its name, `*` marking where the keyword-only
ones start: `torch.nn.functional.batch_norm(input, running_mean, running_var, weight, bias, ...)`.
Its parameters may differ from the ATen schema its name implies (aten::batch_norm takes `weight`
second), and a reproducer calls it by name only when the spec's parameters are its own. A `*args`
parameter is written with its star (`torch.block_diag(*tensors)`): the parameters after it are
keyword-only, and a spec must declare it variadic (`*tensors: Tensor[]`) to be called by name.
Builtins (bound from the schema) and functions taking `**kwargs` have no list.

Usage: ~/.cache/sfz/venv/bin/python scripts/extract_python_api.py
"""
import inspect
from pathlib import Path

import torch
import torch.nn.functional

ROOT = Path(__file__).resolve().parent.parent
MODULES = [("torch", torch), ("torch.linalg", torch.linalg), ("torch.special", torch.special), ("torch.fft", torch.fft),
           ("torch.nn.functional", torch.nn.functional), ("torch.Tensor", torch.Tensor)]


def params(f):
    """The parameters of a function written in Python, or None (a builtin, or one taking **kwargs)."""
    if not inspect.isfunction(f):
        return None
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return None
    out, star = [], False
    for p in sig.parameters.values():
        if p.kind == p.VAR_KEYWORD:
            return None
        if p.kind == p.VAR_POSITIONAL:
            out.append("*" + p.name)
            star = True
            continue
        if p.kind == p.KEYWORD_ONLY and not star:
            out.append("*")
            star = True
        out.append(p.name)
    return out


lines = {}
for prefix, module in MODULES:
    for name in dir(module):
        if name.startswith("_"):
            continue
        f = getattr(module, name, None)
        if callable(f):
            ps = params(f)
            lines[f"{prefix}.{name}"] = "" if ps is None else "(" + ", ".join(ps) + ")"
out = ROOT / "data" / "python_api.txt"
out.write_text(f"# public callables of torch {torch.__version__}, by scripts/extract_python_api.py\n" + "".join(f"{n}{p}\n" for n, p in sorted(lines.items())))
print(f"{len(lines)} names -> {out}")
