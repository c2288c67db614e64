//! A participant's step: dissertation Algorithm 2 (DPSTGD) on its own rows.
//!
//! Choices where the chapter is loose, each the sound reading:
//! - Clipping (eq. 3.3) is per coordinate ("clipped element-wise", and eq. 3.5's sensitivity is
//!   per coordinate): each example's gradient is clamped to `[-B, B]` coordinate by coordinate.
//! - The average (eq. 3.4) divides by the expected minibatch size `m = q n_k`, not by the drawn
//!   `|D_q|`: a denominator that depends on the sample would make eq. 3.5's sensitivity depend
//!   on the data. `n_k`, the participant's row count, is public (as the row counts of the
//!   secure studies are). With `q = 1`, `m = |D_q| = n_k`.
//! - Sensitivity `lambda = 2B / m` as eq. (3.5) states: neighbouring data sets differ in one
//!   row replaced (the relation every privlogit mechanism uses; row counts are public, and
//!   Lemma 3.3.1's amplification holds for it under Poisson sampling, see
//!   [`crate::dp::accounting`]).
//! - Sampling is Poisson with ratio `q` (Lemma 3.3.1's sampling), from the participant's own
//!   CSPRNG; noise is the exact discrete Laplace of [`crate::dp::noise`].

use ndarray::{Array2, ArrayView1};
use rand::{RngExt, SeedableRng};

use super::network::Network;
use super::rntn;
use super::sparse::{self, Sparse};
use super::upload::Upload;
use super::{DlError, SettingReason};
use crate::dp::accounting::EpsDelta;
use crate::dp::noise::CryptoRngBox;

/// The public settings of Algorithm 2 every participant runs with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Algorithm 2's `epsilon` (of each Report-Noisy-Top-N score and each sign); `None` trains
    /// without noise (not private).
    pub epsilon: Option<f64>,
    /// Minibatch sampling ratio `q`.
    pub q: f64,
    /// Share of the coordinates uploaded each step (`n = ceil(ratio d)`).
    pub upload_ratio: f64,
    /// Clipping bound `B` (and the ternary magnitude).
    pub bound: f64,
    /// Upload `B sign(...)` (eq. 3.6) rather than the values (the non-private baseline).
    pub ternary: bool,
    /// Run the sparse Gaussian mechanism ([`super::sparse`]) instead of DPSTGD: then `bound`
    /// is its clipping norm `C`, and `epsilon` and `ternary` are unused (`None`, `false`).
    pub sparse: Option<Sparse>,
}

impl Settings {
    /// Whether uploads carry noise.
    pub fn is_private(&self) -> bool {
        match self.sparse {
            Some(s) => s.noise_multiplier.is_some(),
            None => self.epsilon.is_some(),
        }
    }

    /// The mechanism's name, as the command line and model files give it.
    pub fn mechanism(&self) -> &'static str {
        if self.sparse.is_some() {
            "sparse-gaussian"
        } else {
            "dpstgd"
        }
    }

    /// Refuses out-of-range settings by name.
    pub fn validate(&self) -> Result<(), DlError> {
        if let Some(sparse) = self.sparse {
            if self.epsilon.is_some() || self.ternary {
                return Err(DlError::setting(
                    "mechanism",
                    "sparse-gaussian",
                    "takes no per-release epsilon and uploads no signs",
                ));
            }
            if let Some(z) = sparse.noise_multiplier
                && !(z.is_finite() && z > 0.0)
            {
                return Err(DlError::setting(
                    "noise multiplier",
                    z,
                    "must be positive and finite",
                ));
            }
        }
        if let Some(e) = self.epsilon
            && !(e.is_finite() && e > 0.0)
        {
            return Err(DlError::setting(
                "epsilon",
                e,
                "must be positive and finite",
            ));
        }
        if !(self.q > 0.0 && self.q <= 1.0) {
            return Err(DlError::setting(
                "q",
                self.q,
                "the sampling ratio must be in (0, 1]",
            ));
        }
        if !(self.upload_ratio > 0.0 && self.upload_ratio <= 1.0) {
            return Err(DlError::setting(
                "upload ratio",
                self.upload_ratio,
                "must be in (0, 1]",
            ));
        }
        if !(self.bound.is_finite() && self.bound > 0.0) {
            return Err(DlError::setting(
                "bound B",
                self.bound,
                "must be positive and finite",
            ));
        }
        Ok(())
    }

    /// `n`, the coordinates uploaded each step, for `dim` parameters.
    /// DPSTGD rounds up, as the dissertation's 10 % of 14,312 is 1,432 (Table 3.1 prints
    /// 1,431); the sparse Gaussian mechanism rounds down, so an upload never carries more than
    /// its share of the parameters (4,031 of 40,312 at 10 %).
    pub fn upload_count(&self, dim: usize) -> usize {
        let share = self.upload_ratio * dim as f64;
        let n = if self.sparse.is_some() {
            share.floor()
        } else {
            share.ceil()
        };
        (n as usize).clamp(1, dim)
    }
}

