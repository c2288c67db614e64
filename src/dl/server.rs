//! The parameter server: dissertation Algorithm 1. Each iteration visits the participants in
//! turn (round robin); each gets the current parameters, runs Algorithm 2, and its upload
//! updates the parameters by eq. (3.1), `W := W - r G~`, before the next one is contacted.

use super::download::{self, Applied, Log, Seen};
use super::network::Network;
use super::participant::Trainer;
use super::upload::Upload;
use super::{DlError, ParticipantProblem};

/// What the server hands a participant for one turn of Algorithm 1.
#[derive(Debug, Clone, Copy)]
pub struct Turn<'a> {
    /// The current parameters `W`.
    pub params: &'a [f64],
    /// The iteration, from 1.
    pub iteration: u64,
    /// The uploads applied since the participant's own last one (that one first), when it may
    /// be sent those instead of the parameters ([`super::download`]).
    pub since: Option<&'a [Applied]>,
}

/// A participant as the server sees it: in this process, or across a connection.
pub trait Participant {
    /// Its name, for messages.
    fn name(&self) -> &str;
    /// Runs Algorithm 2 at the turn's parameters and returns the upload.
    fn train(&mut self, turn: Turn<'_>) -> Result<Upload, DlError>;
    /// Hands over the final parameters (Algorithm 1 returns `W` to everyone).
    fn finish(&mut self, _params: &[f64]) -> Result<(), DlError> {
        Ok(())
    }
    /// Bytes it has received from the server and sent to it so far.
    fn traffic(&self) -> (u64, u64);
}

/// A participant in this process.
#[derive(Debug)]
pub struct LocalParticipant {
    name: String,
    trainer: Trainer,
    download: u64,
    upload: u64,
}

impl LocalParticipant {
    /// `trainer`, called `name`.
    pub fn new(name: impl Into<String>, trainer: Trainer) -> Self {
        Self {
            name: name.into(),
            trainer,
            download: 0,
            upload: 0,
        }
    }
}

impl Participant for LocalParticipant {
    fn name(&self) -> &str {
        &self.name
    }

    fn train(&mut self, turn: Turn<'_>) -> Result<Upload, DlError> {
        let Turn {
            params,
            iteration,
            since,
        } = turn;
        let upload = self
            .trainer
            .step(params, iteration)
            .map_err(|e| DlError::Participant {
                participant: self.name.clone(),
                reason: ParticipantProblem::Training(Box::new(e)),
            })?;
        // What the transport would carry: the parameters (or the uploads since the last visit)
        // down, the encoded upload up.
        self.download += since.map_or(8 * params.len() as u64, download::delta_bytes);
        self.upload += upload.encode().len() as u64;
        Ok(upload)
    }

    fn traffic(&self) -> (u64, u64) {
        (self.download, self.upload)
    }
}

/// The server's schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    /// Iterations `T` (each visits every participant once).
    pub iterations: u64,
    /// Learning rate `r_t` (constant).
    pub learning_rate: f64,
    /// The participants' settings: the bound `B` a ternary sign stands for, and what an upload
    /// may hold (its kind and at most `n` coordinates), checked on every upload.
    pub settings: super::participant::Settings,
}

/// After each iteration: the iteration (1-based) and the parameters.
pub type OnIteration<'a> = dyn FnMut(u64, &[f64]) -> Result<(), DlError> + 'a;

