//! Simulated data sets like the dissertation's SimuX family (section 5.4.1): random covariates,
//! random coefficients, Bernoulli responses.
//!
//! The paper gives no distributions ("randomly generating covariates", section 5.4.1), so we
//! choose and write it down: `x_ij ~ Uniform(-sqrt 3, sqrt 3)` independently (mean 0, variance
//! 1), `beta_j ~ N(0, s^2 / p)`, and `y_i ~ Bernoulli(sigmoid(x_i^T beta))`, with no intercept in
//! the truth. Uniform rather than Gaussian covariates because a streamed Node regenerates its
//! rows every round, and SimuX400's 2 x 10^10 values per round must cost well under a
//! nanosecond each ([`xoshiro_lanes`]: 0.3 ns against 1.7 ns for a Gaussian by the ziggurat); for the
//! logistic model what matters is the linear predictor, which is a sum of p such terms. The linear predictor `x^T beta` then has standard
//! deviation about `s` whatever p is. The default `s = 2.5` ([`DEFAULT_SIGNAL`]) was chosen so
//! that the iteration counts match the dissertation's Table 5.1 on its own sizes: with lambda 1
//! and the paper's stopping rule, SimuX50 (1,000,000 x 50, seed 1, 5 parties) takes 6 Newton and
//! 35 PrivLogit iterations (paper: 6 and 32); a numpy pilot of the same model on 50,000 x 10 took
//! 5 and 22 (paper's SimuX10: 6 and 20).
//!
//! Rows are produced in chunks of [`CHUNK_ROWS`]; chunk `c` takes 40 words from a ChaCha20
//! generator seeded with `seed` on stream `c + 1` (stream 0 draws the coefficients): 32 seed
//! eight Xoshiro256++ generators in lock-step that fill the covariates row by row, 4 seed one
//! more that draws the labels. So a seed fixes the data exactly, independent of thread count and
//! CPU, and 50,000,000 x 400 is regenerated chunk by chunk ([`SimulatedRows`]) without ever
//! holding more than a few chunks in memory. Xoshiro256++ is a statistical generator, not a
//! cryptographic one: nothing here is secret.

use std::io::{self, Write};

mod xoshiro_lanes;

use std::sync::Arc;

use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use privlogit_protocols::PartyData;
use privlogit_protocols::objective::{dot, sigmoid};
use privlogit_protocols::rows::{ChunkVisitor, RowSource, RowsError, RowsProblem};
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rand_distr::StandardNormal;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use crate::data::Dataset;

/// Rows per generated chunk; part of the definition of the data a seed produces. Equal to the
/// block of the Nodes' sums, so a block is regenerated in one piece inside the task that sums it.
pub const CHUNK_ROWS: usize = privlogit_protocols::rows::blocks::BLOCK_ROWS;

/// Default standard deviation of the linear predictor (see the module docs).
pub const DEFAULT_SIGNAL: f64 = 2.5;

/// Name of the label column of simulated data.
pub const LABEL: &str = "y";

/// A simulated data set: its size and seed determine every value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Simulation {
    rows: usize,
    features: usize,
    seed: u64,
    signal: f64,
}

/// The most features a simulation writes.
const MAX_FEATURES: usize = 10_000_000;

impl Simulation {
    /// A data set of `rows` x `features` from `seed`; both sizes must be at least 1.
    pub fn new(rows: usize, features: usize, seed: u64) -> Result<Self, String> {
        if rows == 0 || features == 0 {
            return Err(format!(
                "need at least one row and one feature (got {rows} x {features})"
            ));
        }
        if features > MAX_FEATURES {
            return Err(format!(
                "{features} features: at most {MAX_FEATURES} (their names alone would take \
                 gigabytes; binary tables hold 100000)"
            ));
        }
        // Every value a reader indexes must have an address: rows x (features + 1) doubles.
        if rows
            .checked_mul(features + 1)
            .and_then(|v| v.checked_mul(8))
            .is_none_or(|bytes| bytes > isize::MAX as usize)
        {
            return Err(format!(
                "{rows} rows x {} columns are more values than this machine can address",
                features + 1
            ));
        }
        Ok(Self {
            rows,
            features,
            seed,
            signal: DEFAULT_SIGNAL,
        })
    }

