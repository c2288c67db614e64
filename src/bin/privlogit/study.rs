//! The secure study commands: `privlogit study` (every role in this process, over loopback TCP)
//! and the three roles as separate processes (`keyholder`, `aggregator`, `node`).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use privlogit::data::{self, LoadOptions};
use privlogit::hybrid::secure_plr::PlrNoiseShare;
use privlogit::model::{Model, Standardization};
use privlogit::output;
use privlogit::protocols::paillier::PublicKey;
use privlogit::protocols::paillier::{KeyPair, KeySize, SecretKey};
use privlogit::protocols::rows::RowSource;
use privlogit::protocols::secure::SecureError;
use privlogit::protocols::secure::aggregator::Protocol;
use privlogit::protocols::secure::checkpoint::Checkpoint;
use privlogit::protocols::secure::endorsement::{Endorser, KeyTrust};
use privlogit::protocols::secure::inprocess;
use privlogit::protocols::secure::keyholder::KeyholderStats;
use privlogit::protocols::secure::node::{NodeData, NodeStats};
use privlogit::protocols::secure::release::{NoiseShare, Release};
use privlogit::protocols::secure::solver::LinearAlgebra;
use privlogit::protocols::secure::study::{self, Continuity, StudyOutcome, StudyPlan};
use privlogit::protocols::transport::roster::Side;
use privlogit::protocols::transport::{
    Expected, Identity, Member, Network, Role, Roster, Security, Timing,
};
use privlogit::protocols::{FitOptions, IterationRecord, Optimizer, Status, StepKind};
use privlogit_circuits::FixedFormat;
use serde::Serialize;

use crate::Outcome;
use crate::log::say;
use crate::study_file;
use crate::study_state::{self, FileKeyStore, StateArgs};

/// How long a party waits for the others to connect.
pub(crate) const PATIENCE: Duration = Duration::from_secs(600);

/// The protocol, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProtocolName {
    /// PrivLogit-Hessian: the Center keeps the bound's inverse (shared between the servers,
    /// or the factor in a garbled circuit with --linear-algebra circuit) and solves each step.
    Hessian,
    /// PrivLogit-Local: the Nodes multiply the encrypted inverse into their gradients.
    Local,
    /// Secure distributed Newton (the baseline).
    Newton,
}

/// The study parameters shared by `study` and `aggregator`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// hessian, local or newton.
    #[arg(long, value_enum, default_value = "local")]
    protocol: ProtocolName,
    /// Accelerated PrivLogit (Hessian and Local only).
    #[arg(long)]
    accelerate: bool,
    /// Z-score the features with pooled statistics computed under encryption (the means and
    /// standard deviations become public).
    #[arg(long)]
    standardize: bool,
    /// Do not add the intercept column.
    #[arg(long)]
    no_intercept: bool,
    /// l2 penalty lambda (dissertation eq. 2.10).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    lambda: f64,
    /// Centre the penalty at this public vector, lambda/2 ||beta - c||^2 (hypothesis transfer):
    /// a file with one coefficient per line, in the model's order (intercept first,
    /// standardised coordinates with --standardize). Part of the plan: both servers read it.
    #[arg(long, value_name = "FILE")]
    penalty_centre: Option<PathBuf>,
    /// Stop when the relative change of the penalised log-likelihood is below T (0: never).
    #[arg(
        long,
        value_name = "T",
        default_value_t = 1e-6,
        allow_negative_numbers = true
    )]
    tol: f64,
    /// Also stop when the gradient's Euclidean norm is below G: its square is formed in masked
    /// arithmetic and compared in a circuit, one revealed bit (needs --linear-algebra masked).
    #[arg(long, value_name = "G", allow_negative_numbers = true)]
    gradient_tol: Option<f64>,
    /// Give up after N iterations.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    max_iter: usize,
    /// Paillier modulus bits (2048 or more).
    #[arg(long, value_name = "BITS", default_value_t = 2048)]
    key_bits: u32,
    /// Fixed-point format of the garbled circuits, WIDTH/FRACTION bits (more fraction: closer
    /// to the plaintext run; more integer bits: room for larger values).
    #[arg(long, value_name = "W/F", default_value = "64/46", value_parser = parse_format)]
    fixed: FixedFormat,
    /// How the Center factors and solves on secret matrices: masked (Paillier-assisted masked
    /// arithmetic, pivots in small garbled circuits) or circuit (all in garbled circuits).
    #[arg(long, value_name = "METHOD", default_value = "masked")]
    linear_algebra: LinearAlgebra,
    /// Publish an epsilon-differentially private model (secure PLR, stacking paper Algorithm
    /// 1): the Nodes scale each row to norm 1, both servers add a PLR noise vector under
    /// encryption, the study stops on the gradient norm alone (default within 1e-8 of the
    /// minimiser). No intercept; --standardize, --lambda and --tol do not apply.
    #[arg(long, value_name = "E", allow_negative_numbers = true)]
    dp_epsilon: Option<f64>,
    /// PLR's lambda (per row; the study's penalty becomes N (lambda + Delta)).
    #[arg(
        long,
        value_name = "L",
        default_value_t = 0.01,
        requires = "dp_epsilon",
        allow_negative_numbers = true
    )]
    dp_lambda: f64,
    /// Hypothesis transfer: centre the DP study's penalty at a source organization's published
    /// model (`dp fit --method plr --out`, or `stack publish`), lambda (eta/2 ||w||^2 +
    /// (1 - eta)/2 ||w - w_src||^2), as SimComb / PST-H (eta 0) do.
    #[arg(
        long,
        value_name = "FILE",
        requires = "dp_epsilon",
        conflicts_with = "penalty_centre"
    )]
    transfer_from: Option<PathBuf>,
    /// The weight of plain l2 against closeness to the source model.
    #[arg(
        long,
        value_name = "ETA",
        default_value_t = crate::dp::DEFAULT_ETA,
        requires = "transfer_from",
        allow_negative_numbers = true
    )]
    eta: f64,
}

