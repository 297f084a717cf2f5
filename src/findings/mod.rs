//! Findings: stored the moment they are found, deduplicated by cause, each with a standalone
//! Python reproducer.
pub mod minimize;
pub mod pinned;
pub mod report;
pub mod repro;
pub mod store;
pub mod verify;

pub use store::{finding_id, load, Finding, Key, Loaded, Minimization, Original, SkippedLine, SpecLocation, Store, StoreError};
