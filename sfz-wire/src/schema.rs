//! ATen operator schemas, parsed from the text libtorch prints for them
//! (`aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor`).
//!
//! The parser is hand-written and total: any input gives a schema or a `SchemaError`, never a
//! panic, because the text comes from another process (a worker) and must not be trusted.
use std::fmt;

/// The type of one schema argument or return.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SchemaType {
    Tensor,
    Int,
    /// `SymInt`: an int that may be symbolic under tracing; a plain int in eager calls.
    SymInt,
    Float,
    Bool,
    Str,
    /// `Scalar`: an int, float, complex or bool number.
    Scalar,
    /// `ScalarType`: a dtype.
    ScalarType,
    Layout,
    Device,
    MemoryFormat,
    Generator,
    Dimname,
    Storage,
    Stream,
    /// Any other named type (`Any`, `QScheme`, `__torch__.torch.classes.quantized.Conv2dPackedParamsBase`, ...).
    Other(String),
    /// `T[]`, or `T[N]` with a fixed length.
    List(Box<SchemaType>, Option<u32>),
    /// `T?`.
    Optional(Box<SchemaType>),
    /// `...`: varargs (TorchScript-only operators).
    Varargs,
}

impl SchemaType {
    /// The type with one level of `?` removed.
    pub fn strip_optional(&self) -> &SchemaType {
        match self {
            SchemaType::Optional(inner) => inner,
            other => other,
        }
    }

    pub fn is_optional(&self) -> bool {
        matches!(self, SchemaType::Optional(_))
    }

    /// `int` and `SymInt`, which eager calls treat alike.
    pub fn is_int(&self) -> bool {
        matches!(self, SchemaType::Int | SchemaType::SymInt)
    }

    fn named(name: &str) -> SchemaType {
        match name {
            "Tensor" => SchemaType::Tensor,
            "int" => SchemaType::Int,
            "SymInt" => SchemaType::SymInt,
            "float" => SchemaType::Float,
            "bool" => SchemaType::Bool,
            "str" => SchemaType::Str,
            "Scalar" => SchemaType::Scalar,
            "ScalarType" => SchemaType::ScalarType,
            "Layout" => SchemaType::Layout,
            "Device" => SchemaType::Device,
            "MemoryFormat" => SchemaType::MemoryFormat,
            "Generator" => SchemaType::Generator,
            "Dimname" => SchemaType::Dimname,
            "Storage" => SchemaType::Storage,
            "Stream" => SchemaType::Stream,
            other => SchemaType::Other(other.to_string()),
        }
    }
}

impl fmt::Display for SchemaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaType::Tensor => f.write_str("Tensor"),
            SchemaType::Int => f.write_str("int"),
            SchemaType::SymInt => f.write_str("SymInt"),
            SchemaType::Float => f.write_str("float"),
            SchemaType::Bool => f.write_str("bool"),
            SchemaType::Str => f.write_str("str"),
            SchemaType::Scalar => f.write_str("Scalar"),
            SchemaType::ScalarType => f.write_str("ScalarType"),
            SchemaType::Layout => f.write_str("Layout"),
            SchemaType::Device => f.write_str("Device"),
            SchemaType::MemoryFormat => f.write_str("MemoryFormat"),
            SchemaType::Generator => f.write_str("Generator"),
            SchemaType::Dimname => f.write_str("Dimname"),
            SchemaType::Storage => f.write_str("Storage"),
            SchemaType::Stream => f.write_str("Stream"),
            SchemaType::Other(name) => f.write_str(name),
            SchemaType::List(elem, None) => write!(f, "{elem}[]"),
            SchemaType::List(elem, Some(n)) => write!(f, "{elem}[{n}]"),
            SchemaType::Optional(inner) => write!(f, "{inner}?"),
            SchemaType::Varargs => f.write_str("..."),
        }
    }
}

