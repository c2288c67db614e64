//! Disclosure controls: the minimum counts below which a Node refuses to take part and a
//! published figure is suppressed, with DataSHIELD's defaults (`nfilter.subset = 3`,
//! `nfilter.glm = 0.33`, `nfilter.tab = 3`), which data-access committees already know.
//!
//! A Node checks its own counts ([`Disclosure::check_node`]) before it sends anything computed
//! from its rows, so a refusal tells the others one bit (the Node is under a threshold) and no
//! count. As in DataSHIELD, a class or cell count of 0 is allowed (a clinic with no positive
//! case discloses nobody); one between 1 and `min_cell - 1` is refused.

use crate::rows::{RowSource, RowsError};

/// The thresholds a study runs under (shared: every party's study file carries the same).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Disclosure {
    /// Fewest training rows a Node takes part with (DataSHIELD's `nfilter.subset`); the same
    /// for its held-out rows when the study evaluates.
    pub min_rows: u64,
    /// Most coefficients per training row of a Node (`nfilter.glm`): `p <= share x N_k`, the
    /// intercept counted.
    pub max_parameter_share: f64,
    /// Fewest rows of a class at a Node (a binary label's positives and negatives, training and
    /// held-out) and in a published cell (a calibration bin, a class behind the AUC)
    /// (`nfilter.tab`). Counts of 0 pass.
    pub min_cell: u64,
    /// With two Nodes, publish more than the coefficients (standardisation, standard errors,
    /// likelihoods, held-out figures): each Node then learns the other's sums by subtracting
    /// its own, so it takes an explicit choice.
    pub two_nodes: bool,
}

impl Default for Disclosure {
    fn default() -> Self {
        Self::DATASHIELD
    }
}

impl Disclosure {
    /// DataSHIELD's defaults.
    pub const DATASHIELD: Self = Self {
        min_rows: 3,
        max_parameter_share: 0.33,
        min_cell: 3,
        two_nodes: false,
    };

    /// No thresholds (tests of the arithmetic on tiny data, simulations).
    pub const OFF: Self = Self {
        min_rows: 1,
        max_parameter_share: f64::INFINITY,
        min_cell: 0,
        two_nodes: true,
    };

    /// Why a Node with these counts must not take part (`None`: it may). `classes` are its
    /// training labels' (negatives, positives) for a binary model; `parameters` the study's
    /// coefficients; `held_out` its held-out rows and their classes when the study evaluates.
    /// The reason names the threshold, never the count.
    pub fn check_node(
        &self,
        rows: u64,
        classes: Option<[u64; 2]>,
        parameters: usize,
        held_out: Option<(u64, Option<[u64; 2]>)>,
    ) -> Option<String> {
        if rows < self.min_rows {
            return Some(format!(
                "it holds fewer than {} training rows (min_rows, DataSHIELD's nfilter.subset)",
                self.min_rows
            ));
        }
        if parameters as f64 > self.max_parameter_share * rows as f64 {
            return Some(format!(
                "the study's {parameters} coefficients exceed {} of its training rows \
                 (max_parameter_share, DataSHIELD's nfilter.glm)",
                self.max_parameter_share
            ));
        }
        if let Some(why) = self.small_class(classes, "training") {
            return Some(why);
        }
        if let Some((held, classes)) = held_out {
            if held < self.min_rows {
                return Some(format!(
                    "it holds fewer than {} held-out rows (min_rows)",
                    self.min_rows
                ));
            }
            if let Some(why) = self.small_class(classes, "held-out") {
                return Some(why);
            }
        }
        None
    }

    fn small_class(&self, classes: Option<[u64; 2]>, rows: &str) -> Option<String> {
        let [negatives, positives] = classes?;
        [("negative", negatives), ("positive", positives)]
            .into_iter()
            .find(|&(_, n)| self.small(n))
            .map(|(class, _)| {
                format!(
                    "its {rows} rows hold between 1 and {} {class} labels (min_cell, \
                     DataSHIELD's nfilter.tab)",
                    self.min_cell.saturating_sub(1)
                )
            })
    }

    /// A count that must not be published on its own (between 1 and `min_cell - 1`).
    pub fn small(&self, count: u64) -> bool {
        count > 0 && count < self.min_cell
    }

    /// Why a study with `parties` Nodes must not publish `what` (`None`: it may).
    pub fn check_two_nodes(&self, parties: usize, what: &str) -> Option<String> {
        (parties == 2 && !self.two_nodes).then(|| {
            format!(
                "with two Nodes, {what} would let each Node learn the other's sums by \
                 subtracting its own: to publish it, every party's study file says \
                 two_node_disclosure = true (setting `two_node_disclosure` in one process, \
                 two_node_disclosure=True from Python)"
            )
        })
    }
}

/// A binary label's (negatives, positives) in `rows`, in one pass.
pub fn class_counts(rows: &dyn RowSource) -> Result<[u64; 2], RowsError> {
    let job = crate::objective::RowJob::new(
        crate::objective::Glm::logistic(),
        crate::objective::RowKernel::Classes,
    );
    let counts = job.fold(rows)?.values();
    Ok([counts[0] as u64, counts[1] as u64])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datashield_thresholds() {
        let d = Disclosure::DATASHIELD;
        // nfilter.subset: 2 rows refused, 3 pass (with few enough parameters).
        assert!(d.check_node(2, None, 0, None).is_some());
        assert!(d.check_node(3, None, 0, None).is_none());
        // nfilter.glm: p = 5 needs N_k >= 5 / 0.33 = 15.2, so 16.
        assert!(d.check_node(15, None, 5, None).is_some());
        assert!(d.check_node(16, None, 5, None).is_none());
        // nfilter.tab: classes of 1 or 2 refused, 0 and 3 pass.
        assert!(d.check_node(100, Some([99, 1]), 2, None).is_some());
        assert!(d.check_node(100, Some([2, 98]), 2, None).is_some());
        assert!(d.check_node(100, Some([100, 0]), 2, None).is_none());
        assert!(d.check_node(100, Some([97, 3]), 2, None).is_none());
        // Held-out rows: 1 refused; classes as for training.
        assert!(d.check_node(100, None, 2, Some((1, None))).is_some());
        assert!(
            d.check_node(100, None, 2, Some((3, Some([3, 0]))))
                .is_none()
        );
        assert!(
            d.check_node(100, None, 2, Some((4, Some([3, 1]))))
                .is_some()
        );
        // The reason names the threshold, not the count.
        let why = d.check_node(2, None, 0, None).expect("refused");
        assert!(
            why.contains("fewer than 3") && !why.contains(" 2 "),
            "{why}"
        );
        assert!(
            Disclosure::OFF
                .check_node(1, Some([0, 1]), 30, Some((1, Some([1, 0]))))
                .is_none()
        );
    }

    #[test]
    fn two_nodes_need_a_choice() {
        let d = Disclosure::DATASHIELD;
        assert!(d.check_two_nodes(2, "x").is_some());
        assert!(d.check_two_nodes(3, "x").is_none());
        assert!(d.check_two_nodes(1, "x").is_none());
        let allowed = Disclosure {
            two_nodes: true,
            ..d
        };
        assert!(allowed.check_two_nodes(2, "x").is_none());
    }
}
