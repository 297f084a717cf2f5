//! Programs run in real workers: the NaN/INF oracle on intermediates, both search strategies,
//! fixed variants that stay clean, reproducers that replay the chain in pip torch, and training
//! records for soft assertions.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use sfz::numeric::driver::{hunt_program, starting_inputs, HuntConfig, Status};
use sfz::numeric::report::{python_reproducer, report};
use sfz::spec::ProgramSpec;
use sfz::wire::program::hunt::Strategy;
use sfz::worker::HuntWorker;

fn worker() -> HuntWorker {
    HuntWorker::start(Path::new(env!("CARGO_BIN_EXE_sfz-worker")), Duration::from_secs(60)).expect("a worker starts")
}

fn programs(file: &str) -> Vec<ProgramSpec> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/numerical").join(file);
    let checked = sfz::check::check_paths(&[path]);
    assert!(!checked.has_errors());
    checked.spec.programs
}

fn program(file: &str, name: &str) -> ProgramSpec {
    programs(file).into_iter().find(|p| p.name == name).unwrap_or_else(|| panic!("no program {name}"))
}

fn config(strategy: Strategy) -> HuntConfig {
    HuntConfig { strategy, budget: 300, episodes: 3, seed: 7, ..HuntConfig::default() }
}

#[test]
fn both_strategies_find_the_naive_softmax_overflow_and_not_its_fix() {
    let mut w = worker();
    let bug = program("softmax.sfz", "naive_softmax");
    let fixed = program("softmax.sfz", "naive_softmax_fixed");
    for strategy in [Strategy::Gradient, Strategy::Random] {
        let o = hunt_program(&mut w, &bug, &config(strategy));
        let Status::Found(f) = &o.status else { panic!("{strategy:?}: {:?}", o.status) };
        // exp of a value above ~88.7 is inf in float32: the first non-finite step is `e`.
        assert_eq!(bug.ir.steps[f.step as usize].name, "e");
        assert!(f.inf > 0);
        let x = f.inputs[0].as_ref().expect("x is a tensor");
        assert!(x.values.iter().any(|v| *v > 88.0) && x.values.iter().all(|v| (-100.0..=100.0).contains(v)), "{:?}", x.values);
        let clean = hunt_program(&mut w, &fixed, &config(strategy));
        assert_eq!(clean.status, Status::Clean, "{strategy:?}");
        assert_eq!(clean.evals, 900);
    }
}

#[test]
fn gradient_guidance_drives_a_standard_deviation_to_zero() {
    let mut w = worker();
    let p = program("normalization.sfz", "standardize");
    let o = hunt_program(&mut w, &p, &HuntConfig { episodes: 1, budget: 100, ..config(Strategy::Gradient) });
    let Status::Found(f) = &o.status else { panic!("{:?}", o.status) };
    assert_eq!(p.ir.steps[f.step as usize].name, "z");
    assert!(f.nan > 0);
    // Every element equal: the standard deviation is exactly 0.
    let x = &f.inputs[0].as_ref().unwrap().values;
    assert!(x.iter().all(|v| *v == x[0]), "{x:?}");
    let path = &o.last.as_ref().unwrap().path;
    assert!(path.iter().any(|pt| pt.action == "polyak" || pt.action == "sign"), "{path:?}");
}

#[test]
fn every_example_program_runs_in_a_worker() {
    let mut w = worker();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/numerical");
    let checked = sfz::check::check_paths(&[dir]);
    assert!(checked.spec.programs.len() >= 60);
    for p in &checked.spec.programs {
        assert!(p.runnable, "{}", p.name);
        let o = hunt_program(&mut w, p, &HuntConfig { strategy: Strategy::Once, episodes: 1, budget: 1, ..config(Strategy::Once) });
        assert!(matches!(o.status, Status::Clean | Status::Found(_)), "{}: {:?}", p.name, o.status);
        if p.name.ends_with("_fixed") {
            assert_eq!(o.status, Status::Clean, "{}", p.name);
        }
    }
}