    /// Sets the standard deviation `s` of the linear predictor (finite, >= 0).
    pub fn signal(mut self, signal: f64) -> Result<Self, String> {
        if !(signal.is_finite() && signal >= 0.0) {
            return Err(format!("signal must be finite and >= 0 (got {signal})"));
        }
        self.signal = signal;
        Ok(self)
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Feature names `x1`, `x2`, ...
    pub fn feature_names(&self) -> Vec<String> {
        (1..=self.features).map(|j| format!("x{j}")).collect()
    }

    /// The true coefficients, `beta_j ~ N(0, s^2 / p)`.
    pub fn coefficients(&self) -> Array1<f64> {
        let mut rng = self.stream(0);
        let sd = self.signal / (self.features as f64).sqrt();
        Array1::from_shape_fn(self.features, |_| sd * rng.sample::<f64, _>(StandardNormal))
    }

    /// The whole data set as one streamed source (part 0 of 1).
    pub fn source(&self) -> SimulatedRows {
        SimulatedRows {
            simulation: *self,
            beta: Arc::new(self.coefficients()),
            part: 0,
            rows: self.rows,
        }
    }

    /// The rows dealt to `parts` Nodes, each a streamed source of nearly equal size (the first
    /// ones one row longer). Part `k` draws its chunks from its own streams (see the module
    /// docs), so every part regenerates any block of its rows on its own; part 0 is the first
    /// rows of [`Simulation::source`].
    pub fn parts(&self, parts: usize) -> Result<Vec<SimulatedRows>, String> {
        if parts == 0 || parts > self.rows {
            return Err(format!("cannot deal {} rows to {parts} parts", self.rows));
        }
        let beta = Arc::new(self.coefficients());
        let (base, extra) = (self.rows / parts, self.rows % parts);
        Ok((0..parts)
            .map(|k| SimulatedRows {
                simulation: *self,
                beta: beta.clone(),
                part: k,
                rows: base + usize::from(k < extra),
            })
            .collect())
    }

    /// The whole data set in memory (for tests and small studies).
    pub fn dataset(&self) -> Dataset {
        let (x, y) = PartyData::from_source(Arc::new(self.source()))
            .collect()
            .expect("a simulation cannot fail to generate");
        Dataset {
            source: format!(
                "simulated {} x {} (seed {})",
                self.rows, self.features, self.seed
            ),
            names: self.feature_names(),
            x,
            y,
        }
    }

    /// Generates the rows in order, several chunks at a time in parallel, handing each to
    /// `out` after `encode` turned it into bytes (also in parallel); `progress` gets rows done.
    pub fn write<W, E>(
        &self,
        out: &mut W,
        encode: E,
        mut progress: impl FnMut(usize),
    ) -> io::Result<()>
    where
        W: Write,
        E: Fn(ArrayView2<'_, f64>, ArrayView1<'_, f64>) -> Vec<u8> + Sync,
    {
        let source = self.source();
        let chunks = self.rows.div_ceil(CHUNK_ROWS);
        let batch = 8 * rayon::current_num_threads().max(1);
        let mut done = 0;
        for first in (0..chunks).step_by(batch) {
            let last = (first + batch).min(chunks);
            let encoded: Vec<(usize, Vec<u8>)> = (first..last)
                .into_par_iter()
                .map(|c| {
                    let (x, y) = source.chunk(c);
                    (x.nrows(), encode(x.view(), y.view()))
                })
                .collect();
            for (rows, bytes) in encoded {
                out.write_all(&bytes)?;
                done += rows;
                progress(done);
            }
        }
        Ok(())
    }

    fn stream(&self, stream: u64) -> ChaCha20Rng {
        let mut rng = ChaCha20Rng::seed_from_u64(self.seed);
        rng.set_stream(stream);
        rng
    }
}

/// One part of a simulation (a Node's rows, or the whole set), regenerated on every pass:
/// memory is a few chunks, whatever the row count. Chunk `c` of part `k` comes from ChaCha20
/// stream `k * 2^40 + c + 1`.
#[derive(Debug, Clone)]
pub struct SimulatedRows {
    simulation: Simulation,
    beta: Arc<Array1<f64>>,
    part: usize,
    rows: usize,
}

impl SimulatedRows {
    /// Chunk `index` of this part (the last chunk may be shorter).
    pub fn chunk(&self, index: usize) -> (Array2<f64>, Array1<f64>) {
        let n = CHUNK_ROWS.min(self.rows - index * CHUNK_ROWS);
        let mut x = Array2::zeros((n, self.simulation.features));
        let mut y = Array1::zeros(n);
        self.fill_chunk(
            index,
            x.as_slice_mut().expect("fresh array"),
            y.as_slice_mut().expect("fresh array"),
        );
        (x, y)
    }

    /// Generates chunk `index` into `x` (its rows, row-major) and `y`.
    fn fill_chunk(&self, index: usize, x: &mut [f64], y: &mut [f64]) {
        let p = self.simulation.features;
        let stream_id = ((self.part as u64) << 40) + index as u64 + 1;
        let mut stream = self.simulation.stream(stream_id);
        let words: [u64; 4 * xoshiro_lanes::LANES] = std::array::from_fn(|_| stream.next_u64());
        let mut covariates = xoshiro_lanes::UniformLanes::from_words(words);
        let mut seed = <Xoshiro256PlusPlus as SeedableRng>::Seed::default();
        stream.fill_bytes(&mut seed);
        let mut labels = Xoshiro256PlusPlus::from_seed(seed);
        covariates.fill(x);
        let beta = self.beta.as_slice().expect("contiguous coefficients");
        for (row, label) in x.chunks_exact(p).zip(y.iter_mut()) {
            let prob = sigmoid(dot(row, beta));
            *label = f64::from(u8::from(labels.random::<f64>() < prob));
        }
    }
}

impl RowSource for SimulatedRows {
    fn describe(&self) -> String {
        format!(
            "simulated {} x {} (seed {}), part {} ({} rows)",
            self.simulation.rows,
            self.simulation.features,
            self.simulation.seed,
            self.part,
            self.rows
        )
    }

