//! The roles of a secure study as one call each: a study with every party in this process
//! ([`InProcess`]), and the key holder ([`Keyholder`]), the aggregator ([`Aggregator`]) and a
//! Node ([`Node`]) of a study between organizations. Each is built from a [`Spec`] (and the
//! study file) by a constructor that validates everything it can before a byte is sent, and
//! only a built role runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::fit::GlmColumns;
use privlogit_circuits::channel::Channel as _;
use privlogit_protocols::disclosure::Disclosure;
use privlogit_protocols::paillier::{KeyPair, KeySize, SecretKey};
use privlogit_protocols::rows::RowSource;
use privlogit_protocols::secure::checkpoint::Checkpoint;
use privlogit_protocols::secure::inprocess;
use privlogit_protocols::secure::keyholder::{KeyStore, KeyholderStats, NoKeyStore};
use privlogit_protocols::secure::node::{NodeData, NodeStats};
use privlogit_protocols::secure::perturbation::{NoiseShare, Release};
use privlogit_protocols::secure::study_protocol::{self, Continuity, StudyPlan};
use privlogit_protocols::secure::{Refusal, SecureError};
use privlogit_protocols::transport::{Expected, Link, Network, Role};
use privlogit_protocols::{Glm, IterationRecord, StepKind};

use super::file::StudyFile;
use super::nested;
use super::party::{Connection, PATIENCE, Party, address_of};
use super::plan::describe;
use super::result::{Shown, StudyResult, human_bytes};
use super::sealing::CheckpointSeal;
use super::state::{self, FileKeyStore, StateDir};
use crate::charge;
use crate::data::{self, LoadOptions};
use crate::dp::ledger::Guarantee;
use crate::error::{Error, PlanError, SettingProblem};
use crate::hybrid::secure_plr::PlrNoiseShare;
use crate::output;
use crate::progress::Say;
use crate::settings::{Reader, Spec};

/// Where a Node's rows come from: a file (streamed, checked whole when opened) or rows a
/// caller holds (Python's arrays and data frames).
#[derive(Debug, Clone)]
pub enum NodeRows {
    /// A data file and its label column.
    File {
        /// The file.
        path: PathBuf,
        /// The label column.
        label: String,
        /// Columns left out.
        exclude: Vec<String>,
    },
    /// Rows in memory, with a name for messages.
    Rows {
        /// What to call them ("party 2", a data frame's name).
        source: String,
        /// The rows (their feature names included).
        rows: Arc<dyn RowSource>,
    },
}

#[derive(Debug)]
/// A Node's rows opened for the model: where they come from, the rows (offset and weight
/// columns moved last) and the feature names.
struct Opened {
    source: String,
    rows: Arc<dyn RowSource>,
    names: Vec<String>,
}

impl NodeRows {
    /// The rows, opened for the model `columns` names: labels checked against its family, its
    /// offset and weight columns found by name and moved after the features, the weights
    /// checked positive.
    fn open(&self, columns: &GlmColumns, site: Option<(usize, usize)>) -> Result<Opened, Error> {
        let (source, rows) = match self {
            NodeRows::File {
                path,
                label,
                exclude,
            } => {
                let options = LoadOptions {
                    family: columns.family,
                    exclude: exclude.clone(),
                    ..LoadOptions::new(label.as_str())
                };
                (
                    path.display().to_string(),
                    data::stream::open(path, &options)?,
                )
            }
            NodeRows::Rows { source, rows } => (source.clone(), Arc::clone(rows)),
        };
        // Per-site indicators come right after the file's columns, before the offset and
        // weight move to the end.
        let rows = match site {
            Some((k, parties)) => crate::fit::sites::rows(rows, k, parties),
            None => rows,
        };
        let (rows, names) = crate::fit::model_rows(rows, &source, columns)?;
        Ok(Opened {
            source,
            rows,
            names,
        })
    }
}

/// A Node's held-out rows from `path`, read as its training rows are (label, family, excluded,
/// offset and weight columns) and refused unless their features are `names`.
fn held_out_rows(
    spec: &Spec,
    path: &std::path::Path,
    names: &[String],
    columns: &GlmColumns,
    site: Option<(usize, usize)>,
) -> Result<Arc<dyn RowSource>, Error> {
    let label = spec.label.clone().ok_or_else(|| PlanError::Missing {
        setting: "label",
        value: "COLUMN",
        why: "the name of the label column",
    })?;
    let rows = NodeRows::File {
        path: path.to_path_buf(),
        label,
        exclude: spec.exclude.clone(),
    };
    let opened = rows.open(columns, site)?;
    if opened.names != names {
        return Err(PlanError::HeldOutFeatures {
            source_name: opened.source.to_string(),
            found: opened.names.clone(),
            expected: names.to_vec(),
        }
        .into());
    }
    Ok(opened.rows)
}

/// The Nodes' rows a spec names: its `party` files with its `label`.
pub fn files_of(spec: &Spec) -> Result<Vec<NodeRows>, Error> {
    let label = spec.label.clone().ok_or_else(|| PlanError::Missing {
        setting: "label",
        value: "COLUMN",
        why: "the name of the 0/1 label column",
    })?;
    Ok(spec
        .party
        .iter()
        .map(|path| NodeRows::File {
            path: path.clone(),
            label: label.clone(),
            exclude: spec.exclude.clone(),
        })
        .collect())
}

