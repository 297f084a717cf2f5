//! A resolver's failure as the diagnostic `sfz check` and `sfz fuzz` both show.
use super::registry::{Mismatch, ResolveError};
use crate::diag::{codes, Diagnostic};
use crate::spec::ApiSpec;

/// E0004 when no operator answers to the API's name, E0017 when one does but its schema does
/// not fit the declared parameters. The resolver's text (with each overload's schema and why it
/// was rejected) goes in a note.
pub fn resolve_diagnostic(api: &ApiSpec, e: &ResolveError) -> Diagnostic {
    let (code, title, label, help) = match e {
        ResolveError::UnmappedName { .. } | ResolveError::BadAten { .. } => (
            codes::E0004,
            format!("no libtorch operator for `{}`", api.name),
            "sfz cannot map this name to an ATen operator",
            Some("name the operator with `#[aten(\"aten::name.overload\")]` on the api"),
        ),
        ResolveError::UnknownOp { suggestions, .. } => (
            codes::E0004,
            format!("no libtorch operator for `{}`", api.name),
            "unknown API",
            if suggestions.is_empty() { Some("check the name, or name the operator with `#[aten(...)]`") } else { None },
        ),
        ResolveError::UnknownOverload { .. } => (codes::E0004, format!("no such overload for `{}`", api.name), "the `#[aten]` overload does not exist", None),
        ResolveError::NoMatch { .. } => (
            codes::E0017,
            format!("the parameters of `{}` do not match its operator", api.name),
            "no overload of the operator takes these parameters",
            Some("make the parameter list match a schema below, or pick an overload with `#[aten(...)]`"),
        ),
        ResolveError::Ambiguous { .. } => {
            (codes::E0017, format!("`{}` matches several overloads", api.name), "ambiguous", Some("pick one with `#[aten(\"aten::name.overload\")]`"))
        }
    };
    let mut d = Diagnostic::new(code, title).with_label(api.span, label).with_note(e.to_string());
    // Point at the parameter the closest overload could not take.
    if let ResolveError::NoMatch { rejections, .. } = e {
        let param = rejections.iter().find_map(|r| match &r.reason {
            Mismatch::UnknownParam { param, .. } | Mismatch::Type { param, .. } | Mismatch::NoneNotAccepted { param, .. } | Mismatch::Default { param, .. } => {
                Some((*param, r.reason.to_string()))
            }
            _ => None,
        });
        if let Some((p, why)) = param.and_then(|(i, why)| api.params.get(i).map(|p| (p, why))) {
            d = d.with_secondary(p.span, why);
        }
    }
    if let Some(h) = help {
        d = d.with_help(h);
    }
    d
}
