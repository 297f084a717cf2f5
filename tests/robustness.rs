//! The parser, checker and formatter never panic, overflow or hang, whatever the input:
//! property tests over random bytes, token soup and mutated specs, the extreme cases by name,
//! and every input that ever crashed them (`tests/robustness/*.sfz`).
mod common;

use std::path::Path;

use proptest::prelude::*;
use sfz::diag::FileId;

/// Everything a file goes through without executing it: parse, check, format.
fn survive(text: &str) {
    let _ = sfz::syntax::parse(FileId(0), text);
    let checked = sfz::check::check_text(Path::new("robustness.sfz"), text);
    let _ = sfz::diag::render_all(&checked.map, &checked.diags, Default::default());
    if let Ok(out) = sfz::fmt::format_text(text) {
        let again = sfz::fmt::format_text(&out).unwrap_or_else(|d| panic!("formatted text does not parse: {d:?}\n{out}"));
        assert_eq!(again, out, "formatting is not a fixed point");
    }
}

/// Runs `f` on a thread with the stack of a test thread (2 MiB), which is smaller than an
/// editor's or a command's main thread.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new().stack_size(2 << 20).spawn(f).expect("thread").join().expect("no panic");
}

#[test]
fn expressions_at_the_limits_do_not_overflow() {
    // Each case stays just under the operator limit, inside brackets just under the nesting limit.
    let n = sfz::syntax::MAX_OPERATORS - sfz::syntax::MAX_NESTING - 8;
    let nest = "(".repeat(sfz::syntax::MAX_NESTING - 2);
    let close = ")".repeat(sfz::syntax::MAX_NESTING - 2);
    let cases = [
        format!("api f(x: int) {{ {nest}{}x > 0{close}; }}", "not ".repeat(n)),
        format!("api f(x: bool) {{ {nest}{}x{close}; }}", "x => ".repeat(n)),
        format!("api f(x: int) {{ {nest}{}x > 0{close}; }}", "x + ".repeat(n)),
        format!("api f(x: int) {{ {nest}{}x > 0{close}; }}", "-".repeat(n)),
        format!("api f(x: Tensor) {{ {nest}x{} > 0{close}; }}", ".ndim".repeat(n)),
        format!("api f(x: int[]) {{ {nest}x{} > 0{close}; }}", "[0]".repeat(n / 2)),
        format!("api f(x: bool) {{ {nest}{}x{close}; }}", "if x then ".repeat(n / 2)),
        format!("api f(x: int[]) {{ {nest}{}x[0] > 0{close}; }}", "forall i in x: ".repeat(n / 2)),
    ];
    for case in cases {
        let (m, d) = sfz::syntax::parse(FileId(0), &case);
        assert!(d.is_empty() && m.items.len() == 1, "{d:?}");
        on_small_stack(move || survive(&case));
    }
}

#[test]
fn expressions_past_the_limits_are_refused() {
    for case in [format!("api f(x: int) {{ {}x > 0; }}", "not ".repeat(100_000)), format!("api f(x: int) {{ {}x; }}", "(".repeat(100_000))] {
        let (m, d) = sfz::syntax::parse(FileId(0), &case);
        assert!(m.items.is_empty());
        assert_eq!(d.len(), 1, "{d:?}");
        on_small_stack(move || survive(&case));
    }
}

/// Inputs that once crashed or hung sfz, kept forever (`tests/robustness/*.sfz`).
#[test]
fn regression_corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/robustness");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).expect("tests/robustness exists") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "sfz") {
            let bytes = std::fs::read(&path).expect("readable");
            let text = String::from_utf8_lossy(&bytes).into_owned();
            on_small_stack(move || survive(&text));
            n += 1;
        }
    }
    assert!(n >= 5, "the corpus is missing");
}

#[test]
fn empty_and_whitespace_files() {
    for text in ["", "\n", "\u{feff}", "   \t\r\n", "//", "/*", "\"", "///", "#[", "\0"] {
        survive(text);
    }
    assert!(sfz::check::check_text(Path::new("e.sfz"), "").diags.is_empty());
}

