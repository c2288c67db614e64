//! Secure studies as an application: a study's settings (a study file, the command line's flags,
//! Python's keywords or a Rust [`Spec`](crate::settings::Spec)) become a validated role, and a
//! role runs with one call. The command line and Python only gather the settings and print.
//!
//! - [`file`]: the study file (settings, parties, study id).
//! - [`plan`]: the protocol-level plan and its checks.
//! - [`nested`]: the nested model of a likelihood-ratio test (`--drop`).
//! - [`party`]: a party's network, identity and roster.
//! - [`roles`]: [`InProcess`], [`Keyholder`], [`Aggregator`], [`Node`].
//! - [`dealer_role`]: [`Dealer`], the optional third server dealing masked products.
//! - [`result`]: what a study reports, as text or JSON.
//! - [`state`]: checkpoints and key files that let a study resume.
//! - [`centre`]: the penalty's public centre (hypothesis transfer).
//!
//! ```no_run
//! use privlogit::settings::{Reader, Spec};
//! use privlogit::study::InProcess;
//!
//! let mut spec = Spec::new(Reader::Study);
//! spec.party = ["a", "b", "c"].iter().map(|h| format!("data/demo/hospital_{h}.csv").into()).collect();
//! spec.label = Some("label".into());
//! spec.standardize = true;
//! let result = InProcess::new(&spec, None)?.run(None)?;
//! println!("{:?}", result.outcome.fit.beta);
//! # Ok::<(), privlogit::error::Error>(())
//! ```

pub mod centre;
pub mod dealer_role;
pub mod file;
pub mod nested;
pub mod party;
pub mod plan;
pub mod result;
pub mod roles;
pub mod sealing;
pub mod state;

pub use dealer_role::Dealer;
pub use file::StudyFile;
pub use result::{Ending, Rendered, StudyResult};
pub use roles::{Aggregator, InProcess, Keyholder, Node, NodeRows};

pub use crate::progress::Say;
