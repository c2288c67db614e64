//! A vertical study's parties over any channels: the Nodes (each holding some columns about
//! the same people, exactly one of them the labels) and the aggregator, which relays what the
//! Nodes exchange and drives the fit with the key holder ([`super`]). The same messages run
//! between organizations over mutual TLS and in one process over memory channels
//! ([`run_in_process`]).
//!
//! 1. **Join.** Each Node sends its column names, whether it holds the labels, and a fresh
//!    X25519 public key.
//! 2. **PSI key.** The aggregator sends the labelling Node the other Nodes' public keys; that
//!    Node draws the PSI key and seals it for each ([`crate::vertical::sealed`]); the
//!    aggregator relays each sealed key to its Node, unread.
//! 3. **Intersection.** Each Node sends its identifiers' keyed tags in ascending order; the
//!    aggregator answers each with the bitmap of its tags that every Node holds
//!    ([`crate::vertical::psi`]); each Node lists its shared rows in the common (tag) order.
//! 4. **Welcome.** The key holder makes the study's key pair (its usual `Setup`); each Node
//!    learns the parameters, the public key (with the key holder's endorsement, checked as in
//!    every study) and where its columns sit among the coefficients: the labelling Node's first
//!    (after the intercept), then the others in the order they joined.
//! 5. **Deal.** Each Node standardises its own columns over the shared rows when the study asks
//!    ([`crate::vertical::block`]) and deals them ([`crate::vertical::deal`]); the aggregator
//!    keeps its part and forwards the key holder's ([`super::vertical_rounds::Layout`]).
//! 6. **Fit.** The two servers run PrivLogit between themselves; the aggregator then sends
//!    every Node the model and ends the study. A Node stays connected until then, so a lost
//!    party stops the others within the deadline, as in a horizontal study.

use crate::secure::Inconsistency;
use std::ops::Range;
use std::time::Instant;

use privlogit_circuits::channel::{Channel, MemoryChannel};
use rand::RngExt;

use super::aggregator::{Protocol, Reveal, SecureAggregation};
use super::endorsement::{Endorsement, Endorser, KeyTrust};
use super::keyholder::{self, NoKeyStore};
use super::solver::LinearAlgebra;
pub use super::study_protocol::VerticalSummary;
use super::study_protocol::{
    StudyError, StudyOutcome, StudyPlan, abort_all, io_at, io_at_node, parse_key, read_endorsement,
    read_parameters, setup_keyholder, write_endorsement, write_parameters,
};
use super::vertical_rounds::{
    FEATURE_BITS, KeyholderPart, Layout, MAX_ROWS, encrypt_seed, recv_ring, send_ring,
};
use super::wire::{self, HANDSHAKE, Reader, Step, Writer};
use super::{Breach, Overflow, PlanReason, SecureConfig, SecureError};
use crate::disclosure::Disclosure;
use crate::optimizer::{IterationRecord, Optimizer};
use crate::paillier::{DjnNoise, SecretKey};
use crate::rows::RowsError;
use crate::transport::Role;
use crate::vertical::block::{self, BlockError};
use crate::vertical::deal::{Deal, DealError, deal};
pub use crate::vertical::deal::{
    MAX_DEALT_ROUNDS, MAX_VERTICAL_ITERATIONS, Rounds, newton_iterations, rounds_allowed,
};
use crate::vertical::psi::{self, Membership, PsiError, PsiKey, TAG_BYTES, Tag, TaggedRows};
use crate::vertical::ring::Side;
use crate::vertical::sealed::{Recipient, SEALED_BYTES, seal};
use crate::vertical::shares::{HessianProducts, PartyShares, Products, ServerShares};

/// One party's table as it holds it: identifiers, columns and (at exactly one party) labels,
/// row `i` of each describing the person `ids[i]`.
#[derive(Debug, Clone)]
pub struct VerticalTable {
    /// Where the rows come from (a file's path), for errors.
    pub source: String,
    /// Each row's identifier (matched as bytes, exactly).
    pub ids: Vec<String>,
    /// Its column names.
    pub names: Vec<String>,
    /// `ids.len() x names.len()` by rows.
    pub x: Vec<f64>,
    /// The labels, at the labelling party.
    pub labels: Option<Vec<bool>>,
    /// The counts under which this party refuses, checked on the rows it shares with the
    /// others (known after the intersection, before anything computed from them is sent).
    pub disclosure: Disclosure,
}

impl VerticalTable {
    fn check(&self) -> Result<(), SecureError> {
        let rows = self.ids.len();
        if self.x.len() != rows * self.names.len() {
            return Err(SecureError::inconsistent(Inconsistency::VerticalTable {
                rows,
                columns: self.names.len(),
                values: self.x.len(),
            }));
        }
        if let Some(y) = self.labels.as_ref().filter(|y| y.len() != rows) {
            return Err(SecureError::inconsistent(Inconsistency::Count {
                what: "labels for a vertical table's rows",
                got: y.len(),
                expected: rows,
            }));
        }
        Ok(())
    }
}

/// What a Node of a vertical study ends with.
#[derive(Debug, Clone)]
pub struct NodeOutcome {
    /// Rows it shares with every other party (the study's N).
    pub rows: usize,
    /// Every coefficient's name (intercept first), as the aggregator published them.
    pub names: Vec<String>,
    /// The model.
    pub beta: Vec<f64>,
    /// How the fit ended (its status' name).
    pub status: String,
    /// Its columns' means and standard deviations over the shared rows, when standardised.
    pub standardization: Option<(Vec<f64>, Vec<f64>)>,
    /// Bytes it sent.
    pub bytes_sent: u64,
}

