//! Reports over a findings folder: the terminal table, a markdown report with each reproducer,
//! SARIF 2.1.0 for code-scanning tools, and JSON for scripts. Verification results (from
//! `verify`) are shown where there are some.
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;

use super::causes::CauseGroup;
use super::severity::Severity;
use super::verify::Verification;
use super::{Finding, Loaded};
use crate::wire::oracle::Oracle;

/// One line per oracle: what it looks for (SARIF rule descriptions, the markdown legend).
pub fn oracle_description(oracle: Oracle) -> &'static str {
    match oracle {
        Oracle::Crash => "the process died by a signal inside libtorch",
        Oracle::Hang => "a call ran past the timeout",
        Oracle::InternalError => "libtorch failed an internal assert or leaked a C++ exception",
        Oracle::Oom => "an allocation failed on a small input",
        Oracle::NanInf => "NaN or inf from finite inputs",
        Oracle::Postcondition => "an `ensures` clause of the spec does not hold",
        Oracle::Precision => "the result disagrees with the same call in float64",
        Oracle::Layout => "the result depends on the memory layout of the inputs",
        Oracle::Out => "the out= overload disagrees with the functional call",
        Oracle::Inplace => "the in-place form disagrees with the functional call",
        Oracle::Gradient => "a gradient disagrees with forward mode or finite differences, is not finite, or fails",
        Oracle::Cuda => "CUDA disagrees with the CPU",
        Oracle::Overflow | Oracle::Relation | Oracle::Spec => "a finding of sfz",
    }
}

/// The findings of a folder, one per (API, oracle, cause), in file order; those whose worker
/// death did not recur alone in a fresh worker are left out (see `unconfirmed`), and so are those
/// listed under the death their input also shows (see `same_defect`) and the numerical ones no
/// maintainer acts on (see `set_apart`).
pub fn unique(loaded: &Loaded) -> Vec<&Finding> {
    let mut seen = HashSet::new();
    loaded
        .findings
        .iter()
        .filter(|f| f.confirmed != Some(false) && f.explained.is_none() && under(loaded, f).is_none() && set_apart_why(f).is_none() && seen.insert(f.key()))
        .collect()
}

/// Why a finding is not listed, or None for one that is:
/// - a numerical finding whose input lies outside the spec's own precondition (violate mode), or
///   is implausible by the standard of `oracle::plausible` (a folder written before the campaign
///   applied it);
/// - any finding but a worker's death on a case generation could not make conform
///   (`nonconforming`): the spec says nothing about such an input, and an assert it reaches
///   through an argument the spec rules out (a private `_random_samples` of -3840) is no report;
/// - a death or hang the triage has not confirmed alone yet (`Finding::triage` pending);
/// - a death, hang or internal error of a private operator (`aten::_cholesky_solve_helper`),
///   in its call or in a variant of it;
/// - a disagreement of two paths of one operator (layout, out=, in-place) on inputs at the
///   dtype's limits or on NaN and inf (`plausible::paths_inputs_named`).
/// - a hang on floating inputs beyond 2^24 in magnitude (a polynomial's degree of 7e18 given as a
///   float): the documented cost of an absurd argument, which the integer probe of
///   `triage::cost` cannot scale down.
pub fn set_apart_why(f: &Finding) -> Option<String> {
    let death = matches!(f.cause, crate::oracle::Cause::Died { .. } | crate::oracle::Cause::Killed);
    // A death blames the case in flight; until it kills a fresh worker alone, an earlier case
    // may have done the damage (a campaign cut short by its clock leaves it pending).
    if (death || f.oracle == crate::wire::oracle::Oracle::Hang) && f.triage == Some(super::store::TriageState::Pending) {
        return Some("a death not yet confirmed alone (`sfz fuzz --resume` finishes the triage)".to_string());
    }
    // A private operator's callers keep its preconditions (shapes that agree, indices in range):
    // its crash on arguments no caller passes is no report, and one a public API reaches is
    // found through that API.
    let internal = matches!(f.cause, crate::oracle::Cause::Internal { .. }) || matches!(f.oracle, Oracle::Hang | Oracle::InternalError | Oracle::Oom);
    if (death || internal) && private_operator(&f.aten) {
        return Some("a private operator's failure outside its callers' contract".to_string());
    }
    if f.mode.as_deref() == Some("nonconforming") && !death {
        return Some("input outside the spec's precondition (nonconforming)".to_string());
    }
    if f.oracle == crate::wire::oracle::Oracle::Hang && huge_floats(f) {
        return Some("a hang on floating arguments beyond 2^24".to_string());
    }
    if crate::oracle::plausible::judges_numbers(f.oracle) && f.mode.as_deref() == Some("violate") {
        return Some("input outside the spec's precondition (violate)".to_string());
    }
    let names: Vec<&str> = f.inputs.iter().map(|i| i.split(" = ").next().unwrap_or("")).collect();
    crate::oracle::plausible::verdict_inputs(f.oracle, &f.cause, &f.api, &names, &f.case, 1.0).map(|why| why.describe().to_string())
}

