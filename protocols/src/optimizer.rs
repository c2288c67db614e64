//! The optimisers of l2-regularised logistic regression (dissertation eq. 2.10), each written
//! once against [`Aggregation`] so the plaintext and the secure runs execute the same updates:
//!
//! - [`Optimizer::Newton`]: `beta <- beta - H(beta)^{-1} g(beta)` (eq. 2.11-2.13), the baseline;
//! - [`Optimizer::PrivLogit`]: `beta <- beta - H~^{-1} g(beta)` with the constant bound
//!   `H~ = -1/4 X^T X - lambda I` factored once (eq. 5.3-5.6, Proposition 1);
//! - [`Optimizer::AcceleratedPrivLogit`]: Anderson extrapolation of the PrivLogit map with a
//!   monotone safeguard ([`privlogit`] module docs), and Newton's finish where the bound makes
//!   it crawl ([`finish`]).
//!
//! [`Aggregation`]: crate::aggregation::Aggregation

mod anderson;
pub mod finish;
mod fit_entry;
mod fit_state;
mod newton;
mod options;
mod privlogit;
mod recession;
mod report;
pub mod separation_probe;
mod trace;
mod update_rule;

pub use crate::stopping::StoppingRule;
pub use fit_state::{Checkpoints, Progress, SaveProgress};
pub use options::{FitError, FitOptions, Initial};
pub use privlogit::ACCEPTANCE_SLACK;
pub use report::{DivergenceReason, FitReport, IterationRecord, Status, StepKind};
pub use update_rule::{DEFAULT_ANDERSON_MEMORY, Optimizer};
