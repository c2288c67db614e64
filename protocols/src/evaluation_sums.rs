//! A logistic model's measures on held-out rows, as sums a Node computes on its own test rows
//! and the Center adds up: the row and positive counts, the log-loss, the correct predictions,
//! the Brier score, and per calibration bin its rows, observed positives and expected positives.
//! Every measure but the AUC is a mean of such sums, so the pooled figures need only the pooled
//! sums (the AUC ranks rows across Nodes: [`scores`] are what a secure study ranks, in
//! [`crate::secure::ranking`]).
//!
//! The calibration bins are fixed: ten of width 0.1 on the predicted probability (Hosmer and
//! Lemeshow's "fixed deciles of risk" grouping, their `H` statistic; Applied Logistic
//! Regression, 2nd ed., sec. 5.2.2). Bins by quantiles of the pooled risk (their `C` statistic)
//! would need the pooled ranking, as the AUC does.

use ndarray::Array1;

use crate::compensated::CompensatedSum;
use crate::objective::{PartyData, dot, sigmoid, softplus};
use crate::rows::RowsError;

/// Calibration bins on the predicted probability.
pub const BINS: usize = 10;

/// Sums per Node: rows, positives, log-loss, correct, Brier, then per bin rows, observed,
/// expected.
pub const SUMS: usize = 5 + 3 * BINS;

/// The bin of a predicted probability: `floor(10 p)`, with `p = 1` in the last bin.
pub fn bin_of(p: f64) -> usize {
    ((p * BINS as f64) as usize).min(BINS - 1)
}

/// The evaluation sums of `party`'s rows at coefficients `beta` (a logistic model; an offset
/// is added to the linear predictor, weights are ignored: held-out rows count once each).
/// A row is predicted positive when its probability is at least 1/2. The log-loss of a row is
/// `softplus(-z)` for a positive and `softplus(z)` for a negative, exact for any `z` (scikit-
/// learn clips probabilities at machine epsilon, which differs only beyond `|z| > 36`).
pub fn sums(party: &PartyData, beta: &Array1<f64>) -> Result<[f64; SUMS], RowsError> {
    let glm = party.glm();
    let p = party.columns();
    let width = party.source().columns();
    let beta = beta.as_slice().expect("contiguous coefficients");
    let mut acc = CompensatedSum::zeros(SUMS);
    party.source().scan(&mut |x, y| {
        let xs = x.to_slice().expect("standard layout");
        for (row, &label) in xs.chunks_exact(width.max(1)).zip(y) {
            let (offset, _) = glm.offset_and_weight(row, p);
            let z = dot(&row[..p], beta) + offset;
            let prob = sigmoid(z);
            let positive = label == 1.0;
            acc.add(0, 1.0);
            acc.add(1, label);
            acc.add(2, if positive { softplus(-z) } else { softplus(z) });
            acc.add(3, f64::from(u8::from((prob >= 0.5) == positive)));
            acc.add(4, (prob - label) * (prob - label));
            let b = 5 + 3 * bin_of(prob);
            acc.add(b, 1.0);
            acc.add(b + 1, label);
            acc.add(b + 2, prob);
        }
        Ok(())
    })?;
    let mut out = [0.0; SUMS];
    out.copy_from_slice(&acc.values());
    Ok(out)
}

/// The predicted probability and label of each of `party`'s rows at `beta` (the scores an AUC
/// ranks), computed as [`sums`] computes them.
pub fn scores(party: &PartyData, beta: &Array1<f64>) -> Result<Vec<(f64, bool)>, RowsError> {
    let glm = party.glm();
    let p = party.columns();
    let width = party.source().columns();
    let beta = beta.as_slice().expect("contiguous coefficients");
    let mut out = Vec::new();
    party.source().scan(&mut |x, y| {
        let xs = x.to_slice().expect("standard layout");
        for (row, &label) in xs.chunks_exact(width.max(1)).zip(y) {
            let (offset, _) = glm.offset_and_weight(row, p);
            out.push((sigmoid(dot(&row[..p], beta) + offset), label == 1.0));
        }
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn sums_by_hand() {
        // z = 0 (p = 1/2, predicted positive) for a positive; z = -ln 3 (p = 1/4) for a negative.
        let party = PartyData::new(array![[0.0], [-(3f64.ln())]], array![1.0, 0.0]);
        let s = sums(&party, &array![1.0]).expect("in memory");
        assert_eq!(&s[..2], &[2.0, 1.0]);
        let log_loss = 2f64.ln() + (4.0f64 / 3.0).ln();
        assert!((s[2] - log_loss).abs() < 1e-15);
        assert_eq!(s[3], 2.0);
        assert!((s[4] - (0.25 + 0.0625)).abs() < 1e-15);
        // p = 1/2 in bin 5, p = 1/4 in bin 2.
        assert_eq!(&s[5 + 3 * 5..5 + 3 * 5 + 3], &[1.0, 1.0, 0.5]);
        assert_eq!(&s[5 + 3 * 2..5 + 3 * 2 + 2], &[1.0, 0.0]);
        assert_eq!(bin_of(1.0), BINS - 1);
    }
}