/// Whether an ATen operator is private: `aten::_pdist_backward`, not `aten::__and__`.
fn private_operator(aten: &str) -> bool {
    let base = aten.rsplit("::").next().unwrap_or(aten);
    base.starts_with('_') && !base.starts_with("__")
}

/// Whether a floating tensor or float argument of the finding's case reaches beyond 2^24.
fn huge_floats(f: &Finding) -> bool {
    use crate::wire::case::Arg;
    const HUGE: f64 = (1u64 << 24) as f64;
    f.case.args.iter().any(|a| match a {
        Arg::Float(x) => x.abs() > HUGE,
        _ => a.tensors().filter(|t| t.dtype.is_floating()).any(|t| {
            let v = crate::eval::TensorVal::of_recipe(t);
            v.min.abs().max(v.max.abs()) > HUGE
        }),
    })
}

/// Findings not listed for their input, with why (`set_apart_why`), one per key.
pub fn set_apart(loaded: &Loaded) -> Vec<(&Finding, String)> {
    let mut seen = HashSet::new();
    loaded.findings.iter().filter(|f| f.confirmed != Some(false) && seen.insert(f.key())).filter_map(|f| set_apart_why(f).map(|why| (f, why))).collect()
}

/// One line about the numerical findings not listed, or None.
pub fn set_apart_note(loaded: &Loaded) -> Option<String> {
    let apart = set_apart(loaded);
    (!apart.is_empty()).then(|| {
        let mut why: BTreeMap<&str, usize> = BTreeMap::new();
        for (_, w) in &apart {
            *why.entry(w.as_str()).or_insert(0) += 1;
        }
        let each: Vec<String> = why.iter().map(|(w, n)| format!("{w} {n}")).collect();
        format!("{} finding{} not listed, at inputs no maintainer acts on: {}", apart.len(), if apart.len() == 1 { "" } else { "s" }, each.join(", "))
    })
}

/// The listed finding `f` is the same defect as (`Finding::same_as`): a confirmed death of the
/// folder. None when `f` names none, or one that is missing or not listed itself.
fn under<'a>(loaded: &'a Loaded, f: &Finding) -> Option<&'a Finding> {
    let id = f.same_as.as_deref()?;
    loaded.findings.iter().find(|d| d.id == id && d.confirmed != Some(false) && d.explained.is_none() && d.same_as.is_none())
}

/// Findings listed under the death their input also shows, each with that death: one defect
/// whose outcome varies from process to process.
pub fn same_defect(loaded: &Loaded) -> Vec<(&Finding, &Finding)> {
    let mut seen = HashSet::new();
    loaded.findings.iter().filter(|f| f.confirmed != Some(false) && f.explained.is_none() && seen.insert(f.key())).filter_map(|f| under(loaded, f).map(|d| (f, d))).collect()
}

