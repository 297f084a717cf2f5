//! Soft assertions: per-op models that predict, from cheap statistics of an op's inputs,
//! whether its output will be NaN/INF (or imprecise against float64). Trained by `sfz train`
//! from sfz's own executions, stored versioned as JSON in `stdlib/soft_assertions.json`
//! (embedded in the binary), loaded at hunt time; a missing or outdated file means no soft
//! assertions, with a warning.
use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::forest::Forest;
use super::ops::NumOp;

/// The format version; files of another version are not read. (2: number arguments are
/// features.)
pub const VERSION: u32 = 2;

/// The models `sfz train` wrote into the standard library.
pub const EMBEDDED: &str = include_str!("../../../stdlib/soft_assertions.json");

/// One op's models and what they were trained on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpModel {
    pub nonfinite: Forest,
    pub imprecise: Option<Forest>,
    pub samples: u64,
    pub positives: u64,
}

/// A model file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoftModels {
    pub version: u32,
    /// The feature layout (`hunt::features`), for readers.
    pub features: Vec<String>,
    pub models: BTreeMap<NumOp, OpModel>,
}

impl SoftModels {
    /// P(non-finite output) for `op` with these features; None when the op has no model.
    pub fn nonfinite(&self, op: NumOp, features: &[f64]) -> Option<f64> {
        self.models.get(&op).map(|m| m.nonfinite.predict(features))
    }

    /// P(imprecise output).
    pub fn imprecise(&self, op: NumOp, features: &[f64]) -> Option<f64> {
        self.models.get(&op).and_then(|m| m.imprecise.as_ref()).map(|f| f.predict(features))
    }

    /// Only the models of these ops (what a hunt request carries).
    pub fn subset(&self, ops: impl IntoIterator<Item = NumOp>) -> SoftModels {
        let mut models = BTreeMap::new();
        for op in ops {
            if let Some(m) = self.models.get(&op) {
                models.insert(op, m.clone());
            }
        }
        SoftModels { version: self.version, features: self.features.clone(), models }
    }
}

/// Why models could not be loaded; the hunt goes on without them.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read soft-assertion models {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("soft-assertion models {path} are not valid: {message}")]
    Invalid { path: String, message: String },
    #[error("soft-assertion models {path} have format version {found}, this sfz reads version {expected}; run `sfz train` to retrain them")]
    Version { path: String, found: u32, expected: u32 },
}

/// Parses a model file's text; `path` names it in errors.
pub fn parse(text: &str, path: &str) -> Result<SoftModels, LoadError> {
    // Read the version first, so that an old file says so rather than failing to parse.
    #[derive(Deserialize)]
    struct Head {
        version: u32,
    }
    let head: Head = serde_json::from_str(text).map_err(|e| LoadError::Invalid { path: path.into(), message: e.to_string() })?;
    if head.version != VERSION {
        return Err(LoadError::Version { path: path.into(), found: head.version, expected: VERSION });
    }
    serde_json::from_str(text).map_err(|e| LoadError::Invalid { path: path.into(), message: e.to_string() })
}

/// Loads models from a file, or the embedded ones when `path` is None.
pub fn load(path: Option<&Path>) -> Result<SoftModels, LoadError> {
    match path {
        None => parse(EMBEDDED, "<embedded stdlib/soft_assertions.json>"),
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|source| LoadError::Read { path: p.display().to_string(), source })?;
            parse(&text, &p.display().to_string())
        }
    }
}

/// Names of the features `hunt::features` computes.
pub fn feature_names() -> Vec<String> {
    let mut v = Vec::new();
    for k in ["a", "b"] {
        for f in ["max", "min", "abs_min", "abs_max", "log10_abs_max"] {
            v.push(format!("{k}.{f}"));
        }
    }
    v.push("dtype".into());
    v.push("log10_numel".into());
    v.push("scalar0".into());
    v.push("scalar1".into());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_models_load() {
        let m = load(None).expect("the standard library's models parse");
        assert_eq!(m.version, VERSION);
        assert!(m.models.contains_key(&NumOp::Exp) && m.models.contains_key(&NumOp::Log));
        assert_eq!(m.features, feature_names());
    }

    #[test]
    fn an_older_file_is_refused_with_its_version() {
        let e = parse(r#"{"version": 0, "models": {}}"#, "old.json").unwrap_err();
        assert!(matches!(e, LoadError::Version { found: 0, expected: VERSION, .. }), "{e}");
        assert!(e.to_string().contains("run `sfz train`"), "{e}");
    }

    #[test]
    fn a_missing_or_broken_file_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.json");
        assert!(matches!(load(Some(&missing)), Err(LoadError::Read { .. })));
        let broken = dir.path().join("broken.json");
        std::fs::write(&broken, format!("{{\"version\": {VERSION}, \"models\": 3}}")).unwrap();
        assert!(matches!(load(Some(&broken)), Err(LoadError::Invalid { .. })));
    }
}
