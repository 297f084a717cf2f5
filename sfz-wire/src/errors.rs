//! What a libtorch error means for a fuzzer. Argument validation (TORCH_CHECK and its typed
//! variants) is libtorch doing its job; a mistyped call is the spec's fault; only a failed
//! internal assertion or a C++ exception that escaped every check is a libtorch bug.
use crate::outcome::ErrorClass;

/// The meaning of an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The arguments were rejected by a check: an invalid input, not a bug.
    Argument,
    /// The arguments did not match the operator's schema: the spec declares wrong types.
    Schema,
    /// TORCH_INTERNAL_ASSERT failed: a libtorch bug. The signature is the assert's location.
    Internal { signature: String },
    /// A C++ exception escaped libtorch's checks (`std::out_of_range` from an unchecked `.at()`).
    Unchecked { signature: String },
    /// An allocation failed.
    OutOfMemory,
}

pub fn classify(class: ErrorClass, message: &str) -> ErrorKind {
    match class {
        ErrorClass::Schema => ErrorKind::Schema,
        ErrorClass::OutOfMemory | ErrorClass::BadAlloc => ErrorKind::OutOfMemory,
        _ if message.contains("INTERNAL ASSERT FAILED") => ErrorKind::Internal { signature: assert_location(message) },
        // c10's checked_convert refusing a Scalar argument outside the dtype's range (a
        // `std::runtime_error`, a RuntimeError in Python): an argument check, not a bug.
        _ if is_range_check(message) => ErrorKind::Argument,
        ErrorClass::OutOfRange | ErrorClass::InvalidArgument | ErrorClass::StdException | ErrorClass::Unknown => {
            ErrorKind::Unchecked { signature: format!("{class:?}: {}", normalize(first_line(message))) }
        }
        _ if message.contains("can't allocate memory") || message.contains("out of memory") => ErrorKind::OutOfMemory,
        _ => ErrorKind::Argument,
    }
}

/// libtorch refusing to write in place into a tensor whose elements share memory (an expanded,
/// stride-0 input): what the input's layout makes invalid, as documented, so a layout variant
/// that copies the input apart is expected to succeed where the original raised this.
pub fn is_overlapping_write(message: &str) -> bool {
    message.contains("more than one element of the written-to tensor refers to a single memory location")
}

fn is_range_check(message: &str) -> bool {
    // The worker prefixes a std exception's message with its type (`St13runtime_error: `).
    let first = first_line(message);
    first.contains("value cannot be converted to type") && first.contains("without overflow")
}

/// `INTERNAL ASSERT FAILED at "/path/aten/src/ATen/native/Foo.cpp":123` → `aten/src/ATen/native/Foo.cpp:123`.
/// The same assert reached by different inputs is one bug.
pub fn assert_location(message: &str) -> String {
    let Some(at) = message.find("INTERNAL ASSERT FAILED at") else { return normalize(first_line(message)) };
    let rest = &message[at + "INTERNAL ASSERT FAILED at".len()..];
    let rest = rest.trim_start().trim_start_matches('"');
    let (path, tail) = rest.split_once('"').unwrap_or((rest, ""));
    let line: String = tail.trim_start_matches(':').chars().take_while(char::is_ascii_digit).collect();
    // Keep the repository-relative part of the build path.
    let path = ["aten/", "c10/", "torch/", "caffe2/"].iter().find_map(|root| path.find(root).map(|i| &path[i..])).unwrap_or(path);
    format!("INTERNAL ASSERT {path}:{line}")
}

fn first_line(s: &str) -> &str {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim()
}

/// A message with its input-dependent parts (numbers, addresses, quoted names of sizes) made
/// uniform, so one cause gives one signature; at most 240 characters.
pub fn normalize(message: &str) -> String {
    normalize_all(message).chars().take(240).collect()
}

/// libtorch's complaint about rejected arguments as one key per check: `normalize`, with dtype
/// names made uniform too (`got Half and Bool`, `got Float and Long` are one check failing), so
/// that inference and `sfz suggest` count how often a check fails, not how often each dtype
/// pair does.
pub fn complaint(message: &str) -> String {
    normalize(&without_dtype_names(message))
}