/// One line about the findings listed under a death, or None.
pub fn same_defect_note(loaded: &Loaded) -> Option<String> {
    let pairs = same_defect(loaded);
    (!pairs.is_empty()).then(|| {
        let each: Vec<String> = pairs.iter().map(|(f, d)| format!("{} ({} {}) under {}", f.id, f.api, f.oracle, d.id)).collect();
        format!(
            "{} more finding{} not listed: {} input also kills a fresh worker, as the listed death does (one defect whose outcome varies from process to process): {}",
            pairs.len(),
            if pairs.len() == 1 { "" } else { "s" },
            if pairs.len() == 1 { "its" } else { "their" },
            each.join(", ")
        )
    })
}

/// Hangs that are the cost of their input (`Finding::explained`): listed apart, not as bugs.
pub fn explained(loaded: &Loaded) -> Vec<&Finding> {
    let mut seen = HashSet::new();
    loaded.findings.iter().filter(|f| f.confirmed != Some(false) && f.explained.is_some() && seen.insert(f.key())).collect()
}

/// One line about the explained findings, or None.
pub fn explained_note(loaded: &Loaded) -> Option<String> {
    let e = explained(loaded);
    (!e.is_empty()).then(|| {
        let each: Vec<String> = e.iter().map(|f| format!("{} ({}: {})", f.id, f.api, f.explained.as_deref().unwrap_or(""))).collect();
        format!("{} more finding{} not listed, explained by the input: {}", e.len(), if e.len() == 1 { "" } else { "s" }, each.join("; "))
    })
}

/// Worker deaths that did not recur when their case ran alone in a fresh worker: most likely an
/// earlier case corrupted the worker's memory and the blamed one only met the damage.
pub fn unconfirmed(loaded: &Loaded) -> Vec<&Finding> {
    let mut seen = HashSet::new();
    loaded.findings.iter().filter(|f| f.confirmed == Some(false) && seen.insert(f.key())).collect()
}

/// The culprits of unconfirmed findings, in order of first mention, each with the ids of the
/// unconfirmed findings it explains.
pub fn culprits(loaded: &Loaded) -> Vec<(String, Vec<String>)> {
    let mut culprits: Vec<(String, Vec<String>)> = Vec::new();
    for f in unconfirmed(loaded) {
        let Some(id) = f.culprit.as_deref() else { continue };
        match culprits.iter_mut().find(|(c, _)| c == id) {
            Some((_, victims)) => victims.push(f.id.clone()),
            None => culprits.push((id.to_string(), vec![f.id.clone()])),
        }
    }
    culprits
}

/// One line about the unconfirmed findings, or None: their ids, and the culprits found among
/// the cases their workers ran before (`Finding::culprit`).
pub fn unconfirmed_note(loaded: &Loaded) -> Option<String> {
    let u = unconfirmed(loaded);
    let culprits = culprits(loaded);
    let traced = culprits.iter().map(|(_, v)| v.len()).sum::<usize>();
    let named = |id: &str| match loaded.findings.iter().find(|f| f.id == id) {
        Some(f) => format!("{id} ({} {})", f.api, f.oracle),
        None => id.to_string(),
    };
    (!u.is_empty()).then(|| {
        let mut note = format!(
            "{} more finding{} not listed: the worker died, but not again when the case ran alone in a fresh worker (memory corrupted by an earlier case?): {}",
            u.len(),
            if u.len() == 1 { "" } else { "s" },
            u.iter().map(|f| f.id.as_str()).collect::<Vec<_>>().join(", ")
        );
        if traced > 0 {
            let list: Vec<String> = culprits.iter().map(|(id, v)| format!("{} for {}", named(id), v.len())).collect();
            note.push_str(&format!(". {traced} traced to an earlier case in the same worker that kills a fresh worker by itself: {}", list.join(", ")));
        }
        note
    })
}

fn elements(f: &Finding) -> String {
    match (&f.minimization, &f.original) {
        (Some(m), Some(_)) => format!("{} (from {})", m.elements_after, m.elements_before),
        _ => f.case.input_elements().to_string(),
    }
}

/// " N more crash instead." when some scripts showed a bug other than the recorded one.
pub fn differently_note(verified: &HashMap<String, Verification>) -> String {
    match verified.values().filter(|v| v.differently).count() {
        0 => String::new(),
        n => format!(" {n} more crash{} instead of failing as recorded.", if n == 1 { "es" } else { "" }),
    }
}

