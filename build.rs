//! Links sfz against the libz3 that `scripts/setup.sh` pinned, with an rpath so that neither the
//! binary nor the test binaries need LD_LIBRARY_PATH. libtorch is the `sfz-worker` package's
//! business (see `sfz-worker/build.rs`); nothing here may link it.
use std::env;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=Z3_LIBRARY_PATH_OVERRIDE");
    if let Ok(z3) = env::var("Z3_LIBRARY_PATH_OVERRIDE") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{z3}");
    }
}
