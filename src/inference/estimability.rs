//! Designs an unpenalised fit cannot estimate: collinear columns (the information `X^T A X` is
//! singular for every coefficient vector, as `X^T X` is) and separated classes (the likelihood
//! has no maximum: coefficients run off to infinity). Both are refused with the columns or the
//! separation named, before any model is written.

use ndarray::{Array1, Array2};

/// A design that has no unique maximum-likelihood estimate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DesignError {
    /// A column that is zero in every row.
    #[error(
        "column {column:?} is zero in every row: its coefficient cannot be estimated without a \
         penalty (remove it, or fit with setting `lambda` > 0)"
    )]
    ZeroColumn {
        /// The column.
        column: String,
    },
    /// A column that is a linear combination of earlier ones.
    #[error(
        "the design is singular: column {column:?} is a linear combination of {with} \
         (collinear columns; remove one, or fit with setting `lambda` > 0)",
        with = quoted(.with)
    )]
    Collinear {
        /// The column found dependent (the later one in the model's order).
        column: String,
        /// The earlier columns it is a combination of.
        with: Vec<String>,
    },
    /// Complete separation: the final coefficients classify every row correctly.
    #[error(
        "the classes are completely separated: with the final coefficients every one of the {rows} \
         rows is on its label's side, so the likelihood has no maximum and the coefficients run off to infinity (largest |coefficient| \
         {largest:.3e}, on {column:?}); fit with setting `lambda` > 0, or remove the separating columns"
    )]
    Separated {
        /// Rows.
        rows: usize,
        /// The largest coefficient in absolute value.
        largest: f64,
        /// Its name.
        column: String,
    },
}

fn quoted(names: &[String]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    match q.len() {
        0 => "nothing".into(),
        1 => q[0].clone(),
        _ => format!("{} and {}", q[..q.len() - 1].join(", "), q[q.len() - 1]),
    }
}

/// A column whose residual, after regressing it on the earlier independent columns, keeps less
/// than this share of its sum of squares counts as dependent (R^2 > 1 - 1e-10: a condition
/// number of `X` past about 1e5 relative to its column scales). Exactly collinear columns land
/// near 1e-16; real data far above.
pub const DEPENDENCE_TOLERANCE: f64 = 1e-10;

/// Checks the Gram matrix `X^T X` (any positive multiple of it) of the columns `names` for
/// zero and collinear columns, in the model's order: the first column found dependent on
/// earlier ones is named with the earlier columns it combines.
pub fn check_gram(gram: &Array2<f64>, names: &[String]) -> Result<(), DesignError> {
    let d = gram.nrows();
    let name = |j: usize| names.get(j).cloned().unwrap_or_else(|| format!("#{j}"));
    for j in 0..d {
        if gram[[j, j]] <= 0.0 {
            return Err(DesignError::ZeroColumn { column: name(j) });
        }
    }
    // The correlation-like scaling makes the test independent of the columns' units.
    let scale: Array1<f64> = gram.diag().mapv(f64::sqrt);
    let c = |i: usize, j: usize| gram[[i, j]] / (scale[i] * scale[j]);
    // Rows of the Cholesky factor of the kept columns, over the kept set.
    let mut kept: Vec<usize> = Vec::new();
    let mut factor: Vec<Vec<f64>> = Vec::new();
    for j in 0..d {
        // Forward substitution: w = L^-1 C[kept, j].
        let mut w = Vec::with_capacity(kept.len());
        for (r, &i) in kept.iter().enumerate() {
            let s: f64 = (0..r).map(|t| factor[r][t] * w[t]).sum();
            w.push((c(i, j) - s) / factor[r][r]);
        }
        let pivot = c(j, j) - w.iter().map(|x| x * x).sum::<f64>();
        if pivot < DEPENDENCE_TOLERANCE {
            // The regression coefficients a = L^-T w name the columns it combines.
            let mut a = vec![0.0; kept.len()];
            for r in (0..kept.len()).rev() {
                let s: f64 = (r + 1..kept.len()).map(|t| factor[t][r] * a[t]).sum();
                a[r] = (w[r] - s) / factor[r][r];
            }
            let largest = a.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
            let with = kept
                .iter()
                .zip(&a)
                .filter(|(_, x)| x.abs() > 1e-6 * largest)
                .map(|(&i, _)| name(i))
                .collect();
            return Err(DesignError::Collinear {
                column: name(j),
                with,
            });
        }
        let mut row = w;
        row.push(pivot.sqrt());
        factor.push(row);
        kept.push(j);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn names(k: usize) -> Vec<String> {
        (0..k).map(|j| format!("x{j}")).collect()
    }

    #[test]
    fn names_the_combination() {
        // x2 = 2 x0 - x1 exactly; x3 independent.
        let x = array![
            [1.0, 0.0, 2.0, 1.0],
            [1.0, 1.0, 1.0, 0.0],
            [1.0, 2.0, 0.0, 3.0],
            [1.0, 5.0, -3.0, 1.0],
            [1.0, -1.0, 3.0, 2.0],
        ];
        let err = check_gram(&x.t().dot(&x), &names(4)).expect_err("collinear");
        assert_eq!(
            err,
            DesignError::Collinear {
                column: "x2".into(),
                with: vec!["x0".into(), "x1".into()]
            }
        );
        assert!(
            err.to_string()
                .contains("\"x2\" is a linear combination of \"x0\" and \"x1\"")
        );
    }

    #[test]
    fn zero_and_constant_columns() {
        let x = array![[1.0, 0.0, 3.0], [1.0, 0.0, 3.0], [1.0, 0.0, 3.0]];
        assert_eq!(
            check_gram(&x.t().dot(&x), &names(3)),
            Err(DesignError::ZeroColumn {
                column: "x1".into()
            })
        );
        let x = array![[1.0, 3.0, 1.0], [1.0, 3.0, 2.0], [1.0, 3.0, 4.0]];
        assert!(matches!(
            check_gram(&x.t().dot(&x), &names(3)),
            Err(DesignError::Collinear { column, with }) if column == "x1" && with == ["x0"]
        ));
    }

    #[test]
    fn independent_columns_pass_whatever_their_scale() {
        let x = array![
            [1.0, 1e-6, 1e6],
            [1.0, 2e-6, 3e6],
            [1.0, 5e-6, 2e6],
            [1.0, 4e-6, 7e6]
        ];
        assert_eq!(check_gram(&x.t().dot(&x), &names(3)), Ok(()));
    }
}
