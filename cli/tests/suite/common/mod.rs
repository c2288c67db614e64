//! Helpers of the command line's integration tests: the library's test helpers
//! (`tests/common` at the repository's root) and the ones that run `privlogit` processes.
#![allow(dead_code, unused_imports)]

#[path = "../../../../tests/common/mod.rs"]
mod library;

pub use library::*;

pub mod deployment;
pub mod process;

/// The largest absolute difference of two vectors of the same length (coefficients against a
/// reference).
pub fn largest_difference(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}
