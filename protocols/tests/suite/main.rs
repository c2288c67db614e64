//! The protocols' integration tests in one test binary, a module per concern: masked
//! arithmetic, Paillier (with its property tests and published vectors), interoperability
//! with python-paillier, and malformed wire input.

mod masked;
mod paillier;
mod phe_interop;
mod wire_fuzz;