fn reproduces(v: Option<&Verification>) -> &'static str {
    match v {
        Some(v) if v.reproduced => "yes",
        Some(v) if v.differently => "crashes",
        Some(_) => "no",
        None => "-",
    }
}

/// The terminal table: one row per unique finding.
pub fn table(findings: &[&Finding], verified: &HashMap<String, Verification>) -> String {
    let rows: Vec<[String; 6]> = findings
        .iter()
        .map(|f| {
            let sig: String = f.signature.chars().take(60).collect();
            [f.id.clone(), f.oracle.to_string(), f.api.clone(), elements(f), reproduces(verified.get(&f.id)).to_string(), sig]
        })
        .collect();
    let header = ["ID", "ORACLE", "API", "INPUT ELEMENTS", "REPRODUCES", "SIGNATURE"];
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &[&str]| {
        let parts: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:w$}")).collect();
        let _ = writeln!(out, "  {}", parts.join("  ").trim_end());
    };
    line(&mut out, &header);
    for r in &rows {
        line(&mut out, &r.iter().map(String::as_str).collect::<Vec<_>>());
    }
    out
}

/// Findings reported once as one cause (`causes::group`): the causes with more than one finding.
pub fn shared_causes<'a>(findings: &[&'a Finding]) -> Vec<(String, Vec<&'a Finding>)> {
    super::causes::group(findings, None).into_iter().filter(|g| g.findings.len() > 1).map(|g| (g.title(), g.findings)).collect()
}

/// How many causes `findings` are.
pub fn causes(findings: &[&Finding]) -> usize {
    super::causes::group(findings, None).len()
}

/// ", N causes" when some findings share one, for the count line.
pub fn causes_suffix(findings: &[&Finding]) -> String {
    let n = causes(findings);
    if n < findings.len() {
        format!(", {n} cause{}", if n == 1 { "" } else { "s" })
    } else {
        String::new()
    }
}

/// The terminal table of causes: one row per cause, worst first, its representative finding, the
/// APIs it shows through and how many findings it stands for.
pub fn cause_table(groups: &[CauseGroup], verified: &HashMap<String, Verification>) -> String {
    let rows: Vec<[String; 6]> = groups
        .iter()
        .map(|g| {
            let f = g.representative();
            let apis = g.apis();
            let more = if apis.len() > 1 { format!(" +{}", apis.len() - 1) } else { String::new() };
            let title: String = g.title().chars().take(70).collect();
            [g.severity.to_string(), f.id.clone(), format!("{}{more}", apis[0]), g.findings.len().to_string(), reproduces(verified.get(&f.id)).to_string(), title]
        })
        .collect();
    aligned(&["SEVERITY", "FINDING", "API", "FINDINGS", "REPRODUCES", "CAUSE"], &rows)
}

/// Counts per severity, worst first: `memory 1, wrong 3`.
pub fn by_severity(groups: &[CauseGroup]) -> String {
    let mut counts: BTreeMap<Severity, usize> = BTreeMap::new();
    for g in groups {
        *counts.entry(g.severity).or_insert(0) += 1;
    }
    counts.iter().map(|(s, n)| format!("{s} {n}")).collect::<Vec<_>>().join(", ")
}

/// Columns padded to their widest cell, two spaces in front.
fn aligned<const N: usize>(header: &[&str; N], rows: &[[String; N]]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &[&str]| {
        let parts: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:w$}")).collect();
        let _ = writeln!(out, "  {}", parts.join("  ").trim_end());
    };
    line(&mut out, header);
    for r in rows {
        line(&mut out, &r.iter().map(String::as_str).collect::<Vec<_>>());
    }
    out
}

/// `shared_causes` as lines for the table and the markdown report.
pub fn shared_causes_text(findings: &[&Finding]) -> String {
    let mut out = String::new();
    let causes = shared_causes(findings);
    if causes.is_empty() {
        return out;
    }
    let _ = writeln!(out, "\nshared causes (one defect reached through several APIs or checks; report it once):");
    for (cause, fs) in causes {
        let members: Vec<String> = fs.iter().map(|f| format!("{} ({})", f.api, f.id)).collect();
        let _ = writeln!(out, "  {cause}\n    {}", members.join(", "));
    }
    out
}