/// Runs a found bug's reproducer in pip torch: its exit status and standard output.
fn reproduce(p: &ProgramSpec, o: &sfz::numeric::driver::Outcome) -> (Option<i32>, String) {
    let Some(python) = std::env::var("SFZ_PYTHON").ok().or_else(|| option_env!("SFZ_PYTHON").map(String::from)) else {
        panic!("SFZ_PYTHON names the venv's python with torch 2.13.0");
    };
    let script = python_reproducer(p, o, "test").expect("a bug has a reproducer");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("repro.py");
    std::fs::write(&file, &script).unwrap();
    let out = Command::new(python).arg(&file).output().expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.code() != Some(0) || stdout.contains("sfz-finite"), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    (out.status.code(), stdout)
}

#[test]
fn the_reproducer_replays_the_chain_in_pip_torch() {
    let mut w = worker();
    let p = program("losses.sfz", "binary_cross_entropy");
    let o = hunt_program(&mut w, &p, &config(Strategy::Gradient));
    let r = report(&p, &o, Strategy::Gradient);
    assert_eq!((r.status, r.oracle), (sfz::numeric::report::HuntStatus::Bug, Some("nan_inf")));
    let (code, stdout) = reproduce(&p, &o);
    assert_eq!(code, Some(1), "{stdout}");
    // The step's name, then the bad value itself.
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some(format!("sfz-nonfinite: {}", r.step.unwrap()).as_str()), "{stdout}");
    assert!(lines.next().is_some_and(|l| l.contains("inf") || l.contains("nan")), "{stdout}");
}

#[test]
fn an_aten_call_libtorch_rejects_makes_the_program_rejected_and_names_the_step() {
    let text = "program p(x: Tensor) {\n    x.dtype == float32;\n    x.ndim == 2;\n    let e = torch.exp(x);\n    let m = torch.ops.aten.mm.default(e);\n}\n";
    let checked = sfz::check::check_text(Path::new("p.sfz"), text);
    assert!(!checked.has_errors(), "{:?}", checked.diags);
    let mut w = worker();
    let o = hunt_program(&mut w, &checked.spec.programs[0], &config(Strategy::Gradient));
    let Status::Rejected(message) = &o.status else { panic!("{:?}", o.status) };
    assert!(message.contains("mm"), "{message}");
    assert_eq!(o.last.as_ref().and_then(|r| r.rejected_step), Some(1), "the step that raised");
}

#[test]
fn a_non_finite_value_the_program_clamps_itself_is_no_finding() {
    let program = |body: &str| {
        let text = format!("program p(x: Tensor) {{\n    x.dtype == float16;\n    x.ndim == 1;\n    x.values in -100.0..100.0;\n{body}}}\n");
        let checked = sfz::check::check_text(Path::new("p.sfz"), &text);
        assert!(!checked.has_errors(), "{:?}", checked.diags);
        checked.spec.programs.into_iter().next().unwrap()
    };
    let mut w = worker();
    // A float16 mask of -65504 added to scores overflows to -inf below -16...
    let bare = program("    let s = x + (-65504.0);\n    let y = s - x;\n");
    let o = hunt_program(&mut w, &bare, &config(Strategy::Gradient));
    let Status::Found(f) = &o.status else { panic!("{:?}", o.status) };
    assert_eq!(bare.ir.steps[f.step as usize].name, "s");
    // ...which the program then clamps back to the mask value: meant, not a bug.
    let clamped = program("    let s = x + (-65504.0);\n    let y = torch.clamp(s, min = -65504.0);\n");
    assert_eq!(hunt_program(&mut w, &clamped, &config(Strategy::Gradient)).status, Status::Clean);
}

