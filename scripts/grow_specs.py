#!/usr/bin/env python3
"""Grow specs/inferred/ with the rules pipeline: pick the public ATen operators sfz can generate
inputs for, group them by area, and run `sfz infer --prune` on each group, which writes the
skeletons, validates enumerated candidates against libtorch, and drops the operators whose
inferred spec stays below 90% valid inputs.

Usage: python3 scripts/grow_specs.py [--sfz target/debug/sfz] [--budget 8s] [--jobs 2] [AREA...]
       python3 scripts/grow_specs.py --retry [--best] [--budget 12s] [AREA...]
       python3 scripts/grow_specs.py --new [--budget 10s] [AREA...]
       python3 scripts/grow_specs.py --aten [--budget 6s] [--chunk 40] [AREA...]
       python3 scripts/grow_specs.py --sample N --seed S --tag T [--redo-below TAG] [--budget 30s]

`--retry` runs again, with another seed, the operators of the first pass that ended between
`--lo` (75%) and `--hi` (90%) valid inputs, and appends those that now pass to the area's file;
with `--best`, the operators not kept yet whose best run of any pass ended in that range.
`--sample N` runs the current build once on N operators drawn at random from every operator any
pass tried, figures only: what one `sfz infer` reaches, which the best of every pass overstates
(`measure_rules.py --reach` prints it with a 95% interval; sample71, sample71r and sample73 were
run so, 2026-11-29).
`--new` runs the operators the selection has and data/ops/<area>.txt lacks (after SKIP was
narrowed), adds them to the list and appends those that pass. The first pass rewrites the
areas' files; the others only append.

specs/inferred/ was grown by, in order:
1. the first pass (--budget 8s --jobs 2);
2. `--retry --budget 12s`;
3. `--retry --lo 0.6 --hi 0.75 --seed 11 --tag retry2 --budget 12s` (283 operators);
4. with the enumerator's conditional and promotion candidates and the narrowed SKIP, a release
   build and one worker: `--sfz target/release/sfz --new --seed 0 --tag new --budget 10s
   --jobs 1`, then `--sfz target/release/sfz --retry --best --lo 0.2 --hi 0.9 --seed 13
   --tag retry3 --budget 10s --jobs 1`;
5. torch.transpose_copy regrown alone (`sfz infer --prune --seed 0 --budget 10s --workers 1`,
   figures in data/ops/elementwise-regrow.json) once the enumerator stopped bounding a dimension
   index by another dimension's size: pass 4 had kept `dim0 <= input.shape[dim1]` there.

`--aten` reaches past the public selection: every base operator of libtorch's schemas
(tests/fixtures/schemas-2.13.0.txt) with a skeleton, a CPU kernel and no spec yet, that no
earlier pass tried and ATEN_SKIP does not leave out: in-place forms (`abs_`), backward
operators (their inputs come from the forward through `from`), internal `_x` operators and
`_foreach` lists. Areas: inplace, backward, internal, public. It runs in chunks of `--chunk`
operators, each appended as it ends, so a stopped run keeps what it did.

6. `--aten --sfz target/release/sfz --budget 6s --jobs 2 --seed 0 --tag aten`; then, once
   `sfz infer` wrote backward operators with their forwards as `sfz init` does, `--aten --redo
   --tag wired backward`, and `--retry --best --lo 0 --hi 0.9 --seed 13 --tag retry-aten
   inplace public internal`; then `sfz infer --no-enumerate --oracles` on the four files.
7. with the enumerator of 2026-11 (mm and bmm now reachable): `--sfz target/release/sfz --retry
   --best --lo 0 --hi 0.9 --seed 17 --tag retry4 --budget 8s --jobs 2`, stopped after the first
   backward chunk: 22 kept of 264 tried. The operators it could not reach were written by hand
   in families instead (specs/*.sfz beside nn_layers.sfz).
8. with the search of 2026-11-27 (probes on the round's own cases, 0-d rank tuples, guesses of a
   stuck pass given back): `--sfz target/release/sfz --retry --best --lo 0 --hi 0.9 --seed 19
   --tag retry5 --budget 8s --jobs 2 --measure`, figures only (most of these operators have
   hand-written specs by now): 26 of 474 reached 90%.
9. with probes sharing a z3 context (0f7c713): `--retry --best --lo 0.2 --hi 0.9 --seed 23 --tag
   retry6` and `--lo 0 --hi 0.2 --seed 29 --tag retry7`, both `--budget 8s --jobs 2 --measure`.
10. with the complaints' counts (b542769): `--retry --best --lo 0 --hi 0.9 --seed 31 --tag retry8
   --budget 8s --jobs 2 --measure` (425 operators, 47 min).
11. with the window candidates (b9dcbd4), the 52 pooling and convolution operators of
   data/ops/windows.txt outside this script: `sfz infer --color=never --seed 31 --budget 8s
   --workers 2 --json -o /tmp/w.sfz $(cat data/ops/windows.txt) > data/ops/windows-retry9.json`,
   and the same with `--seed 37 --budget 30s` (the default budget) into windows-budget30.json.
12. the same 8 s run at 583b6eb (a bias candidate, number words in complaints) into
   windows-retry10.json.

The operator lists go to data/ops/<area>.txt (committed, so a run is reproducible), the figures
of each area's run to data/ops/<area>.json.
"""
import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Operators left out: random or uninitialised results, in-place/out/backward forms, internals,
# backends, quantized and sparse layouts, and calls that do not compute on their inputs. The
# functional `*_copy` forms of views (diagonal_copy, t_copy, ...) stay: they compute a copy, as
# do copysign, row_stack, tril/triu_indices, new_zeros/new_ones/new_full, view_as_real/complex,
# conj_physical, unsafe_chunk/split and nonzero_static. index_copy is left out because its
# result with duplicate indices is unspecified, rrelu because it draws its slopes at random when
# training.
SKIP = re.compile(
    r"rand|rrelu|normal|bernoulli|dropout|multinomial|poisson|cauchy|geometric|exponential_|uniform|"
    r"quantiz|^q_|fbgemm|mkldnn|cudnn|miopen|_foreach|resize|^set|storage|sym_|lift|alias|"
    r"detach|pin_memory|^to_|^is_|can_cast|result_type|item|record|retain|backward|empty|^new_(?!zeros|ones|full)|"
    r"sparse|dense|coalesce|(?<!tril_)(?<!triu_)indices$|^indices|^values|crow|ccol|col_ind|row_ind|"
    r"nested|align|refine|rename|native_|cuda|mps|xpu|vulkan|fused|(?<!_)copy(?!sign)|_jvp|_out$|"
    r"^slow_|^thnn|^segment|^choose_qparams|^data$|^output_nr|^requires_grad|^retains|^size$|"
    r"^stride$|^numel|^dim$|^contiguous|^clone$|^resolve|^fake_|^fix_|^affine_grid_generator|"
    r"^infinitely|^batch_norm_|^cudnn|^embedding_renorm|^lstm|^gru|^rnn|^quantized|^mkl|^to$|"
    r"^type_as|^view_as_(?!real|complex)|^record|from_file|^get_|hash_tensor|qscheme|"
    r"promote_types|int_repr|binomial|chalf|^smm$|hspmm|^zero$|stft|^index_copy|^_|_$"
)