fn parse_format(s: &str) -> Result<FixedFormat, String> {
    let (w, f) = s
        .split_once('/')
        .ok_or_else(|| format!("{s:?} is not WIDTH/FRACTION, e.g. 64/44"))?;
    let w: u32 = w
        .trim()
        .parse()
        .map_err(|_| format!("bad width in {s:?}"))?;
    let f: u32 = f
        .trim()
        .parse()
        .map_err(|_| format!("bad fraction in {s:?}"))?;
    FixedFormat::new(w, f).map_err(|e| e.to_string())
}

impl PlanArgs {
    fn plan(&self, parties: usize) -> Result<StudyPlan> {
        let protocol = match self.protocol {
            ProtocolName::Hessian => Protocol::Hessian,
            ProtocolName::Local => Protocol::Local,
            ProtocolName::Newton => Protocol::Newton,
        };
        let optimizer = match (protocol, self.accelerate) {
            (Protocol::Newton, true) => bail!("--accelerate applies to hessian and local only"),
            (Protocol::Newton, false) => Optimizer::Newton,
            (_, true) => Optimizer::AcceleratedPrivLogit {
                memory: privlogit::protocols::optimizer::DEFAULT_ANDERSON_MEMORY,
            },
            (_, false) => Optimizer::PrivLogit,
        };
        if self.key_bits < 2048 {
            bail!(
                "--key-bits {} is below 2048, which is not secure",
                self.key_bits
            );
        }
        let options = FitOptions::new()
            .lambda(self.lambda)
            .relative_tolerance(self.tol)
            .gradient_tolerance(self.gradient_tol)
            .max_iterations(self.max_iter)
            .penalty_centre(match (&self.penalty_centre, &self.transfer_from) {
                (Some(file), _) => Some(crate::centre::read(file)?),
                (None, Some(model)) => Some(crate::centre::transfer_centre(model, self.eta)?.0),
                (None, None) => None,
            });
        options.validate()?;
        let release = self.dp_epsilon.map(|epsilon| Release {
            epsilon,
            lambda: self.dp_lambda,
        });
        let plan = StudyPlan {
            protocol,
            optimizer,
            options,
            format: self.fixed,
            key_bits: self.key_bits,
            parties,
            standardize: self.standardize,
            // PLR has no intercept: its rows are scaled onto the unit sphere.
            intercept: !self.no_intercept && release.is_none(),
            linear_algebra: self.linear_algebra,
            mask_seed: None,
            release,
        };
        plan.validate()?;
        Ok(plan)
    }
}

/// How a party of a study between organizations connects (shared by `keyholder`,
/// `aggregator` and `node`).
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
    /// and the study stops.
    #[arg(long, value_name = "SECONDS", default_value_t = 6.0)]
    deadline: f64,
}

/// A party's network, its roster (if the study file names the parties) and its own entry.
pub(crate) struct Party {
    pub(crate) network: Network,
    pub(crate) roster: Option<Arc<Roster>>,
    /// This party's identity (TLS studies).
    identity: Option<Arc<Identity>>,
}

impl Party {
    /// The key holder's signer of the public key (TLS studies).
    fn endorser(&self) -> Option<Endorser> {
        self.identity.as_ref().map(|identity| Endorser {
            identity: Arc::clone(identity),
            study: self.network.study(),
        })
    }

    /// The signature a Node requires on the public key (TLS studies).
    fn key_trust(&self) -> Option<KeyTrust> {
        let roster = self.roster.as_ref().filter(|r| r.pinned())?;
        self.identity.as_ref()?;
        Some(KeyTrust {
            roster: Arc::clone(roster),
            study: self.network.study(),
        })
    }
}

impl NetArgs {
    /// This party's network in `role`; `name` is its name in a plaintext study without a
    /// roster.
    pub(crate) fn party(
        &self,
        study: Option<&std::path::Path>,
        role: Role,
        name: &str,
    ) -> Result<Party> {
        if !(self.deadline.is_finite() && (0.5..=3600.0).contains(&self.deadline)) {
            bail!(
                "--deadline {} is outside 0.5 to 3600 seconds",
                self.deadline
            );
        }
        let timing = Timing::with_deadline(Duration::from_secs_f64(self.deadline));
        let file = study.map(study_file::roster).transpose()?.flatten();
        let study_id = file.as_ref().map_or([0u8; 32], |f| f.id);
        let roster = file.map(|f| Arc::new(f.roster));
        if self.insecure_plaintext {
            if roster.as_ref().is_some_and(|r| r.pinned()) {
                bail!(
                    "--insecure-plaintext is refused: the study file names certificates for its parties, so they connect over TLS (drop the flag)"
                );
            }
            let name = roster
                .as_ref()
                .and_then(|r| match role {
                    Role::KeyHolder => Some(r.keyholder.name.clone()),
                    Role::Aggregator => Some(r.aggregator.name.clone()),
                    Role::Node => None,
                })
                .unwrap_or_else(|| name.to_string());
            say!(
                "warning: plain TCP (--insecure-plaintext): the traffic is readable on the path and parties are not authenticated"
            );
            let security = Security::InsecurePlaintext {
                roster: roster.clone(),
            };
            return Ok(Party {
                network: Network::new(security, role, &name, study_id, timing),
                roster,
                identity: None,
            });
        }
        let Some(roster) = roster.filter(|r| r.pinned()) else {
            bail!(
                "no party certificates: name every party in the study file ([keyholder], [aggregator] and [[node]] tables with fingerprint = \"sha256:...\", see `privlogit identity new`) and pass --study FILE --identity PREFIX, or pass --insecure-plaintext for plain TCP"
            );
        };
        let prefix = self
            .identity
            .as_ref()
            .context("--identity PREFIX is needed: this party's PREFIX.crt and PREFIX.key")?;
        let identity = Identity::load(prefix)
            .with_context(|| format!("cannot load the identity {}", prefix.display()))?;
        let fingerprint = identity.fingerprint();
        let me = roster
            .identify(identity.certificate(), &[], Side::Client)
            .map_err(|why| {
                anyhow::anyhow!("this party's certificate is not named in the study file: {why}")
            })?;
        if me.role != role {
            bail!(
                "this party's certificate {fingerprint} is {me}'s in the study file, not a {role}'s"
            );
        }
        let name = me.name.clone();
        let identity = Arc::new(identity);
        let security = Security::Tls {
            identity: Arc::clone(&identity),
            roster: Arc::clone(&roster),
        };
        Ok(Party {
            network: Network::new(security, role, &name, study_id, timing),
            roster: Some(roster),
            identity: Some(identity),
        })
    }
}

