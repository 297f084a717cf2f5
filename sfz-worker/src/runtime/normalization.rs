//! The rounding of a normalization layer's folded form. libtorch's CPU kernels evaluate
//! `(x - mean) · rstd · w + b` as `x · a + c`, with `a = w · rstd` and `c = b - mean · a`: where
//! |x| is large against its group's spread the two terms cancel, and the result carries an error
//! of a few `u · (|x| + |mean|) · |a|` although the function is well conditioned there (float32
//! `layer_norm` of pairs near -86 that are 0.28 apart: 3e-4 off, where moving the inputs by their
//! rounding moves the exact result by 2e-5). Every float32 implementation of that form does
//! this, so it is allowed for, like the rounding of a sum.
use tch::{Kind, Tensor};

use super::executor::{Executor, Inputs};
use sfz_wire::case::{Arg, Case};

/// Roundings of the folded form's terms an element may carry: the product `x · a`, the sum with
/// `c`, and `a` and `c` themselves.
const ROUNDINGS: f64 = 4.0;

impl Executor {
    /// The allowance output 0 of a layer, group, batch or instance normalization gets for its
    /// folded form, in float64 and of the output's shape, given the unit roundoff `u` of the
    /// dtype the kernel computes in and the float64 inputs `promoted`; None for other operators
    /// (and where the arguments are not as the schema says).
    pub(super) fn folded_rounding(&self, case: &Case, promoted: &Inputs, u: f64) -> Result<Option<Tensor>, tch::TchError> {
        let Ok(op) = self.op(case.op) else { return Ok(None) };
        let name = op.schema.name.strip_prefix("aten::").unwrap_or(&op.schema.name).to_string();
        let arg = |wanted: &str| (0..case.args.len()).find(|&i| self.schema_arg_name(case.op, i) == Some(wanted));
        let Some(x) = arg("input").and_then(|i| promoted.of(i).first()) else { return Ok(None) };
        if x.f_kind()? != Kind::Double || x.numel() == 0 {
            return Ok(None);
        }
        let weight = arg("weight").and_then(|i| promoted.of(i).first());
        let eps = match arg("eps").map(|i| &case.args[i]) {
            Some(Arg::Float(e)) => *e,
            _ => return Ok(None),
        };
        let shape = x.size();
        let (mean, rstd, weight) = match name.as_str() {
            "layer_norm" | "native_layer_norm" => {
                let Some(Arg::IntList(normalized)) = arg("normalized_shape").map(|i| &case.args[i]) else { return Ok(None) };
                let k = normalized.len();
                if k == 0 || k > shape.len() {
                    return Ok(None);
                }
                let dims: Vec<i64> = (shape.len() - k..shape.len()).map(|d| d as i64).collect();
                let mean = x.f_mean_dim(dims.as_slice(), true, Kind::Double)?;
                let var = x.f_var_correction(dims.as_slice(), 0, true)?;
                // A weight of the normalized shape broadcasts against the input as it is.
                (mean, var.f_add_scalar(eps)?.f_rsqrt()?, weight.map(Tensor::shallow_clone))
            }
            "group_norm" | "native_group_norm" => {
                let groups = match arg("num_groups").or_else(|| arg("group")).map(|i| &case.args[i]) {
                    Some(Arg::Int(g)) if *g > 0 => *g,
                    _ => return Ok(None),
                };
                if shape.len() < 2 || shape[1] % groups != 0 {
                    return Ok(None);
                }
                let grouped = x.f_reshape([shape[0], groups, -1])?;
                let mean = grouped.f_mean_dim(&[2i64][..], true, Kind::Double)?;
                let var = grouped.f_var_correction(&[2i64][..], 0, true)?;
                let back = |t: Tensor| t.f_expand_as(&grouped)?.f_reshape(shape.as_slice());
                // A weight per channel, along dimension 1.
                let mut per_channel = vec![1i64; shape.len()];
                per_channel[1] = shape[1];
                let weight = weight.map(|w| w.f_reshape(per_channel.as_slice())).transpose()?;
                (back(mean)?, back(var.f_add_scalar(eps)?.f_rsqrt()?)?, weight)
            }
            "batch_norm"
            | "native_batch_norm"
            | "_batch_norm_impl_index"
            | "_native_batch_norm_legit"
            | "_native_batch_norm_legit_no_training"
            | "_batch_norm_with_update"
            | "_batch_norm_with_update_functional"
            | "_batch_norm_no_update"
            | "instance_norm" => {
                if shape.len() < 2 {
                    return Ok(None);
                }
                // The batch's (or, for an instance norm, each instance's) own statistics, or the
                // running ones: by the flag, or by the entry point's name where it has none.
                let own = match arg("training").or_else(|| arg("use_input_stats")).map(|i| &case.args[i]) {
                    Some(Arg::Bool(b)) => *b,
                    _ => name.contains("with_update"),
                };
                let mut per_channel = vec![1i64; shape.len()];
                per_channel[1] = shape[1];
                let channel = |t: &Tensor| t.f_reshape(per_channel.as_slice());
                let (mean, var) = if own {
                    // A batch norm's statistics span the batch and the spatial dimensions, an
                    // instance norm's the spatial ones of each instance.
                    let from = if name == "instance_norm" { 2 } else { 0 };
                    let dims: Vec<i64> = (from..shape.len() as i64).filter(|&d| d != 1).collect();
                    if dims.is_empty() {
                        return Ok(None);
                    }
                    (x.f_mean_dim(dims.as_slice(), true, Kind::Double)?, x.f_var_correction(dims.as_slice(), 0, true)?)
                } else {
                    let running = |n: &str| arg(n).and_then(|i| promoted.of(i).first()).filter(|t| t.numel() as i64 == shape[1]);
                    let (Some(m), Some(v)) = (running("running_mean"), running("running_var")) else { return Ok(None) };
                    (channel(m)?, channel(v)?)
                };
                let weight = weight.filter(|w| w.numel() as i64 == shape[1]).map(channel).transpose()?;
                (mean, var.f_add_scalar(eps)?.f_rsqrt()?, weight)
            }
            _ => return Ok(None),
        };
        let scale = match weight {
            Some(w) => rstd.f_mul(&w.f_abs()?)?,
            None => rstd,
        };
        let terms = x.f_abs()?.f_add(&mean.f_abs()?)?.f_mul(&scale)?;
        Ok(Some(terms.f_mul_scalar(ROUNDINGS * u)?.f_expand(shape.as_slice(), false)?.f_contiguous()?))
    }
}
