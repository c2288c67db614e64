//! The Node role: answers the aggregator's requests with encrypted sums over its own rows.
//! Everything a Node sends is encrypted under the key holder's key; what it receives (N, the
//! coefficients, `Enc((B/N)^-1)`) is public by design or encrypted.

use std::sync::Arc;

use ndarray::{Array1, Array2};
use privlogit_circuits::channel::Channel;

use super::shapes::{MOMENT_BITS, MOMENT_SCALE, Shape};
use super::wire::{self, Reader, Step, Writer};
use super::{SecureConfig, SecureError};
use crate::compensated::CompensatedSum;
use crate::disclosure::Disclosure;
use crate::objective::{Glm, PartyData};
use crate::paillier::{DjnNoise, EncryptedMatrix, EncryptedVector, Fixed, PublicKey};
use crate::rows::blocks::for_each_block;
use crate::rows::{DesignRows, MemoryRows, RowSource};
use crate::transport::Role;

/// A Node's rows: features (without the intercept) and 0/1 labels, in memory or streamed from a
/// [`RowSource`]. Standardisation, when the study asks for it, replaces the features by z-scores
/// with the pooled statistics as each chunk is read; the design matrix (intercept first when
/// asked) is formed at the first request that needs it.
#[derive(Debug, Clone)]
pub struct NodeData {
    raw: Arc<dyn RowSource>,
    intercept: bool,
    standardize: Option<(Vec<f64>, Vec<f64>)>,
    unit_norm: bool,
    glm: Glm,
    party: Option<PartyData>,
    /// Held-out rows (same columns), read as the design only to evaluate the final model.
    test: Option<Arc<dyn RowSource>>,
    /// Evaluation requests the study's plan allows (one when it evaluates, else none).
    evaluations_left: usize,
    /// Constant-sum requests the plan allows (a Gaussian, Poisson or weighted model: the
    /// Poisson start and the inference round; none for logistic regression).
    constants_left: usize,
    /// The counts under which this Node refuses to take part (none unless set: the
    /// application sets the study's, DataSHIELD's by default).
    disclosure: Disclosure,
    /// Rows handed over as a formed design ([`NodeData::prepared`]): the design exists before
    /// the fit starts, so the setup's moments and scaling are still allowed.
    prepared: bool,
}

impl NodeData {
    /// Rows `x` (features only) with labels `y` in memory; `intercept` prepends a column of ones.
    pub fn new(x: Array2<f64>, y: Array1<f64>, intercept: bool) -> Self {
        assert_eq!(x.nrows(), y.len(), "one label per row");
        Self::from_source(Arc::new(MemoryRows::new(x, y)), intercept)
    }

    /// Rows read from `raw` (features only) on every pass, never held whole.
    pub fn from_source(raw: Arc<dyn RowSource>, intercept: bool) -> Self {
        Self {
            raw,
            intercept,
            standardize: None,
            unit_norm: false,
            glm: Glm::logistic(),
            party: None,
            test: None,
            evaluations_left: 0,
            constants_left: 0,
            disclosure: Disclosure::OFF,
            prepared: false,
        }
    }

    /// What the study may ask after (or, for a Poisson start, before) the fit, from its
    /// Welcome: one evaluation when it `evaluate`s, and the constant sums only for a model
    /// that needs them. Anything more is refused as a protocol violation, so an aggregator
    /// cannot query the rows through these steps with coefficients of its choosing.
    pub fn allow_after_fit(&mut self, evaluate: bool) {
        self.evaluations_left = usize::from(evaluate);
        self.constants_left = if self.glm.is_logistic() { 0 } else { 2 };
    }

    /// The disclosure controls this Node applies to its own counts before it sends anything.
    pub fn with_disclosure(mut self, disclosure: Disclosure) -> Self {
        self.disclosure = disclosure;
        self
    }

