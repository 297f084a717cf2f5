//! Elementwise comparison of two tensors inside the worker, with `torch.isclose` semantics
//! (`equal_nan=True`): equal values (infinities of one sign included) and NaN against NaN agree;
//! otherwise `|actual - expected| <= atol + rtol * |expected|` over finite differences, the
//! modulus for complex numbers. A reproducer's `torch.testing.assert_close(..., equal_nan=True)`
//! decides the same way, so a script fails exactly when the worker saw a mismatch.
use tch::{Kind, Tensor};

use sfz_wire::case::DType;
use sfz_wire::variant::{Premature, PrematureKind, Tolerance, ValueMismatch};

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
    /// Elements computed as inf, NaN or 0 where the reference is finite and representable
    /// (only when the comparison was asked to look for them).
    pub premature: Option<Premature>,
}

impl Comparison {
    /// The mismatch of output `output` (of `dtype`, judged with `tolerance`), if an element differed.
    pub fn mismatch(&self, output: usize, dtype: Option<DType>, tolerance: Tolerance) -> Option<ValueMismatch> {
        let (index, actual, expected) = self.first?;
        Some(ValueMismatch {
            output,
            dtype,
            index,
            actual,
            expected,
            mismatched: self.mismatched,
            total: self.total,
            max_abs: self.max_abs,
            max_rel: self.max_rel,
            tolerance,
            premature: self.premature.clone(),
            squares_overflow: None,
            powers_overflow: None,
            strided: false,
            undetermined: false,
        })
    }
}

/// What else a comparison knows: an allowance per element added to `atol` (the rounding a
/// result's terms explain), and the dtype whose range decides whether a reference value is
/// representable, to find premature overflows.
#[derive(Clone, Copy, Default)]
pub struct Extra<'a> {
    pub allowance: Option<&'a Tensor>,
    /// Where an element's terms leave the dtype's range (`Allowance::no_headroom`).
    pub no_headroom: Option<&'a Tensor>,
    pub premature_in: Option<DType>,
    /// `expected` is a wider reference rounded to the dtype of `actual`: where it is not finite
    /// the true value is not representable there (or the reference itself failed), so nothing
    /// the original computes is wrong by it and the element is not compared.
    pub rounded_reference: bool,
}

/// What one output's elements may honestly differ by: the rounding their terms explain (added to
/// `atol`), and where those terms leave the dtype's range, so that the natural algorithm's
/// intermediates do too and an inf or NaN there is honest, not premature.
pub struct Allowance {
    pub rounding: Tensor,
    pub no_headroom: Tensor,
}

impl Allowance {
    /// The same allowance with `rounding` changed by `f`.
    pub fn map(&self, f: impl FnOnce(&Tensor) -> Result<Tensor, tch::TchError>) -> Result<Allowance, tch::TchError> {
        Ok(Allowance { rounding: f(&self.rounding)?, no_headroom: self.no_headroom.shallow_clone() })
    }
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
    // A conjugate view (`fft.ihfft`'s result) is resolved first: `view_as_real` refuses it. So
    // is a negative view (`_neg_view`, the `imag` of a conjugate): reading its memory as it
    // lies would drop the sign.
    t.f_resolve_conj()?.f_resolve_neg()?.f_to_kind(kind)?.f_contiguous()?.f_reshape([-1i64])
}

/// Compares `actual` with `expected` (same shape; the caller checks).
pub fn compare(actual: &Tensor, expected: &Tensor, tol: Tolerance) -> Result<Comparison, tch::TchError> {
    compare_with(actual, expected, tol, Extra::default())
}

