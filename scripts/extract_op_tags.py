#!/usr/bin/env python3
"""Write the operator classes the precision oracle reads (data/pointwise_ops.txt and
data/blas_lapack_ops.txt), from torch 2.13.0's operator tags and a list of BLAS and LAPACK
operators. What each class is held to (docs/ORACLES.md, "What the float64 reference judges"):

- pointwise (tagged `pointwise`): close to the exact result of the exact input, however
  ill-conditioned the point;
- BLAS and LAPACK (products, factorizations, solvers): backward stable, and only while the
  products of input elements are representable, since these libraries do not scale them;
- anything else (reductions, normalizations, ...): backward stable at every magnitude.

Usage: ~/.cache/sfz/venv/bin/python scripts/extract_op_tags.py
"""
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent

# Operators whose CPU kernels are BLAS or LAPACK calls (or compositions of them: a recurrent
# cell's gates are two linear maps) without scaling, besides torch.linalg's own. Norms are not here: they are reductions, expected to
# survive large values.
PRODUCTS = """
mm bmm matmul addmm addbmm baddbmm addmv addr mv dot vdot inner tensordot einsum chain_matmul linear bilinear
convolution _convolution conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d conv_tbc
inverse det logdet slogdet qr geqrf orgqr ormqr svd cholesky cholesky_inverse cholesky_solve triangular_solve
lu_solve lu_unpack _lu_with_info matrix_exp matrix_power pinverse
rnn_tanh_cell rnn_relu_cell gru_cell lstm_cell rnn_tanh rnn_relu gru lstm
_addmm_activation _int_mm _weight_int8pack_mm _trilinear _convolution_mode _slow_conv2d_forward _slow_conv2d_backward
thnn_conv2d slow_conv3d slow_conv3d_forward slow_conv_dilated2d slow_conv_dilated3d slow_conv_transpose2d
slow_conv_transpose3d conv_depthwise3d _conv_depthwise2d mkldnn_convolution _nnpack_spatial_convolution
cross linalg_cross
""".split()
# The kernels behind those (`slow_conv3d_forward` is what conv3d runs on the CPU) and cross,
# whose a_j * b_k - a_k * b_j products are unscaled too.


def tagged(packet, tag):
    return any(tag in getattr(packet, o).tags for o in packet.overloads())


base = {s.name.split("::", 1)[1] for s in torch._C._jit_get_all_schemas() if s.name.startswith("aten::")}
pointwise, products = set(), set()
for name in base:
    packet = getattr(torch.ops.aten, name, None)
    if packet is None:
        continue
    if tagged(packet, torch.Tag.pointwise):
        pointwise.add(name)
    linalg = name.startswith(("linalg_", "_linalg_")) and "norm" not in name and name not in ("linalg__powsum", "linalg_diagonal", "linalg_vander")
    if (linalg or name in PRODUCTS) and not tagged(packet, torch.Tag.reduction):
        products.add(name)
# Elementwise kernels torch does not tag: the gradients of the gamma and Dirichlet samplers
# (one element of each input makes one of the result) and gelu's twice-differentiable backward.
pointwise |= {"_standard_gamma_grad", "_dirichlet_grad", "infinitely_differentiable_gelu_backward"}
# A backward of a BLAS or LAPACK operator multiplies by the same factors without scaling them
# (`matrix_exp_backward` is a matrix exponential of a block matrix).
products |= {name for name in base if name.endswith("_backward") and name.removesuffix("_backward") in products}
# In-place forms compute what their functional form does (`addmm_`, `baddbmm_`).
products |= {name for name in base if name.endswith("_") and not name.endswith("__") and name[:-1] in products}
# Composite aliases carry no tags of their own: `special_i0` is `i0`, `arccos` is `acos`.
for name in base - pointwise:
    for alias in (name.removeprefix("special_"), name.replace("arc", "a", 1)):
        if alias != name and alias in pointwise and getattr(torch.ops.aten, name, None) is not None:
            pointwise.add(name)
# And aliases whose docstring says so ("Alias for :func:`torch.sub`"): `subtract`, `multiply`.
def documented_alias(name):
    for holder, short in ((torch, name), (torch.special, name.removeprefix("special_")), (torch.Tensor, name)):
        doc = getattr(getattr(holder, short, None), "__doc__", None) or ""
        for marker in ("Alias for :func:`torch.", "Alias of :func:`torch."):
            if marker in doc:
                target = doc.split(marker, 1)[1].split("`", 1)[0]
                return target.replace(".", "_")  # `special.gammainc` is aten's `special_gammainc`
    return None


for name in sorted(base - pointwise):
    target = documented_alias(name)
    if target in pointwise and getattr(torch.ops.aten, name, None) is not None:
        pointwise.add(name)
for file, names, what in [("pointwise_ops.txt", pointwise, "aten operators tagged pointwise, and their aliases"), ("blas_lapack_ops.txt", products, "aten operators computed by BLAS or LAPACK")]:
    out = ROOT / "data" / file
    out.write_text(f"# {what} in torch {torch.__version__}, by scripts/extract_op_tags.py\n" + "".join(f"{n}\n" for n in sorted(names)))
    print(f"{len(names)} operators -> {out}")