    /// Refuses (before anything computed from the rows is sent) to take part in a study of
    /// `parameters` coefficients and `parties` Nodes that `evaluate`s held-out rows, when this
    /// Node's counts are under its disclosure controls. One pass over the labels for a
    /// binary model; the reason names the threshold, not the count.
    pub fn check_disclosure(
        &self,
        parameters: usize,
        parties: usize,
        evaluate: bool,
    ) -> Result<(), SecureError> {
        let d = &self.disclosure;
        let refuse = |why: String| SecureError::Refused {
            party: Role::Node,
            reason: super::Refusal::Policy(why),
        };
        if evaluate && let Some(why) = d.check_two_nodes(parties, "a held-out evaluation") {
            return Err(refuse(why));
        }
        let binary = self.glm.family == crate::objective::Family::Binomial && d.min_cell > 1;
        let classes = binary
            .then(|| crate::disclosure::class_counts(self.raw.as_ref()))
            .transpose()?;
        let held_out = match (&self.test, evaluate) {
            (Some(test), true) => Some((
                test.rows() as u64,
                binary
                    .then(|| crate::disclosure::class_counts(test.as_ref()))
                    .transpose()?,
            )),
            _ => None,
        };
        match d.check_node(self.rows() as u64, classes, parameters, held_out) {
            Some(why) => Err(refuse(why)),
            None => Ok(()),
        }
    }

    /// Held-out rows with the training rows' columns: the study's final model is evaluated on
    /// them (when it asks), never fitted on them.
    pub fn with_test_rows(mut self, rows: Arc<dyn RowSource>) -> Self {
        self.test = Some(rows);
        self
    }

    /// The held-out rows as the design the model applies to: the same intercept, pooled
    /// standardisation and trailing columns as the training rows.
    fn test_party(&self) -> Result<Option<PartyData>, SecureError> {
        let Some(raw) = &self.test else {
            return Ok(None);
        };
        let mut design =
            DesignRows::new(raw.clone(), self.intercept).with_trailing(self.glm.trailing());
        if let Some((means, scales)) = self.standardize.clone() {
            design = design.standardized(means, scales)?;
        }
        Ok(Some(
            PartyData::from_source(Arc::new(design)).with_glm(self.glm),
        ))
    }

    /// The rows read as the generalised linear model `glm`: `raw`'s last columns are its offset
    /// and weight ([`crate::rows::reordered::Reordered`] puts them there), not features.
    pub fn with_glm(mut self, glm: Glm) -> Self {
        assert!(
            self.raw.columns() >= glm.trailing(),
            "rows without their offset and weight"
        );
        self.glm = glm;
        self.party = None;
        self
    }

    /// The model the rows are read as.
    pub fn glm(&self) -> Glm {
        self.glm
    }

    /// Raw columns that are features.
    fn features(&self) -> usize {
        self.raw.columns() - self.glm.trailing()
    }

    /// A design matrix already formed (intercept included if wanted).
    pub fn prepared(party: PartyData) -> Self {
        Self {
            raw: party.source().clone(),
            intercept: false,
            standardize: None,
            unit_norm: false,
            glm: party.glm(),
            party: Some(party),
            test: None,
            evaluations_left: 0,
            constants_left: 0,
            disclosure: Disclosure::OFF,
            prepared: true,
        }
    }

    /// Every design row scaled by its own norm to norm 1 (a secure PLR study's public row
    /// rule); a design matrix formed before is formed again from its rows.
    pub fn set_unit_norm(&mut self) {
        self.unit_norm = true;
        self.party = None;
    }

    /// Whether the design matrix gets an intercept column (the study decides).
    pub fn set_intercept(&mut self, intercept: bool) {
        self.intercept = intercept;
    }

    /// Rows held.
    pub fn rows(&self) -> usize {
        self.raw.rows()
    }

