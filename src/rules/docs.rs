//! torch's own documentation of its APIs, for prompts: extracted once from the installed torch
//! package by `scripts/extract_docs.py` into `data/torch_docs.json` and embedded, so that
//! `sfz suggest` works offline and needs no Python.
use std::collections::HashMap;
use std::sync::OnceLock;

const DATA: &str = include_str!("../../data/torch_docs.json");

#[derive(serde::Deserialize)]
struct File {
    torch_version: String,
    docs: HashMap<String, String>,
}

fn file() -> &'static File {
    static FILE: OnceLock<File> = OnceLock::new();
    FILE.get_or_init(|| serde_json::from_str(DATA).unwrap_or(File { torch_version: String::new(), docs: HashMap::new() }))
}

/// The docstring of an API (`torch.sum`); a `torch.Tensor.X` method falls back to `torch.X`,
/// and a `torch.X` function to `torch.nn.functional.X`.
pub fn lookup(api: &str) -> Option<&'static str> {
    let docs = &file().docs;
    if let Some(d) = docs.get(api) {
        return Some(d);
    }
    let base = api.rsplit('.').next()?;
    ["torch.", "torch.nn.functional."].iter().find_map(|p| docs.get(&format!("{p}{base}"))).map(String::as_str)
}

/// The torch version the docs were extracted from.
pub fn torch_version() -> &'static str {
    &file().torch_version
}

/// How many APIs have docs.
pub fn len() -> usize {
    file().docs.len()
}

#[cfg(test)]
mod tests {
    #[test]
    fn docs_are_there_for_common_apis() {
        assert!(super::len() > 500);
        assert!(super::torch_version().starts_with("2.13"));
        assert!(super::lookup("torch.gather").is_some_and(|d| d.contains("same number of dimensions")));
        assert!(super::lookup("torch.Tensor.gather").is_some());
        assert!(super::lookup("torch.no_such_thing").is_none());
    }
}
