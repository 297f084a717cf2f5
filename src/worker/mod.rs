//! Isolated execution: worker processes that run cases against libtorch, and the supervisor in
//! the parent that feeds them, watches them die, and restarts them.
pub mod protocol;
