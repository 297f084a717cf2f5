//! A program step that calls an ATen operator by schema, through the dispatcher's boxed call
//! that `sfz fuzz` uses for its cases: every operator libtorch registers replays in a hunt, and
//! autograd records it like any other (the hunt's gradient search goes through it).
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::CStr;

use tch::Tensor;

use super::apply::{err, R, V};
use crate::runtime::executor::{find, push_default, push_int, push_int_list, push_tensor_list, CallState, OpHandle};
use crate::runtime::ffi;
use sfz_wire::case::DType;
use sfz_wire::program::ir::AtenCall;
use sfz_wire::schema::{self, OpSchema, SchemaType};

struct Loaded {
    handle: OpHandle,
    schema: OpSchema,
}

/// Operators resolved so far, by (name, overload), or why one cannot be.
type Cache = HashMap<(String, String), Result<std::rc::Rc<Loaded>, String>>;

thread_local! {
    /// The resolved operators; the shim's call state, reused.
    static LOADED: RefCell<Cache> = RefCell::new(HashMap::new());
    static CALL: CallState = CallState::new();
}

fn load(call: &AtenCall) -> Result<std::rc::Rc<Loaded>, String> {
    LOADED.with(|l| {
        l.borrow_mut()
            .entry((call.name.clone(), call.overload.clone()))
            .or_insert_with(|| {
                let (handle, text) = find(&call.name, &call.overload).map_err(|e| e.unwrap_or_else(|| format!("no operator `{}`", call.python())))?;
                let schema = schema::parse(&text).map_err(|e| e.to_string())?;
                Ok(std::rc::Rc::new(Loaded { handle, schema }))
            })
            .clone()
    })
}

/// Calls the operator on `args` (positional, in schema order; the rest take their defaults) and
/// returns output `call.output`. An argument the operator writes into is copied first, so that
/// a program's earlier values stay as they were.
pub(super) fn call(call: &AtenCall, args: &[V]) -> R<Tensor> {
    // Errors name the operator: a program may call many.
    run(call, args).map_err(|e| {
        let message = match e {
            tch::TchError::Kind(m) | tch::TchError::Torch(m) => m,
            e => e.to_string(),
        };
        tch::TchError::Torch(format!("{}: {message}", call.python()))
    })
}

fn run(call: &AtenCall, args: &[V]) -> R<Tensor> {
    let op = load(call).map_err(|e| err(&e))?;
    if args.len() > op.schema.args.len() {
        return Err(err(&format!("{} takes {} arguments, the step passes {}", call.python(), op.schema.args.len(), args.len())));
    }
    // Copies of written tensors, alive until the call returns.
    let mut copies: Vec<Tensor> = Vec::new();
    CALL.with(|state| {
        let c = state.0;
        // SAFETY: the call state is live; every pointer pushed stays valid until the run returns.
        unsafe { ffi::sfz_call_reset(c) };
        for (position, arg) in op.schema.args.iter().enumerate() {
            match args.get(position) {
                None => push_default(c, &op.handle, position, &arg.ty).map_err(|r| err(&r.message))?,
                Some(V::T(t)) if arg.mutable => {
                    copies.push(t.copy());
                    // SAFETY: as above; the copy lives in `copies`.
                    unsafe { ffi::sfz_push_tensor(c, copies.last().map(Tensor::as_ptr).unwrap_or(t.as_ptr())) }
                }
                Some(v) => push(c, v, &arg.ty),
            }
        }
        // SAFETY: the stack was filled above; the handle is live.
        let status = crate::fault::in_call(|| unsafe { ffi::sfz_call_run(c, op.handle.0) });
        if status != 0 {
            // SAFETY: the error string lives in the call state until the next reset.
            let message = unsafe { CStr::from_ptr(ffi::sfz_call_error(c)) }.to_string_lossy().into_owned();
            return Err(err(&message));
        }
        // SAFETY: the outputs of the run just made; `k` is checked against their count.
        unsafe {
            let k = call.output as i64;
            if k >= ffi::sfz_call_num_outputs(c) {
                return Err(err(&format!("{} has no output {k}", call.python())));
            }
            let (mut i, mut d) = (0i64, 0f64);
            match ffi::sfz_call_output(c, k, &mut i, &mut d) {
                0 => Ok(Tensor::from_ptr(ffi::sfz_call_tensor(c, i))),
                _ => Err(err(&format!("output {k} of {} is not a tensor", call.python()))),
            }
        }
    })
}

/// Pushes one program value as the schema type wants it (the conversions of Python's argument
/// parser that a traced call relied on: an int where a float goes, an int where `int[N]` goes).
fn push(c: *mut std::os::raw::c_void, v: &V, ty: &SchemaType) {
    // SAFETY (whole block): `c` is live; the values outlive each push, which copies.
    unsafe {
        match v {
            V::N => ffi::sfz_push_none(c),
            V::B(b) => ffi::sfz_push_bool(c, *b),
            V::F(x) => ffi::sfz_push_double(c, *x),
            V::I(x) => push_int(c, *x, ty),
            V::D(d) => ffi::sfz_push_scalar_type(c, DType::aten_id(*d)),
            V::L(xs) => push_int_list(c, xs, ty),
            V::T(t) => ffi::sfz_push_tensor(c, t.as_ptr()),
            V::Ts(ts) => match ts.iter().map(Option::as_ref).collect::<Option<Vec<&Tensor>>>() {
                Some(all) => push_tensor_list(c, &all.into_iter().map(Tensor::shallow_clone).collect::<Vec<_>>(), ty),
                // A `Tensor?[]` holding None: null entries.
                None => {
                    let ptrs: Vec<_> = ts.iter().map(|t| t.as_ref().map_or(std::ptr::null(), |t| t.as_ptr() as *const _)).collect();
                    ffi::sfz_push_opt_tensor_list(c, ptrs.as_ptr(), ptrs.len() as i64)
                }
            },
            // A NUL byte cannot come from a program's string literal.
            V::S(s) => match std::ffi::CString::new(s.as_str()) {
                Ok(s) => ffi::sfz_push_str(c, s.as_ptr()),
                Err(_) => ffi::sfz_push_none(c),
            },
        }
    }
}
