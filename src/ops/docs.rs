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

/// The API an alias stands for, as its docstring says ("Alias for :func:`torch.div`"), followed
/// to the end (`torch.igamma` → `torch.special.gammainc`); a `torch.Tensor.X` method stands for
/// `torch.X`. The API itself when it is no alias.
pub fn canonical(api: &str) -> String {
    let mut name = match api.strip_prefix("torch.Tensor.") {
        Some(m) if file().docs.contains_key(&format!("torch.{m}")) => format!("torch.{m}"),
        _ => api.to_string(),
    };
    // Bounded: a cycle in the docs must not hang the report.
    for _ in 0..4 {
        match file().docs.get(&name).and_then(|d| alias_target(d)) {
            Some(target) if target != name => name = target,
            _ => break,
        }
    }
    name
}

/// The target of "Alias for :func:`torch.X`" (or "Alias of ...") in a docstring.
fn alias_target(doc: &str) -> Option<String> {
    let at = doc.find("Alias for ").or_else(|| doc.find("Alias of "))?;
    let rest = &doc[at..];
    let start = rest.find("torch.")?;
    let name: String = rest[start..].chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.').collect();
    Some(name.trim_end_matches('.').to_string())
}

/// The parameters of an API as its documentation's signature line names them:
/// `linalg.vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None)` gives
/// positional `[x, ord, dim, keepdim]` and keyword-only `[dtype, out]`. Only the API's own entry
/// counts (a `torch.Tensor.X` method reads `torch.X`'s, whose first parameter is the receiver):
/// another function's spelling would map names to the wrong arguments.
pub fn python_params(api: &str) -> Option<PythonParams> {
    let docs = &file().docs;
    let text = docs.get(api).or_else(|| docs.get(&format!("torch.{}", api.strip_prefix("torch.Tensor.")?)))?;
    parse_signature(text.lines().next()?)
}

/// A documented Python signature's parameter names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PythonParams {
    /// Before `*`, in order.
    pub positional: Vec<String>,
    /// After `*`.
    pub keyword: Vec<String>,
}

impl PythonParams {
    /// Whether the signature names a parameter `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.positional.iter().chain(&self.keyword).any(|p| p == name)
    }
}

/// `name(a, b: int = 1, *, c=None) -> Tensor` → `[a, b]`, `[c]`; None when the line is no signature.
fn parse_signature(line: &str) -> Option<PythonParams> {
    let open = line.find('(')?;
    let head = &line[..open];
    if head.is_empty() || !head.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
        return None;
    }
    // Split at top-level commas up to the matching parenthesis.
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut pieces = Vec::new();
    let mut start = open + 1;
    let mut closed = false;
    for (i, c) in line.char_indices().skip_while(|(i, _)| *i <= open) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')') if depth == 0 => {
                pieces.push(&line[start..i]);
                closed = true;
                break;
            }
            (None, ')' | ']' | '}') => depth = depth.saturating_sub(1),
            (None, ',') if depth == 0 => {
                pieces.push(&line[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !closed {
        return None;
    }
    let mut params = PythonParams::default();
    let mut keyword = false;
    for piece in pieces {
        let piece = piece.trim();
        if piece == "*" {
            keyword = true;
            continue;
        }
        let name = piece.split(|c: char| c == ':' || c == '=' || c.is_whitespace()).next().unwrap_or("");
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            // `/`, `*args`, `**kwargs`: no name to map.
            continue;
        }
        if keyword { &mut params.keyword } else { &mut params.positional }.push(name.to_string());
    }
    Some(params)
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
mod alias_tests {
    use super::canonical;

    #[test]
    fn aliases_stand_for_what_the_docs_say() {
        assert_eq!(canonical("torch.divide"), "torch.div");
        assert_eq!(canonical("torch.igamma"), "torch.special.gammainc");
        assert_eq!(canonical("torch.i0"), "torch.special.i0");
        assert_eq!(canonical("torch.Tensor.absolute"), "torch.abs");
        assert_eq!(canonical("torch.div"), "torch.div");
        assert_eq!(canonical("torch.no_such_thing"), "torch.no_such_thing");
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_signature, python_params, PythonParams};

    #[test]
    fn signatures_give_python_parameter_names() {
        let p = python_params("torch.linalg.vector_norm").unwrap();
        assert_eq!(p.positional, ["x", "ord", "dim", "keepdim"]);
        assert_eq!(p.keyword, ["dtype", "out"]);
        let p = parse_signature("abs(input: Tensor, *, out: Optional[Tensor]) -> Tensor").unwrap();
        assert_eq!(p, PythonParams { positional: vec!["input".into()], keyword: vec!["out".into()] });
        let p = parse_signature("gelu(input, approximate = 'none', dims=(-2, -1), *args, **kwargs) -> Tensor").unwrap();
        assert_eq!(p.positional, ["input", "approximate", "dims"]);
        assert!(parse_signature("Computes the (thing)").is_none());
        assert!(parse_signature("f(a, b").is_none());
        // A method reads the function's entry, receiver first.
        assert_eq!(python_params("torch.Tensor.add").map(|p| p.positional.first().cloned()), python_params("torch.add").map(|p| p.positional.first().cloned()));
    }

    #[test]
    fn docs_are_there_for_common_apis() {
        assert!(super::len() > 500);
        assert!(super::torch_version().starts_with("2.13"));
        assert!(super::lookup("torch.gather").is_some_and(|d| d.contains("same number of dimensions")));
        assert!(super::lookup("torch.Tensor.gather").is_some());
        assert!(super::lookup("torch.no_such_thing").is_none());
    }
}
