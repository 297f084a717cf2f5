//! The parser, checker and formatter never panic, overflow or hang, whatever the input:
//! property tests over random bytes, token soup and mutated specs, the extreme cases by name,
//! and every input that ever crashed them (`tests/robustness/*.sfz`).
use std::path::Path;

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
    for case in [
        format!("api f(x: int) {{ {}x > 0; }}", "not ".repeat(100_000)),
        format!("api f(x: int) {{ {}x; }}", "(".repeat(100_000)),
    ] {
        let (m, d) = sfz::syntax::parse(FileId(0), &case);
        assert!(m.items.is_empty());
        assert_eq!(d.len(), 1, "{d:?}");
        on_small_stack(move || survive(&case));
    }
}
