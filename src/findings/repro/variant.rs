//! The variant's side of a differential script: its inputs (promoted, on CUDA, in the other
//! layout, an out= tensor, the in-place copy) and its call.
use super::call::{call, ops_call, public_call};
use super::forward;
use super::inputs::relayout;
use super::python::py_dtype;
use super::Writer;
use crate::ops::binding::{ArgSource, OpBinding};
use crate::ops::registry::{self, PyCall};
use crate::ops::schema;
use crate::oracle::Disagreement;
use crate::wire::case::{Arg, DType, Layout, TensorRecipe};
use crate::wire::variant::{flip_layout, promote_dtype_args, Check, Variant};

/// How the variant's call is made, for the shared parts of differential bodies.
pub(super) struct VariantCall {
    /// Lines that prepare its inputs (layout copies, out= tensors, the in-place copy).
    pub(super) setup: Vec<String>,
    /// The call expression.
    pub(super) call: String,
    /// The value to compare with the original's output `k`, given the name the call's value
    /// was bound to.
    pub(super) value: fn(&Writer, &str, usize) -> String,
}

impl Writer<'_> {
    /// The variant's call and what it needs first.
    pub(super) fn variant_call(&mut self, check: &Check, what: &Disagreement) -> VariantCall {
        let r = self.r;
        let case = r.case;
        let plain = |w: &Writer, name: &str, k: usize| w.output(name, k);
        match &check.variant {
            Variant::Promote | Variant::Defined => {
                // The check on demand promotes integer inputs as well.
                let integers = check.variant == Variant::Defined;
                let promoted = promote_dtype_args(case);
                // A `dtype` argument casts the inputs first, in the worker's reference too (not
                // another dtype argument: `_softmax_backward_data`'s `input_dtype`).
                let cast = case.args.iter().enumerate().find_map(|(i, a)| match a {
                    Arg::Dtype(d @ (DType::Float16 | DType::BFloat16 | DType::Float32)) if self.schema_arg_name(i).as_deref() == Some("dtype") => Some(*d),
                    _ => None,
                });
                let mut vars = self.tensor_exprs(|v, rec| match (cast, rec.dtype) {
                    (Some(d), DType::Float16 | DType::BFloat16 | DType::Float32 | DType::Float64) if d != rec.dtype => format!("{v}.to({}).double()", py_dtype(d)),
                    (_, DType::Float16 | DType::BFloat16 | DType::Float32) => format!("{v}.double()"),
                    (_, DType::Complex64) => format!("{v}.to(torch.complex128)"),
                    (_, DType::Bool | DType::UInt8 | DType::Int8 | DType::Int16 | DType::Int32 | DType::Int64) if integers => format!("{v}.double()"),
                    _ => v.to_string(),
                });
                // What a forward filled has the dtype of its output, known when the script runs.
                for i in forward::bound(case, r.binding) {
                    let v = &self.vars[i];
                    vars[i] = match cast {
                        Some(d) => format!("({v}.to({d}).double() if {v}.is_floating_point() else {v})", d = py_dtype(d)),
                        None => format!(
                            "({v}.double() if {v}.dtype in (torch.float16, torch.bfloat16, torch.float32) else {v}.to(torch.complex128) if {v}.dtype == torch.complex64 else {v})"
                        ),
                    };
                }
                VariantCall { setup: vec![], call: call(r.api, r.binding, &promoted, &vars), value: plain }
            }
            // Rendered by `relation_check` before this is reached.
            Variant::Relation(_) => VariantCall { setup: vec![], call: call(r.api, r.binding, case, &self.vars), value: plain },
            Variant::Cuda => {
                let vars = self.tensor_exprs(|v, _| format!("{v}.cuda()"));
                VariantCall { setup: vec![], call: call(r.api, r.binding, case, &vars), value: |w, name, k| format!("{}.cpu()", w.output(name, k)) }
            }
            Variant::Layout => {
                let mut setup = Vec::new();
                let mut vars = self.vars.clone();
                let bound = forward::bound(case, r.binding);
                let like = |i: usize| case.forward.as_ref().is_some_and(|f| f.binds.iter().any(|b| b.param == i && b.like));
                for (i, arg) in case.args.iter().enumerate() {
                    if bound.contains(&i) {
                        // A copied output stays as it is; a fresh one is built in the other layout
                        // from its recipe, with the shape it has now (`flip_layout` on it).
                        if let (true, Arg::Tensor(rec)) = (like(i), arg) {
                            let v = &self.vars[i];
                            let name = format!("{v}_2");
                            let e = if rec.layout == Layout::Contiguous {
                                format!("({v}.mT.contiguous().mT if {v}.dim() >= 2 and {v}.shape[-1] > 1 and {v}.shape[-2] > 1 else torch.zeros(list({v}.shape[:-1]) + [2 * {v}.shape[-1]], dtype={v}.dtype)[..., ::2].copy_({v}) if {v}.dim() >= 1 and {v}.shape[-1] > 1 else {v})")
                            } else {
                                format!("{v}.contiguous()")
                            };
                            setup.push(format!("{name} = {e}  # the same values, the other layout"));
                            vars[i] = name;
                        }
                        continue;
                    }
                    let flipped = |v: &str, rec: &TensorRecipe| {
                        let mut to = rec.clone();
                        flip_layout(&mut to);
                        match to.layout {
                            Layout::Contiguous => format!("{v}.contiguous()"),
                            l => relayout(v, rec, l).unwrap_or_else(|| v.to_string()),
                        }
                    };
                    match arg {
                        Arg::Tensor(rec) => {
                            let name = format!("{}_2", self.vars[i]);
                            setup.push(format!("{name} = {}  # the same values, the other layout", flipped(&self.vars[i], rec)));
                            vars[i] = name;
                        }
                        Arg::TensorList(rs) => {
                            let items: Vec<String> = rs.iter().enumerate().map(|(k, rec)| flipped(&format!("{}_{k}", self.vars[i]), rec)).collect();
                            // Not `_2`: that names the list's third element.
                            let name = format!("{}_relaid", self.vars[i]);
                            setup.push(format!("{name} = [{}]  # the same values, the other layout", items.join(", ")));
                            vars[i] = name;
                        }
                        _ => {}
                    }
                }
                VariantCall { setup, call: call(r.api, r.binding, case, &vars), value: plain }
            }
            Variant::Out { .. } => {
                let twin = r.twin.unwrap_or(r.binding);
                let n = twin.args.iter().filter(|a| matches!(a, ArgSource::Output(_))).count().max(1);
                let outs: Vec<String> = if n == 1 { vec!["out".into()] } else { (0..n).map(|k| format!("out{k}")).collect() };
                let fallback = case.args.iter().flat_map(Arg::tensors).next().map_or(DType::Float32, |t| t.dtype);
                let setup = outs
                    .iter()
                    .enumerate()
                    .map(|(k, o)| {
                        // Empty, with the dtype of the original's output (which it may lack).
                        let dtype = match what {
                            Disagreement::OriginalRaises => py_dtype(fallback),
                            Disagreement::VariantFails | Disagreement::Gradient | Disagreement::Derivative(_) => {
                                format!("{}.dtype if result is not None else {}", self.output("result", k), py_dtype(fallback))
                            }
                            _ => format!("{}.dtype", self.output("result", k)),
                        };
                        format!("{o} = torch.empty(0, dtype={dtype})")
                    })
                    .collect::<Vec<_>>();
                let call = self.out_call(twin, &outs);
                // The caller sees the tensors it passed, written.
                let value: fn(&Writer, &str, usize) -> String = if n == 1 { |_, _, _| "out".to_string() } else { |_, _, k| format!("out{k}") };
                VariantCall { setup, call, value }
            }
            Variant::InPlace { arg, .. } => {
                let twin = r.twin.unwrap_or(r.binding);
                let v = self.vars.get(*arg).cloned().unwrap_or_else(|| "arg0".into());
                let copy = format!("{v}_copy");
                let layout_copy = match case.args.get(*arg) {
                    Some(Arg::Tensor(rec)) if rec.layout == Layout::Strided => relayout(&v, rec, Layout::Strided).unwrap_or_else(|| format!("{v}.clone()")),
                    _ => format!("{v}.clone()"),
                };
                let mut vars = self.vars.clone();
                vars[*arg] = copy.clone();
                let method = twin.name.rsplit("::").next().unwrap_or(&twin.name).to_string();
                let call = match registry::python_call(&r.api.name) {
                    Some(_) if registry::is_public_mapping(r.api, r.binding) => {
                        // `x.exp_(...)`: the public call's arguments without the receiver.
                        let as_method = PyCall::Method(method);
                        let mut case2 = case.clone();
                        // Put the mutated argument first, as the receiver.
                        let receiver = case2.args.remove(*arg);
                        case2.args.insert(0, receiver);
                        let mut api2 = r.api.clone();
                        let p = api2.params.remove(*arg);
                        api2.params.insert(0, p);
                        let mut vars2 = vars.clone();
                        let x = vars2.remove(*arg);
                        vars2.insert(0, x);
                        public_call(&api2, &as_method, &case2, &vars2)
                    }
                    _ => ops_call(twin, case, &vars, &[]),
                };
                VariantCall { setup: vec![format!("{copy} = {layout_copy}")], call, value: |w, _, _| w.inplace_copy() }
            }
            Variant::Gradient { .. } => VariantCall { setup: vec![], call: String::new(), value: plain },
        }
    }

    fn inplace_copy(&self) -> String {
        match self.r.check.map(|c| &c.variant) {
            Some(Variant::InPlace { arg, .. }) => format!("{}_copy", self.vars.get(*arg).map_or("arg0", String::as_str)),
            _ => "variant".into(),
        }
    }

    /// The out= call: the public function with `out=` where Python has one, else `torch.ops`.
    fn out_call(&self, twin: &OpBinding, outs: &[String]) -> String {
        let r = self.r;
        let public = registry::is_public_mapping(r.api, r.binding)
            && matches!(registry::python_call(&r.api.name), Some(PyCall::Function(ref f)) if f.starts_with("torch.") && !f.starts_with("torch.nn."))
            && outs.len() == 1
            && schema::parse(&twin.schema).is_ok_and(|s| s.args.last().is_some_and(|a| a.name == "out"));
        if public {
            let c = call(r.api, r.binding, r.case, &self.vars);
            match c.strip_suffix(')') {
                Some(head) if head.ends_with('(') => format!("{head}out=out)"),
                Some(head) => format!("{head}, out=out)"),
                None => c,
            }
        } else {
            ops_call(twin, r.case, &self.vars, outs)
        }
    }
}