/// Runs `work`; on failure every peer of `network` is told why before the error is returned.
pub(crate) fn stop_peers_on_error<T>(
    network: &Network,
    work: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let result = work();
    if let Err(e) = &result {
        network.abort(&crate::log::message(e));
    }
    result
}

/// The address of `member` from the command line or else the study file.
pub(crate) fn address_of(
    given: Option<&String>,
    member: Option<&Member>,
    flag: &str,
) -> Result<String> {
    given
        .cloned()
        .or_else(|| member.and_then(|m| m.address.clone()))
        .with_context(|| format!("{flag} ADDR is needed (or an address for it in the study file)"))
}

/// The server a party dials: from the roster, or an anonymous one in plaintext.
pub(crate) fn server(roster: Option<&Roster>, role: Role) -> Member {
    let from_roster = roster.map(|r| match role {
        Role::KeyHolder => r.keyholder.clone(),
        _ => r.aggregator.clone(),
    });
    from_roster.unwrap_or_else(|| Member {
        role,
        name: if role == Role::KeyHolder {
            "keyholder"
        } else {
            "aggregator"
        }
        .into(),
        address: None,
        fingerprint: None,
    })
}

/// A Node's privacy ledger (shared by `study` and `node`): a differentially private study
/// charges each Node's data set (known by its rows) its epsilon when the study starts,
/// and is refused, before any noise is drawn, if that would pass the ledger's total.
#[derive(Debug, Args)]
pub struct LedgerArgs {
    /// The privacy ledger (as `dp fit --ledger`).
    #[arg(long, value_name = "FILE")]
    ledger: Option<PathBuf>,
    /// Total epsilon each data set may spend (needed to create the ledger).
    #[arg(long, value_name = "TOTAL", requires = "ledger")]
    budget: Option<f64>,
}

impl LedgerArgs {
    /// Charges `files` `release`'s epsilon each, or refuses; nothing without a ledger. A
    /// study that fails later stays charged: its participants may have seen noisy iterates.
    fn charge(&self, files: &[PathBuf], label: &str, release: Option<&Release>) -> Result<()> {
        let Some(path) = &self.ledger else {
            return Ok(());
        };
        let Some(release) = release else {
            bail!("--ledger applies to a differentially private study (--dp-epsilon)");
        };
        crate::dp::charge_files(path, self.budget, files, label, release.epsilon)
    }
}

/// Where the result goes (shared by `study` and `aggregator`).
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Write the result to FILE (atomically) instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// A differentially private study: write its cost report (iterations, rounds, timings,
    /// traffic: not covered by epsilon) to FILE instead of standard error.
    #[arg(long, value_name = "FILE")]
    cost: Option<PathBuf>,
}

/// Arguments of `privlogit study`.
#[derive(Debug, Args)]
#[command(args_override_self = true)]
pub struct StudyArgs {
    /// Settings from a TOML file whose keys are this command's long flags (flags given here
    /// override it).
    #[arg(long, value_name = "FILE")]
    study: Option<PathBuf>,
    /// The parties' data files, one per Node: `--party a.csv --party b.csv`.
    #[arg(long = "party", value_name = "FILE", num_args = 1.., required = true)]
    parties: Vec<PathBuf>,
    /// Name of the 0/1 label column.
    #[arg(long, value_name = "COLUMN")]
    label: String,
    #[command(flatten)]
    plan: PlanArgs,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    ledger: LedgerArgs,
    /// Reproducible differentially private runs (tests, experiments): both servers' noise
    /// drawn from SEED. Whoever knows SEED knows the noise: never in a real study.
    #[arg(long, value_name = "SEED", requires = "dp_epsilon")]
    noise_seed: Option<u64>,
    /// No progress on standard error.
    #[arg(long)]
    quiet: bool,
}

