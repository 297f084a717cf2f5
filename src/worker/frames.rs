//! The native frames a dying worker wrote to stderr (`wire::frames`), taken out of the stderr the
//! supervisor keeps and named against the symbol tables of their modules: pip's libtorch keeps
//! its `.symtab`, so kernels in anonymous namespaces get their names too. `site` picks the frame
//! a crash is keyed by: the innermost one that is torch's own code, past the C library, the
//! allocator, the dispatcher and the worker itself.
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};
use serde::{Deserialize, Serialize};

use crate::wire::frames;

/// One return address of the thread that died, innermost first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// The module's file name (`libtorch_cpu.so`).
    pub module: String,
    /// The return address's offset from where the module was loaded.
    pub offset: u64,
    /// The function, demangled, without parameters or template arguments; None where the
    /// module has no symbol for it or was not looked up (the C and C++ runtimes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
}

impl Frame {
    /// Code that every crash passes through and none is caused by: the C and C++ runtimes, the
    /// allocator and reference counts (c10), the dispatcher and its boxing, autograd's wrappers,
    /// TensorIterator's and the thread pool's loops, and the worker's own code (where only the
    /// test operators stand for kernels).
    pub fn is_infrastructure(&self) -> bool {
        if RUNTIMES.iter().any(|r| self.module.starts_with(r)) {
            return true;
        }
        let Some(f) = self.function.as_deref() else { return true };
        if self.module.starts_with("sfz-worker") || self.module.starts_with("sfz_worker") {
            return !f.contains("test_");
        }
        GENERIC.iter().any(|g| f.starts_with(g)) || f.contains("::set_output") || f.contains("_omp_fn") || f.contains("parallel_for") || f.contains("invoke_parallel")
    }
}

/// Modules whose frames are never a crash's site (and are not symbolized).
const RUNTIMES: [&str; 9] = ["libc.so", "libc-", "libm.so", "libpthread", "libstdc++", "libgcc_s", "ld-linux", "libgomp", "libdl"];

/// Function prefixes of code every call runs through.
const GENERIC: [&str; 24] = [
    "c10::",
    // Allocation: where a damaged heap is noticed, not what damaged it.
    "at::detail::empty",
    "at::empty",
    "at::native::empty",
    "at::native::resize",
    // A structured kernel's meta function, which sizes and allocates its output.
    "at::meta::",
    "at::native::zeros",
    "at::native::full",
    "at::_ops::",
    "at::TensorBase::",
    "at::Tensor::",
    "at::TensorIteratorBase::",
    "at::TensorIterator::",
    "at::internal::",
    "at::native::DispatchStub",
    "at::native::{anon}::VectorizedLoop2d",
    "at::native::{anon}::basic_loop",
    "torch::jit::",
    "torch::autograd::",
    "torch::ADInplaceOrView::",
    "std::",
    "__gnu_cxx::",
    "operator delete",
    "operator new",
];

/// The frame a crash is keyed by: the innermost that is neither infrastructure nor a vendor
/// library's.
pub fn site(frames: &[Frame]) -> Option<&str> {
    frames.iter().find(|f| !f.is_infrastructure() && !f.is_vendor()).and_then(|f| f.function.as_deref())
}

impl Frame {
    /// Code of the libraries torch calls into (MKL's BLAS and LAPACK, oneDNN, Sleef): a kernel
    /// that hands them a wrong shape dies in whichever routine its dtype and size pick
    /// (`_cholesky_solve_helper`'s missing check died in 12 MKL routines of one campaign), so
    /// the defect is keyed by torch's caller.
    pub fn is_vendor(&self) -> bool {
        let Some(f) = self.function.as_deref() else { return false };
        // Torch's own code is in namespaces (`at::`, `c10::`, `torch::`); what is not is C or
        // Fortran of the libraries it links (`mkl_blas_def_dtrsv_lnn`, `zpotrs`, `SPOTRS`).
        let c_or_fortran = !f.contains("::") && !self.module.starts_with("sfz");
        c_or_fortran || f.starts_with("dnnl::") || f.starts_with("xbyak")
    }
}

