//! Numerical-bug hunting on `program` items (their IR and the worker messages are in
//! `program`): the parent's driver of hunts (`driver`), per-program reports with Python
//! reproducers (`report`), `sfz hunt script.py` (`script`), and the one-op programs soft
//! assertions are trained on (`sweep`). Nothing here touches libtorch;
//! the worker's interpreter is `sfz-worker/src/runtime/program.rs`.
pub mod driver;
pub mod report;
pub mod script;
pub mod sweep;
