//! A logistic model's figures on held-out rows, from the pooled sums of
//! [`privlogit_protocols::evaluation_sums::sums`]: the log-loss, accuracy and Brier score as
//! scikit-learn's `log_loss`, `accuracy_score` (predicted positive at probability >= 1/2) and
//! `brier_score_loss` define them, a calibration table over ten fixed bins of predicted risk with
//! the Hosmer-Lemeshow statistic on it, and the AUC (pooled in the clear by a fit; ranked in a
//! garbled circuit by a secure study, `privlogit_protocols::secure::ranking`).

use privlogit_protocols::evaluation_sums::{BINS, SUMS};
use privlogit_protocols::rows::RowsError;
use privlogit_protocols::{PartyData, evaluation_sums};
use serde::{Deserialize, Serialize};
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// The figures a fit or a study reports on its held-out rows (JSON names: the issue's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// Held-out rows.
    pub test_n: u64,
    /// Area under the ROC curve (ties count one half), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_auc: Option<f64>,
    /// Mean log-loss.
    pub test_log_loss: f64,
    /// Share predicted right at threshold 1/2.
    pub test_accuracy: f64,
    /// Mean squared difference of probability and label.
    pub test_brier: f64,
    /// Observed against expected positives by bin of predicted risk.
    pub calibration: Calibration,
    /// What the disclosure controls held back or merged ([`Evaluation::disclosed`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suppressed: Vec<String>,
}

/// The calibration table and the Hosmer-Lemeshow test on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The ten bins `[k/10, (k+1)/10)` (the last one closed), empty ones included, or
    /// adjacent ones merged under the disclosure controls.
    pub bins: Vec<Bin>,
    /// `sum (O - E)^2 / (E (1 - E/n))` over the bins with rows and `0 < E < n`.
    pub hosmer_lemeshow: f64,
    /// Those bins less 2.
    pub df: usize,
    /// Upper tail of the chi-square law with `df` degrees of freedom (`None` when `df` is 0).
    pub p_value: Option<f64>,
}

impl Calibration {
    /// The table over `bins`, with the Hosmer-Lemeshow statistic over those with rows and
    /// `0 < E < n`, on their count less 2 degrees of freedom.
    fn of(bins: Vec<Bin>) -> Self {
        let mut statistic = 0.0;
        let mut used = 0;
        for b in &bins {
            let bn = b.n as f64;
            if b.n > 0 && b.expected > 0.0 && b.expected < bn {
                let d = b.observed as f64 - b.expected;
                statistic += d * d / (b.expected * (1.0 - b.expected / bn));
                used += 1;
            }
        }
        let df = usize::saturating_sub(used, 2);
        let p_value = ChiSquared::new(df as f64)
            .ok()
            .filter(|_| df > 0)
            .map(|law| law.sf(statistic));
        Self {
            bins,
            hosmer_lemeshow: statistic,
            df,
            p_value,
        }
    }
}

/// One bin of predicted risk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bin {
    /// Lower end of the predicted probability.
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// Rows predicted in the bin.
    pub n: u64,
    /// Of them labelled 1.
    pub observed: u64,
    /// The sum of their predicted probabilities.
    pub expected: f64,
}

impl Evaluation {
    /// The figures from the pooled sums (counts rounded: a study's sums carry fixed-point
    /// rounding) and the AUC when known. `None` without held-out rows.
    pub fn from_sums(sums: &[f64], auc: Option<f64>) -> Option<Self> {
        assert_eq!(sums.len(), SUMS, "evaluation sums");
        let count = |v: f64| v.round().max(0.0) as u64;
        let n = count(sums[0]);
        if n == 0 {
            return None;
        }
        let nf = n as f64;
        let bins: Vec<Bin> = (0..BINS)
            .map(|k| Bin {
                low: k as f64 / BINS as f64,
                high: (k + 1) as f64 / BINS as f64,
                n: count(sums[5 + 3 * k]),
                observed: count(sums[6 + 3 * k]),
                expected: sums[7 + 3 * k],
            })
            .collect();
        Some(Evaluation {
            test_n: n,
            test_auc: auc,
            test_log_loss: sums[2] / nf,
            test_accuracy: count(sums[3]) as f64 / nf,
            test_brier: sums[4] / nf,
            calibration: Calibration::of(bins),
            suppressed: Vec::new(),
        })
    }