/// The plan of a vertical study of `parties` fitted by `optimizer` (PrivLogit, plain or
/// accelerated, or secure Newton) with `options` under a `key_bits` Paillier key, with an
/// intercept and the tables' columns as given (set `standardize` for each party to standardise
/// its own): what research code hands [`run_in_process`].
pub fn plan(
    optimizer: Optimizer,
    options: crate::optimizer::FitOptions,
    key_bits: u32,
    parties: usize,
) -> StudyPlan {
    StudyPlan {
        protocol: if optimizer == Optimizer::Newton {
            Protocol::Newton
        } else {
            Protocol::Hessian
        },
        optimizer,
        options,
        format: super::DEFAULT_FORMAT,
        key_bits,
        parties,
        standardize: false,
        intercept: true,
        linear_algebra: LinearAlgebra::Masked,
        circuit_block: crate::secure::masked::engine::DEFAULT_BLOCK,
        mask_seed: None,
        release: None,
        reveal: Reveal::Coefficients,
        glm: crate::objective::Glm::logistic(),
        evaluate: false,
    }
}

/// Checks that `plan` is one a vertical study runs: logistic regression by PrivLogit (plain
/// or accelerated, the bound formed between the servers: `--protocol hessian`) or secure
/// Newton (the information formed between the servers every iteration: `--protocol newton`),
/// under the masked method, revealing the coefficients only.
pub fn check_plan(plan: &StudyPlan) -> Result<(), SecureError> {
    let refuse =
        |setting: &'static str, why: &'static str| Err(SecureError::invalid_plan(setting, why));
    if !matches!(plan.protocol, Protocol::Hessian | Protocol::Newton) {
        return refuse(
            "protocol",
            "a vertical study runs PrivLogit with the bound formed between the two servers \
             (setting `protocol` hessian) or secure Newton (setting `protocol` newton); PrivLogit-Local would \
             need each party's rows whole",
        );
    }
    if !plan.glm.is_logistic() {
        return refuse(
            "family",
            "a vertical study fits a logistic regression without offset or weights",
        );
    }
    if plan.release.is_some() {
        return refuse(
            "dp_epsilon",
            "a vertical study has no differentially private release",
        );
    }
    if plan.evaluate {
        return refuse(
            "test_party",
            "a vertical study has no held-out evaluation yet",
        );
    }
    if plan.reveal != Reveal::Coefficients {
        return refuse(
            "reveal",
            "a vertical study reveals the coefficients only (setting `reveal` coefficients): its \
             standard errors are not built",
        );
    }
    if plan.linear_algebra != LinearAlgebra::Masked {
        return refuse(
            "linear_algebra",
            "a vertical study hands its sums to the masked solver (setting `linear_algebra` masked)",
        );
    }
    if plan.options.stopping.max_iterations > MAX_VERTICAL_ITERATIONS {
        return refuse(
            "max_iterations",
            "a vertical study deals its rounds up front: at most 10,000 iterations",
        );
    }
    if matches!(plan.optimizer, Optimizer::Newton) && plan.options.step_halving {
        return refuse(
            "step_halving",
            "a vertical study's secure Newton takes full steps (each halving would spend a round \
             the parties dealt)",
        );
    }
    if plan.options.lambda <= 0.0 {
        return refuse(
            "lambda",
            "a vertical study needs a penalty (lambda > 0): its bound is inverted as is",
        );
    }
    plan.validate()
}

/// What the Nodes' joins tell the aggregator: the joins, the order of the parties' columns
/// (the labelling Node first), the coefficients' names and each party's range of them.
struct Columns {
    joins: Vec<Join>,
    order: Vec<usize>,
    names: Vec<String>,
    columns: Vec<Range<usize>>,
}

/// Step 1: every Node's join, checked (one labelling Node, columns from every party, no name
/// twice).
fn joined_columns<C: Channel>(nodes: &mut [C], plan: &StudyPlan) -> Result<Columns, StudyError> {
    let joins = nodes
        .iter_mut()
        .enumerate()
        .map(|(i, node)| read_join(node, i + 1))
        .collect::<Result<Vec<_>, _>>()?;
    let labelled: Vec<usize> = (0..joins.len()).filter(|&i| joins[i].labels).collect();
    let [label_node] = labelled[..] else {
        let which = labelled.iter().map(|i| i + 1).collect();
        return Err(SecureError::invalid_plan("label", PlanReason::LabelHolders(which)).into());
    };
    // Coefficient order: the labelling Node first, then the others as they joined.
    let order: Vec<usize> = std::iter::once(label_node)
        .chain((0..nodes.len()).filter(|&i| i != label_node))
        .collect();
    let mut names: Vec<String> = Vec::new();
    if plan.intercept {
        names.push(crate::rows::design::INTERCEPT.to_string());
    }
    let mut columns = Vec::with_capacity(order.len());
    for (place, &i) in order.iter().enumerate() {
        let lead = place == 0 && plan.intercept;
        let width = joins[i].names.len() + usize::from(lead);
        if width == 0 {
            return Err(SecureError::invalid_plan("party", PlanReason::NoColumns(i + 1)).into());
        }
        columns.push(names.len() - usize::from(lead)..names.len() + joins[i].names.len());
        names.extend(joins[i].names.iter().cloned());
    }
    if let Some(repeated) = (1..names.len()).find(|&j| names[..j].contains(&names[j])) {
        return Err(SecureError::invalid_plan(
            "party",
            PlanReason::RepeatedColumn(names[repeated].clone()),
        )
        .into());
    }
    Ok(Columns {
        joins,
        order,
        names,
        columns,
    })
}