/// `privlogit study`: key holder, aggregator and one Node per file, in this process, over
/// loopback TCP.
pub fn run_study(args: StudyArgs) -> Result<Outcome> {
    let plan = args.plan.plan(args.parties.len())?;
    // Each Node streams its file (checked whole when opened), holding one chunk at a time.
    let datasets = args
        .parties
        .iter()
        .map(|p| open(p, &args.label))
        .collect::<Result<Vec<_>>>()?;
    // Columns that differ are named by file here, before any key is made (the aggregator,
    // which knows only Node numbers, would refuse them too).
    let names: Vec<Vec<String>> = datasets.iter().map(|d| d.names()).collect();
    let sources: Vec<String> = args
        .parties
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let named: Vec<(&str, &[String])> = sources
        .iter()
        .zip(&names)
        .map(|(s, n)| (s.as_str(), n.as_slice()))
        .collect();
    privlogit::data::partition::check_names(&named)?;
    let quiet = args.quiet;
    let say = |m: &str| {
        if !quiet {
            say!("{m}");
        }
    };
    say(&format!(
        "secure study: {} Nodes, protocol {:?}, optimizer {}, {}-bit Paillier key, values at {} \
         fractional bits, circuits {}/{}",
        datasets.len(),
        plan.protocol,
        plan.optimizer,
        plan.key_bits,
        plan.paillier_frac(),
        plan.format.width(),
        plan.format.frac()
    ));
    if let Some(model) = &args.plan.transfer_from {
        let (_, source) = crate::centre::transfer_centre(model, args.plan.eta)?;
        let target = datasets.first().map(|d| d.names()).unwrap_or_default();
        if source != target {
            bail!(
                "{}: the source model's features differ from {}'s (the centre must be in the \
                 target's coordinates)",
                model.display(),
                args.parties[0].display()
            );
        }
    }
    args.ledger
        .charge(&args.parties, &args.label, plan.release.as_ref())?;
    say("key holder: generating the key pair; setup: count, bound, factor circuit ...");
    let nodes = datasets
        .into_iter()
        .map(|d| (d.names(), NodeData::from_source(d, plan.intercept)))
        .collect();
    let mut progress = |r: &IterationRecord| {
        if !quiet {
            say!("{}", progress_line(r));
        }
    };
    let noise = plan
        .release
        .map(|_| privlogit::hybrid::secure_plr::shares(args.noise_seed));
    let run = inprocess::run_study(
        inprocess::loopback_pair,
        nodes,
        &plan,
        make_key,
        &mut progress,
        noise,
    )
    .map_err(anyhow::Error::from)?;
    finish(
        &run.outcome,
        Some((&run.keyholder, &run.nodes)),
        &plan,
        &args.output,
    )
}

/// Arguments of `privlogit keyholder`.
#[derive(Debug, Args)]
#[command(args_override_self = true)]
pub struct KeyholderArgs {
    /// The study file: settings, and the parties with their certificates and addresses.
    #[arg(long, value_name = "FILE")]
    study: Option<PathBuf>,
    /// Address to listen on for the aggregator, e.g. 0.0.0.0:7000 (default: the study file's).
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    #[command(flatten)]
    net: NetArgs,
    #[command(flatten)]
    state: StateArgs,
    /// Reproducible differentially private runs (tests): this server's noise share drawn
    /// from SEED. Whoever knows SEED knows the share: never in a real study.
    #[arg(long, value_name = "SEED")]
    noise_seed: Option<u64>,
}

impl KeyholderArgs {
    /// The study file, if given.
    pub fn study_file(&self) -> Option<&std::path::Path> {
        self.study.as_deref()
    }
}

/// `privlogit keyholder`: waits for the aggregator, makes the key pair it asks for, serves.
pub fn run_keyholder(args: KeyholderArgs) -> Result<Outcome> {
    let party = args
        .net
        .party(args.study.as_deref(), Role::KeyHolder, "keyholder")?;
    let roster = party.roster.as_deref();
    let listen = address_of(
        args.listen.as_ref(),
        roster.map(|r| &r.keyholder),
        "--listen",
    )?;
    let network = &party.network;
    stop_peers_on_error(network, || {
        let listener = network.listen(&listen)?;
        say!("key holder listening on {}", listener.local_addr()?);
        let expected = match roster {
            Some(r) if r.pinned() => Expected::Members(vec![r.aggregator.clone()]),
            _ => Expected::Anyone {
                role: Role::Aggregator,
                count: 1,
            },
        };
        let mut channels = listener.admit(&expected, PATIENCE, &mut |m| say!("{m}"))?;
        let channel = channels.pop().context("the aggregator")?;
        say!(
            "{} connected from {}",
            channel.pipe().peer(),
            channel.pipe().peer_address()
        );
        let key_file = args.state.key_file(&network.study())?;
        let mut store = FileKeyStore::new(key_file.clone(), args.state.resume());
        // Used only if the aggregator's plan is differentially private.
        let mut share = noise_share(args.noise_seed, 1);
        let result = study::run_keyholder(
            channel,
            make_key,
            party.endorser().as_ref(),
            &mut store,
            Some(&mut share),
        );
        let stats = match result {
            Ok(stats) => stats,
            Err(e) => {
                if key_file.exists() {
                    say!(
                        "the study key is kept in {} (secret): restart with --resume to continue \
                         the study",
                        key_file.display()
                    );
                }
                return Err(e.into());
            }
        };
        study_state::remove(&key_file);
        say!(
            "study done: {} AND gates garbled in {:.2} s, Paillier {:.2} s, {} sent",
            stats.and_gates,
            stats.gc_seconds,
            stats.paillier_seconds,
            human_bytes(stats.bytes_sent)
        );
        Ok(Outcome::Success)
    })
}

/// Arguments of `privlogit aggregator`.
#[derive(Debug, Args)]
#[command(args_override_self = true)]
pub struct AggregatorArgs {
    /// The study file: settings, and the parties with their certificates and addresses.
    #[arg(long, value_name = "FILE")]
    study: Option<PathBuf>,
    /// Address to listen on for the Nodes (default: the study file's).
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// The key holder's address (default: the study file's).
    #[arg(long, value_name = "ADDR")]
    keyholder: Option<String>,
    /// Number of Nodes to wait for (default: the study file's Nodes).
    #[arg(long, value_name = "N")]
    parties: Option<usize>,
    #[command(flatten)]
    net: NetArgs,
    #[command(flatten)]
    plan: PlanArgs,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    state: StateArgs,
    /// Reproducible runs (tests, benchmarks): draw the aggregator's masks from SEED, so that
    /// a run repeats another's rounding bit for bit. Whoever knows SEED and the key holder's
    /// view can unmask everything: never in a real study.
    #[arg(long, value_name = "SEED")]
    seed: Option<u64>,
    /// Reproducible differentially private runs (tests): this server's noise share drawn
    /// from SEED. Whoever knows SEED knows the share: never in a real study.
    #[arg(long, value_name = "SEED", requires = "dp_epsilon")]
    noise_seed: Option<u64>,
}

