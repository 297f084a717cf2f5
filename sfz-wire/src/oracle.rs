//! The oracles sfz implements, by name: what a detection, a finding and a differential check say
//! fired. Part of the wire (`variant::Check` carries it), so the worker and every stage of the
//! parent share one type. It is written as the name a spec uses (`nan_inf`, `internal_error`), in
//! findings.jsonl and on the wire alike; a spec's `oracles` clause stays text until the plan and
//! the oracles read it (`Oracle::parse`), since the checker reports names it does not know.
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One oracle. The stdlib declares those a spec may name (`stdlib/oracles.sfz`); `Relation`
/// and `Spec` are named by sfz itself. Ordered by name, as reports list them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Oracle {
    /// The worker died by a signal or exited while running the call.
    Crash,
    /// The call ran past the timeout.
    Hang,
    /// A failed internal assert, or a C++ exception that escaped libtorch's checks.
    InternalError,
    /// An allocation failed on a small input.
    Oom,
    /// NaN or inf from finite inputs, or a NaN inside a value domain (`ensures GUARD => no_nan`).
    NanInf,
    /// An `ensures` clause does not hold.
    Postcondition,
    /// The call disagrees with the same call in float64.
    Precision,
    /// A premature inf, NaN or 0 that the float64 reference does not have.
    Overflow,
    /// The result depends on the inputs' memory layout.
    Layout,
    /// The `out=` overload disagrees with the functional call.
    Out,
    /// The in-place form disagrees with the functional call.
    Inplace,
    /// Backward disagrees with finite differences.
    Gradient,
    /// CUDA disagrees with the CPU.
    Cuda,
    /// A metamorphic relation does not hold.
    Relation,
    /// A conforming input libtorch rejects: a spec finding (`spec/`), never a bug.
    Spec,
}

impl Oracle {
    /// Every oracle, in declaration order.
    pub const ALL: [Oracle; 15] = [
        Oracle::Crash,
        Oracle::Hang,
        Oracle::InternalError,
        Oracle::Oom,
        Oracle::NanInf,
        Oracle::Postcondition,
        Oracle::Precision,
        Oracle::Overflow,
        Oracle::Layout,
        Oracle::Out,
        Oracle::Inplace,
        Oracle::Gradient,
        Oracle::Cuda,
        Oracle::Relation,
        Oracle::Spec,
    ];

    /// The name a spec writes, and findings.jsonl and reports show.
    pub fn as_str(self) -> &'static str {
        match self {
            Oracle::Crash => "crash",
            Oracle::Hang => "hang",
            Oracle::InternalError => "internal_error",
            Oracle::Oom => "oom",
            Oracle::NanInf => "nan_inf",
            Oracle::Postcondition => "postcondition",
            Oracle::Precision => "precision",
            Oracle::Overflow => "overflow",
            Oracle::Layout => "layout",
            Oracle::Out => "out",
            Oracle::Inplace => "inplace",
            Oracle::Gradient => "gradient",
            Oracle::Cuda => "cuda",
            Oracle::Relation => "relation",
            Oracle::Spec => "spec",
        }
    }

    /// The oracle of that name; None for a name sfz does not implement.
    pub fn parse(name: &str) -> Option<Oracle> {
        Oracle::ALL.into_iter().find(|o| o.as_str() == name)
    }
}

impl Ord for Oracle {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for Oracle {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Oracle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Oracle {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Oracle {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = Oracle;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an oracle's name")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Oracle, E> {
                Oracle::parse(v).ok_or_else(|| E::unknown_variant(v, NAMES))
            }
        }
        d.deserialize_str(Name)
    }
}

/// The names, for serde's error message.
const NAMES: &[&str] =
    &["crash", "hang", "internal_error", "oom", "nan_inf", "postcondition", "precision", "overflow", "layout", "out", "inplace", "gradient", "cuda", "relation", "spec"];

#[cfg(test)]
mod tests {
    use super::{Oracle, NAMES};

    #[test]
    fn names_read_back_and_serialize_as_today() {
        assert_eq!(Oracle::ALL.map(Oracle::as_str), NAMES);
        for o in Oracle::ALL {
            assert_eq!(Oracle::parse(o.as_str()), Some(o));
            let json = serde_json::to_string(&o).unwrap();
            assert_eq!(json, format!("\"{o}\""));
            assert_eq!(serde_json::from_str::<Oracle>(&json).unwrap(), o);
            let wire = postcard::to_stdvec(&o).unwrap();
            assert_eq!(wire, postcard::to_stdvec(o.as_str()).unwrap(), "on the wire as the string it was");
            assert_eq!(postcard::from_bytes::<Oracle>(&wire).unwrap(), o);
        }
        let mut sorted = Oracle::ALL;
        sorted.sort();
        let mut names = NAMES.to_vec();
        names.sort();
        assert_eq!(sorted.map(Oracle::as_str).to_vec(), names, "ordered as their names");
        assert_eq!(Oracle::parse("differential"), None);
        assert!(serde_json::from_str::<Oracle>("\"no_such\"").is_err());
    }
}
