//! Metamorphic relations proposed for an API and kept when they hold. The candidates are the
//! shapes of `std::relations` on the API's first tensor parameter (odd, even, scale invariant,
//! scale invariant from 1 upwards, positively homogeneous, and for an API with an `eps`, scale
//! invariant with the epsilon scaled alike), written out in full so that a rule needs no import. `sfz infer
//! --oracles` runs them on conforming inputs of ordinary magnitude with the scales cut to
//! 2^-10..2^10 (`ordinary`), and writes those that never disagreed as validated rules; the
//! campaign then runs them with every scale, up to 2^60, where a kernel that does not rescale
//! breaks them.
use crate::rules::{Candidate, Judged};
use crate::spec::{ApiSpec, Origin, ParamType, RuleSource, RuleStatus};

/// The scales of `positively_homogeneous`, as in `std::relations`.
const SCALES: &str = "[0.25, 4.0, 1024.0, 1152921504606846976.0, 8.673617379884035e-19]";

/// The scales of `scale_invariant`: not 2^-60, where any epsilon (`rms_norm`'s default one, a
/// norm's `eps`) outweighs the input and the relation breaks in float64 too; validation, cut to
/// ordinary scales, could not see that.
const SCALES_INVARIANT: &str = "[0.25, 4.0, 1024.0, 1152921504606846976.0]";

/// The scales of `scale_invariant_up`: from 1 upwards.
const SCALES_UP: &str = "[4.0, 1024.0, 1152921504606846976.0]";

/// Scales validation keeps: ordinary magnitudes.
const ORDINARY: f64 = 1024.0;

/// Rule names start with this, so that a new run replaces an old verdict.
pub const PREFIX: &str = "relation_";

/// The candidate relations of `api` (name, statement), none when its first output is not a
/// tensor or it has no tensor parameter. A relation of the same name is not proposed again,
/// unless it comes from one of the `inferred` rules (judged again).
pub fn candidates(api: &ApiSpec, inferred: &[String]) -> Vec<(String, String)> {
    let Some(x) = subject(api) else { return Vec::new() };
    let taken = |name: &str| api.relations.iter().any(|r| r.relation.name == name && !matches!(&r.origin, Origin::Rule(m) if inferred.contains(&m.name)));
    [
        ("odd", format!("relation odd: self({x} = -{x}) == -result;")),
        ("even", format!("relation even: self({x} = -{x}) == result;")),
        ("scale_invariant", format!("relation scale_invariant: forall s in {SCALES_INVARIANT}: self({x} = {x} * s) == result;")),
        ("scale_invariant_up", format!("relation scale_invariant_up: forall s in {SCALES_UP}: self({x} = {x} * s) == result;")),
        ("positively_homogeneous", format!("relation positively_homogeneous: forall s in {SCALES}: self({x} = {x} * s) == s * result;")),
    ]
    .into_iter()
    .chain(eps(api).into_iter().flat_map(|eps| {
        // An epsilon added to a variance or a norm breaks invariance, unless it is scaled too:
        // by s^2 beside a variance (layer_norm, group_norm), by s beside a norm
        // (cosine_similarity). With a power of two both sides round alike: the relation holds
        // exactly, and an intermediate that overflows at 2^60 breaks it.
        [
            ("scale_invariant_eps_squared", format!("relation scale_invariant_eps_squared: forall s in {SCALES_UP}: self({x} = {x} * s, {eps} = {eps} * s * s) == result;")),
            ("scale_invariant_eps", format!("relation scale_invariant_eps: forall s in {SCALES_UP}: self({x} = {x} * s, {eps} = {eps} * s) == result;")),
        ]
    }))
    .filter(|(name, _)| !taken(name))
    .map(|(name, text)| (name.to_string(), text))
    .collect()
}

/// The API's epsilon: a float parameter named `eps` (None is no number to scale).
fn eps(api: &ApiSpec) -> Option<&str> {
    api.params.iter().find(|p| p.name == "eps" && p.ty == ParamType::Float && !p.optional).map(|p| p.name.as_str())
}

