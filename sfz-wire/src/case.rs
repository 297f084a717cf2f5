//! A concrete test case: one call of one planned op with concrete arguments.
//!
//! Cases flow from `gen` through the supervisor to a worker, which materialises them with libtorch.
//! They are small and self-contained on purpose: tensors travel as recipes (dtype, shape, a fill
//! and a seed), never as data, so a case is cheap to send, to store in a finding, and to render
//! as a Python reproducer that rebuilds the very same values with pip torch.
use serde::{Deserialize, Serialize};

/// Tensor element types sfz generates. The discriminant order is not ATen's; see `aten_id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DType {
    Bool,
    UInt8,
    Int8,
    Int16,
    Int32,
    Int64,
    Float16,
    BFloat16,
    Float32,
    Float64,
    Complex64,
    Complex128,
}

impl DType {
    pub const ALL: [DType; 12] = [
        DType::Bool,
        DType::UInt8,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::Float16,
        DType::BFloat16,
        DType::Float32,
        DType::Float64,
        DType::Complex64,
        DType::Complex128,
    ];

    /// The name used in specs and in Python (`torch.<name>`).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::UInt8 => "uint8",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
            DType::Float16 => "float16",
            DType::BFloat16 => "bfloat16",
            DType::Float32 => "float32",
            DType::Float64 => "float64",
            DType::Complex64 => "complex64",
            DType::Complex128 => "complex128",
        }
    }

    /// Spec names and the aliases torch accepts (`half`, `float`, `double`, `long`, ...).
    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "bool" => DType::Bool,
            "uint8" => DType::UInt8,
            "int8" => DType::Int8,
            "int16" | "short" => DType::Int16,
            "int32" | "int" => DType::Int32,
            "int64" | "long" => DType::Int64,
            "float16" | "half" => DType::Float16,
            "bfloat16" => DType::BFloat16,
            "float32" | "float" => DType::Float32,
            "float64" | "double" => DType::Float64,
            "complex64" | "cfloat" => DType::Complex64,
            "complex128" | "cdouble" => DType::Complex128,
            _ => return None,
        })
    }

    /// c10::ScalarType's numbering, as the shim and the dispatcher expect it.
    pub fn aten_id(self) -> i32 {
        match self {
            DType::UInt8 => 0,
            DType::Int8 => 1,
            DType::Int16 => 2,
            DType::Int32 => 3,
            DType::Int64 => 4,
            DType::Float16 => 5,
            DType::Float32 => 6,
            DType::Float64 => 7,
            DType::Complex64 => 9,
            DType::Complex128 => 10,
            DType::Bool => 11,
            DType::BFloat16 => 15,
        }
    }

    pub fn from_aten_id(id: i32) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.aten_id() == id)
    }

    /// The largest finite value, the smallest positive normal and the smallest denormal of a
    /// floating dtype (complex ones: their components').
    pub fn limits(self) -> Option<(f64, f64, f64)> {
        Some(match self {
            DType::Float16 => (65504.0, 2f64.powi(-14), 2f64.powi(-24)),
            DType::BFloat16 => (f32::from_bits(0x7F7F_0000) as f64, f32::MIN_POSITIVE as f64, f32::from_bits(0x0001_0000) as f64),
            DType::Float32 | DType::Complex64 => (f32::MAX as f64, f32::MIN_POSITIVE as f64, f32::from_bits(1) as f64),
            DType::Float64 | DType::Complex128 => (f64::MAX, f64::MIN_POSITIVE, f64::from_bits(1)),
            _ => return None,
        })
    }

    /// Half the distance from 1 to the next value of a floating dtype (complex ones: their
    /// components').
    pub fn unit_roundoff(self) -> Option<f64> {
        Some(match self {
            DType::Float16 => 2f64.powi(-11),
            DType::BFloat16 => 2f64.powi(-8),
            DType::Float32 | DType::Complex64 => 2f64.powi(-24),
            DType::Float64 | DType::Complex128 => 2f64.powi(-53),
            _ => return None,
        })
    }

    pub fn is_floating(self) -> bool {
        matches!(self, DType::Float16 | DType::BFloat16 | DType::Float32 | DType::Float64)
    }

    pub fn is_complex(self) -> bool {
        matches!(self, DType::Complex64 | DType::Complex128)
    }

    pub fn is_integral(self) -> bool {
        matches!(self, DType::UInt8 | DType::Int8 | DType::Int16 | DType::Int32 | DType::Int64)
    }

    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            DType::Bool | DType::UInt8 | DType::Int8 => 1,
            DType::Int16 | DType::Float16 | DType::BFloat16 => 2,
            DType::Int32 | DType::Float32 => 4,
            DType::Int64 | DType::Float64 | DType::Complex64 => 8,
            DType::Complex128 => 16,
        }
    }

    /// The range of values an integral dtype holds, as f64 bounds.
    pub fn int_bounds(self) -> Option<(i64, i64)> {
        Some(match self {
            DType::Bool => (0, 1),
            DType::UInt8 => (0, 255),
            DType::Int8 => (-128, 127),
            DType::Int16 => (-32768, 32767),
            DType::Int32 => (i32::MIN as i64, i32::MAX as i64),
            DType::Int64 => (i64::MIN, i64::MAX),
            _ => return None,
        })
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a tensor's elements are drawn. Every variant has one exact rendering in libtorch (the
/// worker) and in Python (the reproducer) that consume the generator in the same order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Fill {
    /// Uniform in [lo, hi), drawn in float64 and cast to the tensor's dtype.
    Uniform { lo: f64, hi: f64 },
    /// Uniform integers in [lo, hi), drawn in int64 and cast.
    Int { lo: i64, hi: i64 },
    /// Every element equal.
    Constant(f64),
}

