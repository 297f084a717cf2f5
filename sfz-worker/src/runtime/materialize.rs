//! Tensor recipes → libtorch tensors, by a fixed sequence of ops that Python repeats exactly.
//!
//! A recipe is rebuilt bit for bit by pip torch 2.13.0 running this function (the reproducer
//! prints it as `make`; `sfz::findings::repro::PY_MAKE` is the text), on libtorch's default CPU
//! generator, with one intra-op thread:
//!
//! ```python
//! def make(dtype, shape, fill, seed, layout="contiguous", specials=()):
//!     kind, a, b = fill
//!     if kind == "uniform":                        # Fill::Uniform { lo: a, hi: b }
//!         torch.manual_seed(seed)
//!         if dtype.is_complex:                     # both parts drawn: [..., 2] viewed as complex
//!             v = torch.view_as_complex(torch.empty(list(shape) + [2], dtype=torch.float64).uniform_(a, b)).to(dtype)
//!         else:
//!             v = torch.empty(shape, dtype=torch.float64).uniform_(a, b).to(dtype)
//!     elif kind == "int":                          # Fill::Int { lo: a, hi: b }
//!         torch.manual_seed(seed)
//!         v = torch.randint(a, b, shape, dtype=torch.int64).to(dtype)
//!     else:                                        # Fill::Constant(a)
//!         v = torch.empty(shape, dtype=torch.float64).fill_(a).to(dtype)
//!     n = v.numel()
//!     for i, x in specials:                        # written after the cast, in order, as a
//!         if n:                                    # float64 copied in (no overflow check)
//!             v.view(-1).select(0, i % n).copy_(torch.tensor(x, dtype=torch.float64))
//!     if layout == "transposed" and v.dim() >= 2:  # same values, column-major storage
//!         v = v.transpose(-1, -2).contiguous().transpose(-1, -2)
//!     elif layout == "strided" and v.dim() >= 1:   # same values, every other element of a
//!         s = torch.zeros(list(shape[:-1]) + [2 * shape[-1]], dtype=dtype)  # zeroed buffer
//!         s[..., ::2].copy_(v)
//!         v = s[..., ::2]
//!     elif layout == "expanded" and v.dim() >= 1 and shape[0] >= 1:  # the first slice along
//!         v = v.narrow(0, 0, 1).expand(list(shape))  # dim 0 repeated with stride 0
//!     elif layout == "sliced" and v.dim() >= 1:    # same values at offset (1, 1, ...) of a
//!         s = torch.zeros([d + 1 for d in shape], dtype=dtype)  # zeroed, larger buffer
//!         s[(slice(1, None),) * v.dim()].copy_(v)
//!         v = s[(slice(1, None),) * v.dim()]
//!     return v
//! ```
//!
//! Layouts other than `expanded` never change the values, only the strides, so shrinking a
//! finding can drop them without changing what the op computes; `expanded` repeats the first
//! slice (the values stay within the fill's bounds). A layout that would not apply (transposed
//! below 2-D, the others at 0-D, expanded with an empty first dimension) leaves it contiguous. `Constant` draws nothing and so
//! does not seed. `.to(dtype)` is a no-op when the dtypes agree, in both languages.
//!
//! No tch function taking a `Scalar` appears on a path that can fail: tch 0.26 drops the
//! temporary `Scalar` before reading the error, and the drop panics on it. Hence `empty().fill_`
//! rather than `full` (only `empty` can fail there), and specials copied from a tensor.
use tch::{Device, Kind, Tensor};

use sfz_wire::case::{DType, Fill, Layout, TensorRecipe};

/// The tch kind of a dtype.
pub fn kind(dtype: DType) -> Kind {
    match dtype {
        DType::Bool => Kind::Bool,
        DType::UInt8 => Kind::Uint8,
        DType::Int8 => Kind::Int8,
        DType::Int16 => Kind::Int16,
        DType::Int32 => Kind::Int,
        DType::Int64 => Kind::Int64,
        DType::Float16 => Kind::Half,
        DType::BFloat16 => Kind::BFloat16,
        DType::Float32 => Kind::Float,
        DType::Float64 => Kind::Double,
        DType::Complex64 => Kind::ComplexFloat,
        DType::Complex128 => Kind::ComplexDouble,
    }
}

