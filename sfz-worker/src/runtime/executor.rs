//! Runs cases in-process: resolved operator handles, recipes materialised into tensors, a boxed
//! dispatcher call, and the outputs observed into an `Outcome`.
//!
//! The executor knows each operator's schema (read from the handle itself, not trusted from the
//! binding) so that it can pass values as Python's argument parser would: an int where a float
//! goes is a float, an int where `int[N]` goes is `[v] * N`, a tensor list where `Tensor?[]`
//! goes is a list of optionals.
use std::ffi::{CStr, CString};
use std::os::raw::c_void;
use std::time::Instant;

use tch::Tensor;

use super::ffi::{self, SfzTensorInfo};
use super::materialize::materialize;
use sfz_wire::binding::{ArgSource, OpBinding, Transform};
use sfz_wire::case::{Arg, Bind, Case, DType, FwdArg, TensorRecipe};
use sfz_wire::outcome::{ErrorClass, Outcome, Output, TensorInfo};
use sfz_wire::schema::{self, OpSchema, SchemaType};
use sfz_wire::tags;
use sfz_wire::variant::Check;

/// An owned `c10::OperatorHandle`.
pub(super) struct OpHandle(pub(super) *mut c_void);

impl Drop for OpHandle {
    fn drop(&mut self) {
        // SAFETY: the pointer came from sfz_op_find and is freed once.
        unsafe { ffi::sfz_op_free(self.0) }
    }
}

/// The shim's per-call state (the boxed stack, outputs, error), reused across calls.
pub(super) struct CallState(pub(super) *mut c_void);

impl CallState {
    pub(super) fn new() -> CallState {
        // SAFETY: plain allocation on the C++ side.
        CallState(unsafe { ffi::sfz_call_new() })
    }
}

impl Drop for CallState {
    fn drop(&mut self) {
        // SAFETY: the pointer came from sfz_call_new and is freed once.
        unsafe { ffi::sfz_call_free(self.0) }
    }
}

/// One loaded operator.
pub(super) struct LoadedOp {
    handle: OpHandle,
    pub binding: OpBinding,
    pub schema: OpSchema,
    /// Case arguments some schema argument reads; others (Python-only) are not materialised.
    pub used: Vec<usize>,
    /// The forward of a `from` statement, called first to fill some arguments.
    pub forward: Option<Box<LoadedForward>>,
}

/// A loaded forward: its operator and where each of its arguments comes from.
pub(super) struct LoadedForward {
    pub api: String,
    pub op: LoadedOp,
    pub args: Vec<FwdArg>,
}

/// Executes cases against the operators of one `Load`.
pub struct Executor {
    pub(super) ops: Vec<Result<LoadedOp, String>>,
    /// Differential checks per op (see `runtime::checks`).
    pub(super) checks: Vec<Vec<Check>>,
    pub(super) call: CallState,
}

/// Why a case could not even reach the operator.
pub(super) struct Rejected {
    pub class: ErrorClass,
    pub message: String,
}

pub(super) fn schema_error(message: String) -> Rejected {
    Rejected { class: ErrorClass::Schema, message }
}

impl Rejected {
    pub fn into_outcome(self) -> Outcome {
        Outcome::Raised { class: self.class, message: self.message, micros: 0 }
    }
}

/// The materialised tensors of one call: per case argument, its range in `tensors`. The
/// boxed stack holds pointers into `tensors`, so they outlive the call.
#[derive(Default)]
pub(super) struct Inputs {
    pub tensors: Vec<Tensor>,
    pub ranges: Vec<(usize, usize)>,
}

impl Inputs {
    /// The tensors of case argument `index`.
    pub fn of(&self, index: usize) -> &[Tensor] {
        let (start, end) = self.ranges.get(index).copied().unwrap_or((0, 0));
        &self.tensors[start..end]
    }

    /// The same inputs with each tensor replaced by `f(argument index, tensor)`.
    pub fn map(&self, mut f: impl FnMut(usize, &Tensor) -> Result<Tensor, tch::TchError>) -> Result<Inputs, tch::TchError> {
        let mut tensors = Vec::with_capacity(self.tensors.len());
        for (arg, &(start, end)) in self.ranges.iter().enumerate() {
            for t in &self.tensors[start..end] {
                tensors.push(f(arg, t)?);
            }
        }
        Ok(Inputs { tensors, ranges: self.ranges.clone() })
    }
}