/// Step 2: the labelling Node seals the PSI key for every other Node (to its endorsed public
/// key); the aggregator relays what it cannot read.
fn relay_psi_key<C: Channel>(
    nodes: &mut [C],
    joins: &[Join],
    order: &[usize],
) -> Result<(), StudyError> {
    let label_node = order[0];
    let others = &order[1..];
    let mut w = Writer::new().u64(others.len() as u64);
    for &i in others {
        let e = &joins[i].endorsement;
        w = w
            .bytes(&joins[i].public)
            .bytes(&e.certificate)
            .bytes(&e.signature);
    }
    let to_label = io_at_node(
        Role::Aggregator,
        "exchanging the PSI key with",
        label_node + 1,
    );
    wire::send(
        &mut nodes[label_node],
        HANDSHAKE,
        Step::VerticalKey,
        &w.finish(),
    )
    .map_err(&to_label)?;
    let (_, sealed) =
        wire::recv(&mut nodes[label_node], HANDSHAKE, &[Step::VerticalKey]).map_err(&to_label)?;
    let mut r = Reader::new(&sealed);
    let count = r.u64().map_err(&to_label)?;
    if count != others.len() as u64 {
        return Err(SecureError::node_violation(
            label_node + 1,
            Breach::Mismatch {
                what: "PSI keys the labelling Node sealed",
                got: count,
                expected: others.len() as u64,
            },
        )
        .into());
    }
    for &i in others {
        let one = r.bytes().map_err(&to_label)?;
        if one.len() != SEALED_BYTES {
            return Err(SecureError::node_violation(
                label_node + 1,
                Breach::Malformed {
                    what: "a sealed PSI key of the wrong size",
                },
            )
            .into());
        }
        wire::send(&mut nodes[i], HANDSHAKE, Step::VerticalKey, one).map_err(io_at_node(
            Role::Aggregator,
            "relaying the PSI key to",
            i + 1,
        ))?;
    }
    r.end().map_err(&to_label)?;

    Ok(())
}

/// Step 3: the private set intersection of the Nodes' identifier tags: the shared rows and
/// how many tags each Node sent.
fn intersect<C: Channel>(nodes: &mut [C]) -> Result<(usize, Vec<usize>), StudyError> {
    let mut tags: Vec<Vec<Tag>> = Vec::with_capacity(nodes.len());
    for (i, node) in nodes.iter_mut().enumerate() {
        let context = io_at_node(Role::Aggregator, "reading the identifiers of", i + 1);
        let (_, payload) = wire::recv(node, HANDSHAKE, &[Step::VerticalTags]).map_err(&context)?;
        if payload.len() % TAG_BYTES != 0 {
            return Err(SecureError::node_violation(
                i + 1,
                Breach::Misaligned {
                    what: "a tag list",
                    bytes: payload.len() as u64,
                    unit: TAG_BYTES as u64,
                },
            )
            .into());
        }
        tags.push(
            payload
                .chunks_exact(TAG_BYTES)
                .map(|c| c.try_into().expect("16 bytes"))
                .collect(),
        );
    }
    let answers = psi::intersect(&tags).map_err(|e| match e {
        PsiError::Unsorted { party, .. } => SecureError::node_violation(party, Breach::Psi(e)),
        other => SecureError::violation(Role::Node, Breach::Psi(other)),
    })?;
    let held: Vec<usize> = tags.iter().map(Vec::len).collect();
    drop(tags);
    for (i, (node, answer)) in nodes.iter_mut().zip(&answers).enumerate() {
        wire::send(
            node,
            HANDSHAKE,
            Step::VerticalMembership,
            &answer.to_bytes(),
        )
        .map_err(io_at_node(Role::Aggregator, "answering", i + 1))?;
    }
    let rows = answers.first().map_or(0, Membership::count);
    if rows == 0 {
        return Err(SecureError::invalid_plan(
            "id",
            "the parties share no identifier: the intersection is empty",
        )
        .into());
    }
    if rows > MAX_ROWS {
        return Err(SecureError::invalid_plan(
            "id",
            PlanReason::too_many("rows in the intersection", rows, MAX_ROWS),
        )
        .into());
    }

    Ok((rows, held))
}

/// Step 4's end: every Node welcomed with the study's parameters, the key and its place (its
/// range of the coefficients, whether it holds the intercept, the rounds it deals for).
#[allow(clippy::too_many_arguments)]
fn welcome_nodes<C: Channel>(
    nodes: &mut [C],
    plan: &StudyPlan,
    config: &SecureConfig,
    key: &crate::paillier::PublicKey,
    endorsement: &Endorsement,
    order: &[usize],
    columns: &[Range<usize>],
    rows: usize,
    rounds: Rounds,
) -> Result<(), StudyError> {
    for (place, &i) in order.iter().enumerate() {
        let range = &columns[place];
        let welcome = write_endorsement(
            write_parameters(config, plan.intercept, None)
                .bytes(&key.to_bytes())
                .u64(range.start as u64)
                .u64(range.len() as u64)
                .u64(u64::from(place == 0 && plan.intercept))
                .u64(u64::from(plan.standardize))
                .u64(rounds.gradient)
                .u64(rounds.hessian)
                .u64(rows as u64),
            endorsement,
        )
        .finish();
        wire::send(&mut nodes[i], HANDSHAKE, Step::VerticalWelcome, &welcome)
            .map_err(io_at_node(Role::Aggregator, "welcoming", i + 1))?;
    }
    Ok(())
}

/// What the Nodes' deals give the aggregator: the key holder's parts, the shares, the labels
/// and the parties' standardisation.
struct Deals {
    parts: Vec<KeyholderPart>,
    shares: Vec<PartyShares>,
    labels: Vec<u64>,
    means: Vec<f64>,
    scales: Vec<f64>,
}

/// Step 5: every Node's deal, in the columns' order.
#[allow(clippy::too_many_arguments)]
fn read_deals<C: Channel>(
    nodes: &mut [C],
    plan: &StudyPlan,
    config: &SecureConfig,
    key: &crate::paillier::PublicKey,
    joins: &[Join],
    order: &[usize],
    columns: &[Range<usize>],
    rows: usize,
    rounds: Rounds,
) -> Result<Deals, StudyError> {
    let mut parts = Vec::with_capacity(order.len());
    let mut shares = Vec::with_capacity(order.len());
    let mut labels = Vec::new();
    let (mut means, mut scales) = (Vec::new(), Vec::new());
    for (place, &i) in order.iter().enumerate() {
        let deal = read_deal(
            &mut nodes[i],
            i + 1,
            config,
            key,
            columns[place].clone(),
            rows,
            rounds,
            place == 0,
            (plan.standardize, joins[i].names.len()),
        )?;
        parts.push(deal.part);
        shares.push(deal.shares);
        if let Some(l) = deal.labels {
            labels = l;
        }
        match deal.standardization {
            Some((m, s)) => {
                means.extend(m);
                scales.extend(s);
            }
            // A raw Node whose columns were all within the bound.
            None => {
                means.extend(vec![0.0; joins[i].names.len()]);
                scales.extend(vec![1.0; joins[i].names.len()]);
            }
        }
    }
    Ok(Deals {
        parts,
        shares,
        labels,
        means,
        scales,
    })
}