impl AggregatorArgs {
    /// The study file, if given.
    pub fn study_file(&self) -> Option<&std::path::Path> {
        self.study.as_deref()
    }
}

/// `privlogit aggregator`: waits for the Nodes, connects to the key holder, runs the study.
pub fn run_aggregator(args: AggregatorArgs) -> Result<Outcome> {
    let party = args
        .net
        .party(args.study.as_deref(), Role::Aggregator, "aggregator")?;
    let roster = party.roster.as_deref();
    let parties = match (args.parties, roster) {
        (Some(n), Some(r)) if n != r.nodes.len() => bail!(
            "--parties {n} but the study file names {} Nodes",
            r.nodes.len()
        ),
        (Some(n), _) => n,
        (None, Some(r)) => r.nodes.len(),
        (None, None) => bail!("--parties N is needed (or [[node]] tables in the study file)"),
    };
    let mut plan = args.plan.plan(parties)?;
    plan.mask_seed = args.seed;
    let listen = address_of(
        args.listen.as_ref(),
        roster.map(|r| &r.aggregator),
        "--listen",
    )?;
    let study_id = party.network.study();
    let checkpoint_file = args.state.checkpoint_file(&study_id)?;
    if plan.release.is_some() && args.state.resume() {
        bail!(
            "--resume: a differentially private study cannot be resumed (its noise is not kept, \
             and drawing it again would show the participants a second noisy trajectory); start \
             it again, charged again"
        );
    }
    let from = if args.state.resume() {
        let from = study_state::read_checkpoint(&checkpoint_file)?;
        match &from {
            Some(c) => say!(
                "resuming the study from iteration {} (checkpoint {})",
                c.progress.iterations(),
                checkpoint_file.display()
            ),
            None => say!(
                "no checkpoint at {}: starting the study from the beginning",
                checkpoint_file.display()
            ),
        }
        from
    } else {
        study_state::refuse_to_overwrite(&checkpoint_file)?;
        None
    };
    let keyholder_address = address_of(
        args.keyholder.as_ref(),
        roster.map(|r| &r.keyholder),
        "--keyholder",
    )?;
    let network = &party.network;
    stop_peers_on_error(network, || {
        let listener = network.listen(&listen)?;
        say!(
            "aggregator listening on {}, waiting for {parties} Nodes",
            listener.local_addr()?
        );
        let expected = match roster {
            Some(r) => Expected::Members(r.nodes.clone()),
            None => Expected::Anyone {
                role: Role::Node,
                count: parties,
            },
        };
        let nodes = listener.admit(&expected, PATIENCE, &mut |m| say!("{m}"))?;
        for (i, c) in nodes.iter().enumerate() {
            say!(
                "Node {} is {}, connected from {}",
                i + 1,
                c.pipe().peer(),
                c.pipe().peer_address()
            );
        }
        let keyholder = network.connect(
            &keyholder_address,
            &server(roster, Role::KeyHolder),
            PATIENCE,
        )?;
        let mut progress = |r: &IterationRecord| say!("{}", progress_line(r));
        let mut saved_iterations = None;
        let mut save = |c: &Checkpoint| {
            let key = PublicKey::from_bytes(&c.key)
                .or_else(|_| PublicKey::from_bytes_insecure_for_tests(&c.key))
                .map_err(std::io::Error::other)?;
            output::write_bytes(&checkpoint_file, &c.to_bytes(&key))?;
            saved_iterations = Some(c.progress.iterations());
            Ok(())
        };
        // A differentially private study keeps no checkpoint: it cannot be resumed (its noise
        // would be drawn again), so a kept one would only mislead.
        let continuity = plan.release.is_none().then_some(Continuity {
            study: study_id,
            from,
            save: &mut save,
        });
        let mut share = noise_share(args.noise_seed, 0);
        let outcome = study::run_aggregator(
            nodes,
            keyholder,
            &plan,
            &mut progress,
            continuity,
            plan.release.map(|_| &mut share as &mut dyn NoiseShare),
        );
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                if let Some(k) = saved_iterations {
                    say!(
                        "checkpoint kept at {} (after iteration {k}): restart every party, the \
                         aggregator and the key holder with --resume, to continue from there",
                        checkpoint_file.display()
                    );
                }
                return Err(e.into());
            }
        };
        let done = finish(&outcome, None, &plan, &args.output)?;
        study_state::remove(&checkpoint_file);
        Ok(done)
    })
}

/// Arguments of `privlogit node`.
#[derive(Debug, Args)]
#[command(args_override_self = true)]
pub struct NodeArgs {
    /// The study file: settings, and the parties with their certificates and addresses.
    #[arg(long, value_name = "FILE")]
    study: Option<PathBuf>,
    /// This Node's data file.
    #[arg(long, value_name = "FILE")]
    party: PathBuf,
    /// Name of the 0/1 label column.
    #[arg(long, value_name = "COLUMN")]
    label: String,
    /// The aggregator's address (default: the study file's).
    #[arg(long, value_name = "ADDR")]
    aggregator: Option<String>,
    /// This Node's name in a plaintext study (with TLS the name comes from the certificate).
    #[arg(long, value_name = "NAME", default_value = "node")]
    name: String,
    #[command(flatten)]
    net: NetArgs,
    #[command(flatten)]
    ledger: LedgerArgs,
}

