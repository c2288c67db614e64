//! The aggregator's state in a vertical study and the slack its objectives carry: what the
//! aggregator itself holds and reads, kept apart from the vertical rounds that fill it.

use std::ops::Range;

use crate::vertical::shares::ServerShares;

/// The accelerated safeguard's slack per row in a vertical study: two objectives, each within
/// the circuit's [`ERROR_BOUND`](privlogit_circuits::logistic::ERROR_BOUND) per row, so their
/// difference within twice that; doubled again for margin (3.7e-9).
pub(super) const OBJECTIVE_SLACK: f64 = 4.0 * privlogit_circuits::logistic::ERROR_BOUND;

/// The aggregator's state in a vertical study.
pub struct Vertical {
    pub(super) shares: ServerShares,
    pub(super) columns: Vec<Range<usize>>,
    pub(super) next_round: u64,
    /// Rounds the parties dealt, and Newton rounds among them.
    pub(super) dealt: (u64, u64),
}
