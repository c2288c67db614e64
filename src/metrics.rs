//! Model quality: log-likelihood (dissertation eq. 2.9), ROC AUC and accuracy.

use ndarray::{Array1, ArrayView1, ArrayView2};
use privlogit_protocols::compensated::CompensatedSum;
use privlogit_protocols::objective::{log_likelihood_term, sigmoid};

/// Log-likelihood `sum_i y_i z_i - log(1 + e^{z_i})` of coefficients `beta` (eq. 2.9), summed
/// with compensation like the optimisers' sums.
pub fn log_likelihood(x: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>, beta: &Array1<f64>) -> f64 {
    let mut sum = CompensatedSum::zeros(1);
    for (z, &y) in x.dot(beta).iter().zip(y.iter()) {
        sum.add(0, log_likelihood_term(*z, y));
    }
    sum.values()[0]
}

/// Predicted probabilities `sigmoid(x^T beta)`.
pub fn predict(x: ArrayView2<'_, f64>, beta: &Array1<f64>) -> Array1<f64> {
    x.dot(beta).mapv(sigmoid)
}

/// Area under the ROC curve by the Mann-Whitney statistic, ties counted as one half.
/// `None` when only one class is present.
pub fn auc(scores: ArrayView1<'_, f64>, labels: ArrayView1<'_, f64>) -> Option<f64> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let positives = labels.iter().filter(|&&l| l == 1.0).count() as f64;
    let negatives = labels.len() as f64 - positives;
    if positives == 0.0 || negatives == 0.0 {
        return None;
    }
    // Sum of the (1-based, tie-averaged) ranks of the positives.
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && scores[order[j + 1]] == scores[order[i]] {
            j += 1;
        }
        let average_rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            if labels[k] == 1.0 {
                rank_sum += average_rank;
            }
        }
        i = j + 1;
    }
    Some((rank_sum - positives * (positives + 1.0) / 2.0) / (positives * negatives))
}

/// Fraction of rows whose probability falls on the right side of 0.5 (0.5 predicts 1).
pub fn accuracy(probabilities: ArrayView1<'_, f64>, labels: ArrayView1<'_, f64>) -> f64 {
    let correct = probabilities
        .iter()
        .zip(labels.iter())
        .filter(|&(&p, &y)| (p >= 0.5) == (y == 1.0))
        .count();
    correct as f64 / labels.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    /// sklearn.metrics.roc_auc_score([0,0,1,1,1,0], [0.1,0.4,0.35,0.8,0.4,0.2]) = 0.8333333333333334
    #[test]
    fn auc_matches_sklearn_with_ties() {
        let labels = array![0.0, 0.0, 1.0, 1.0, 1.0, 0.0];
        let scores = array![0.1, 0.4, 0.35, 0.8, 0.4, 0.2];
        let a = auc(scores.view(), labels.view()).expect("both classes");
        assert!((a - 0.8333333333333334).abs() < 1e-15, "{a}");
        assert!(auc(scores.view(), array![1.0, 1.0, 1.0, 1.0, 1.0, 1.0].view()).is_none());
    }

    #[test]
    fn accuracy_counts_threshold() {
        let p = array![0.9, 0.5, 0.2, 0.6];
        let y = array![1.0, 1.0, 1.0, 0.0];
        assert_eq!(accuracy(p.view(), y.view()), 0.5);
    }
}
