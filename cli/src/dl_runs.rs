//! `privlogit dl` as library calls: distributed differentially private deep learning, DPSTGD
//! (dissertation chapter 3): [`train`] with every participant in this process, or [`serve`]
//! and [`participate`] as separate processes over the study transport. The option structs are
//! the command line's (clap derives its flags from them).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use ndarray::{Array1, Array2, Axis, concatenate};
use privlogit_protocols::transport::{Expected, Role};
use serde::{Deserialize, Serialize};

use privlogit::data::{self, Dataset, LoadOptions};
use privlogit::dl::budget::{self, Accounting, Spend};
use privlogit::dl::network::Network;
use privlogit::dl::participant::Settings;
use privlogit::dl::remote::{self, Plan, RemoteParticipant};
use privlogit::dl::server::{self, Participant, Rows, Schedule};
use privlogit::output;
use privlogit::study::StudyFile;
use privlogit::study::party::{Connection, PATIENCE, Party, address_of};

macro_rules! say {
    ($($arg:tt)*) => {
        eprintln!($($arg)*)
    };
}

/// How a participant or the server of a study between organizations connects.
#[derive(Debug, Args)]
pub struct NetArgs {
    /// This party's identity: PREFIX.crt and PREFIX.key, from `privlogit identity new`.
    #[arg(long, value_name = "PREFIX")]
    identity: Option<PathBuf>,
    /// Connect over plain TCP: anyone on the path reads the traffic and anyone may claim a
    /// party's place. Refused when the study file names certificates.
    #[arg(long)]
    insecure_plaintext: bool,
    /// Seconds without any sign of life (data or heartbeat) after which a peer counts as lost
    /// and the run stops.
    #[arg(long, value_name = "SECONDS", default_value_t = privlogit::settings::Spec::default().deadline)]
    deadline: f64,
}

impl NetArgs {
    /// This party's network in `role` (`name` in a plaintext run), with the study file at
    /// `study` if given.
    fn party(&self, study: Option<&Path>, role: Role, name: &str) -> Result<Party> {
        let file = study.map(StudyFile::read).transpose()?;
        let connection = Connection {
            file: file.as_ref(),
            identity: self.identity.as_deref(),
            insecure_plaintext: self.insecure_plaintext,
            deadline: self.deadline,
        };
        Ok(Party::new(&connection, role, name, &|m: &str| {
            eprintln!("{m}")
        })?)
    }
}

/// Arguments of `privlogit dl`.
#[derive(Debug, Args)]
pub struct DlArgs {
    /// What to run.
    #[command(subcommand)]
    pub command: DlCommand,
}

/// The `dl` subcommands.
#[derive(Debug, Subcommand)]
pub enum DlCommand {
    /// Train with every participant in this process (one data file each).
    Train(TrainArgs),
    /// Serve as the parameter server (Algorithm 1) for participants in other processes.
    Server(ServerArgs),
    /// Take part (Algorithm 2) with one data file.
    Participant(ParticipantArgs),
}

/// Which mechanism the participants run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MechanismArg {
    /// Clipped gradients with Gaussian noise on a public selection of coordinates, accounted by
    /// RDP: `--epsilon` and `--delta` are each participant's total budget.
    SparseGaussian,
    /// The dissertation's DPSTGD (Report-Noisy-Top-N and ternary signs): `--epsilon` is each
    /// release's, and its sound total is in the thousands at useful settings.
    Dpstgd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum AccountingArg {
    /// Counts eq. (3.6)'s signs and amplifies once per minibatch (sound).
    Sound,
    /// Theorem 3.3.2 as the dissertation states it (for comparison with Table 3.1).
    Dissertation,
}

/// The budget a run must fit.
#[derive(Debug, Args)]
struct PrivacyArgs {
    /// Refuse to start if the run would spend more than this epsilon (each participant's data
    /// set, in total over the iterations).
    #[arg(long, value_name = "TOTAL")]
    budget: Option<f64>,
    /// How the spend is composed.
    #[arg(long, value_enum, default_value = privlogit::dl::DEFAULTS.accounting)]
    accounting: AccountingArg,
    /// The delta allowed (dpstgd: 0 is pure differential privacy, > 0 allows advanced
    /// composition) [default: 0.00001 for sparse-gaussian, 0 for dpstgd].
    #[arg(long)]
    delta: Option<f64>,
    /// A privacy ledger (as `dp fit --ledger`): each participant's data file is charged the
    /// run's sound epsilon when training starts (refused past the ledger's total); with
    /// `dl participant`, this participant's file.
    #[arg(long, value_name = "FILE")]
    ledger: Option<PathBuf>,
    /// Total epsilon each data set may spend across the runs recorded in --ledger (needed to
    /// create the ledger).
    #[arg(long, value_name = "TOTAL", requires = "ledger")]
    ledger_total: Option<f64>,
    /// Let `--accounting dissertation` decide against `--budget` although its figure is not a
    /// privacy bound (both figures are printed and written with the model either way).
    #[arg(long)]
    accept_unsound_accounting: bool,
}