/// Refuses more columns than a study takes (the intercept counted), before connecting: the
/// aggregator would refuse them after every party had joined.
fn check_width(source: &str, names: &[String]) -> Result<(), Error> {
    let most = privlogit_protocols::secure::MAX_DIMENSION;
    if names.len() + 1 > most {
        return Err(PlanError::TooManyFeatures {
            source_name: source.to_string(),
            features: names.len(),
            most,
        }
        .into());
    }
    Ok(())
}

/// Refuses more held-out rows than one ranking takes, before any key is made (the servers
/// would refuse them after the fit).
fn check_held_out_total(rows: usize) -> Result<(), Error> {
    let most = privlogit_protocols::secure::ranking::MAX_RANKED_ROWS;
    if rows > most {
        return Err(Error::bad(
            "test_party",
            SettingProblem::TooMany {
                given: rows as u64,
                most: most as u64,
                what: "held-out rows",
                why: " (a study ranks them for its AUC)",
            },
        ));
    }
    Ok(())
}

/// A Node's site (its place among the study file's Nodes, from 0) and the count of sites, for
/// `--site-intercepts`: every Node finds the same numbering in the shared study file.
fn site_of(
    name: &str,
    roster: Option<&privlogit_protocols::transport::Roster>,
) -> Result<(usize, usize), Error> {
    let roster = roster.ok_or_else(|| {
        Error::bad(
            "site_intercepts",
            SettingProblem::Refused {
                why: "needs the study file: a Node numbers its site by its place among the study \
                      file's [[node]] tables; give setting `study` with them",
            },
        )
    })?;
    let k = roster
        .nodes
        .iter()
        .position(|m| m.name == name)
        .ok_or_else(|| {
            Error::bad(
                "site_intercepts",
                SettingProblem::NotInRoster {
                    name: name.to_string(),
                },
            )
        })?;
    Ok((k, roster.nodes.len()))
}

/// A study with every party in this process, over loopback TCP, validated and ready to run.
#[derive(Debug)]
pub struct InProcess {
    plan: StudyPlan,
    nodes: Vec<Opened>,
    /// Each Node's held-out rows (`--test-party`, in the order of the Nodes), or none.
    held_out: Vec<Arc<dyn RowSource>>,
    /// The features a nested model leaves out (`--drop`), by index and name.
    dropped: Vec<(usize, String)>,
    ledger: Option<(PathBuf, Option<f64>, Vec<PathBuf>, String)>,
    noise_seed: Option<u64>,
    shown: Shown,
    /// The counts under which a Node refuses (each checks its own).
    disclosure: Disclosure,
    /// Masked products from a dealer thread (setting `dealer_thread`).
    dealer: bool,
}

