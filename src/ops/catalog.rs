//! Every operator the dispatcher knows, parsed once and indexed by qualified name, so that the
//! registry can find the overloads of `aten::sum` and suggest `aten::softmax` for `aten::sofmax`.
use std::collections::HashMap;

use super::schema::{self, OpSchema, SchemaError};

pub use crate::wire::protocol::NO_CPU;

/// The parsed schemas of one libtorch, by name.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    schemas: Vec<OpSchema>,
    /// Qualified base name (`aten::sum`) → indices into `schemas`, in catalog order.
    by_name: HashMap<String, Vec<usize>>,
    /// Schema strings that did not parse (none for libtorch 2.13.0; kept for diagnostics).
    rejected: Vec<SchemaError>,
}

impl Catalog {
    /// Builds a catalog from schema strings as `sfz_op_schema` prints them, each marked with
    /// `NO_CPU` in front when the overload has no CPU kernel. Unparsable strings are kept aside
    /// (see `rejected`) rather than failing the whole catalog.
    pub fn from_schemas<S: AsRef<str>>(texts: impl IntoIterator<Item = S>) -> Catalog {
        let mut catalog = Catalog::default();
        for text in texts {
            let (text, cpu) = match text.as_ref().strip_prefix(NO_CPU) {
                Some(rest) => (rest, false),
                None => (text.as_ref(), true),
            };
            match schema::parse(text) {
                Ok(mut s) => {
                    s.cpu = cpu;
                    catalog.by_name.entry(s.name.clone()).or_default().push(catalog.schemas.len());
                    catalog.schemas.push(s);
                }
                Err(e) => catalog.rejected.push(e),
            }
        }
        // An out= form's wrapper is a composite kernel, so the dispatcher says it runs on the
        // CPU, but it calls the functional form: where none of those has a CPU kernel
        // (`batch_norm_stats`, `linear_backward`), neither does the out= form.
        for indices in catalog.by_name.values() {
            let functional = || indices.iter().map(|&i| &catalog.schemas[i]).filter(|s| !s.is_out_form());
            if functional().next().is_none() || functional().any(|s| s.cpu) {
                continue;
            }
            let outs: Vec<usize> = indices.iter().copied().filter(|&i| catalog.schemas[i].is_out_form()).collect();
            for i in outs {
                catalog.schemas[i].cpu = false;
            }
        }
        catalog
    }

    /// Every parsed schema, in the order given.
    pub fn schemas(&self) -> &[OpSchema] {
        &self.schemas
    }

    /// Schema strings that did not parse.
    pub fn rejected(&self) -> &[SchemaError] {
        &self.rejected
    }

    /// Number of operator overloads.
    pub fn len(&self) -> usize {
        self.schemas.len()
    }

    pub fn is_empty(&self) -> bool {
        self.schemas.is_empty()
    }

    /// The overloads of `name` (`aten::sum`), in catalog order; empty when unknown.
    pub fn overloads(&self, name: &str) -> impl Iterator<Item = &OpSchema> + '_ {
        self.by_name.get(name).into_iter().flatten().map(move |&i| &self.schemas[i])
    }

    /// True when some overload of `name` exists.
    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// One overload: `get("aten::sum", "dim_IntList")`, `get("aten::exp", "")`.
    pub fn get(&self, name: &str, overload: &str) -> Option<&OpSchema> {
        self.overloads(name).find(|s| s.overload == overload)
    }

    /// Looks up `aten::sum.dim_IntList` or `aten::exp` (the default overload).
    pub fn get_qualified(&self, qualified: &str) -> Option<&OpSchema> {
        let (name, overload) = split_qualified(qualified);
        self.get(name, overload)
    }

    /// Distinct qualified base names, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.by_name.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    /// Up to `limit` known names closest to `name` by edit distance, nearest first, among those
    /// close enough to be a likely typo or a near-miss (`aten::sofmax` → `aten::softmax`,
    /// `aten::_softmax`).
    pub fn suggest(&self, name: &str, limit: usize) -> Vec<String> {
        let (ns, base) = name.split_once("::").unwrap_or(("aten", name));
        let threshold = (base.chars().count() / 3).max(2);
        let mut scored: Vec<(usize, &str)> = self
            .by_name
            .keys()
            .filter_map(|candidate| {
                let (cns, cbase) = candidate.split_once("::")?;
                // Names from another namespace are only suggested when the base is identical.
                let d = crate::diag::suggest::edit_distance(base, cbase) + if cns == ns { 0 } else { 3 };
                (d <= threshold && candidate != name).then_some((d, candidate.as_str()))
            })
            .collect();
        scored.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.len().cmp(&b.1.len())).then(a.1.cmp(b.1)));
        scored.into_iter().take(limit).map(|(_, n)| n.to_string()).collect()
    }
}

/// `aten::sum.dim_IntList` → (`aten::sum`, `dim_IntList`); `aten::exp` → (`aten::exp`, ``).
pub fn split_qualified(qualified: &str) -> (&str, &str) {
    let base_start = qualified.find("::").map_or(0, |i| i + 2);
    match qualified[base_start..].find('.') {
        Some(dot) => (&qualified[..base_start + dot], &qualified[base_start + dot + 1..]),
        None => (qualified, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Catalog {
        Catalog::from_schemas(include_str!("../../tests/fixtures/schemas-2.13.0.txt").lines())
    }

    #[test]
    fn indexes_all_operators() {
        let c = fixture();
        assert_eq!(c.len(), 3466);
        assert!(c.rejected().is_empty());
        assert_eq!(c.names().iter().filter(|n| n.starts_with("aten::")).count(), 1588);
        let sums: Vec<_> = c.overloads("aten::sum").map(|s| s.overload.as_str()).collect();
        assert!(sums.contains(&"dim_IntList") && sums.contains(&""), "{sums:?}");
        assert!(c.get("aten::exp", "").is_some());
        assert!(c.get_qualified("aten::softmax.int").is_some());
        assert!(c.get_qualified("aten::softmax").is_none());
        assert_eq!(c.overloads("aten::nope").count(), 0);
        // The out= form of an operator whose functional form has no CPU kernel has none either.
        let marked = Catalog::from_schemas([
            format!("{NO_CPU}aten::batch_norm_stats(Tensor input, float eps) -> (Tensor, Tensor)"),
            "aten::batch_norm_stats.out(Tensor input, float eps, *, Tensor(a!) out0, Tensor(b!) out1) -> (Tensor(a!), Tensor(b!))".into(),
            "aten::abs(Tensor self) -> Tensor".into(),
            "aten::abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)".into(),
        ]);
        let cpu: Vec<bool> = marked.schemas().iter().map(|s| s.cpu).collect();
        assert_eq!(cpu, [false, false, true, true]);
    }

    #[test]
    fn suggests_close_names() {
        let c = fixture();
        let s = c.suggest("aten::sofmax", 3);
        assert_eq!(s.first().map(String::as_str), Some("aten::softmax"), "{s:?}");
        let s = c.suggest("aten::conv2", 3);
        assert!(s.contains(&"aten::conv2d".to_string()), "{s:?}");
        assert!(c.suggest("aten::qqqqqqqqqqqqqqqqqqqq", 3).is_empty());
    }

    #[test]
    fn splits_qualified_names() {
        assert_eq!(split_qualified("aten::sum.dim_IntList"), ("aten::sum", "dim_IntList"));
        assert_eq!(split_qualified("aten::exp"), ("aten::exp", ""));
        assert_eq!(split_qualified("sum.x"), ("sum", "x"));
    }
}
