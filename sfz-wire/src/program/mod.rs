//! What a `program` is once checked, and what a hunt sends to a worker and gets back: the table
//! of operations a program may call (`ops`), the straight-line IR (`ir`), a hunt episode's
//! request and result (`hunt`), soft-assertion models (`forest`, `soft`), formula rewrites
//! against their stable forms (`rewrite`) and the ranges outputs must stay in (`range`). Wire,
//! below the checker, the worker protocol and `numeric`, which drives hunts.
pub mod forest;
pub mod hunt;
pub mod ir;
pub mod ops;
pub mod range;
pub mod rewrite;
pub mod soft;