# Left out after fuzzing them: their findings were noise, not bugs. combinations, tile and
# repeat legitimately build huge outputs from small inputs (oom, hang); threshold on uint8 with an
# out-of-range threshold raises a conversion error that is an argument error in disguise.
NOISY = {"combinations", "tile", "repeat", "threshold"}

# Left out of `--aten` (narrower than SKIP): random or uninitialised results, inputs sfz does
# not make (quantized, sparse, nested, mkldnn tensors), other backends, operators that change
# storage, metadata or autograd state rather than compute, and PyTorch's own test operators
# (`_test_*`, `_foobar`: no user calls them).
ATEN_SKIP = re.compile(
    r"rand|rrelu|normal|bernoulli|dropout|multinomial|poisson|cauchy|geometric|exponential_|uniform|"
    r"binomial|empty|quantiz|^q_|qscheme|int_repr|fbgemm|mkldnn|onednn|cudnn|miopen|cuda|mps|xpu|"
    r"vulkan|nnpack|sparse|coalesce|crow|ccol|col_ind|row_ind|^indices|^values|nested|resize|^set_|"
    r"storage|^record|^retain|requires_grad|_version|^lift|^detach_|^sym_|^_assert|^_print|"
    r"^_functional_assert|^_make_dep_token|^_fused_|^_amp_|^_cummax_helper|^_cummin_helper|"
    r"fake_quant|^_local_scalar|^_nnz|^_dimI|^_dimV|^_chunk_cat|^_propagate|^_conj_copy|"
    r"_jvp$|^_neg_view|^_to_cpu|^_pin_memory|^is_pinned|^_has_same_storage|^_unsafe_|^_test_|^_foobar$"
)