/// The kept relation that says all a kept one named `name` says (`scale_invariant` holds for
/// every scale `scale_invariant_up` tries), which is then not written.
pub fn implied_by(name: &str) -> Option<&'static str> {
    (name == "scale_invariant_up").then_some("scale_invariant")
}

/// The tensor parameter the relations are about: the first required one, where the first
/// output is a tensor.
fn subject(api: &ApiSpec) -> Option<&str> {
    if api.returns.first().is_none_or(|r| r.ty != ParamType::Tensor) {
        return None;
    }
    api.params.iter().find(|p| p.ty == ParamType::Tensor && !p.optional).map(|p| p.name.as_str())
}

/// The control's name: validation runs it beside the candidates and never keeps it.
pub const CONTROL: &str = "control";

/// A relation that no output depending on its input keeps: `f(-3.75 x) == f(x)`. Where it holds
/// (softmax over a dimension of one element is 1 whatever x; an empty input), every relation
/// holds and says nothing, so a candidate's evidence is the cases it held on beyond the
/// control's.
pub fn control(api: &ApiSpec) -> Option<String> {
    subject(api).map(|x| format!("relation {CONTROL}: self({x} = {x} * -3.75) == result;"))
}

/// The cases a candidate that held on `agreed` cases has held on where its input mattered,
/// when the control held on `vacuous` of the same cases.
pub fn evidence(agreed: u64, vacuous: u64) -> u64 {
    agreed.saturating_sub(vacuous)
}

/// The scales of a relation that validation tries: those of ordinary magnitude (all of them
/// when none is).
pub fn ordinary(scalars: &[f64]) -> Vec<f64> {
    let kept: Vec<f64> = scalars.iter().copied().filter(|s| s.abs() <= ORDINARY && s.abs() >= 1.0 / ORDINARY).collect();
    if kept.is_empty() {
        scalars.to_vec()
    } else {
        kept
    }
}

/// The rule that keeps a relation, with the cases it held on.
pub fn kept(name: &str, text: &str, cases: u64) -> Judged {
    Judged {
        candidate: Candidate { name: format!("{PREFIX}{name}"), text: text.to_string(), source: RuleSource::Inferred },
        status: RuleStatus::Validated,
        confidence: None,
        evidence: vec![("cases".into(), cases as i64), ("disagreed".into(), 0)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_name_the_first_tensor_and_skip_relations_the_api_has() {
        let checked = crate::check::check_text(
            std::path::Path::new("t.sfz"),
            "api torch.sin(input: Tensor, *, out: Tensor? = None) -> Tensor {\n    relation odd: self(input = -input) == -result;\n}\n\napi torch.numel(input: Tensor) -> int {}\n",
        );
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        let c = candidates(&checked.spec.apis[0], &[]);
        let names: Vec<&str> = c.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["even", "scale_invariant", "scale_invariant_up", "positively_homogeneous"]);
        assert_eq!(implied_by("scale_invariant_up"), Some("scale_invariant"));
        let norm = crate::check::check_text(std::path::Path::new("t.sfz"), "api torch.layer_norm(input: Tensor, normalized_shape: int[], eps: float = 1e-5) -> Tensor {}\n");
        let with_eps = candidates(&norm.spec.apis[0], &[]);
        let eps = with_eps.iter().find(|(n, _)| n == "scale_invariant_eps_squared").expect("an eps candidate");
        assert_eq!(eps.1, "relation scale_invariant_eps_squared: forall s in [4.0, 1024.0, 1152921504606846976.0]: self(input = input * s, eps = eps * s * s) == result;");
        let applied = crate::check::check_text(
            std::path::Path::new("t.sfz"),
            &format!("api torch.layer_norm(input: Tensor, normalized_shape: int[], eps: float = 1e-5) -> Tensor {{\n    {}\n}}\n", eps.1),
        );
        assert!(!applied.has_errors(), "{:?}", applied.diags);
        assert_eq!(c[0].1, "relation even: self(input = -input) == result;");
        assert!(candidates(&checked.spec.apis[1], &[]).is_empty());
        assert_eq!(ordinary(&[0.25, 4.0, 1024.0, 1152921504606846976.0, 8.673617379884035e-19]), vec![0.25, 4.0, 1024.0]);
    }
}
