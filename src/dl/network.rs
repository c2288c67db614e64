//! The network of dissertation section 3.4.2: fully connected, two hidden layers (50 and 20
//! units), a two-class softmax output trained by cross-entropy. On the paper's 264 features it
//! has 14,312 weights and biases, the count the section states (the count fixes the output at
//! two softmax units: one sigmoid unit would give 14,291).
//!
//! Hand-written forward and backward passes rather than a tensor crate (candle, burn):
//! Algorithm 2 clips every example's gradient coordinate by coordinate (eq. 3.3), so it needs
//! per-example gradients, which those crates give only by one backward pass per example, each
//! paying their graph and dispatch overhead on a network of three small dense layers. Here an
//! example's gradient is one pass over the weights in `f64`, and the tests check it against
//! finite differences and a numpy reference.
//!
//! The paper leaves the hidden activation unnamed; ReLU is used. Its "initialized to 0" would
//! make the hidden units identical (and ReLU units dead), so weights start Glorot-uniform
//! (`U(-a, a)`, `a = sqrt(6 / (fan_in + fan_out))`) from the server's generator, biases at 0.

use ndarray::{ArrayView1, ArrayView2};
use rand::{Rng, RngExt};

use super::{DlError, SettingReason};
use crate::metrics;

/// The hidden layers of section 3.4.2.
pub const PAPER_HIDDEN: [usize; 2] = [50, 20];

/// Output units (two-class softmax).
pub const OUTPUTS: usize = 2;

/// Most parameters a network may have (2^27, about 1 GB of `f64`): sizes come from the wire
/// (a participant's join, the server's welcome), and uploads index parameters in 31 bits.
pub const MAX_PARAMETERS: usize = 1 << 27;

/// A fully connected ReLU network with a two-class softmax output. Parameters are one flat
/// vector (the paper's `W in R^d`): per layer, the weights row by row (one row per output
/// unit), then the biases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Network {
    sizes: Vec<usize>,
}

/// Buffers for one example's pass, reused across examples.
#[derive(Debug, Clone)]
pub struct Workspace {
    activations: Vec<Vec<f64>>,
    deltas: Vec<Vec<f64>>,
}

/// Loss and AUC of parameters on labelled rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evaluation {
    /// Mean cross-entropy.
    pub loss: f64,
    /// Area under the ROC curve (`None` when the rows hold one class only).
    pub auc: Option<f64>,
}

impl Network {
    /// `inputs` features, then the `hidden` layer widths, then the two outputs.
    pub fn new(inputs: usize, hidden: &[usize]) -> Result<Self, DlError> {
        if inputs == 0 {
            return Err(DlError::setting(
                "inputs",
                inputs,
                "a network needs features",
            ));
        }
        if let Some(w) = hidden.iter().find(|&&w| w == 0) {
            return Err(DlError::setting("hidden width", *w, "must be at least 1"));
        }
        let mut sizes = vec![inputs];
        sizes.extend_from_slice(hidden);
        sizes.push(OUTPUTS);
        let count = sizes.windows(2).try_fold(0usize, |total, w| {
            w[0].checked_add(1)
                .and_then(|fan_in| fan_in.checked_mul(w[1]))
                .and_then(|layer| total.checked_add(layer))
        });
        match count {
            Some(c) if c <= MAX_PARAMETERS => Ok(Self { sizes }),
            _ => Err(DlError::setting(
                "network",
                sizes,
                SettingReason::TooManyParameters {
                    most: MAX_PARAMETERS,
                },
            )),
        }
    }

    /// The paper's network on `inputs` features.
    pub fn paper(inputs: usize) -> Result<Self, DlError> {
        Self::new(inputs, &PAPER_HIDDEN)
    }

    /// Layer widths, inputs first and outputs last.
    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    /// Features it reads.
    pub fn inputs(&self) -> usize {
        self.sizes[0]
    }

    /// Weights and biases.
    pub fn parameter_count(&self) -> usize {
        self.sizes.windows(2).map(|w| w[1] * (w[0] + 1)).sum()
    }

    /// Parameters after the first layer's (the layers that read hidden units): the sparse
    /// Gaussian mechanism uploads them every visit when they fit.
    pub fn head_parameters(&self) -> usize {
        self.parameter_count() - self.sizes[1] * (self.sizes[0] + 1)
    }