/// What a sparse Gaussian run is set up from: each participant's budget (`None`: no noise, not
/// private), the sampling ratio, the upload ratio, the clipping norm and the iterations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SparseRequest {
    /// Each participant's total (epsilon, delta); `None` trains without noise.
    pub budget: Option<(f64, f64)>,
    /// Poisson sampling ratio `q`.
    pub q: f64,
    /// Share of the parameters uploaded each visit.
    pub upload_ratio: f64,
    /// Clipping norm `C` of an example's uploaded part.
    pub clip: f64,
    /// Iterations `T` (visits per participant).
    pub iterations: u64,
}

impl SparseRequest {
    /// The participants' settings for `network` (the noise multiplier calibrated to the
    /// budget) and what the run spends; the selection seed from `seed` (a reproducible run)
    /// or the OS. The command line and Python both set runs up here.
    pub fn settings(
        &self,
        network: &Network,
        seed: Option<u64>,
    ) -> Result<(Settings, Option<EpsDelta>), DlError> {
        let mut settings = Settings {
            epsilon: None,
            q: self.q,
            upload_ratio: self.upload_ratio,
            bound: self.clip,
            ternary: false,
            sparse: None,
        };
        // The mechanism first: it decides how the upload count rounds.
        settings.sparse = Some(Sparse {
            noise_multiplier: None,
            seed: 0,
        });
        settings.validate()?;
        let n = settings.upload_count(network.parameter_count());
        let (noise_multiplier, spent) = match self.budget {
            None => (None, None),
            Some((epsilon, delta)) => {
                let z = sparse::calibrate(epsilon, delta, self.q, self.iterations, n)?;
                (
                    Some(z),
                    Some(sparse::spend(z, self.q, self.iterations, delta, n)?),
                )
            }
        };
        // The public selection seed: from the run's seed (its last ChaCha20 stream), or the OS.
        let seed = match seed {
            Some(s) => {
                let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(s);
                rng.set_stream(u64::MAX);
                rng.random::<u64>()
            }
            None => rand::rng().random::<u64>(),
        };
        settings.sparse = Some(Sparse {
            noise_multiplier,
            seed,
        });
        settings.validate()?;
        Ok((settings, spent))
    }
}

/// One participant's rows and generator: Algorithm 2's caller.
pub struct Trainer {
    network: Network,
    settings: Settings,
    /// The row count the mechanism uses and shows: exact for DPSTGD (replace-one, the count
    /// public as in the paper), noisy for the sparse Gaussian mechanism (add/remove).
    public_rows: f64,
    x: Array2<f64>,
    labels: Vec<bool>,
    rng: Box<dyn CryptoRngBox + Send>,
    position: usize,
    sum: Vec<f64>,
    example: Vec<f64>,
    row: Vec<f64>,
}

