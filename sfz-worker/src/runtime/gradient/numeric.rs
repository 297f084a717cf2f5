//! Finite differences of `sum(w * outputs)` that say how far they can be trusted: central
//! differences with two step sizes (in an irrational ratio) differ by their truncation error,
//! a jump or an aliased oscillation, and the two one-sided differences by a kink; that spread
//! decides whether the estimate can refute a gradient. Steps are relative to the input's
//! magnitude, so that a large element moves by as much as float64 can see.
use tch::Tensor;

use super::super::checks::Failure;
use super::super::executor::Executor;
use super::{objective, Probe};
use sfz_wire::outcome::Outcome;
use sfz_wire::variant::Tolerance;

/// The second step's ratio to the first: irrational, so that a periodic function whose period
/// both steps are near multiples of (sin at 1e44, where a step is 1e38) is no longer a chance.
pub(super) const GOLDEN: f64 = 1.618_033_988_749_895;

/// Inputs beyond this are not moved: the smallest relative step there spans whole periods of
/// an oscillating function (sin at 1e17 moves by 1e11), which differences cannot tell from a
/// flat one. Forward against reverse mode still judges them.
pub(super) const LARGEST: f64 = 1048576.0;

/// The magnitude a step is relative to at least: steps shrink with the element down to here,
/// so that a function that varies on the scale of a small input (atan2 near the origin) is
/// not stepped across.
pub(super) const SMALLEST: f64 = 1.0 / 1024.0;

/// Which way the inputs move.
#[derive(Clone, Copy)]
pub(super) enum Direction<'a> {
    /// One element of the leaf.
    Element(u64),
    /// The whole leaf, along a tangent of its shape (a directional derivative).
    Along(&'a Tensor),
}

type Outputs = Vec<Option<Tensor>>;

impl Executor {
    /// The derivative of `sum(w * outputs)` along `direction` of leaf `leaf`, with its spread,
    /// or None where finite differences see nothing (a raising call, a non-finite input or
    /// output, outputs that did not change).
    pub(super) fn difference(&mut self, probe: &Probe, leaf: usize, direction: Direction, eps: f64) -> Result<Option<Estimate>, Failure> {
        let data = probe.leaves[leaf].2.f_detach()?;
        let mut flat = data.f_reshape([-1i64])?;
        let x0 = objective::copy_of(&flat)?;
        // The element moved (Element), read once.
        let x = match direction {
            Direction::Element(i) => x0.f_double_value(&[i as i64])?,
            Direction::Along(_) => 0.0,
        };
        let h = match direction {
            Direction::Element(_) => {
                if !x.is_finite() || x.abs() > LARGEST {
                    return Ok(None);
                }
                eps * x.abs().max(SMALLEST)
            }
            Direction::Along(_) => {
                if x0.f_isfinite()?.f_all()?.f_int64_value(&[])? == 0 {
                    return Ok(None);
                }
                let largest = if x0.numel() == 0 { 0.0 } else { x0.f_abs()?.f_max()?.f_double_value(&[])? };
                if largest > LARGEST {
                    return Ok(None);
                }
                eps * largest.max(SMALLEST)
            }
        };
        let mut values: Vec<Option<Outputs>> = Vec::with_capacity(4);
        let mut steps = Vec::with_capacity(4);
        for t in [h, -h, GOLDEN * h, -GOLDEN * h] {
            let taken = match direction {
                Direction::Element(i) => {
                    flat.f_select(0, i as i64)?.f_copy_(&Tensor::from(x + t))?;
                    (x + t) - x
                }
                Direction::Along(v) => {
                    flat.f_copy_(&x0.f_add(&v.f_reshape([-1i64])?.f_mul_scalar(t)?)?)?;
                    t
                }
            };
            steps.push(taken);
            let called = super::fresh(&probe.inputs, probe.mutates)
                .map_err(Failure::from)
                .and_then(|given| self.invoke(probe.case.op, &probe.case, &given, &[], true).map_err(Failure::from));
            values.push(match called {
                Ok(c) if matches!(c.outcome, Outcome::Returned { .. }) => Some(objective::copies(&c.tensors)?),
                Ok(_) => None,
                Err(e) => {
                    flat.f_copy_(&x0)?;
                    return Err(e);
                }
            });
        }
        flat.f_copy_(&x0)?;
        let [Some(plus), Some(minus), Some(plus2), Some(minus2)] = <[Option<Outputs>; 4]>::try_from(values).map_err(|_| Failure::Skip("four steps".into()))? else {
            return Ok(None);
        };
        let w = &probe.weights;
        let d = |a: &Outputs, b: &Outputs| objective::weighted_difference(a, b, w);
        let (Some(c1), Some(c2), Some(right), Some(left)) = (d(&plus, &minus)?, d(&plus2, &minus2)?, d(&plus, &probe.at_x0)?, d(&probe.at_x0, &minus)?) else {
            return Ok(None);
        };
        Ok(slope(Differences { c1, c2, right, left }, [steps[0], -steps[1], steps[2], -steps[3]], probe.mass))
    }
}