/// A boundary value written over one element after the fill.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Special {
    Nan,
    PosInf,
    NegInf,
    NegZero,
    Value(#[serde(with = "crate::float::one")] f64),
}

impl Special {
    pub fn value(self) -> f64 {
        match self {
            Special::Nan => f64::NAN,
            Special::PosInf => f64::INFINITY,
            Special::NegInf => f64::NEG_INFINITY,
            Special::NegZero => -0.0,
            Special::Value(v) => v,
        }
    }

    pub fn is_finite(self) -> bool {
        self.value().is_finite()
    }
}

/// How the tensor is laid out in memory once filled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Layout {
    #[default]
    Contiguous,
    /// The same values, stored transposed (last two dims swapped back), so not contiguous.
    Transposed,
    /// Every other element of a twice-as-long last dimension.
    Strided,
    /// The first slice along dimension 0 broadcast over it (stride 0): every slice holds the
    /// values of the first. Changes values, never their bounds; specials outside the first
    /// slice are lost.
    Expanded,
    /// A view at offset (1, 1, ...) into a zeroed buffer one larger in every dimension: the same
    /// values, a storage offset, and strides of the larger buffer.
    Sliced,
}

/// Everything needed to rebuild one tensor bit for bit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorRecipe {
    pub dtype: DType,
    pub shape: Vec<i64>,
    pub fill: Fill,
    /// Seed of libtorch's CPU generator before the fill (`torch.manual_seed`).
    pub seed: u64,
    #[serde(default)]
    pub layout: Layout,
    /// (flat index, value) pairs written after the fill, in order.
    #[serde(default)]
    pub specials: Vec<(u64, Special)>,
}

impl TensorRecipe {
    pub fn numel(&self) -> u64 {
        self.shape.iter().map(|&d| d.max(0) as u64).product()
    }

    /// True when every element is finite (the fills are; a special may not be).
    pub fn is_finite(&self) -> bool {
        let fill_finite = match self.fill {
            Fill::Constant(v) => v.is_finite(),
            Fill::Uniform { lo, hi } => lo.is_finite() && hi.is_finite(),
            Fill::Int { .. } => true,
        };
        fill_finite && self.specials.iter().all(|(_, s)| s.is_finite())
    }
}

