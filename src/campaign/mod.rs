//! Campaigns larger than one process: `shard` splits the APIs over N processes, `manifest`
//! records what a findings folder's campaign was (for `--resume` and for merging) and how far
//! it got; `merge` joins several folders into one and `coverage` their per-API coverage.
pub mod costs;
pub mod coverage;
pub mod manifest;
pub mod merge;
pub mod shard;

pub use manifest::{Manifest, Progress};
pub use shard::{Shard, ShardError};
