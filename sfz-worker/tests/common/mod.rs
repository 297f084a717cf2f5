//! What the libtorch-linking test files share.

// The precision check's executor: not every test file uses it.
#[allow(dead_code)]
pub mod reference;

/// libtorch's default generator is one per process, and the tests of a file run on parallel
/// threads: a test that seeds it and draws (`materialize`, `tch::manual_seed`, an `Executor`
/// building its inputs) holds this lock, or another test's draws land between its seed and its
/// fill. (A worker runs one case at a time, so the worker itself has no such race.)
pub fn rng_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
