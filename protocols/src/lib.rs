//! Logistic-regression optimisers written once over an aggregation backend, and the secure
//! two-server protocols built on them.
//!
//! - [`objective`]: what one Node computes on its own rows (dissertation eq. 2.9, 2.12, 2.13,
//!   5.5): log-likelihood, gradient, Hessian and the constant Hessian bound.
//! - [`aggregation`]: the [`Aggregation`] trait, i.e. how the Center forms sums of the Nodes'
//!   contributions and acts on them, and its plaintext implementation.
//! - [`optimizer`]: Newton (eq. 2.11), PrivLogit (eq. 5.4-5.6) and accelerated PrivLogit, each
//!   written once against [`Aggregation`] so a secure backend runs the very same update code.
//! - [`stopping`]: when an optimiser stops (the rule both sides of [`Aggregation`] read).
//! - [`compensated`]: partition-independent sums of the Nodes' row terms.
//! - [`rows`]: where a Node's rows come from, read chunk by chunk (memory, files, simulations).
//! - [`cholesky`]: the small dense Cholesky factorisation and triangular solves they need.
//! - [`paillier`]: the additively homomorphic encryption of the Nodes' sums.
//! - [`secret_file`]: reading key files only when no one but their owner can.
//! - [`secure`]: the Node, aggregator and key-holder roles of PrivLogit-Hessian and -Local.
//! - [`transport`]: TCP channels (tokio moves the bytes; the roles stay synchronous).

pub mod aggregation;
pub mod cholesky;
pub mod compensated;
pub mod disclosure;
pub mod evaluation_sums;
pub mod objective;
pub mod optimizer;
pub mod paillier;
pub mod penalty;
pub mod rows;
pub mod secret_file;
pub mod secure;
pub mod stopping;
pub mod transport;
pub mod vertical;

pub use aggregation::{Aggregation, PlaintextAggregation};
pub use objective::{Family, Glm, PartyData};
pub use optimizer::{
    Checkpoints, DivergenceReason, FitError, FitOptions, FitReport, Initial, IterationRecord,
    Optimizer, Progress, Status, StepKind, StoppingRule,
};