    /// The figures as they may be published under the cell threshold `min_cell` (DataSHIELD's
    /// `nfilter.tab`): the AUC left out when a class holds 1 to `min_cell - 1` rows, and
    /// adjacent calibration bins merged until each published bin's rows, positives and
    /// negatives are 0 or at least `min_cell` (the table left out when no merging gets
    /// there). What was held back is said in `suppressed`.
    pub fn disclosed(mut self, min_cell: u64) -> Self {
        let small = |n: u64| n > 0 && n < min_cell;
        let positives: u64 = self.calibration.bins.iter().map(|b| b.observed).sum();
        let negatives = self.test_n.saturating_sub(positives);
        if self.test_auc.is_some() && (small(positives) || small(negatives)) {
            self.test_auc = None;
            self.suppressed.push(format!(
                "AUC: a class holds fewer than {min_cell} held-out rows (min_cell)"
            ));
        }
        let fine = |b: &Bin| !small(b.n) && !small(b.observed) && !small(b.n - b.observed);
        if self.calibration.bins.iter().all(fine) {
            return self;
        }
        let mut merged: Vec<Bin> = Vec::new();
        let mut open: Option<Bin> = None;
        for bin in self.calibration.bins.iter().filter(|b| b.n > 0) {
            let group = match open.take() {
                None => bin.clone(),
                Some(g) => Bin {
                    low: g.low,
                    high: bin.high,
                    n: g.n + bin.n,
                    observed: g.observed + bin.observed,
                    expected: g.expected + bin.expected,
                },
            };
            if fine(&group) {
                merged.push(group);
            } else {
                open = Some(group);
            }
        }
        if let Some(rest) = open {
            match merged.pop() {
                Some(last) => merged.push(Bin {
                    low: last.low,
                    high: rest.high,
                    n: last.n + rest.n,
                    observed: last.observed + rest.observed,
                    expected: last.expected + rest.expected,
                }),
                None => merged.push(rest),
            }
        }
        if merged.iter().all(fine) {
            self.suppressed.push(format!(
                "calibration: bins merged so that each holds 0 or at least {min_cell} rows of \
                 each class (min_cell)"
            ));
            self.calibration = Calibration::of(merged);
        } else {
            self.suppressed.push(format!(
                "calibration: left out, as no merging of bins holds at least {min_cell} rows of \
                 each class (min_cell)"
            ));
            self.calibration = Calibration::of(Vec::new());
        }
        self
    }

