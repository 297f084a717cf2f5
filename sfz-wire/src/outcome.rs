//! What one execution produced, as observed by the worker (`Outcome`) or by the supervisor when
//! the worker did not answer (`Execution`). Oracles turn these into verdicts.
use serde::{Deserialize, Serialize};

use crate::case::DType;

/// The class of a libtorch error, as the shim caught it. `Schema` means the arguments did not
/// match the operator's schema (a mistyped call: the spec is wrong, never a libtorch bug).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ErrorClass {
    Schema,
    /// A plain `c10::Error` (TORCH_CHECK, or TORCH_INTERNAL_ASSERT: see the message).
    C10,
    Index,
    Value,
    Type,
    NotImplemented,
    LinAlg,
    OutOfMemory,
    EnforceFinite,
    /// `std::bad_alloc`.
    BadAlloc,
    /// `std::out_of_range`, e.g. an unchecked `vector::at`.
    OutOfRange,
    /// `std::invalid_argument`.
    InvalidArgument,
    /// Any other `std::exception`; the message starts with its mangled type name.
    StdException,
    Unknown,
}

impl ErrorClass {
    /// Maps the shim's integer codes (see `csrc/shim.cpp`).
    pub fn from_code(code: i32) -> ErrorClass {
        match code {
            1 => ErrorClass::Schema,
            2 => ErrorClass::C10,
            3 => ErrorClass::Index,
            4 => ErrorClass::Value,
            5 => ErrorClass::Type,
            6 => ErrorClass::NotImplemented,
            7 => ErrorClass::LinAlg,
            8 => ErrorClass::OutOfMemory,
            9 => ErrorClass::EnforceFinite,
            20 => ErrorClass::BadAlloc,
            21 => ErrorClass::OutOfRange,
            22 => ErrorClass::InvalidArgument,
            23 => ErrorClass::StdException,
            _ => ErrorClass::Unknown,
        }
    }
}

/// One flattened output of a call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Output {
    Tensor(TensorInfo),
    Int(i64),
    Float(f64),
    Bool(bool),
    None,
    /// An output kind sfz does not inspect (a string, a device, ...).
    Other,
}

/// What the worker measured of an output tensor. Values stay in the worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorInfo {
    /// None for dtypes sfz does not generate (quantized, float8, ...).
    pub dtype: Option<DType>,
    pub shape: Vec<i64>,
    /// Elements that are NaN (floating and complex dtypes only).
    pub nan: u64,
    /// Elements that are +inf or -inf.
    pub inf: u64,
    /// Smallest and largest finite real value, when there is one.
    #[serde(default)]
    pub min: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
}

/// The worker's report of one case it ran to completion.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Outcome {
    Returned { outputs: Vec<Output>, micros: u32 },
    Raised { class: ErrorClass, message: String, micros: u32 },
}

/// Human name of a signal number ("SIGSEGV").
pub fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGFPE => "SIGFPE".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGILL => "SIGILL".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGTRAP => "SIGTRAP".into(),
        libc::SIGSYS => "SIGSYS".into(),
        other => format!("signal {other}"),
    }
}