impl InProcess {
    /// The study `spec` describes over `nodes` (its `party` files unless given): the plan
    /// validated, every Node's rows opened and their columns checked against each other
    /// (named by file), the transfer source's features against the target's.
    pub fn new(spec: &Spec, nodes: Option<Vec<NodeRows>>) -> Result<Self, Error> {
        let shown = Shown::of(spec)?;
        let nodes = match nodes {
            Some(n) => n,
            None => {
                spec.check_distinct_parties()?;
                files_of(spec)?
            }
        };
        if nodes.is_empty() {
            return Err(PlanError::Missing {
                setting: "party",
                value: "FILE",
                why: "a study needs at least one Node (repeat it, one FILE per Node)",
            }
            .into());
        }
        let plan = spec.in_process_plan(nodes.len())?;
        let columns = crate::fit::GlmColumns::of(spec)?;
        let sites = |k: usize| spec.site_intercepts.then_some((k, nodes.len()));
        let opened = nodes
            .iter()
            .enumerate()
            .map(|(k, n)| n.open(&columns, sites(k)))
            .collect::<Result<Vec<_>, _>>()?;
        for o in &opened {
            check_width(&o.source, &o.names)?;
        }
        if spec.site_intercepts {
            // The indicators are the features' last K - 1 names; the file's own come before.
            let features = &opened[0].names;
            let own = features.len().saturating_sub(nodes.len() - 1);
            crate::fit::sites::check(nodes.len(), spec.intercept(), &features[..own])?;
        }
        // Columns that differ are named by file here, before any key is made (the aggregator,
        // which knows only Node numbers, would refuse them too).
        let names: Vec<Vec<String>> = opened.iter().map(|o| o.names.clone()).collect();
        let named: Vec<(&str, &[String])> = opened
            .iter()
            .zip(&names)
            .map(|(o, n)| (o.source.as_str(), n.as_slice()))
            .collect();
        data::partition::check_names(&named)?;
        if spec.evaluate && spec.test_party.is_empty() {
            return Err(Error::bad(
                "evaluate",
                SettingProblem::Refused {
                    why: "needs setting `test_party`: a study in one process evaluates on setting \
                          `test_party` FILE, one per setting `party` (the held-out rows each Node \
                          keeps); give them (they imply setting `evaluate`)",
                },
            ));
        }
        if !spec.test_party.is_empty() && spec.test_party.len() != opened.len() {
            return Err(Error::bad(
                "test_party",
                SettingProblem::PerParty {
                    given: spec.test_party.len(),
                    parties: opened.len(),
                    of: "Nodes",
                },
            ));
        }
        let held_out = spec
            .test_party
            .iter()
            .zip(&names)
            .enumerate()
            .map(|(k, (path, names))| held_out_rows(spec, path, names, &columns, sites(k)))
            .collect::<Result<Vec<_>, _>>()?;
        check_held_out_total(held_out.iter().map(|r| r.rows()).sum())?;
        let dropped = if spec.drop.is_empty() {
            Vec::new()
        } else {
            nested::check_plan(&plan)?;
            nested::columns(&spec.drop, &names[0])?
        };
        if let Some(model) = &spec.transfer_from {
            let (_, source) = super::centre::transfer_centre(model, spec.eta)?;
            if source != names[0] {
                return Err(PlanError::CentreFeatures {
                    model: model.clone(),
                    target: opened[0].source.to_string(),
                }
                .into());
            }
        }
        let ledger = match &spec.ledger {
            None => None,
            Some(path) => {
                if plan.release.is_none() {
                    return Err(Error::refused(
                        "setting `ledger` applies to a differentially private study (setting `dp_epsilon`)",
                    ));
                }
                let files = nodes
                    .iter()
                    .map(|n| match n {
                        NodeRows::File { path, .. } => Ok(path.clone()),
                        NodeRows::Rows { source, .. } => Err(Error::from(PlanError::LedgerRows {
                            source_name: source.to_string(),
                            why: "; charge rows in memory with privlogit.dp's ledger",
                        })),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let label = spec.label.clone().unwrap_or_default();
                Some((path.clone(), spec.budget, files, label))
            }
        };
        Ok(Self {
            plan,
            nodes: opened,
            held_out,
            dropped,
            ledger,
            noise_seed: spec.noise_seed,
            shown,
            disclosure: spec.disclosure(),
            dealer: spec.dealer_thread,
        })
    }

    /// The plan it runs.
    pub fn plan(&self) -> &StudyPlan {
        &self.plan
    }

    /// Runs the study: the ledger charged first (a differentially private study), then the
    /// key holder, the aggregator and every Node; progress lines go to `say` (none when
    /// `None`).
    pub fn run(self, say: Option<Say<'_>>) -> Result<StudyResult, Error> {
        let quiet = |_: &str| {};
        let say: Say<'_> = say.unwrap_or(&quiet);
        let plan = self.plan;
        let mut described = describe(&plan, self.nodes.len());
        if self.dealer {
            described.push_str("; masked products from a dealer thread");
        }
        say(&described);
        if let (Some((path, budget, files, label)), Some(release)) = (&self.ledger, &plan.release) {
            charge::files(
                path,
                *budget,
                files,
                label,
                Guarantee::pure(release.epsilon),
                say,
            )?;
        }
        say("key holder: generating the key pair; setup: count, bound, factor circuit ...");
        let reduced: Vec<(Vec<String>, Arc<dyn RowSource>)> = if self.dropped.is_empty() {
            Vec::new()
        } else {
            self.nodes
                .iter()
                .map(|o| nested::without(&o.names, &o.rows, &self.dropped))
                .collect()
        };
        let mut held_out = self.held_out.into_iter();
        let nodes = self
            .nodes
            .into_iter()
            .map(|o| {
                let mut data = NodeData::from_source(o.rows, plan.intercept)
                    .with_glm(plan.glm)
                    .with_disclosure(self.disclosure);
                if let Some(rows) = held_out.next() {
                    data = data.with_test_rows(rows);
                }
                (o.names, data)
            })
            .collect();
        let noise = plan
            .release
            .map(|_| crate::hybrid::secure_plr::shares(self.noise_seed));
        let here =
            |plan, nodes, noise, shown| run_here(plan, nodes, noise, shown, self.dealer, say);
        let mut result = here(plan, nodes, noise, self.shown.clone())?;
        if !reduced.is_empty() {
            let dropped: Vec<String> = self.dropped.into_iter().map(|(_, n)| n).collect();
            say(&format!(
                "nested model without {}: a second secure study",
                dropped.join(", ")
            ));
            let plan = nested::plan(&result.plan);
            let nodes = reduced
                .into_iter()
                .map(|(names, rows)| {
                    let data = NodeData::from_source(rows, plan.intercept)
                        .with_glm(plan.glm)
                        .with_disclosure(self.disclosure);
                    (names, data)
                })
                .collect();
            let shown = result.shown.clone();
            let nested_result = here(plan, nodes, None, shown)?;
            result.likelihood_ratio = Some(nested::test(&result, &nested_result, dropped)?);
        }
        Ok(result)
    }
}

/// One secure study with every party in this process over loopback (and a dealer thread when
/// `dealer`), its progress to `say`.
fn run_here(
    plan: StudyPlan,
    nodes: Vec<(Vec<String>, NodeData)>,
    noise: Option<privlogit_protocols::secure::perturbation::NoiseShares>,
    shown: Shown,
    dealer: bool,
    say: Say<'_>,
) -> Result<StudyResult, Error> {
    let mut progress = |r: &IterationRecord| say(&progress_line(r));
    let products = if dealer {
        inprocess::Products::DealerThread
    } else {
        inprocess::Products::Paillier
    };
    let run = inprocess::run_study(
        inprocess::loopback_pair,
        nodes,
        &plan,
        make_key,
        &mut progress,
        noise,
        products,
    )?;
    Ok(StudyResult {
        outcome: run.outcome,
        plan,
        keyholder: Some(run.keyholder),
        nodes: Some(run.nodes),
        shown,
        likelihood_ratio: None,
    })
}

/// The connection settings of `spec` and its study file.
pub(crate) fn connection<'a>(spec: &'a Spec, file: Option<&'a StudyFile>) -> Connection<'a> {
    Connection {
        file,
        identity: spec.identity.as_deref(),
        insecure_plaintext: spec.insecure_plaintext,
        deadline: spec.deadline,
    }
}

/// The key holder of a study between organizations, ready to serve.
#[derive(Debug)]
pub struct Keyholder {
    party: Party,
    listen: String,
    state: StateDir,
    resume: bool,
    noise_seed: Option<u64>,
    /// Studies to serve one after the other: 2 with a nested model (`--drop`).
    studies: usize,
}

impl Keyholder {
    /// The key holder `spec` (read with [`Reader::KeyHolder`]) and the study file describe:
    /// its identity and the roster checked, its address found.
    pub fn new(spec: &Spec, file: Option<&StudyFile>, say: Say<'_>) -> Result<Self, Error> {
        let party = server_party(spec, file, Role::KeyHolder, say)?;
        let listen = address_of(
            spec.listen.as_ref(),
            party.roster().map(|r| &r.keyholder),
            "setting `listen`",
        )?;
        Ok(Self {
            party,
            listen,
            state: StateDir::new(spec.state.clone()),
            resume: spec.resume,
            noise_seed: spec.noise_seed,
            studies: 1 + usize::from(!spec.drop.is_empty()),
        })
    }

    /// This role's network, to stop it from another thread ([`Network::abort`]: the peers are
    /// told why), as a Python caller does on Ctrl-C.
    pub fn network(&self) -> Network {
        self.party.network.clone()
    }

    /// Waits for the aggregator, makes the key pair it asks for, serves until the study ends
    /// (and then the nested model's study, with `--drop`, under a key pair of its own).
    pub fn run(self, say: Say<'_>) -> Result<KeyholderStats, Error> {
        let party = &self.party;
        let network = &party.network;
        party.stop_peers_on_error(|| {
            // A kept key is an interrupted run's, which only `resume` continues: starting over
            // would replace it (and a refused start used to delete it).
            let key_file = self.state.key_file(&network.study())?;
            if !self.resume && key_file.exists() {
                return Err(PlanError::KeyExists { path: key_file }.into());
            }
            if self.resume
                && !key_file.exists()
                && let Some(note) =
                    state::other_studies_note(&self.state.others(&key_file, "key"), "key")
            {
                say(&note);
            }
            let listener = network.listen(&self.listen).map_err(Error::Network)?;
            let bound = listener.local_addr().map_err(Error::Network)?;
            say(&format!("key holder listening on {bound}"));
            let mut stats = self.serve(listener, false, say)?;
            for _ in 1..self.studies {
                // Admitting closed the socket: the nested study's aggregator dials the same
                // address (the port actually bound, when --listen asked for any).
                let listener = network.listen(&bound.to_string()).map_err(Error::Network)?;
                say("serving the nested model's study (setting `drop`)");
                stats = self.serve(listener, true, say)?;
            }
            Ok(stats)
        })
    }

    /// Admits the aggregator on `listener` and serves one study: the full one (its key kept
    /// for `--resume` until it ends) or the `nested` model's (not resumable: the aggregator
    /// keeps no checkpoint of it, so its key stays in memory).
    fn serve(
        &self,
        listener: privlogit_protocols::transport::Listener,
        nested: bool,
        say: Say<'_>,
    ) -> Result<KeyholderStats, Error> {
        let party = &self.party;
        let network = &party.network;
        {
            let channel = admit_aggregator(party, listener, say)?;
            let key_file = self.state.key_file(&network.study())?;
            let mut kept = FileKeyStore::new(key_file.clone(), self.resume);
            let mut in_memory = NoKeyStore;
            let store: &mut dyn KeyStore = if nested { &mut in_memory } else { &mut kept };
            // Used only if the aggregator's plan is differentially private.
            let mut share = noise_share(self.noise_seed, 1);
            let result = study_protocol::run_keyholder(
                channel,
                make_key,
                party.endorser().as_ref(),
                store,
                Some(&mut share),
            );
            let stats = match result {
                Ok(stats) => stats,
                Err(e) => {
                    // A lost party (a transport error) can be resumed; anything the key holder
                    // refused itself (a violation, a plan it does not take) would fail again.
                    if !nested && key_file.exists() {
                        if e.transport().is_some() {
                            say(&format!(
                                "the study key is kept in {} (secret): restart with setting `resume` \
                                 to continue the study",
                                key_file.display()
                            ));
                        } else {
                            state::remove(&key_file, say);
                            say("this error cannot be resumed: the study key is deleted");
                        }
                    }
                    return Err(e.into());
                }
            };
            if !nested {
                state::remove(&key_file, say);
            }
            say(&format!(
                "study done: {} AND gates garbled in {:.2} s, Paillier {:.2} s, {} sent",
                stats.and_gates,
                stats.gc_seconds,
                stats.paillier_seconds,
                human_bytes(stats.bytes_sent)
            ));
            Ok(stats)
        }
    }
}

/// The aggregator of a study between organizations, ready to drive it.
#[derive(Debug)]
pub struct Aggregator {
    party: Party,
    plan: StudyPlan,
    parties: usize,
    listen: String,
    keyholder: String,
    checkpoint: PathBuf,
    /// Seals and opens the checkpoint (a key only this aggregator holds).
    seal: CheckpointSeal,
    /// Where the result is kept when the output cannot take it.
    kept_result: PathBuf,
    /// The result is rendered as JSON (kept the same way).
    json: bool,
    from: Option<Checkpoint>,
    noise_seed: Option<u64>,
    shown: Shown,
    /// The columns of a nested model (`--drop`), fitted as a second study after the full one.
    dropped: Vec<String>,
    /// The Nodes hold different columns about the same people ([`crate::vertical_study`]).
    vertical: bool,
}

impl Aggregator {
    /// The aggregator `spec` (read with [`Reader::Aggregator`]) and the study file describe:
    /// its plan validated, its identity and the roster checked, the checkpoint it continues
    /// from read (`resume`) or refused to overwrite.
    pub fn new(spec: &Spec, file: Option<&StudyFile>, say: Say<'_>) -> Result<Self, Error> {
        let party = server_party(spec, file, Role::Aggregator, say)?;
        let roster = party.roster();
        let parties = match (spec.parties, roster) {
            (Some(n), Some(r)) if n != r.nodes.len() => {
                return Err(PlanError::Parties {
                    given: n,
                    named: r.nodes.len(),
                }
                .into());
            }
            (Some(n), _) => n,
            (None, Some(r)) => r.nodes.len(),
            (None, None) => {
                return Err(PlanError::Missing {
                    setting: "parties",
                    value: "N",
                    why: "the number of Nodes (or [[node]] tables in the study file)",
                }
                .into());
            }
        };
        if spec.vertical && spec.resume {
            return Err(Error::refused(
                "a vertical study cannot be resumed (setting `resume`) yet: start it again",
            ));
        }
        let plan = if spec.vertical {
            spec.vertical_plan(parties)?
        } else {
            spec.study_plan(parties)?
        };
        if !spec.drop.is_empty() {
            nested::check_plan(&plan)?;
        }
        let listen = address_of(
            spec.listen.as_ref(),
            roster.map(|r| &r.aggregator),
            "setting `listen`",
        )?;
        let keyholder = address_of(
            spec.keyholder.as_ref(),
            roster.map(|r| &r.keyholder),
            "setting `keyholder`",
        )?;
        let state_dir = StateDir::new(spec.state.clone());
        let checkpoint = state_dir.checkpoint_file(&party.network.study())?;
        let kept_result = state_dir.result_file(&party.network.study())?;
        let seal = CheckpointSeal::new(
            party.identity(),
            &state_dir.seal_key_file()?,
            party.network.study(),
        )?;
        if plan.release.is_some() && spec.resume {
            return Err(Error::refused(
                "setting `resume`: a differentially private study cannot be resumed (its noise is not \
                 kept, and drawing it again would show the participants a second noisy \
                 trajectory); start it again, charged again",
            ));
        }
        let from = if spec.resume {
            let from = state::read_checkpoint(&checkpoint, &seal)?;
            say(&match &from {
                Some(c) => format!(
                    "resuming the study from iteration {} (checkpoint {})",
                    c.progress.iterations(),
                    checkpoint.display()
                ),
                None => format!(
                    "no checkpoint at {}: starting the study from the beginning",
                    checkpoint.display()
                ),
            });
            if from.is_none()
                && let Some(note) = state::other_studies_note(
                    &state_dir.others(&checkpoint, "checkpoint"),
                    "checkpoint",
                )
            {
                say(&note);
            }
            from
        } else {
            // A vertical study keeps no checkpoint.
            if !spec.vertical {
                state::refuse_to_overwrite(&checkpoint, &seal)?;
            }
            None
        };
        Ok(Self {
            party,
            plan,
            parties,
            listen,
            keyholder,
            checkpoint,
            seal,
            kept_result,
            json: spec.json,
            from,
            noise_seed: spec.noise_seed,
            shown: Shown::of(spec)?,
            dropped: spec.drop.clone(),
            vertical: spec.vertical,
        })
    }

    /// This role's network, to stop it from another thread ([`Network::abort`]: the peers are
    /// told why), as a Python caller does on Ctrl-C.
    pub fn network(&self) -> Network {
        self.party.network.clone()
    }

    /// The plan it drives.
    pub fn plan(&self) -> &StudyPlan {
        &self.plan
    }

    /// Waits for the Nodes, connects to the key holder, runs the study, hands the result to
    /// `deliver` (which writes it) and only then removes the checkpoint.
    pub fn run(
        self,
        say: Say<'_>,
        deliver: &mut dyn FnMut(&StudyResult) -> Result<(), Error>,
    ) -> Result<StudyResult, Error> {
        // The output can still fail at the end (a full disk): the result is then kept in the
        // state directory, so the study need not run again.
        let mut deliver = |result: &StudyResult| {
            deliver(result).map_err(|e| keep_result(result, self.json, &self.kept_result, e, say))
        };
        let network = &self.party.network;
        let roster = self.party.roster();
        let expected = match roster {
            Some(r) => Expected::Members(r.nodes.clone()),
            None => Expected::Anyone {
                role: Role::Node,
                count: self.parties,
            },
        };
        // Admits the Nodes on `listener`, then dials the key holder.
        let join = |listener: privlogit_protocols::transport::Listener| {
            let nodes = listener
                .admit(&expected, PATIENCE, &mut |m| say(m))
                .map_err(Error::Network)?;
            for (i, c) in nodes.iter().enumerate() {
                say(&format!(
                    "Node {} is {}, connected from {}",
                    i + 1,
                    c.pipe().peer(),
                    c.pipe().peer_address()
                ));
            }
            let keyholder = network
                .connect_reporting(
                    &self.keyholder,
                    &self.party.server(Role::KeyHolder),
                    PATIENCE,
                    &mut |m| say(m),
                )
                .map_err(Error::Network)?;
            Ok::<_, Error>((nodes, keyholder))
        };
        self.party.stop_peers_on_error(|| {
            let listener = network.listen(&self.listen).map_err(Error::Network)?;
            let bound = listener.local_addr().map_err(Error::Network)?;
            say(&format!(
                "aggregator listening on {bound}, waiting for {} Nodes",
                self.parties
            ));
            let (nodes, keyholder) = join(listener)?;
            let dealer = match dial_dealer(&self.party, say) {
                Ok(dealer) => dealer,
                Err(e) => {
                    // Told to the joined parties with the links still open (dropped first,
                    // they would show only a hang-up).
                    keyholder.abort(&e.to_string());
                    return Err(e);
                }
            };
            let mut progress = |r: &IterationRecord| say(&progress_line(r));
            if self.vertical {
                if dealer.is_some() {
                    return Err(Error::refused(
                        "a vertical study takes no dealer: its products are dealt by its Nodes \
                         (remove the study file's [dealer] table)",
                    ));
                }
                say("vertical study: the Nodes' private set intersection, then their deals");
                let outcome = privlogit_protocols::secure::vertical_roles::run_aggregator(
                    nodes,
                    keyholder,
                    &self.plan,
                    &mut progress,
                )?;
                let result = StudyResult::of_aggregator(outcome, self.plan.clone(), self.shown);
                deliver(&result)?;
                return Ok(result);
            }
            let mut saved_iterations = None;
            let mut save = |c: &Checkpoint| {
                state::write_checkpoint(&self.checkpoint, &self.seal, c)?;
                saved_iterations = Some(c.progress.iterations());
                Ok(())
            };
            // A differentially private study keeps no checkpoint: it cannot be resumed (its
            // noise would be drawn again), so a kept one would only mislead.
            let continuity = self.plan.release.is_none().then_some(Continuity {
                study: network.study(),
                from: self.from,
                save: &mut save,
            });
            let mut share = noise_share(self.noise_seed, 0);
            let outcome = study_protocol::run_aggregator_with(
                nodes,
                keyholder,
                &self.plan,
                &mut progress,
                continuity,
                self.plan.release.map(|_| &mut share as &mut dyn NoiseShare),
                dealer,
            );
            let outcome = match outcome {
                Ok(o) => o,
                Err(e) => {
                    // A verdict on the data ends the study: resuming would reach it again, so
                    // the checkpoint goes rather than invite a resume.
                    if e.is_verdict() {
                        state::remove(&self.checkpoint, say);
                    } else if let Some(k) = saved_iterations {
                        say(&format!(
                            "checkpoint kept at {} (after iteration {k}): restart every party, \
                             the aggregator and the key holder with setting `resume`, to continue from \
                             there",
                            self.checkpoint.display()
                        ));
                    }
                    return Err(e.into());
                }
            };
            let mut result = StudyResult::of_aggregator(outcome, self.plan.clone(), self.shown);
            if !self.dropped.is_empty() {
                let reduced = (|| {
                    // The same listening address (the port actually bound): admitting closed
                    // the socket, and the Nodes dial it again.
                    let listener = network.listen(&bound.to_string()).map_err(Error::Network)?;
                    let features = &result.outcome.names[usize::from(self.plan.intercept)..];
                    let columns = nested::columns(&self.dropped, features)?;
                    say(&format!(
                        "nested model without {}: a second secure study, waiting for the Nodes",
                        self.dropped.join(", ")
                    ));
                    let (nodes, keyholder) = join(listener)?;
                    let nested_plan = nested::plan(&self.plan);
                    let outcome = study_protocol::run_aggregator(
                        nodes,
                        keyholder,
                        &nested_plan,
                        &mut progress,
                        None,
                        None,
                    )?;
                    let reduced =
                        StudyResult::of_aggregator(outcome, nested_plan, result.shown.clone());
                    let names = columns.into_iter().map(|(_, n)| n).collect();
                    nested::test(&result, &reduced, names)
                })();
                match reduced {
                    Ok(test) => result.likelihood_ratio = Some(test),
                    Err(e) => {
                        // The full model stands: it is written before the error is reported.
                        deliver(&result)?;
                        state::remove(&self.checkpoint, say);
                        return Err(e);
                    }
                }
            }
            deliver(&result)?;
            state::remove(&self.checkpoint, say);
            Ok(result)
        })
    }
}

/// The aggregator, admitted on a server's `listener`: the study file's (by certificate) or,
/// in a plaintext study, whoever says it is one.
pub(crate) fn admit_aggregator(
    party: &Party,
    listener: privlogit_protocols::transport::Listener,
    say: Say<'_>,
) -> Result<Link, Error> {
    let expected = match party.roster() {
        Some(r) if r.pinned() => Expected::Members(vec![r.aggregator.clone()]),
        _ => Expected::Anyone {
            role: Role::Aggregator,
            count: 1,
        },
    };
    let channel = listener
        .admit(&expected, PATIENCE, &mut |m| say(m))
        .map_err(Error::Network)?
        .pop()
        .ok_or_else(|| Error::refused("the aggregator did not connect"))?;
    say(&format!(
        "{} connected from {}",
        channel.pipe().peer(),
        channel.pipe().peer_address()
    ));
    Ok(channel)
}

/// The study file's dealer, dialled by the aggregator `party` (after the key holder), if the
/// file names one.
fn dial_dealer(party: &Party, say: Say<'_>) -> Result<Option<Link>, Error> {
    let Some(dealer) = party.roster().and_then(|r| r.dealer.clone()) else {
        return Ok(None);
    };
    let address = dealer.address.clone().ok_or_else(|| {
        Error::refused(
            "the study file's [dealer] table names no address (address = \"HOST:PORT\"): the \
             aggregator dials the dealer there",
        )
    })?;
    let link = party
        .network
        .connect_reporting(&address, &dealer, PATIENCE, &mut |m| say(m))
        .map_err(Error::Network)?;
    say(&format!(
        "masked products from {} at {}",
        link.pipe().peer(),
        link.pipe().peer_address()
    ));
    Ok(Some(link))
}

/// The error of an output that could not take `result`, after keeping the result (rendered as
/// it would have been written) owner-only at `kept`.
fn keep_result(result: &StudyResult, json: bool, kept: &Path, e: Error, say: Say<'_>) -> Error {
    let kept_ok = result.render(json).and_then(|r| {
        output::write_private(kept, r.release.as_bytes()).map_err(|e| Error::write(kept, e))
    });
    match kept_ok {
        Ok(()) => {
            say(&format!(
                "the study's result is kept at {} (owner-only): copy it where it belongs; the \
                 study need not run again",
                kept.display()
            ));
            PlanError::Kept {
                source: Box::new(e),
                kept: kept.to_path_buf(),
            }
            .into()
        }
        Err(also) => PlanError::NotKept {
            source: Box::new(e),
            also: Box::new(also),
        }
        .into(),
    }
}

/// A Node of a study between organizations, ready to join.
#[derive(Debug)]
pub struct Node {
    party: Party,
    aggregator: String,
    source: String,
    rows: Arc<dyn RowSource>,
    /// The feature names (the rows' columns but the offset and weight).
    names: Vec<String>,
    /// The model the rows are read as (the study's plan must agree).
    glm: Glm,
    /// Held-out rows to evaluate the final model on, when the study asks.
    held_out: Option<Arc<dyn RowSource>>,
    ledger: Option<(PathBuf, Option<f64>, Option<PathBuf>, String)>,
    /// The columns of a nested model (`--drop`): served as a second study after the full one.
    dropped: Vec<(usize, String)>,
    /// The counts under which this Node refuses to take part.
    disclosure: Disclosure,
}

impl Node {
    /// The Node `spec` (read with [`Reader::Node`]) and the study file describe, over `rows`
    /// (its `party` file unless given): identity and roster checked, the rows opened and
    /// checked whole.
    pub fn new(
        spec: &Spec,
        file: Option<&StudyFile>,
        rows: Option<NodeRows>,
        say: Say<'_>,
    ) -> Result<Self, Error> {
        expect_reader(spec, Reader::Node)?;
        let rows = match rows {
            Some(r) => r,
            None => {
                // The last `party` given: the command line's over a study file's.
                files_of(spec)?.pop().ok_or_else(|| {
                    Error::from(PlanError::Missing {
                        setting: "party",
                        value: "FILE",
                        why: "a Node needs its data file",
                    })
                })?
            }
        };
        let (party, aggregator) = node_party(spec, file, say)?;
        let columns = crate::fit::GlmColumns::of(spec)?;
        let glm = columns.glm();
        let site = if spec.site_intercepts {
            Some(site_of(party.network.name(), party.roster())?)
        } else {
            None
        };
        let Opened {
            source,
            rows: opened,
            names,
        } = rows.open(&columns, site)?;
        check_width(&source, &names)?;
        if let Some((_, sites)) = site {
            let own = names.len().saturating_sub(sites - 1);
            crate::fit::sites::check(sites, spec.intercept(), &names[..own])?;
        }
        let held_out = match &spec.test_party[..] {
            [] => None,
            [path] => {
                let rows = held_out_rows(spec, path, &names, &columns, site)?;
                check_held_out_total(rows.rows())?;
                Some(rows)
            }
            more => {
                return Err(Error::bad(
                    "test_party",
                    SettingProblem::TooMany {
                        given: more.len() as u64,
                        most: 1,
                        what: "files of held-out rows",
                        why: " (a Node holds one)",
                    },
                ));
            }
        };
        let dropped = nested::columns(&spec.drop, &names)?;
        let ledger = spec.ledger.as_ref().map(|path| {
            let file = match &rows {
                NodeRows::File { path, .. } => Some(path.clone()),
                NodeRows::Rows { .. } => None,
            };
            (
                path.clone(),
                spec.budget,
                file,
                spec.label.clone().unwrap_or_default(),
            )
        });
        Ok(Self {
            party,
            aggregator,
            source,
            rows: opened,
            names,
            glm,
            held_out,
            ledger,
            dropped,
            disclosure: spec.disclosure(),
        })
    }

    /// This role's network, to stop it from another thread ([`Network::abort`]: the peers are
    /// told why), as a Python caller does on Ctrl-C.
    pub fn network(&self) -> Network {
        self.party.network.clone()
    }

    /// Joins the aggregator's study and serves it; a differentially private study is first
    /// charged to this Node's ledger (or refused by it).
    pub fn run(self, say: Say<'_>) -> Result<NodeStats, Error> {
        let Self {
            party,
            aggregator,
            source,
            rows,
            names,
            glm,
            held_out,
            ledger,
            dropped,
            disclosure,
        } = self;
        let count = rows.rows();
        let reduced = (!dropped.is_empty()).then(|| nested::without(&names, &rows, &dropped));
        party.stop_peers_on_error(|| {
            let channel =
                party.join_aggregator(&aggregator, &format!("Node with {count} rows"), say)?;
            let mut consent = |release: &Release| {
                say(&format!(
                    "the study publishes an epsilon = {} differentially private model (secure \
                     PLR): this Node scales its rows to norm 1",
                    release.epsilon
                ));
                let Some((path, budget, file, label)) = &ledger else {
                    return Ok(());
                };
                let charged = match file {
                    Some(f) => charge::files(
                        path,
                        *budget,
                        std::slice::from_ref(f),
                        label,
                        Guarantee::pure(release.epsilon),
                        say,
                    ),
                    None => Err(Error::from(PlanError::LedgerRows {
                        source_name: source.to_string(),
                        why: "",
                    })),
                };
                charged.map_err(|e| SecureError::Refused {
                    party: Role::Node,
                    reason: Refusal::Policy(e.to_string()),
                })
            };
            let stats = study_protocol::run_node(
                channel,
                &names,
                match held_out {
                    Some(test) => NodeData::from_source(rows, true)
                        .with_glm(glm)
                        .with_disclosure(disclosure)
                        .with_test_rows(test),
                    None => NodeData::from_source(rows, true)
                        .with_glm(glm)
                        .with_disclosure(disclosure),
                },
                2048,
                party.key_trust(),
                Some(&mut consent),
            )?;
            say(&format!(
                "study done: local sums {:.2} s, Paillier {:.2} s, {} sent",
                stats.local_seconds,
                stats.paillier_seconds,
                human_bytes(stats.bytes_sent)
            ));
            let Some((names, rows)) = reduced else {
                return Ok(stats);
            };
            let dropped: Vec<&str> = dropped.iter().map(|(_, n)| n.as_str()).collect();
            say(&format!(
                "nested model without {}: joining the second study",
                dropped.join(", ")
            ));
            let channel = party.dial_aggregator(&aggregator, say)?;
            let stats = study_protocol::run_node(
                channel,
                &names,
                NodeData::from_source(rows, true).with_glm(glm),
                2048,
                party.key_trust(),
                None,
            )?;
            say(&format!(
                "nested study done: {} sent",
                human_bytes(stats.bytes_sent)
            ));
            Ok(stats)
        })
    }
}

/// Refuses studies of one server that are one study (the same id: same parties, addresses and
/// settings), which would share their parties and their state files.
pub fn refuse_repeated(files: &[(&str, &StudyFile)]) -> Result<(), Error> {
    let mut seen: Vec<([u8; 32], &str)> = Vec::new();
    for (label, file) in files {
        let Some(id) = file.id() else { continue };
        if let Some((_, first)) = seen.iter().find(|(s, _)| *s == id) {
            return Err(PlanError::SameStudy {
                first: first.to_string(),
                second: label.to_string(),
            }
            .into());
        }
        seen.push((id, label));
    }
    Ok(())
}

/// The party of a study's server (`role`: the key holder, the aggregator or the dealer),
/// `spec` checked to be read for it.
pub(crate) fn server_party(
    spec: &Spec,
    file: Option<&StudyFile>,
    role: Role,
    say: Say<'_>,
) -> Result<Party, Error> {
    let (reader, name) = match role {
        Role::KeyHolder => (Reader::KeyHolder, "keyholder"),
        Role::Dealer => (Reader::Dealer, "dealer"),
        _ => (Reader::Aggregator, "aggregator"),
    };
    expect_reader(spec, reader)?;
    Party::new(&connection(spec, file), role, name, say)
}

/// A Node's party and the address of the aggregator it dials.
pub(crate) fn node_party(
    spec: &Spec,
    file: Option<&StudyFile>,
    say: Say<'_>,
) -> Result<(Party, String), Error> {
    let party = Party::new(&connection(spec, file), Role::Node, &spec.name, say)?;
    let aggregator = address_of(
        spec.aggregator.as_ref(),
        party.roster().map(|r| &r.aggregator),
        "setting `aggregator`",
    )?;
    Ok((party, aggregator))
}

pub(crate) fn expect_reader(spec: &Spec, reader: Reader) -> Result<(), Error> {
    if spec.reader == reader {
        Ok(())
    } else {
        Err(PlanError::Reader {
            read: spec.reader.command(),
            run: reader.command(),
        }
        .into())
    }
}

/// A server's noise share for a differentially private study: from the OS, or from `seed` on
/// `stream` (the aggregator's 0, the key holder's 1, as `study --noise-seed`).
fn noise_share(seed: Option<u64>, stream: u64) -> PlrNoiseShare {
    match seed {
        Some(s) => PlrNoiseShare::seeded(s, stream),
        None => PlrNoiseShare::from_os(),
    }
}

/// The key holder's key pair of the size the study asks (checked by the plan).
pub(crate) fn make_key(bits: u32) -> Result<SecretKey, SecureError> {
    let size = match bits {
        2048 => KeySize::Bits2048,
        3072 => KeySize::Bits3072,
        4096 => KeySize::Bits4096,
        other => {
            return Err(SecureError::UnsupportedKeySize(other));
        }
    };
    Ok(KeyPair::generate_parallel(size).secret)
}

/// One progress line per iteration.
pub fn progress_line(r: &IterationRecord) -> String {
    let kind = match r.step {
        StepKind::Accelerated => "  (accelerated)",
        StepKind::Newton => "  (Newton)",
        StepKind::Bound => "",
    };
    format!("iteration {:>4}  rounds {:>5}{kind}", r.iteration, r.rounds)
}
