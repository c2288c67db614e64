//! What one Node computes on its own rows: the local terms of the l2-regularised logistic
//! log-likelihood (dissertation eq. 2.9-2.13) and of the PrivLogit Hessian bound (eq. 5.5).
//!
//! The penalty terms (`-lambda/2 ||beta||^2`, `-lambda beta`, `-lambda I`) are not local: the
//! Center adds them once to the sums (eq. 5.6), so every quantity here is a plain sum over rows.
//! Each row's gradient and log-likelihood term is computed from that row alone and added into a
//! [`CompensatedSum`]; the `p x p` sums (`X^T X / 4`, `X^T A X`) are formed block by block by
//! matrix products (lower triangle only) and each block's product is added into compensated
//! accumulators. Blocks are fixed runs of rows ([`crate::rows::blocks`]) merged in order, so a
//! Node's sums do not depend on how its source chunks the rows, and the Center merges the Nodes'
//! accumulators the same way, so the totals depend on the partition among Nodes only through the
//! rounding inside one block's product.
//!
//! The rows come from a [`RowSource`]: in memory, or streamed from a file or a simulation, so a
//! Node holds one chunk and `p^2` accumulators, never its whole data.
//!
//! [`CompensatedSum`]: crate::compensated::CompensatedSum
//! [`RowSource`]: crate::rows::RowSource

mod family;
mod gram;
mod kernels;
mod party_data;
pub mod row_kernel;
mod row_terms;

pub use family::{Family, Glm};
pub use gram::unpack_lower;
pub use party_data::PartyData;
pub use row_kernel::{CONSTANT_SUMS, RowJob, RowKernel};
pub use row_terms::{dot, log_likelihood_term, sigmoid, softplus};
