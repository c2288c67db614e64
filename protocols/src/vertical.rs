//! Vertically partitioned studies: organisations that hold different columns about the same
//! people (docs/src/guide/vertical.md).
//!
//! - [`psi`]: which rows the parties share, and in which common order, without anyone learning
//!   an identifier outside the intersection (server-aided private set intersection).
//! - [`sealed`]: a 32-byte secret from one party to another through a relay that cannot read it
//!   (X25519 and an HMAC-checked one-time pad), how the PSI key reaches every party.
//! - [`ring`]: shares modulo 2^128, fixed-point scales, seeded streams.
//! - [`block`]: a party's columns over the shared rows, standardised by the party itself.
//! - [`deal`]: a party's masked columns and Beaver products, dealt before the fit.
//! - [`shares`]: what each server holds and the products it computes on it.

pub mod block;
pub mod deal;
pub mod psi;
pub mod ring;
pub mod sealed;
pub mod shares;
