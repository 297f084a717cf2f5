//! What torch's operator tags (and a list of BLAS and LAPACK operators) say about an operator,
//! read from data written by scripts/extract_op_tags.py (sfz never loads libtorch in the parent).

use std::collections::HashSet;
use std::sync::LazyLock;

/// How closely an operator's floating results may be held to the float64 reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpClass {
    /// Tagged `pointwise` (`sin`, `lgamma`, `add`).
    Pointwise,
    /// A BLAS or LAPACK operator (`mm`, `linalg_inv`, `qr`).
    BlasLapack,
    /// Anything else (reductions, normalizations, scans).
    Other,
}

/// The class of ATen operator `name` (`aten::sin` or `sin`) in torch 2.13.0.
pub fn class(name: &str) -> OpClass {
    let name = name.strip_prefix("aten::").unwrap_or(name);
    static POINTWISE: LazyLock<HashSet<&'static str>> = LazyLock::new(|| names(include_str!("../../data/pointwise_ops.txt")));
    static BLAS_LAPACK: LazyLock<HashSet<&'static str>> = LazyLock::new(|| names(include_str!("../../data/blas_lapack_ops.txt")));
    if POINTWISE.contains(name) {
        OpClass::Pointwise
    } else if BLAS_LAPACK.contains(name) {
        OpClass::BlasLapack
    } else {
        OpClass::Other
    }
}

/// The outputs of operator `name` that its math does not determine, only up to the sign or
/// phase of each column or the order of the values: the singular vectors of an SVD, the
/// eigenvectors and (of a general matrix) the eigenvalues of an eigendecomposition, the factors
/// and pivots of a pivoted LU or LDL factorization. Two correct
/// computations (float32 and float64 LAPACK) may return different ones, so no reference judges
/// them element by element.
pub fn not_unique(name: &str) -> &'static [usize] {
    match name.strip_prefix("aten::").unwrap_or(name) {
        "svd" | "linalg_svd" | "_linalg_svd" => &[0, 2],
        "linalg_eig" | "_linalg_eig" => &[0, 1],
        "linalg_eigvals" | "_linalg_eigvals" => &[0],
        "linalg_eigh" | "_linalg_eigh" => &[1],
        // LU with partial pivoting: where two candidate pivots are (nearly) tied, each
        // precision's rounding picks its own row, and the factors and pivots differ throughout.
        "linalg_lu_factor" | "linalg_lu_factor_ex" | "_lu_with_info" | "linalg_ldl_factor" | "linalg_ldl_factor_ex" => &[0, 1],
        "linalg_lu" => &[0, 1, 2],
        "_linalg_det" => &[1, 2],
        "_linalg_slogdet" => &[2, 3],
        "_linalg_solve_ex" => &[1, 2],
        _ => &[],
    }
}

/// Whether operator `name`'s gradient is documented only where its input matrices have full
/// rank in their first min(m, n) columns (`torch.linalg.qr`: "If this condition is not met, no
/// error will be thrown, but the gradient produced will be incorrect"): no reference judges it
/// at a rank-deficient matrix.
pub fn full_rank_gradient(name: &str) -> bool {
    matches!(name.strip_prefix("aten::").unwrap_or(name), "linalg_qr" | "qr")
}

/// Whether operator `name` sums its inputs with coefficients of every sign or phase, so that
/// the same call on the inputs' magnitudes bounds its terms only at its largest element: the
/// discrete Fourier transforms (`fft(|x|)` is `sum |x|` at frequency 0 and may vanish at the
/// others, where `fft(x)` still rounds terms of that size).
pub fn mixes_phases(name: &str) -> bool {
    let name = name.strip_prefix("aten::").unwrap_or(name);
    name.starts_with("fft_") || name.starts_with("_fft_") || matches!(name, "stft" | "istft")
}

/// Whether operator `name` interpolates: each output element is its input's elements near it
/// times weights computed from coordinates (bicubic's are signed). A weight's rounding is
/// absolute, about `u` whatever the weight, so an element's error is `u` times its
/// neighbours' magnitudes, not times the weighted sum the magnitudes call gives (a weight of
/// -0.01 on a large neighbour).
pub fn interpolates(name: &str) -> bool {
    let name = name.strip_prefix("aten::").unwrap_or(name);
    name.contains("upsample_") || name.starts_with("grid_sampler") || name.starts_with("_grid_sampler")
}

/// Whether operator `name` reads its input's strides by definition (`as_strided_scatter`
/// writes through `input.as_strided(size, stride)`): the same values in another memory layout
/// are another input, for its values and its derivatives.
pub fn reads_strides(name: &str) -> bool {
    name.strip_prefix("aten::").unwrap_or(name).contains("as_strided")
}