/// Differences of a function around a point: over `[-h, h]` (`c1`), over `[-φh, φh]` (`c2`),
/// over `[0, h]` (`right`) and `[-h, 0]` (`left`).
pub(super) struct Differences {
    pub c1: f64,
    pub c2: f64,
    pub right: f64,
    pub left: f64,
}

/// The slope the differences give, with steps `[h, h, φh, φh]` as taken (positive) and `mass`
/// the magnitude the function's values round relative to; None where they give no slope.
pub(super) fn slope(d: Differences, steps: [f64; 4], mass: f64) -> Option<Estimate> {
    let [up, down, up2, down2] = steps;
    if up <= 0.0 || down <= 0.0 || up2 <= 0.0 || down2 <= 0.0 {
        return None;
    }
    // Outputs that did not change at all (a function constant around the input, or a step
    // absorbed by large outputs) say nothing of a derivative; a surrogate gradient
    // (fake_quantize's straight-through estimate) lives there.
    if d.c1 == 0.0 && d.c2 == 0.0 && d.right == 0.0 && d.left == 0.0 {
        return None;
    }
    let (c1, c2, right, left) = (d.c1 / (up + down), d.c2 / (up2 + down2), d.right / up, d.left / down);
    if ![c1, c2, right, left].iter().all(|v| v.is_finite()) {
        return None;
    }
    // What rounding the outputs leaves in a slope: the weighted outputs' mass over the step.
    let noise = 64.0 * f64::EPSILON * mass / up.min(down);
    // How far the slope may be from c1: the two central differences differ by their O(h²)
    // errors (or by a jump, or an oscillation the steps alias: sin at 1e44), the one-sided
    // ones by h·f'' or the jump in slope of a kink.
    let spread = (c1 - c2).abs().max((right - left).abs()) + noise;
    // Slopes that disagree by a large share of themselves are no slope at all: the steps
    // straddle a jump, or land in an oscillation at random (a bounded function's quotients
    // are all about 1/h, and small, however wrong).
    if spread - noise > 0.25 * c1.abs().max(c2.abs()).max(right.abs()).max(left.abs()) {
        return None;
    }
    Some(Estimate { value: c1, spread })
}

/// A finite-difference slope and how far the true one may be from it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Estimate {
    pub value: f64,
    pub spread: f64,
}

impl Estimate {
    fn allowed(self, tol: Tolerance) -> f64 {
        tol.atol + tol.rtol * self.value.abs()
    }

    /// Whether `a` may be the slope.
    pub fn admits(self, a: f64, tol: Tolerance) -> bool {
        a.is_finite() && (a - self.value).abs() <= self.allowed(tol) + self.spread
    }

    /// Whether `a` is not the slope beyond doubt: outside the tolerance, and ten times further
    /// from the estimate than the estimate's own spread.
    pub fn refutes(self, a: f64, tol: Tolerance) -> bool {
        if !a.is_finite() {
            return self.precise(tol);
        }
        let off = (a - self.value).abs();
        off > self.allowed(tol) && off > 10.0 * self.spread
    }

    /// Whether the estimate is good to the tolerance (a point where differences can judge).
    pub fn precise(self, tol: Tolerance) -> bool {
        self.spread <= self.allowed(tol)
    }
}