impl PrivacyArgs {
    fn accounting(&self) -> Accounting {
        match self.accounting {
            AccountingArg::Sound => Accounting::Sound,
            AccountingArg::Dissertation => Accounting::Dissertation,
        }
    }

    /// The accounting's name as the model file gives it.
    fn accounting_name(&self) -> &'static str {
        match self.accounting {
            AccountingArg::Sound => "sound",
            AccountingArg::Dissertation => {
                "dissertation (Theorem 3.3.2: not a privacy bound, accepted by \
                 --accept-unsound-accounting)"
            }
        }
    }

    /// The delta of a run of `settings`: as given, or the mechanism's default.
    fn delta(&self, settings: &Settings) -> f64 {
        self.delta.unwrap_or(if settings.sparse.is_some() {
            privlogit::dl::SPARSE_DEFAULTS.delta
        } else {
            privlogit::dl::DEFAULTS.delta
        })
    }

    /// The run's spend once it is done (for DPSTGD both figures, the unsound one named as
    /// such).
    fn report(&self, spend: Option<&RunSpend>) {
        match spend {
            Some(RunSpend::Dpstgd(s)) => say!(
                "privacy spent: epsilon {:.4} (delta {:.1e}) sound; {:.4} by the dissertation's \
                 Theorem 3.3.2, which is not a privacy bound{}",
                s.total_sound.epsilon,
                s.total_sound.delta,
                s.total_dissertation.epsilon,
                if self.accounting == AccountingArg::Dissertation && self.budget.is_some() {
                    " (this run's budget was checked by it, as --accept-unsound-accounting allowed)"
                } else {
                    ""
                }
            ),
            Some(RunSpend::Sparse { total, .. }) => say!(
                "privacy spent: epsilon {:.4} (delta {:.1e}) per participant (RDP, add/remove one row)",
                total.epsilon,
                total.delta
            ),
            None => {}
        }
    }

    /// The spend of the plan, refused past `--budget`, announced either way.
    fn check(
        &self,
        settings: &Settings,
        network: &Network,
        iterations: u64,
    ) -> Result<Option<RunSpend>> {
        let dim = network.parameter_count();
        let delta = self.delta(settings);
        if let Some(sparse) = settings.sparse {
            let Some(z) = sparse.noise_multiplier else {
                say!(
                    "warning: no noise (--non-private): the uploads are not differentially private"
                );
                return Ok(None);
            };
            let n = settings.upload_count(dim);
            let total = privlogit::dl::sparse::spend(z, settings.q, iterations, delta, n)?;
            privlogit::dl::sparse::check_budget(total, iterations, self.budget)?;
            say!(
                "privacy: sparse Gaussian, noise multiplier {z:.4}, q {}, {iterations} iterations: epsilon {:.4} (delta {delta:.1e}) per participant (RDP, add/remove one row)",
                settings.q,
                total.epsilon
            );
            return Ok(Some(RunSpend::Sparse {
                total,
                noise_multiplier: z,
            }));
        }
        let spend = match self.budget {
            Some(b) => Some(budget::check(
                settings,
                dim,
                iterations,
                delta,
                self.accounting(),
                self.accept_unsound_accounting,
                b,
            )?),
            None => budget::spend(settings, dim, iterations, delta)?,
        };
        match &spend {
            None => say!(
                "warning: no noise (--non-private): the uploads are not differentially private"
            ),
            Some(s) => say!(
                "privacy: epsilon {:.4} per iteration sound ({:.4} by Theorem 3.3.2); {} iterations spend {:.4} sound (delta {:.1e}), {:.4} by the dissertation",
                s.iteration_sound,
                s.iteration_dissertation,
                iterations,
                s.total_sound.epsilon,
                s.total_sound.delta,
                s.total_dissertation.epsilon
            ),
        }
        Ok(spend.map(RunSpend::Dpstgd))
    }

    /// Charges `files` the run's sound epsilon on `--ledger`, if given, before training.
    fn charge(&self, spend: Option<&RunSpend>, files: &[PathBuf], label: &str) -> Result<()> {
        let (Some(path), Some(spend)) = (&self.ledger, spend) else {
            return Ok(());
        };
        let sound = spend.sound();
        let cost = privlogit::dp::ledger::Guarantee {
            epsilon: sound.epsilon,
            delta: sound.delta,
            relation: match spend {
                RunSpend::Dpstgd(_) => privlogit::dp::ledger::Relation::ReplaceOne,
                RunSpend::Sparse { .. } => privlogit::dp::ledger::Relation::AddRemove,
            },
        };
        privlogit::charge::files(path, self.ledger_total, files, label, cost, &|m: &str| {
            say!("{m}")
        })?;
        Ok(())
    }
}

