//! When an optimiser stops: the contract between the optimisers and the backends that test
//! convergence on their (possibly secret) sums.

/// When to stop iterating. Any satisfied criterion stops the fit as converged.
#[derive(Debug, Clone, PartialEq)]
pub struct StoppingRule {
    /// Stop when `|l_k - l_{k-1}| / |l_{k-1}|` of the penalised objective falls below this
    /// (dissertation section 5.4 uses 1e-6). Zero disables the criterion.
    pub relative_tolerance: f64,
    /// Stop when the Euclidean norm of the penalised gradient falls below this.
    pub gradient_tolerance: Option<f64>,
    /// Give up (status `MaxIterations`) after this many updates.
    pub max_iterations: usize,
}

impl Default for StoppingRule {
    fn default() -> Self {
        Self {
            relative_tolerance: 1e-6,
            gradient_tolerance: None,
            max_iterations: 1000,
        }
    }
}