/// What a dying worker's fault handler wrote, taken out of its stderr.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Taken {
    /// The stderr without the handler's lines.
    pub stderr: String,
    /// The frames, named.
    pub frames: Vec<Frame>,
    /// It died between calls of operators (`wire::frames::BETWEEN_CALLS`).
    pub between_calls: bool,
}

/// `stderr` without its frame lines, and those frames, named.
pub fn take(stderr: &str) -> Taken {
    let mut rest = String::with_capacity(stderr.len());
    let mut raw = Vec::new();
    let mut between_calls = false;
    for line in stderr.split_inclusive('\n') {
        if line.trim_end() == frames::BETWEEN_CALLS {
            between_calls = true;
            continue;
        }
        match frames::parse(line) {
            Some((offset, module)) => raw.push((offset, module.to_string())),
            None => rest.push_str(line),
        }
    }
    if raw.is_empty() {
        return Taken { stderr: rest, frames: Vec::new(), between_calls };
    }
    // The handler's blank line before its frames.
    if rest.ends_with("\n\n") {
        rest.pop();
    }
    let named = name_all(&raw);
    let frames = raw.into_iter().zip(named).map(|((offset, path), function)| Frame { module: file_name(&path), offset, function }).collect();
    Taken { stderr: rest, frames, between_calls }
}

/// The frames as lines for a finding's message, at most `max`: those that are not
/// infrastructure, or where every frame is (a damaged heap noticed at a later free), torch's.
pub fn describe(frames: &[Frame], max: usize) -> String {
    let torch = |f: &&Frame| f.module.starts_with("libtorch") || f.module.starts_with("libc10");
    let own: Vec<&Frame> = frames.iter().filter(|f| !f.is_infrastructure()).collect();
    let shown: Vec<&Frame> = if own.is_empty() { frames.iter().filter(torch).collect() } else { own };
    let lines: Vec<String> = shown.iter().take(max).map(|f| format!("  {} ({}+{:#x})", f.function.as_deref().unwrap_or("?"), f.module, f.offset)).collect();
    lines.join("\n")
}

/// The file name of a module's path (`libtorch_cpu.so`).
fn file_name(path: &str) -> String {
    Path::new(path).file_name().map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}

/// Names already looked up, per module path and offset: a campaign meets the same crash often.
type Names = HashMap<(String, u64), Option<String>>;

fn cache() -> &'static Mutex<Names> {
    static CACHE: OnceLock<Mutex<Names>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The function of each (offset, module path), one pass over each module's symbol table for all
/// of its frames.
fn name_all(raw: &[(u64, String)]) -> Vec<Option<String>> {
    let mut names = cache().lock().unwrap_or_else(|e| e.into_inner());
    let mut wanted: HashMap<&str, Vec<u64>> = HashMap::new();
    for (offset, path) in raw {
        let file = file_name(path);
        if !names.contains_key(&(path.clone(), *offset)) && !RUNTIMES.iter().any(|r| file.starts_with(r)) {
            wanted.entry(path.as_str()).or_default().push(*offset);
        }
    }
    for (path, offsets) in wanted {
        let found = lookup(Path::new(path), &offsets);
        for (offset, name) in offsets.into_iter().zip(found) {
            names.insert((path.to_string(), offset), name.map(|n| simplify(&demangle(&n))));
        }
    }
    raw.iter().map(|(offset, path)| names.get(&(path.clone(), *offset)).cloned().flatten()).collect()
}