/// `message` with each dtype name, c10's (`BFloat16`, `ComplexFloat`) or Python's
/// (`torch.float32`), replaced by `T`.
fn without_dtype_names(message: &str) -> String {
    const C10: [&str; 22] = [
        "Byte",
        "Char",
        "Short",
        "Int",
        "Long",
        "Half",
        "Float",
        "Double",
        "ComplexHalf",
        "ComplexFloat",
        "ComplexDouble",
        "Bool",
        "BFloat16",
        "UInt16",
        "UInt32",
        "UInt64",
        "Float8_e5m2",
        "Float8_e4m3fn",
        "Float8_e5m2fnuz",
        "Float8_e4m3fnuz",
        "QInt8",
        "QUInt8",
    ];
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(start) = rest.find(|c: char| c.is_ascii_alphanumeric() || c == '_') {
        out.push_str(&rest[..start]);
        let word_len = rest[start..].find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len() - start);
        let word = &rest[start..start + word_len];
        let python = out.ends_with("torch.") && crate::case::DType::from_name(word).is_some();
        // C++'s names, as in `Input type (float) and bias type (c10::Half)`.
        let cpp = matches!(word, "bool" | "char" | "short" | "int" | "long" | "float" | "double");
        let signed = matches!(word, "signed" | "unsigned") && rest[start + word_len..].starts_with(" char");
        let namespace = word == "c10" && rest[start + word_len..].starts_with("::");
        if signed || namespace {
            rest = &rest[start + word_len + if namespace { 2 } else { 1 }..];
            continue;
        }
        out.push_str(if C10.contains(&word) || python || cpp { "T" } else { word });
        rest = &rest[start + word_len..];
    }
    out.push_str(rest);
    out.replace("complex<T>", "T")
}

/// The cause `crash_cause` gives every message of glibc's about a damaged heap.
pub const HEAP_DAMAGE: &str = "heap corruption detected by glibc";

/// Whether a line is glibc saying it found its heap damaged: something wrote where it should
/// not, and this free or malloc is merely where it showed.
pub fn heap_damage(line: &str) -> bool {
    const HEAP: [&str; 16] = [
        "free(): invalid",
        "free(): corrupted unsorted chunks",
        "free(): double free detected",
        "malloc_consolidate(): ",
        "realloc(): invalid",
        "corrupted top size",
        "unsorted double linked list corrupted",
        "double free or corruption",
        "malloc(): corrupted",
        "malloc(): invalid",
        "malloc(): unaligned",
        "malloc(): memory corruption",
        "invalid fastbin entry",
        "corrupted size vs. prev_size",
        "corrupted double-linked list",
        "munmap_chunk(): invalid pointer",
    ];
    HEAP.iter().any(|h| line.contains(h))
}

/// Whether a dying process's last line says memory was found damaged: glibc's heap checks, or
/// the fortified C library's stack and buffer checks.
pub fn memory_damage(line: &str) -> bool {
    heap_damage(line) || line.contains("stack smashing detected") || line.contains("buffer overflow detected")
}

/// One name for one cause in a crash's last line: glibc's many words for a corrupted heap (which
/// depend on where the corruption is noticed, not on what corrupted it) are one, and a LAPACK
/// routine's dtype letter (`SGEBAL`, `CGEBAL`, `ZGEBAL`) is dropped.
pub fn crash_cause(line: &str) -> String {
    if heap_damage(line) {
        return HEAP_DAMAGE.into();
    }
    if let Some(at) = line.find("on entry to ") {
        let (head, routine) = line.split_at(at + "on entry to ".len());
        let mut chars = routine.chars();
        if let (Some('S' | 'D' | 'C' | 'Z'), rest) = (chars.next(), chars.as_str()) {
            if rest.starts_with(|c: char| c.is_ascii_uppercase()) {
                return format!("{head}?{rest}");
            }
        }
    }
    line.to_string()
}

