//! Secure PLR's noise shares: each server draws a whole PLR noise vector (stacking paper
//! Algorithm 1 step 8, with `eps'` and `Delta` of steps 1-6 for the study's N) from its own
//! CSPRNG; the study adds both under encryption (see `privlogit_protocols::secure::perturbation`
//! for why the sum keeps the guarantee from every server's view).

use privlogit_protocols::secure::aggregator::Protocol;
use privlogit_protocols::secure::perturbation::{NoiseDraw, NoiseShare, NoiseShares, Release};
use privlogit_protocols::secure::solver::LinearAlgebra;
use privlogit_protocols::secure::study_protocol::StudyPlan;
use privlogit_protocols::{FitOptions, Optimizer};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::dp::noise::objective_noise;
use crate::dp::plr::PlrBudget;

/// One server's noise source.
pub struct PlrNoiseShare {
    rng: ChaCha20Rng,
}

impl PlrNoiseShare {
    /// ChaCha20 keyed by the operating system's CSPRNG (a real study).
    pub fn from_os() -> Self {
        Self {
            rng: ChaCha20Rng::from_rng(&mut rand::rng()),
        }
    }

    /// ChaCha20 from `seed` on stream `stream` (tests and experiments only: whoever knows the
    /// seed knows the noise).
    pub fn seeded(seed: u64, stream: u64) -> Self {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        Self { rng }
    }
}

impl NoiseShare for PlrNoiseShare {
    fn draw(
        &mut self,
        release: &Release,
        rows: usize,
        dimension: usize,
    ) -> Result<NoiseDraw, String> {
        let budget = budget(release, rows).map_err(|e| e.to_string())?;
        let noise = objective_noise(dimension, budget.epsilon_prime, &mut self.rng)
            .map_err(|e| e.to_string())?;
        Ok(NoiseDraw {
            penalty: penalty(release, &budget, rows),
            noise,
        })
    }
}

/// Algorithm 1 steps 1-6 for the study's N (noise share 0.9, as `dp fit`).
pub fn budget(release: &Release, rows: usize) -> Result<PlrBudget, crate::dp::DpError> {
    PlrBudget::new(release.epsilon, rows, release.lambda)
}

/// The study's penalty `N (lambda + Delta)`: PLR's objective times N is eq. 2.10's.
pub fn penalty(release: &Release, budget: &PlrBudget, rows: usize) -> f64 {
    rows as f64 * (release.lambda + budget.delta)
}

/// Both servers' shares: from the OS, or (tests and experiments) from `seed` on two streams,
/// the aggregator's 0 and the key holder's 1.
pub fn shares(seed: Option<u64>) -> NoiseShares {
    let (aggregator, keyholder) = match seed {
        Some(s) => (PlrNoiseShare::seeded(s, 0), PlrNoiseShare::seeded(s, 1)),
        None => (PlrNoiseShare::from_os(), PlrNoiseShare::from_os()),
    };
    NoiseShares {
        aggregator: Box::new(aggregator),
        keyholder: Box::new(keyholder),
    }
}

/// The noise `b = b_1 + b_2` a study seeded with `seed` adds (tests and experiments: to run
/// plaintext PLR with the same vector).
pub fn seeded_noise(
    seed: u64,
    release: &Release,
    rows: usize,
    dimension: usize,
) -> Result<ndarray::Array1<f64>, String> {
    let a = PlrNoiseShare::seeded(seed, 0).draw(release, rows, dimension)?;
    let k = PlrNoiseShare::seeded(seed, 1).draw(release, rows, dimension)?;
    Ok(a.noise + k.noise)
}

/// The plan of a secure PLR study releasing under `release`: rows the Nodes prepared (neither
/// standardised nor given an intercept), masked linear algebra, the default fixed-point format,
/// the coefficients revealed.
pub fn study_plan(
    protocol: Protocol,
    optimizer: Optimizer,
    options: FitOptions,
    key_bits: u32,
    parties: usize,
    release: Release,
) -> StudyPlan {
    StudyPlan {
        protocol,
        optimizer,
        options,
        format: privlogit_protocols::secure::DEFAULT_FORMAT,
        key_bits,
        parties,
        standardize: false,
        intercept: false,
        linear_algebra: LinearAlgebra::Masked,
        circuit_block: privlogit_protocols::secure::masked::engine::DEFAULT_BLOCK,
        mask_seed: None,
        release: Some(release),
        reveal: privlogit_protocols::secure::aggregator::Reveal::Coefficients,
        glm: privlogit_protocols::Glm::logistic(),
        evaluate: false,
    }
}

/// A secure PLR study over in-memory channels on rows held here (pipelines and experiments:
/// every party in this process). `parts` are the Nodes' feature rows and 0/1 labels; secure
/// Newton (few rounds on the small designs pipelines fit), masked linear algebra, the default
/// fixed-point format, noise from `noise_seed` or the OS; over loopback TCP when `loopback`,
/// else in-memory channels.
pub fn study_in_process(
    names: &[String],
    parts: Vec<(ndarray::Array2<f64>, ndarray::Array1<f64>)>,
    release: Release,
    secret: &privlogit_protocols::paillier::SecretKey,
    noise_seed: Option<u64>,
    loopback: bool,
) -> Result<
    privlogit_protocols::secure::study_protocol::StudyOutcome,
    privlogit_protocols::secure::study_protocol::StudyError,
> {
    use privlogit_circuits::channel::MemoryChannel;
    use privlogit_protocols::secure::node::NodeData;
    let plan = study_plan(
        Protocol::Newton,
        Optimizer::Newton,
        FitOptions::new().max_iterations(200),
        secret.public_key().bits() as u32,
        parts.len(),
        release,
    );
    let nodes = parts
        .into_iter()
        .map(|(x, y)| (names.to_vec(), NodeData::new(x, y, false)))
        .collect();
    let noise = Some(shares(noise_seed));
    let run = if loopback {
        privlogit_protocols::secure::inprocess::run_study(
            privlogit_protocols::secure::inprocess::loopback_pair,
            nodes,
            &plan,
            |_| Ok(secret),
            &mut |_| {},
            noise,
            privlogit_protocols::secure::inprocess::Products::Paillier,
        )?
    } else {
        privlogit_protocols::secure::inprocess::run_study(
            || Ok(MemoryChannel::pair()),
            nodes,
            &plan,
            |_| Ok(secret),
            &mut |_| {},
            noise,
            privlogit_protocols::secure::inprocess::Products::Paillier,
        )?
    };
    Ok(run.outcome)
}
