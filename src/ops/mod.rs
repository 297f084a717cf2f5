//! What sfz knows of libtorch's operators without loading libtorch: schemas (read from a worker),
//! and how a Python API name maps to an ATen operator and its arguments.
pub mod catalog;
pub mod diagnostic;
pub mod docs;
pub mod registry;
pub mod twins;

// Shared with the worker process, so kept in the `sfz-wire` crate.
pub use crate::wire::{binding, schema, tags};
