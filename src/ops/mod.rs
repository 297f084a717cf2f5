//! What sfz knows of libtorch's operators without loading libtorch: schemas (read from a worker),
//! and how a Python API name maps to an ATen operator and its arguments.
pub mod binding;
pub mod catalog;
pub mod diagnostic;
pub mod docs;
pub mod registry;
pub mod schema;
pub mod tags;
pub mod twins;
