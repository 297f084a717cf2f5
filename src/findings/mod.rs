//! Findings: stored the moment they are found, deduplicated by cause, each with a standalone
//! Python reproducer.
pub mod baseline;
pub mod causes;
pub mod describe;
pub mod issue;
pub mod minimize;
pub mod pinned;
pub mod record;
pub mod report;
pub mod repro;
pub mod severity;
pub mod store;
pub mod verified;
pub mod verify;

pub use store::{finding_id, load, Finding, Key, Loaded, Minimization, Original, SkippedLine, SpecLocation, Store, StoreError, TriageState};
