#!/usr/bin/env python3
"""Extract the documentation of torch's public operators from the installed torch package into
data/torch_docs.json, so that `sfz suggest` can put an API's documentation in its prompt offline.

Usage: ~/.cache/sfz/venv/bin/python scripts/extract_docs.py [OUT]

Keys are Python paths (torch.sum, torch.nn.functional.relu, torch.linalg.inv, ...); values are
the docstrings, whitespace-normalised and cut to MAX_CHARS (the signature, the description and
the arguments come first in torch's docstrings, which is what a prompt needs).
"""
import inspect
import json
import re
import sys

import torch
import torch.nn.functional as F

MAX_CHARS = 4000


def clean(doc):
    doc = inspect.cleandoc(doc)
    # Drop the examples and the references: long and of little use for constraints.
    for cut in ("\nExample::", "\nExamples::", "\nExample:", "\n.. _", "\nReference"):
        i = doc.find(cut)
        if i > 0:
            doc = doc[:i]
    doc = re.sub(r"[ \t]+", " ", doc)
    doc = re.sub(r"\n{3,}", "\n\n", doc).strip()
    return doc[:MAX_CHARS]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "data/torch_docs.json"
    modules = [
        ("torch.nn.functional", F),
        ("torch.linalg", torch.linalg),
        ("torch.special", torch.special),
        ("torch.fft", torch.fft),
        ("torch", torch),
    ]
    docs = {}
    for prefix, module in modules:
        for name in sorted(dir(module)):
            if name.startswith("_"):
                continue
            obj = getattr(module, name, None)
            if not callable(obj) or inspect.isclass(obj):
                continue
            doc = getattr(obj, "__doc__", None)
            if not doc or len(doc) < 40:
                continue
            docs[f"{prefix}.{name}"] = clean(doc)
    docs = {"torch_version": torch.__version__, "docs": dict(sorted(docs.items()))}
    with open(out, "w") as f:
        json.dump(docs, f, indent=0, ensure_ascii=True)
        f.write("\n")
    print(f"{len(docs['docs'])} docstrings from torch {torch.__version__} -> {out}")


if __name__ == "__main__":
    main()