impl std::fmt::Debug for Trainer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trainer")
            .field("rows", &self.x.nrows())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Trainer {
    /// A participant with rows `x` and 0/1 labels `y`, drawing samples and noise from `rng`.
    pub fn new(
        network: Network,
        settings: Settings,
        x: Array2<f64>,
        y: ArrayView1<'_, f64>,
        mut rng: Box<dyn CryptoRngBox + Send>,
    ) -> Result<Self, DlError> {
        settings.validate()?;
        if x.ncols() != network.inputs() {
            return Err(DlError::setting(
                "features",
                x.ncols(),
                SettingReason::Inputs {
                    inputs: network.inputs(),
                },
            ));
        }
        if x.nrows() == 0 {
            return Err(DlError::setting("rows", 0usize, "a participant needs rows"));
        }
        let dim = network.parameter_count();
        let public_rows = match settings.sparse {
            Some(sparse::Sparse {
                noise_multiplier: Some(_),
                ..
            }) => sparse::noisy_count(x.nrows(), &mut *rng)?,
            _ => x.nrows() as f64,
        };
        Ok(Self {
            row: vec![0.0; network.inputs()],
            settings,
            public_rows,
            labels: y.iter().map(|&v| v > 0.5).collect(),
            x,
            rng,
            position: 0,
            sum: vec![0.0; dim],
            example: vec![0.0; dim],
            network,
        })
    }

    /// This participant's place in the server's round robin (0-based): the sparse Gaussian
    /// mechanism's public selection depends on it.
    pub fn at_position(mut self, position: usize) -> Self {
        self.position = position;
        self
    }

    /// Rows held.
    pub fn rows(&self) -> usize {
        self.x.nrows()
    }

    /// The expected minibatch size `m = q n_k` (see the module; `n_k` noisy under the sparse
    /// Gaussian mechanism).
    pub fn expected_batch(&self) -> f64 {
        self.settings.q * self.public_rows
    }

    /// Eq. (3.5)'s sensitivity `lambda = 2B / m`.
    pub fn sensitivity(&self) -> f64 {
        2.0 * self.settings.bound / self.expected_batch()
    }

    /// The upload for `params` at `iteration` (1-based): Algorithm 2, or the sparse Gaussian
    /// mechanism's visit.
    pub fn step(&mut self, params: &[f64], iteration: u64) -> Result<Upload, DlError> {
        self.network.check_parameters(params)?;
        if let Some(s) = self.settings.sparse {
            let n = self.settings.upload_count(params.len());
            return sparse::step(
                &self.network,
                s,
                (self.settings.q, self.settings.bound, n, self.public_rows),
                self.position,
                &self.x,
                &self.labels,
                &mut *self.rng,
                params,
                iteration,
            );
        }
        let Settings { q, bound, .. } = self.settings;
        // Steps 1-3: Poisson sample, per-example gradients clipped per coordinate (eq. 3.3),
        // summed.
        self.sum.fill(0.0);
        let mut work = self.network.workspace();
        for i in 0..self.x.nrows() {
            if q < 1.0 && self.rng.random::<f64>() >= q {
                continue;
            }
            self.row
                .iter_mut()
                .zip(self.x.row(i))
                .for_each(|(r, &v)| *r = v);
            self.network.gradient(
                params,
                &self.row,
                self.labels[i],
                &mut self.example,
                &mut work,
            );
            for (s, &g) in self.sum.iter_mut().zip(&self.example) {
                *s += g.clamp(-bound, bound);
            }
        }
        // Eq. (3.4) over the expected batch size.
        let m = self.expected_batch();
        let average: Vec<f64> = self.sum.iter().map(|s| s / m).collect();
        // Steps 4-5: scores |G^j| of sensitivity lambda (eq. 3.5), Report-Noisy-Top-N.
        let scale = self.settings.epsilon.map(|e| self.sensitivity() / e);
        let scores: Vec<f64> = average.iter().map(|g| g.abs()).collect();
        let n = self.settings.upload_count(average.len());
        let chosen = rntn::report_noisy_top_n(&scores, n, scale, &mut self.rng)?;
        // Step 6, eq. (3.6): the selected coordinates, ternary or as values.
        let dim = average.len();
        if self.settings.ternary {
            let mut entries = Vec::with_capacity(chosen.len());
            for j in chosen {
                let s = rntn::noisy_sign(average[j], scale, &mut self.rng)?;
                if s != 0 {
                    entries.push((j as u32, s));
                }
            }
            Ok(Upload::Ternary { dim, entries })
        } else {
            // A clipped example adds at most B per coordinate and a minibatch holds at most
            // n_k rows, so |average| <= B n_k / m = B / q: the public range of the query.
            let range = bound / q;
            let mut entries = Vec::with_capacity(chosen.len());
            for j in chosen {
                let v = match self.settings.epsilon {
                    None => average[j],
                    Some(epsilon) => crate::dp::noise::laplace_mechanism(
                        average[j],
                        self.sensitivity(),
                        epsilon,
                        range,
                        &mut self.rng,
                    )
                    .map_err(|e| DlError::setting("noise", epsilon, SettingReason::Noise(e)))?,
                };
                entries.push((j as u32, v));
            }
            Ok(Upload::Values { dim, entries })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array1;
    use rand_chacha::ChaCha20Rng;

    /// An exact upload with noise carries only whole multiples of the noise grid, so nothing
    /// of the average's low bits shows (the upload once was `average + g y`, on
    /// `average + g Z`).
    #[test]
    fn exact_uploads_lie_on_the_noise_grid() {
        let network = Network::new(3, &[4]).expect("network");
        let settings = Settings {
            epsilon: Some(1.0),
            q: 0.5,
            upload_ratio: 1.0,
            bound: 0.1,
            ternary: false,
            sparse: None,
        };
        let x = Array2::from_shape_fn((40, 3), |(i, j)| ((i * 7 + j * 3) % 11) as f64 / 11.0);
        let y = Array1::from_shape_fn(40, |i| (i % 3 == 0) as u8 as f64);
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let params = network.initial_parameters(&mut rng);
        let mut trainer =
            Trainer::new(network, settings, x, y.view(), Box::new(rng)).expect("trainer");
        let sensitivity = trainer.sensitivity();
        // The grid laplace_mechanism uses: the scale's, or the next power of two up.
        let grid = crate::dp::discrete::grid_for(sensitivity).expect("grid");
        for _ in 0..5 {
            let Upload::Values { entries, .. } = trainer.step(&params, 1).expect("step") else {
                panic!("values expected");
            };
            assert!(!entries.is_empty());
            for (_, v) in entries {
                let steps = v / grid;
                assert_eq!(steps, steps.trunc(), "{v} is not on the grid {grid}");
            }
        }
    }

    /// A private sparse upload shows no exact row count: its step is `gamma / (q n~)` with `n~`
    /// the count plus a discrete Gaussian of standard deviation 20 rows (over 400 seeds: the
    /// mean within 3 of the count, the standard deviation within 15-25, and most steps not the
    /// exact count's).
    #[test]
    fn a_sparse_upload_carries_a_noisy_count_only() {
        let network = Network::new(3, &[4]).expect("network");
        let settings = Settings {
            epsilon: None,
            q: 0.5,
            upload_ratio: 0.5,
            bound: 0.1,
            ternary: false,
            sparse: Some(Sparse {
                noise_multiplier: Some(1.0),
                seed: 5,
            }),
        };
        let rows = 300;
        let x = Array2::from_shape_fn((rows, 3), |(i, j)| ((i * 7 + j * 3) % 11) as f64 / 11.0);
        let y = Array1::from_shape_fn(rows, |i| (i % 3 == 0) as u8 as f64);
        let coarse = sparse::upload_grid(1.0, 0.1);
        let mut counts = Vec::new();
        for seed in 0..400u64 {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            let params = network.initial_parameters(&mut rng);
            let mut trainer = Trainer::new(
                network.clone(),
                settings,
                x.clone(),
                y.view(),
                Box::new(rng),
            )
            .expect("trainer");
            let Upload::Grid { step, .. } = trainer.step(&params, 1).expect("step") else {
                panic!("a grid upload expected");
            };
            counts.push(coarse / (0.5 * step));
        }
        let mean = counts.iter().sum::<f64>() / counts.len() as f64;
        let sd = (counts.iter().map(|c| (c - mean).powi(2)).sum::<f64>()
            / (counts.len() - 1) as f64)
            .sqrt();
        assert!((mean - rows as f64).abs() < 3.0, "{mean}");
        assert!((15.0..25.0).contains(&sd), "{sd}");
        let exact = counts
            .iter()
            .filter(|&&c| (c - rows as f64).abs() < 1e-6)
            .count();
        assert!(exact < 20, "{exact} of 400 showed the exact count");
    }
}
