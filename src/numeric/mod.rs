//! Numerical-bug hunting on `program` items: the program IR and its lowering (`program`, `ops`),
//! what a hunt asks of a worker and what comes back (`hunt`), soft assertions (`forest`,
//! `soft`), the parent's driver of hunts (`driver`) and per-program reports with Python
//! reproducers (`report`). Nothing here touches libtorch; the worker's interpreter is
//! `sfz-worker/src/runtime/program.rs`.
pub mod ops;
pub mod program;
pub mod forest;
pub mod hunt;
pub mod soft;
pub mod driver;
pub mod report;
pub mod rewrite;
pub mod script;
