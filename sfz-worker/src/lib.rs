//! The libtorch side of sfz, in its own package so that nothing here can reach the `sfz` binary:
//! the shim's bindings and the executor (`runtime`), and the worker process's protocol loop
//! (`serve`), the fork server that starts workers without reloading libtorch (`forkserver`), and
//! the fatal-signal handler that writes where a worker died (`fault`).
//! The `sfz-worker` binary is the only program that links this.
//!
//! **Architecture Invariant:** the `sfz` package never depends on tch, torch-sys or this crate;
//! the parent process talks to workers only through `sfz_wire::protocol`. Nor does this crate
//! depend on `sfz` (only its tests and benches do): what both sides share is the `sfz-wire` crate.
pub mod budget;
pub mod fault;
pub mod forkserver;
pub mod runtime;
pub mod serve;