/// One concrete argument, in the order the spec declares its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Arg {
    /// An optional parameter given as None.
    None,
    /// A parameter the case leaves out: the op's default applies.
    Omitted,
    Bool(bool),
    Int(i64),
    Float(#[serde(with = "crate::float::one")] f64),
    Str(String),
    Dtype(DType),
    IntList(Vec<i64>),
    FloatList(#[serde(with = "crate::float::list")] Vec<f64>),
    BoolList(Vec<bool>),
    Tensor(TensorRecipe),
    TensorList(Vec<TensorRecipe>),
}

impl Arg {
    /// Tensors reachable from this argument.
    pub fn tensors(&self) -> impl Iterator<Item = &TensorRecipe> {
        let list: &[TensorRecipe] = match self {
            Arg::Tensor(t) => std::slice::from_ref(t),
            Arg::TensorList(ts) => ts,
            _ => &[],
        };
        list.iter()
    }

    /// Tensors reachable from this argument, to change in place.
    pub fn tensors_mut(&mut self) -> impl Iterator<Item = &mut TensorRecipe> {
        let list: &mut [TensorRecipe] = match self {
            Arg::Tensor(t) => std::slice::from_mut(t),
            Arg::TensorList(ts) => ts,
            _ => &mut [],
        };
        list.iter_mut()
    }

    pub fn is_finite(&self) -> bool {
        match self {
            Arg::Float(v) => v.is_finite(),
            Arg::FloatList(vs) => vs.iter().all(|v| v.is_finite()),
            _ => self.tensors().all(TensorRecipe::is_finite),
        }
    }
}

/// One call: which op (an index into the op table the worker loaded) and its arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Case {
    pub op: u32,
    pub args: Vec<Arg>,
    /// For an API with a `from` statement: which arguments its forward's outputs replace, and
    /// what was broken in them on purpose. None for every other case. (Always written: the
    /// worker protocol, postcard, cannot skip a field.)
    #[serde(default)]
    pub forward: Option<Forward>,
}

/// Where one argument of a forward call (`from` statement) comes from, per parameter of the
/// forward API in its declaration order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum FwdArg {
    /// The case's argument at this index (the calling API's parameter).
    Param(usize),
    /// A constant written in the statement.
    Value(Arg),
    /// Not given: the forward's default (None for an optional argument without one).
    Default,
    /// `like(p, shape)`: a fresh tensor built from parameter `p`'s recipe (its dtype, fill and
    /// seed) with this shape, for a forward input the calling API only knows the size of.
    Like { param: usize, shape: Vec<ShapePart> },
}

/// One piece of a `like(p, shape)` shape: an int parameter, an int list parameter spliced in,
/// or a constant; or, for `like(p)`, the shape of tensor parameter `p` itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ShapePart {
    Int(usize),
    List(usize),
    Const(i64),
    Shape(usize),
}

impl ShapePart {
    /// The shape these parts give on a case's arguments; None when one is not an int (list).
    pub fn shape(parts: &[ShapePart], args: &[Arg]) -> Option<Vec<i64>> {
        let mut out = Vec::new();
        for p in parts {
            match p {
                ShapePart::Const(v) => out.push(*v),
                ShapePart::Int(i) => match args.get(*i)? {
                    Arg::Int(v) => out.push(*v),
                    _ => return None,
                },
                ShapePart::List(i) => match args.get(*i)? {
                    Arg::IntList(vs) => out.extend(vs),
                    Arg::Int(v) => out.push(*v),
                    _ => return None,
                },
                ShapePart::Shape(i) => match args.get(*i)? {
                    Arg::Tensor(r) => out.extend(&r.shape),
                    _ => return None,
                },
            }
        }
        Some(out)
    }
}

/// A parameter filled from an output of the forward.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bind {
    /// The calling API's parameter.
    pub param: usize,
    /// The forward's output (flattened index).
    pub output: usize,
    /// `like(result.k)`: a fresh tensor with the output's shape and dtype, drawn from the
    /// parameter's own recipe (fill and seed); otherwise a copy of the output itself.
    pub like: bool,
}

/// Which arguments of a case come from its forward, and the breakage applied to one of them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Forward {
    pub binds: Vec<Bind>,
    #[serde(default)]
    pub broken: Option<Break>,
}

