//! privlogit: privacy-preserving logistic regression across organizations.
//!
//! This crate holds what sits above the protocols: data loading and partitioning
//! ([`data`]), simulated data ([`synthetic`]), metrics ([`metrics`]), the plaintext
//! distributed fit pipeline ([`fit`]), fitted models in raw units ([`model`]), safe result writing ([`output`]) and figures
//! ([`figures`], SVG and PNG through plotters), differential privacy ([`dp`]) and the pipelines
//! that join it with secure fitting ([`hybrid`]). The optimisers and
//! the aggregation backends live in [`privlogit_protocols`], re-exported as [`protocols`].
//!
//! ```no_run
//! use privlogit::data::{self, LoadOptions, partition};
//! use privlogit::fit::{self, Preparation};
//! use privlogit::protocols::{FitOptions, Optimizer};
//!
//! let table = data::load("data/demo/hospital_a.csv".as_ref(), &LoadOptions::new("label"))?;
//! let parties = partition::split_contiguous(&table.data, 3)?;
//! let prepared = fit::prepare(parties, Preparation { standardize: true, intercept: true })?;
//! let fitted = fit::fit(&prepared, Optimizer::PrivLogit, &FitOptions::new().lambda(1.0), &mut |_| {})?;
//! println!("{:?} after {} iterations", fitted.report.beta, fitted.report.iterations);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod bench;
pub mod charge;
pub mod data;
pub mod dl;
pub mod dp;
pub mod error;
pub mod evaluation;
pub mod experiments;
pub mod figures;
pub mod fit;
pub mod hybrid;
pub mod inference;
pub mod jobs;
pub mod metrics;
pub mod model;
pub mod output;
pub mod pca;
pub mod progress;
pub mod reproduce;
pub mod settings;
pub mod study;
pub mod synthetic;
pub mod vertical;

pub use privlogit_protocols as protocols;
