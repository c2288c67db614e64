//! A whole secure study in one process: the key holder and every Node on their own threads,
//! the aggregator on the caller's, connected by in-memory channels (tests) or real loopback TCP
//! sockets (`privlogit study`).

use std::borrow::Borrow;
use std::io;
use std::thread;
use std::time::Instant;

use privlogit_circuits::channel::{Channel, MemoryChannel};
use privlogit_circuits::fixed_format::FixedFormat;

use super::aggregator::{AggregatorStats, Protocol};
use super::keyholder::{KeyholderStats, NoKeyStore};
use super::node::{NodeData, NodeStats};
use super::perturbation::{NoiseShare, NoiseShares};
use super::solver::LinearAlgebra;
use super::study_protocol::{self, StudyError, StudyOutcome, StudyPlan};
use super::{Party, SecureError};
use crate::objective::PartyData;
use crate::optimizer::{FitOptions, FitReport, IterationRecord, Optimizer};
use crate::paillier::SecretKey;
pub use crate::transport::{loopback_pair, tls_loopback_pair};

/// The outcome of a secure study.
#[derive(Debug)]
pub struct SecureReport {
    /// The optimiser's report (coefficients, iterations, rounds, status).
    pub fit: FitReport,
    /// The aggregator's counters.
    pub aggregator: AggregatorStats,
    /// The key holder's counters.
    pub keyholder: KeyholderStats,
    /// Wall time of the whole study, seconds.
    pub seconds: f64,
}

