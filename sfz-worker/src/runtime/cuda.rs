//! libtorch's CUDA library, loaded before the first operator. libtorch asks for its CUDA hooks
//! once (seeding a generator does) and caches "none" for the life of the process when
//! libtorch_cuda.so is not loaded by then: loading it on first use of the `cuda` check is too
//! late. The worker links only libtorch_cpu, so it loads the CUDA library itself, at start and
//! in the fork server (its children inherit it).
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The NVIDIA driver's library: without it CUDA cannot run, and loading libtorch_cuda.so
/// (hundreds of MiB) would only cost start-up time.
const DRIVER: &CStr = c"libcuda.so.1";

/// Loads libtorch_cuda.so from beside libtorch_cpu.so once per process; Err says why CUDA is
/// not there (no driver, no CUDA library in this libtorch). Silent either way: a CPU-only
/// machine or libtorch is normal.
pub fn load() -> &'static Result<(), String> {
    static STATUS: OnceLock<Result<(), String>> = OnceLock::new();
    STATUS.get_or_init(|| {
        let dir = libtorch_dir().ok_or_else(|| "CUDA is not available: libtorch_cpu.so is not mapped into the worker".to_string())?;
        load_from(&dir, DRIVER)
    })
}

/// Loads the driver `driver`, then `dir/libtorch_cuda.so`, both RTLD_NOW | RTLD_GLOBAL (so that
/// its static initializers register the CUDA hooks and kernels with libtorch).
pub fn load_from(dir: &Path, driver: &CStr) -> Result<(), String> {
    open(driver).map_err(|e| format!("CUDA is not available: no NVIDIA driver ({e})"))?;
    let lib = dir.join("libtorch_cuda.so");
    if !lib.exists() {
        return Err(format!("CUDA is not available: this libtorch has no CUDA library ({} is absent)", lib.display()));
    }
    let path = CString::new(lib.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
    open(&path).map_err(|e| format!("CUDA is not available: {} cannot be loaded ({e})", lib.display()))
}

/// The folder of the libtorch_cpu.so this process runs with, from its memory map.
fn libtorch_dir() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .map(Path::new)
        .find(|p| p.file_name().is_some_and(|n| n == "libtorch_cpu.so"))
        .and_then(|p| p.parent().map(Path::to_path_buf))
}

fn open(name: &CStr) -> Result<(), String> {
    // SAFETY: dlopen with a valid C string; the handle is kept for the process's life.
    let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if !h.is_null() {
        return Ok(());
    }
    // SAFETY: dlerror returns a thread-local C string or null.
    let e = unsafe { libc::dlerror() };
    Err(if e.is_null() { "unknown error".to_string() } else { unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_libtorch_without_its_cuda_library_is_cpu_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        // The C library stands in for the driver, so that the missing CUDA library is what fails.
        let why = load_from(dir.path(), c"libc.so.6").expect_err("no libtorch_cuda.so there");
        assert!(why.contains("has no CUDA library"), "{why}");
    }

    #[test]
    fn a_missing_driver_is_said_first() {
        let why = load_from(Path::new("/nonexistent"), c"libsfz-no-such-driver.so.1").expect_err("no such driver");
        assert!(why.contains("no NVIDIA driver"), "{why}");
    }

    #[test]
    fn libtorch_is_found_where_it_is_mapped() {
        super::super::init(1);
        let dir = libtorch_dir().expect("libtorch_cpu.so is mapped");
        assert!(dir.join("libtorch_cpu.so").exists(), "{}", dir.display());
    }
}