/// What one boxed call produced: the outcome, and when it returned (and they were asked for)
/// the output tensors, parallel to the outcome's outputs (None for non-tensor outputs).
pub(super) struct Called {
    pub outcome: Outcome,
    pub tensors: Vec<Option<Tensor>>,
}

impl Default for Executor {
    fn default() -> Self {
        Executor::new()
    }
}

impl Executor {
    /// An executor with no operators loaded. `sfz_init` should have run (the worker does it).
    pub fn new() -> Executor {
        let call = CallState::new();
        Executor { ops: Vec::new(), checks: Vec::new(), call }
    }

    /// Resolves bindings to dispatcher handles, replacing any loaded before (and their checks).
    /// Cases name them by index. Per binding: None when loaded, else why not.
    pub fn load(&mut self, bindings: &[OpBinding]) -> Vec<Option<String>> {
        self.ops = bindings.iter().map(load_one).collect();
        self.checks.clear();
        self.ops.iter().map(|r| r.as_ref().err().cloned()).collect()
    }

    /// Runs one case to an outcome. Never panics on anything in the case.
    pub fn run(&mut self, case: &Case) -> Outcome {
        match self.run_inner(case, false) {
            Ok((called, _)) => called.outcome,
            Err(r) => r.into_outcome(),
        }
    }

    /// The op of a case, or why it cannot run.
    pub(super) fn op(&self, index: u32) -> Result<&LoadedOp, Rejected> {
        match self.ops.get(index as usize) {
            Some(Ok(op)) => Ok(op),
            Some(Err(e)) => Err(schema_error(format!("op {index} did not load: {e}"))),
            None => Err(schema_error(format!("op {index} is not loaded ({} are)", self.ops.len()))),
        }
    }

    /// Whether op `index` writes into an argument (`abs_`, `out=`, `Tensor(a!)`).
    pub(super) fn mutates(&self, index: u32) -> bool {
        self.op(index).is_ok_and(|op| op.schema.has_mutable_args())
    }

    /// The name of the schema argument that case argument `arg` of op `index` fills, when one
    /// does (`n` of `aten::special_hermite_polynomial_he`).
    pub(super) fn schema_arg_name(&self, index: u32, arg: usize) -> Option<&str> {
        let op = self.op(index).ok()?;
        let position = op.binding.args.iter().position(|s| matches!(s, ArgSource::Param { index, .. } if *index == arg))?;
        op.schema.args.get(position).map(|a| a.name.as_str())
    }

    /// Whether case argument `arg` of op `index` is a polynomial's integer degree
    /// (`tags::integer_degree`): walks along a ray or by halvings keep it as it is.
    pub(super) fn is_degree(&self, index: u32, arg: usize) -> bool {
        self.schema_arg_name(index, arg).is_some_and(|name| tags::integer_degree(self.op_name(index), name))
    }

    /// The qualified name of op `index` (`aten::svd`); empty when it did not load.
    pub(super) fn op_name(&self, index: u32) -> &str {
        self.op(index).map_or("", |op| op.binding.name.as_str())
    }

    /// Runs a case as it is: materialise, call, observe; the output tensors are kept when asked.
    pub(super) fn run_inner(&mut self, case: &Case, keep: bool) -> Result<(Called, Inputs), Rejected> {
        let inputs = self.materialize(case.op, case, &mut |r| materialize(r))?;
        let called = self.invoke(case.op, case, &inputs, &[], keep)?;
        Ok((called, inputs))
    }