#[test]
fn a_step_calls_any_aten_operator_by_schema_and_the_gradient_goes_through_it() {
    let mut w = worker();
    let bug = program("losses.sfz", "nll_of_log_softmax_by_hand");
    let o = hunt_program(&mut w, &bug, &config(Strategy::Gradient));
    let Status::Found(f) = &o.status else { panic!("{:?}", o.status) };
    assert_eq!(bug.ir.steps[f.step as usize].name, "l", "log of an underflowed probability");
    let (code, stdout) = reproduce(&bug, &o);
    assert_eq!((code, stdout.lines().next()), (Some(1), Some("sfz-nonfinite: l")), "{stdout}");
    let fixed = program("losses.sfz", "nll_of_log_softmax_by_hand_fixed");
    assert!(fixed.ir.steps.iter().all(|s| s.aten.is_some()));
    let clean = hunt_program(&mut w, &fixed, &config(Strategy::Gradient));
    assert_eq!(clean.status, Status::Clean);
    assert_eq!(clean.evals, 900, "every evaluation ran: the operators replay");
    // The gradient search goes through ATen steps as through the table's: the standard
    // deviation, computed by `aten::std`, is driven to 0.
    let p = program("normalization.sfz", "standardize_by_aten");
    let o = hunt_program(&mut w, &p, &HuntConfig { episodes: 1, budget: 100, ..config(Strategy::Gradient) });
    let Status::Found(f) = &o.status else { panic!("{:?}", o.status) };
    assert_eq!(p.ir.steps[f.step as usize].name, "z");
    let path = &o.last.as_ref().unwrap().path;
    assert!(path.iter().any(|pt| pt.action == "polyak" || pt.action == "sign"), "{path:?}");
}

#[test]
fn training_records_label_non_finite_outputs() {
    let mut w = worker();
    let p = program("softmax.sfz", "naive_softmax");
    let o = hunt_program(&mut w, &p, &HuntConfig { strategy: Strategy::Random, episodes: 1, budget: 200, collect: true, ..config(Strategy::Random) });
    assert!(o.records.len() >= 200 * p.ir.steps.len() / 2);
    let exp: Vec<_> = o.records.iter().filter(|r| r.op == sfz::wire::program::ops::NumOp::Exp).collect();
    // Feature 0 is the operand's maximum: exp overflows exactly above ~88.72.
    assert!(exp.iter().any(|r| r.nonfinite) && exp.iter().any(|r| !r.nonfinite));
    for r in &exp {
        assert_eq!(r.nonfinite, r.features[0] > 88.72, "{:?}", r.features);
    }
    let models = sfz::cli::train::fit(&o.records, &Default::default());
    let m = models.models.get(&sfz::wire::program::ops::NumOp::Exp).expect("a model for exp");
    // The forest separates what it saw: overflowing inputs from the rest.
    let hot: Vec<_> = exp.iter().filter(|r| r.nonfinite).collect();
    let cold: Vec<_> = exp.iter().filter(|r| !r.nonfinite).collect();
    let right = |rs: &[&&sfz::wire::program::hunt::Record], want: bool| rs.iter().filter(|r| (m.nonfinite.predict(&r.features) > 0.5) == want).count();
    assert!(right(&hot, true) * 10 >= hot.len() * 9, "{} of {} overflowing inputs predicted", right(&hot, true), hot.len());
    assert!(right(&cold, false) * 100 >= cold.len() * 99, "{} of {} finite inputs predicted", right(&cold, false), cold.len());
}

#[test]
fn starting_inputs_follow_the_programs_constraints() {
    let p = program("domains.sfz", "float16_sum_overflow");
    for episode in 0..4 {
        let (args, bounds) = starting_inputs(&p, 3, episode, (256, 8)).unwrap();
        let sfz::wire::case::Arg::Tensor(x) = &args[0] else { panic!("{args:?}") };
        assert_eq!(x.dtype, sfz::wire::case::DType::Float32);
        assert!(x.shape.len() == 1 && x.shape[0] >= 8, "{:?}", x.shape);
        assert_eq!(bounds[0], Some((-10000.0, 10000.0)));
    }
}