/// The raw symbol containing each return address of `offsets` in the module at `path`.
fn lookup(path: &Path, offsets: &[u64]) -> Vec<Option<String>> {
    let none = vec![None; offsets.len()];
    let Ok(file) = std::fs::File::open(path) else { return none };
    // SAFETY: a read-only mapping of a library the worker had loaded; nothing here writes it.
    let Ok(map) = (unsafe { memmap2::Mmap::map(&file) }) else { return none };
    let Ok(elf) = object::File::parse(&*map) else { return none };
    // Offsets count from the load address, which is the lowest segment's address.
    let base = elf.segments().map(|s| s.address()).min().unwrap_or(0);
    // A return address is one past its call: the call itself may be the function's last byte.
    let mut targets: Vec<(u64, usize)> = offsets.iter().enumerate().map(|(i, o)| (o.saturating_sub(1) + base, i)).collect();
    targets.sort_unstable();
    let mut best: Vec<Option<(u64, &[u8])>> = vec![None; offsets.len()];
    let symbols: Box<dyn Iterator<Item = object::Symbol<'_, '_>>> = if elf.symbols().next().is_some() { Box::new(elf.symbols()) } else { Box::new(elf.dynamic_symbols()) };
    for symbol in symbols.filter(|s| s.kind() == SymbolKind::Text && s.size() > 0) {
        let (start, end) = (symbol.address(), symbol.address() + symbol.size());
        let from = targets.partition_point(|&(t, _)| t < start);
        for &(_, i) in targets[from..].iter().take_while(|&&(t, _)| t < end) {
            // The innermost (latest-starting) symbol holding the address.
            if best[i].is_none_or(|(s, _)| start > s) {
                best[i] = symbol.name_bytes().ok().map(|n| (start, n));
            }
        }
    }
    best.into_iter().map(|b| b.map(|(_, n)| String::from_utf8_lossy(n).into_owned())).collect()
}

/// C++'s operator names, longest first where one begins another.
const OPERATORS: [&str; 38] = [
    "()", "[]", "->*", "->", "<=>", "<<=", ">>=", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<", ">", "=", "!",
    "+", "-", "*", "/", "%", "&", "|", "^", "~",
];

/// A C++ symbol demangled (Rust's legacy mangling is C++'s too); anything else as it is.
fn demangle(raw: &str) -> String {
    let options = cpp_demangle::DemangleOptions::new().no_return_type().no_params();
    cpp_demangle::Symbol::new(raw).ok().and_then(|s| s.demangle_with_options(&options).ok()).unwrap_or_else(|| raw.to_string())
}

/// A demangled name without what varies between instances of one function: parameters,
/// template arguments, a Rust hash; `(anonymous namespace)` is written `{anon}`.
pub fn simplify(name: &str) -> String {
    let name = name.replace("(anonymous namespace)", "{anon}");
    let mut out = String::with_capacity(name.len());
    let (mut angle, mut paren) = (0usize, 0usize);
    let mut chars = name.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        // `operator()`, `operator<` and their kind are names, not brackets.
        let word_start = i == 0 || name[..i].ends_with([':', ' ', '~']);
        if word_start && angle == 0 && paren == 0 && name[i..].starts_with("operator") {
            let after = &name[i + "operator".len()..];
            let symbol = OPERATORS.iter().find(|o| after.starts_with(*o)).copied().unwrap_or("");
            out.push_str("operator");
            out.push_str(symbol);
            for _ in 0.."operator".len() - 1 + symbol.len() {
                chars.next();
            }
            continue;
        }
        match c {
            '<' => angle += 1,
            '>' if angle > 0 => angle -= 1,
            '(' => paren += 1,
            ')' if paren > 0 => paren -= 1,
            _ if angle == 0 && paren == 0 => out.push(c),
            _ => {}
        }
    }
    // Rust's legacy mangling ends in `::h` and 16 hex digits.
    if let Some(at) = out.rfind("::h") {
        if out.len() - at == 19 && out[at + 3..].chars().all(|c| c.is_ascii_hexdigit()) {
            out.truncate(at);
        }
    }
    // Qualifiers left after the parameters.
    out.replace(" const::", "::").trim().trim_end_matches(" const").to_string()
}

#[cfg(test)]
mod tests {
    use super::{simplify, site, take, Frame};