    /// Glorot-uniform weights and zero biases (see the module).
    pub fn initial_parameters<R: Rng + ?Sized>(&self, rng: &mut R) -> Vec<f64> {
        let mut params = Vec::with_capacity(self.parameter_count());
        for w in self.sizes.windows(2) {
            let (fan_in, fan_out) = (w[0], w[1]);
            let a = (6.0 / (fan_in + fan_out) as f64).sqrt();
            params.extend((0..fan_in * fan_out).map(|_| rng.random_range(-a..a)));
            params.extend(std::iter::repeat_n(0.0, fan_out));
        }
        params
    }

    /// Fresh buffers for [`Network::gradient`].
    pub fn workspace(&self) -> Workspace {
        Workspace {
            activations: self.sizes.iter().map(|&s| vec![0.0; s]).collect(),
            deltas: self.sizes.iter().map(|&s| vec![0.0; s]).collect(),
        }
    }

    /// Checks a parameter vector's length.
    pub fn check_parameters(&self, params: &[f64]) -> Result<(), DlError> {
        if params.len() == self.parameter_count() {
            Ok(())
        } else {
            Err(DlError::setting(
                "parameters",
                params.len(),
                SettingReason::ParameterCount {
                    sizes: self.sizes.clone(),
                    count: self.parameter_count(),
                },
            ))
        }
    }

    /// Forward pass; the logits end up in the last activation buffer.
    fn forward(&self, params: &[f64], x: &[f64], work: &mut Workspace) {
        debug_assert_eq!(x.len(), self.inputs());
        work.activations[0].copy_from_slice(x);
        let mut offset = 0;
        let layers = self.sizes.len() - 1;
        for l in 0..layers {
            let (fan_in, fan_out) = (self.sizes[l], self.sizes[l + 1]);
            let weights = &params[offset..offset + fan_in * fan_out];
            let biases = &params[offset + fan_in * fan_out..offset + fan_out * (fan_in + 1)];
            offset += fan_out * (fan_in + 1);
            let (before, after) = work.activations.split_at_mut(l + 1);
            let input = &before[l];
            for (j, out) in after[0].iter_mut().enumerate() {
                let row = &weights[j * fan_in..(j + 1) * fan_in];
                let z = biases[j] + dot(row, input);
                *out = if l + 1 < layers { z.max(0.0) } else { z };
            }
        }
    }

    /// The probability of class 1 for one example.
    pub fn positive_probability(&self, params: &[f64], x: &[f64], work: &mut Workspace) -> f64 {
        self.forward(params, x, work);
        let z = &work.activations[self.sizes.len() - 1];
        // softmax(z)_1 = 1 / (1 + exp(z0 - z1)).
        1.0 / (1.0 + (z[0] - z[1]).exp())
    }

    /// One example's cross-entropy loss, and its gradient written into `grad` (overwritten).
    pub fn gradient(
        &self,
        params: &[f64],
        x: &[f64],
        label: bool,
        grad: &mut [f64],
        work: &mut Workspace,
    ) -> f64 {
        self.forward(params, x, work);
        let layers = self.sizes.len() - 1;
        let z = &work.activations[layers];
        let target = usize::from(label);
        // Log-sum-exp for a stable loss: -log softmax(z)_y.
        let top = z[0].max(z[1]);
        let lse = top + ((z[0] - top).exp() + (z[1] - top).exp()).ln();
        let loss = lse - z[target];
        // d loss / d z = softmax(z) - onehot(y).
        for (k, (delta, &zk)) in work.deltas[layers].iter_mut().zip(z).enumerate() {
            *delta = (zk - lse).exp() - if k == target { 1.0 } else { 0.0 };
        }
        let mut end = grad.len();
        for l in (0..layers).rev() {
            let (fan_in, fan_out) = (self.sizes[l], self.sizes[l + 1]);
            let start = end - fan_out * (fan_in + 1);
            let (g_weights, g_biases) = grad[start..end].split_at_mut(fan_in * fan_out);
            let weights = &params[start..start + fan_in * fan_out];
            let (lower, upper) = work.deltas.split_at_mut(l + 1);
            let delta = &upper[0];
            let input = &work.activations[l];
            for j in 0..fan_out {
                let dj = delta[j];
                g_biases[j] = dj;
                for (g, &a) in g_weights[j * fan_in..(j + 1) * fan_in]
                    .iter_mut()
                    .zip(input)
                {
                    *g = dj * a;
                }
            }
            if l > 0 {
                // Back through the weights and the ReLU (derivative 0 at 0).
                let below = &mut lower[l];
                below.fill(0.0);
                for j in 0..fan_out {
                    let dj = delta[j];
                    if dj != 0.0 {
                        let row = &weights[j * fan_in..(j + 1) * fan_in];
                        for (b, &w) in below.iter_mut().zip(row) {
                            *b += dj * w;
                        }
                    }
                }
                for (b, &a) in below.iter_mut().zip(input) {
                    if a <= 0.0 {
                        *b = 0.0;
                    }
                }
            }
            end = start;
        }
        loss
    }