/// Rounds a vertical study's parties deal for a study of `rows x coefficients`: every
/// PrivLogit iteration costs at most two (an accelerated candidate and the plain step), and a
/// few spare; secure Newton one round for the start and one an iteration, each with the
/// Hessian's products, for [`newton_iterations`].
pub fn rounds_for(plan: &StudyPlan, rows: usize, coefficients: usize) -> Rounds {
    let iterations = plan.options.stopping.max_iterations;
    if matches!(plan.optimizer, Optimizer::Newton) {
        let newton = newton_iterations(rows, coefficients, iterations) as u64 + 1;
        Rounds {
            gradient: newton,
            hessian: newton,
        }
    } else {
        Rounds {
            gradient: 2 * iterations as u64 + 4,
            hessian: 0,
        }
    }
}

/// One Node's first message, as the aggregator read it.
struct Join {
    names: Vec<String>,
    labels: bool,
    public: [u8; 32],
    /// The Node's signature on `public` (empty without TLS).
    endorsement: Endorsement,
}

fn read_join<C: Channel>(node: &mut C, which: usize) -> Result<Join, SecureError> {
    let at = io_at_node(Role::Aggregator, "waiting for the join of", which);
    let (step, payload) =
        wire::recv(node, HANDSHAKE, &[Step::VerticalJoin, Step::Join]).map_err(&at)?;
    if step != Step::VerticalJoin {
        return Err(SecureError::node_violation(
            which,
            Breach::WrongMode {
                vertical_study: true,
            },
        ));
    }
    let mut r = Reader::new(&payload);
    let count = r.u64().map_err(&at)? as usize;
    if count > super::MAX_DIMENSION {
        return Err(SecureError::node_violation(
            which,
            Breach::TooMany {
                what: "columns declared",
                count: count as u64,
                limit: super::MAX_DIMENSION as u64,
            },
        ));
    }
    let names = (0..count)
        .map(|_| r.string())
        .collect::<Result<Vec<_>, _>>()
        .map_err(&at)?;
    let labels = r.u64().map_err(&at)? == 1;
    let public: [u8; 32] = r.bytes().map_err(&at)?.try_into().map_err(|_| {
        SecureError::node_violation(
            which,
            Breach::Malformed {
                what: "an X25519 key that is not 32 bytes",
            },
        )
    })?;
    let endorsement = Endorsement {
        certificate: r.bytes().map_err(&at)?.to_vec(),
        signature: r.bytes().map_err(&at)?.to_vec(),
    };
    r.end().map_err(&at)?;
    Ok(Join {
        names,
        labels,
        public,
        endorsement,
    })
}

/// The aggregator of a vertical study: runs steps 1-6 with `nodes` (in their order of joining)
/// and the key holder, and returns the outcome with the join's [`VerticalSummary`]. On failure
/// every party is told why before the connections close.
pub fn run_aggregator<C: Channel>(
    mut nodes: Vec<C>,
    keyholder: C,
    plan: &StudyPlan,
    observer: &mut dyn FnMut(&IterationRecord),
) -> Result<StudyOutcome, StudyError> {
    let mut keyholder = Some(keyholder);
    let result = aggregate(&mut nodes, &mut keyholder, plan, observer);
    if let Err(e) = &result {
        abort_all(&nodes, e);
    }
    result
}

