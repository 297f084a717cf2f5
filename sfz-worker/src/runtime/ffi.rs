//! Raw bindings to `csrc/shim.cpp`. Only `runtime` uses these; every function here is
//! exception-safe on the C++ side (errors come back as an `ErrorClass` and a message).
use std::os::raw::{c_char, c_void};
use torch_sys::C_tensor;

/// Facts about one output tensor, filled by `sfz_call_tensor_info`; mirrors the shim's struct.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SfzTensorInfo {
    /// 0 for an undefined tensor.
    pub defined: i32,
    /// c10::ScalarType, -1 when not readable.
    pub scalar_type: i32,
    /// 1 when `nan`, `inf`, `min`, `max` were computed (strided CPU tensors of known dtypes).
    pub stats: i32,
    /// 1 when `min`/`max` hold a finite value.
    pub has_minmax: i32,
    pub ndim: i64,
    pub nan: i64,
    pub inf: i64,
    pub min: f64,
    pub max: f64,
}

extern "C" {
    pub fn sfz_init(threads: i32);
    pub fn sfz_cuda_strict();
    pub fn sfz_poison_uninitialised(on: bool);
    pub fn sfz_op_count() -> i64;
    pub fn sfz_op_schema(i: i64) -> *mut c_char;
    pub fn sfz_free(p: *mut c_char);
    pub fn sfz_op_cpu_kernel(i: i64) -> i32;
    pub fn sfz_op_find(name: *const c_char, overload: *const c_char, err: *mut *mut c_char) -> *mut c_void;
    pub fn sfz_op_handle_schema(op: *mut c_void) -> *mut c_char;
    pub fn sfz_torch_version() -> *const c_char;
    pub fn sfz_enter_dual_level() -> i64;
    pub fn sfz_exit_dual_level(level: i64);
    pub fn sfz_op_free(op: *mut c_void);
    pub fn sfz_op_num_arguments(op: *mut c_void) -> i64;
    pub fn sfz_call_new() -> *mut c_void;
    pub fn sfz_call_free(c: *mut c_void);
    pub fn sfz_call_reset(c: *mut c_void);
    pub fn sfz_push_tensor(c: *mut c_void, t: *const C_tensor);
    pub fn sfz_push_none(c: *mut c_void);
    pub fn sfz_push_int(c: *mut c_void, v: i64);
    pub fn sfz_push_double(c: *mut c_void, v: f64);
    pub fn sfz_push_bool(c: *mut c_void, v: bool);
    pub fn sfz_push_str(c: *mut c_void, s: *const c_char);
    pub fn sfz_push_scalar_type(c: *mut c_void, st: i32);
    pub fn sfz_push_int_list(c: *mut c_void, v: *const i64, n: i64);
    pub fn sfz_push_double_list(c: *mut c_void, v: *const f64, n: i64);
    pub fn sfz_push_bool_list(c: *mut c_void, v: *const bool, n: i64);
    pub fn sfz_push_tensor_list(c: *mut c_void, ts: *const *const C_tensor, n: i64);
    pub fn sfz_push_opt_tensor_list(c: *mut c_void, ts: *const *const C_tensor, n: i64);
    pub fn sfz_push_default(c: *mut c_void, op: *mut c_void, pos: i64) -> i32;
    pub fn sfz_call_run(c: *mut c_void, op: *mut c_void) -> i32;
    pub fn sfz_call_error(c: *mut c_void) -> *const c_char;
    pub fn sfz_call_num_outputs(c: *mut c_void) -> i64;
    pub fn sfz_call_output(c: *mut c_void, k: i64, i: *mut i64, d: *mut f64) -> i32;
    pub fn sfz_call_tensor_info(c: *mut c_void, index: i64, info: *mut SfzTensorInfo, shape: *mut i64, cap: i64) -> i32;
    pub fn sfz_call_tensor(c: *mut c_void, index: i64) -> *mut C_tensor;
}