    /// Mean loss and AUC on `x` (one row per example) with 0/1 labels `y`.
    pub fn evaluate(
        &self,
        params: &[f64],
        x: ArrayView2<'_, f64>,
        y: ArrayView1<'_, f64>,
    ) -> Evaluation {
        let mut work = self.workspace();
        let mut row = vec![0.0; self.inputs()];
        let mut scores = Vec::with_capacity(x.nrows());
        let mut loss = 0.0;
        for (xi, &yi) in x.rows().into_iter().zip(y) {
            row.iter_mut().zip(xi).for_each(|(r, &v)| *r = v);
            let p = self.positive_probability(params, &row, &mut work);
            let p_label = if yi > 0.5 { p } else { 1.0 - p };
            loss -= p_label.max(f64::MIN_POSITIVE).ln();
            scores.push(p);
        }
        let n = x.nrows().max(1) as f64;
        Evaluation {
            loss: loss / n,
            auc: metrics::auc(ndarray::ArrayView1::from(&scores), y),
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// Section 3.4.2: "the total number of weights and bias parameters in the neural network
    /// is 14,312" on the 264 processed features.
    #[test]
    fn the_papers_network_has_14312_parameters() {
        assert_eq!(
            Network::paper(264).expect("valid").parameter_count(),
            14_312
        );
    }

    /// The backward pass against central finite differences (step 1e-6, agreement to 1e-6
    /// relative: the truncation error is O(h^2) on a smooth piece of the ReLU network).
    #[test]
    fn gradient_matches_finite_differences() {
        let net = Network::new(5, &[4, 3]).expect("valid");
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let params = net.initial_parameters(&mut rng);
        let x: Vec<f64> = (0..5).map(|_| rng.random_range(-1.0..1.0)).collect();
        let mut work = net.workspace();
        for label in [false, true] {
            let mut grad = vec![0.0; params.len()];
            net.gradient(&params, &x, label, &mut grad, &mut work);
            let mut scratch = vec![0.0; params.len()];
            for i in 0..params.len() {
                let h = 1e-6;
                let mut p = params.clone();
                p[i] += h;
                let up = net.gradient(&p, &x, label, &mut scratch, &mut work);
                p[i] -= 2.0 * h;
                let down = net.gradient(&p, &x, label, &mut scratch, &mut work);
                let numeric = (up - down) / (2.0 * h);
                assert!(
                    (numeric - grad[i]).abs() <= 1e-6 * (1.0 + grad[i].abs()),
                    "parameter {i}: analytic {} numeric {numeric}",
                    grad[i]
                );
            }
        }
    }

    #[test]
    fn probabilities_sum_with_the_loss() {
        let net = Network::new(3, &[2]).expect("valid");
        let params = net.initial_parameters(&mut ChaCha20Rng::seed_from_u64(1));
        let mut work = net.workspace();
        let x = [0.3, -0.2, 0.9];
        let p = net.positive_probability(&params, &x, &mut work);
        let mut grad = vec![0.0; params.len()];
        let loss = net.gradient(&params, &x, true, &mut grad, &mut work);
        assert!((loss + p.ln()).abs() < 1e-14);
    }
}