/// [`run_aggregator`]'s steps; the connections stay open on failure (the key holder's too,
/// until the fit takes it, whose errors are told from inside) so the caller can say why.
fn aggregate<C: Channel>(
    nodes: &mut [C],
    keyholder_slot: &mut Option<C>,
    plan: &StudyPlan,
    observer: &mut dyn FnMut(&IterationRecord),
) -> Result<StudyOutcome, StudyError> {
    let keyholder = keyholder_slot
        .as_mut()
        .ok_or_else(|| SecureError::inconsistent("the key holder's connection is gone"))?;
    check_plan(plan)?;
    let start = Instant::now();
    if nodes.len() < 2 {
        return Err(SecureError::invalid_plan(
            "parties",
            "a vertical study joins the columns of at least two Nodes",
        )
        .into());
    }
    let Columns {
        joins,
        order,
        names,
        columns,
    } = joined_columns(nodes, plan)?;
    let dimension = names.len();

    // Step 2: the PSI key, from the labelling Node to every other, sealed.
    relay_psi_key(nodes, &joins, &order)?;

    // Step 3: the intersection.
    let (rows, held) = intersect(nodes)?;
    let psi_seconds = start.elapsed().as_secs_f64();

    // Step 4: the key, and each Node's place.
    let session = loop {
        let s: u64 = rand::rng().random();
        if s != HANDSHAKE {
            break s;
        }
    };
    let config =
        SecureConfig::new(session, 1, dimension, plan.format).with_frac(plan.paillier_frac());
    // A vertical study keeps no checkpoint: its key holder keeps no key file.
    let (key, endorsement) = setup_keyholder(keyholder, &config, plan, false, None, false)?;
    let rounds = rounds_for(plan, rows, dimension);
    welcome_nodes(
        nodes,
        plan,
        &config,
        &key,
        &endorsement,
        &order,
        &columns,
        rows,
        rounds,
    )?;

    // Step 5: the deals.
    let Deals {
        parts,
        shares,
        labels,
        means,
        scales,
    } = read_deals(
        nodes, plan, &config, &key, &joins, &order, &columns, rows, rounds,
    )?;
    let shares = ServerShares::new(Side::Aggregator, rows, shares, labels);
    let layout = Layout {
        rows,
        columns: columns.clone(),
        label_party: 0,
        rounds: rounds.gradient,
        hessian_rounds: rounds.hessian,
    };

    // Step 6: the fit.
    let keyholder = keyholder_slot
        .take()
        .ok_or_else(|| SecureError::inconsistent("the key holder's connection is gone"))?;
    let mut aggregation = SecureAggregation::vertical(
        keyholder,
        key,
        config,
        plan.linear_algebra,
        shares,
        &layout,
        parts,
    )?;
    let floor = super::vertical_rounds::gradient_floor(rows, dimension);
    let gradient_tolerance = plan
        .options
        .stopping
        .gradient_tolerance
        .map(|g| g.max(floor));
    let mut options = plan.options.clone().gradient_tolerance(gradient_tolerance);
    // Raw columns divided by powers of two: the raw estimator, its penalty weighed by `1/s_j^2`
    // (the horizontal study's `scale_raw`), the coefficients turned back after the fit.
    let raw_scales = (!plan.standardize && scales.iter().any(|&s| s != 1.0)).then_some(&scales);
    if let Some(scales) = raw_scales {
        options = super::study_protocol::raw_penalty(options, scales, plan)?;
    }
    if matches!(plan.optimizer, Optimizer::Newton) {
        // Newton runs as many iterations as the parties dealt its products for.
        let iterations = newton_iterations(rows, dimension, options.stopping.max_iterations);
        options = options.max_iterations(iterations);
    }
    let setup_seconds = start.elapsed().as_secs_f64();
    let fit = match plan.optimizer.fit(&mut aggregation, &options, observer) {
        Ok(fit) => match raw_scales {
            Some(scales) => super::study_protocol::in_raw_units(
                fit,
                &super::study_protocol::coefficient_scales(scales, plan.intercept),
            ),
            None => fit,
        },
        Err(e) => {
            // Told before the key holder's connection closes with `aggregation`.
            abort_all(nodes, &e);
            return Err(e.into());
        }
    };
    let mut model = Writer::new()
        .f64s(fit.beta.as_slice().expect("contiguous"))
        .string(fit.status.name())
        .u64(names.len() as u64);
    for n in &names {
        model = model.string(n);
    }
    let model = model.finish();
    for (i, node) in nodes.iter_mut().enumerate() {
        let at = io_at_node(Role::Aggregator, "sending the model to", i + 1);
        wire::send(node, session, Step::VerticalModel, &model).map_err(&at)?;
        wire::send(node, session, Step::Done, &[]).map_err(&at)?;
    }
    let mut aggregator = aggregation.finish()?;
    aggregator.bytes_from_each_node = nodes.iter().map(Channel::bytes_received).collect();
    aggregator.bytes_from_nodes = aggregator.bytes_from_each_node.iter().sum();
    aggregator.bytes_to_nodes = nodes.iter().map(Channel::bytes_sent).sum();
    Ok(StudyOutcome {
        fit,
        names,
        standardization: plan.standardize.then_some((means, scales)),
        rows,
        setup_seconds: setup_seconds + aggregator.bound_seconds,
        aggregator,
        seconds: start.elapsed().as_secs_f64(),
        resumed_from: None,
        inference: None,
        inference_failed: None,
        evaluation: None,
        vertical: Some(VerticalSummary {
            parties: order
                .iter()
                .zip(&columns)
                .map(|(&i, c)| (i, held[i], c.clone()))
                .collect(),
            psi_seconds,
            gradient_tolerance,
        }),
    })
}

/// One Node's deal as the aggregator keeps it.
struct ReadDeal {
    part: KeyholderPart,
    shares: PartyShares,
    labels: Option<Vec<u64>>,
    standardization: Option<(Vec<f64>, Vec<f64>)>,
}

/// Reads Node `which`'s deal: the header, then its opened columns, its per-round products and
/// its bound products, each of the length the public shape fixes.
#[allow(clippy::too_many_arguments)]
fn read_deal<C: Channel>(
    node: &mut C,
    which: usize,
    config: &SecureConfig,
    key: &crate::paillier::PublicKey,
    columns: Range<usize>,
    rows: usize,
    rounds: Rounds,
    labelling: bool,
    (standardized, features): (bool, usize),
) -> Result<ReadDeal, SecureError> {
    let at = io_at_node(Role::Aggregator, "reading the deal of", which);
    let bad = |what: &'static str| SecureError::node_violation(which, Breach::Malformed { what });
    let session = config.session;
    let (_, header) = wire::recv(node, session, &[Step::VerticalDeal]).map_err(&at)?;
    let mut r = Reader::new(&header);
    let seed = crate::paillier::EncryptedVector::from_bytes(key, r.bytes().map_err(&at)?)?;
    if seed.len() != 1 {
        return Err(bad("a seed of more than one value"));
    }
    let own: [u8; 32] = r
        .bytes()
        .map_err(&at)?
        .try_into()
        .map_err(|_| bad("a seed that is not 32 bytes"))?;
    let label_bytes = r.bytes().map_err(&at)?;
    let labels = if labelling {
        if label_bytes.len() != 8 * rows.div_ceil(64) {
            return Err(bad("label shares of the wrong length"));
        }
        Some(
            label_bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect(),
        )
    } else if label_bytes.is_empty() {
        None
    } else {
        return Err(bad("label shares from a Node without the labels"));
    };
    let means = r.f64s().map_err(&at)?;
    let scales = r.f64s().map_err(&at)?;
    r.end().map_err(&at)?;
    // Standardised: every feature's mean and deviation. Raw: none, or means 0 and the powers of
    // two the Node divided its columns by.
    let raw_scale = |v: &f64| *v > 0.0 && v.is_finite() && v.log2().fract() == 0.0;
    let standardization = match (standardized, means.len(), scales.len()) {
        (true, m, s) if m == features && s == features => Some((means, scales)),
        (false, 0, 0) => None,
        (false, m, s)
            if m == features
                && s == features
                && means.iter().all(|&m| m == 0.0)
                && scales.iter().all(raw_scale) =>
        {
            Some((means, scales))
        }
        _ => {
            return Err(bad(
                "standardisation statistics or scales of the wrong form",
            ));
        }
    };
    let width = columns.len();
    let d = recv_ring(node, session, rows * width, Role::Node)?;
    let p = config.dimension;
    let flat = recv_ring(node, session, rounds.gradient as usize * width, Role::Node)?;
    let w: Vec<Vec<u128>> = flat.chunks_exact(width).map(<[u128]>::to_vec).collect();
    let bound_w = recv_ring(node, session, width * p, Role::Node)?;
    let mut hessian = Vec::with_capacity(rounds.hessian as usize);
    for _ in 0..rounds.hessian {
        hessian.push(HessianProducts {
            c: recv_ring(node, session, rows * width, Role::Node)?,
            hw: recv_ring(node, session, width * p, Role::Node)?,
        });
    }
    let products = Products {
        rounds: rounds.gradient,
        w,
        bound_w,
        hessian_rounds: rounds.hessian,
        hessian,
    };
    Ok(ReadDeal {
        part: KeyholderPart {
            columns: columns.clone(),
            seed,
            d: d.clone(),
        },
        shares: PartyShares::new(rows, columns, d, own, products),
        labels,
        standardization,
    })
}

