//! Campaigns larger than one process: `shard` splits the APIs over N processes, `manifest`
//! records what a findings folder's campaign was (for `--resume` and for merging) and how far
//! it got.
pub mod costs;
pub mod manifest;
pub mod merge;
pub mod shard;

pub use manifest::{Manifest, Progress};
pub use shard::{Shard, ShardError};