/// What a run spends, by its mechanism.
#[derive(Debug, Clone, Copy)]
enum RunSpend {
    /// DPSTGD: sound and dissertation figures.
    Dpstgd(Spend),
    /// The sparse Gaussian mechanism: its total, and the noise multiplier that gives it.
    Sparse {
        total: privlogit::dp::accounting::EpsDelta,
        noise_multiplier: f64,
    },
}

impl RunSpend {
    fn sound(&self) -> privlogit::dp::accounting::EpsDelta {
        match self {
            RunSpend::Dpstgd(s) => s.total_sound,
            RunSpend::Sparse { total, .. } => *total,
        }
    }
}

/// Algorithm 1 and 2's settings (shared by `train` and `server`).
#[derive(Debug, Args)]
struct AlgorithmArgs {
    /// The mechanism: sparse-gaussian (sound, accounted by RDP) or the dissertation's dpstgd.
    #[arg(long, value_enum, default_value = "sparse-gaussian")]
    mechanism: MechanismArg,
    /// sparse-gaussian: each participant's total epsilon (with --delta), from which the noise
    /// is set. dpstgd: Algorithm 2's epsilon of each Report-Noisy-Top-N score and each sign.
    #[arg(long, required_unless_present = "non_private")]
    epsilon: Option<f64>,
    /// Train without noise (not private: the baseline).
    #[arg(long, conflicts_with = "epsilon")]
    non_private: bool,
    /// Minibatch sampling ratio q [default: 0.2 for sparse-gaussian, 0.01 for dpstgd].
    #[arg(long)]
    q: Option<f64>,
    /// Share of the gradient coordinates uploaded per step (n = ceil(ratio x parameters)).
    #[arg(long, default_value_t = privlogit::dl::DEFAULTS.upload_ratio)]
    upload_ratio: f64,
    /// Iterations T (each visits every participant once) [default: sparse-gaussian, 40 per
    /// unit of --epsilon within 100-600 (600 without noise); dpstgd, 100].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    iterations: Option<u64>,
    /// Clipping: sparse-gaussian, the L2 norm C of each example's uploaded part; dpstgd, the
    /// bound B of each gradient coordinate and the ternary magnitude [default: 1 for
    /// sparse-gaussian, 0.01 for dpstgd].
    #[arg(long)]
    bound: Option<f64>,
    /// Learning rate r of eq. (3.1) [default: 0.5 for sparse-gaussian, 0.1 for dpstgd].
    #[arg(long)]
    learning_rate: Option<f64>,
    /// Upload the selected noisy values instead of B times their signs (each the query
    /// rounded to the noise's grid plus an exact discrete Laplace count of grid steps).
    #[arg(long)]
    exact_upload: bool,
    /// Hidden layer widths.
    #[arg(long, value_delimiter = ',', default_values_t = privlogit::dl::DEFAULTS.hidden)]
    hidden: Vec<usize>,
    /// Reproducible run: the server's initial weights and each participant's sampling and
    /// noise from ChaCha20 streams of this seed (for experiments; not for release).
    #[arg(long)]
    seed: Option<u64>,
    /// Start from the parameters of this model file (a previous `--out`).
    #[arg(long, value_name = "FILE")]
    init: Option<PathBuf>,
    /// Report the loss and AUC on this labelled file as training goes (the analyst's check;
    /// not private, not charged).
    #[arg(long, value_name = "FILE")]
    test: Option<PathBuf>,
    /// Print progress every this many iterations [default: T / 10].
    #[arg(long, value_name = "N")]
    report_every: Option<u64>,
    /// Write the model (JSON) here, atomically, only if training finishes.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    #[command(flatten)]
    privacy: PrivacyArgs,
}

impl AlgorithmArgs {
    fn sparse(&self) -> bool {
        self.mechanism == MechanismArg::SparseGaussian
    }

    fn q(&self) -> f64 {
        self.q.unwrap_or(if self.sparse() {
            privlogit::dl::SPARSE_DEFAULTS.q
        } else {
            privlogit::dl::DEFAULTS.q
        })
    }

    fn iterations(&self) -> u64 {
        self.iterations.unwrap_or(if self.sparse() {
            privlogit::dl::sparse_iterations((!self.non_private).then_some(self.epsilon).flatten())
        } else {
            privlogit::dl::DEFAULTS.iterations
        })
    }

