//! What a front end runs besides fits and studies: each job takes its settings, checks them,
//! charges the privacy ledger where it releases, runs, and returns what to print. The
//! mechanisms they drive ([`crate::dp`], [`crate::dl`], [`crate::hybrid`]) know nothing of
//! jobs, files or the application's [`Error`](crate::error::Error).
//!
//! - [`dp_fit`]: `dp fit` (one call for every single-target DP method, its cost beside its model);
//! - [`stacking_job`]: the stacking pipeline's stages (`stack publish`, `meta`, `run`);
//! - [`prediction`]: a model file applied to a data file's rows.

pub mod dp_fit;
pub mod prediction;
pub mod stacking_job;