#[test]
fn a_file_that_is_not_utf8_is_a_diagnostic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("latin1.sfz");
    std::fs::write(&path, b"api torch.exp(input: Tensor) { // caf\xe9\n}\n").expect("write");
    let checked = sfz::check::check_paths(&[path]);
    assert_eq!(checked.diags.len(), 1, "{:?}", checked.diags);
    assert_eq!(checked.diags[0].code.as_str(), "E0018");
    assert!(checked.diags[0].notes[0].contains("not UTF-8"), "{:?}", checked.diags[0]);
}

/// Ten-megabyte files of several kinds give diagnostics in bounded time.
#[test]
fn ten_megabyte_files() {
    const MB10: usize = 10 << 20;
    let repeat = |unit: &str| unit.repeat(MB10 / unit.len());
    let cases = [
        ("one comment", format!("/*{}*/", "x".repeat(MB10))),
        ("one string", format!("api f(x: str) {{ x == \"{}\"; }}", "a".repeat(MB10))),
        ("broken items", repeat("api f(x: int) { x > }\n")),
        ("statements", format!("api f(x: int) {{\n{}}}\n", repeat("    x > 0;\n"))),
        ("a long list", format!("dtypes d = [{}float32];\n", repeat("float32, "))),
        ("garbage", (0..MB10).map(|i| b"api(){};:,.x \n"[(i * 7919) % 14] as char).collect()),
    ];
    for (what, text) in cases {
        let start = std::time::Instant::now();
        let checked = sfz::check::check_text(Path::new("big.sfz"), &text);
        let _ = sfz::fmt::format_text(&text);
        let took = start.elapsed();
        eprintln!("{what}: {took:?}");
        // Generous: the dev profile on a loaded two-core machine (10 MB of statements took 28 s
        // alone and 73 s beside the property tests). A hang is many minutes.
        assert!(took.as_secs() < 180, "{what}: {took:?}");
        assert!(checked.diags.len() <= sfz::syntax::MAX_SYNTAX_ERRORS + 1, "{what}: {} diagnostics", checked.diags.len());
    }
}

// Property tests. Each case goes through parse, check and format; where the formatter accepts
// the text, its output must be a fixed point. Failures are saved by proptest under
// `tests/proptest-regressions/` and the inputs belong in `tests/robustness/`.

/// Tokens of the language, and some that are not.
const TOKENS: &[&str] = &[
    "api",
    "from",
    "like",
    "result",
    "rule",
    "for",
    "use",
    "dtypes",
    "constraints",
    "type",
    "oracle",
    "program",
    "requires",
    "ensures",
    "oracles",
    "let",
    "if",
    "then",
    "else",
    "forall",
    "exists",
    "in",
    "not",
    "and",
    "or",
    "true",
    "false",
    "None",
    "inf",
    "nan",
    "torch.exp",
    "input",
    "x",
    "dim",
    "std",
    "::",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "[*]",
    ";",
    ",",
    ":",
    ".",
    "..",
    "..=",
    "->",
    "=>",
    "=",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "!",
    "&&",
    "||",
    "?",
    "|",
    "#[",
    "///",
    "// c\n",
    "/* c */",
    "/*",
    "\"s\"",
    "\"",
    "0",
    "1",
    "-1",
    "0x1F",
    "1.5",
    "1e9",
    "1.",
    "99999999999999999999",
    "Tensor",
    "int",
    "float",
    "int[2]",
    "float32",
    "floating",
    "shape",
    "ndim",
    "dtype",
    "values",
    "result",
    "\n",
    "\t",
    "é",
    "\u{feff}",
];

fn token_soup() -> impl Strategy<Value = String> {
    proptest::collection::vec((0..TOKENS.len(), 0..3usize), 0..120).prop_map(|toks| toks.into_iter().map(|(t, sep)| format!("{}{}", TOKENS[t], [" ", "", "\n"][sep])).collect())
}

