//! What libtorch said about inputs that obey an API's constraints and were rejected anyway:
//! the relation the constraints miss, in libtorch's words. `sfz suggest` hands these to a
//! language model, for the relations enumeration cannot name (`normalized_shape` against the
//! input's trailing sizes, an LSTM's weight list against `num_layers`).
use std::time::Instant;

use super::infer::{sample, Runner};
use crate::gen::mix;
use crate::oracle::Status;
use crate::solve::Limits;
use crate::spec::ApiSpec;
use crate::wire::case::Arg;

/// One cause of rejection: libtorch's error with its numbers made uniform, how many of the
/// inputs raised it, and the first input that did.
#[derive(Clone, Debug, PartialEq)]
pub struct Rejection {
    /// `oracle::errors::complaint` of the first line: one cause, one key.
    pub key: String,
    /// The first such error's first line, as libtorch wrote it.
    pub error: String,
    /// The arguments that raised it, in words (`tensors = [float32[2, 3], int64[4]], dim = 5`).
    pub inputs: String,
    pub count: usize,
}

/// Runs up to `cases` conforming inputs of `api` and groups the argument errors by cause, most
/// frequent first. Returns how many inputs ran and the causes.
pub fn collect(api: &ApiSpec, index: usize, runner: &dyn Runner, cases: usize, seed: u64, limits: &Limits, deadline: Instant) -> (usize, Vec<Rejection>) {
    let args = sample(api, cases, mix(seed ^ 0xe770), limits, None);
    let ran = runner.run_with_errors(index, &args, deadline);
    let mut out: Vec<Rejection> = Vec::new();
    for (args, (status, error)) in args.iter().zip(&ran) {
        let (Status::Invalid, Some(error)) = (status, error) else { continue };
        let first = error.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        let key = crate::oracle::errors::complaint(first);
        match out.iter_mut().find(|r| r.key == key) {
            Some(r) => r.count += 1,
            None => out.push(Rejection { key, error: first.chars().take(300).collect(), inputs: describe(api, args), count: 1 }),
        }
    }
    // Stable: ties keep the order they were first seen in.
    out.sort_by_key(|r| std::cmp::Reverse(r.count));
    (ran.len(), out)
}

/// The causes as prompt text, at most `max` of them: each error, how often, and one input.
pub fn prompt_text(ran: usize, rejections: &[Rejection], max: usize) -> String {
    if rejections.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "\nlibtorch rejected inputs that satisfy the constraints above ({} of {ran} tried); its errors, with one input each:\n",
        rejections.iter().map(|r| r.count).sum::<usize>()
    );
    for r in rejections.iter().take(max) {
        s.push_str(&format!("- {} ({}x), e.g. for {}\n", r.error, r.count, r.inputs));
    }
    s
}

/// Arguments in words: dtypes and shapes of tensors, values of the rest.
pub fn describe(api: &ApiSpec, args: &[Arg]) -> String {
    let tensor = |t: &crate::wire::case::TensorRecipe| format!("{}{:?}", t.dtype, t.shape);
    api.params
        .iter()
        .zip(args)
        .filter(|(_, a)| !matches!(a, Arg::Omitted))
        .map(|(p, a)| {
            let v = match a {
                Arg::Omitted => String::new(),
                Arg::None => "None".into(),
                Arg::Tensor(t) => tensor(t),
                Arg::TensorList(ts) => format!("[{}]", ts.iter().map(tensor).collect::<Vec<_>>().join(", ")),
                Arg::Bool(b) => b.to_string(),
                Arg::Int(i) => i.to_string(),
                Arg::Float(f) => format!("{f:?}"),
                Arg::Str(s) => format!("{s:?}"),
                Arg::Dtype(d) => d.to_string(),
                Arg::IntList(v) => format!("{v:?}"),
                Arg::FloatList(v) => format!("{v:?}"),
                Arg::BoolList(v) => format!("{v:?}"),
            };
            format!("{} = {v}", p.name)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A runner that rejects every input whose first tensor list holds two elements of
    /// different ranks, as cat does: the errors come back grouped, numbers made uniform.
    struct CatLike;
    impl Runner for CatLike {
        fn run_with_errors(&self, _: usize, cases: &[Vec<Arg>], _: Instant) -> Vec<(Status, Option<String>)> {
            cases
                .iter()
                .map(|args| match &args[0] {
                    Arg::TensorList(ts) if ts.iter().any(|t| t.shape.len() != ts[0].shape.len()) => {
                        (Status::Invalid, Some(format!("Tensors must have same number of dimensions: got {} and {}\nmore", ts[0].shape.len(), ts[1].shape.len())))
                    }
                    _ => (Status::Ok, None),
                })
                .collect()
        }
    }

    #[test]
    fn errors_are_grouped_by_cause_with_one_input_each() {
        let checked = crate::check::check_text(Path::new("t.sfz"), "api torch.cat(tensors: Tensor[], dim: int = 0) -> Tensor {}\n");
        let api = &checked.spec.apis[0];
        let (ran, rejections) = collect(api, 0, &CatLike, 48, 3, &Limits::default(), Instant::now() + std::time::Duration::from_secs(60));
        assert!(ran > 8, "{ran}");
        assert_eq!(rejections.len(), 1, "{rejections:?}");
        let r = &rejections[0];
        assert_eq!(r.key, "Tensors must have same number of dimensions: got N and N");
        assert!(r.error.starts_with("Tensors must have same number of dimensions: got ") && !r.error.contains("more"));
        assert!(r.inputs.starts_with("tensors = [") && r.inputs.contains("dim = "), "{}", r.inputs);
        let text = prompt_text(ran, &rejections, 8);
        assert!(text.contains(&format!("({} of {ran} tried)", r.count)) && text.contains(&r.inputs), "{text}");
        assert_eq!(prompt_text(ran, &[], 8), "");
    }
}
