//! What an error raised only on the CUDA side of the `cuda` oracle means. Three kinds are no
//! CPU-vs-CUDA bug and are counted apart from findings: an operator with no CUDA kernel, a
//! device's own way with invalid values (a singular matrix holding NaN raises on CUDA where the
//! CPU returns NaN), and an argument check only one side makes (the spec allows an input one
//! side rejects: a spec finding). What is left (internal asserts, escaped C++ exceptions) is
//! judged as any variant's failure.
use serde::Serialize;

use super::errors::{classify, ErrorKind};
use crate::wire::outcome::ErrorClass;

/// Why only the CUDA side raised, when that is no bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceError {
    /// No CUDA kernel for the operator ("Could not run 'aten::X' with arguments from the
    /// 'CUDA' backend") or for its dtype: a gap in coverage, not a disagreement.
    MissingKernel,
    /// A linear-algebra routine on the device refused the input's values (singular, not
    /// positive-definite, no convergence): device-specific behaviour on invalid values.
    InvalidValues,
    /// An argument check the CUDA side makes and the CPU does not, for an input the spec
    /// allows: listed as a spec finding.
    Argument,
}

/// How an error `message` of class `class`, raised by the CUDA side only, is counted; None when
/// it may be a bug (an internal assert, an escaped exception) and is judged as a finding.
pub fn classify_cuda_only(class: ErrorClass, message: &str) -> Option<DeviceError> {
    let first = message.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    // No kernel at all, or none for this dtype ("addmm_cuda" not implemented for 'Long').
    if (first.contains("Could not run '") && first.contains("from the 'CUDA' backend")) || first.contains("not implemented for '") {
        return Some(DeviceError::MissingKernel);
    }
    match classify(class, message) {
        ErrorKind::Argument if class == ErrorClass::LinAlg || INVALID_VALUES.iter().any(|w| first.contains(w)) => Some(DeviceError::InvalidValues),
        ErrorKind::Argument | ErrorKind::Schema => Some(DeviceError::Argument),
        _ => None,
    }
}

/// Words of libtorch's linear-algebra errors about the values rather than the arguments.
const INVALID_VALUES: &[&str] = &["singular", "not positive-definite", "failed to converge", "ill-conditioned"];

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages as libtorch words them (CUDA runs of the hand-written specs, issue 21).
    #[test]
    fn recorded_cuda_only_errors_are_classified() {
        let cases: &[(ErrorClass, &str, Option<DeviceError>)] = &[
            (
                ErrorClass::NotImplemented,
                "Could not run 'aten::_foo' with arguments from the 'CUDA' backend. This could be because the operator doesn't exist for this backend, or was omitted during the selective/custom build process (if using custom build).\n'aten::_foo' is only available for these backends: [CPU, Meta].",
                Some(DeviceError::MissingKernel),
            ),
            (
                ErrorClass::LinAlg,
                "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed because the input matrix is singular.",
                Some(DeviceError::InvalidValues),
            ),
            (
                ErrorClass::C10,
                "torch.linalg.cholesky: The factorization could not be completed because the input is not positive-definite (the leading minor of order 1 is not positive-definite).",
                Some(DeviceError::InvalidValues),
            ),
            (ErrorClass::Value, "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!", Some(DeviceError::Argument)),
            (ErrorClass::C10, "\"addmm_cuda\" not implemented for 'Long'", Some(DeviceError::MissingKernel)),
            (ErrorClass::C10, "INTERNAL ASSERT FAILED at \"/pytorch/aten/src/ATen/native/cuda/Foo.cu\":42, please report a bug to PyTorch.", None),
            (ErrorClass::OutOfRange, "St12out_of_range: vector::_M_range_check", None),
        ];
        for (class, message, expected) in cases {
            assert_eq!(classify_cuda_only(*class, message), *expected, "{message}");
        }
    }
}