    /// The figures of `beta` on `parties`' rows in the clear, AUC included (the plaintext fit).
    pub fn of_parties(
        parties: &[PartyData],
        beta: &ndarray::Array1<f64>,
    ) -> Result<Option<Self>, RowsError> {
        let mut total = [0.0; SUMS];
        let mut scores = Vec::new();
        let mut labels = Vec::new();
        for party in parties {
            let s = evaluation_sums::sums(party, beta)?;
            total.iter_mut().zip(s).for_each(|(t, v)| *t += v);
            for (score, label) in evaluation_sums::scores(party, beta)? {
                scores.push(score);
                labels.push(f64::from(u8::from(label)));
            }
        }
        let auc = crate::metrics::auc(
            ndarray::ArrayView1::from(&scores),
            ndarray::ArrayView1::from(&labels),
        );
        Ok(Self::from_sums(&total, auc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under min_cell 3: bins (n, observed) (1,0) (4,1) (6,3) (0,0) (5,5) (3,0) merge left to
    /// right into groups whose rows, positives and negatives are each 0 or >= 3: (1,0)+(4,1)
    /// = (5,1) is not, + (6,3) = (11,4) is; (5,5) is; (3,0) is. Hosmer-Lemeshow by hand on
    /// the three merged bins; the AUC, over 9 positives and 10 negatives, stays.
    #[test]
    fn small_cells_merge_and_a_small_class_withholds_the_auc() {
        let mut s = [0.0; SUMS];
        let bins = [
            (1, 0, 0.05),
            (4, 1, 0.6),
            (6, 3, 2.7),
            (0, 0, 0.0),
            (5, 5, 3.9),
            (3, 0, 0.2),
        ];
        for (k, (n, o, e)) in bins.iter().enumerate() {
            s[5 + 3 * k..8 + 3 * k].copy_from_slice(&[f64::from(*n), f64::from(*o), *e]);
        }
        s[0] = 19.0;
        let e = Evaluation::from_sums(&s, Some(0.8))
            .expect("rows")
            .disclosed(3);
        let merged: Vec<(f64, f64, u64, u64)> = e
            .calibration
            .bins
            .iter()
            .map(|b| (b.low, b.high, b.n, b.observed))
            .collect();
        assert_eq!(
            merged,
            vec![(0.0, 0.3, 11, 4), (0.4, 0.5, 5, 5), (0.5, 0.6, 3, 0)]
        );
        // (4 - 3.35)^2 / (3.35 (1 - 3.35/11)) + (5 - 3.9)^2 / (3.9 (1 - 3.9/5)) + (0 - 0.2)^2
        // / (0.2 (1 - 0.2/3)), df 1.
        let h = 0.65f64.powi(2) / (3.35 * (1.0 - 3.35 / 11.0))
            + 1.1f64.powi(2) / (3.9 * (1.0 - 3.9 / 5.0))
            + 0.04 / (0.2 * (1.0 - 0.2 / 3.0));
        assert!((e.calibration.hosmer_lemeshow - h).abs() < 1e-12);
        assert_eq!(e.calibration.df, 1);
        assert_eq!(e.test_auc, Some(0.8));
        assert_eq!(e.suppressed.len(), 1);
        // One positive in 19 rows: the AUC is withheld; one bin of 2 rows alone: no merging
        // reaches 3, so the table is left out.
        let mut s = [0.0; SUMS];
        s[0] = 2.0;
        s[5..8].copy_from_slice(&[2.0, 1.0, 0.9]);
        let e = Evaluation::from_sums(&s, Some(1.0))
            .expect("rows")
            .disclosed(3);
        assert_eq!(e.test_auc, None);
        assert!(e.calibration.bins.is_empty());
        assert_eq!(e.suppressed.len(), 2);
        // min_cell 0 changes nothing.
        let e0 = Evaluation::from_sums(&s, Some(1.0)).expect("rows");
        assert_eq!(e0.clone().disclosed(0), e0);
    }

    /// Hosmer-Lemeshow by hand: two bins used, so df 0 and no p-value; counts round.
    #[test]
    fn figures_from_sums() {
        let mut s = [0.0; SUMS];
        s[0] = 4.0000001;
        s[2] = 2.0;
        s[3] = 2.9999999;
        s[4] = 0.5;
        // bin 2: 2 rows, 1 positive, expected 0.5; bin 8: 2 rows, 2 positives, expected 1.6.
        s[5 + 6..5 + 9].copy_from_slice(&[2.0, 1.0, 0.5]);
        s[5 + 24..5 + 27].copy_from_slice(&[2.0, 2.0, 1.6]);
        let e = Evaluation::from_sums(&s, None).expect("rows");
        assert_eq!(e.test_n, 4);
        assert_eq!(e.test_accuracy, 0.75);
        assert_eq!(e.test_log_loss, 0.5);
        let h = 0.25 / (0.5 * 0.75) + 0.16 / (1.6 * 0.2);
        assert!((e.calibration.hosmer_lemeshow - h).abs() < 1e-12);
        assert_eq!((e.calibration.df, e.calibration.p_value), (0, None));
        assert_eq!(Evaluation::from_sums(&[0.0; SUMS], None), None);
    }
}