/// A bound argument broken on purpose after the forward (violate mode): the case starts from
/// consistent inputs and differs from them in one known way.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Break {
    /// The bound parameter.
    pub param: usize,
    pub kind: BreakKind,
    /// Chooses the element or dimension: `seed % numel`, `seed % ndim`.
    pub seed: u64,
}

/// The ways a bound argument is broken. "Plane": the elements of the forward's first tensor
/// argument per index of the leading dimensions it shares with the output (H*W for a pooling
/// over (N, C, H, W)), the range a pooling index lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BreakKind {
    /// One element plus the plane size: an index into the next plane.
    PlaneUp,
    /// One element minus the plane size: a valid index becomes negative.
    PlaneDown,
    /// One element plus the forward input's element count: past the whole input.
    Outside,
    /// One dimension one larger.
    DimUp,
    /// One non-empty dimension one smaller.
    DimDown,
    /// The first dimension (the batch) one larger: batch sizes disagree.
    Batch,
    /// The first dimension empty.
    EmptyBatch,
}

impl BreakKind {
    /// What breaks the values of a direct binding (indices, saved statistics).
    pub const VALUES: [BreakKind; 3] = [BreakKind::PlaneUp, BreakKind::PlaneDown, BreakKind::Outside];
    /// What breaks the shape of any binding.
    pub const SHAPES: [BreakKind; 4] = [BreakKind::DimUp, BreakKind::DimDown, BreakKind::Batch, BreakKind::EmptyBatch];

    /// In words, for reports and reproducers.
    pub fn describe(self) -> &'static str {
        match self {
            BreakKind::PlaneUp => "one element plus its plane's size",
            BreakKind::PlaneDown => "one element minus its plane's size (negative)",
            BreakKind::Outside => "one element plus the forward input's element count",
            BreakKind::DimUp => "one dimension one larger",
            BreakKind::DimDown => "one dimension one smaller",
            BreakKind::Batch => "a batch one larger than the forward's",
            BreakKind::EmptyBatch => "an empty batch",
        }
    }

    /// True for the kinds that change values, not the shape.
    pub fn is_value(self) -> bool {
        BreakKind::VALUES.contains(&self)
    }
}

/// The shape a shape breakage gives a tensor of shape `shape`; None when it cannot apply
/// (a 0-d tensor; `DimDown` with every dimension empty).
pub fn broken_shape(kind: BreakKind, seed: u64, shape: &[i64]) -> Option<Vec<i64>> {
    if shape.is_empty() {
        return None;
    }
    let mut s = shape.to_vec();
    match kind {
        BreakKind::DimUp => s[(seed % shape.len() as u64) as usize] += 1,
        BreakKind::DimDown => {
            let nonempty: Vec<usize> = (0..s.len()).filter(|&d| s[d] > 0).collect();
            let d = *nonempty.get((seed % nonempty.len().max(1) as u64) as usize)?;
            s[d] -= 1;
        }
        BreakKind::Batch => s[0] += 1,
        BreakKind::EmptyBatch => s[0] = 0,
        _ => return None,
    }
    Some(s)
}

/// The dimension a `DimUp`/`DimDown` breakage changes (for messages and reproducers).
pub fn broken_dim(kind: BreakKind, seed: u64, shape: &[i64]) -> Option<usize> {
    let before = shape;
    let after = broken_shape(kind, seed, shape)?;
    (0..before.len()).find(|&d| before[d] != after[d])
}

/// The plane size of a forward input of shape `input` for an output of shape `output`: the
/// product of the input's dimensions after the leading ones both share (at least the last).
pub fn plane(input: &[i64], output: &[i64]) -> i64 {
    let mut lead = 0;
    let most = input.len().min(output.len()).saturating_sub(1);
    while lead < most && input[lead] == output[lead] {
        lead += 1;
    }
    input[lead.min(input.len())..].iter().product::<i64>().max(1)
}

impl Case {
    /// True when no argument holds a NaN or an infinity.
    pub fn inputs_finite(&self) -> bool {
        self.args.iter().all(Arg::is_finite)
    }

    /// Total elements over all input tensors.
    pub fn input_elements(&self) -> u64 {
        self.args.iter().flat_map(Arg::tensors).map(TensorRecipe::numel).sum()
    }
}