/// A real spec with a few random edits: deletions, duplications and insertions of tokens.
fn mutated_spec() -> impl Strategy<Value = String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let specs: Vec<String> =
        sfz::check::expand_paths(&[root.join("specs"), root.join("stdlib"), root.join("tests/fmt")]).iter().map(|p| std::fs::read_to_string(p).expect("readable")).collect();
    (0..specs.len(), proptest::collection::vec((0..3u8, any::<prop::sample::Index>(), 0..40usize, 0..TOKENS.len()), 1..6)).prop_map(move |(which, edits)| {
        let mut text = specs[which].clone();
        for (kind, at, len, tok) in edits {
            let mut lo = at.index(text.len() + 1);
            while !text.is_char_boundary(lo) {
                lo -= 1;
            }
            let mut hi = (lo + len).min(text.len());
            while !text.is_char_boundary(hi) {
                hi -= 1;
            }
            match kind {
                0 => text.replace_range(lo..hi, ""),
                1 => {
                    let copy = text[lo..hi].to_string();
                    text.insert_str(lo, &copy);
                }
                _ => text.insert_str(lo, TOKENS[tok]),
            }
        }
        text
    })
}

const KEYWORDS: &[&str] = &["let", "requires", "ensures", "oracles", "if", "then", "else", "forall", "exists", "in", "not", "and", "or", "true", "false", "None", "inf", "nan"];

fn name() -> impl Strategy<Value = String> {
    "[a-z_][a-z0-9_]{0,5}".prop_filter("not a keyword", |s| !KEYWORDS.contains(&s.as_str()))
}

/// Well-formed expressions (not always well-typed), built as text.
fn expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        name(),
        (0..1_000_000i64).prop_map(|v| v.to_string()),
        "(0|[1-9][0-9]{0,3})\\.[0-9]{1,3}(e-?[0-9])?",
        "\"[a-z ]{0,5}\"",
        prop::sample::select(vec![r#""a\"b""#, r#""\\""#, r#""\n\t""#, r#""""#]).prop_map(str::to_string),
        Just("true".to_string()),
        Just("None".to_string()),
        Just("inf".to_string()),
        prop::sample::select(vec!["float32", "int64", "bool", "complex64"]).prop_map(str::to_string),
    ];
    leaf.prop_recursive(5, 48, 4, |inner| {
        let op = prop::sample::select(vec!["and", "or", "=>", "&&", "||", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "+", "-", "*", "/", "%"]);
        // Postfix operators apply to names and parenthesised expressions, so `1.x` never appears.
        let base = prop_oneof![name(), inner.clone().prop_map(|e| format!("({e})"))];
        prop_oneof![
            (inner.clone(), op, inner.clone()).prop_map(|(a, op, b)| format!("{a} {op} {b}")),
            (prop::sample::select(vec!["not ", "-", "!"]), inner.clone()).prop_map(|(op, a)| format!("{op}{a}")),
            (base.clone(), name()).prop_map(|(a, f)| format!("{a}.{f}")),
            (base.clone(), 0..3u8).prop_map(|(a, i)| format!("{a}.{i}")),
            (base.clone(), inner.clone()).prop_map(|(a, i)| format!("{a}[{i}]")),
            base.clone().prop_map(|a| format!("{a}[*]")),
            (name(), proptest::collection::vec((proptest::option::of(name()), inner.clone()), 0..3)).prop_map(|(f, args)| {
                let args: Vec<String> = args.into_iter().map(|(k, v)| k.map_or(v.clone(), |k| format!("{k} = {v}"))).collect();
                format!("{f}({})", args.join(", "))
            }),
            proptest::collection::vec(inner.clone(), 0..4).prop_map(|xs| format!("[{}]", xs.join(", "))),
            inner.clone().prop_map(|e| format!("({e})")),
            (inner.clone(), inner.clone(), proptest::option::of(inner.clone())).prop_map(|(c, t, e)| e.map_or(format!("if {c} then {t}"), |e| format!("if {c} then {t} else {e}"))),
            (prop::sample::select(vec!["forall", "exists"]), name(), inner.clone(), inner.clone()).prop_map(|(q, v, r, b)| format!("{q} {v} in {r}: {b}")),
            (base, inner, any::<bool>()).prop_map(|(a, b, incl)| format!("{a}{}{b}", if incl { "..=" } else { ".." })),
        ]
    })
}

fn ty() -> impl Strategy<Value = String> {
    let atom = prop::sample::select(vec!["Tensor", "int", "float", "bool", "str", "dtype", "Scalar", "Pair", "\"a\" | \"b\""]);
    (atom, prop::sample::select(vec!["", "[]", "[2]", "?", "[]?"])).prop_map(|(a, s)| if a.contains('|') && !s.is_empty() { a.to_string() } else { format!("{a}{s}") })
}

