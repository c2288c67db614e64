//! privlogit: privacy-preserving logistic regression across organizations, as a library.
//!
//! It prints nothing and parses no command line (the `privlogit` command, benchmarks, the
//! dissertation's experiments and figures are the `privlogit-cli` crate's). What it holds sits
//! above the protocols ([`privlogit_protocols`], re-exported as [`protocols`]: the optimisers,
//! Paillier, the transport, the secure roles):
//!
//! - settings and the secure study as an application: [`settings`] (every setting, defined
//!   once), [`study`] (study files, plans, parties, roles, results, resumption), [`vertical_study`]
//!   (parties holding columns);
//! - the plaintext fit and what a fit yields: [`fit`], [`model`] (models in raw units),
//!   [`inference`] (the table at the optimum), [`evaluation`] (held-out rows), [`metrics`];
//! - data: [`data`] (CSV, binary tables, Parquet), [`synthetic`] (simulations), [`pca`];
//! - differential privacy: [`dp`] (mechanisms, methods, the accountant and the ledger),
//!   [`dl`] (distributed DP deep learning), [`hybrid`] (secure fitting with a DP release),
//!   [`charge`] (a release's cost charged to the ledger);
//! - what front ends run and how they hear of it: [`jobs`], [`progress`], [`output`] (safe
//!   writes), [`error`].
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

pub mod charge;
pub mod data;
pub mod dl;
pub mod dp;
pub mod error;
pub mod evaluation;
pub mod fit;
pub mod hybrid;
pub mod inference;
pub mod jobs;
pub mod metrics;
pub mod model;
pub mod output;
pub mod pca;
pub mod progress;
pub mod settings;
pub mod study;
pub mod synthetic;
pub mod vertical_study;

pub use privlogit_protocols as protocols;
