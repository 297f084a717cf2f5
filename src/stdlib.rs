//! The standard library of specs, embedded so that `sfz` works from any directory and the
//! language server can show stdlib docs without a checkout. `std::X` is `stdlib/X.sfz`.

/// (module name, source) for every stdlib module.
pub static MODULES: &[(&str, &str)] = &[
    ("dtypes", include_str!("../stdlib/dtypes.sfz")),
    ("oracles", include_str!("../stdlib/oracles.sfz")),
    ("constraints", include_str!("../stdlib/constraints.sfz")),
    ("types", include_str!("../stdlib/types.sfz")),
    ("relations", include_str!("../stdlib/relations.sfz")),
];

/// The source of `std::<name>`.
pub fn source(name: &str) -> Option<&'static str> {
    MODULES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// The display path of a stdlib module in diagnostics.
pub fn display_path(name: &str) -> String {
    format!("<std>/{name}.sfz")
}