/// One argument (or named return) of a schema.
#[derive(Clone, Debug, PartialEq)]
pub struct SchemaArg {
    /// Empty for an unnamed return.
    pub name: String,
    pub ty: SchemaType,
    /// The default's text as printed (`None`, `False`, `[1, 1]`, `"valid"`, `1.0000000000000001e-05`).
    pub default: Option<String>,
    /// Declared after `*`.
    pub kw_only: bool,
    /// The alias annotation says the operator writes to it (`Tensor(a!)`).
    pub mutable: bool,
    /// The alias set, e.g. `a` for `Tensor(a)` or `Tensor(a!)`; `a -> *` for `Tensor(a -> *)`.
    pub alias: Option<String>,
}

/// A parsed operator schema.
#[derive(Clone, Debug, PartialEq)]
pub struct OpSchema {
    /// Qualified name: `aten::sum`.
    pub name: String,
    /// `dim_IntList`, or `""` for the default overload.
    pub overload: String,
    pub args: Vec<SchemaArg>,
    pub returns: Vec<SchemaArg>,
    /// The returns are `...` (TorchScript varargs).
    pub varargs_returns: bool,
    /// The text this was parsed from.
    pub text: String,
    /// The dispatcher has a CPU kernel for it (composite kernels count); false for CUDA-only
    /// overloads. A catalog without the fact (test fixtures) says true.
    pub cpu: bool,
}

impl OpSchema {
    /// The out= form of an operator: it writes to a keyword-only argument (`Tensor(a!) out`).
    pub fn is_out_form(&self) -> bool {
        self.args.iter().any(|a| a.kw_only && a.mutable)
    }

    /// `aten::sum.dim_IntList`, or `aten::exp` for the default overload.
    pub fn qualified(&self) -> String {
        if self.overload.is_empty() {
            self.name.clone()
        } else {
            format!("{}.{}", self.name, self.overload)
        }
    }

    /// Index of the argument called `name`.
    pub fn arg_index(&self, name: &str) -> Option<usize> {
        self.args.iter().position(|a| a.name == name)
    }

    /// True when every return is an int or bool (or a list of them), not a tensor or a float:
    /// a fact about the inputs' sizes, strides or storage (`stride`, `is_contiguous`,
    /// `_debug_has_internal_overlap`), which a promoted or relaid copy legitimately changes.
    pub fn returns_only_facts(&self) -> bool {
        fn fact(t: &SchemaType) -> bool {
            match t {
                SchemaType::Int | SchemaType::SymInt | SchemaType::Bool => true,
                SchemaType::List(e, _) | SchemaType::Optional(e) => fact(e),
                _ => false,
            }
        }
        !self.returns.is_empty() && self.returns.iter().all(|r| fact(&r.ty))
    }

    /// True when some argument is written to (`out=` variants, in-place ops).
    pub fn has_mutable_args(&self) -> bool {
        self.args.iter().any(|a| a.mutable)
    }
}

/// Why a schema string could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse schema at byte {offset}: {message} in `{text}`")]
pub struct SchemaError {
    pub offset: usize,
    pub message: String,
    pub text: String,
}

/// Parses one schema string.
pub fn parse(text: &str) -> Result<OpSchema, SchemaError> {
    let mut p = Parser { text, pos: 0 };
    p.schema().map_err(|(offset, message)| SchemaError { offset, message, text: text.to_string() })
}

type PResult<T> = Result<T, (usize, String)>;