/// The rows every party shares against this Node's disclosure controls: every party sees the
/// same count and so refuses alike.
fn check_shared_rows(
    table: &VerticalTable,
    shared: &[usize],
    dimension: usize,
) -> Result<(), SecureError> {
    let classes = table.labels.as_ref().map(|y| {
        let positives = shared.iter().filter(|&&r| y[r]).count() as u64;
        [shared.len() as u64 - positives, positives]
    });
    if let Some(why) = table
        .disclosure
        .check_node(shared.len() as u64, classes, dimension, None)
    {
        return Err(SecureError::Refused {
            party: Role::Node,
            reason: super::Refusal::Policy(
                why.replace("it holds", "the parties share")
                    .replace(" training rows", " rows")
                    .replace("its rows", "the shared rows"),
            ),
        });
    }
    Ok(())
}

/// Step 5's message: the key holder's seed (encrypted under the study's key), the
/// aggregator's share of this Node's columns, labels and products, and its standardisation.
fn send_deal<C: Channel>(
    channel: &mut C,
    session: u64,
    key: &crate::paillier::PublicKey,
    dealt: Deal,
    standardization: Option<(Vec<f64>, Vec<f64>)>,
) -> Result<(), SecureError> {
    let noise = DjnNoise::shared(key);
    let seed = encrypt_seed(key, &dealt.keyholder_seed, &noise)?;
    let a = dealt.aggregator;
    let label_bytes: Vec<u8> = a
        .labels
        .iter()
        .flatten()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let (means, scales) = standardization.unwrap_or_default();
    let header = Writer::new()
        .bytes(&seed.to_bytes(key))
        .bytes(&a.seed)
        .bytes(&label_bytes)
        .f64s(&means)
        .f64s(&scales)
        .finish();
    let at = io_at(Role::Node, "dealing its columns");
    wire::send(channel, session, Step::VerticalDeal, &header).map_err(&at)?;
    send_ring(channel, session, &a.d).map_err(&at)?;
    let flat: Vec<u128> = a.w.concat();
    send_ring(channel, session, &flat).map_err(&at)?;
    send_ring(channel, session, &a.bound_w).map_err(&at)?;
    for products in &a.hessian {
        send_ring(channel, session, &products.c).map_err(&at)?;
        send_ring(channel, session, &products.hw).map_err(&at)?;
    }
    drop((a.d, flat, a.bound_w, a.hessian));
    Ok(())
}

/// Step 2 at a Node: the labelling Node makes the PSI key and seals it for every other Node's
/// endorsed public key (checking the endorsements under TLS); the others open theirs.
fn psi_key<C: Channel>(
    channel: &mut C,
    labelling: bool,
    recipient: &Recipient,
    trust: Option<&KeyTrust>,
    signer: Option<&Endorser>,
) -> Result<PsiKey, SecureError> {
    let at = io_at(Role::Node, "the PSI key");
    let (_, payload) = wire::recv(channel, HANDSHAKE, &[Step::VerticalKey]).map_err(&at)?;
    Ok(if labelling {
        let mut r = Reader::new(&payload);
        let count = r.u64().map_err(&at)?;
        if count > 10_000 {
            return Err(SecureError::violation(
                Role::Aggregator,
                Breach::TooMany {
                    what: "Nodes to seal the PSI key for",
                    count,
                    limit: 10_000,
                },
            ));
        }
        let mut keys = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let public: [u8; 32] = r.bytes().map_err(&at)?.try_into().map_err(|_| {
                SecureError::violation(
                    Role::Aggregator,
                    Breach::Malformed {
                        what: "a Node's key that is not 32 bytes",
                    },
                )
            })?;
            let endorsement = Endorsement {
                certificate: r.bytes().map_err(&at)?.to_vec(),
                signature: r.bytes().map_err(&at)?.to_vec(),
            };
            keys.push((public, endorsement));
        }
        r.end().map_err(&at)?;
        match (trust, signer) {
            (Some(trust), Some(signer)) => {
                trust.check_recipients(signer.identity.certificate(), &keys)?;
            }
            (Some(_), None) => {
                return Err(SecureError::violation(
                    Role::Node,
                    Breach::NotInPlan {
                        what: "a TLS study's labelling Node needs its identity to check the PSI \
                               key's recipients",
                    },
                ));
            }
            _ => {}
        }
        let mut rng = rand::rng();
        let key = PsiKey::generate(&mut rng);
        let mut sealed = Writer::new().u64(count);
        for (public, _) in &keys {
            let one = seal(key.bytes(), public, &mut rng)
                .map_err(|e| SecureError::violation(Role::Aggregator, Breach::Sealing(e)))?;
            sealed = sealed.bytes(&one);
        }
        wire::send(channel, HANDSHAKE, Step::VerticalKey, &sealed.finish()).map_err(&at)?;
        key
    } else {
        let sealed: &[u8; SEALED_BYTES] = payload.as_slice().try_into().map_err(|_| {
            SecureError::violation(
                Role::Aggregator,
                Breach::Malformed {
                    what: "a sealed PSI key of the wrong size",
                },
            )
        })?;
        let opened = recipient
            .open(sealed)
            .map_err(|e| SecureError::violation(Role::Aggregator, Breach::Sealing(e)))?;
        PsiKey::from_bytes(&opened)
    })
}

