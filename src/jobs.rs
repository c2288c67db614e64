//! What a front end runs besides fits and studies: each job takes its settings, checks them,
//! charges the privacy ledger where it releases, runs, and returns what to print. The
//! mechanisms they drive ([`crate::dp`], [`crate::dl`], [`crate::hybrid`]) know nothing of
//! jobs, files or the application's [`Error`](crate::error::Error).
//!
//! - [`dp`]: `dp fit` (one call for every single-target DP method, its cost beside its model);
//! - [`stacking`]: the stacking pipeline's stages (`stack publish`, `meta`, `run`);
//! - [`predict`]: a model file applied to a data file's rows.

pub mod dp;
pub mod predict;
pub mod stacking;
