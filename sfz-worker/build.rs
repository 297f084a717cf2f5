//! Links the worker against the libtorch that `scripts/setup.sh` pinned, with an rpath so that
//! neither the binary nor the test binaries need LD_LIBRARY_PATH, and compiles the C++ shim that
//! reaches libtorch's dispatcher (see `csrc/shim.cpp`).
use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=csrc/shim.cpp");
    println!("cargo:rerun-if-env-changed=Z3_LIBRARY_PATH_OVERRIDE");

    // The worker links the `sfz` library, which links z3.
    if let Ok(z3) = env::var("Z3_LIBRARY_PATH_OVERRIDE") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{z3}");
    }
    // torch-sys declares `links = "tch"`, so its `libtorch_lib` metadata reaches us as this.
    let lib = PathBuf::from(env::var("DEP_TCH_LIBTORCH_LIB").expect("torch-sys did not report DEP_TCH_LIBTORCH_LIB; run scripts/setup.sh first"));
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    let root = lib.parent().expect("libtorch lib dir has a parent");
    cc::Build::new()
        .cpp(true)
        .file("csrc/shim.cpp")
        .include(root.join("include"))
        .include(root.join("include/torch/csrc/api/include"))
        .flag("-std=c++17")
        .flag("-D_GLIBCXX_USE_CXX11_ABI=1")
        .flag_if_supported("-Wno-unused-parameter")
        .flag_if_supported("-Wno-deprecated-declarations")
        .warnings(false)
        .compile("sfzshim");
    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:rustc-link-lib=dylib=torch_cpu");
    println!("cargo:rustc-link-lib=dylib=c10");
}