AREAS = [
    ("fft", lambda n: n.startswith("torch.fft.")),
    ("linalg", lambda n: n.startswith("torch.linalg.") or base(n) in LINALG),
    ("special", lambda n: n.startswith("torch.special.")),
    ("creation", lambda n: base(n).endswith("_like") or base(n) in CREATION),
    ("reductions", lambda n: any(k in base(n) for k in REDUCTION)),
    ("indexing", lambda n: any(k in base(n) for k in INDEXING)),
    ("shape", lambda n: base(n) in SHAPE or any(base(n).startswith(k) for k in ("split", "unbind", "squeeze", "unsqueeze", "flatten", "movedim", "moveaxis", "swap", "flip", "hsplit", "vsplit", "dsplit", "tensor_split", "expand", "permute", "narrow"))),
    ("nn", lambda n: any(k in base(n) for k in NN)),
    ("elementwise", lambda n: True),
]

LINALG = {"mm", "bmm", "mv", "addmm", "addbmm", "baddbmm", "addmv", "addr", "dot", "vdot", "inner", "outer", "ger", "kron", "matmul", "chain_matmul", "cholesky", "cholesky_inverse", "cholesky_solve", "det", "logdet", "slogdet", "inverse", "pinverse", "qr", "svd", "triangular_solve", "lu_solve", "lu_unpack", "matrix_power", "matrix_exp", "trace", "tril", "triu", "diag", "diag_embed", "diagonal", "diagflat", "orgqr", "ormqr", "geqrf", "tensordot", "cross", "cdist", "pdist", "dist", "frobenius_norm", "nuclear_norm", "renorm", "einsum", "block_diag", "cartesian_prod", "trapz", "trapezoid", "cumulative_trapezoid", "vander"}
CREATION = {"arange", "linspace", "logspace", "eye", "full", "zeros", "ones", "tril_indices", "triu_indices", "scalar_tensor", "complex", "polar", "range", "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"}
REDUCTION = ("sum", "mean", "prod", "std", "var", "amax", "amin", "aminmax", "argmax", "argmin", "max", "min", "median", "mode", "norm", "logsumexp", "logcumsumexp", "cumsum", "cumprod", "cummax", "cummin", "all", "any", "count_nonzero", "nansum", "nanmean", "nanmedian", "quantile", "kthvalue", "topk", "sort", "argsort", "msort", "unique", "histc", "bincount", "histogram")
INDEXING = ("gather", "scatter", "index", "take", "masked", "where", "nonzero", "select", "slice", "put", "searchsorted", "bucketize", "embedding", "diagonal_scatter", "argwhere")
SHAPE = {"reshape", "view", "transpose", "t", "cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack", "chunk", "repeat", "repeat_interleave", "tile", "roll", "rot90", "unfold", "ravel", "broadcast_to", "broadcast_tensors", "atleast_1d", "atleast_2d", "atleast_3d", "meshgrid", "as_strided", "fliplr", "flipud", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "adjoint", "mT", "mH", "numpy_T", "matrix_H", "combinations", "triu", "tril"}
NN = ("conv", "pool", "relu", "elu", "gelu", "silu", "mish", "softmax", "softmin", "sigmoid", "tanh", "hardtanh", "hardswish", "hardsigmoid", "hardshrink", "softshrink", "softplus", "threshold", "loss", "entropy", "nll", "norm", "pad", "upsample", "interpolate", "grid_sampler", "affine_grid", "linear", "bilinear", "glu", "prelu", "rrelu", "celu", "selu", "logsigmoid", "pdist", "cosine_similarity", "pairwise_distance", "one_hot", "embedding", "fold", "im2col", "col2im", "ctc", "kl_div", "margin", "hinge", "triplet", "huber", "smooth_l1", "l1_loss", "mse_loss", "poisson_nll")


