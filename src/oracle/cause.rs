//! A finding's cause as a value: what went wrong and where, built where a detection is made and
//! carried by detections and findings. Its display text is the finding's `signature` (what ids
//! hash and findings.jsonl shows); nothing reads a cause back out of that text but the loader of
//! lines written before causes were stored (`Cause::from_legacy`).
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::wire::case::DType;
use crate::wire::outcome::signal_name;
use crate::wire::variant::GradientKind;

/// A signal a worker died by. Written as its name (`SIGSEGV`), as findings have always been.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Signal(pub i32);

impl Signal {
    pub const KILL: Signal = Signal(libc::SIGKILL);

    pub fn name(self) -> String {
        signal_name(self.0)
    }

    /// The signal a name written by `name` stands for.
    pub fn from_name(name: &str) -> Option<Signal> {
        let known = [libc::SIGSEGV, libc::SIGABRT, libc::SIGFPE, libc::SIGBUS, libc::SIGILL, libc::SIGKILL, libc::SIGTRAP, libc::SIGSYS, libc::SIGTERM, libc::SIGINT];
        if let Some(s) = known.into_iter().find(|s| signal_name(*s) == name) {
            return Some(Signal(s));
        }
        name.strip_prefix("signal ").and_then(|n| n.parse().ok()).map(Signal)
    }

    /// Signals by which memory damage shows whatever the allocator said.
    fn is_memory_fault(self) -> bool {
        matches!(self.0, libc::SIGSEGV | libc::SIGBUS)
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for Signal {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for Signal {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Signal, D::Error> {
        let name = String::deserialize(d)?;
        Signal::from_name(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown signal `{name}`")))
    }
}

/// How a worker's process ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Death {
    /// A memory error: SIGSEGV, SIGBUS, or an abort by glibc or the fortified C library finding
    /// memory damaged. One class whatever signal or words it ended with: one overrun segfaults in
    /// one process and trips the allocator in the next.
    Memory,
    /// Any other signal.
    Signal(Signal),
    /// An exit from inside a call, with its status.
    Exit(i32),
}

/// Where a cause showed: the call itself, the run of one differential check (named as the
/// check's variant describes itself: `out= variant`), or the forward call a backward operator's
/// case makes first (named by its API): a failure there is the forward's, whatever API the case
/// was for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    Call,
    Check(String),
    Forward(String),
}

/// How the worker words an error of a backward's forward call (`sfz-worker`'s `runtime::forward`).
const FORWARD_RAISED: (&str, &str) = ("the forward `", "` raised: ");

impl Place {
    /// Where an error message the call raised comes from: the forward's call when the worker
    /// says so, else the call.
    pub fn of_raised(message: &str) -> Place {
        let named = message.strip_prefix(FORWARD_RAISED.0).and_then(|rest| rest.split_once(FORWARD_RAISED.1)).map(|(api, _)| api);
        named.map_or(Place::Call, |api| Place::Forward(api.to_string()))
    }
}

/// Which non-finite values an output holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NonFinite {
    Nan,
    Inf,
    NanAndInf,
}

impl NonFinite {
    fn text(self) -> &'static str {
        match self {
            NonFinite::Nan => "NaN",
            NonFinite::Inf => "inf",
            NonFinite::NanAndInf => "NaN and inf",
        }
    }
}