/// `privlogit node`: joins the aggregator's study with one data file and serves it.
pub fn run_node(args: NodeArgs) -> Result<Outcome> {
    let party = args
        .net
        .party(args.study.as_deref(), Role::Node, &args.name)?;
    let roster = party.roster.as_deref();
    let aggregator = address_of(
        args.aggregator.as_ref(),
        roster.map(|r| &r.aggregator),
        "--aggregator",
    )?;
    let d = open(&args.party, &args.label)?;
    let rows = d.rows();
    let network = &party.network;
    stop_peers_on_error(network, || {
        let channel = network.connect(&aggregator, &server(roster, Role::Aggregator), PATIENCE)?;
        say!(
            "Node with {rows} rows joined {} at {}",
            channel.pipe().peer(),
            channel.pipe().peer_address()
        );
        let names = d.names();
        let files = [args.party.clone()];
        let mut consent = |release: &Release| {
            say!(
                "the study publishes an epsilon = {} differentially private model (secure PLR): \
                 this Node scales its rows to norm 1",
                release.epsilon
            );
            args.ledger
                .charge(&files, &args.label, Some(release))
                .map_err(|e| {
                    SecureError::Protocol(format!(
                        "this Node refuses the study: {}",
                        crate::log::message(&e)
                    ))
                })
        };
        let stats = study::run_node(
            channel,
            &names,
            NodeData::from_source(d, true),
            2048,
            party.key_trust(),
            Some(&mut consent),
        )?;
        say!(
            "study done: local sums {:.2} s, Paillier {:.2} s, {} sent",
            stats.local_seconds,
            stats.paillier_seconds,
            human_bytes(stats.bytes_sent)
        );
        Ok(Outcome::Success)
    })
}

/// A server's noise share for a differentially private study: from the OS, or from `seed` on
/// `stream` (the aggregator's 0, the key holder's 1, as `study --noise-seed`).
fn noise_share(seed: Option<u64>, stream: u64) -> PlrNoiseShare {
    match seed {
        Some(s) => PlrNoiseShare::seeded(s, stream),
        None => PlrNoiseShare::from_os(),
    }
}

/// A Node's data file (CSV, binary table or Parquet), streamed.
fn open(path: &std::path::Path, label: &str) -> Result<Arc<dyn RowSource>> {
    Ok(data::stream::open(path, &LoadOptions::new(label))?)
}

/// The key holder's key pair of the size the study asks (at least 2048 bits).
fn make_key(bits: u32) -> Result<SecretKey, SecureError> {
    let size = match bits {
        2048 => KeySize::Bits2048,
        3072 => KeySize::Bits3072,
        4096 => KeySize::Bits4096,
        other => {
            return Err(SecureError::Protocol(format!(
                "the study asks for a {other}-bit key; 2048, 3072 or 4096 are supported"
            )));
        }
    };
    Ok(KeyPair::generate(size, &mut rand::rng()).secret)
}

fn progress_line(r: &IterationRecord) -> String {
    let kind = if r.step == StepKind::Accelerated {
        "  (accelerated)"
    } else {
        ""
    };
    format!("iteration {:>4}  rounds {:>5}{kind}", r.iteration, r.rounds)
}

fn human_bytes(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.2} GiB", b as f64 / f64::from(1u32 << 30)),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1u32 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

#[derive(Serialize)]
struct JsonStudy<'a> {
    /// Secure PLR: what the published model is private under.
    #[serde(skip_serializing_if = "Option::is_none")]
    differential_privacy: Option<JsonRelease>,
    protocol: String,
    optimizer: String,
    status: &'a str,
    converged: bool,
    iterations: usize,
    rounds: usize,
    rows: usize,
    names: &'a [String],
    coefficients: Vec<f64>,
    /// Pooled means and scales when standardised: with them the model applies to raw rows
    /// (`privlogit::model::Model::from_output`).
    standardization: Option<Standardization>,
    /// The same model in the data's own units (intercept and one weight per feature).
    raw_model: Option<Model>,
    setup_seconds: f64,
    seconds: f64,
    seconds_per_iteration: f64,
    and_gates: u64,
    bytes_from_each_node: &'a [u64],
    bytes_to_nodes: u64,
    bytes_aggregator_to_keyholder: u64,
    bytes_keyholder_to_aggregator: Option<u64>,
    gc_seconds: f64,
    waiting_for_nodes_seconds: f64,
    node_local_seconds: Option<Vec<f64>>,
    node_paillier_seconds: Option<Vec<f64>>,
    keyholder_paillier_seconds: Option<f64>,
    linear_algebra: String,
    masked_seconds: f64,
    masked_cross_term_seconds: f64,
    masked_waiting_for_keyholder_seconds: f64,
    masked_pivot_circuit_seconds: f64,
    masked_products: u64,
    masked_pivots: u64,
    keyholder_masked_paillier_seconds: Option<f64>,
    keyholder_masked_product_seconds: Option<f64>,
    keyholder_masked_decryptions: Option<u64>,
    keyholder_masked_encryptions: Option<u64>,
}

/// A secure PLR study's budget, as published with its model.
#[derive(Serialize, Clone)]
struct JsonRelease {
    /// Per Node data set.
    epsilon: f64,
    lambda: f64,
    /// Algorithm 1's eps' and Delta for this N (each server's noise drawn with eps').
    epsilon_prime: f64,
    delta: f64,
    /// The study's penalty, N (lambda + Delta).
    penalty: f64,
    noise: &'static str,
}

fn release_report(plan: &StudyPlan, rows: usize) -> Result<Option<JsonRelease>> {
    let Some(release) = &plan.release else {
        return Ok(None);
    };
    let budget = privlogit::hybrid::secure_plr::budget(release, rows)?;
    Ok(Some(JsonRelease {
        epsilon: release.epsilon,
        lambda: release.lambda,
        epsilon_prime: budget.epsilon_prime,
        delta: budget.delta,
        penalty: privlogit::hybrid::secure_plr::penalty(release, &budget, rows),
        noise: "b = b1 + b2, one PLR noise vector drawn by each server",
    }))
}