/// Which tensor input of operator `name` (counted among its tensor arguments) has the gamma
/// function's poles at the non-positive integers: there the value is infinite or undefined, and
/// past 2^52 every float64 is an integer whose reflection formula (`pi / tan(pi x)`) rounds to
/// any number at all, so no reference can judge an element that input makes a pole.
pub fn gamma_poles(name: &str) -> Option<usize> {
    match name.strip_prefix("aten::").unwrap_or(name) {
        "lgamma" | "lgamma_" | "digamma" | "digamma_" | "polygamma" | "polygamma_" | "special_digamma" | "special_psi" | "special_gammaln" | "special_polygamma" => Some(0),
        // Hurwitz's zeta(x, q) has them in q.
        "special_zeta" => Some(1),
        _ => None,
    }
}

/// Whether operator `name` evaluates an orthogonal polynomial of degree `n` (its second
/// argument) by the three-term recurrence: each step rounds, and the recurrence amplifies
/// earlier roundings, so an honest result holds about `n^2` roundings of its terms, not the
/// few of a pointwise function. `name` is an ATen name (`aten::special_hermite_polynomial_h`,
/// `torch.ops.aten.special_...`) or the Python one (`torch.special.hermite_polynomial_h`).
pub fn degree_recurrence(name: &str) -> bool {
    if let Some(python) = name.strip_prefix("torch.special.") {
        return python.contains("_polynomial_");
    }
    let name = name.strip_prefix("aten::").or_else(|| name.strip_prefix("torch.ops.aten.")).unwrap_or(name);
    name.starts_with("special_") && name.contains("_polynomial_")
}

/// Whether argument `arg` of operator `name` is a polynomial's degree (`n` of
/// `hermite_polynomial_he(x, n)`): a float tensor the kernel truncates to an integer, so that
/// scaling it by `1 - 2^-12` drops the degree by one instead of moving along a smooth curve.
pub fn integer_degree(name: &str, arg: &str) -> bool {
    degree_recurrence(name) && arg == "n"
}

/// Whether operator `name`'s `eps` left None is documented as the machine epsilon of its
/// computation type (`rms_norm`): a float64 reference must be given the original's, not its own.
pub fn eps_defaults_to_dtype_epsilon(name: &str) -> bool {
    matches!(name.strip_prefix("aten::").unwrap_or(name), "rms_norm" | "_fused_rms_norm")
}

fn names(text: &'static str) -> HashSet<&'static str> {
    text.lines().filter(|l| !l.starts_with('#')).collect()
}

#[cfg(test)]
mod tests {
    use super::{class, not_unique, OpClass};

    #[test]
    fn the_gamma_familys_poles_are_in_its_argument() {
        assert_eq!(super::gamma_poles("aten::polygamma"), Some(0));
        assert_eq!(super::gamma_poles("special_zeta"), Some(1));
        assert_eq!(super::gamma_poles("exp"), None);
    }

    #[test]
    fn a_polynomials_recurrence_is_known_by_its_aten_and_its_python_name() {
        use super::degree_recurrence;
        for name in ["aten::special_hermite_polynomial_h", "special_legendre_polynomial_p", "torch.ops.aten.special_laguerre_polynomial_l", "torch.special.chebyshev_polynomial_t"]
        {
            assert!(degree_recurrence(name), "{name}");
        }
        for name in ["aten::sin", "torch.special.i0", "torch.polynomial_thing", "torch.special.erf"] {
            assert!(!degree_recurrence(name), "{name}");
        }
    }

    #[test]
    fn fourier_transforms_mix_phases_and_sums_do_not() {
        assert!(super::mixes_phases("aten::fft_rfft2") && super::mixes_phases("_fft_c2c") && super::mixes_phases("stft"));
        assert!(!super::mixes_phases("aten::sum") && !super::mixes_phases("fftshift_like"));
    }

    #[test]
    fn singular_vectors_and_eigenvectors_are_not_unique_but_singular_values_are() {
        assert_eq!(not_unique("aten::svd"), [0, 2]);
        assert_eq!(not_unique("linalg_eigh"), [1]);
        assert!(not_unique("linalg_svdvals").is_empty());
        assert!(not_unique("linalg_eigvalsh").is_empty());
        // A determinant is unique; the LU factors it was computed from are not.
        assert_eq!(not_unique("aten::_linalg_det"), [1, 2]);
    }

    #[test]
    fn operators_fall_in_the_classes_their_kernels_promise() {
        for op in ["sin", "tan", "exp", "lgamma", "hypot", "add", "special_i0e"] {
            assert_eq!(class(op), OpClass::Pointwise, "{op}");
        }
        for op in ["aten::linalg_inv", "linalg_inv", "inverse", "qr", "geqrf", "mm", "matmul", "conv2d", "linalg_eigvalsh", "matrix_exp_backward", "convolution_backward"] {
            assert_eq!(class(op), OpClass::BlasLapack, "{op}");
        }
        for op in ["sum", "var", "linalg_vector_norm", "linalg_matrix_norm", "softmax", "layer_norm", "cumsum", "# aten operators"] {
            assert_eq!(class(op), OpClass::Other, "{op}");
        }
    }
}
