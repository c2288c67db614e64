//! Hybrid pipelines (issue 15): secure multi-party fitting joined with differential privacy.
//!
//! - [`secure_plr`]: each server's share of PLR's noise in a secure study (the protocol side
//!   is `privlogit_protocols::secure::release`), and the budget a study publishes under.

pub mod secure_plr;
