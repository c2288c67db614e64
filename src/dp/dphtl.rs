//! Differentially private hypothesis transfer from several sources: DPHTL (dissertation
//! chapter 4, section 4.3, Algorithms 4-5, eq. 4.1-4.2).
//!
//! Each source publishes a DP hypothesis (output perturbation on its labelled rows) and DP
//! importance weights over a public set (DPIW on its unlabelled rows); the target weighs the
//! sources by how well their weights mix into its own (eq. 4.1), builds a Gaussian prior from
//! the weighted hypotheses (eq. 4.2) and fits the MAP logistic regression on its few labels.
//!
//! - [`dpiw`]: Algorithm 5;
//! - [`mixture`]: eq. (4.1), the hypothesis weights, an exact solver of the concave problem;
//! - [`prior`]: eq. (4.2) and the MAP fit;
//! - [`end_to_end`]: Algorithm 4 end to end, and the baselines of section 4.4.3 (WEAK, SOURCE,
//!   AVERAGE, SOFT, TARGET);
//! - [`experiment`]: Figures 4.2-4.5 and Tables 4.2-4.3 in structure, on a substitute setting.
//!
//! Rows are scaled to norm at most 1 (each row by its own norm, a data-independent rule) before
//! anything private touches them: the sensitivities below assume it.

pub mod dpiw;
pub mod end_to_end;
pub mod mixture;
pub mod prior;