    fn rows(&self) -> usize {
        self.rows
    }

    fn columns(&self) -> usize {
        self.simulation.features
    }

    fn names(&self) -> Vec<String> {
        self.simulation.feature_names()
    }

    fn scan(&self, visit: &mut ChunkVisitor<'_>) -> Result<(), RowsError> {
        let chunks = self.rows.div_ceil(CHUNK_ROWS);
        let batch = 8 * rayon::current_num_threads().max(1);
        for first in (0..chunks).step_by(batch) {
            let last = (first + batch).min(chunks);
            let generated: Vec<(Array2<f64>, Array1<f64>)> = (first..last)
                .into_par_iter()
                .map(|c| self.chunk(c))
                .collect();
            for (x, y) in generated {
                visit(x.view(), y.view())?;
            }
        }
        Ok(())
    }

    fn random_access(&self) -> bool {
        true
    }

    fn read_rows(&self, start: usize, x: &mut [f64], y: &mut [f64]) -> Result<(), RowsError> {
        let p = self.simulation.features;
        let end = start + y.len();
        if end > self.rows || x.len() != y.len() * p {
            return Err(RowsError::new(
                self.describe(),
                RowsProblem::OutOfRange {
                    start,
                    end,
                    rows: self.rows,
                },
            ));
        }
        let mut row = start;
        while row < end {
            let c = row / CHUNK_ROWS;
            let chunk_start = c * CHUNK_ROWS;
            let chunk_len = CHUNK_ROWS.min(self.rows - chunk_start);
            let (lo, hi) = (row - start, (chunk_start + chunk_len).min(end) - start);
            if row == chunk_start && hi - lo == chunk_len {
                // The usual case: the block is exactly one chunk, generated in place.
                self.fill_chunk(c, &mut x[lo * p..hi * p], &mut y[lo..hi]);
            } else {
                let (cx, cy) = self.chunk(c);
                let from = row - chunk_start;
                let cx = cx.as_slice().expect("fresh array");
                x[lo * p..hi * p].copy_from_slice(&cx[from * p..(from + hi - lo) * p]);
                y[lo..hi].copy_from_slice(&cy.as_slice().expect("fresh")[from..from + hi - lo]);
            }
            row = start + hi;
        }
        Ok(())
    }
}

/// CSV rows (no header) with the shortest decimal that reads back to the same f64.
pub fn encode_csv(x: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>) -> Vec<u8> {
    let mut buf = Vec::with_capacity(x.len() * 20);
    for (row, label) in x.outer_iter().zip(y.iter()) {
        for v in row.iter() {
            // Writing into a Vec cannot fail.
            let _ = write!(buf, "{v},");
        }
        let _ = writeln!(buf, "{label}");
    }
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_and_chunk_independent() {
        let sim = Simulation::new(CHUNK_ROWS + 10, 3, 42).expect("valid size");
        let a = sim.dataset();
        let b = sim.dataset();
        assert_eq!(a, b);
        assert_eq!(a.rows(), CHUNK_ROWS + 10);
        let other = Simulation::new(CHUNK_ROWS + 10, 3, 43)
            .expect("valid size")
            .dataset();
        assert_ne!(a.x, other.x);
        let mut bytes = Vec::new();
        sim.write(&mut bytes, encode_csv, |_| {})
            .expect("in-memory write");
        let text = String::from_utf8(bytes).expect("utf8");
        assert_eq!(text.lines().count(), CHUNK_ROWS + 10);
        let first: Vec<f64> = text
            .lines()
            .next()
            .expect("a line")
            .split(',')
            .map(|c| c.parse().expect("number"))
            .collect();
        assert_eq!(first[..3], a.x.row(0).to_vec()[..]);
        assert_eq!(first[3], a.y[0]);
    }

    /// Moments of the covariates and the label rate agree with the stated model.
    #[test]
    fn distributions_as_documented() {
        let sim = Simulation::new(40_000, 5, 1).expect("valid size");
        let d = sim.dataset();
        let mean = d.x.mean().expect("non-empty");
        let var = d.x.mapv(|v| (v - mean).powi(2)).mean().expect("non-empty");
        // 200,000 draws: standard error of the mean 0.0022, of the variance ~0.0032.
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.015, "variance {var}");
        let beta = sim.coefficients();
        let expected_rate: f64 =
            d.x.outer_iter().map(|r| sigmoid(r.dot(&beta))).sum::<f64>() / d.rows() as f64;
        let rate = d.y.mean().expect("non-empty");
        // Bernoulli rate over 40,000 rows: standard error <= 0.0025.
        assert!(
            (rate - expected_rate).abs() < 0.0125,
            "{rate} vs {expected_rate}"
        );
    }
}