/// Step 3 at a Node: its identifiers' tags to the aggregator, and back the rows every party
/// shares, in the common order.
fn shared_rows<C: Channel>(
    channel: &mut C,
    key: &PsiKey,
    table: &VerticalTable,
) -> Result<Vec<usize>, SecureError> {
    let tagged = TaggedRows::new(key, &table.ids).map_err(|e| match e {
        PsiError::Duplicate { id, first, second } => SecureError::Data(RowsError::new(
            &table.source,
            format!(
                "the identifier {id:?} appears in rows {} and {} (counting from 1): every \
                 person once per party",
                first + 1,
                second + 1
            ),
        )),
        other => SecureError::inconsistent(Inconsistency::Psi(other)),
    })?;
    let bytes: Vec<u8> = tagged.tags().into_iter().flatten().collect();
    let limit = Step::VerticalTags.limit() as usize;
    if bytes.len() > limit {
        return Err(SecureError::inconsistent(Inconsistency::TooMany {
            what: "identifiers in a vertical study's party",
            count: tagged.len(),
            limit: limit / TAG_BYTES,
        }));
    }
    let at = io_at(Role::Node, "the intersection");
    wire::send(channel, HANDSHAKE, Step::VerticalTags, &bytes).map_err(&at)?;
    drop(bytes);
    let (_, answer) = wire::recv(channel, HANDSHAKE, &[Step::VerticalMembership]).map_err(&at)?;
    let answer = Membership::from_bytes(&answer, tagged.len()).ok_or_else(|| {
        SecureError::violation(
            Role::Aggregator,
            Breach::Malformed {
                what: "an intersection answer that is not one",
            },
        )
    })?;
    let shared = tagged
        .rows_in_common_order(&answer)
        .map_err(|e| SecureError::violation(Role::Aggregator, Breach::Psi(e)))?;
    drop(tagged);
    Ok(shared)
}

/// A Node of a vertical study over `table`: steps 1-5, then it waits for the model. It
/// refuses a public key shorter than `min_key_bits` and, given `trust`, one the key holder did
/// not endorse. With `signer` (its identity, TLS studies) it signs its X25519 key for the PSI
/// key; the labelling Node then seals the PSI key only to keys the study file's other Nodes
/// signed, as many as there are (`trust` and `signer` go together).
pub fn run_node<C: Channel>(
    mut channel: C,
    table: &VerticalTable,
    min_key_bits: u32,
    trust: Option<KeyTrust>,
    signer: Option<Endorser>,
) -> Result<NodeOutcome, SecureError> {
    table.check()?;
    let mut rng = rand::rng();
    let recipient = Recipient::generate(&mut rng);
    let labelling = table.labels.is_some();
    let mut w = Writer::new().u64(table.names.len() as u64);
    for n in &table.names {
        w = w.string(n);
    }
    let endorsement = match &signer {
        Some(signer) => signer.endorse_recipient(&recipient.public())?,
        None => Endorsement::default(),
    };
    let join = w
        .u64(u64::from(labelling))
        .bytes(&recipient.public())
        .bytes(&endorsement.certificate)
        .bytes(&endorsement.signature)
        .finish();
    wire::send(&mut channel, HANDSHAKE, Step::VerticalJoin, &join)
        .map_err(io_at(Role::Node, "joining"))?;

    // Step 2.
    let key = psi_key(
        &mut channel,
        labelling,
        &recipient,
        trust.as_ref(),
        signer.as_ref(),
    )?;

    // Step 3.
    let shared = shared_rows(&mut channel, &key, table)?;

    // Step 4.
    let at = io_at(Role::Node, "waiting for the study to start");
    let (_, welcome) =
        wire::recv(&mut channel, HANDSHAKE, &[Step::VerticalWelcome]).map_err(&at)?;
    let mut r = Reader::new(&welcome);
    let (config, _, _) = read_parameters(&mut r).map_err(&at)?;
    let key_bytes = r.bytes().map_err(&at)?;
    let start = r.u64().map_err(&at)? as usize;
    let width = r.u64().map_err(&at)? as usize;
    let lead = r.u64().map_err(&at)? == 1;
    let standardize = r.u64().map_err(&at)? == 1;
    let rounds = Rounds {
        gradient: r.u64().map_err(&at)?,
        hessian: r.u64().map_err(&at)?,
    };
    let rows = r.u64().map_err(&at)? as usize;
    let endorsement = read_endorsement(&mut r).map_err(&at)?;
    r.end().map_err(&at)?;
    if let Some(trust) = trust {
        trust.check(config.session, key_bytes, &endorsement)?;
    }
    let key = parse_key(key_bytes, min_key_bits, Role::Node)?;
    let fits = width == table.names.len() + usize::from(lead)
        && start
            .checked_add(width)
            .is_some_and(|end| end <= config.dimension)
        && (!lead || (labelling && start == 0));
    if !fits || rows != shared.len() || !rounds_allowed(rounds, rows, config.dimension) {
        return Err(SecureError::violation(
            Role::Aggregator,
            Breach::VerticalWelcome {
                columns: width as u64,
                start: start as u64,
                dimension: config.dimension as u64,
                rows: rows as u64,
                shared: shared.len() as u64,
                rounds: (rounds.gradient, rounds.hessian),
            },
        ));
    }

    // The rows every party shares, against the disclosure controls, before Step 5 sends
    // anything computed from them.
    check_shared_rows(table, &shared, config.dimension)?;

    // Step 5.
    let block = block::block(
        &table.x,
        &table.names,
        &shared,
        standardize,
        lead,
        FEATURE_BITS,
    )
    .map_err(|e: BlockError| SecureError::Data(RowsError::new(&table.source, e.to_string())))?;
    let labels: Option<Vec<bool>> = table
        .labels
        .as_ref()
        .map(|y| shared.iter().map(|&r| y[r]).collect());
    let dealt = deal(
        &block.x,
        start..start + width,
        config.dimension,
        labels.as_deref(),
        rounds,
        FEATURE_BITS,
        &mut rng,
    )
    .map_err(|e: DealError| SecureError::Range(Overflow::Deal(e)))?;
    let session = config.session;
    send_deal(
        &mut channel,
        session,
        &key,
        dealt,
        // Standardised: the columns' means and deviations; raw: means 0 and the powers of two
        // the columns were divided by (the same two lists; none when nothing was scaled).
        block
            .standardization
            .clone()
            .or_else(|| block.scales.clone().map(|s| (vec![0.0; s.len()], s))),
    )?;

    // Step 6: the model, then the end.
    let at = io_at(Role::Node, "waiting for the model");
    let (_, model) = wire::recv(&mut channel, session, &[Step::VerticalModel]).map_err(&at)?;
    let mut r = Reader::new(&model);
    let beta = r.f64s().map_err(&at)?;
    let status = r.string().map_err(&at)?;
    let count = r.u64().map_err(&at)? as usize;
    if count != config.dimension || beta.len() != count {
        return Err(SecureError::violation(
            Role::Aggregator,
            Breach::Mismatch {
                what: "the model's dimension",
                got: if count == config.dimension {
                    beta.len()
                } else {
                    count
                } as u64,
                expected: config.dimension as u64,
            },
        ));
    }
    let names = (0..count)
        .map(|_| r.string())
        .collect::<Result<Vec<_>, _>>()
        .map_err(&at)?;
    r.end().map_err(&at)?;
    wire::recv(&mut channel, session, &[Step::Done]).map_err(&at)?;
    Ok(NodeOutcome {
        rows,
        names,
        beta,
        status,
        standardization: block.standardization,
        bytes_sent: channel.bytes_sent(),
    })
}