/// Algorithm 1 from `params`: `T` rounds over `participants`, in order; returns the final
/// parameters. A participant's failure stops the run with its name and the iteration.
pub fn train(
    network: &Network,
    mut params: Vec<f64>,
    participants: &mut [Box<dyn Participant + Send + '_>],
    schedule: Schedule,
    on_iteration: &mut OnIteration<'_>,
) -> Result<Vec<f64>, DlError> {
    network.check_parameters(&params)?;
    if !(schedule.learning_rate.is_finite() && schedule.learning_rate > 0.0) {
        return Err(DlError::setting(
            "learning rate",
            schedule.learning_rate,
            "must be positive and finite",
        ));
    }
    if participants.is_empty() {
        return Err(DlError::setting(
            "participants",
            0usize,
            "training needs at least one",
        ));
    }
    let dim = params.len();
    let limit = schedule.settings.upload_count(dim);
    let head = network.head_parameters();
    // Grid uploads as applied, and where each participant's copy stands: a participant is sent
    // the uploads since its own last one instead of the parameters.
    let mut log = Log::default();
    let mut seen = vec![Seen::default(); participants.len()];
    for t in 1..=schedule.iterations {
        for (position, p) in participants.iter_mut().enumerate() {
            let upload = p.train(Turn {
                params: &params,
                iteration: t,
                since: log.since(seen[position]),
            })?;
            let refuse = |reason: ParticipantProblem| DlError::Participant {
                participant: p.name().into(),
                reason,
            };
            if upload.dim() != dim {
                return Err(refuse(ParticipantProblem::UploadSize {
                    iteration: t,
                    got: upload.dim(),
                    dim,
                }));
            }
            let expected = match (schedule.settings.sparse, schedule.settings.ternary) {
                (Some(s), _) if s.noise_multiplier.is_some() => "grid",
                (_, true) => "ternary",
                _ => "valued",
            };
            let grid = matches!(upload, Upload::Grid { .. });
            if upload.kind() != expected || upload.len() > limit || (grid && upload.len() != limit)
            {
                return Err(refuse(ParticipantProblem::UploadKind {
                    iteration: t,
                    len: upload.len(),
                    kind: upload.kind(),
                    limit,
                    expected,
                }));
            }
            let selection = match schedule.settings.sparse {
                Some(s) if grid => super::sparse::selection(s.seed, dim, limit, head, t, position),
                _ => Vec::new(),
            };
            upload.apply(
                &mut params,
                schedule.learning_rate,
                schedule.settings.bound,
                &selection,
            );
            if grid {
                let index = log.push(Applied {
                    iteration: t,
                    position,
                    bytes: upload.encode(),
                });
                seen[position].uploaded(index);
            }
        }
        log.trim(&seen);
        on_iteration(t, &params)?;
    }
    for p in participants.iter_mut() {
        p.finish(&params)?;
    }
    Ok(params)
}

/// Where the server's initial weights and each participant's sampling and noise come from:
/// the OS CSPRNG, or ChaCha20 streams of one seed (reproducible experiments only; stream 0 the
/// server's, stream `k + 1` participant `k`'s).
pub fn generator(seed: Option<u64>, stream: u64) -> Box<dyn crate::dp::noise::CryptoRngBox + Send> {
    use rand::SeedableRng;
    match seed {
        None => Box::new(rand_chacha::ChaCha20Rng::from_rng(&mut rand::rng())),
        Some(s) => {
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(s);
            rng.set_stream(stream);
            Box::new(rng)
        }
    }
}

/// Bytes a participant received from the server and sent to it.
pub type Traffic = (u64, u64);

/// One participant's rows for an in-process run.
#[derive(Debug, Clone)]
pub struct Rows {
    /// Its name.
    pub name: String,
    /// Features, one row per example.
    pub x: ndarray::Array2<f64>,
    /// 0/1 labels.
    pub y: ndarray::Array1<f64>,
}

/// Algorithm 1 with every participant in this process (`seed` as in [`generator`]), from
/// `initial` parameters or the server's fresh ones.
pub fn train_in_process(
    network: &Network,
    parties: &[Rows],
    schedule: Schedule,
    seed: Option<u64>,
    initial: Option<Vec<f64>>,
    on_iteration: &mut OnIteration<'_>,
) -> Result<(Vec<f64>, Vec<Traffic>), DlError> {
    let mut participants: Vec<Box<dyn Participant + Send>> = Vec::with_capacity(parties.len());
    for (k, p) in parties.iter().enumerate() {
        let trainer = Trainer::new(
            network.clone(),
            schedule.settings,
            p.x.clone(),
            p.y.view(),
            generator(seed, k as u64 + 1),
        )
        .map_err(|e| DlError::Participant {
            participant: p.name.clone(),
            reason: ParticipantProblem::Training(Box::new(e)),
        })?
        .at_position(k);
        participants.push(Box::new(LocalParticipant::new(p.name.clone(), trainer)));
    }
    let params = match initial {
        Some(p) => p,
        None => network.initial_parameters(&mut generator(seed, 0)),
    };
    let params = train(network, params, &mut participants, schedule, on_iteration)?;
    let traffic = participants.iter().map(|p| p.traffic()).collect();
    Ok((params, traffic))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dl::participant::Settings;

    /// A participant that sends what it likes.
    struct Rogue(Upload);

    impl Participant for Rogue {
        fn name(&self) -> &str {
            "rogue"
        }
        fn train(&mut self, _: Turn<'_>) -> Result<Upload, DlError> {
            Ok(self.0.clone())
        }
        fn traffic(&self) -> (u64, u64) {
            (0, 0)
        }
    }

    /// The server refuses an upload of the wrong kind or with more coordinates than the plan's
    /// `n`, naming the participant and the iteration.
    #[test]
    fn uploads_outside_the_plan_are_refused() {
        let network = Network::new(2, &[2]).expect("valid");
        let dim = network.parameter_count();
        let settings = Settings {
            epsilon: Some(1.0),
            q: 1.0,
            upload_ratio: 0.2,
            bound: 0.1,
            ternary: true,
            sparse: None,
        };
        let schedule = Schedule {
            iterations: 1,
            learning_rate: 0.1,
            settings,
        };
        let n = settings.upload_count(dim);
        let too_many = Upload::Ternary {
            dim,
            entries: (0..=n as u32).map(|j| (j, 1)).collect(),
        };
        let valued = Upload::Values {
            dim,
            entries: vec![(0, 1e300)],
        };
        for rogue in [too_many, valued] {
            let mut ps: Vec<Box<dyn Participant + Send>> = vec![Box::new(Rogue(rogue))];
            let err = train(&network, vec![0.0; dim], &mut ps, schedule, &mut |_, _| {
                Ok(())
            })
            .expect_err("refused");
            let text = err.to_string();
            assert!(
                text.contains("rogue") && text.contains("iteration 1") && text.contains("at most"),
                "{text}"
            );
        }
        let fine = Upload::Ternary {
            dim,
            entries: vec![(0, -1)],
        };
        let mut ps: Vec<Box<dyn Participant + Send>> = vec![Box::new(Rogue(fine))];
        let params = train(&network, vec![0.0; dim], &mut ps, schedule, &mut |_, _| {
            Ok(())
        })
        .expect("accepted");
        assert!((params[0] - 0.1 * 0.1).abs() < 1e-15);
    }

    #[test]
    fn networks_past_the_parameter_limit_are_refused() {
        assert!(Network::new(1 << 20, &[1 << 10]).is_err());
        assert!(Network::new(usize::MAX / 2, &[4]).is_err());
        assert!(Network::new(784, &[50, 20]).is_ok());
    }
}