/// The ops a traced script needs beyond the hand-written examples: linear, relu, reshape,
/// transpose, softplus, logsigmoid run in the worker; the stable forms stay finite where the
/// naive one does not.
#[test]
fn the_ops_of_traced_scripts_run_and_their_stable_forms_stay_finite() {
    let text = r#"
program layer(x: Tensor, w: Tensor, b: Tensor) {
    x.dtype == float32; x.ndim == 2; x.shape[0] == 3; x.shape[1] == 4; x.values in -100.0..100.0;
    w.dtype == float32; w.ndim == 2; w.shape[0] == 2; w.shape[1] == 4; w.values in -100.0..100.0;
    b.dtype == float32; b.ndim == 1; b.shape[0] == 2; b.values in -1.0..1.0;
    let h = torch.relu(torch.nn.functional.linear(x, weight = w, bias = b));
    let r = torch.transpose(torch.reshape(h, shape = [2, 3]), dim0 = 0, dim1 = 1);
    let stable = torch.nn.functional.logsigmoid(r) + torch.nn.functional.softplus(r);
    let naive = torch.log(torch.sigmoid(-r));
}
"#;
    let checked = sfz::check::check_text(Path::new("layer.sfz"), text);
    assert!(!checked.has_errors(), "{:?}", checked.diags);
    let p = checked.spec.programs.into_iter().next().unwrap();
    let mut w = worker();
    let o = hunt_program(&mut w, &p, &HuntConfig { episodes: 2, budget: 200, ..config(Strategy::Gradient) });
    let Status::Found(f) = &o.status else { panic!("{:?}", o.status) };
    assert_eq!(p.ir.steps[f.step as usize].op, sfz::wire::program::ops::NumOp::Log, "only the naive form: {:?}", p.ir.steps[f.step as usize]);
}

/// The soft assertions choose the gradient search's target: with no models the first target is
/// the first risky step (round robin); with models that give `log` a high probability of a
/// non-finite output and `exp` none, the first target is the `log` step.
#[test]
fn a_soft_assertion_model_changes_the_target_the_search_takes_first() {
    use sfz::wire::program::forest::{Forest, ForestConfig};
    use sfz::wire::program::ops::NumOp;
    use sfz::wire::program::soft::{self, OpModel, SoftModels};
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = dir.path().join("two.sfz");
    std::fs::write(&spec, "program two(x: Tensor) {\n    x.dtype == float32;\n    x.ndim == 1;\n    x.shape[0] == 4;\n    x.values in 0.5..2.0;\n    let a = torch.exp(x);\n    let b = torch.log(x);\n}\n").expect("write");
    let checked = sfz::check::check_paths(&[spec]);
    assert!(!checked.has_errors());
    let p = checked.spec.programs.into_iter().next().expect("the program");
    let constant = |fires: bool| {
        let xs = vec![vec![0.0; soft::feature_names().len()]; 20];
        OpModel {
            nonfinite: Forest::fit(&xs, &[fires; 20], &ForestConfig { trees: 1, max_depth: 1, min_leaf: 1, seed: 0 }),
            imprecise: None,
            samples: 20,
            positives: if fires { 20 } else { 0 },
        }
    };
    let models =
        SoftModels { version: soft::VERSION, features: soft::feature_names(), models: [(NumOp::Exp, constant(false)), (NumOp::Log, constant(true))].into_iter().collect() };
    let first_target = |models: Option<SoftModels>| {
        let mut w = worker();
        let o = hunt_program(&mut w, &p, &HuntConfig { episodes: 1, budget: 4, models, ..config(Strategy::Gradient) });
        let path = o.last.expect("an episode ran").path;
        path.iter().find_map(|pt| pt.target).map(|k| p.ir.steps[k as usize].name.clone())
    };
    assert_eq!(first_target(None).as_deref(), Some("a"), "round robin starts at the first risky step");
    assert_eq!(first_target(Some(models)).as_deref(), Some("b"), "the model points at log");
}