    fn learning_rate(&self) -> f64 {
        self.learning_rate.unwrap_or(if self.sparse() {
            privlogit::dl::SPARSE_DEFAULTS.learning_rate
        } else {
            privlogit::dl::DEFAULTS.learning_rate
        })
    }

    /// The settings for a network of `network`'s size: for sparse-gaussian, the noise
    /// multiplier that spends `--epsilon` at `--delta` over the iterations.
    fn settings(&self, network: &Network) -> Result<Settings> {
        let private = !self.non_private;
        let mut settings = Settings {
            epsilon: (private && !self.sparse())
                .then_some(self.epsilon)
                .flatten(),
            q: self.q(),
            upload_ratio: self.upload_ratio,
            bound: self.bound.unwrap_or(if self.sparse() {
                privlogit::dl::SPARSE_DEFAULTS.bound
            } else {
                privlogit::dl::DEFAULTS.bound
            }),
            ternary: !self.exact_upload && !self.sparse(),
            sparse: None,
        };
        if self.sparse() {
            if self.exact_upload {
                bail!("--exact-upload is a dpstgd setting (sparse-gaussian uploads grid counts)");
            }
            let request = privlogit::dl::participant::SparseRequest {
                budget: match (private, self.epsilon) {
                    (true, Some(e)) => Some((
                        e,
                        self.privacy
                            .delta
                            .unwrap_or(privlogit::dl::SPARSE_DEFAULTS.delta),
                    )),
                    _ => None,
                },
                q: self.q(),
                upload_ratio: self.upload_ratio,
                clip: settings.bound,
                iterations: self.iterations(),
            };
            settings = request.settings(network, self.seed)?.0;
        }
        settings.validate()?;
        Ok(settings)
    }

    fn schedule(&self, settings: Settings) -> Schedule {
        Schedule {
            iterations: self.iterations(),
            learning_rate: self.learning_rate(),
            settings,
        }
    }
}

/// Arguments of `privlogit dl train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// One data file per participant (CSV, binary table or Parquet).
    #[arg(long, value_name = "FILE", num_args = 1.., required = true)]
    party: Vec<PathBuf>,
    /// Name of the 0/1 label column.
    #[arg(long, value_name = "COLUMN")]
    label: String,
    #[command(flatten)]
    algorithm: AlgorithmArgs,
}

/// Arguments of `privlogit dl server`.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// The study file: the parties with their certificates and addresses (TLS).
    #[arg(long, value_name = "FILE")]
    study: Option<PathBuf>,
    /// Participants to wait for.
    #[arg(long, value_name = "K")]
    participants: Option<usize>,
    /// Address to listen on (default: the study file's aggregator address).
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Label column of `--test`.
    #[arg(long, value_name = "COLUMN", default_value = "label")]
    label: String,
    #[command(flatten)]
    net: NetArgs,
    #[command(flatten)]
    algorithm: AlgorithmArgs,
}

/// Arguments of `privlogit dl participant`.
#[derive(Debug, Args)]
pub struct ParticipantArgs {
    /// The study file: the parties with their certificates and addresses (TLS).
    #[arg(long, value_name = "FILE")]
    study: Option<PathBuf>,
    /// This participant's data file.
    #[arg(long, value_name = "FILE")]
    party: PathBuf,
    /// Name of the 0/1 label column.
    #[arg(long, value_name = "COLUMN")]
    label: String,
    /// The server's address (default: the study file's aggregator address).
    #[arg(long, value_name = "ADDR")]
    server: Option<String>,
    /// This participant's name in a plaintext run (with TLS it comes from the certificate).
    #[arg(long, value_name = "NAME", default_value = "participant")]
    name: String,
    /// Reproducible sampling and noise from this seed (experiments only).
    #[arg(long)]
    seed: Option<u64>,
    /// Write the final model the server hands back here (atomically).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Take part in a run without noise (the server's `--non-private`): this participant's
    /// uploads are then not private. Refused unless given.
    #[arg(long)]
    allow_non_private: bool,
    #[command(flatten)]
    net: NetArgs,
    #[command(flatten)]
    privacy: PrivacyArgs,
}

