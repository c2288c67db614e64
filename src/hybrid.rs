//! Hybrid pipelines (issue 15): secure multi-party fitting joined with differential privacy.
//!
//! - [`secure_plr`]: each server's share of PLR's noise in a secure study (the protocol side
//!   is `privlogit_protocols::secure::perturbation`), and the budget a study publishes under.

//! - [`stacking_pipeline`]: cross-organization stacking (each organization's DP low-level model,
//!   meta rows from all of them, the high level fitted by a secure PLR study).

//! - [`experiment`]: `dp experiment hybrid`, the pipelines against the secure exact fit and
//!   each organization alone.

pub mod secure_plr;
pub mod stacking_pipeline;