/// What a differentially private study releases: the model, its names, N and the public
/// settings (protocol, the budget and its split), nothing that depends on the data or the
/// noise beyond the coefficients.
fn released_model(o: &StudyOutcome, plan: &StudyPlan, json: bool) -> Result<String> {
    let release = release_report(plan, o.rows)?;
    let protocol = format!("{:?}", plan.protocol).to_lowercase();
    if json {
        let v = serde_json::json!({
            "differential_privacy": release,
            "protocol": protocol,
            "optimizer": o.fit.optimizer.to_string(),
            "rows": o.rows,
            "names": o.names,
            "coefficients": o.fit.beta.to_vec(),
        });
        return Ok(serde_json::to_string_pretty(&v)? + "\n");
    }
    let mut s = String::new();
    if let Some(r) = &release {
        s.push_str(&privacy_line(r));
    }
    let _ = writeln!(s, "protocol        {protocol}");
    let _ = writeln!(s, "N               {}", o.rows);
    s.push_str(&coefficient_table(&o.names, &o.fit.beta, None));
    Ok(s)
}

/// The text result's line on a secure PLR study's budget.
fn privacy_line(r: &JsonRelease) -> String {
    format!(
        "privacy         epsilon {} per Node data set (secure PLR: lambda {}, eps' {:.6}, Delta \
         {:.3e}, noise b1 + b2 from the two servers)\n",
        r.epsilon, r.lambda, r.epsilon_prime, r.delta
    )
}

/// The text result's coefficients, one per line under a header; with `raw`, the same model in
/// the data's own units beside them (a standardised study).
fn coefficient_table(names: &[String], beta: &ndarray::Array1<f64>, raw: Option<&Model>) -> String {
    let width = names.iter().map(String::len).max().unwrap_or(0).max(11);
    let mut s = match raw {
        Some(_) => format!(
            "\n{:<width$}  {:>14}  {:>14}\n",
            "name", "standardised", "raw units"
        ),
        None => format!("\n{:<width$}  coefficient\n", "name"),
    };
    let mut weights = raw.map(|m| m.weights.iter());
    for (n, b) in names.iter().zip(beta.iter()) {
        match (raw, weights.as_mut()) {
            (Some(m), Some(w)) => {
                let r = if n == privlogit::model::INTERCEPT {
                    m.intercept
                } else {
                    *w.next().expect("one weight per feature")
                };
                let _ = writeln!(s, "{n:<width$}  {b:>14.8}  {r:>14.8}");
            }
            _ => {
                let _ = writeln!(s, "{n:<width$}  {b:>14.8}");
            }
        }
    }
    // Without a fitted intercept the raw-unit model still has one (the means' offset).
    if let Some(m) =
        raw.filter(|_| names.first().map(String::as_str) != Some(privlogit::model::INTERCEPT))
    {
        let _ = writeln!(
            s,
            "{:<width$}  {:>14}  {:>14.8}",
            "(offset)", "", m.intercept
        );
    }
    s
}

/// The pooled statistics of a standardised study, named as its features.
fn standardization_of(o: &StudyOutcome) -> Option<Standardization> {
    let (means, scales) = o.standardization.clone()?;
    let names = o
        .names
        .iter()
        .filter(|n| n.as_str() != privlogit::model::INTERCEPT)
        .cloned()
        .collect();
    Some(Standardization {
        names,
        means,
        scales,
    })
}

/// A differentially private study's full report, labelled as outside its guarantee.
fn cost_report(rendered: &str, json: bool) -> Result<String> {
    const NOTE: &str = "NOT covered by epsilon: iterations, rounds, timings and traffic depend \
                        on the data and the noise; for the study's operators, not for release";
    if json {
        let mut v: serde_json::Value = serde_json::from_str(rendered)?;
        v["cost_report"] = serde_json::Value::String(NOTE.into());
        return Ok(serde_json::to_string_pretty(&v)? + "\n");
    }
    Ok(format!("cost report ({NOTE})\n{rendered}"))
}