/// `privlogit dl ...`.
pub fn run(args: DlArgs) -> Result<()> {
    // An output that can never be written is refused before any training or any party.
    let out = match &args.command {
        DlCommand::Train(a) => a.algorithm.out.as_ref(),
        DlCommand::Server(a) => a.algorithm.out.as_ref(),
        DlCommand::Participant(a) => a.out.as_ref(),
    };
    if let Some(out) = out {
        privlogit::output::check_writable(out)
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    match args.command {
        DlCommand::Train(a) => train(a),
        DlCommand::Server(a) => serve(a),
        DlCommand::Participant(a) => participate(a),
    }
}

/// A saved model: the network, how it was trained, what it spent, its parameters.
#[derive(Debug, Serialize, Deserialize)]
struct Model {
    method: String,
    /// The sparse Gaussian mechanism's noise multiplier (`method` sparse-gaussian).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    noise_multiplier: Option<f64>,
    sizes: Vec<usize>,
    activation: String,
    features: Option<Vec<String>>,
    epsilon: Option<f64>,
    q: f64,
    upload_ratio: f64,
    bound: f64,
    ternary: bool,
    iterations: u64,
    learning_rate: Option<f64>,
    participants: Vec<String>,
    spend_sound: Option<(f64, f64)>,
    spend_dissertation: Option<(f64, f64)>,
    /// Which figure the budget was checked by: the sound one (`spend_sound`), or the
    /// dissertation's, which is not a privacy bound and was accepted as such.
    #[serde(default)]
    accounting: Option<String>,
    seeded: bool,
    /// Bytes per participant over the run (mean over participants), as the transport carries
    /// them (in-process runs: as it would).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    traffic: Option<Traffic>,
    parameters: Vec<f64>,
}

/// Bytes per participant over a run.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Traffic {
    /// From the server (parameters), mean over participants.
    down_per_participant: f64,
    /// To the server (uploads), mean over participants.
    up_per_participant: f64,
}

impl Traffic {
    fn mean(traffic: &[(u64, u64)]) -> Option<Self> {
        let n = traffic.len() as f64;
        (!traffic.is_empty()).then(|| Traffic {
            down_per_participant: traffic.iter().map(|t| t.0 as f64).sum::<f64>() / n,
            up_per_participant: traffic.iter().map(|t| t.1 as f64).sum::<f64>() / n,
        })
    }
}

fn load(path: &Path, label: &str) -> Result<Dataset> {
    Ok(data::load(path, &LoadOptions::new(label))?.data)
}

fn read_init(path: &Path, network: &Network) -> Result<Vec<f64>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    /// What a starting point needs of a model file (any `--out` of `dl`).
    #[derive(Deserialize)]
    struct Start {
        sizes: Vec<usize>,
        parameters: Vec<f64>,
    }
    let model: Start = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not a dl model file (sizes and parameters)",
            path.display()
        )
    })?;
    if model.sizes != network.sizes() {
        bail!(
            "{}: a network of layers {:?}, this run's is {:?}",
            path.display(),
            model.sizes,
            network.sizes()
        );
    }
    network.check_parameters(&model.parameters)?;
    Ok(model.parameters)
}

/// Progress lines: every `every` iterations and the last, with the loss (and AUC) on `watch`.
struct Progress<'a> {
    network: &'a Network,
    watch: Option<Watch<'a>>,
    every: u64,
    total: u64,
    spend: Option<RunSpend>,
    settings: Settings,
    delta: f64,
    started: Instant,
}

impl Progress<'_> {
    fn line(&self, t: u64, params: &[f64]) {
        if !(t.is_multiple_of(self.every) || t == self.total) {
            return;
        }
        let loss = self
            .watch
            .as_ref()
            .map_or_else(String::new, |(what, x, y)| {
                let e = self.network.evaluate(params, x.view(), y.view());
                format!(
                    ", {what} loss {:.4} AUC {}",
                    e.loss,
                    e.auc.map_or("n/a".into(), |a| format!("{a:.4}"))
                )
            });
        let dim = self.network.parameter_count();
        let spent = match self.spend {
            None => ", not private".to_string(),
            Some(RunSpend::Sparse {
                noise_multiplier, ..
            }) => privlogit::dl::sparse::spend(
                noise_multiplier,
                self.settings.q,
                t,
                self.delta,
                self.settings.upload_count(dim),
            )
            .map_or(String::new(), |s| {
                format!(", epsilon spent {:.4}", s.epsilon)
            }),
            Some(RunSpend::Dpstgd(_)) => match budget::spend(&self.settings, dim, t, self.delta) {
                Ok(Some(s)) => format!(
                    ", epsilon spent {:.4} sound ({:.4} dissertation)",
                    s.total_sound.epsilon, s.total_dissertation.epsilon
                ),
                _ => String::new(),
            },
        };
        say!(
            "iteration {t}/{}{loss}{spent} ({:.1} s)",
            self.total,
            self.started.elapsed().as_secs_f64()
        );
    }
}

fn write_model(path: &Path, model: &Model) -> Result<()> {
    let json = serde_json::to_string_pretty(model)?;
    output::write_text(path, &(json + "\n"))
        .with_context(|| format!("writing {}", path.display()))?;
    say!("model written to {}", path.display());
    Ok(())
}

