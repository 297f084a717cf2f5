//! Is a hang the cost of its arguments? `legendre_polynomial_p` with a degree of 2^62 loops 2^62
//! times per element: it runs for ages, as documented, and no maintainer calls that a bug;
//! `matrix_power` with n = INT64_MIN never ends, whatever the matrix, and is one. A confirmed
//! hang whose case holds large integers (an int argument, an int list entry, a special value
//! placed in a tensor) is probed: the case is run with those integers scaled down to 2^10, 2^14,
//! 2^18, ... (signs kept; each three times, the fastest counting: a loaded machine only slows a
//! call down) until a call takes long enough to time; when that time grows with the
//! scale (at least 4 times for 16 times the scale, linear work grows 16 times) and the same
//! growth takes the original integers past the timeout, the hang is explained by its input.
use std::time::Duration;

use crate::wire::case::{Arg, Case, Special};
use crate::wire::outcome::Outcome;
use crate::worker::Execution;
use crate::worker::Pool;

/// Integers at least this large (in magnitude) are scaled down by the probe.
pub const LARGE: f64 = (1u64 << 24) as f64;

/// A probe's call must take this long for its time to count (shorter times are noise).
const TIMED: Duration = Duration::from_millis(5);

/// The growth in time, for 16 times the scale, that counts as work in proportion to it.
const GROWTH: f64 = 4.0;

/// The case with every large integer replaced by `scale` (its sign kept), and the largest
/// magnitude replaced; None when the case holds no large integer.
pub fn scaled(case: &Case, scale: f64) -> Option<(Case, f64)> {
    let mut largest: f64 = 0.0;
    let mut shrink = |v: f64| -> f64 {
        if v.is_finite() && v.abs() >= LARGE {
            largest = largest.max(v.abs());
            scale.copysign(v)
        } else {
            v
        }
    };
    let mut out = case.clone();
    for arg in &mut out.args {
        match arg {
            Arg::Int(v) => *v = shrink(*v as f64) as i64,
            Arg::IntList(vs) => vs.iter_mut().for_each(|v| *v = shrink(*v as f64) as i64),
            Arg::Tensor(t) => scale_specials(&mut t.specials, &mut shrink),
            Arg::TensorList(ts) => ts.iter_mut().for_each(|t| scale_specials(&mut t.specials, &mut shrink)),
            _ => {}
        }
    }
    (largest > 0.0).then_some((out, largest))
}

fn scale_specials(specials: &mut [(u64, Special)], shrink: &mut impl FnMut(f64) -> f64) {
    for (_, s) in specials {
        if let Special::Value(v) = s {
            *v = shrink(*v);
        }
    }
}

/// Why the hang of `case` is the cost of its integers, or None: no large integers, a probe that
/// does not finish, or a time that does not grow with them.
pub fn explain_hang(pool: &Pool, case: &Case, timeout: Duration) -> Option<String> {
    let mut last: Option<(f64, Duration)> = None;
    for k in (10..=40).step_by(4) {
        if super::stopped() {
            return None;
        }
        let scale = (1u64 << k) as f64;
        let (probe, largest) = scaled(case, scale)?;
        if scale >= largest {
            return None;
        }
        // The fastest of three: a preempted call takes longer, never shorter, so the minimum
        // is the call's own time on a loaded machine too.
        let mut took: Option<Duration> = None;
        for e in pool.run_batch(&[probe.clone(), probe.clone(), probe]) {
            let t = match e? {
                Execution::Completed(o) | Execution::Checked { outcome: o, .. } => match o {
                    Outcome::Returned { micros, .. } | Outcome::Raised { micros, .. } => Duration::from_micros(micros.into()),
                },
                _ => return None,
            };
            took = Some(took.map_or(t, |m| m.min(t)));
        }
        let took = took?;
        if let Some((before, was)) = last.filter(|_| took >= TIMED) {
            let growth = took.as_secs_f64() / was.as_secs_f64().max(1e-6);
            let projected = took.as_secs_f64() * largest / scale;
            return (growth >= GROWTH && projected > timeout.as_secs_f64()).then(|| {
                format!(
                    "the call's time grows with its integer arguments ({} at 2^{}, {} at 2^{k}); at {} it would take about {}: the cost of the argument, not a hang",
                    millis(was),
                    (before as u64).trailing_zeros(),
                    millis(took),
                    magnitude(largest),
                    span(projected)
                )
            });
        }
        last = Some((scale, took));
    }
    None
}

fn millis(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// 2^k for a power of two, else three digits and an exponent.
fn magnitude(v: f64) -> String {
    let bits = v as u64;
    if v == bits as f64 && bits.is_power_of_two() {
        format!("2^{}", bits.trailing_zeros())
    } else {
        format!("{v:.3e}")
    }
}

fn span(seconds: f64) -> String {
    const YEAR: f64 = 365.25 * 86400.0;
    match seconds {
        s if s >= YEAR => format!("{:.1e} years", s / YEAR),
        s if s >= 86400.0 => format!("{:.0} days", s / 86400.0),
        s if s >= 3600.0 => format!("{:.0} hours", s / 3600.0),
        s => format!("{s:.0} s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::case::{DType, Fill, Layout, TensorRecipe};

    #[test]
    fn large_integers_are_scaled_with_their_sign_and_small_ones_kept() {
        let t = TensorRecipe {
            dtype: DType::Int64,
            shape: vec![3],
            fill: Fill::Int { lo: -10, hi: 11 },
            seed: 1,
            layout: Layout::Contiguous,
            specials: vec![(0, Special::Value(4.6e18)), (1, Special::Value(-3.0))],
        };
        let case = Case { op: 0, args: vec![Arg::Tensor(t), Arg::Int(i64::MIN), Arg::IntList(vec![2, 1 << 30])], forward: None };
        let (probe, largest) = scaled(&case, 1024.0).expect("large integers");
        assert_eq!(largest, 2f64.powi(63));
        let Arg::Tensor(t) = &probe.args[0] else { panic!() };
        assert_eq!(t.specials, vec![(0, Special::Value(1024.0)), (1, Special::Value(-3.0))]);
        assert_eq!(probe.args[1], Arg::Int(-1024));
        assert_eq!(probe.args[2], Arg::IntList(vec![2, 1024]));
        assert!(scaled(&Case { op: 0, args: vec![Arg::Int(5)], forward: None }, 1024.0).is_none());
        assert_eq!((magnitude(2f64.powi(63)), magnitude(3e9)), ("2^63".to_string(), "3.000e9".to_string()));
    }
}
