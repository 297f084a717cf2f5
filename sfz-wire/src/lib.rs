//! The wire: what both sides of the process boundary must agree on, and what a findings folder
//! keeps of it. The data: `case` (a call with tensor recipes), `outcome` (what the worker saw),
//! `variant` (differential checks and their reports), `oracle` (the `Oracle` enum every
//! detection names), `program` (the program IR and a hunt episode's request and result),
//! `frames` (the native frames a dying worker writes to stderr), `float` (a non-finite float a
//! findings file can read back) and `seed` (seeds derived from seeds). The operators:
//! `binding` (which operator a case calls, and where each argument comes from), `schema` (the
//! operator schemas both sides parse), `tags` (what torch's tags say of an operator) and
//! `errors` (what a libtorch error means). The channels: `protocol` (the frames on a worker's
//! pipes), `progress` (the shared page) and `forkserver` (the zygote's messages).
//!
//! Both `sfz` and `sfz-worker` depend on this crate and `sfz-worker` on nothing else of sfz's,
//! so Cargo keeps the boundary: plain data and pure functions, no solver, no language server,
//! no network.
pub mod binding;
pub mod case;
pub mod errors;
pub mod float;
pub mod forkserver;
pub mod frames;
pub mod oracle;
pub mod outcome;
pub mod program;
pub mod progress;
pub mod protocol;
pub mod schema;
pub mod seed;
pub mod tags;
pub mod variant;
