//! What the checker learned about names, for the language server: each resolved reference with
//! its definition's span and a hover text, the parameters in scope in each body, and the names
//! visible in each file. Recorded as a side effect of checking, so the editor and `sfz check`
//! can never disagree about what a name means.
use std::collections::HashMap;

use crate::diag::{FileId, Span};

/// One resolved use (or definition) of a name.
#[derive(Clone, Debug)]
pub struct SymbolRef {
    pub span: Span,
    /// Where the name is defined (None for built-ins).
    pub def: Option<Span>,
    /// Markdown shown on hover: the name's type or signature and its doc comment.
    pub hover: String,
}

/// The parameters visible inside one body (an api, a rule, a constraint set), for completion.
#[derive(Clone, Debug)]
pub struct BodyScope {
    /// The body, braces included.
    pub span: Span,
    /// Name and type of each parameter.
    pub params: Vec<(String, String)>,
    /// Whether `result` (and named outputs) may be used: an api body.
    pub has_results: bool,
}

/// A name a file may use: its own items, its imports, the prelude.
#[derive(Clone, Debug)]
pub struct Visible {
    pub name: String,
    /// The item's keyword: `dtypes`, `constraints`, `type`, `oracle`, `program`.
    pub kind: crate::ast::Keyword,
    /// One line: the signature or value.
    pub detail: String,
    pub docs: String,
}

#[derive(Clone, Debug, Default)]
pub struct Symbols {
    pub refs: Vec<SymbolRef>,
    pub scopes: Vec<BodyScope>,
    /// For each checked root file, the names it can use.
    pub visible: HashMap<FileId, Vec<Visible>>,
}

impl Symbols {
    pub fn reference(&mut self, span: Span, def: Option<Span>, hover: String) {
        self.refs.push(SymbolRef { span, def, hover });
    }

    /// The innermost reference covering a byte offset of a file.
    pub fn at(&self, file: FileId, offset: usize) -> Option<&SymbolRef> {
        self.refs.iter().filter(|r| r.span.file == file && r.span.contains(offset)).min_by_key(|r| r.span.hi - r.span.lo)
    }

    /// The innermost body covering a byte offset.
    pub fn scope_at(&self, file: FileId, offset: usize) -> Option<&BodyScope> {
        self.scopes.iter().filter(|s| s.span.file == file && s.span.contains(offset)).min_by_key(|s| s.span.hi - s.span.lo)
    }
}

/// Hover markdown: a code line in an `sfz` block, then the docs.
pub fn hover_text(code: &str, docs: &str) -> String {
    if docs.trim().is_empty() {
        format!("```sfz\n{code}\n```")
    } else {
        format!("```sfz\n{code}\n```\n\n{}", docs.trim())
    }
}

/// The built-in functions: name, signature, what it means.
pub const BUILTINS: &[(&str, &str, &str)] = &[
    ("len", "len(xs: T[]) -> int", "The number of elements of a list (`xs.len` is the same)."),
    ("min", "min(a: int, ...) -> int", "The smallest of its arguments (ints or floats)."),
    ("max", "max(a: int, ...) -> int", "The largest of its arguments (ints or floats)."),
    ("abs", "abs(x: int) -> int", "The absolute value (of an int or a float)."),
    ("prod", "prod(xs: int[]) -> int", "The product of a list of ints; 1 for an empty list. `prod(t.shape) == t.numel`."),
    ("finite", "finite(t: Tensor) -> bool", "Every element of `t` is finite (no NaN, no infinity)."),
    ("no_nan", "no_nan(t: Tensor) -> bool", "No element of `t` is NaN (infinities allowed): in `ensures GUARD => no_nan(result)`, the function is defined where GUARD holds."),
    ("contiguous", "contiguous(t: Tensor) -> bool", "`t` is laid out contiguously in memory."),
    ("broadcastable", "broadcastable(a: Tensor | int[], b: Tensor | int[], ...) -> bool", "The shapes broadcast together (numpy rules)."),
];

/// The properties of tensors and lists: name, type, what it means.
pub const PROPERTIES: &[(&str, &str, &str)] = &[
    ("dtype", "dtype", "The element type, e.g. `float32`; compare with a dtype or test membership in a dtype group."),
    ("ndim", "int", "The number of dimensions (0 for a scalar tensor)."),
    ("shape", "int[]", "The size of each dimension; `t.shape[-1]` is the last. Reading a dimension that does not exist makes a comparison false."),
    ("numel", "int", "The number of elements, the product of the shape."),
    ("values", "tensor values", "The elements, for value ranges: `t.values in -1.0..1.0`."),
    ("len", "int", "The number of elements of a list."),
];

/// The built-in parameter types and what they accept.
pub const TYPES: &[(&str, &str)] = &[
    ("Tensor", "A torch.Tensor: properties dtype, ndim, shape, numel, values."),
    ("int", "A Python int (ATen `int` / `SymInt`)."),
    ("SymInt", "A symbolic int; the same as `int` in specs."),
    ("float", "A Python float."),
    ("bool", "A Python bool."),
    ("str", "A string; prefer a string enum like `\"mean\" | \"sum\"` for a fixed set."),
    ("dtype", "A torch.dtype, e.g. `float32`."),
    ("ScalarType", "A torch.dtype; the same as `dtype`."),
    ("Scalar", "A number that may be an int or a float (ATen `Scalar`)."),
    ("number", "A number that may be an int or a float; the same as `Scalar`."),
];
