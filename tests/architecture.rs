//! Stages depend one way (ARCHITECTURE.md, "Dependencies"): a top-level module of `src/` imports
//! only modules in its own layer or below, in the order of the numbered list there (read from
//! ARCHITECTURE.md itself, so that the list and this test cannot drift apart), and no cycle
//! joins modules of one layer. Imports are the `crate::` paths of non-test code, groups
//! (`use crate::{a, b::c}`) included; only the item under a `#[cfg(test)]` is left out, not the
//! rest of its file.
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The text with the contents of comments, strings and character literals blanked (newlines
/// kept), so that neither a brace nor a path inside them counts.
fn code_only(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').map_or(b.len(), |k| i + k);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if b[i] == b'r' && starts_word(b, i) && raw_string_hashes(&rest[1..]).is_some() {
            let hashes = raw_string_hashes(&rest[1..]).unwrap_or(0);
            let body = i + 2 + hashes;
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let end = b[body..].windows(close.len()).position(|w| w == close.as_slice()).map_or(b.len(), |k| body + k + close.len());
            blank(&mut out, body, end - close.len());
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\u{7b}', '{') or a lifetime or label ('a).
            if rest.get(1) == Some(&b'\\') {
                let end = rest[2..].iter().position(|&c| c == b'\'').map_or(b.len(), |k| i + 2 + k);
                blank(&mut out, i + 1, end);
                i = end + 1;
            } else {
                let width = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                if rest.get(1 + width) == Some(&b'\'') {
                    blank(&mut out, i + 1, i + 1 + width);
                    i += 2 + width;
                } else {
                    i += 1;
                }
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Whether `b[i]` starts a word, a `b` prefix (`br"..."`) aside.
fn starts_word(b: &[u8], i: usize) -> bool {
    let before = |k: usize| k == 0 || !is_ident(b[k - 1]);
    before(i) || (b[i - 1] == b'b' && before(i - 1))
}

/// For `#*"` after an `r`: the number of `#`.
fn raw_string_hashes(after_r: &[u8]) -> Option<usize> {
    let hashes = after_r.iter().take_while(|&&c| c == b'#').count();
    (after_r.get(hashes) == Some(&b'"')).then_some(hashes)
}

/// The index just past the bracket that closes the one at `open` (`{`, `[` or `(`).
fn closing(code: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, &c) in code.iter().enumerate().skip(open) {
        match c {
            b'{' | b'[' | b'(' => depth += 1,
            b'}' | b']' | b')' => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// The code of a file without the items under `#[cfg(test)]`: each such item (after any
/// further attributes) ends at its first `;` outside brackets or at the brace closing its
/// first `{`.
fn non_test_code(text: &str) -> Vec<u8> {
    let mut code = code_only(text);
    const ATTR: &[u8] = b"#[cfg(test)]";
    while let Some(start) = code.windows(ATTR.len()).position(|w| w == ATTR) {
        let mut i = start + ATTR.len();
        loop {
            while i < code.len() && code[i].is_ascii_whitespace() {
                i += 1;
            }
            if code[i..].starts_with(b"#[") {
                i = closing(&code, i + 1);
            } else {
                break;
            }
        }
        let mut depth = 0usize;
        let mut end = code.len();
        while i < code.len() {
            match code[i] {
                b'(' | b'[' => depth += 1,
                b')' | b']' => depth = depth.saturating_sub(1),
                b';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                b'{' if depth == 0 => {
                    end = closing(&code, i);
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        code[start..end].iter_mut().filter(|c| **c != b'\n').for_each(|c| *c = b' ');
    }
    code
}

/// The top-level modules a file's non-test code names: `crate::X` and each `X` of a group
/// `crate::{X, Y::Z, ...}`.
fn imports_of(text: &str) -> BTreeSet<String> {
    let code = non_test_code(text);
    let ident = |at: usize| -> String { code[at..].iter().take_while(|&&c| is_ident(c)).map(|&c| c as char).collect() };
    let mut names = BTreeSet::new();
    const CRATE: &[u8] = b"crate::";
    for i in 0..code.len().saturating_sub(CRATE.len()) {
        if !code[i..].starts_with(CRATE) || (i > 0 && is_ident(code[i - 1])) {
            continue;
        }
        let at = i + CRATE.len();
        if code.get(at) == Some(&b'{') {
            let end = closing(&code, at) - 1;
            let (mut depth, mut item) = (0usize, at + 1);
            for k in at + 1..=end {
                match code[k] {
                    b'{' => depth += 1,
                    b'}' if k < end => depth -= 1,
                    b',' | b'}' if depth == 0 => {
                        let first = item + code[item..k].iter().take_while(|c| c.is_ascii_whitespace()).count();
                        names.insert(ident(first));
                        item = k + 1;
                    }
                    _ => {}
                }
            }
        } else {
            names.insert(ident(at));
        }
    }
    names.retain(|n| !n.is_empty() && n != "self");
    names
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Top-level module → the top-level modules its non-test code imports.
fn imports() -> Graph {
    let mut graph = Graph::new();
    let src = root().join("src");
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("src is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap();
            let top = rel.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
            if top == "main" || top == "lib" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let names = graph.entry(top.clone()).or_default();
            names.extend(imports_of(&text).into_iter().filter(|n| *n != top));
        }
    }
    graph
}

/// The top-level modules `src/lib.rs` declares: `pub mod X;`, and `pub use ... as X;` or
/// `pub use a::X;` for a module kept in another crate of the workspace (`wire`, `seed`).
fn declared_modules() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).expect("src/lib.rs");
    let code = String::from_utf8(code_only(&lib)).expect("UTF-8");
    let mut names = BTreeSet::new();
    for line in code.lines().map(str::trim) {
        let Some(item) = line.strip_prefix("pub mod ").or_else(|| line.strip_prefix("pub use ")) else { continue };
        let item = item.trim_end_matches(';');
        let name = item.rsplit([' ', ':']).next().unwrap_or("");
        if !name.is_empty() && name.bytes().all(is_ident) {
            names.insert(name.to_string());
        }
    }
    names
}

/// The layers of the numbered list under `## Dependencies`, lowest first: per item, the names in
/// backticks outside parentheses (those inside describe a module, they are not one).
fn layers(doc: &str) -> Vec<Vec<String>> {
    let section = doc.split("\n## Dependencies").nth(1).expect("a Dependencies section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut items: Vec<String> = Vec::new();
    for line in section.lines() {
        let trimmed = line.trim_start();
        let number = trimmed.bytes().take_while(u8::is_ascii_digit).count();
        if number > 0 && trimmed[number..].starts_with(". ") {
            assert_eq!(trimmed[..number].parse::<usize>().ok(), Some(items.len() + 1), "layers are numbered 1, 2, ...: {line}");
            items.push(trimmed[number + 2..].to_string());
        } else if let Some(item) = items.last_mut().filter(|_| line.starts_with(' ') && !trimmed.is_empty()) {
            item.push(' ');
            item.push_str(trimmed);
        } else if !items.is_empty() {
            break;
        }
    }
    items
        .iter()
        .map(|item| {
            let (mut depth, mut names, mut quoted) = (0i32, Vec::new(), None::<String>);
            for c in item.chars() {
                match (c, quoted.as_mut()) {
                    ('`', None) => quoted = Some(String::new()),
                    ('`', Some(_)) => {
                        let name = quoted.take().unwrap_or_default();
                        if depth == 0 && !name.is_empty() && name.bytes().all(is_ident) {
                            names.push(name);
                        }
                    }
                    (c, Some(q)) => q.push(c),
                    ('(', None) => depth += 1,
                    (')', None) => depth -= 1,
                    _ => {}
                }
            }
            names
        })
        .collect()
}

/// Every import of a module in a higher layer than its importer's, as `from (layer i) -> to
/// (layer j)`.
fn upward(graph: &Graph, layers: &[Vec<String>]) -> Vec<String> {
    let layer_of: BTreeMap<&str, usize> = layers.iter().enumerate().flat_map(|(k, names)| names.iter().map(move |n| (n.as_str(), k + 1))).collect();
    let mut found = Vec::new();
    for (from, deps) in graph {
        for to in deps {
            if let (Some(&a), Some(&b)) = (layer_of.get(from.as_str()), layer_of.get(to.as_str())) {
                if b > a {
                    found.push(format!("{from} (layer {a}) -> {to} (layer {b})"));
                }
            }
        }
    }
    found
}

/// The modules that can reach themselves (every non-trivial strongly connected component),
/// found by removing, round after round, modules nothing in the remaining graph depends on or
/// that depend on nothing in it.
fn cyclic(mut graph: Graph) -> BTreeSet<String> {
    loop {
        let alive: BTreeSet<String> = graph.keys().cloned().collect();
        let named: BTreeSet<String> = graph.values().flatten().filter(|d| alive.contains(*d)).cloned().collect();
        let before = graph.len();
        graph.retain(|m, deps| named.contains(m) && deps.iter().any(|d| alive.contains(d)));
        if graph.len() == before {
            return graph.keys().cloned().collect();
        }
    }
}

fn documented_layers() -> Vec<Vec<String>> {
    layers(&std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md"))
}

#[test]
fn every_module_is_in_one_layer_of_the_list() {
    let layers = documented_layers();
    let listed: Vec<&String> = layers.iter().flatten().collect();
    let unique: BTreeSet<&String> = listed.iter().copied().collect();
    assert_eq!(listed.len(), unique.len(), "a module listed in two layers: {layers:?}");
    let mut modules = declared_modules();
    modules.extend(imports().into_keys());
    assert!(modules.len() > 20, "found only {} modules: {modules:?}", modules.len());
    let missing: Vec<&String> = modules.iter().filter(|m| !unique.contains(m)).collect();
    assert!(missing.is_empty(), "modules ARCHITECTURE.md's Dependencies list does not place: {missing:?}");
}

#[test]
fn no_module_imports_a_higher_layer() {
    let found = upward(&imports(), &documented_layers());
    assert!(found.is_empty(), "imports of a higher layer (ARCHITECTURE.md, \"Dependencies\"):\n{}", found.join("\n"));
}

#[test]
fn top_level_modules_form_no_cycle() {
    let graph = imports();
    let left = cyclic(graph.clone());
    let edges: Vec<String> = left.iter().flat_map(|m| graph[m].iter().filter(|d| left.contains(*d)).map(move |d| format!("{m} -> {d}"))).collect();
    assert!(left.is_empty(), "modules in a dependency cycle: {left:?}\nedges among them: {edges:#?}");
}

#[test]
fn the_check_sees_a_cycle() {
    let mut graph = Graph::new();
    graph.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    graph.insert("b".to_string(), BTreeSet::from(["a".to_string(), "c".to_string()]));
    graph.insert("c".to_string(), BTreeSet::new());
    assert_eq!(cyclic(graph), BTreeSet::from(["a".to_string(), "b".to_string()]));
}

#[test]
fn the_check_sees_an_upward_import() {
    let doc = "# A\n\n## Dependencies\n\nIn order:\n\n1. leaves: `low` (with `low::part`,\n   `high` named in passing);\n2. `mid`, `other`;\n3. `high`.\n\n## Next\n\n4. `not_a_layer`.\n";
    let layers = layers(doc);
    assert_eq!(layers, [vec!["low"], vec!["mid", "other"], vec!["high"]]);
    let mut graph = Graph::new();
    graph.insert("mid".into(), imports_of("use crate::{low::X, other};\n"));
    graph.insert("low".into(), imports_of("use crate::low::Y;\nfn f() -> u8 { crate::high::g() }\n"));
    graph.insert("high".into(), imports_of("use crate::mid;\n"));
    assert_eq!(upward(&graph, &layers), ["low (layer 1) -> high (layer 3)"]);
}

#[test]
fn test_items_are_skipped_and_the_rest_of_the_file_is_read() {
    let text = r####"
use crate::{a, b::{c, d}, self as me};
// crate::in_a_comment
const S: &str = "crate::in_a_string {";
const R: &str = r#"crate::raw " {"#;
const C: char = '{';
fn f<'x>(y: &'x str) -> &'x str { crate::e::f(); y }

#[cfg(test)]
#[allow(unused)]
mod tests {
    use crate::in_tests;
    const B: char = '}';
    fn g() { let s = "}"; }
}

#[cfg(test)]
use crate::one_test_use;

pub use crate::after_the_tests::Z;
"####;
    let names: Vec<String> = imports_of(text).into_iter().collect();
    assert_eq!(names, ["a", "after_the_tests", "b", "e"]);
}