/// The cause of a detection.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Cause {
    /// The worker died: how, the native frame it died in (none for a memory error met between
    /// calls), and the last meaningful line it printed, normalised.
    Died { place: Place, death: Death, site: Option<String>, words: Option<String> },
    /// The call ran past the timeout.
    Hang,
    /// The kernel's out-of-memory killer ended the worker.
    Killed,
    /// An allocation failed: libtorch's message, normalised.
    OutOfMemory { message: String },
    /// An internal assert (its location) or an escaped exception (its class and message), in
    /// the call or in a check.
    Internal { place: Place, what: String },
    /// An output holds NaN or inf from finite inputs.
    NonFinite { output: usize, values: NonFinite },
    /// An `ensures` clause does not hold (a value domain's NaN included), by its text.
    Ensures { clause: String },
    /// A premature inf, NaN or 0 where the true value is representable; `squares`: the dtype an
    /// unscaled sum of squares left, where the worker saw it; `powers`: the dtype a p-norm's sum
    /// of |x|^p (p above 2) left.
    Premature {
        output: usize,
        what: String,
        squares: Option<DType>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        powers: Option<DType>,
    },
    /// A metamorphic relation does not hold.
    Relation {
        name: String,
        squares: Option<DType>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        powers: Option<DType>,
    },
    /// Values differ from a reference or another path of the operator; `squares`: the dtype an
    /// unscaled sum of squares left, where the worker saw it (a normalization at 1e19 whose
    /// variance overflows returns its bias, no inf).
    Values {
        output: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        squares: Option<DType>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        powers: Option<DType>,
    },
    /// An output differs in dtype, shape or kind.
    Structure { output: usize, what: String },
    /// An output holds memory the kernel never wrote: two calls on the same inputs differ.
    Uninitialised { output: usize },
    /// A parameter's gradient (named as the message does) disagrees with another way of
    /// computing it, or is not finite.
    Gradient {
        param: String,
        #[serde(default)]
        against: GradientKind,
    },
    /// Only the variant raises an argument error (normalised first line).
    OnlyVariantRaises { check: String, message: String },
    /// Only the original call raises an argument error.
    OnlyOriginalRaises { message: String },
    /// A conforming input libtorch rejected (a spec finding): the normalised error.
    Rejected { message: String },
    /// A cause of a line written by an older sfz that `from_legacy` could not name.
    Other { text: String },
}

/// `text` with each normalised shape (`[N, N, N]`, `[]`) written `[..]`.
/// Whether an error message complains of a tensor's shape (`output with shape [2] doesn't match
/// the broadcast shape [3, 2]`, `The size of tensor a (3) must match the size of tensor b (2)`).
fn is_shape_complaint(message: &str) -> bool {
    ["shape", "size of tensor", "must match the size"].iter().any(|w| message.contains(w))
}

