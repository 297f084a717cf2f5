//! Numerical-bug hunting on `program` items (their IR and the worker messages are in
//! `program`): the parent's driver of hunts (`driver`), per-program reports with Python
//! reproducers (`report`), and `sfz hunt script.py` (`script`). Nothing here touches libtorch;
//! the worker's interpreter is `sfz-worker/src/runtime/program.rs`.
pub mod driver;
pub mod report;
pub mod script;