fn finish(
    o: &StudyOutcome,
    parties: Option<(&KeyholderStats, &[NodeStats])>,
    plan: &StudyPlan,
    output: &OutputArgs,
) -> Result<Outcome> {
    let (json, out) = (output.json, output.out.as_ref());
    let keyholder = parties.map(|(k, _)| k);
    let nodes = parties.map(|(_, n)| n);
    let r = &o.fit;
    let masked = &o.aggregator.solver;
    let per_iteration = (o.seconds - o.setup_seconds) / r.iterations.max(1) as f64;
    let release = release_report(plan, o.rows)?;
    let standardization = standardization_of(o);
    let raw_model = standardization
        .as_ref()
        .map(|s| Model::from_fit(&o.names, r.beta.as_slice().unwrap_or_default(), Some(s)))
        .transpose()?;
    let rendered = if json {
        let report = JsonStudy {
            differential_privacy: release,
            protocol: format!("{:?}", plan.protocol).to_lowercase(),
            optimizer: r.optimizer.to_string(),
            status: r.status.name(),
            converged: r.status == Status::Converged,
            iterations: r.iterations,
            rounds: r.rounds,
            rows: o.rows,
            names: &o.names,
            coefficients: r.beta.to_vec(),
            standardization: standardization.clone(),
            raw_model: raw_model.clone(),
            setup_seconds: o.setup_seconds,
            seconds: o.seconds,
            seconds_per_iteration: per_iteration,
            and_gates: o.aggregator.and_gates,
            bytes_from_each_node: &o.aggregator.bytes_from_each_node,
            bytes_to_nodes: o.aggregator.bytes_to_nodes,
            bytes_aggregator_to_keyholder: o.aggregator.bytes_to_keyholder,
            bytes_keyholder_to_aggregator: keyholder.map(|k| k.bytes_sent),
            gc_seconds: o.aggregator.gc_seconds,
            waiting_for_nodes_seconds: o.aggregator.node_wait_seconds,
            node_local_seconds: nodes.map(|n| n.iter().map(|s| s.local_seconds).collect()),
            node_paillier_seconds: nodes.map(|n| n.iter().map(|s| s.paillier_seconds).collect()),
            keyholder_paillier_seconds: keyholder.map(|k| k.paillier_seconds),
            linear_algebra: o.aggregator.linear_algebra.to_string(),
            masked_seconds: masked.masked_seconds,
            masked_cross_term_seconds: masked.masked.cross_seconds,
            masked_waiting_for_keyholder_seconds: masked.masked.wait_seconds,
            masked_pivot_circuit_seconds: masked.masked.leaf_seconds,
            masked_products: masked.masked.products,
            masked_pivots: masked.masked.leaves,
            keyholder_masked_paillier_seconds: keyholder.map(|k| k.masked.paillier_seconds),
            keyholder_masked_product_seconds: keyholder.map(|k| k.masked.product_seconds),
            keyholder_masked_decryptions: keyholder.map(|k| k.masked.decryptions),
            keyholder_masked_encryptions: keyholder.map(|k| k.masked.encryptions),
        };
        let mut s = serde_json::to_string_pretty(&report)?;
        s.push('\n');
        s
    } else {
        let mut s = String::new();
        if let Some(r) = &release {
            s.push_str(&privacy_line(r));
        }
        let _ = writeln!(s, "protocol        {:?} ({})", plan.protocol, r.optimizer);
        let _ = writeln!(s, "status          {}", r.status.name());
        let _ = writeln!(
            s,
            "Nodes           {} (N = {})",
            o.aggregator.bytes_from_each_node.len(),
            o.rows
        );
        let _ = writeln!(s, "iterations      {}", r.iterations);
        let _ = writeln!(s, "rounds          {}", r.rounds);
        let _ = writeln!(
            s,
            "setup           {:.2} s (key pair, handshake, counts, the bound and its inverse or factor)",
            o.setup_seconds
        );
        let _ = writeln!(s, "per iteration   {:.3} s", per_iteration);
        let _ = writeln!(s, "total           {:.2} s", o.seconds);
        let _ = writeln!(
            s,
            "linear algebra  {}{}",
            o.aggregator.linear_algebra,
            if masked.masked.products > 0 {
                format!(
                    " ({} masked products, {} pivot circuits)",
                    masked.masked.products, masked.masked.leaves
                )
            } else {
                String::new()
            }
        );
        if masked.masked_seconds > 0.0 {
            let _ = writeln!(
                s,
                "masked          {:.2} s: cross terms {:.2} s, waiting for the key holder {:.2} s, \
                 pivot circuits {:.2} s{}",
                masked.masked_seconds,
                masked.masked.cross_seconds,
                masked.masked.wait_seconds,
                masked.masked.leaf_seconds,
                keyholder.map_or(String::new(), |k| format!(
                    "; key holder: Paillier {:.2} s ({} decryptions, {} encryptions), \
                     products {:.2} s",
                    k.masked.paillier_seconds,
                    k.masked.decryptions,
                    k.masked.encryptions,
                    k.masked.product_seconds
                ))
            );
        }
        let _ = writeln!(
            s,
            "garbled         {} AND gates, {:.2} s in circuits",
            o.aggregator.and_gates, o.aggregator.gc_seconds
        );
        let _ = writeln!(
            s,
            "waiting         {:.2} s for the Nodes (their local compute and encryption)",
            o.aggregator.node_wait_seconds
        );
        if let (Some(k), Some(n)) = (keyholder, nodes) {
            let local: Vec<String> = n
                .iter()
                .map(|s| format!("{:.2}", s.local_seconds))
                .collect();
            let paillier: Vec<String> = n
                .iter()
                .map(|s| format!("{:.2}", s.paillier_seconds))
                .collect();
            let _ = writeln!(s, "local compute   Nodes {} s", local.join(" / "));
            let _ = writeln!(
                s,
                "Paillier        Nodes {} s; key holder {:.2} s (besides masked arithmetic)",
                paillier.join(" / "),
                k.paillier_seconds
            );
        }
        let sent: Vec<String> = o
            .aggregator
            .bytes_from_each_node
            .iter()
            .map(|&b| human_bytes(b))
            .collect();
        let _ = writeln!(
            s,
            "bytes sent      Nodes {}; aggregator to Nodes {}, to key holder {}{}",
            sent.join(" / "),
            human_bytes(o.aggregator.bytes_to_nodes),
            human_bytes(o.aggregator.bytes_to_keyholder),
            keyholder.map_or(String::new(), |k| format!(
                "; key holder {}",
                human_bytes(k.bytes_sent)
            ))
        );
        s.push_str(&coefficient_table(&o.names, &r.beta, raw_model.as_ref()));
        s
    };
    let released = match &plan.release {
        None => rendered,
        Some(_) => {
            // The release carries what epsilon covers: the model and public settings. How the
            // study got there depends on the data and the noise: the operators' cost report.
            let released = released_model(o, plan, json)?;
            let cost = cost_report(&rendered, json)?;
            match &output.cost {
                Some(path) => output::write_text(path, &cost)
                    .with_context(|| format!("cannot write {}", path.display()))?,
                None => eprint!("{cost}"),
            }
            released
        }
    };
    match out {
        Some(path) => output::write_text(path, &released)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(released.as_bytes())
                .and_then(|()| stdout.flush())
                .context("cannot write to standard output")?;
        }
    }
    if plan.release.is_none() && output.cost.is_some() {
        say!("--cost applies to a differentially private study; the report is in the result");
    }
    match r.status {
        Status::Diverged(reason) => {
            say!(
                "error: diverged at iteration {}: {}",
                r.iterations,
                reason.describe()
            );
            Ok(Outcome::Diverged)
        }
        Status::MaxIterations => {
            say!(
                "warning: stopped after {} iterations without meeting the stopping rule (raise --max-iter)",
                r.iterations
            );
            Ok(Outcome::Success)
        }
        Status::Converged => Ok(Outcome::Success),
    }
}