    fn party(&mut self) -> Result<&PartyData, SecureError> {
        if self.party.is_none() {
            let mut design = DesignRows::new(self.raw.clone(), self.intercept)
                .with_trailing(self.glm.trailing());
            if let Some((means, scales)) = self.standardize.clone() {
                design = design.standardized(means, scales)?;
            }
            if self.unit_norm {
                design = design.unit_norm();
            }
            self.party = Some(PartyData::from_source(Arc::new(design)).with_glm(self.glm));
        }
        Ok(self.party.as_ref().expect("formed above"))
    }

    /// Per-feature sums of `x` or, given means, of `(x - mean)^2`, divided by `n`.
    fn moments(&self, means: Option<&[f64]>, n: f64) -> Result<Vec<f64>, SecureError> {
        if self.party.is_some() && !self.prepared {
            return Err(SecureError::violation(
                Role::Aggregator,
                "standardisation asked after the fit started",
            ));
        }
        let p = self.features();
        if means.is_some_and(|m| m.len() != p) {
            return Err(SecureError::violation(
                Role::Aggregator,
                "means of the wrong length",
            ));
        }
        let mut total = CompensatedSum::zeros(p);
        let block_sums = |x: ndarray::ArrayView2<'_, f64>, _: ndarray::ArrayView1<'_, f64>| {
            let mut acc = CompensatedSum::zeros(p);
            let mut term = vec![0.0; p];
            for row in x.outer_iter() {
                for (j, (t, x)) in term.iter_mut().zip(row.iter()).enumerate() {
                    *t = match means {
                        Some(m) => (x - m[j]) * (x - m[j]),
                        None => *x,
                    };
                }
                acc.add_scaled(0, &term, 1.0);
            }
            acc
        };
        for_each_block(self.raw.as_ref(), block_sums, |b| total.merge(&b))?;
        Ok(total.values().iter().map(|v| v / n).collect())
    }
}

/// Where a Node's time went, for the cost report.
#[derive(Debug, Clone, Default)]
pub struct NodeStats {
    /// Seconds computing sums over its own rows (plaintext).
    pub local_seconds: f64,
    /// Seconds encrypting and multiplying ciphertexts (the rest of its busy time).
    pub paillier_seconds: f64,
    /// Bytes sent to the aggregator.
    pub bytes_sent: u64,
}

/// Adds the seconds `work` takes to `total`.
fn timed<T>(total: &mut f64, work: impl FnOnce() -> T) -> T {
    let start = std::time::Instant::now();
    let out = work();
    *total += start.elapsed().as_secs_f64();
    out
}