/// Runs `optimizer` over `protocol` on prepared design matrices (no standardisation, no added
/// intercept), over in-memory channels, the key holder holding `secret`, the circuits in `format`,
/// the Center's linear algebra by `linear_algebra`; `mask_seed` makes the masks (and so the
/// rounding) reproducible (tests only).
#[allow(clippy::too_many_arguments)]
pub fn run(
    parties: &[PartyData],
    secret: &SecretKey,
    format: FixedFormat,
    linear_algebra: LinearAlgebra,
    protocol: Protocol,
    optimizer: Optimizer,
    options: &FitOptions,
    observer: &mut dyn FnMut(&IterationRecord),
    mask_seed: Option<u64>,
) -> Result<SecureReport, StudyError> {
    let start = Instant::now();
    let dimension = parties.first().map_or(0, PartyData::columns);
    let names: Vec<String> = (1..=dimension).map(|j| format!("x{j}")).collect();
    let plan = StudyPlan {
        protocol,
        optimizer,
        options: options.clone(),
        format,
        key_bits: secret.public_key().bits() as u32,
        parties: parties.len(),
        standardize: false,
        intercept: false,
        linear_algebra,
        circuit_block: crate::secure::masked::engine::DEFAULT_BLOCK,
        mask_seed,
        release: None,
        reveal: crate::secure::aggregator::Reveal::Coefficients,
        glm: crate::objective::Glm::logistic(),
        evaluate: false,
    };
    let nodes = parties
        .iter()
        .map(|p| (names.clone(), NodeData::prepared(p.clone())))
        .collect();
    let StudyRun {
        outcome, keyholder, ..
    } = run_study(
        || Ok(MemoryChannel::pair()),
        nodes,
        &plan,
        |_| Ok(secret),
        observer,
        None,
        Products::Paillier,
    )?;
    Ok(SecureReport {
        fit: outcome.fit,
        aggregator: outcome.aggregator,
        keyholder,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Where a study in one process takes its masked products' cross terms from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Products {
    /// Paillier ciphertexts: the protocol of the two servers alone (the default).
    #[default]
    Paillier,
    /// A dealer on a thread of its own: the protocol of a study between organizations with a
    /// `privlogit dealer` ([`super::masked::dealt`]), a third party trusted to collude with
    /// neither server; the Nodes then pack their gradients.
    DealerThread,
}

/// Everything a study in one process reports.
#[derive(Debug)]
pub struct StudyRun {
    /// The aggregator's outcome.
    pub outcome: StudyOutcome,
    /// The key holder's counters.
    pub keyholder: KeyholderStats,
    /// Each Node's counters, in Node order.
    pub nodes: Vec<NodeStats>,
}

/// Runs a whole study in this process: the key holder and every Node on their own threads,
/// the aggregator on the caller's, each link a pair from `make_pair` (in-memory or
/// [`loopback_pair`]). Nodes are `(feature names, rows)`; `make_key` gives the key holder its
/// key for the modulus size the plan asks; `noise` gives a differentially private plan's
/// servers their noise shares; `products` says where the masked products come from. On
/// failure, reports the party that caused it.
#[allow(clippy::too_many_arguments)]
pub fn run_study<C, K>(
    mut make_pair: impl FnMut() -> io::Result<(C, C)>,
    nodes: Vec<(Vec<String>, NodeData)>,
    plan: &StudyPlan,
    make_key: impl FnOnce(u32) -> Result<K, SecureError> + Send,
    observer: &mut dyn FnMut(&IterationRecord),
    noise: Option<NoiseShares>,
    products: Products,
) -> Result<StudyRun, StudyError>
where
    C: Channel + Send + 'static,
    K: Borrow<SecretKey>,
{
    let link = |e| SecureError::io(Party::Launcher, "connecting the parties", e);
    let (to_keyholder, keyholder_end) = make_pair().map_err(link)?;
    let mut links = Vec::with_capacity(nodes.len());
    for _ in &nodes {
        links.push(make_pair().map_err(link)?);
    }
    // Made last, so the links keep their order (key holder, then Nodes).
    let (to_dealer, dealer_end) = if products == Products::DealerThread {
        let (a, b) = make_pair().map_err(link)?;
        (Some(a), Some(b))
    } else {
        (None, None)
    };
    let (mut aggregator_noise, mut keyholder_noise) = match noise {
        Some(n) => (Some(n.aggregator), Some(n.keyholder)),
        None => (None, None),
    };
    thread::scope(|scope| {
        let keyholder = scope.spawn(move || {
            study_protocol::run_keyholder(
                keyholder_end,
                make_key,
                None,
                &mut NoKeyStore,
                keyholder_noise
                    .as_deref_mut()
                    .map(|n| n as &mut dyn NoiseShare),
            )
        });
        let mut node_ends = Vec::new();
        let mut handles = Vec::new();
        let min_key_bits = plan.key_bits;
        for ((names, data), (aggregator_end, node_end)) in nodes.into_iter().zip(links) {
            node_ends.push(aggregator_end);
            handles.push(scope.spawn(move || {
                study_protocol::run_node(node_end, &names, data, min_key_bits, None, None)
            }));
        }
        let mask_seed = plan.mask_seed;
        let dealer = dealer_end.map(|end| {
            scope.spawn(move || {
                super::masked::dealt::serve(end, super::wire::HANDSHAKE, min_key_bits, mask_seed)
            })
        });
        let driven = study_protocol::run_aggregator_with(
            node_ends,
            to_keyholder,
            plan,
            observer,
            None,
            aggregator_noise
                .as_deref_mut()
                .map(|n| n as &mut dyn NoiseShare),
            to_dealer,
        );
        // The aggregator's channels are dropped by now, so every serving thread ends.
        let keyholder = keyholder
            .join()
            .map_err(|_| StudyError::Panicked("key holder".into()))?;
        let node_results: Vec<_> = handles
            .into_iter()
            .enumerate()
            .map(|(i, h)| {
                h.join()
                    .map_err(|_| StudyError::Panicked(format!("Node {}", i + 1)))
            })
            .collect::<Result<_, _>>()?;
        let dealer = dealer
            .map(|d| d.join().map_err(|_| StudyError::Panicked("dealer".into())))
            .transpose()?;
        let outcome = match (driven, dealer) {
            (Ok(v), _) => v,
            // A dealer that failed for a cause of its own names it (the aggregator saw only
            // the hang-up).
            (Err(_), Some(Err(d))) if !d.is_disconnection() => {
                return Err(StudyError::Party("dealer".into(), d));
            }
            (Err(e), _) => return Err(root_cause(e, keyholder, node_results)),
        };
        let keyholder = keyholder?;
        let nodes = node_results.into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok(StudyRun {
            outcome,
            keyholder,
            nodes,
        })
    })
}

/// The error to report when the aggregator failed with `driven`: the first serving party's
/// error that is not a broken channel, else `driven`.
pub fn root_cause(
    driven: StudyError,
    keyholder: Result<KeyholderStats, SecureError>,
    nodes: Vec<Result<NodeStats, SecureError>>,
) -> StudyError {
    let keyholder = keyholder.err().map(|e| ("key holder".to_string(), e));
    let nodes = nodes
        .into_iter()
        .enumerate()
        .filter_map(|(i, r)| r.err().map(|e| (format!("Node {}", i + 1), e)));
    keyholder
        .into_iter()
        .chain(nodes)
        .find(|(_, e)| !e.is_disconnection())
        .map_or(driven, |(who, e)| StudyError::Party(who, e))
}
