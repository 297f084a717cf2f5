//! Stages depend one way (ARCHITECTURE.md, "Dependencies"): no cycle among the top-level modules
//! of `src/`, counting the `crate::` paths of non-test code. A cycle that comes back fails here
//! with the modules in it.
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module → the top-level modules its non-test code names as `crate::X`.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
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
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            let names = graph.entry(top.clone()).or_default();
            for (i, _) in code.match_indices("crate::") {
                let name: String = code[i + 7..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if !name.is_empty() && name != top {
                    names.insert(name);
                }
            }
        }
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for deps in graph.values_mut() {
        deps.retain(|d| modules.contains(d));
    }
    graph
}

/// The modules that can reach themselves (every non-trivial strongly connected component),
/// found by removing, round after round, modules nothing in the remaining graph depends on or
/// that depend on nothing in it.
fn cyclic(mut graph: BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
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

#[test]
fn top_level_modules_form_no_cycle() {
    let graph = imports();
    assert!(graph.len() > 20, "found only {} modules: {graph:?}", graph.len());
    let left = cyclic(graph.clone());
    let edges: Vec<String> = left.iter().flat_map(|m| graph[m].iter().filter(|d| left.contains(*d)).map(move |d| format!("{m} -> {d}"))).collect();
    assert!(left.is_empty(), "modules in a dependency cycle: {left:?}\nedges among them: {edges:#?}");
}

#[test]
fn the_check_sees_a_cycle() {
    let mut graph = BTreeMap::new();
    graph.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    graph.insert("b".to_string(), BTreeSet::from(["a".to_string(), "c".to_string()]));
    graph.insert("c".to_string(), BTreeSet::new());
    assert_eq!(cyclic(graph), BTreeSet::from(["a".to_string(), "b".to_string()]));
}
