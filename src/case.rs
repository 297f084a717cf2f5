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
    Value(f64),
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
    Float(f64),
    Str(String),
    Dtype(DType),
    IntList(Vec<i64>),
    FloatList(Vec<f64>),
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
