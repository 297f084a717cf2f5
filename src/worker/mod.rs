//! Isolated execution seen from the parent: the protocol spoken with `sfz-worker` processes
//! (the `sfz-worker` package), the shared progress page, and the supervisor that feeds workers,
//! watches them die, and restarts them.
pub mod execution;
pub mod forkserver;
pub mod progress;
pub mod protocol;
pub mod supervisor;

pub use execution::{Execution, EARLIER_CASES};
