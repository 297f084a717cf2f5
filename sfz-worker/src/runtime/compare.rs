//! Elementwise comparison of two tensors inside the worker, with `torch.isclose` semantics
//! (`equal_nan=True`): equal values (infinities of one sign included) and NaN against NaN agree;
//! otherwise `|actual - expected| <= atol + rtol * |expected|` over finite differences, the
//! modulus for complex numbers. A reproducer's `torch.testing.assert_close(..., equal_nan=True)`
//! decides the same way, so a script fails exactly when the worker saw a mismatch.
use tch::{Kind, Tensor};

use sfz::variant::Tolerance;

/// What a comparison found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comparison {
    pub total: u64,
    pub mismatched: u64,
    /// The first mismatching element (flat, logical order) and its values (real parts for complex).
    pub first: Option<(u64, f64, f64)>,
    /// Largest absolute and relative differences over elements whose difference is finite.
    pub max_abs: f64,
    pub max_rel: f64,
}

/// The dtype both sides are compared in: complex128 when either is complex, else float64 when
/// either is floating, else int64 (exact).
fn common_kind(a: Kind, b: Kind) -> Kind {
    let complex = |k: Kind| matches!(k, Kind::ComplexHalf | Kind::ComplexFloat | Kind::ComplexDouble);
    let floating = |k: Kind| matches!(k, Kind::Half | Kind::BFloat16 | Kind::Float | Kind::Double);
    if complex(a) || complex(b) {
        Kind::ComplexDouble
    } else if floating(a) || floating(b) {
        Kind::Double
    } else {
        Kind::Int64
    }
}

/// The elements of `t` in logical order as `kind` (a CPU copy).
fn flat(t: &Tensor, kind: Kind) -> Result<Tensor, tch::TchError> {
    let t = if t.device() == tch::Device::Cpu { t.shallow_clone() } else { t.f_to_device(tch::Device::Cpu)? };
    t.f_to_kind(kind)?.f_contiguous()?.f_reshape([-1i64])
}

/// Compares `actual` with `expected` (same shape; the caller checks).
pub fn compare(actual: &Tensor, expected: &Tensor, tol: Tolerance) -> Result<Comparison, tch::TchError> {
    let kind = common_kind(actual.f_kind()?, expected.f_kind()?);
    let a = flat(actual, kind)?;
    let e = flat(expected, kind)?;
    let mut c = Comparison::default();
    match kind {
        Kind::Int64 => {
            let a = Vec::<i64>::try_from(&a)?;
            let e = Vec::<i64>::try_from(&e)?;
            for (i, (x, y)) in a.iter().zip(&e).enumerate() {
                c.see(i as u64, *x as f64, *y as f64, x == y);
            }
            c.total = a.len() as u64;
        }
        Kind::Double => {
            let a = Vec::<f64>::try_from(&a)?;
            let e = Vec::<f64>::try_from(&e)?;
            for (i, (x, y)) in a.iter().zip(&e).enumerate() {
                c.see(i as u64, *x, *y, tol.close(*x, *y));
            }
            c.total = a.len() as u64;
        }
        _ => {
            // Pairs of (real, imaginary).
            let a = Vec::<f64>::try_from(&a.f_view_as_real()?.f_reshape([-1i64])?)?;
            let e = Vec::<f64>::try_from(&e.f_view_as_real()?.f_reshape([-1i64])?)?;
            for (i, (x, y)) in a.chunks_exact(2).zip(e.chunks_exact(2)).enumerate() {
                c.see(i as u64, x[0], y[0], complex_close(tol, (x[0], x[1]), (y[0], y[1])));
            }
            c.total = (a.len() / 2) as u64;
        }
    }
    Ok(c)
}

/// `torch.isclose` for complex numbers with `equal_nan=True`.
fn complex_close(tol: Tolerance, a: (f64, f64), e: (f64, f64)) -> bool {
    let nan = |z: (f64, f64)| z.0.is_nan() || z.1.is_nan();
    if a == e || (nan(a) && nan(e)) {
        return true;
    }
    let diff = (a.0 - e.0).hypot(a.1 - e.1);
    diff.is_finite() && diff <= tol.atol + tol.rtol * e.0.hypot(e.1)
}

impl Comparison {
    fn see(&mut self, index: u64, actual: f64, expected: f64, close: bool) {
        let diff = (actual - expected).abs();
        if diff.is_finite() {
            self.max_abs = self.max_abs.max(diff);
            if expected != 0.0 {
                self.max_rel = self.max_rel.max(diff / expected.abs());
            }
        }
        if !close {
            self.mismatched += 1;
            if self.first.is_none() {
                self.first = Some((index, actual, expected));
            }
        }
    }
}