/// How a run was set up, for its model file.
struct RunFacts<'a> {
    settings: &'a Settings,
    network: &'a Network,
    iterations: u64,
    learning_rate: Option<f64>,
    seeded: bool,
    spend: Option<RunSpend>,
    /// What decided the run against its budget (the model file says).
    accounting: &'static str,
}

fn model(
    facts: RunFacts<'_>,
    features: Option<Vec<String>>,
    participants: Vec<String>,
    parameters: Vec<f64>,
) -> Model {
    let RunFacts {
        settings,
        network,
        iterations,
        learning_rate,
        seeded,
        spend,
        accounting,
    } = facts;
    let dissertation = match spend {
        Some(RunSpend::Dpstgd(s)) => Some(s.total_dissertation),
        _ => None,
    };
    let noise_multiplier = match spend {
        Some(RunSpend::Sparse {
            noise_multiplier, ..
        }) => Some(noise_multiplier),
        _ => None,
    };
    Model {
        method: settings.mechanism().into(),
        noise_multiplier,
        sizes: network.sizes().to_vec(),
        activation: "relu; softmax output".into(),
        features,
        epsilon: settings.epsilon,
        q: settings.q,
        upload_ratio: settings.upload_ratio,
        bound: settings.bound,
        ternary: settings.ternary,
        iterations,
        learning_rate,
        participants,
        spend_sound: spend.map(|s| (s.sound().epsilon, s.sound().delta)),
        spend_dissertation: dissertation.map(|s| (s.epsilon, s.delta)),
        accounting: spend.map(|_| accounting.to_string()),
        seeded,
        traffic: None,
        parameters,
    }
}

/// Rows whose loss and AUC the progress lines report, with what they are.
type Watch<'a> = (&'a str, Array2<f64>, Array1<f64>);

impl AlgorithmArgs {
    /// Progress lines for this run from now on.
    fn progress<'a>(
        &self,
        network: &'a Network,
        watch: Option<Watch<'a>>,
        spend: Option<RunSpend>,
        settings: Settings,
    ) -> Progress<'a> {
        Progress {
            network,
            watch,
            every: self
                .report_every
                .unwrap_or((self.iterations() / 10).max(1))
                .max(1),
            total: self.iterations(),
            spend,
            settings,
            delta: self.privacy.delta(&settings),
            started: Instant::now(),
        }
    }

    fn facts<'a>(
        &self,
        settings: &'a Settings,
        network: &'a Network,
        spend: Option<RunSpend>,
    ) -> RunFacts<'a> {
        RunFacts {
            settings,
            network,
            iterations: self.iterations(),
            learning_rate: Some(self.learning_rate()),
            seeded: self.seed.is_some(),
            spend,
            accounting: self.privacy.accounting_name(),
        }
    }
}

fn test_rows(
    args: &AlgorithmArgs,
    label: &str,
    network: &Network,
) -> Result<Option<(Array2<f64>, Array1<f64>)>> {
    let Some(path) = &args.test else {
        return Ok(None);
    };
    fitting_test_rows(path, load(path, label)?, network).map(Some)
}

/// `--test`'s rows, refused when the network reads another number of features.
fn fitting_test_rows(
    path: &Path,
    d: Dataset,
    network: &Network,
) -> Result<(Array2<f64>, Array1<f64>)> {
    if d.x.ncols() != network.inputs() {
        bail!(
            "{}: {} features, the network reads {}",
            path.display(),
            d.x.ncols(),
            network.inputs()
        );
    }
    Ok((d.x, d.y))
}