/// Counts per oracle.
pub fn by_oracle(findings: &[&Finding]) -> BTreeMap<Oracle, u64> {
    let mut m = BTreeMap::new();
    for f in findings {
        *m.entry(f.oracle).or_insert(0) += 1;
    }
    m
}

/// The markdown report, reproducers inline.
pub fn markdown(dir: &Path, loaded: &Loaded, verified: &HashMap<String, Verification>) -> String {
    let findings = unique(loaded);
    let mut out = format!("# sfz findings in `{}`\n\n", dir.display());
    let mix: Vec<String> = by_oracle(&findings).iter().map(|(o, n)| format!("{o} {n}")).collect();
    let _ = writeln!(
        out,
        "{} unique finding{}{}{}.",
        findings.len(),
        if findings.len() == 1 { "" } else { "s" },
        if mix.is_empty() { String::new() } else { format!(" ({})", mix.join(", ")) },
        causes_suffix(&findings)
    );
    if !verified.is_empty() {
        let yes = findings.iter().filter(|f| verified.get(&f.id).is_some_and(|v| v.reproduced)).count();
        let _ = writeln!(out, "Reproducers run under pip torch: {yes} of {} reproduce.{}", verified.len(), differently_note(verified));
    }
    if !loaded.skipped.is_empty() {
        let _ = writeln!(out, "{} line{} of findings.jsonl could not be read and are left out.", loaded.skipped.len(), if loaded.skipped.len() == 1 { "" } else { "s" });
    }
    let shared = shared_causes_text(&findings);
    if !shared.is_empty() {
        let _ = writeln!(out, "\n```{shared}```");
    }
    if let Some(note) = unconfirmed_note(loaded) {
        let _ = writeln!(out, "\n{note}.");
    }
    if let Some(note) = explained_note(loaded) {
        let _ = writeln!(out, "\n{note}.");
    }
    if let Some(note) = same_defect_note(loaded) {
        let _ = writeln!(out, "\n{note}.");
    }
    out.push_str("\n| finding | oracle | API | signature | input elements | reproduces |\n|---|---|---|---|---|---|\n");
    for f in &findings {
        let _ = writeln!(
            out,
            "| [{}](#{}) | {} | `{}` | {} | {} | {} |",
            f.id,
            f.id,
            f.oracle,
            f.api,
            f.signature.replace('|', "\\|").replace('\n', " "),
            elements(f),
            reproduces(verified.get(&f.id))
        );
    }
    for f in &findings {
        let _ = writeln!(out, "\n## {}\n\n**{}** on `{}` ({}): {}\n", f.id, f.oracle, f.api, f.aten, oracle_description(f.oracle));
        let _ = writeln!(out, "```\n{}\n```\n", f.message.trim_end());
        out.push_str("Inputs:\n\n");
        for i in &f.inputs {
            let _ = writeln!(out, "- `{i}`");
        }
        if let (Some(m), Some(o)) = (&f.minimization, &f.original) {
            let _ = writeln!(
                out,
                "\nMinimized from {} to {} input elements in {} steps ({} cases run); the original reproducer is [`{}`]({}).",
                m.elements_before, m.elements_after, m.steps, m.executions, o.repro, o.repro
            );
        }
        if let Some(v) = verified.get(&f.id) {
            let verdict = if v.reproduced {
                "reproduces"
            } else if v.differently {
                "does not reproduce as recorded, but crashes"
            } else {
                "does not reproduce"
            };
            let _ = writeln!(out, "\nVerified: {verdict} ({}).", v.detail);
        }
        let script = std::fs::read_to_string(dir.join(&f.repro)).unwrap_or_else(|e| format!("# cannot read {}: {e}", f.repro));
        let _ = writeln!(out, "\nReproducer [`{}`]({}):\n\n```python\n{}```", f.repro, f.repro, script);
        if let Some(p) = &f.pinned {
            let _ = writeln!(out, "\nThe case as a spec: [`{p}`]({p}); replay it with `sfz replay {}`.", f.id);
        }
    }
    out
}