fn comment() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["", "", "", "// note\n", "/* note */ ", "/// doc\n"]).prop_map(str::to_string)
}

fn params() -> impl Strategy<Value = String> {
    proptest::collection::vec((comment(), name(), ty(), proptest::option::of(expr()), any::<bool>()), 0..4).prop_map(|ps| {
        let mut out = Vec::new();
        for (i, (c, n, t, d, star)) in ps.into_iter().enumerate() {
            if star && i == 1 {
                out.push("*".to_string());
            }
            // A doc comment before a parameter is fine; an ordinary comment too.
            out.push(format!("{c}{n}: {t}{}", d.map(|d| format!(" = {d}")).unwrap_or_default()));
        }
        out.join(", ")
    })
}

fn stmt() -> impl Strategy<Value = String> {
    prop_oneof![
        (comment(), expr()).prop_map(|(c, e)| format!("{c}{e};")),
        (comment(), expr()).prop_map(|(c, e)| format!("{c}requires {e};")),
        (comment(), expr()).prop_map(|(c, e)| format!("{c}ensures {e};")),
        (name(), expr()).prop_map(|(n, e)| format!("let {n} = {e};")),
        proptest::collection::vec((name(), proptest::option::of(expr())), 1..3).prop_map(|os| {
            let os: Vec<String> = os.into_iter().map(|(n, a)| a.map_or(n.clone(), |a| format!("{n}(tol = {a})"))).collect();
            format!("oracles {};", os.join(", "))
        }),
        // A `from` statement: a call of another API and parameters bound to what it returns.
        (name(), proptest::collection::vec(expr(), 0..3), proptest::collection::vec((comment(), name(), expr()), 0..3)).prop_map(|(n, args, binds)| {
            let binds: String = binds.into_iter().map(|(c, p, e)| format!("{c}{p}: {e};\n")).collect();
            format!("from torch.{n}({}) {{\n{binds}}}", args.join(", "))
        }),
    ]
}

fn body() -> impl Strategy<Value = String> {
    proptest::collection::vec((stmt(), prop::sample::select(vec![" ", "\n", "\n\n", "  // tail\n"])), 0..5)
        .prop_map(|ss| format!("{{\n{}}}", ss.into_iter().map(|(s, sep)| format!("{s}{sep}")).collect::<String>()))
}

fn item() -> impl Strategy<Value = String> {
    prop_oneof![
        (name(), params(), proptest::option::of(ty()), body()).prop_map(|(n, p, r, b)| format!("api torch.{n}({p}){} {b}", r.map(|r| format!(" -> {r}")).unwrap_or_default())),
        (name(), name(), body()).prop_map(|(n, t, b)| format!("#[status(candidate), source(llm), confidence(0.5), evidence(pass = 3)]\nrule {n} for torch.{t} {b}")),
        (name(), params(), body()).prop_map(|(n, p, b)| format!("constraints {n}({p}) {b}")),
        (name(), params(), body()).prop_map(|(n, p, b)| format!("program {n}({p}) {b}")),
        (name(), expr()).prop_map(|(n, e)| format!("dtypes {n} = {e};")),
        (name(), ty()).prop_map(|(n, t)| format!("type {n} = {t};")),
        (name(), params()).prop_map(|(n, p)| format!("oracle {n}({p});")),
        Just("use std::dtypes::{floating, complex};".to_string()),
        Just("use std::constraints::*;".to_string()),
    ]
}

fn spec() -> impl Strategy<Value = String> {
    proptest::collection::vec((comment(), item()), 1..5).prop_map(|items| items.into_iter().map(|(c, i)| format!("{c}{i}\n")).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        survive(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn token_soups(text in token_soup()) {
        survive(&text);
    }

    #[test]
    fn mutated_specs(text in mutated_spec()) {
        survive(&text);
    }

    /// Generated specs are well-formed: they parse without errors, and formatting keeps their
    /// tree and comments.
    #[test]
    fn generated_specs_format_faithfully(text in spec()) {
        let (_, diags) = sfz::syntax::parse(FileId(0), &text);
        prop_assert!(diags.is_empty(), "{:?}\n{}", diags, text);
        common::format_checked(&text);
        survive(&text);
    }
}