fn train(args: TrainArgs) -> Result<()> {
    let a = &args.algorithm;
    let parties = args
        .party
        .iter()
        .map(|p| load(p, &args.label))
        .collect::<Result<Vec<_>>>()?;
    let names = parties[0].names.clone();
    for (p, d) in args.party.iter().zip(&parties) {
        if d.names != names {
            bail!(
                "{}: its columns differ from {}'s",
                p.display(),
                args.party[0].display()
            );
        }
    }
    let network = Network::new(names.len(), &a.hidden)?;
    let settings = a.settings(&network)?;
    let spend = a.privacy.check(&settings, &network, a.iterations())?;
    a.privacy.charge(spend.as_ref(), &args.party, &args.label)?;
    let initial = a
        .init
        .as_deref()
        .map(|p| read_init(p, &network))
        .transpose()?;
    let rows: Vec<Rows> = args
        .party
        .iter()
        .zip(&parties)
        .map(|(p, d)| Rows {
            name: p.display().to_string(),
            x: d.x.clone(),
            y: d.y.clone(),
        })
        .collect();
    let watch = match test_rows(a, &args.label, &network)? {
        Some((x, y)) => ("test", x, y),
        None => {
            // Every file is in this process anyway: the pooled training loss, for the operator.
            let x = concatenate(
                Axis(0),
                &parties.iter().map(|d| d.x.view()).collect::<Vec<_>>(),
            )?;
            let y = concatenate(
                Axis(0),
                &parties.iter().map(|d| d.y.view()).collect::<Vec<_>>(),
            )?;
            ("training", x, y)
        }
    };
    say!(
        "{}: {} participants, network {:?} ({} parameters), {} iterations, q {}, upload {} of {} coordinates{}",
        settings.mechanism(),
        rows.len(),
        network.sizes(),
        network.parameter_count(),
        a.iterations(),
        settings.q,
        settings.upload_count(network.parameter_count()),
        network.parameter_count(),
        if a.seed.is_some() {
            " (seeded: reproducible, not for release)"
        } else {
            ""
        }
    );
    let progress = a.progress(&network, Some(watch), spend, settings);
    let mut on_iteration = |t: u64, p: &[f64]| {
        progress.line(t, p);
        Ok(())
    };
    let (params, traffic) = server::train_in_process(
        &network,
        &rows,
        a.schedule(settings),
        a.seed,
        initial,
        &mut on_iteration,
    )?;
    let t = a.iterations().max(1) as f64;
    for (r, (down, up)) in rows.iter().zip(&traffic) {
        say!(
            "{}: {:.0} bytes down, {:.0} bytes up per iteration",
            r.name,
            *down as f64 / t,
            *up as f64 / t
        );
    }
    a.privacy.report(spend.as_ref());
    if let Some(out) = &a.out {
        let mut m = model(
            a.facts(&settings, &network, spend),
            Some(names),
            rows.iter().map(|r| r.name.clone()).collect(),
            params,
        );
        m.traffic = Traffic::mean(&traffic);
        write_model(out, &m)?;
    }
    Ok(())
}

fn serve(args: ServerArgs) -> Result<()> {
    let a = &args.algorithm;
    let party = args
        .net
        .party(args.study.as_deref(), Role::Aggregator, "server")?;
    let roster = party.roster();
    let count = match (args.participants, roster) {
        (Some(n), Some(r)) if n != r.nodes.len() => {
            bail!(
                "--participants {n} but the study file names {} Nodes",
                r.nodes.len()
            )
        }
        (Some(n), _) => n,
        (None, Some(r)) => r.nodes.len(),
        (None, None) => bail!("--participants K is needed (or [[node]] tables in the study file)"),
    };
    if count == 0 {
        bail!("--participants must be at least 1");
    }
    if a.privacy.ledger.is_some() {
        bail!(
            "--ledger: the server holds no data set to charge; each participant charges its own \
             (dl participant --ledger)"
        );
    }
    let listen = address_of(
        args.listen.as_ref(),
        roster.map(|r| &r.aggregator),
        "--listen",
    )?;
    // Read before anyone joins, so that a wrong label or file stops the server, not the run.
    let test = match &a.test {
        Some(path) => Some((path, load(path, &args.label)?)),
        None => None,
    };
    let network_io = &party.network;
    party.stop_peers_on_error(|| {
        let listener = network_io.listen(&listen)?;
        let mechanism = if a.sparse() { "sparse Gaussian" } else { "DPSTGD" };
        say!(
            "DP deep learning server ({mechanism}) listening on {}, waiting for {count} participants",
            listener.local_addr()?
        );
        let expected = match roster {
            Some(r) => Expected::Members(r.nodes.clone()),
            None => Expected::Anyone {
                role: Role::Node,
                count,
            },
        };
        let links = listener.admit(&expected, PATIENCE, &mut |m| say!("{m}"))?;
        let mut joined = Vec::with_capacity(links.len());
        for mut link in links {
            let label = link.pipe().peer().to_string();
            let mut j = remote::read_join(&mut link, &label)?;
            // With TLS the transport's label is the certificate's name; in plaintext it is the
            // connection's place, and the participant's own name goes beside it.
            if j.name != label {
                j.name = format!("{} ({label})", j.name);
            }
            say!("participant {} joined", j.name);
            joined.push((link, j));
        }
        // Algorithm 1 visits the participants in a fixed order: the study file's, or (plaintext,
        // admitted as they connect) by name, so a seeded run does not depend on who was first.
        if roster.is_none() {
            joined.sort_by(|a, b| a.1.name.cmp(&b.1.name));
        }
        let features = joined[0].1.features;
        let network = Network::new(features, &a.hidden)?;
        let settings = a.settings(&network)?;
        let spend = a.privacy.check(&settings, &network, a.iterations())?;
        let initial = match &a.init {
            Some(p) => read_init(p, &network)?,
            None => network.initial_parameters(&mut server::generator(a.seed, 0)),
        };
        let plan = Plan {
            settings,
            iterations: a.iterations(),
            hidden: a.hidden.clone(),
            learning_rate: a.learning_rate(),
        };
        let mut participants: Vec<Box<dyn Participant + Send>> = Vec::new();
        let mut names = Vec::new();
        for (position, (link, j)) in joined.into_iter().enumerate() {
            names.push(j.name.clone());
            participants.push(Box::new(RemoteParticipant::welcome(
                link, j, &network, &plan, position,
            )?));
        }
        let watch = match &test {
            Some((path, d)) => {
                let (x, y) = fitting_test_rows(path, d.clone(), &network)?;
                Some(("test", x, y))
            }
            None => None,
        };
        let progress = a.progress(&network, watch, spend, settings);
        let mut on_iteration = |t: u64, p: &[f64]| {
            progress.line(t, p);
            Ok(())
        };
        let params = server::train(
            &network,
            initial,
            &mut participants,
            a.schedule(settings),
            &mut on_iteration,
        )?;
        let t = a.iterations().max(1) as f64;
        for (name, p) in names.iter().zip(&participants) {
            let (down, up) = p.traffic();
            say!(
                "{name}: {:.0} bytes down, {:.0} bytes up per iteration",
                down as f64 / t,
                up as f64 / t
            );
        }
        a.privacy.report(spend.as_ref());
        if let Some(out) = &a.out {
            let traffic: Vec<(u64, u64)> = participants.iter().map(|p| p.traffic()).collect();
            let mut m = model(a.facts(&settings, &network, spend), None, names, params);
            m.traffic = Traffic::mean(&traffic);
            write_model(out, &m)?;
        }
        Ok(())
    })
}