    #[test]
    fn names_keep_the_function_and_drop_what_varies_per_instance() {
        assert_eq!(simplify("at::native::(anonymous namespace)::cpu_max_pool<float, false>(at::Tensor const&, long)"), "at::native::{anon}::cpu_max_pool");
        assert_eq!(
            simplify("at::native::(anonymous namespace)::div_trunc_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#2}::operator()() const"),
            "at::native::{anon}::div_trunc_kernel::{lambda#1}::operator()::{lambda#2}::operator()"
        );
        assert_eq!(simplify("c10::intrusive_ptr<c10::TensorImpl>::operator->() const"), "c10::intrusive_ptr::operator->");
        assert_eq!(simplify("std::operator< <char>(std::string const&, char const*)"), "std::operator<");
        assert_eq!(simplify("operator delete(void*)"), "operator delete");
        assert_eq!(simplify("sfz_worker::fault::on_fatal::h0123456789abcdef"), "sfz_worker::fault::on_fatal");
    }

    fn frame(module: &str, function: Option<&str>) -> Frame {
        Frame { module: module.into(), offset: 0x10, function: function.map(String::from) }
    }

    #[test]
    fn the_site_is_the_innermost_frame_of_torchs_own_code() {
        let frames = [
            frame("sfz-worker", Some("sfz_worker::fault::on_fatal")),
            frame("libc.so.6", None),
            frame("libc.so.6", None),
            frame("libc10.so", Some("c10::free_cpu")),
            frame("libtorch_cpu.so", Some("c10::intrusive_ptr::reset_")),
            frame("libtorch_cpu.so", Some("at::native::{anon}::max_pool2d_backward_out_cpu_template")),
            frame("libtorch_cpu.so", Some("at::{anon}::wrapper_CPU_max_pool2d_backward")),
            frame("libtorch_cpu.so", Some("c10::Dispatcher::callBoxed")),
        ];
        assert_eq!(site(&frames), Some("at::native::{anon}::max_pool2d_backward_out_cpu_template"));
        assert_eq!(site(&frames[..5]), None);
        // The worker's own code is no site, but a test operator of its shim stands for a kernel.
        assert_eq!(site(&[frame("sfz-worker", Some("sfz_call_run")), frame("sfz-worker", Some("{anon}::test_overrun"))]), Some("{anon}::test_overrun"));
    }

    /// The handler's lines leave the stderr kept; its mark of a death between calls is read.
    #[test]
    fn a_death_inside_a_vendor_library_is_keyed_by_torchs_caller() {
        let frames = [
            frame("libtorch_cpu.so", Some("mkl_blas_def_dtrsv_lnn")),
            frame("libtorch_cpu.so", Some("mkl_blas_dtrsv")),
            frame("libtorch_cpu.so", Some("dtrsm_")),
            frame("libtorch_cpu.so", Some("SPOTRS")),
            frame("libtorch_cpu.so", Some("at::native::{anon}::apply_cholesky_solve")),
            frame("libtorch_cpu.so", Some("at::native::_cholesky_solve_helper_cpu")),
        ];
        assert_eq!(site(&frames), Some("at::native::{anon}::apply_cholesky_solve"));
        // Torch's own kernels keep their names, however short.
        assert!(!frame("libtorch_cpu.so", Some("at::native::cpu_kernel")).is_vendor());
    }

    #[test]
    fn the_handlers_lines_are_taken_out() {
        let plain = take("free(): invalid pointer\n");
        assert_eq!((plain.stderr.as_str(), plain.frames.len(), plain.between_calls), ("free(): invalid pointer\n", 0, false));
        let marked = take("malloc(): invalid size (unsorted)\n\nsfz-frames between calls\nsfz-frame 0x10 /nonexistent/libc.so.6\n");
        assert_eq!(marked.stderr, "malloc(): invalid size (unsorted)\n");
        assert!(marked.between_calls);
        assert_eq!(marked.frames, [Frame { module: "libc.so.6".into(), offset: 0x10, function: None }]);
    }
}
