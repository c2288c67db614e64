//! Helpers of the command line's integration tests: the library's test helpers
//! (`tests/common` at the repository's root) and the ones that run `privlogit` processes.
#![allow(dead_code, unused_imports)]

#[path = "../../../../tests/common/mod.rs"]
mod library;

pub use library::*;

pub mod deployment;
pub mod process;
