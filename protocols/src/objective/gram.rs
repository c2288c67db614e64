//! The `p x p` block products a Node sums (`X^T W X`, lower triangle packed by rows) and their
//! unpacking: matrix code kept apart from the row kernels that call it.

#[cfg(not(feature = "faer"))]
use ndarray::linalg::general_mat_mul;
#[cfg(not(feature = "faer"))]
use ndarray::s;
use ndarray::{Array2, ArrayView2};

/// `lower_gram` of the first `p` columns of a block (copied into standard layout only when
/// trailing offset or weight columns follow them).
pub(super) fn design_gram(
    x: ArrayView2<'_, f64>,
    p: usize,
    weights: Option<&[f64]>,
    scale: f64,
) -> Vec<f64> {
    if x.ncols() == p {
        lower_gram(x, weights, scale)
    } else {
        let design = x
            .slice(ndarray::s![.., ..p])
            .as_standard_layout()
            .into_owned();
        lower_gram(design.view(), weights, scale)
    }
}

/// Columns of the result formed per matrix product in [`lower_gram`]: the lower triangle is
/// built panel by panel, each panel a product over its rows only, so the work is about half a
/// full `X^T X` (plus a panel's width).
#[cfg(not(feature = "faer"))]
const GRAM_PANEL: usize = 64;

/// The lower triangle, packed by rows, of `scale * X^T W X` for a block `x` (rows in standard
/// layout) and `W = diag(weights)` (identity if `None`), single-threaded (the blocks run in
/// parallel): for each panel of rows `i0..i1` of the result, one matrix product
/// `X[:, i0..i1]^T (W X)[:, ..i1]` (ndarray's, over matrixmultiply's kernels).
#[cfg(not(feature = "faer"))]
pub(super) fn lower_gram(x: ArrayView2<'_, f64>, weights: Option<&[f64]>, scale: f64) -> Vec<f64> {
    let p = x.ncols();
    let weighted;
    let rhs = match weights {
        Some(w) => {
            let mut wx = x.to_owned();
            for (mut row, &wi) in wx.rows_mut().into_iter().zip(w) {
                row *= wi;
            }
            weighted = wx;
            weighted.view()
        }
        None => x,
    };
    let mut product = Array2::<f64>::zeros((p, p));
    for i0 in (0..p).step_by(GRAM_PANEL) {
        let i1 = (i0 + GRAM_PANEL).min(p);
        general_mat_mul(
            scale,
            &x.slice(s![.., i0..i1]).t(),
            &rhs.slice(s![.., ..i1]),
            0.0,
            &mut product.slice_mut(s![i0..i1, ..i1]),
        );
    }
    let mut packed = Vec::with_capacity(p * (p + 1) / 2);
    for j in 0..p {
        packed.extend((0..=j).map(|i| product[(j, i)]));
    }
    packed
}

#[cfg(feature = "faer")]
/// [`lower_gram`] by faer's triangular matrix product (the `faer` feature: about 1.5x faster
/// at p = 400 on AVX-512 machines, the same sums up to rounding; off by default for build
/// time).
pub(super) fn lower_gram(x: ArrayView2<'_, f64>, weights: Option<&[f64]>, scale: f64) -> Vec<f64> {
    let (n, p) = x.dim();
    let xs = x.to_slice().expect("standard layout");
    let xt = MatRef::from_column_major_slice(xs, p, n);
    let weighted: Vec<f64>;
    let rhs = match weights {
        Some(w) => {
            weighted = xs
                .chunks_exact(p)
                .zip(w)
                .flat_map(|(row, &wi)| row.iter().map(move |v| wi * v))
                .collect();
            MatRef::from_row_major_slice(&weighted, n, p)
        }
        None => MatRef::from_row_major_slice(xs, n, p),
    };
    use faer::linalg::matmul::triangular::{BlockStructure, matmul};
    use faer::{Accum, Mat, MatRef, Par};
    let mut product = Mat::<f64>::zeros(p, p);
    matmul(
        product.as_mut(),
        BlockStructure::TriangularLower,
        Accum::Replace,
        xt,
        BlockStructure::Rectangular,
        rhs,
        BlockStructure::Rectangular,
        scale,
        Par::Seq,
    );
    let mut packed = Vec::with_capacity(p * (p + 1) / 2);
    for j in 0..p {
        packed.extend((0..=j).map(|i| product[(j, i)]));
    }
    packed
}

/// A symmetric p x p matrix from its lower triangle packed by rows.
pub fn unpack_lower(packed: &[f64], p: usize) -> Array2<f64> {
    assert_eq!(packed.len(), p * (p + 1) / 2, "packed length");
    let mut m = Array2::zeros((p, p));
    let mut k = 0;
    for j in 0..p {
        for i in 0..=j {
            m[(j, i)] = packed[k];
            m[(i, j)] = packed[k];
            k += 1;
        }
    }
    m
}
