//! Findings: stored the moment they are found, deduplicated by cause, each with a standalone
//! Python reproducer.
pub mod repro;
pub mod store;

pub use store::{finding_id, Finding, Key, Store, StoreError};
