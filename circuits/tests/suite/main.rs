//! The circuits' integration tests in one test binary, a module per concern: garbling against
//! plaintext evaluation, the matrix circuits, and circuits shared between the two servers.

mod garbling;
mod matrix_circuits;
mod shared_circuits;
