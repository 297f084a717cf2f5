//! An umbrella report for one cause, in the shape PyTorch's bug template asks for: a title naming
//! the cause class, the operators affected, one minimal reproducer, what happens and what was
//! expected, and the versions (`sfz report --issue ID`).
use std::fmt::Write as _;
use std::path::Path;

use super::causes::{CauseGroup, CauseKey};
use super::Finding;
use crate::oracle::{Cause, Death};

/// The issue's text, markdown.
pub fn umbrella(dir: &Path, group: &CauseGroup) -> String {
    // The smallest input among the findings that show the worst severity.
    let worst = group.findings.iter().filter(|f| super::severity::of(f) == group.severity);
    let f: &Finding = worst.min_by_key(|f| f.case.input_elements()).copied().unwrap_or(group.representative());
    let apis = group.apis();
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", title(group, &apis));
    let _ = writeln!(out, "### 🐛 Describe the bug\n");
    let _ = writeln!(out, "{}\n", summary(group, apis.len()));
    let _ = writeln!(out, "Operators affected ({}):\n", apis.len());
    for api in &apis {
        let ids: Vec<&str> = group.findings.iter().filter(|g| g.api == *api).map(|g| g.id.as_str()).collect();
        let _ = writeln!(out, "- `{api}` ({})", ids.join(", "));
    }
    let script = std::fs::read_to_string(dir.join(&f.repro)).unwrap_or_else(|e| format!("# cannot read {}: {e}", f.repro));
    let _ = writeln!(out, "\nMinimal reproducer (`{}`, {} input elements):\n\n```python\n{}```\n", f.repro, f.case.input_elements(), script);
    let _ = writeln!(out, "**What happens:**\n\n```\n{}\n```\n", first_lines(&f.message, 12));
    let _ = writeln!(out, "**What was expected:** {}\n", expected(&f.cause));
    if let Some(known) = group.known {
        let _ = writeln!(out, "Known upstream as `{}`{}.\n", known.name, known.issue.as_deref().map_or(String::new(), |i| format!(": {i}")));
    }
    let _ = writeln!(out, "### Versions\n\n- torch {}\n- found by sfz {} (finding {}, seed {}, case {})", f.torch_version, f.sfz_version, f.id, f.seed, f.case_index);
    out
}

/// `[sfz] memory corruption in max_pool3d_with_indices (3 operators)`.
fn title(group: &CauseGroup, apis: &[&str]) -> String {
    let ops = if apis.len() > 1 { format!(" ({} operators)", apis.len()) } else { format!(" in `{}`", apis[0]) };
    match &group.key {
        CauseKey::Family { .. } => format!("{}: {}{ops}", group.severity.describe(), group.representative().cause),
        _ => format!("{}{ops}", group.title()),
    }
}

fn summary(group: &CauseGroup, apis: usize) -> String {
    let n = group.findings.len();
    format!(
        "A {} ({}), found {n} time{} through {apis} operator{} by fuzzing with sfz, reported once here as one cause.",
        group.severity.describe(),
        group.title(),
        if n == 1 { "" } else { "s" },
        if apis == 1 { "" } else { "s" }
    )
}

fn expected(cause: &Cause) -> &'static str {
    match cause {
        Cause::Died { death: Death::Memory, .. } => "the call returns or raises a Python exception; no out-of-bounds access",
        Cause::Died { .. } | Cause::Hang | Cause::Killed => "the call returns, or raises a Python exception for an invalid argument",
        Cause::Internal { .. } => "a clear argument error (an internal assert is for states callers cannot reach)",
        Cause::OutOfMemory { .. } => "an allocation of the size the inputs need",
        Cause::Premature { .. } => "the representable true value (the float64 reference), not a premature inf, NaN or 0",
        Cause::NonFinite { .. } | Cause::Ensures { .. } => "a finite result where the function is defined",
        Cause::Relation { .. } => "the relation to hold within the dtype's tolerance",
        Cause::Uninitialised { .. } => "every element of every output computed, the same on every call (an empty sum is 0)",
        Cause::Values { .. } | Cause::Structure { .. } | Cause::Gradient { .. } => "the same result as the reference (float64, the other layout, the out= or in-place form)",
        Cause::OnlyVariantRaises { .. } | Cause::OnlyOriginalRaises { .. } => "the same behaviour from both forms of the call",
        Cause::Rejected { .. } | Cause::Other { .. } => "the behaviour the spec states",
    }
}

fn first_lines(s: &str, n: usize) -> String {
    s.lines().take(n).collect::<Vec<_>>().join("\n")
}