    /// Builds every tensor the op's binding reads from the case, with `build`. Arguments a
    /// `from` statement's forward fills come from its outputs (`runtime::forward`), built with
    /// the same `build`, so that every variant of the case sees consistent inputs.
    pub(super) fn materialize(&self, op: u32, case: &Case, build: &mut dyn FnMut(&TensorRecipe) -> Result<Tensor, tch::TchError>) -> Result<Inputs, Rejected> {
        let op = self.op(op)?;
        let bound: Vec<&Bind> = match (&case.forward, &op.forward) {
            // A tensor argument only: a violation may have made it None or another type.
            (Some(f), Some(_)) => f.binds.iter().filter(|b| matches!(case.args.get(b.param), Some(Arg::Tensor(_)))).collect(),
            (Some(f), None) if !f.binds.is_empty() => {
                return Err(schema_error("the case takes arguments from a forward call, but its op has no `from` statement".into()));
            }
            _ => Vec::new(),
        };
        let mut plain: Vec<Option<Vec<Tensor>>> = (0..case.args.len()).map(|_| None).collect();
        for &index in &op.used {
            let Some(arg) = case.args.get(index) else {
                return Err(schema_error(format!("the binding reads argument {index} but the case has {}", case.args.len())));
            };
            if bound.iter().any(|b| b.param == index) {
                continue;
            }
            let mut ts = Vec::new();
            for recipe in arg.tensors() {
                ts.push(build(recipe).map_err(|e| schema_error(format!("cannot build argument {index}: {e}")))?);
            }
            plain[index] = Some(ts);
        }
        let mut fed = match &op.forward {
            Some(forward) if !bound.is_empty() => self.feed(forward, case, &bound, &plain, build)?,
            _ => Vec::new(),
        };
        // In argument order: `Inputs::map` relies on it.
        let mut inputs = Inputs { tensors: Vec::new(), ranges: vec![(0, 0); case.args.len()] };
        for (index, ts) in plain.into_iter().enumerate() {
            let start = inputs.tensors.len();
            if let Some(k) = fed.iter().position(|(p, _)| *p == index) {
                inputs.tensors.push(fed.swap_remove(k).1);
            } else if let Some(ts) = ts {
                inputs.tensors.extend(ts);
            }
            inputs.ranges[index] = (start, inputs.tensors.len());
        }
        Ok(inputs)
    }

    /// Calls op `op` with the case's values and `inputs`' tensors; `outs` feed `ArgSource::Output`
    /// arguments; the output tensors are returned when `keep`. A call that raises is `Ok` with a
    /// `Raised` outcome; `Err` means the arguments could not even be put on the stack.
    pub(super) fn invoke(&mut self, op: u32, case: &Case, inputs: &Inputs, outs: &[Tensor], keep: bool) -> Result<Called, Rejected> {
        let op = self.op(op)?;
        self.call_op(op, case, inputs, outs, keep)
    }

    /// `invoke` on a loaded op (an op of the table, or a forward).
    pub(super) fn call_op(&self, op: &LoadedOp, case: &Case, inputs: &Inputs, outs: &[Tensor], keep: bool) -> Result<Called, Rejected> {
        let call = self.call.0;
        // SAFETY: `call` is live; every pointer pushed below stays valid until sfz_call_run returns.
        unsafe { ffi::sfz_call_reset(call) };
        for (position, source) in op.binding.args.iter().enumerate() {
            let ty = &op.schema.args[position].ty;
            match source {
                ArgSource::Default => push_default(call, &op.handle, position, ty)?,
                ArgSource::Value(v) => push(call, v, ty, &[])?,
                ArgSource::Output(k) => match outs.get(*k) {
                    // SAFETY: live call; the tensor outlives the call.
                    Some(t) => unsafe { ffi::sfz_push_tensor(call, t.as_ptr()) },
                    None => return Err(schema_error(format!("no tensor for output argument {k}"))),
                },
                ArgSource::Param { index, transform } => {
                    let Some(arg) = case.args.get(*index) else {
                        return Err(schema_error(format!("the binding reads argument {index} but the case has {}", case.args.len())));
                    };
                    let tensors = inputs.of(*index);
                    match (arg, transform) {
                        (Arg::Omitted, Transform::OmittedAs(v)) => push(call, v, ty, &[])?,
                        (Arg::Omitted, _) => push_default(call, &op.handle, position, ty)?,
                        (Arg::None, Transform::NoneAs(v)) => push(call, v, ty, &[])?,
                        (_, Transform::EmbeddingPaddingIdx { weight }) => {
                            let v = embedding_padding_idx(arg, case.args.get(*weight))?;
                            push(call, &v, ty, &[])?
                        }
                        _ => push(call, arg, ty, tensors)?,
                    }
                }
            }
        }
        let start = Instant::now();
        // SAFETY: the stack was filled above; the handle is live.
        let status = crate::fault::in_call(|| unsafe { ffi::sfz_call_run(call, op.handle.0) });
        let micros = u32::try_from(start.elapsed().as_micros()).unwrap_or(u32::MAX);
        if status != 0 {
            // SAFETY: the error string lives in `call` until the next reset.
            let message = unsafe { CStr::from_ptr(ffi::sfz_call_error(call)) }.to_string_lossy().into_owned();
            return Ok(Called { outcome: Outcome::Raised { class: ErrorClass::from_code(status), message, micros }, tensors: Vec::new() });
        }
        match observe(call) {
            Ok(outputs) => Ok(Called { outcome: Outcome::Returned { outputs, micros }, tensors: if keep { self.tensor_slots() } else { Vec::new() } }),
            Err(r) => Ok(Called { outcome: Outcome::Raised { class: r.class, message: r.message, micros }, tensors: Vec::new() }),
        }
    }

