//! Isolated execution: worker processes that run cases against libtorch, and the supervisor in
//! the parent that feeds them, watches them die, and restarts them.
pub mod progress;
pub mod protocol;
#[cfg(feature = "torch")]
pub mod serve;
pub mod supervisor;