def base(name):
    return name.rsplit(".", 1)[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sfz", default=str(ROOT / "target/debug/sfz"))
    ap.add_argument("--budget", default="8s")
    ap.add_argument("--jobs", default="2")
    ap.add_argument("--retry", action="store_true")
    ap.add_argument("--lo", type=float, default=0.75, help="with --retry: lowest first-pass valid rate retried")
    ap.add_argument("--hi", type=float, default=0.9, help="with --retry: retried below this valid rate")
    ap.add_argument("--seed", default="7", help="with --retry: the seed of the retry")
    ap.add_argument("--tag", default="retry", help="with --retry or --new: figures go to data/ops/<area>-<tag>.json")
    ap.add_argument("--best", action="store_true",
                    help="with --retry: judge --lo/--hi on the best run of every pass so far, and skip the operators already kept")
    ap.add_argument("--new", action="store_true",
                    help="only the operators the selection has and data/ops/<area>.txt lacks (after SKIP changed); appended")
    ap.add_argument("--aten", action="store_true",
                    help="every base operator with a skeleton that no earlier pass tried (see the docstring)")
    ap.add_argument("--chunk", type=int, default=40, help="with --aten or --retry: operators per `sfz infer` run")
    ap.add_argument("--measure", action="store_true",
                    help="with --retry: record the figures only; append nothing to specs/inferred")
    ap.add_argument("--redo", action="store_true",
                    help="with --aten: run the named areas' listed operators again into emptied files")
    ap.add_argument("--sample", type=int, default=0,
                    help="one run of each of N operators drawn at random from every operator any pass tried; figures only")
    ap.add_argument("--redo-below", metavar="TAG", default="",
                    help="with --sample: the same draw, run again only where pass TAG ended below 90%%")
    ap.add_argument("areas", nargs="*")
    args = ap.parse_args()
    if args.sample:
        return sample(args)
    if args.retry:
        return retry(args)
    if args.aten:
        return aten(args)
    groups = selection(args.sfz)
    if args.new:
        return new(args, groups)
    (ROOT / "data/ops").mkdir(parents=True, exist_ok=True)
    (ROOT / "specs/inferred").mkdir(parents=True, exist_ok=True)
    for area, ops in groups.items():
        if args.areas and area not in args.areas:
            continue
        (ROOT / f"data/ops/{area}.txt").write_text("".join(f"{o}\n" for o in ops))
        out = ROOT / f"specs/inferred/{area}.sfz"
        print(f"{area}: {len(ops)} operators", file=sys.stderr, flush=True)
        infer(args, [], ops, out, ROOT / f"data/ops/{area}.json")
        kept = len(re.findall(r"^api ", out.read_text(), re.M)) if out.exists() else 0
        print(f"{area}: kept {kept} of {len(ops)}", file=sys.stderr, flush=True)


def infer(args, extra, ops, out, figures):
    """Runs `sfz infer --prune` on `ops` into the spec file `out` and writes its per-API JSON
    results to `figures` (an empty list when the run printed none)."""
    cmd = [args.sfz, "infer", "--color=never", "--prune"] + extra + ["--budget", args.budget, "--workers", args.jobs, "--json", "-o", str(out)] + ops
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stderr[-3000:], file=sys.stderr)
    try:
        results = json.loads(r.stdout)
    except ValueError:
        results = []
    figures.write_text(json.dumps(results, indent=1) + "\n")