    /// The output tensors of the last call that returned, parallel to its flattened outputs.
    fn tensor_slots(&self) -> Vec<Option<Tensor>> {
        // SAFETY: as in `output_tensors`.
        unsafe {
            let n = ffi::sfz_call_num_outputs(self.call.0);
            (0..n)
                .map(|k| {
                    let (mut i, mut d) = (0i64, 0f64);
                    (ffi::sfz_call_output(self.call.0, k, &mut i, &mut d) == 0).then(|| Tensor::from_ptr(ffi::sfz_call_tensor(self.call.0, i)))
                })
                .collect()
        }
    }

    /// The output tensors of the last call that returned, in flattened output order.
    pub fn output_tensors(&self) -> Vec<Tensor> {
        // SAFETY: indices are below the count the shim reports; sfz_call_tensor returns a new
        // owned at::Tensor that tch frees.
        unsafe {
            let n = ffi::sfz_call_num_outputs(self.call.0);
            (0..n)
                .filter_map(|k| {
                    let (mut i, mut d) = (0i64, 0f64);
                    (ffi::sfz_call_output(self.call.0, k, &mut i, &mut d) == 0).then_some(i)
                })
                .map(|index| Tensor::from_ptr(ffi::sfz_call_tensor(self.call.0, index)))
                .collect()
        }
    }
}

