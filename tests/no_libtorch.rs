//! **Architecture Invariant:** the `sfz` binary never loads libtorch; only `sfz-worker` does.
//! A dynamic dependency is a name in the binary's string table, so its absence is checkable
//! without an ELF parser: if `libtorch_cpu.so` or `libc10.so` were NEEDED, the name would be
//! in the file.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn the_sfz_binary_does_not_link_libtorch() {
    let bytes = std::fs::read(env!("CARGO_BIN_EXE_sfz")).expect("the sfz binary is built");
    // The method sees the libraries sfz does link.
    assert!(contains(&bytes, b"libz3.so"), "sfz should link libz3");
    for lib in [&b"libtorch_cpu.so"[..], b"libc10.so", b"libtorch.so"] {
        assert!(!contains(&bytes, lib), "sfz links {}", String::from_utf8_lossy(lib));
    }
}
