//! The script of a gradient finding: `torch.autograd.gradcheck` in float64.
use super::call::call;
use super::python::{py_float, tol_args};
use super::Writer;
use crate::wire::case::{Arg, TensorRecipe};
use crate::wire::variant::{promote_dtype_args, Tolerance};

impl Writer<'_> {
    /// `torch.autograd.gradcheck` over the floating tensor inputs, in float64.
    pub(super) fn gradient(&mut self, eps: f64, tol: Tolerance) -> String {
        let r = self.r;
        let case = promote_dtype_args(r.case);
        let floating = |rec: &TensorRecipe| rec.dtype.is_floating();
        let has_list = case.args.iter().any(|a| matches!(a, Arg::TensorList(rs) if rs.iter().any(floating)));
        let mut params = Vec::new();
        let mut inputs = Vec::new();
        let mut vars = self.vars.clone();
        for (i, arg) in case.args.iter().enumerate() {
            match arg {
                Arg::Tensor(rec) if floating(rec) => {
                    let p = if has_list { format!("xs[{}]", inputs.len()) } else { self.vars[i].clone() };
                    inputs.push(format!("{}.double().requires_grad_()", self.vars[i]));
                    params.push(self.vars[i].clone());
                    vars[i] = p;
                }
                Arg::TensorList(rs) => {
                    let items: Vec<String> = rs
                        .iter()
                        .enumerate()
                        .map(|(k, rec)| {
                            let element = format!("{}_{k}", self.vars[i]);
                            if floating(rec) {
                                inputs.push(format!("{element}.double().requires_grad_()"));
                                format!("xs[{}]", inputs.len() - 1)
                            } else {
                                element
                            }
                        })
                        .collect();
                    vars[i] = format!("[{}]", items.join(", "));
                }
                _ => {}
            }
        }
        let signature = if has_list { "*xs".to_string() } else { params.join(", ") };
        let body = call(r.api, r.binding, &case, &vars);
        let tuple = if inputs.len() == 1 { format!("({},)", inputs[0]) } else { format!("({})", inputs.join(", ")) };
        format!(
            "def f({signature}):\n    return {body}\n\n\n# Fails with GradcheckError (\"Jacobian mismatch\") while backward disagrees with finite differences.\ntorch.autograd.gradcheck(f, {tuple}, eps={}, {}, check_undefined_grad=False)\n",
            py_float(eps),
            tol_args(tol)
        )
    }
}