/// `compare`, with an allowance per element and the search for premature overflows.
pub fn compare_with(actual: &Tensor, expected: &Tensor, tol: Tolerance, extra: Extra) -> Result<Comparison, tch::TchError> {
    let kind = common_kind(actual.f_kind()?, expected.f_kind()?);
    let a = flat(actual, kind)?;
    let e = flat(expected, kind)?;
    let mut c = Comparison::default();
    // Per element, what the allowance adds to atol (a non-finite allowance adds nothing).
    let allow = match extra.allowance {
        Some(t) => Some(Vec::<f64>::try_from(&flat(&t.f_broadcast_to(expected.size())?, Kind::Double)?)?),
        None => None,
    };
    let beyond = match extra.no_headroom {
        Some(t) => Some(Vec::<bool>::try_from(&t.f_broadcast_to(expected.size())?.f_contiguous()?.f_reshape([-1i64])?)?),
        None => None,
    };
    let range = extra.premature_in.and_then(DType::limits);
    let more = |i: usize| allow.as_ref().and_then(|v| v.get(i)).copied().filter(|m| m.is_finite()).unwrap_or(0.0);
    let no_headroom = |i: usize| range.is_some() && beyond.as_ref().and_then(|v| v.get(i)).is_some_and(|b| *b);
    if kind == Kind::Double && (extra.allowance.is_some() || extra.premature_in.is_some() || extra.rounded_reference) {
        let a = Vec::<f64>::try_from(&a)?;
        let e = Vec::<f64>::try_from(&e)?;
        // Within a few roundings of the largest value, an honest computation may overflow.
        let at_edge = |x: f64, y: f64| range.is_some_and(|(max, ..)| x.is_infinite() && y.is_finite() && y.abs() > max * (1.0 - 1e-3) && x.signum() == y.signum());
        for (i, (x, y)) in a.iter().zip(&e).enumerate() {
            let t = Tolerance { atol: tol.atol + more(i), ..tol };
            let honest = !x.is_finite() && no_headroom(i);
            c.see(i as u64, *x, *y, t.close(*x, *y) || (extra.rounded_reference && !y.is_finite()) || at_edge(*x, *y) || honest);
            if honest {
                continue;
            }
            if let Some((max, normal, _)) = range {
                if let Some(what) = premature(*x, *y, max, normal, t) {
                    c.premature(i as u64, what, *x, *y);
                }
            }
        }
        c.total = a.len() as u64;
        return Ok(c);
    }
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
            let finite = |z: &[f64]| z[0].is_finite() && z[1].is_finite();
            for (i, (x, y)) in a.chunks_exact(2).zip(e.chunks_exact(2)).enumerate() {
                // Both overflowed: how a complex infinity's other component reads (inf, NaN) is
                // not the operator's promise.
                let overflowed = !finite(y) && (extra.rounded_reference || !finite(x));
                // Within a few roundings of the largest value, an honest computation may overflow.
                let at_edge = !finite(x) && finite(y) && range.is_some_and(|(max, ..)| y[0].abs().max(y[1].abs()) > max * (1.0 - 1e-3));
                let t = Tolerance { atol: tol.atol + more(i), ..tol };
                let honest = !finite(x) && no_headroom(i);
                c.see(i as u64, x[0], y[0], overflowed || at_edge || honest || complex_close(t, (x[0], x[1]), (y[0], y[1])));
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

/// Whether `actual` is a premature inf, NaN or 0 against a representable `expected`: finite,
/// nonzero, below the dtype's largest value by more than 0.1% (a few roundings there may honestly overflow), and for
/// 0 a normal number beyond the tolerance (with its allowance: a sum whose terms cancel may
/// rightly round to 0).
fn premature(actual: f64, expected: f64, max: f64, normal: f64, tol: Tolerance) -> Option<PrematureKind> {
    if !expected.is_finite() || expected == 0.0 || expected.abs() > max * (1.0 - 1e-3) {
        return None;
    }
    if actual.is_nan() {
        Some(PrematureKind::Nan)
    } else if actual.is_infinite() {
        Some(PrematureKind::Inf)
    } else if actual == 0.0 && expected.abs() >= normal && !tol.close(actual, expected) {
        Some(PrematureKind::Zero)
    } else {
        None
    }
}

impl Comparison {
    fn premature(&mut self, index: u64, what: PrematureKind, actual: f64, expected: f64) {
        match &mut self.premature {
            Some(p) => p.count += 1,
            None => self.premature = Some(Premature { what, index, actual, expected, count: 1, extrapolated: false }),
        }
    }

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