/// Serves the aggregator over `channel` until it says [`Step::Done`].
pub fn serve<C: Channel>(
    mut channel: C,
    data: &mut NodeData,
    key: &PublicKey,
    config: &SecureConfig,
) -> Result<NodeStats, SecureError> {
    let mut stats = NodeStats::default();
    let mut busy_seconds = 0.0;
    let noise = DjnNoise::shared(key);
    let frac = config.frac;
    let mut n_total: Option<f64> = None;
    let mut inverse: Option<EncryptedMatrix> = None;
    let at = |step| move |e| SecureError::io(format!("Node, {step}"), e);
    loop {
        let (step, payload) = wire::recv(
            &mut channel,
            config.session,
            &[
                Step::Count,
                Step::Total,
                Step::Bound,
                Step::Inverse,
                Step::Gradient,
                Step::Newton,
                Step::Margins,
                Step::Constants,
                Step::Evaluate,
                Step::Moments,
                Step::Standardize,
                Step::Done,
            ],
        )
        .map_err(at("waiting for the aggregator"))?;
        let busy = std::time::Instant::now();
        let mut reader = Reader::new(&payload);
        let reply = match step {
            Step::Done => {
                stats.bytes_sent = channel.bytes_sent();
                stats.paillier_seconds = (busy_seconds - stats.local_seconds).max(0.0);
                return Ok(stats);
            }
            Step::Evaluate => {
                data.evaluations_left = data.evaluations_left.checked_sub(1).ok_or_else(|| {
                    SecureError::violation(
                        Role::Aggregator,
                        "an evaluation the study's plan does not allow (or a second one)",
                    )
                })?;
                let n = n_total.ok_or_else(|| {
                    SecureError::violation(Role::Aggregator, "evaluation requested before N")
                })?;
                let columns = data.party()?.columns();
                let beta = read_beta(reader, columns)?;
                let (sums, scores) = match data.test_party()? {
                    Some(test) => timed(&mut stats.local_seconds, || {
                        Ok::<_, crate::rows::RowsError>((
                            crate::evaluation::sums(&test, &beta)?,
                            crate::evaluation::scores(&test, &beta)?,
                        ))
                    })?,
                    None => ([0.0; crate::evaluation::SUMS], Vec::new()),
                };
                let values: Vec<f64> = sums.iter().map(|v| v / n).collect();
                let shape = config.evaluation_shape(key);
                let v = encrypt_values(key, &values, &shape, config, &noise)?;
                let shares = super::ranking::NodeShares::new(key, scores, &noise)?;
                Some((
                    Step::EvaluateReply,
                    shares
                        .write(Writer::new().bytes(&v.to_bytes(key)), key)
                        .finish(),
                ))
            }
            Step::Constants => {
                reader.end().map_err(at("reading the constants request"))?;
                data.constants_left = data.constants_left.checked_sub(1).ok_or_else(|| {
                    SecureError::violation(
                        Role::Aggregator,
                        "constant sums the study's model does not need (or asked too often)",
                    )
                })?;
                let n = n_total.ok_or_else(|| {
                    SecureError::violation(Role::Aggregator, "constants requested before N")
                })?;
                let party = data.party()?;
                let sums = timed(&mut stats.local_seconds, || party.constant_sums())?;
                let values: Vec<f64> = sums.iter().map(|v| v / n).collect();
                let v = encrypt_values(key, &values, &config.constants_shape(key), config, &noise)?;
                Some((
                    Step::ConstantsReply,
                    Writer::new().bytes(&v.to_bytes(key)).finish(),
                ))
            }
            Step::Margins => {
                let party = data.party()?;
                let beta = read_beta(reader, party.columns())?;
                let beta = beta.as_slice().expect("contiguous");
                let (glm, p) = (party.glm(), party.columns());
                let mut wrong: u64 = 0;
                party.source().scan(&mut |x, y| {
                    for (row, label) in x.rows().into_iter().zip(y) {
                        let row = row.to_slice().expect("standard layout");
                        let (offset, _) = glm.offset_and_weight(row, p);
                        let eta = crate::objective::dot(&row[..p], beta) + offset;
                        wrong += u64::from(eta * (2.0 * label - 1.0) <= 0.0);
                    }
                    Ok(())
                })?;
                let shape = config.count_shape(key);
                let v = EncryptedVector::encrypt(
                    key,
                    &[Fixed::integer(wrong)],
                    &shape.bound,
                    shape.packing,
                    &noise,
                )?;
                Some((
                    Step::MarginsReply,
                    Writer::new().bytes(&v.to_bytes(key)).finish(),
                ))
            }
            Step::Count => {
                let count = Fixed::integer(data.rows() as u64);
                let shape = config.count_shape(key);
                if data.rows() as u64 > config.max_rows {
                    return Err(SecureError::Range(format!(
                        "a Node holds {} rows, above the study's limit {}",
                        data.rows(),
                        config.max_rows
                    )));
                }
                let v =
                    EncryptedVector::encrypt(key, &[count], &shape.bound, shape.packing, &noise)?;
                Some((
                    Step::CountReply,
                    Writer::new().bytes(&v.to_bytes(key)).finish(),
                ))
            }
            Step::Total => {
                let n = reader.u64().map_err(at("reading N"))?;
                reader.end().map_err(at("reading N"))?;
                if n < data.rows() as u64 {
                    return Err(SecureError::violation(
                        Role::Aggregator,
                        format!("N = {n} is below this Node's own {} rows", data.rows()),
                    ));
                }
                n_total = Some(n as f64);
                None
            }
            Step::Bound => {
                let n = n_total.ok_or_else(|| {
                    SecureError::violation(Role::Aggregator, "bound requested before N")
                })?;
                let party = data.party()?;
                let sums = timed(&mut stats.local_seconds, || {
                    party.information_bound_sums().map(|s| s.values())
                })?;
                let values: Vec<f64> = sums.iter().map(|v| v / n).collect();
                let v = encrypt_values(key, &values, &config.bound_shape(key)?, config, &noise)?;
                Some((
                    Step::BoundReply,
                    Writer::new().bytes(&v.to_bytes(key)).finish(),
                ))
            }
            Step::Inverse => {
                let bytes = reader.bytes().map_err(at("reading the inverse"))?;
                reader.end().map_err(at("reading the inverse"))?;
                inverse = Some(EncryptedMatrix::from_bytes(key, bytes)?);
                None
            }
            Step::Gradient | Step::Newton => {
                let n = n_total.ok_or_else(|| {
                    SecureError::violation(Role::Aggregator, "gradient requested before the setup")
                })?;
                let party = data.party()?;
                let beta = read_beta(reader, party.columns())?;
                let mut sums = timed(&mut stats.local_seconds, || {
                    party.gradient_sums(&beta).map(|s| s.values())
                })?;
                let log_likelihood = sums.pop().expect("p + 1 sums") / n;
                let gradient: Vec<f64> = sums.iter().map(|v| v / n).collect();
                // Unpacked for dot products under encryption, or packed for masked arithmetic
                // (the study's public choice).
                let g =
                    encrypt_values(key, &gradient, &config.gradient_shape(key)?, config, &noise)?;
                let l = encrypt_values(
                    key,
                    &[log_likelihood],
                    &config.objective_shape(key),
                    config,
                    &noise,
                )?;
                let mut w = Writer::new()
                    .bytes(&g.to_bytes(key))
                    .bytes(&l.to_bytes(key));
                if let Some(m) = &inverse {
                    let fixed = gradient
                        .iter()
                        .map(|&v| Fixed::from_f64(v, frac))
                        .collect::<Result<Vec<_>, _>>()?;
                    // Declared at the public bound, not the one these values give (which
                    // would tell the Center the size of this Node's gradient).
                    let shape = config.local_step_shape(m)?;
                    let step = m.mul_vector(key, &fixed)?;
                    if step.slot_bound() > &shape.bound {
                        return Err(SecureError::Range(
                            "a Node's step exceeds its public bound".into(),
                        ));
                    }
                    let step = step
                        .assume_slot_bound(shape.bound)
                        .rerandomized(key, &noise);
                    w = w.bytes(&step.to_bytes(key));
                }
                if step == Step::Newton {
                    // The local information X_i^T A X_i / N (eq. 2.13), lower triangle.
                    let sums = timed(&mut stats.local_seconds, || {
                        party.information_sums(&beta).map(|s| s.values())
                    })?;
                    let values: Vec<f64> = sums.iter().map(|v| v / n).collect();
                    let h =
                        encrypt_values(key, &values, &config.bound_shape(key)?, config, &noise)?;
                    w = w.bytes(&h.to_bytes(key));
                }
                Some((Step::GradientReply, w.finish()))
            }
            Step::Moments => {
                let n = n_total.ok_or_else(|| {
                    SecureError::violation(Role::Aggregator, "moments requested before N")
                })?;
                let means = reader.f64s().map_err(at("reading the means"))?;
                reader.end().map_err(at("reading the means"))?;
                if !(means.is_empty() || means.len() == data.features())
                    || means.iter().any(|m| !m.is_finite())
                {
                    return Err(SecureError::violation(
                        Role::Aggregator,
                        format!(
                            "the aggregator sent {} means for {} columns, or a mean that is not finite",
                            means.len(),
                            data.features()
                        ),
                    ));
                }
                let values = timed(&mut stats.local_seconds, || {
                    data.moments((!means.is_empty()).then_some(&means[..]), n)
                })?;
                let limit = f64::from(MOMENT_BITS).exp2();
                if let Some(j) = values.iter().position(|v| v.is_nan() || v.abs() >= limit) {
                    let column = data
                        .raw
                        .names()
                        .get(j)
                        .map_or_else(|| format!("{}", j + 1), |n| format!("{n:?}"));
                    return Err(SecureError::Range(format!(
                        "{}: column {column}: its {} over the study's rows is {:e}, beyond \
                         2^{MOMENT_BITS}: a value there is far too large; rescale the column",
                        data.raw.describe(),
                        if means.is_empty() { "mean" } else { "variance" },
                        values[j]
                    )));
                }
                let fixed = values
                    .iter()
                    .map(|&v| Fixed::from_f64(v, MOMENT_SCALE))
                    .collect::<Result<Vec<_>, _>>()?;
                let shape = config.moments_shape(key, fixed.len())?;
                let v = EncryptedVector::encrypt(key, &fixed, &shape.bound, shape.packing, &noise)?;
                Some((
                    Step::MomentsReply,
                    Writer::new().bytes(&v.to_bytes(key)).finish(),
                ))
            }
            Step::Standardize => {
                let means = reader.f64s().map_err(at("reading the statistics"))?;
                let scales = reader.f64s().map_err(at("reading the statistics"))?;
                reader.end().map_err(at("reading the statistics"))?;
                if (data.party.is_some() && !data.prepared)
                    || means.len() != data.features()
                    || scales.len() != data.features()
                    || means.iter().any(|m| !m.is_finite())
                    || scales.iter().any(|s| !(s.is_finite() && *s > 0.0))
                {
                    return Err(SecureError::violation(
                        Role::Aggregator,
                        "unusable standardisation statistics",
                    ));
                }
                data.standardize = Some((means, scales));
                if data.prepared {
                    // Formed again from its rows, scaled (the source is the design itself).
                    data.party = None;
                    data.prepared = false;
                }
                None
            }
            other => unreachable!("{other:?} was not expected"),
        };
        busy_seconds += busy.elapsed().as_secs_f64();
        if let Some((step, bytes)) = reply {
            wire::send(&mut channel, config.session, step, &bytes)
                .map_err(at("replying to the aggregator"))?;
        }
    }
}