/// The outcome of a vertical study run in one process.
#[derive(Debug)]
pub struct InProcessOutcome {
    /// The aggregator's outcome.
    pub outcome: StudyOutcome,
    /// The key holder's counters.
    pub keyholder: keyholder::KeyholderStats,
    /// Each party's outcome, in the order given.
    pub nodes: Vec<NodeOutcome>,
}

/// Runs a vertical study with every role in this process, each on its own thread over memory
/// channels, with the messages of a study between organizations: `tables` in the order they
/// join, the key holder making its key with `make_key` (given the plan's size).
pub fn run_in_process<K: std::borrow::Borrow<SecretKey> + Send>(
    tables: &[VerticalTable],
    plan: &StudyPlan,
    make_key: impl FnOnce(u32) -> Result<K, SecureError> + Send,
    observer: &mut dyn FnMut(&IterationRecord),
) -> Result<InProcessOutcome, StudyError> {
    check_plan(plan)?;
    let min_key_bits = plan.key_bits;
    let (agg_kh, kh_end) = MemoryChannel::pair();
    let (agg_ends, node_ends): (Vec<_>, Vec<_>) =
        tables.iter().map(|_| MemoryChannel::pair()).unzip();
    std::thread::scope(|scope| {
        let keyholder = scope.spawn(move || {
            super::study_protocol::run_keyholder(kh_end, make_key, None, &mut NoKeyStore, None)
        });
        let nodes: Vec<_> = tables
            .iter()
            .zip(node_ends)
            .map(|(table, end)| scope.spawn(move || run_node(end, table, min_key_bits, None, None)))
            .collect();
        let outcome = run_aggregator(agg_ends, agg_kh, plan, observer);
        let keyholder = joined("the key holder".into(), keyholder.join());
        let nodes: Vec<_> = nodes
            .into_iter()
            .enumerate()
            .map(|(k, h)| joined(format!("party {}", k + 1), h.join()))
            .collect();
        // A party's own failure (its data, its refusal) is the cause when the aggregator only
        // saw the channel close; otherwise the aggregator's error is, and the parties' are its
        // echo.
        let outcome = match outcome {
            Err(e) if is_io(&e) => {
                let mut errors: Vec<StudyError> = keyholder.err().into_iter().collect();
                errors.extend(nodes.into_iter().filter_map(Result::err));
                return Err(errors.into_iter().find(|p| !is_io(p)).unwrap_or(e));
            }
            other => other?,
        };
        Ok(InProcessOutcome {
            outcome,
            keyholder: keyholder?,
            nodes: nodes.into_iter().collect::<Result<_, _>>()?,
        })
    })
}

fn is_io(e: &StudyError) -> bool {
    matches!(
        e,
        StudyError::Secure(SecureError::Io { .. }) | StudyError::Party(_, SecureError::Io { .. })
    )
}

/// A party thread's result, named.
fn joined<T>(
    name: String,
    r: std::thread::Result<Result<T, SecureError>>,
) -> Result<T, StudyError> {
    r.map_err(|_| StudyError::Panicked(name.clone()))?
        .map_err(|e| StudyError::Party(name, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Newton's dealt iterations follow the aggregator's budget (16 n p bytes a round in
    /// 1 GiB), between 10 and 50, and never beyond `--max-iter`; a Node refuses more.
    #[test]
    fn newton_deals_what_fits_and_nodes_refuse_more() {
        assert_eq!(newton_iterations(398, 31, 1000), 50);
        assert_eq!(newton_iterations(100_000, 61, 1000), 11);
        assert_eq!(newton_iterations(MAX_ROWS, 400, 1000), 10);
        assert_eq!(newton_iterations(398, 31, 9), 9);
        let rounds = |gradient, hessian| Rounds { gradient, hessian };
        assert!(rounds_allowed(rounds(12, 12), 100_000, 61));
        assert!(!rounds_allowed(rounds(13, 13), 100_000, 61));
        assert!(!rounds_allowed(rounds(3, 4), 398, 31));
        assert!(rounds_allowed(rounds(MAX_DEALT_ROUNDS, 0), 398, 31));
        assert!(!rounds_allowed(rounds(MAX_DEALT_ROUNDS + 1, 0), 398, 31));
    }
}