/// The dtype of a tensor, None for a kind no case holds (complex32, the quantized ones).
pub fn dtype_of(t: &Tensor) -> Option<DType> {
    let k = t.f_kind().ok()?;
    DType::ALL.into_iter().find(|d| kind(*d) == k)
}

/// Builds the tensor a recipe describes. An error (a negative dimension, `lo > hi`, a NaN
/// special in an integer tensor) is libtorch's message; Python raises the same.
pub fn materialize(r: &TensorRecipe) -> Result<Tensor, tch::TchError> {
    let cpu = Device::Cpu;
    let target = kind(r.dtype);
    let cast = |t: Tensor| if target == Kind::Double && !r.dtype.is_complex() { Ok(t) } else { t.f_to_dtype(target, false, false) };
    let mut v = match r.fill {
        Fill::Uniform { lo, hi } => {
            // tch takes the seed as i64 and libtorch as u64: the same 64 bits.
            tch::manual_seed(r.seed as i64);
            if r.dtype.is_complex() {
                let mut shape = r.shape.clone();
                shape.push(2);
                let mut pairs = Tensor::f_empty(shape.as_slice(), (Kind::Double, cpu))?;
                let _alias = pairs.f_uniform_(lo, hi)?;
                pairs.f_view_as_complex()?.f_to_dtype(target, false, false)?
            } else {
                let mut t = Tensor::f_empty(r.shape.as_slice(), (Kind::Double, cpu))?;
                let _alias = t.f_uniform_(lo, hi)?;
                cast(t)?
            }
        }
        Fill::Int { lo, hi } => {
            tch::manual_seed(r.seed as i64);
            let t = Tensor::f_randint_low(lo, hi, r.shape.as_slice(), (Kind::Int64, cpu))?;
            if target == Kind::Int64 {
                t
            } else {
                t.f_to_dtype(target, false, false)?
            }
        }
        Fill::Constant(c) => {
            let mut t = Tensor::f_empty(r.shape.as_slice(), (Kind::Double, cpu))?;
            // Filling a float64 tensor with a float cannot fail (see the module doc).
            let _alias = t.f_fill_(c)?;
            cast(t)?
        }
    };
    if !r.specials.is_empty() {
        let n = v.numel() as u64;
        if n > 0 {
            let flat = v.f_view([-1i64])?;
            for (i, special) in &r.specials {
                let mut element = flat.f_select(0, (i % n) as i64)?;
                element.f_copy_(&Tensor::from(special.value()))?;
            }
        }
    }
    let ndim = r.shape.len();
    match r.layout {
        Layout::Transposed if ndim >= 2 => {
            v = v.f_transpose(-1, -2)?.f_contiguous()?.f_transpose(-1, -2)?;
        }
        Layout::Strided if ndim >= 1 => {
            let mut wide = r.shape.clone();
            if let Some(last) = wide.last_mut() {
                *last *= 2;
            }
            let buffer = Tensor::f_zeros(wide.as_slice(), (target, cpu))?;
            let mut every_other = buffer.f_slice(-1, 0, None::<i64>, 2)?;
            every_other.f_copy_(&v)?;
            v = every_other;
        }
        Layout::Expanded if ndim >= 1 && r.shape[0] >= 1 => {
            v = v.f_narrow(0, 0, 1)?.f_expand(r.shape.as_slice(), false)?;
        }
        Layout::Sliced if ndim >= 1 => {
            let larger: Vec<i64> = r.shape.iter().map(|d| d + 1).collect();
            let buffer = Tensor::f_zeros(larger.as_slice(), (target, cpu))?;
            let mut inner = buffer.shallow_clone();
            for d in 0..ndim as i64 {
                inner = inner.f_slice(d, 1, None::<i64>, 1)?;
            }
            inner.f_copy_(&v)?;
            v = inner;
        }
        _ => {}
    }
    Ok(v)
}