fn without_ranks(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('[') {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        match tail.find(']') {
            Some(end) if tail[1..end].split(',').all(|d| matches!(d.trim(), "N" | "")) => {
                out.push_str("[..]");
                rest = &tail[end + 1..];
            }
            _ => {
                out.push('[');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// How the display of a death names the memory-error class.
pub const MEMORY_ERROR: &str = "memory error";

/// The text an unscaled sum of squares names its cause by. Findings naming it are one cause across
/// operators, relations and the two oracles (`findings::group`).
pub const SQUARES_OVERFLOW: &str = "an unscaled sum of squares overflows";

/// The text a p-norm's unscaled sum of |x|^p (p above 2) names its cause by, as `SQUARES_OVERFLOW`.
pub const POWERS_OVERFLOW: &str = "an unscaled sum of p-th powers leaves the range of";

impl Cause {
    /// Whether this is a memory error, in the call or in a check.
    pub fn is_memory_error(&self) -> bool {
        matches!(self, Cause::Died { death: Death::Memory, .. })
    }

    /// The signal a death ended by, where the cause knows it (a memory error does not keep it).
    pub fn place(&self) -> Option<&Place> {
        match self {
            Cause::Died { place, .. } | Cause::Internal { place, .. } => Some(place),
            _ => None,
        }
    }

    /// The cause without the output it showed in: which output of an operator holds a wrong
    /// value (a weight and its norm) is one defect of its kernel, not two.
    pub fn class_text(&self) -> String {
        match self {
            Cause::NonFinite { values, .. } => format!("{} in an output", values.text()),
            // An inf, a NaN or a 0 of one operator's intermediate leaving the range is one defect
            // (float16 `polygamma` is inf at one input and 0 at another).
            Cause::Premature { squares, powers, .. } => {
                Cause::Premature { output: 0, what: "inf, NaN or 0".into(), squares: *squares, powers: *powers }.to_string().replace(" in output 0", " in an output")
            }
            Cause::Values { .. } => "values differ".to_string(),
            // Which input's derivative and which reference showed it are how it was seen: a
            // wrong derivative formula of one operator family is one report, its inputs listed.
            Cause::Gradient { against: GradientKind::NonFinite, .. } => "a derivative is NaN or inf where the function is smooth".to_string(),
            Cause::Gradient { against: GradientKind::Second, .. } => "a second derivative (double backward) is wrong".to_string(),
            Cause::Gradient { against: GradientKind::Layout, .. } => "a derivative is wrong for a non-contiguous input".to_string(),
            Cause::Gradient { against: GradientKind::InPlace, .. } => "the in-place form's derivative differs from the out-of-place one's".to_string(),
            Cause::Gradient { .. } => "a derivative is wrong".to_string(),
            // Which shapes (ranks, sizes) a wrong-shaped output had is the input's, not the defect's.
            Cause::Structure { what, .. } if what.starts_with("shape ") => "an output: another shape".to_string(),
            Cause::Structure { what, .. } => format!("an output: {what}"),
            Cause::Uninitialised { .. } => "an output holds uninitialised memory".to_string(),
            // The ranks a message names (`[N, N, N]`) are the input's, not the defect's.
            // An out= variant that refuses a shape the original returns mishandles the output's
            // shape, as one that returns another shape does: one cause, however libtorch words it.
            Cause::OnlyVariantRaises { check, message } if check.starts_with("out=") && is_shape_complaint(message) => "an output: another shape".to_string(),
            // Which of the two forms raised is the case's choice (the strided input may be the
            // original's or the variant's): `conv_tbc_backward` refusing a non-contiguous input
            // is one cause either way.
            Cause::OnlyVariantRaises { message, .. } | Cause::OnlyOriginalRaises { message } => format!("only one form raises: {}", without_ranks(message)),
            // A failure of a backward's forward call reads as the forward's own.
            Cause::Internal { place: Place::Forward(api), what } => what.replacen(&format!("{}{api}{}", FORWARD_RAISED.0, FORWARD_RAISED.1), "", 1),
            other => other.to_string(),
        }
    }

    /// The dtype an unscaled sum of squares left, for the causes that name it.
    pub fn squares(&self) -> Option<DType> {
        match self {
            Cause::Premature { squares, .. } | Cause::Relation { squares, .. } | Cause::Values { squares, .. } => *squares,
            _ => None,
        }
    }

    /// The dtype a p-norm's unscaled sum of |x|^p left, for the causes that name it.
    pub fn powers(&self) -> Option<DType> {
        match self {
            Cause::Premature { powers, .. } | Cause::Relation { powers, .. } | Cause::Values { powers, .. } => *powers,
            _ => None,
        }
    }

    /// Whether a detection with cause `later` shows this cause again. The same cause; or for a
    /// death, the same place and the same kind of death (a memory error whatever frame and words
    /// it ended with, else the same signal): what a dying process last printed and where it died
    /// vary with what ran before it. A relation or premature value recorded before its cause was
    /// named is shown again by the same one naming the squares' overflow.
    pub fn shown_by(&self, later: &Cause) -> bool {
        match (self, later) {
            (Cause::Died { place: p, death: Death::Memory, .. }, Cause::Died { place: q, death: Death::Memory, .. }) => p == q,
            (Cause::Died { place: p, death: Death::Signal(a), .. }, Cause::Died { place: q, death: Death::Signal(b), .. }) => p == q && a == b,
            (Cause::Relation { name: a, squares: None, powers: None }, Cause::Relation { name: b, .. }) => a == b,
            (Cause::Premature { output: a, what: x, squares: None, powers: None }, Cause::Premature { output: b, what: y, .. }) => a == b && x == y,
            (Cause::Values { output: a, squares: None, powers: None }, Cause::Values { output: b, .. }) => a == b,
            _ => self == later,
        }
    }

    /// Whether the text names one defect wherever it shows: an assert's location, an escaped
    /// exception, a LAPACK routine's complaint, the native frame a worker died in. Generic causes
    /// (a timeout, differing values) on unrelated operators say nothing about a shared defect.
    pub fn is_specific(&self) -> bool {
        let words = |s: &str| [".cpp:", ".h:", "StdException", "OutOfRange", "InvalidArgument", "on entry to"].iter().any(|k| s.contains(k));
        match self {
            Cause::Died { site: Some(_), .. } => true,
            Cause::Died { words: Some(w), .. } => words(w),
            Cause::Internal { what, .. } => words(what),
            _ => false,
        }
    }

    /// The cause named by a signature an older sfz wrote, before causes were stored: the one
    /// place a signature is read. `signal`: the finding's recorded signal name.
    pub fn from_legacy(oracle: crate::wire::oracle::Oracle, signal: Option<&str>, signature: &str) -> Cause {
        legacy::parse(oracle, signal, signature)
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The message of a forward's failure names it already.
        let place = |p: &Place| match p {
            Place::Call | Place::Forward(_) => String::new(),
            Place::Check(what) => format!("{what}: "),
        };
        let squares = |s: &Option<DType>, p: &Option<DType>| match (s, p) {
            (Some(d), _) => format!(": {SQUARES_OVERFLOW} {d}"),
            (None, Some(d)) => format!(": {POWERS_OVERFLOW} {d}"),
            (None, None) => String::new(),
        };
        match self {
            Cause::Died { place: p, death, site, words } => {
                let what = match death {
                    Death::Memory => MEMORY_ERROR.to_string(),
                    Death::Signal(s) => s.name(),
                    Death::Exit(code) => format!("exit {code}"),
                };
                write!(f, "{}{what}", place(p))?;
                if let Some(site) = site {
                    write!(f, " in {site}")?;
                }
                match words {
                    Some(w) => write!(f, ": {w}"),
                    None => Ok(()),
                }
            }
            Cause::Hang => f.write_str("timeout"),
            Cause::Killed => f.write_str("killed (out of memory)"),
            Cause::OutOfMemory { message } => f.write_str(message),
            Cause::Internal { place: p, what } => write!(f, "{}{what}", place(p)),
            Cause::NonFinite { output, values } => write!(f, "{} in output {output}", values.text()),
            Cause::Ensures { clause } => write!(f, "ensures {clause}"),
            Cause::Premature { output, what, squares: s, powers: p } => write!(f, "premature {what} in output {output}{}", squares(s, p)),
            Cause::Relation { name, squares: s, powers: p } => write!(f, "relation {name} does not hold{}", squares(s, p)),
            Cause::Values { output, squares: s, powers: p } => write!(f, "values differ in output {output}{}", squares(s, p)),
            Cause::Structure { output, what } => write!(f, "output {output}: {what}"),
            Cause::Uninitialised { output } => write!(f, "output {output} holds uninitialised memory"),
            Cause::Gradient { param, against } => write!(f, "gradient of {param} {}", against.describe()),
            Cause::OnlyVariantRaises { check, message } => write!(f, "only the {check} raises: {message}"),
            Cause::OnlyOriginalRaises { message } => write!(f, "only the original raises: {message}"),
            Cause::Rejected { message } | Cause::Other { text: message } => f.write_str(message),
        }
    }
}

/// Reading the signatures of lines written before causes were stored.
mod legacy {
    use super::{Cause, Death, GradientKind, NonFinite, Place, Signal, MEMORY_ERROR, SQUARES_OVERFLOW};
    use crate::wire::case::DType;
    use crate::wire::oracle::Oracle;

    /// The variants' descriptions (`Variant::describe`) a check's place is written with.
    const CHECKS: [&str; 9] = [
        "float64 reference",
        "other memory layout",
        "out= variant",
        "in-place variant",
        "finite differences",
        "gradient check",
        "CUDA",
        "relation",
        "float64 reference of a non-finite result",
    ];

    pub(super) fn parse(oracle: Oracle, signal: Option<&str>, signature: &str) -> Cause {
        let other = || Cause::Other { text: signature.to_string() };
        let (place, rest) = match signature.split_once(": ") {
            Some((p, rest)) if CHECKS.contains(&p) => (Place::Check(p.to_string()), rest),
            _ => (Place::Call, signature),
        };
        if let Some(c) = death(&place, signal, rest) {
            return c;
        }
        // A check an older sfz described otherwise (`the layout variant: exit 3: ...`).
        if oracle != Oracle::Crash && place == Place::Call {
            for (at, _) in signature.match_indices(": ") {
                let check = Place::Check(signature[..at].to_string());
                if let Some(c) = death(&check, signal, &signature[at + 2..]) {
                    return c;
                }
            }
        }
        match oracle {
            Oracle::Hang if signature == "timeout" => Cause::Hang,
            Oracle::Oom if signature == "killed (out of memory)" => Cause::Killed,
            Oracle::Oom => Cause::OutOfMemory { message: signature.to_string() },
            Oracle::InternalError => {
                // `StdException: the forward `X` raised: ...`: the class, then the message.
                let message = signature.split_once(": ").filter(|(class, _)| !class.contains(' ')).map_or(signature, |(_, m)| m);
                Cause::Internal { place: Place::of_raised(message), what: signature.to_string() }
            }
            Oracle::Spec => Cause::Rejected { message: signature.to_string() },
            _ => numeric(&place, rest).unwrap_or_else(other),
        }
    }

    /// A death in the call or a check: `memory error in SITE`, `SIGFPE in SITE: words`,
    /// `exit 3: words`; older lines say `SIGSEGV` for a memory error.
    fn death(place: &Place, signal: Option<&str>, text: &str) -> Option<Cause> {
        let (head, words) = match text.split_once(": ") {
            Some((h, w)) => (h, Some(w.to_string())),
            None => (text, None),
        };
        let (what, site) = match head.split_once(" in ") {
            Some((w, s)) => (w, Some(s.to_string())),
            None => (head, None),
        };
        let death = if what == MEMORY_ERROR {
            Death::Memory
        } else if let Some(code) = what.strip_prefix("exit ").and_then(|c| c.parse().ok()) {
            Death::Exit(code)
        } else if let Some(s) = Signal::from_name(what).filter(|_| what.starts_with("SIG") || what.starts_with("signal ")) {
            let heap = s.0 == libc::SIGABRT && words.as_deref().is_some_and(crate::oracle::errors::memory_damage);
            if s.is_memory_fault() || heap {
                Death::Memory
            } else {
                Death::Signal(s)
            }
        } else {
            return None;
        };
        // A recorded signal of a memory fault is a memory error whatever the text said.
        let death = match (death, signal.and_then(Signal::from_name)) {
            (Death::Signal(_), Some(s)) if s.is_memory_fault() => Death::Memory,
            (d, _) => d,
        };
        let words = if death == Death::Memory && site.is_none() && words.as_deref().is_some_and(crate::oracle::errors::memory_damage) { None } else { words };
        Some(Cause::Died { place: place.clone(), death, site, words })
    }

    fn numeric(place: &Place, text: &str) -> Option<Cause> {
        let squared = |s: &str| -> (String, Option<DType>) {
            match s.split_once(&format!(": {SQUARES_OVERFLOW} ")) {
                Some((head, dtype)) => (head.to_string(), DType::from_name(dtype)),
                None => (s.to_string(), None),
            }
        };
        let output = |s: &str| s.trim().parse::<usize>().ok();
        if let Place::Check(check) = place {
            return Some(Cause::Internal { place: Place::Check(check.clone()), what: text.to_string() });
        }
        if let Some(rest) = text.strip_prefix("premature ") {
            let (head, squares) = squared(rest);
            let (what, out) = head.split_once(" in output ")?;
            return Some(Cause::Premature { output: output(out)?, what: what.to_string(), squares, powers: None });
        }
        if let Some(rest) = text.strip_prefix("relation ") {
            let (head, squares) = squared(rest);
            return Some(Cause::Relation { name: head.strip_suffix(" does not hold")?.to_string(), squares, powers: None });
        }
        if let Some(rest) = text.strip_prefix("values differ in output ") {
            let (out, squares) = squared(rest);
            return Some(Cause::Values { output: output(&out)?, squares, powers: None });
        }
        if let Some(clause) = text.strip_prefix("ensures ") {
            return Some(Cause::Ensures { clause: clause.to_string() });
        }
        if let Some(rest) = text.strip_prefix("gradient of ") {
            return GradientKind::ALL.into_iter().find_map(|against| Some(Cause::Gradient { param: rest.strip_suffix(&format!(" {}", against.describe()))?.to_string(), against }));
        }
        if let Some(message) = text.strip_prefix("only the original raises: ") {
            return Some(Cause::OnlyOriginalRaises { message: message.to_string() });
        }
        if let Some(rest) = text.strip_prefix("only the ") {
            let (check, message) = rest.split_once(" raises: ")?;
            return Some(Cause::OnlyVariantRaises { check: check.to_string(), message: message.to_string() });
        }
        if let Some(rest) = text.strip_prefix("output ") {
            let (out, what) = rest.split_once(": ")?;
            return Some(Cause::Structure { output: output(out)?, what: what.to_string() });
        }
        for values in [NonFinite::NanAndInf, NonFinite::Nan, NonFinite::Inf] {
            if let Some(out) = text.strip_prefix(&format!("{} in output ", values.text())) {
                return Some(Cause::NonFinite { output: output(out)?, values });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::{Cause, Death, GradientKind, NonFinite, Place, Signal};
    use crate::wire::case::DType;
    use crate::wire::oracle::Oracle;

    fn causes() -> Vec<(Oracle, Option<&'static str>, Cause)> {
        let layout = || Place::Check("other memory layout".into());
        vec![
            (Oracle::Crash, Some("SIGSEGV"), Cause::Died { place: Place::Call, death: Death::Memory, site: Some("at::native::kernel".into()), words: None }),
            (Oracle::Crash, Some("SIGABRT"), Cause::Died { place: Place::Call, death: Death::Memory, site: None, words: None }),
            (Oracle::Crash, Some("SIGFPE"), Cause::Died { place: Place::Call, death: Death::Signal(Signal(libc::SIGFPE)), site: Some("at::f".into()), words: Some("boom".into()) }),
            (Oracle::Crash, None, Cause::Died { place: Place::Call, death: Death::Exit(3), site: None, words: Some("terminate called".into()) }),
            (Oracle::Layout, Some("SIGSEGV"), Cause::Died { place: layout(), death: Death::Memory, site: None, words: None }),
            (Oracle::Layout, None, Cause::Died { place: layout(), death: Death::Exit(1), site: None, words: None }),
            (Oracle::Hang, None, Cause::Hang),
            (Oracle::Oom, Some("SIGKILL"), Cause::Killed),
            (Oracle::InternalError, None, Cause::Internal { place: Place::Call, what: "INTERNAL ASSERT a.cpp:1".into() }),
            (
                Oracle::InternalError,
                None,
                Cause::Internal { place: Place::Forward("torch.native_batch_norm".into()), what: "StdException: the forward `torch.native_batch_norm` raised: x".into() },
            ),
            (Oracle::Out, None, Cause::Internal { place: Place::Check("out= variant".into()), what: "INTERNAL ASSERT a.cpp:1".into() }),
            (Oracle::NanInf, None, Cause::NonFinite { output: 1, values: NonFinite::NanAndInf }),
            (Oracle::NanInf, None, Cause::Ensures { clause: "x > 0 => no_nan(result)".into() }),
            (Oracle::Overflow, None, Cause::Premature { output: 0, what: "inf".into(), squares: Some(DType::Float32), powers: None }),
            (Oracle::Overflow, None, Cause::Premature { output: 0, what: "0".into(), squares: None, powers: None }),
            (Oracle::Relation, None, Cause::Relation { name: "odd".into(), squares: None, powers: None }),
            (Oracle::Relation, None, Cause::Relation { name: "positively_homogeneous".into(), squares: Some(DType::Float32), powers: None }),
            (Oracle::Precision, None, Cause::Values { output: 2, squares: None, powers: None }),
            (Oracle::Precision, None, Cause::Values { output: 0, squares: Some(DType::Float32), powers: None }),
            (Oracle::Out, None, Cause::Structure { output: 0, what: "dtype float32 vs float64".into() }),
            (Oracle::Gradient, None, Cause::Gradient { param: "`input`".into(), against: GradientKind::Numeric }),
            (Oracle::Gradient, None, Cause::Gradient { param: "`other`".into(), against: GradientKind::Forward }),
            (Oracle::Gradient, None, Cause::Gradient { param: "`input`".into(), against: GradientKind::NonFinite }),
            (Oracle::Layout, None, Cause::OnlyVariantRaises { check: "other memory layout".into(), message: "view size is not compatible".into() }),
            (Oracle::Out, None, Cause::OnlyOriginalRaises { message: "expected N".into() }),
        ]
    }

    /// A line written before causes were stored reads back as the cause that wrote its signature.
    #[test]
    fn every_cause_reads_back_from_the_signature_it_displays() {
        for (oracle, signal, cause) in causes() {
            assert_eq!(Cause::from_legacy(oracle, signal, &cause.to_string()), cause, "{cause}");
        }
        // Older lines said SIGSEGV, or glibc's words, for what is now a memory error.
        let old = Cause::from_legacy(Oracle::Crash, Some("SIGSEGV"), "SIGSEGV");
        assert!(old.is_memory_error(), "{old:?}");
        let heap = Cause::from_legacy(Oracle::Crash, Some("SIGABRT"), "SIGABRT: free(): invalid pointer");
        assert!(heap.is_memory_error(), "{heap:?}");
        assert_eq!(Cause::from_legacy(Oracle::Precision, None, "something new"), Cause::Other { text: "something new".into() });
    }

    #[test]
    fn a_death_shows_again_as_the_same_kind_in_the_same_place() {
        let died = |place: Place, death: Death, site: Option<&str>| Cause::Died { place, death, site: site.map(String::from), words: None };
        let memory = died(Place::Call, Death::Memory, Some("a"));
        assert!(memory.shown_by(&died(Place::Call, Death::Memory, Some("b"))));
        assert!(!memory.shown_by(&died(Place::Check("out= variant".into()), Death::Memory, None)));
        let fpe = died(Place::Call, Death::Signal(Signal(libc::SIGFPE)), None);
        assert!(!memory.shown_by(&fpe) && !fpe.shown_by(&memory));
        assert!(fpe.shown_by(&died(Place::Call, Death::Signal(Signal(libc::SIGFPE)), Some("x"))));
        let unnamed = Cause::Relation { name: "odd".into(), squares: None, powers: None };
        assert!(unnamed.shown_by(&Cause::Relation { name: "odd".into(), squares: Some(DType::Float32), powers: None }));
        assert!(!unnamed.shown_by(&Cause::Relation { name: "even".into(), squares: Some(DType::Float32), powers: None }));
    }

    #[test]
    fn outputs_of_another_shape_are_one_class_whatever_the_shapes() {
        let shape = |what: &str| Cause::Structure { output: 0, what: what.into() }.class_text();
        assert_eq!(shape("shape [N] against [N, N, N, N]"), shape("shape [N] against []"));
        assert_ne!(shape("dtype float32 against float64"), shape("dtype float32 against float16"), "dtypes name the defect");
        let raises = |message: &str| Cause::OnlyVariantRaises { check: "out= variant".into(), message: message.into() }.class_text();
        assert_eq!(raises("output with shape [N] doesn't match the broadcast shape [N, N, N, N]"), raises("output with shape [N] doesn't match the broadcast shape [N, N, N]"));
        // An out= variant's shape complaint is its output of another shape.
        assert_eq!(raises("output with shape [] doesn't match the broadcast shape [N]"), shape("shape [N] against []"));
        assert_ne!(raises("index [1] is out of bounds"), raises("index [N] is out of bounds"), "only shapes of N are ranks");
        // Which form raised is the case's choice: one cause.
        let view = "view size is not compatible with input tensor's size and stride";
        let layout = Cause::OnlyVariantRaises { check: "other memory layout".into(), message: view.into() }.class_text();
        assert_eq!(layout, Cause::OnlyOriginalRaises { message: view.into() }.class_text());
    }

    #[test]
    fn a_cause_is_stored_as_tagged_json_and_a_signal_by_its_name() {
        let c = Cause::Died { place: Place::Call, death: Death::Signal(Signal(libc::SIGFPE)), site: None, words: None };
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(text, r#"{"kind":"died","place":"call","death":{"signal":"SIGFPE"},"site":null,"words":null}"#);
        assert_eq!(serde_json::from_str::<Cause>(&text).unwrap(), c);
    }
}
