//! The wire: what crosses the pipe between sfz and a worker, and what a findings folder keeps of
//! it. `case` (a call with tensor recipes), `outcome` (what the worker saw), `variant`
//! (differential checks and their reports), `oracle` (the `Oracle` enum every detection names),
//! `program` (the program IR and a hunt episode's request and result) and `frames` (the native
//! frames a dying worker writes to stderr); `float` writes a non-finite float so that a findings
//! file can read it back. Plain serde data that depends on nothing above it (only `seed`), so the
//! worker and every stage of the parent share one set of types.
pub mod case;
pub mod float;
pub mod frames;
pub mod oracle;
pub mod outcome;
pub mod program;
pub mod variant;
