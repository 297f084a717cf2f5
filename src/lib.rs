//! sfz: a spec-driven fuzzer for PyTorch APIs. See ARCHITECTURE.md for the stages and the types
//! that flow between them.
pub mod ast;
pub mod campaign;
pub mod check;
pub mod cli;
pub mod diag;
pub mod eval;
pub mod findings;
pub mod fmt;
pub mod fuzz;
pub mod gen;
pub mod lsp;
pub mod numeric;
pub mod ops;
pub mod oracle;
pub mod plan;
pub mod rules;
pub mod solve;
pub mod spec;
pub mod stdlib;
pub mod syntax;
pub mod triage;
pub mod worker;

// What the worker process must agree on lives in its own crate, `sfz-wire`, which `sfz-worker`
// depends on instead of this one; `crate::wire` and `crate::seed` name it here.
pub use sfz_wire as wire;
pub use sfz_wire::seed;