struct Parser<'a> {
    text: &'a str,
    /// Byte offset; always on a char boundary since we only advance over ASCII or whole chars.
    pos: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        self.text.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    fn eat(&mut self, s: &str) -> bool {
        self.ws();
        if self.rest().starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, s: &str) -> PResult<()> {
        if self.eat(s) {
            Ok(())
        } else {
            Err(self.error(format!("expected `{s}`")))
        }
    }

    fn error(&self, message: String) -> (usize, String) {
        let found = match self.peek() {
            Some(c) => format!(", found `{c}`"),
            None => ", found the end".to_string(),
        };
        (self.pos, format!("{message}{found}"))
    }

    fn ident(&mut self) -> PResult<String> {
        self.ws();
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            self.bump();
        }
        if self.pos == start {
            return Err(self.error("expected a name".into()));
        }
        Ok(self.text[start..self.pos].to_string())
    }

    fn schema(&mut self) -> PResult<OpSchema> {
        let ns = self.ident()?;
        self.expect("::")?;
        let base = self.ident()?;
        let overload = if self.eat(".") { self.ident()? } else { String::new() };
        self.expect("(")?;
        let args = self.arg_list(true)?;
        self.expect("->")?;
        self.ws();
        let (returns, varargs_returns) = if self.eat("...") {
            (Vec::new(), true)
        } else if self.peek() == Some('(') {
            self.bump();
            (self.arg_list(false)?, false)
        } else {
            (vec![self.arg(false, false)?], false)
        };
        self.ws();
        if self.pos != self.text.len() {
            return Err(self.error("expected the end of the schema".into()));
        }
        Ok(OpSchema { name: format!("{ns}::{base}"), overload, args, returns, varargs_returns, text: self.text.to_string(), cpu: true })
    }

    /// Arguments up to and including the closing `)`. `named` says names are required.
    fn arg_list(&mut self, named: bool) -> PResult<Vec<SchemaArg>> {
        let mut args = Vec::new();
        let mut kw_only = false;
        if self.eat(")") {
            return Ok(args);
        }
        loop {
            if self.eat("*") {
                kw_only = true;
            } else if named && self.eat("...") {
                args.push(SchemaArg { name: String::new(), ty: SchemaType::Varargs, default: None, kw_only, mutable: false, alias: None });
            } else {
                args.push(self.arg(named, kw_only)?);
            }
            if self.eat(")") {
                return Ok(args);
            }
            self.expect(",")?;
        }
    }

    fn arg(&mut self, named: bool, kw_only: bool) -> PResult<SchemaArg> {
        let (ty, alias) = self.ty()?;
        self.ws();
        let name = if self.peek().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') {
            self.ident()?
        } else if named {
            return Err(self.error("expected an argument name".into()));
        } else {
            String::new()
        };
        let default = if self.eat("=") { Some(self.default_text()?) } else { None };
        let mutable = alias.as_deref().is_some_and(|a| a.contains('!'));
        Ok(SchemaArg { name, ty, default, kw_only, mutable, alias })
    }

    /// A type with its suffixes (`[N]`, `[]`, `?`) and alias annotation, which may sit on the
    /// element (`Tensor(a!)[]`) or on the list (`Tensor[](a!)`).
    fn ty(&mut self) -> PResult<(SchemaType, Option<String>)> {
        self.ws();
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
            self.bump();
        }
        if self.pos == start {
            return Err(self.error("expected a type".into()));
        }
        let mut ty = SchemaType::named(&self.text[start..self.pos]);
        let mut alias = None;
        loop {
            match self.peek() {
                Some('(') => {
                    self.bump();
                    let from = self.pos;
                    while self.peek().is_some_and(|c| c != ')') {
                        self.bump();
                    }
                    let annotation = self.text[from..self.pos].trim().to_string();
                    self.expect(")")?;
                    alias = Some(annotation);
                }
                Some('[') => {
                    self.bump();
                    let from = self.pos;
                    while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                        self.bump();
                    }
                    let len = if self.pos > from { Some(self.text[from..self.pos].parse::<u32>().map_err(|e| (from, format!("bad list length: {e}")))?) } else { None };
                    self.expect("]")?;
                    ty = SchemaType::List(Box::new(ty), len);
                }
                Some('?') => {
                    self.bump();
                    ty = SchemaType::Optional(Box::new(ty));
                }
                _ => return Ok((ty, alias)),
            }
        }
    }

    /// The text of a default value: up to the next `,` or `)` outside brackets and strings.
    fn default_text(&mut self) -> PResult<String> {
        self.ws();
        let start = self.pos;
        let mut depth = 0usize;
        let mut quote: Option<char> = None;
        loop {
            let Some(c) = self.peek() else {
                return Err(self.error("unterminated default value".into()));
            };
            if let Some(q) = quote {
                self.bump();
                if c == '\\' {
                    self.bump();
                } else if c == q {
                    quote = None;
                }
                continue;
            }
            match c {
                '"' | '\'' => quote = Some(c),
                '[' | '(' => depth += 1,
                ']' if depth > 0 => depth -= 1,
                ')' | ',' if depth == 0 => break,
                ')' => depth -= 1,
                _ => {}
            }
            self.bump();
        }
        let text = self.text[start..self.pos].trim_end();
        if text.is_empty() {
            return Err(self.error("expected a default value".into()));
        }
        Ok(text.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(t: SchemaType, n: Option<u32>) -> SchemaType {
        SchemaType::List(Box::new(t), n)
    }

    fn opt(t: SchemaType) -> SchemaType {
        SchemaType::Optional(Box::new(t))
    }

    #[test]
    fn conv2d() {
        let s = parse(
            "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor",
        )
        .unwrap();
        assert_eq!(s.name, "aten::conv2d");
        assert_eq!(s.overload, "");
        let names: Vec<_> = s.args.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["input", "weight", "bias", "stride", "padding", "dilation", "groups"]);
        assert_eq!(s.args[2].ty, opt(SchemaType::Tensor));
        assert_eq!(s.args[3].ty, list(SchemaType::SymInt, Some(2)));
        assert_eq!(s.args[3].default.as_deref(), Some("[1, 1]"));
        assert_eq!(s.args[6].default.as_deref(), Some("1"));
        assert_eq!(s.returns.len(), 1);
        assert_eq!(s.returns[0].ty, SchemaType::Tensor);
        assert!(s.returns[0].name.is_empty());
    }

    #[test]
    fn keyword_only_and_optional_lists() {
        let s = parse("aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor").unwrap();
        assert_eq!(s.qualified(), "aten::sum.dim_IntList");
        assert_eq!(s.args[1].ty, opt(list(SchemaType::Int, Some(1))));
        assert!(s.args[1].default.is_none());
        assert!(!s.args[2].kw_only);
        assert!(s.args[3].kw_only);
        assert_eq!(s.args[3].ty, opt(SchemaType::ScalarType));
    }

    #[test]
    fn alias_annotations_and_out_arguments() {
        let s = parse("aten::max_pool2d_with_indices.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False, *, Tensor(a!) out, Tensor(b!) indices) -> (Tensor(a!), Tensor(b!))").unwrap();
        assert!(s.has_mutable_args());
        assert_eq!(s.args[6].alias.as_deref(), Some("a!"));
        assert!(s.args[6].mutable && s.args[6].kw_only);
        assert_eq!(s.args[2].default.as_deref(), Some("[]"));
        assert_eq!(s.returns.len(), 2);
        assert!(s.returns[1].mutable);

        let s = parse("aten::chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]").unwrap();
        assert_eq!(s.args[0].alias.as_deref(), Some("a -> *"));
        assert!(!s.args[0].mutable);
        assert_eq!(s.returns[0].ty, list(SchemaType::Tensor, None));

        let s = parse("_c10d_functional::all_reduce_coalesced_(Tensor[](a!) inputs, str reduce_op, Any group_name) -> Tensor[](a!)").unwrap();
        assert!(s.args[0].mutable);
        assert_eq!(s.args[0].ty, list(SchemaType::Tensor, None));
        assert_eq!(s.args[2].ty, SchemaType::Other("Any".into()));

        let s = parse("static_runtime::select_tensor(Tensor(a) a, Tensor(b) b, bool use_b) -> Tensor(b|a)").unwrap();
        assert_eq!(s.returns[0].alias.as_deref(), Some("b|a"));
    }

    #[test]
    fn named_tuple_returns() {
        let s = parse("aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)").unwrap();
        let names: Vec<_> = s.returns.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["values", "indices"]);
        let s = parse("aten::_foreach_add.List_out(Tensor[] self, Tensor[] other, *, Scalar alpha=1, Tensor(a!)[] out) -> ()").unwrap();
        assert!(s.returns.is_empty());
        assert_eq!(s.args[3].ty, list(SchemaType::Tensor, None));
        assert!(s.args[3].mutable);
        let s = parse("_test::get_first(str[][] _0) -> str _0").unwrap();
        assert_eq!(s.args[0].ty, list(list(SchemaType::Str, None), None));
        assert_eq!(s.returns[0].name, "_0");
    }

    #[test]
    fn exotic_types() {
        let s = parse("aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor").unwrap();
        assert_eq!(s.args[1].ty, list(opt(SchemaType::Tensor), None));
        let s = parse(
            "aten::randn.generator(SymInt[] size, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        )
        .unwrap();
        assert_eq!(s.args[1].ty, opt(SchemaType::Generator));
        assert_eq!(s.args[3].ty, opt(SchemaType::Layout));
        assert_eq!(s.args[4].ty, opt(SchemaType::Device));
        let s = parse("aten::foo(Dimname dim, bool[3] mask, Scalar?[] xs) -> Tensor").unwrap();
        assert_eq!(s.args[0].ty, SchemaType::Dimname);
        assert_eq!(s.args[1].ty, list(SchemaType::Bool, Some(3)));
        assert_eq!(s.args[2].ty, list(opt(SchemaType::Scalar), None));
        let s = parse("quantized::conv2d_prepack(Tensor weight, Tensor? bias, int[] stride) -> __torch__.torch.classes.quantized.Conv2dPackedParamsBase").unwrap();
        assert_eq!(s.returns[0].ty, SchemaType::Other("__torch__.torch.classes.quantized.Conv2dPackedParamsBase".into()));
        let s = parse("static_runtime::VarTupleUnpack(...) -> ...").unwrap();
        assert_eq!(s.args[0].ty, SchemaType::Varargs);
        assert!(s.varargs_returns);
    }

    #[test]
    fn defaults_with_quotes_and_brackets() {
        let s = parse(r#"aten::_test_string_default(Tensor dummy, str a="\"\'\\", str b="\"\'\\") -> Tensor"#).unwrap();
        assert_eq!(s.args[1].default.as_deref(), Some(r#""\"\'\\""#));
        assert_eq!(s.args[2].name, "b");
        let s = parse(r#"aten::f(Tensor self, str mode="a,b)", int[] d=[-2, -1]) -> Tensor"#).unwrap();
        assert_eq!(s.args[1].default.as_deref(), Some(r#""a,b)""#));
        assert_eq!(s.args[2].default.as_deref(), Some("[-2, -1]"));
    }

    #[test]
    fn malformed_input_is_an_error() {
        for bad in [
            "",
            "aten::",
            "aten::f",
            "aten::f(",
            "aten::f(Tensor",
            "aten::f(Tensor self",
            "aten::f(Tensor self) ->",
            "aten::f(Tensor self) -> Tensor junk junk",
            "aten::f(int[99999999999] x) -> Tensor",
            "aten::f(Tensor(a x) -> Tensor",
            "aten::f(str s=\"unterminated) -> Tensor",
            "aten::f(int x=) -> Tensor",
            "f(Tensor x) -> Tensor",
            "aten::f(Tensor x) -> (Tensor",
            "aten::f(é x) -> Tensor",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn every_schema_of_libtorch_parses() {
        let text = include_str!("../../tests/fixtures/schemas-2.13.0.txt");
        let mut n = 0;
        for line in text.lines() {
            let s = parse(line).unwrap_or_else(|e| panic!("{e}"));
            assert!(line.starts_with(&s.qualified()));
            n += 1;
        }
        assert_eq!(n, 3466);
    }

    #[test]
    fn never_panics_on_truncations_and_mutations() {
        let text = include_str!("../../tests/fixtures/schemas-2.13.0.txt");
        for line in text.lines().step_by(7) {
            for cut in (0..line.len()).filter(|&i| line.is_char_boundary(i)) {
                let _ = parse(&line[..cut]);
                let mut mutated = line.to_string();
                mutated.insert(cut, ['(', ')', '[', ']', '"', ',', '?', '*'][cut % 8]);
                let _ = parse(&mutated);
            }
        }
    }
}