/// A SARIF 2.1.0 log: one rule per oracle, one result per unique finding, located at its API's
/// declaration in the spec. Reproducers are relative to the `FINDINGS` base, the findings folder.
pub fn sarif(loaded: &Loaded, verified: &HashMap<String, Verification>) -> serde_json::Value {
    let folder = loaded.path.parent().map(|d| d.canonicalize().unwrap_or_else(|_| d.to_path_buf())).unwrap_or_default();
    let base = format!("file://{}/", folder.display().to_string().trim_end_matches('/'));
    let findings = unique(loaded);
    let oracles: Vec<Oracle> = by_oracle(&findings).into_keys().collect();
    let rules: Vec<serde_json::Value> =
        oracles.iter().map(|&o| json!({ "id": o, "name": o, "shortDescription": { "text": oracle_description(o) }, "defaultConfiguration": { "level": "error" } })).collect();
    let results: Vec<serde_json::Value> = findings
        .iter()
        .map(|f| {
            let mut locations = Vec::new();
            if let Some(spec) = &f.spec {
                locations.push(json!({ "physicalLocation": { "artifactLocation": { "uri": spec.file }, "region": { "startLine": spec.line } } }));
            }
            let mut properties = json!({ "api": f.api, "aten": f.aten, "signature": f.signature, "reproducer": f.repro, "inputElements": f.case.input_elements() });
            if let Some(v) = verified.get(&f.id) {
                properties["reproduced"] = json!(v.reproduced);
            }
            json!({
                "ruleId": f.oracle,
                "ruleIndex": oracles.iter().position(|o| *o == f.oracle).unwrap_or(0),
                "level": "error",
                "message": { "text": format!("{} on {}: {}", f.oracle, f.api, f.message.lines().next().unwrap_or("")) },
                "locations": locations,
                "relatedLocations": [{ "id": 1, "message": { "text": "reproducer" }, "physicalLocation": { "artifactLocation": { "uri": f.repro, "uriBaseId": "FINDINGS" } } }],
                "partialFingerprints": { "sfzFinding/v1": f.id },
                "properties": properties,
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": { "name": "sfz", "version": env!("CARGO_PKG_VERSION"), "informationUri": "https://github.com/sfz-fuzz/sfz", "rules": rules } },
            "originalUriBaseIds": { "FINDINGS": { "uri": base, "description": { "text": "the findings folder" } } },
            "results": results,
        }],
    })
}

