//! The diagnostic code registry: the only place a code exists. Each code has a title, a severity
//! and an explanation page under `docs/errors/` that `sfz explain CODE` prints. A code is never
//! reused; a retired one keeps its page with a note saying so.
use super::Severity;

/// A stable diagnostic code such as `E0002`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Code(pub &'static str);

impl Code {
    /// The registry entry. Every `Code` constant below has one, which a test checks.
    pub fn info(self) -> &'static CodeInfo {
        lookup(self.0).expect("every Code constant is registered")
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// One registry entry.
#[derive(Debug)]
pub struct CodeInfo {
    pub code: Code,
    pub severity: Severity,
    pub title: &'static str,
    /// Markdown with the headings "What it means", "Example" and "How to fix".
    pub explanation: &'static str,
}

macro_rules! registry {
    ($($name:ident $sev:ident $title:literal;)*) => {
        $(pub const $name: Code = Code(stringify!($name));)*
        /// Every code, in order.
        pub static CODES: &[CodeInfo] = &[
            $(CodeInfo {
                code: $name,
                severity: Severity::$sev,
                title: $title,
                explanation: include_str!(concat!("../../docs/errors/", stringify!($name), ".md")),
            },)*
        ];
    };
}

registry! {
    E0001 Error "syntax error";
    E0002 Error "cannot find name";
    E0003 Error "unknown dtype";
    E0004 Error "unknown API";
    E0005 Error "duplicate definition";
    E0006 Error "mismatched types";
    E0007 Error "no such property";
    E0008 Error "parameter used before it is declared";
    E0009 Error "unsatisfiable constraints";
    E0010 Error "invalid default value";
    E0011 Error "unknown oracle";
    E0012 Error "invalid oracle argument";
    E0013 Error "unresolved import";
    E0014 Error "wrong number of arguments";
    E0015 Error "invalid literal";
    E0016 Error "invalid attribute";
    E0017 Error "signature does not match the operator schema";
    E0018 Error "cannot read source file";
    E0019 Error "unknown operator";
    E0020 Error "invalid computation in a program";
    E0021 Error "invalid relation";
    E0022 Error "invalid relation tolerance";
    E0023 Error "invalid argument in a relation call";
    E0024 Error "unknown forward in a `from` statement";
    E0025 Error "invalid argument in a `from` call";
    E0026 Error "invalid `from` binding";
    E0027 Error "invalid variadic parameter";
    W0001 Warning "unused import";
    W0002 Warning "unused definition";
    W0003 Warning "constraints too large to solve";
    W0004 Warning "oracle without an implementation";
    W0005 Warning "redundant rule";
    W0006 Warning "solver timeout";
    E0101 Error "unknown finding";
    E0102 Error "finding of an API sfz no longer knows";
    E0103 Error "invalid shard";
    E0104 Error "findings could not be written";
    E0105 Error "not a campaign folder";
    E0106 Error "invalid memory limit";
    E0107 Error "script cannot be hunted";
    E0108 Error "invalid baseline";
    E0109 Error "invalid campaign time";
    E0110 Error "time too short to solve any API";
    W0101 Warning "oracle does not apply";
    W0102 Warning "unreadable finding skipped";
    W0103 Warning "merged folders from different versions or specs";
    W0104 Warning "unreadable verification record";
    W0007 Warning "language model unavailable";
    W0008 Warning "solver failure";
}

/// The entry for a code, case-insensitively (`e0002` works).
pub fn lookup(code: &str) -> Option<&'static CodeInfo> {
    CODES.iter().find(|c| c.code.0.eq_ignore_ascii_case(code))
}