fn load_one(b: &OpBinding) -> Result<LoadedOp, String> {
    let (handle, text) = find(&b.name, &b.overload).map_err(|e| e.unwrap_or_else(|| format!("`{}` not found", b.qualified())))?;
    if !b.schema.is_empty() && b.schema != text {
        return Err(format!("resolved against `{}` but this libtorch has `{text}`", b.schema));
    }
    let schema = schema::parse(&text).map_err(|e| e.to_string())?;
    let forward = match &b.forward {
        Some(f) => Some(Box::new(LoadedForward { api: f.api.clone(), op: load_one(&f.binding).map_err(|e| format!("its forward `{}`: {e}", f.api))?, args: f.args.clone() })),
        None => None,
    };
    if schema.args.len() != b.args.len() {
        return Err(format!("the binding has {} arguments, `{text}` has {}", b.args.len(), schema.args.len()));
    }
    for (source, arg) in b.args.iter().zip(&schema.args) {
        // The shim passes the CPU for a `Device` without default.
        if *source == ArgSource::Default && arg.default.is_none() && !arg.ty.is_optional() && arg.ty != SchemaType::Device {
            return Err(format!("argument `{}` of `{text}` has no default", arg.name));
        }
    }
    let mut used: Vec<usize> = b
        .args
        .iter()
        .filter_map(|s| match s {
            ArgSource::Param { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    used.sort_unstable();
    used.dedup();
    Ok(LoadedOp { handle, binding: b.clone(), schema, used, forward })
}

/// The dispatcher's handle for `name.overload` and its schema text. Err(None): no such operator.
pub(super) fn find(name: &str, overload: &str) -> Result<(OpHandle, String), Option<String>> {
    let name = CString::new(name).map_err(|_| Some("name holds a NUL byte".to_string()))?;
    let overload = CString::new(overload).map_err(|_| Some("overload holds a NUL byte".to_string()))?;
    let mut err = std::ptr::null_mut();
    // SAFETY: valid C strings; on failure the shim sets `err` to a malloc'd string we free.
    let raw = unsafe { ffi::sfz_op_find(name.as_ptr(), overload.as_ptr(), &mut err) };
    if raw.is_null() {
        if err.is_null() {
            return Err(None);
        }
        // SAFETY: set by the shim, freed once here.
        let m = unsafe { CStr::from_ptr(err) }.to_string_lossy().into_owned();
        unsafe { ffi::sfz_free(err) };
        return Err(Some(m));
    }
    let handle = OpHandle(raw);
    // SAFETY: live handle; the returned string is freed once.
    let text = unsafe {
        let p = ffi::sfz_op_handle_schema(handle.0);
        if p.is_null() {
            return Err(Some("cannot read the operator's schema".to_string()));
        }
        let s = CStr::from_ptr(p).to_string_lossy().into_owned();
        ffi::sfz_free(p);
        s
    };
    Ok((handle, text))
}

/// F.embedding's Python-side handling of `padding_idx`, including its range assertion.
pub(super) fn embedding_padding_idx(arg: &Arg, weight: Option<&Arg>) -> Result<Arg, Rejected> {
    let p = match arg {
        Arg::None => return Ok(Arg::Int(-1)),
        Arg::Int(p) => *p,
        other => return Ok(other.clone()),
    };
    let Some(Arg::Tensor(w)) = weight else { return Ok(Arg::Int(p)) };
    let Some(&rows) = w.shape.first() else { return Ok(Arg::Int(p)) };
    if (p > 0 && p >= rows) || (p < 0 && p < -rows) {
        // Python asserts this before reaching ATen, which would not check it in a forward call.
        return Err(Rejected { class: ErrorClass::Value, message: "Padding_idx must be within num_embeddings (Python-level check of F.embedding)".into() });
    }
    Ok(Arg::Int(if p < 0 { p + rows } else { p }))
}

pub(super) fn push_default(call: *mut c_void, op: &OpHandle, position: usize, ty: &SchemaType) -> Result<(), Rejected> {
    // SAFETY: live call and handle; position is within the schema (checked at load).
    let pushed = unsafe { ffi::sfz_push_default(call, op.0, position as i64) };
    if pushed == 0 {
        if ty.is_optional() {
            // SAFETY: live call.
            unsafe { ffi::sfz_push_none(call) };
        } else {
            return Err(schema_error(format!("argument {position} was omitted and has no default")));
        }
    }
    Ok(())
}

/// Pushes one value as the schema type wants it. `tensors` are the materialised tensors of
/// `arg` (empty for values that hold none).
fn push(call: *mut c_void, arg: &Arg, ty: &SchemaType, tensors: &[Tensor]) -> Result<(), Rejected> {
    // SAFETY (whole block): `call` is live; slices and strings outlive each push, which copies.
    unsafe {
        match arg {
            Arg::None | Arg::Omitted => ffi::sfz_push_none(call),
            Arg::Bool(b) => ffi::sfz_push_bool(call, *b),
            Arg::Int(v) => push_int(call, *v, ty),
            Arg::Float(v) => ffi::sfz_push_double(call, *v),
            Arg::Str(s) => {
                let c = CString::new(s.as_str()).map_err(|_| schema_error("a string argument holds a NUL byte".into()))?;
                ffi::sfz_push_str(call, c.as_ptr())
            }
            Arg::Dtype(d) => ffi::sfz_push_scalar_type(call, DType::aten_id(*d)),
            Arg::IntList(xs) => push_int_list(call, xs, ty),
            Arg::FloatList(xs) => ffi::sfz_push_double_list(call, xs.as_ptr(), xs.len() as i64),
            Arg::BoolList(xs) => ffi::sfz_push_bool_list(call, xs.as_ptr(), xs.len() as i64),
            Arg::Tensor(_) => match tensors.first() {
                Some(t) => ffi::sfz_push_tensor(call, t.as_ptr()),
                None => return Err(schema_error("a tensor argument was not materialised".into())),
            },
            Arg::TensorList(_) => push_tensor_list(call, tensors, ty),
        }
    }
    Ok(())
}

/// The element type and length of a list schema type (`int[2]`), None for other types.
fn list_elem(ty: &SchemaType) -> Option<(&SchemaType, Option<u32>)> {
    match ty.strip_optional() {
        SchemaType::List(elem, n) => Some((elem.as_ref(), *n)),
        _ => None,
    }
}

/// An int as Python's argument parser passes it: a float where a float goes, `[v] * N` where
/// `int[N]` or `float[N]` goes.
pub(super) fn push_int(call: *mut c_void, v: i64, ty: &SchemaType) {
    // SAFETY (whole block): `call` is live; the vectors outlive each push, which copies.
    unsafe {
        match (ty.strip_optional(), list_elem(ty)) {
            (SchemaType::Float, _) => ffi::sfz_push_double(call, v as f64),
            (_, Some((SchemaType::Float, n))) => {
                let xs = vec![v as f64; n.unwrap_or(1) as usize];
                ffi::sfz_push_double_list(call, xs.as_ptr(), xs.len() as i64)
            }
            (_, Some((elem, n))) if elem.is_int() => {
                let xs = vec![v; n.unwrap_or(1) as usize];
                ffi::sfz_push_int_list(call, xs.as_ptr(), xs.len() as i64)
            }
            _ => ffi::sfz_push_int(call, v),
        }
    }
}

/// A list of ints, as floats where `float[]` goes.
pub(super) fn push_int_list(call: *mut c_void, xs: &[i64], ty: &SchemaType) {
    // SAFETY (whole block): `call` is live; the slices outlive each push, which copies.
    unsafe {
        match list_elem(ty) {
            Some((SchemaType::Float, _)) => {
                let fs: Vec<f64> = xs.iter().map(|&x| x as f64).collect();
                ffi::sfz_push_double_list(call, fs.as_ptr(), fs.len() as i64)
            }
            _ => ffi::sfz_push_int_list(call, xs.as_ptr(), xs.len() as i64),
        }
    }
}

/// Tensors as a `Tensor[]` or a `Tensor?[]`.
pub(super) fn push_tensor_list(call: *mut c_void, tensors: &[Tensor], ty: &SchemaType) {
    let ptrs: Vec<_> = tensors.iter().map(Tensor::as_ptr).collect();
    // SAFETY: `call` is live; the tensors outlive the call, the pointer vector the push.
    unsafe {
        match list_elem(ty) {
            Some((SchemaType::Optional(_), _)) => ffi::sfz_push_opt_tensor_list(call, ptrs.as_ptr(), ptrs.len() as i64),
            _ => ffi::sfz_push_tensor_list(call, ptrs.as_ptr(), ptrs.len() as i64),
        }
    }
}

/// Reads the flattened outputs of a call that returned.
fn observe(call: *mut c_void) -> Result<Vec<Output>, Rejected> {
    // SAFETY: `call` holds the outputs of the last run; indices stay below the reported count.
    unsafe {
        let n = ffi::sfz_call_num_outputs(call);
        let mut outputs = Vec::with_capacity(n as usize);
        let mut shape = vec![0i64; 8];
        for k in 0..n {
            let (mut i, mut d) = (0i64, 0f64);
            let out = match ffi::sfz_call_output(call, k, &mut i, &mut d) {
                0 => {
                    let mut info = SfzTensorInfo::default();
                    let mut status = ffi::sfz_call_tensor_info(call, i, &mut info, shape.as_mut_ptr(), shape.len() as i64);
                    if status == 0 && info.ndim > shape.len() as i64 {
                        shape.resize(info.ndim as usize, 0);
                        status = ffi::sfz_call_tensor_info(call, i, &mut info, shape.as_mut_ptr(), shape.len() as i64);
                    }
                    if status != 0 {
                        let message = CStr::from_ptr(ffi::sfz_call_error(call)).to_string_lossy().into_owned();
                        return Err(Rejected { class: ErrorClass::from_code(status), message: format!("reading output {k}: {message}") });
                    }
                    if info.defined == 0 {
                        Output::None
                    } else {
                        Output::Tensor(TensorInfo {
                            dtype: DType::from_aten_id(info.scalar_type),
                            shape: shape[..info.ndim as usize].to_vec(),
                            nan: info.nan as u64,
                            inf: info.inf as u64,
                            min: (info.has_minmax == 1).then_some(info.min),
                            max: (info.has_minmax == 1).then_some(info.max),
                        })
                    }
                }
                1 => Output::Int(i),
                2 => Output::Float(d),
                3 => Output::Bool(i != 0),
                4 => Output::None,
                _ => Output::Other,
            };
            outputs.push(out);
        }
        Ok(outputs)
    }
}