/// The report as one JSON object (`sfz report --json`).
/// `earlier`: the causes an earlier folder reported (`--new-since`); each cause says whether it is
/// new (neither in the baseline nor among those).
pub fn to_json(
    loaded: &Loaded,
    verified: &HashMap<String, Verification>,
    baseline: Option<&super::baseline::Baseline>,
    earlier: Option<&HashSet<super::causes::CauseKey>>,
) -> serde_json::Value {
    let findings = unique(loaded);
    // Causes are of the findings whose reproducers reproduced (or were not run); every finding
    // has its row, with its verification.
    let (listable, unreproduced): (Vec<&Finding>, Vec<&Finding>) = findings.iter().partition(|f| super::verified::listable(f, verified));
    let rows: Vec<serde_json::Value> = findings
        .iter()
        .map(|f| {
            json!({
                "id": f.id,
                "api": f.api,
                "aten": f.aten,
                "oracle": f.oracle,
                "signature": f.signature,
                "message": f.message,
                "repro": f.repro,
                "pinned": f.pinned,
                "input_elements": f.case.input_elements(),
                "original_input_elements": f.original.as_ref().map(|o| o.case.input_elements()),
                "minimization": f.minimization,
                "verification": verified.get(&f.id),
            })
        })
        .collect();
    let reproduced = findings.iter().filter(|f| verified.get(&f.id).is_some_and(|v| v.reproduced)).count();
    json!({
        "findings": rows,
        "unique": findings.len(),
        "by_oracle": by_oracle(&findings),
        "verified": if verified.is_empty() {
            serde_json::Value::Null
        } else {
            json!({ "reproduced": reproduced, "differently": verified.values().filter(|v| v.differently).count(), "run": verified.len() })
        },
        "skipped_lines": loaded.skipped.iter().map(|s| json!({ "line": s.line, "reason": s.reason })).collect::<Vec<_>>(),
        "unconfirmed": unconfirmed(loaded).iter().map(|f| f.id.clone()).collect::<Vec<_>>(),
        "explained": explained(loaded).iter().map(|f| json!({ "finding": f.id, "why": f.explained })).collect::<Vec<_>>(),
        "same_defect": same_defect(loaded).iter().map(|(f, d)| json!({ "finding": f.id, "under": d.id })).collect::<Vec<_>>(),
        "culprits": culprits(loaded).iter().map(|(id, victims)| json!({ "finding": id, "explains": victims })).collect::<Vec<_>>(),
        "shared_causes": shared_causes(&findings)
            .iter()
            .map(|(cause, fs)| json!({ "cause": cause, "findings": fs.iter().map(|f| f.id.clone()).collect::<Vec<_>>() }))
            .collect::<Vec<_>>(),
        "causes": super::causes::group(&listable, baseline)
            .iter()
            .map(|g| json!({
                "title": g.title(),
                "key": g.key,
                "severity": g.severity,
                "finding": g.representative().id,
                "findings": g.findings.iter().map(|f| f.id.clone()).collect::<Vec<_>>(),
                "apis": g.apis(),
                "known": g.known.map(|k| json!({ "name": k.name, "issue": k.issue })),
                "new": g.known.is_none() && earlier.is_none_or(|e| !e.contains(&g.key)),
            }))
            .collect::<Vec<_>>(),
        "set_apart": set_apart(loaded).iter().map(|(f, why)| json!({ "finding": f.id, "why": why })).collect::<Vec<_>>(),
        "not_reproduced": unreproduced.iter().map(|f| json!({ "finding": f.id, "verification": verified.get(&f.id) })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::{causes, shared_causes};

    use crate::findings::store::older_finding as finding;

    #[test]
    fn aliases_share_a_cause_and_unrelated_apis_with_a_generic_signature_do_not() {
        let div = finding("a", "torch.div", "precision", "values differ in output 0");
        let divide = finding("b", "torch.divide", "precision", "values differ in output 0");
        let mul = finding("c", "torch.mul", "precision", "values differ in output 0");
        let asserted = [
            finding("d", "torch.linalg.ldl_factor", "internal_error", "INTERNAL ASSERT a.cpp:1"),
            finding("e", "torch.linalg.ldl_factor_ex", "internal_error", "INTERNAL ASSERT a.cpp:1"),
        ];
        let all = vec![&div, &divide, &mul, &asserted[0], &asserted[1]];
        let groups = shared_causes(&all);
        let ids: Vec<Vec<&str>> = groups.iter().map(|(_, fs)| fs.iter().map(|f| f.id.as_str()).collect()).collect();
        assert_eq!(ids, vec![vec!["a", "b"], vec!["d", "e"]], "{groups:?}");
        assert_eq!(causes(&all), 3);
    }

    /// A private operator's crash or assert (in its call or an out= variant) is set apart; its
    /// wrong values are not, nor a public operator's crash.
    #[test]
    fn private_operators_failures_are_set_apart() {
        let mut crash = finding("a", "torch._cholesky_solve_helper", "crash", "SIGSEGV");
        crash.aten = "aten::_cholesky_solve_helper".into();
        let mut out_assert = finding("b", "torch._native_batch_norm_legit", "out", "out= variant: INTERNAL ASSERT a.cpp:1");
        out_assert.aten = "aten::_native_batch_norm_legit".into();
        let mut wrong = finding("c", "torch._weight_norm_interface", "layout", "values differ in output 1");
        wrong.aten = "aten::_weight_norm_interface".into();
        let mut public = finding("d", "torch.batch_norm_backward", "crash", "SIGFPE");
        public.aten = "aten::batch_norm_backward".into();
        let mut dunder = finding("e", "torch.Tensor.__and__", "crash", "SIGSEGV");
        dunder.aten = "aten::__and__".into();
        assert!(super::set_apart_why(&crash).is_some_and(|w| w.contains("private operator")));
        assert!(super::set_apart_why(&out_assert).is_some_and(|w| w.contains("private operator")));
        assert_eq!(super::set_apart_why(&wrong), None);
        assert_eq!(super::set_apart_why(&public), None);
        assert_eq!(super::set_apart_why(&dunder), None);
    }

    /// One operator's heap damage, found by its own call, a check's call and another frame, is
    /// one cause, in every rank of its kernel; another operator's, or the same operator's
    /// division by zero, is not.
    #[test]
    fn the_memory_errors_of_one_operator_are_one_cause() {
        let own = finding("a", "torch.max_pool3d_with_indices_backward", "crash", "memory error in at::native::max_pool3d_backward_kernel_impl");
        let later = finding("b", "torch.max_pool3d_with_indices_backward", "crash", "memory error");
        let in_check = finding("c", "torch.max_pool3d_with_indices_backward", "layout", "other memory layout: memory error");
        let reference = finding("d", "torch.max_pool3d_with_indices_backward", "precision", "float64 reference: memory error");
        let other_rank = finding("e", "torch.max_pool2d_with_indices_backward", "crash", "memory error");
        let other_op = finding("h", "torch.fractional_max_pool2d_backward", "crash", "memory error");
        let fpe = finding("f", "torch.max_pool3d_with_indices_backward", "crash", "SIGFPE in at::native::kernel");
        let wrong = finding("g", "torch.max_pool3d_with_indices_backward", "precision", "values differ in output 0");
        let all = vec![&own, &later, &in_check, &reference, &other_rank, &other_op, &fpe, &wrong];
        let groups = shared_causes(&all);
        let ids: Vec<Vec<&str>> = groups.iter().map(|(_, fs)| fs.iter().map(|f| f.id.as_str()).collect()).collect();
        assert_eq!(ids, vec![vec!["a", "b", "c", "d", "e"]], "{groups:?}");
        assert_eq!(causes(&all), 4);
    }

    /// Relations broken and premature infs found because an unscaled sum of squares overflowed
    /// float32 are one cause, whichever oracle, relation and operator; the same relations broken
    /// otherwise, an overflow in float64, or another premature inf are not it.
    #[test]
    fn findings_an_overflowing_sum_of_squares_made_are_one_cause() {
        let cause = crate::oracle::cause::SQUARES_OVERFLOW;
        let layer_norm = finding("a", "torch.layer_norm", "relation", &format!("relation scale_invariant_eps_squared does not hold: {cause} float32"));
        let norm = finding("b", "torch.linalg.norm", "relation", &format!("relation positively_homogeneous does not hold: {cause} float32"));
        let pdist = finding("c", "torch.pdist", "relation", &format!("relation positively_homogeneous does not hold: {cause} float32"));
        let wide = finding("d", "torch.trapz", "relation", &format!("relation positively_homogeneous does not hold: {cause} float64"));
        let other = finding("e", "torch.frobenius_norm", "relation", "relation positively_homogeneous does not hold");
        let std = finding("f", "torch.std", "overflow", &format!("premature inf in output 0: {cause} float32"));
        let cosh = finding("g", "torch.cosh", "overflow", "premature inf in output 0");
        let all = vec![&layer_norm, &norm, &pdist, &wide, &other, &std, &cosh];
        let groups = shared_causes(&all);
        let ids: Vec<Vec<&str>> = groups.iter().map(|(_, fs)| fs.iter().map(|f| f.id.as_str()).collect()).collect();
        assert_eq!(ids, vec![vec!["a", "b", "c", "f"]], "{groups:?}");
        assert!(groups[0].0.contains(cause) && groups[0].0.ends_with("float32"), "{groups:?}");
        assert_eq!(causes(&all), 4);
    }
}
