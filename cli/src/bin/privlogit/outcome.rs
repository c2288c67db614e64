//! How a command that did not fail outright ended: every command returns it and `main` maps
//! it to an exit status, so it lives below both.

/// How a command that did not fail outright ended.
pub enum Outcome {
    Success,
    Diverged,
}
