//! The body of a differential finding's script: the original call, the variant's, and the
//! assertion that fails while they disagree as the worker saw (values, structure, one side
//! raising, a variant failing, an infinity the float64 reference extrapolates past).
use std::fmt::Write as _;

use super::call::call;
use super::python::{comparable, py_str, tol_args};
use super::Writer;
use crate::oracle::Disagreement;
use crate::wire::tags;
use crate::wire::variant::{Check, Variant};

impl Writer<'_> {
    pub(super) fn differential(&mut self, check: &Check, what: &Disagreement, original: &str) -> String {
        if let Variant::Gradient { eps, .. } = check.variant {
            return match what {
                Disagreement::Derivative(at) => self.derivative(*at, eps, check.tolerances.float64),
                Disagreement::VariantFails => self.gradient_fails(),
                _ => self.gradcheck(eps, check.tolerances.float64),
            };
        }
        if let (Variant::Relation(r), Disagreement::Values { tolerance, .. }) = (&check.variant, what) {
            return self.relation(r, *tolerance);
        }
        if let Disagreement::Uninitialised { output } = what {
            return self.uninitialised(original, *output);
        }
        let v = self.variant_call(check, what);
        let mut out = String::new();
        let mut setup = v.setup.iter().map(|l| format!("{l}\n")).collect::<String>();
        // The variant starts from the values the original was given.
        setup = format!("{}{setup}", self.rebuilt());
        let name = match check.variant {
            Variant::Promote => "expected",
            _ => "variant",
        };
        let describe = check.variant.describe();
        let api = &self.r.api.name;
        match what {
            Disagreement::Values { output, dtype, tolerance } => {
                let _ = writeln!(out, "result = {original}");
                out.push_str(&setup);
                let _ = writeln!(out, "{name} = {}", v.call);
                let ours = self.output("result", *output);
                let theirs = (v.value)(self, name, *output);
                let (actual, expected) = match check.variant {
                    // The float64 reference, rounded to the original's dtype.
                    Variant::Promote => (comparable(&ours, *dtype), comparable(&format!("{theirs}.to({ours}.dtype)"), *dtype)),
                    _ => (comparable(&theirs, *dtype), comparable(&ours, *dtype)),
                };
                let _ = writeln!(out, "torch.testing.assert_close({actual}, {expected}, {}, equal_nan=True)", tol_args(*tolerance));
            }
            Disagreement::Structure { output } => {
                let _ = writeln!(out, "result = {original}");
                out.push_str(&setup);
                let _ = writeln!(out, "{name} = {}", v.call);
                let ours = self.output("result", *output);
                let theirs = (v.value)(self, name, *output);
                let same = if check.variant == Variant::Promote { "shape" } else { "dtype and shape" };
                let cond = if check.variant == Variant::Promote {
                    format!("{theirs}.shape == {ours}.shape")
                } else {
                    format!("({theirs}.dtype, {theirs}.shape) == ({ours}.dtype, {ours}.shape)")
                };
                let _ = writeln!(out, "assert {cond}, {}", py_str(&format!("output {output}: the {describe} has another {same}")));
            }
            Disagreement::VariantRaises => {
                let _ = writeln!(out, "result = {original}  # returns");
                out.push_str(&setup);
                let _ = writeln!(out, "try:\n    {}\nexcept Exception as e:", v.call);
                let _ = writeln!(out, "    raise AssertionError({}) from e", py_str(&format!("{api} returns but its {describe} raises")));
            }
            Disagreement::OriginalRaises => {
                out.push_str(&setup);
                let _ = writeln!(out, "{name} = {}  # returns", v.call);
                let _ = writeln!(out, "try:\n    {original}\nexcept Exception as e:");
                let _ = writeln!(out, "    raise AssertionError({}) from e", py_str(&format!("{api} raises but its {describe} returns")));
            }
            Disagreement::Extrapolated { output } => out.push_str(&self.extrapolated(original, *output)),
            Disagreement::Uninitialised { output } => out.push_str(&self.uninitialised(original, *output)),
            Disagreement::VariantFails | Disagreement::Gradient | Disagreement::Derivative(_) => {
                let _ = writeln!(
                    out,
                    "try:\n    result = {original}\nexcept Exception as e:  # what matters is the {describe}\n    result = None\n    print(\"the original raises:\", e)"
                );
                out.push_str(&setup);
                let _ = writeln!(out, "{}  # fails", v.call);
            }
        }
        out
    }

    /// The original called twice on the same inputs, memory of the output's size written and
    /// freed in between (as the worker does), and the output compared bit for bit.
    fn uninitialised(&self, original: &str, output: usize) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "result = {original}");
        let _ = writeln!(out, "first = {}.clone()", self.output("result", output));
        // Built again from their seeds, so that a sampler starts from the same generator state.
        out.push_str(&super::inputs::inputs(self.r.case, self.r.binding, &self.vars));
        out.push_str(
            "# memory the next call may be given, written and freed: an output the kernel never writes shows it
",
        );
        out.push_str(
            "scratch = [torch.full_like(first, 7) for _ in range(8)]
del scratch
",
        );
        let _ = writeln!(out, "again = {original}");
        let _ = writeln!(
            out,
            "torch.testing.assert_close({}, first, rtol=0, atol=0, equal_nan=True, msg=lambda m: {} + m)",
            self.output("again", output),
            py_str(&format!("output {output} differs between two calls on the same inputs: it holds uninitialised memory\n"))
        );
        out
    }

    /// A float64 result that is infinite although the same call just below the input, along
    /// `t · inputs`, extrapolates to a representable value: the worker's arithmetic
    /// (`sfz-worker/src/runtime/ray.rs`) repeated in Python.
    fn extrapolated(&self, original: &str, output: usize) -> String {
        let r = self.r;
        let mut vars = self.tensor_exprs(|v, rec| if rec.dtype.is_floating() { format!("{v} * t") } else { v.to_string() });
        // A polynomial's degree is not scaled, as in the worker (`tags::integer_degree`).
        for (i, var) in vars.iter_mut().enumerate() {
            if self.schema_arg_name(i).is_some_and(|name| tags::integer_degree(&r.binding.name, &name)) {
                var.clone_from(&self.vars[i]);
            }
        }
        let scaled = call(r.api, r.binding, r.case, &vars);
        let mut out = String::new();
        let _ = writeln!(out, "result = {original}");
        // The calls below scale the inputs as given (`i0_` wrote into its own).
        out.push_str(&self.rebuilt());
        let _ = writeln!(out, "r = {}.double()", self.output("result", output));
        let _ = writeln!(out, "\n\ndef at(t):\n    out = {scaled}\n    return {}.double()\n\n", self.output("out", output));
        out.push_str(concat!(
            "# float64 has no wider dtype: the same call at (1 - k*h) * inputs, k = 1, 2, 3, where log|f|\n",
            "# grows smoothly, extrapolated to the input itself; per element the first h whose three\n",
            "# values are finite and nonzero\n",
            "limit = torch.tensor(torch.finfo(torch.float64).max, dtype=torch.float64).log()\n",
            "decided = torch.zeros_like(r, dtype=torch.bool)\n",
            "early = torch.zeros_like(decided)\n",
            "value = torch.zeros_like(r)\n",
            "for h in (2.0**-12, 2.0**-10, 2.0**-8, 2.0**-6):\n",
            "    near = [at(1.0 - k * h) for k in (1, 2, 3)]\n",
            "    use = ~decided & near[0].isfinite() & near[1].isfinite() & near[2].isfinite() & (near[0] != 0) & (near[1] != 0) & (near[2] != 0)\n",
            "    l1, l2, l3 = (v.abs().log() for v in near)\n",
            "    d1, d2 = l1 - l2, l2 - l3\n",
            "    signs = (near[0].sign() == near[1].sign()) & (near[1].sign() == near[2].sign()) & (near[0].sign() == r.sign())\n",
            "    smooth = (d1 > 0) & (d2 > 0) & ((d1 - d2).abs() <= 0.1 * d1)\n",
            "    extrapolated = l1 + d1 + (d1 - d2)\n",
            "    early |= use & r.isinf() & signs & smooth & (extrapolated < limit - 0.01 - 2 * (d1 - d2).abs())\n",
            "    value = torch.where(use, extrapolated, value)\n",
            "    decided |= use\n",
            "assert not early.any(), f\"{int(early.sum())} element(s) are inf although the value there is about {value[early].exp().tolist()[:3]}, below float64's largest value\"\n",
        ));
        out
    }
}
