//! The per-row loop of the gradient, compiled three times (AVX-512, AVX2 and portable) and
//! picked at run time, so the element-wise TwoSum updates run eight or four wide. No operation
//! is fused or reordered by the wider paths (Rust never contracts `a * b + c`), so all three give
//! the same bits.
#![allow(unsafe_code)]

use ndarray::{ArrayView1, ArrayView2};

use super::row_terms::{dot, log_likelihood_term, sigmoid};
use crate::compensated::CompensatedSum;

/// Compensated sums of `x_i (y_i - sigmoid(x_i beta))` (entries `0..p`) and of the rows'
/// log-likelihood terms (entry `p`) over one block of rows in standard layout.
pub fn gradient_block(
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    beta: &[f64],
) -> CompensatedSum {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the feature the function is compiled for was detected above.
            return unsafe { gradient_avx512(x, y, beta) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { gradient_avx2(x, y, beta) };
        }
    }
    gradient_rows(x, y, beta)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn gradient_avx512(x: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>, beta: &[f64]) -> CompensatedSum {
    gradient_rows(x, y, beta)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn gradient_avx2(x: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>, beta: &[f64]) -> CompensatedSum {
    gradient_rows(x, y, beta)
}

#[inline(always)]
fn gradient_rows(x: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>, beta: &[f64]) -> CompensatedSum {
    let p = x.ncols();
    let mut acc = CompensatedSum::zeros(p + 1);
    let xs = x.to_slice().expect("standard layout");
    for (row, &label) in xs.chunks_exact(p.max(1)).zip(y) {
        let z = dot(row, beta);
        acc.add_scaled(0, row, label - sigmoid(z));
        acc.add(p, log_likelihood_term(z, label));
    }
    acc
}