def selection(sfz):
    """The operators to grow specs for, by area: every public operator not left out by SKIP or
    NOISY and not in a hand-written spec."""
    init = subprocess.run([sfz, "init", "--all"], capture_output=True, text=True, check=True)
    names = re.findall(r"^api ([\w.]+)\(", init.stdout, re.M)
    # The hand-written specs keep their APIs.
    existing = set()
    for f in (ROOT / "specs").glob("*.sfz"):
        existing.update(re.findall(r"^api ([\w.]+)\(", f.read_text(), re.M))
    groups = {area: [] for area, _ in AREAS}
    for n in names:
        if SKIP.search(base(n)) or base(n) in NOISY or n in existing:
            continue
        for area, pred in AREAS:
            if pred(n):
                groups[area].append(n)
                break
    return groups


def kept_in(area):
    target = ROOT / f"specs/inferred/{area}.sfz"
    return set(re.findall(r"^api ([\w.]+)\(", target.read_text(), re.M)) if target.exists() else set()


def runs_of(area):
    """Every result of every pass over the area, first pass first."""
    files = [ROOT / f"data/ops/{area}.json"] + sorted((ROOT / "data/ops").glob(f"{area}-*.json"))
    return [r for f in files if f.exists() for r in json.loads(f.read_text() or "[]")]