/// `normalize` without the length limit (for finding a signature's text in a longer output).
pub fn normalize_all(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '0' && chars.peek() == Some(&'x') {
            chars.next();
            while chars.peek().is_some_and(|d| d.is_ascii_hexdigit()) {
                chars.next();
            }
            out.push_str("0xADDR");
        } else if c.is_ascii_digit() || (c == '-' && chars.peek().is_some_and(|d| d.is_ascii_digit()) && !out.ends_with(|p: char| p.is_alphanumeric())) {
            while chars.peek().is_some_and(|d| d.is_ascii_digit() || *d == '.' || *d == 'e') {
                chars.next();
            }
            out.push('N');
        } else {
            out.push(c);
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cause_one_crash_name() {
        assert_eq!(crash_cause("free(): invalid next size (fast)"), crash_cause("double free or corruption (!prev)"));
        assert_eq!(
            crash_cause("Intel oneMKL ERROR: Parameter N was incorrect on entry to ZGEBAL."),
            crash_cause("Intel oneMKL ERROR: Parameter N was incorrect on entry to SGEBAL.")
        );
        assert_eq!(crash_cause("Intel oneMKL ERROR: Parameter N was incorrect on entry to SGEBAL."), "Intel oneMKL ERROR: Parameter N was incorrect on entry to ?GEBAL.");
        assert_eq!(crash_cause("Segmentation fault in foo"), "Segmentation fault in foo");
    }

    #[test]
    fn a_scalar_out_of_the_dtype_range_is_an_argument_error() {
        let msg = "St13runtime_error: value cannot be converted to type uint8_t without overflow";
        assert_eq!(classify(ErrorClass::StdException, msg), ErrorKind::Argument);
        let other = "St13runtime_error: vector::_M_range_check";
        assert!(matches!(classify(ErrorClass::StdException, other), ErrorKind::Unchecked { .. }));
    }

    #[test]
    fn argument_errors_are_not_bugs() {
        assert_eq!(classify(ErrorClass::C10, "Dimension out of range (expected to be in range of [-1, 0], but got 3)"), ErrorKind::Argument);
        assert_eq!(classify(ErrorClass::Index, "index 5 is out of bounds for dimension 0 with size 3"), ErrorKind::Argument);
        assert_eq!(classify(ErrorClass::Schema, "Expected a value of type 'int'"), ErrorKind::Schema);
        assert_eq!(classify(ErrorClass::StdException, "St13runtime_error: value cannot be converted to type uint8_t without overflow"), ErrorKind::Argument);
        // Other escaped exceptions stay suspicious.
        assert!(matches!(classify(ErrorClass::StdException, "St12length_error: cannot create std::vector larger than max_size()"), ErrorKind::Unchecked { .. }));
    }

    #[test]
    fn internal_asserts_are_keyed_by_location() {
        let msg = "false INTERNAL ASSERT FAILED at \"/pytorch/aten/src/ATen/native/Foo.cpp\":123, please report a bug to PyTorch. x=3";
        assert_eq!(classify(ErrorClass::C10, msg), ErrorKind::Internal { signature: "INTERNAL ASSERT aten/src/ATen/native/Foo.cpp:123".into() });
    }

    #[test]
    fn normalization_hides_sizes_and_addresses() {
        assert_eq!(normalize("size [2, 3] at 0x7ffd12 vs -4"), normalize("size [7, 11] at 0x55aa00 vs -1"));
        assert_ne!(normalize("expected int"), normalize("expected float"));
        assert_eq!(
            complaint("self and mat2 must have the same dtype, but got Half and Bool"),
            complaint("self and mat2 must have the same dtype, but got BFloat16 and ComplexFloat")
        );
        assert_eq!(complaint("expected torch.float32, got torch.int64 at 3"), "expected torch.T, got torch.T at N");
        assert_eq!(complaint("Integer division of tensors"), "Integer division of tensors");
        assert_eq!(complaint("Input type (c10::Half) and bias type (unsigned char) should be the same"), complaint("Input type (float) and bias type (bool) should be the same"));
    }
}
