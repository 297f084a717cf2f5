#!/usr/bin/env python3
"""Write data/python_api.txt: the public callables of torch 2.13.0's Python API, one qualified name
per line (torch.X, torch.linalg.X, torch.special.X, torch.fft.X, torch.nn.functional.X,
torch.Tensor.X). A reproducer calls an API by this name only when it is listed; otherwise it calls
the operator itself through torch.ops.aten (`torch.mse_loss` does not exist in Python, although
aten::mse_loss does).

Usage: ~/.cache/sfz/venv/bin/python scripts/extract_python_api.py
"""
from pathlib import Path

import torch
import torch.nn.functional

ROOT = Path(__file__).resolve().parent.parent
MODULES = [("torch", torch), ("torch.linalg", torch.linalg), ("torch.special", torch.special), ("torch.fft", torch.fft),
           ("torch.nn.functional", torch.nn.functional), ("torch.Tensor", torch.Tensor)]

names = set()
for prefix, module in MODULES:
    for name in dir(module):
        if name.startswith("_"):
            continue
        if callable(getattr(module, name, None)):
            names.add(f"{prefix}.{name}")
out = ROOT / "data" / "python_api.txt"
out.write_text(f"# public callables of torch {torch.__version__}, by scripts/extract_python_api.py\n" + "".join(f"{n}\n" for n in sorted(names)))
print(f"{len(names)} names -> {out}")
