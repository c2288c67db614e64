//! A whole secure study in one process: the key holder and every Node on their own threads,
//! the aggregator on the caller's, all connected by in-memory channels. Used by tests and as
//! the reference for the networked roles.

use std::thread;
use std::time::Instant;

use privlogit_circuits::channel::MemoryChannel;
use privlogit_circuits::fixed::FixedFormat;

use super::aggregator::{AggregatorStats, Protocol, SecureAggregation};
use super::keyholder::{self, KeyholderStats};
use super::{SecureConfig, SecureError, node};
use crate::objective::PartyData;
use crate::optimizer::{FitError, FitOptions, FitReport, IterationRecord, Optimizer};
use crate::paillier::SecretKey;

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

/// What can stop an in-process study.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    /// A party failed.
    #[error(transparent)]
    Secure(#[from] SecureError),
    /// The optimiser failed (its backend errors are the aggregator's).
    #[error(transparent)]
    Fit(#[from] FitError),
    /// A serving party failed (named).
    #[error("{0} failed: {1}")]
    Party(String, SecureError),
    /// A party's thread panicked.
    #[error("the {0} thread panicked")]
    Panicked(String),
}

/// Runs `optimizer` over `protocol` with the key holder holding `secret`, the circuits in
/// `format`.
pub fn run(
    parties: &[PartyData],
    secret: &SecretKey,
    format: FixedFormat,
    protocol: Protocol,
    optimizer: Optimizer,
    options: &FitOptions,
    observer: &mut dyn FnMut(&IterationRecord),
) -> Result<SecureReport, StudyError> {
    let start = Instant::now();
    let dimension = parties.first().map_or(0, PartyData::columns);
    let config = SecureConfig::new(rand::random(), parties.len(), dimension, format);
    let key = secret.public_key().clone();
    thread::scope(|scope| {
        let (to_keyholder, keyholder_end) = MemoryChannel::pair();
        let keyholder = scope.spawn(|| keyholder::serve(keyholder_end, secret, &config));
        let mut node_ends = Vec::new();
        let mut nodes = Vec::new();
        for party in parties {
            let (aggregator_end, node_end) = MemoryChannel::pair();
            node_ends.push(aggregator_end);
            let (key, config) = (&key, &config);
            nodes.push(scope.spawn(move || node::serve(node_end, party, key, config)));
        }
        let driven = (|| -> Result<_, StudyError> {
            let mut aggregation = SecureAggregation::connect(
                node_ends,
                to_keyholder,
                key.clone(),
                config.clone(),
                protocol,
            )?;
            let fit = optimizer.fit(&mut aggregation, options, observer)?;
            Ok((fit, aggregation.finish()?))
        })();
        // The aggregator's channels are dropped by now, so every serving thread ends.
        let keyholder = keyholder
            .join()
            .map_err(|_| StudyError::Panicked("key holder".into()))?;
        let node_results: Vec<_> = nodes
            .into_iter()
            .enumerate()
            .map(|(i, h)| {
                h.join()
                    .map_err(|_| StudyError::Panicked(format!("Node {}", i + 1)))
            })
            .collect::<Result<_, _>>()?;
        // When the aggregator failed because a serving party did (its channel broke), report
        // that party's own error, unless it is itself only a broken channel.
        let (fit, aggregator) = match driven {
            Ok(v) => v,
            Err(e) => return Err(root_cause(e, keyholder, node_results)),
        };
        let keyholder = keyholder?;
        for r in node_results {
            r?;
        }
        Ok(SecureReport {
            fit,
            aggregator,
            keyholder,
            seconds: start.elapsed().as_secs_f64(),
        })
    })
}

/// The error to report when the aggregator failed with `driven`: the first serving party's
/// error that is not a broken channel, else `driven`.
fn root_cause(
    driven: StudyError,
    keyholder: Result<KeyholderStats, SecureError>,
    nodes: Vec<Result<(), SecureError>>,
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