/// Encrypts reals in `shape` (its scale, declared bound and packing), refusing values at or
/// above the study's public bound `2^value_bits` (a value that large would not fit the masks'
/// and slots' widths).
fn encrypt_values(
    key: &PublicKey,
    values: &[f64],
    shape: &Shape,
    config: &SecureConfig,
    noise: &DjnNoise,
) -> Result<EncryptedVector, SecureError> {
    let limit = f64::from(config.value_bits).exp2();
    if let Some(v) = values.iter().find(|v| v.is_nan() || v.abs() >= limit) {
        return Err(SecureError::Range(format!(
            "a Node's value {v} (a sum over its rows divided by N) is outside the study's \
             public bound 2^{}: standardise the features (--standardize) or rescale the large \
             columns",
            config.value_bits
        )));
    }
    let fixed = values
        .iter()
        .map(|&v| Fixed::from_f64(v, shape.scale))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(EncryptedVector::encrypt(
        key,
        &fixed,
        &shape.bound,
        shape.packing,
        noise,
    )?)
}

/// The coefficients a request carries, one per column of this Node's design.
fn read_beta(mut reader: Reader<'_>, columns: usize) -> Result<Array1<f64>, SecureError> {
    let at = |e| SecureError::io("Node, reading beta".into(), e);
    let beta = Array1::from(reader.f64s().map_err(at)?);
    reader.end().map_err(at)?;
    if beta.len() != columns {
        return Err(SecureError::violation(
            Role::Aggregator,
            format!("beta of {} coefficients for {columns} columns", beta.len()),
        ));
    }
    Ok(beta)
}