def grow(args, area, ops, tag=None):
    """Runs `sfz infer --prune` on `ops` in a scratch file and appends what it kept to the area's
    file; the figures go to data/ops/<area>-<tag>.json."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "grow.sfz"
        infer(args, ["--seed", args.seed], ops, out, ROOT / f"data/ops/{area}-{tag or args.tag}.json")
        gained = out.read_text() if out.exists() else ""
    target = ROOT / f"specs/inferred/{area}.sfz"
    text = target.read_text() if target.exists() else ""
    if gained.strip() and not getattr(args, "measure", False):
        target.write_text(text.rstrip("\n") + "\n\n" + gained)
        subprocess.run([args.sfz, "fmt", str(target)], check=True)
    return len(re.findall(r"^api ", gained, re.M))


def retry(args):
    for area in [a for a, _ in AREAS] + ATEN_AREAS:
        if args.areas and area not in args.areas:
            continue
        if args.best:
            best, kept = {}, kept_in(area)
            for r in runs_of(area):
                skip = ATEN_SKIP if area in ATEN_AREAS else SKIP
                if r["api"] not in kept and base(r["api"]) not in NOISY and not skip.search(base(r["api"])):
                    best[r["api"]] = max(best.get(r["api"], 0.0), r["valid_after"] or 0.0)
            near = [a for a, v in best.items() if args.lo <= v < args.hi]
        else:
            first = ROOT / f"data/ops/{area}.json"
            if not first.exists():
                continue
            near = [r["api"] for r in json.loads(first.read_text() or "[]")
                    if not (r["conclusive"] and (r["valid_after"] or 0) >= 0.9) and args.lo <= (r["valid_after"] or 0) < args.hi]
        if not near:
            continue
        print(f"{area}: retrying {len(near)} operators", file=sys.stderr, flush=True)
        # In chunks, each appended as it ends, so a stopped run keeps what it did.
        kept = 0
        for i in range(0, len(near), args.chunk):
            part = near[i:i + args.chunk]
            tag = args.tag if len(near) <= args.chunk else f"{args.tag}-{i // args.chunk:02}"
            kept += grow(args, area, part, tag)
            print(f"{area}: kept {kept} more of {i + len(part)}", file=sys.stderr, flush=True)


def sample(args):
    """One run of the current build over a uniform random sample of the operators the reach
    table counts (every one any pass tried), so its rate estimates what a single `sfz infer`
    reaches, which the table's best-of-all-passes overstates. Figures only, to
    data/ops/<area>-<tag>-NN.json; `--seed` draws the sample and seeds the runs."""
    import random
    area_of = {}
    for f in sorted((ROOT / "data/ops").glob("*.json")):
        # Earlier samples add no operator, and the draw must be the one they drew.
        if f.name.startswith("fuzz-") or "-sample" in f.name:
            continue
        for r in json.loads(f.read_text() or "[]"):
            area_of.setdefault(r["api"], f.stem.split("-")[0])
    drawn = random.Random(int(args.seed)).sample(sorted(area_of), min(args.sample, len(area_of)))
    # The draw, for measure_rules.py: a run also records the forwards of backward operators.
    # With --redo-below, the operators not run again keep that pass's figure (its first line).
    head = f"# after {args.redo_below}\n" if args.redo_below else ""
    (ROOT / f"data/ops/drawn-{args.tag}.txt").write_text(head + "".join(f"{a}\n" for a in drawn))
    if args.redo_below:
        earlier = {}
        for f in (ROOT / "data/ops").glob(f"*-{args.redo_below}*.json"):
            earlier.update((r["api"], r.get("valid_after") or 0.0) for r in json.loads(f.read_text() or "[]"))
        drawn = [a for a in drawn if earlier.get(a, 0.0) < 0.9]
    args.measure = True
    by_area = {}
    for api in drawn:
        by_area.setdefault(area_of[api], []).append(api)
    for area, ops in sorted(by_area.items()):
        print(f"{area}: {len(ops)} drawn", file=sys.stderr, flush=True)
        for i in range(0, len(ops), args.chunk):
            grow(args, area, ops[i:i + args.chunk], f"{args.tag}-{i // args.chunk:02}")


def new(args, groups):
    for area, ops in groups.items():
        if args.areas and area not in args.areas:
            continue
        listed = ROOT / f"data/ops/{area}.txt"
        known = listed.read_text().split() if listed.exists() else []
        fresh = [o for o in ops if o not in known]
        if not fresh:
            continue
        listed.write_text("".join(f"{o}\n" for o in known + fresh))
        print(f"{area}: {len(fresh)} new operators", file=sys.stderr, flush=True)
        kept = grow(args, area, fresh)
        print(f"{area}: kept {kept} of {len(fresh)}", file=sys.stderr, flush=True)


ATEN_AREAS = ["backward", "inplace", "internal", "public"]


def aten_area(name):
    b = base(name)
    if b.endswith("backward") or "_backward_" in b:
        return "backward"
    if b.endswith("_") and not b.endswith("__"):
        return "inplace"
    if b.startswith("_") and not b.startswith("__"):
        return "internal"
    return "public"


def aten(args):
    """Grows specs for the base operators no earlier pass tried; see the docstring."""
    schemas = (ROOT / "tests/fixtures/schemas-2.13.0.txt").read_text()
    bases = sorted({m for m in re.findall(r"^aten::(\w+)", schemas, re.M)})
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as listing:
        listing.write("".join(f"{b}\n" for b in bases))
        listing.flush()
        init = subprocess.run([args.sfz, "init", "--color=never", "--list", listing.name],
                              capture_output=True, text=True, check=True)
    redo = set(args.areas) if args.redo else set()
    tried = set()
    for f in (ROOT / "data/ops").glob("*.txt"):
        if f.stem not in redo:
            tried.update(f.read_text().split())
    for area in redo:
        (ROOT / f"specs/inferred/{area}.sfz").unlink(missing_ok=True)
    for f in (ROOT / "specs").rglob("*.sfz"):
        # Forwards written beside their backward operators are in the backward area's file.
        if f.stem not in redo:
            tried.update(re.findall(r"^api ([\w.]+)\(", f.read_text(), re.M))
    groups = {}
    # A skeleton is its doc comment and its body; the CPU mark is in the comment before `api`.
    for block in re.split(r"\n(?=///)", "\n" + init.stdout):
        m = re.search(r"^api ([\w.]+)\(", block, re.M)
        if not m or "No CPU kernel" in block:
            continue
        name = m.group(1)
        if name in tried or ATEN_SKIP.search(base(name)) or base(name) in NOISY:
            continue
        groups.setdefault(aten_area(name), []).append(name)
    for area, ops in sorted(groups.items()):
        if args.areas and area not in args.areas:
            continue
        listed = ROOT / f"data/ops/{area}.txt"
        known = listed.read_text().split() if listed.exists() and area not in redo else []
        fresh = [o for o in ops if o not in known]
        listed.write_text("".join(f"{o}\n" for o in known + fresh))
        print(f"{area}: {len(fresh)} operators", file=sys.stderr, flush=True)
        kept = 0
        for i in range(0, len(fresh), args.chunk):
            part = fresh[i:i + args.chunk]
            kept += grow(args, area, part, f"{args.tag}-{i // args.chunk:02}")
            print(f"{area}: kept {kept} of {i + len(part)}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
