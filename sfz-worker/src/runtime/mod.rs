//! The only code that touches libtorch: the shim's raw bindings, recipes materialised into
//! tensors, and the executor that calls operators through the boxed dispatcher. Only the
//! `sfz-worker` binary uses this module; the parent process never loads libtorch.
pub mod checks;
pub mod compare;
mod conditioning;
pub mod cuda;
pub mod executor;
pub mod ffi;
pub mod forward;
mod gradient;
pub mod materialize;
mod normalization;
pub mod program;
pub mod ray;
mod relate;
mod representable;
mod strided;
mod twins;
mod undetermined;

use std::ffi::CStr;

pub use executor::Executor;
pub use materialize::{kind, materialize};

/// Once per process, before anything else: libtorch's CUDA library where there is one (before
/// any op, see `cuda`), no C++ backtraces in errors (formatting one costs ~7 ms per failing
/// call), `threads` intra-op threads, autograd off.
pub fn init(threads: i32) {
    let _ = cuda::load();
    // SAFETY: plain configuration calls; safe to repeat.
    unsafe { ffi::sfz_init(threads) }
}

/// The libtorch version the shim was built against, e.g. `2.13.0`.
pub fn torch_version() -> String {
    // SAFETY: a static C string.
    unsafe { CStr::from_ptr(ffi::sfz_torch_version()) }.to_string_lossy().into_owned()
}

/// Every operator schema the dispatcher knows, as text; one with no CPU kernel is marked
/// `!no-cpu ` in front (the catalog's line format, `ops::catalog::NO_CPU`).
pub fn catalog_schemas() -> Vec<String> {
    // SAFETY: indices below the count; each returned string is freed once.
    unsafe {
        (0..ffi::sfz_op_count())
            .filter_map(|i| {
                let p = ffi::sfz_op_schema(i);
                if p.is_null() {
                    return None;
                }
                let s = CStr::from_ptr(p).to_string_lossy().into_owned();
                ffi::sfz_free(p);
                Some(if ffi::sfz_op_cpu_kernel(i) == 0 { format!("{}{s}", sfz_wire::protocol::NO_CPU) } else { s })
            })
            .collect()
    }
}