fn participate(args: ParticipantArgs) -> Result<()> {
    let party = args
        .net
        .party(args.study.as_deref(), Role::Node, &args.name)?;
    let roster = party.roster();
    let address = address_of(
        args.server.as_ref(),
        roster.map(|r| &r.aggregator),
        "--server",
    )?;
    let d = load(&args.party, &args.label)?;
    let rows = d.rows();
    let network_io = &party.network;
    party.stop_peers_on_error(|| {
        let mut link = network_io.connect_reporting(
            &address,
            &party.server(Role::Aggregator),
            PATIENCE,
            &mut |m| say!("{m}"),
        )?;
        say!(
            "participant with {rows} rows joined {} at {}",
            link.pipe().peer(),
            link.pipe().peer_address()
        );
        let mut spent_plan = None;
        let mut consent = |plan: &Plan, network: &Network| {
            if !plan.settings.is_private() && !args.allow_non_private {
                return Err(privlogit::dl::DlError::Budget(
                    privlogit::dl::BudgetProblem::RefusedNonPrivate {
                        remedy: "pass --allow-non-private to take part anyway",
                    },
                ));
            }
            let spend = args
                .privacy
                .check(&plan.settings, network, plan.iterations)
                .map_err(|e| {
                    privlogit::dl::DlError::Budget(privlogit::dl::BudgetProblem::Refused(e.into()))
                })?;
            args.privacy
                .charge(
                    spend.as_ref(),
                    std::slice::from_ref(&args.party),
                    &args.label,
                )
                .map_err(|e| {
                    privlogit::dl::DlError::Budget(privlogit::dl::BudgetProblem::Refused(e.into()))
                })?;
            spent_plan = Some((plan.clone(), spend, network.clone()));
            Ok(())
        };
        let started = Instant::now();
        let mut last = Instant::now();
        let mut on_step = |t: u64| {
            if t == 1 || last.elapsed().as_secs_f64() >= 2.0 {
                say!(
                    "iteration {t} served ({:.1} s)",
                    started.elapsed().as_secs_f64()
                );
                last = Instant::now();
            }
        };
        let params = remote::serve(
            &mut link,
            &args.name,
            d.x.clone(),
            d.y.view(),
            server::generator(args.seed, 1),
            &mut consent,
            &mut on_step,
        );
        // Abort while the connection is still open, so the server hears why.
        if let Err(e) = &params {
            network_io.abort(&format!("{e}"));
        }
        let params = params?;
        say!(
            "training done ({:.1} s), the final model received",
            started.elapsed().as_secs_f64()
        );
        if let Some((_, spend, _)) = &spent_plan {
            args.privacy.report(spend.as_ref());
        }
        if let (Some(out), Some((plan, spend, network))) = (&args.out, spent_plan) {
            let facts = RunFacts {
                settings: &plan.settings,
                network: &network,
                iterations: plan.iterations,
                learning_rate: None,
                seeded: args.seed.is_some(),
                spend,
                accounting: args.privacy.accounting_name(),
            };
            let m = model(facts, Some(d.names.clone()), vec![], params);
            write_model(out, &m)?;
        }
        Ok(())
    })
}
