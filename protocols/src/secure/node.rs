//! The Node role: answers the aggregator's requests with encrypted sums over its own rows.
//! Everything a Node sends is encrypted under the key holder's key; what it receives (N, the
//! coefficients, `Enc((B/N)^-1)`) is public by design or encrypted.

use std::sync::Arc;

use ndarray::{Array1, Array2};
use privlogit_circuits::channel::Channel;

use super::shapes::{MOMENT_BITS, MOMENT_SCALE, Shape};
use super::wire::{self, Reader, Step, Writer};
use super::{Breach, Overflow, SecureConfig, SecureError};
use crate::disclosure::Disclosure;
use crate::objective::{Glm, PartyData, RowJob, RowKernel};
use crate::paillier::{DjnNoise, EncryptedMatrix, EncryptedVector, Fixed, PublicKey};
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
                Breach::OutOfOrder {
                    what: "standardisation asked after the fit started",
                },
            ));
        }
        let p = self.features();
        if means.is_some_and(|m| m.len() != p) {
            return Err(SecureError::violation(
                Role::Aggregator,
                Breach::wrong_length("means", means.map_or(0, <[f64]>::len), p),
            ));
        }
        let kernel = RowKernel::Moments(means.map(<[f64]>::to_vec));
        let total = RowJob::new(self.glm, kernel).fold(self.raw.as_ref())?;
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

/// The requests a Node answers, in any order the aggregator's protocol sends them.
const REQUESTS: [Step; 12] = [
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
];

/// What a request is answered with: a reply to send, or nothing (the request only set state).
type Reply = Option<(Step, Vec<u8>)>;

/// `e` while the Node does `step`.
fn at(step: &'static str) -> impl Fn(std::io::Error) -> SecureError {
    move |e| SecureError::io(Role::Node, step, e)
}

/// Serves the aggregator over `channel` until it says [`Step::Done`].
pub fn serve<C: Channel>(
    mut channel: C,
    data: &mut NodeData,
    key: &PublicKey,
    config: &SecureConfig,
) -> Result<NodeStats, SecureError> {
    let mut session = Session {
        data,
        key,
        config,
        noise: DjnNoise::shared(key),
        stats: NodeStats::default(),
        n_total: None,
        inverse: None,
    };
    let mut busy_seconds = 0.0;
    loop {
        let (step, payload) = wire::recv(&mut channel, config.session, &REQUESTS)
            .map_err(at("waiting for the aggregator"))?;
        let busy = std::time::Instant::now();
        let reader = Reader::new(&payload);
        let reply = match step {
            Step::Done => {
                let mut stats = session.stats;
                stats.bytes_sent = channel.bytes_sent();
                stats.paillier_seconds = (busy_seconds - stats.local_seconds).max(0.0);
                return Ok(stats);
            }
            Step::Evaluate => session.evaluate(reader)?,
            Step::Constants => session.constants(reader)?,
            Step::Margins => session.margins(reader)?,
            Step::Count => session.count()?,
            Step::Total => session.total(reader)?,
            Step::Bound => session.bound()?,
            Step::Inverse => session.inverse(reader)?,
            Step::Gradient | Step::Newton => session.gradient(reader, step == Step::Newton)?,
            Step::Moments => session.moments(reader)?,
            Step::Standardize => session.standardize(reader)?,
            other => unreachable!("{other:?} was not expected"),
        };
        busy_seconds += busy.elapsed().as_secs_f64();
        if let Some((step, bytes)) = reply {
            wire::send(&mut channel, config.session, step, &bytes)
                .map_err(at("replying to the aggregator"))?;
        }
    }
}

/// A Node while it serves one study: its rows, the study's public parameters, what the setup
/// told it (N, the encrypted inverse of PrivLogit-Local) and its timings.
struct Session<'a> {
    data: &'a mut NodeData,
    key: &'a PublicKey,
    config: &'a SecureConfig,
    noise: DjnNoise,
    stats: NodeStats,
    n_total: Option<f64>,
    inverse: Option<EncryptedMatrix>,
}

impl Session<'_> {
    /// N, which every request of sums divides by; `what` was asked before the setup sent it.
    fn n(&self, what: &'static str) -> Result<f64, SecureError> {
        self.n_total
            .ok_or_else(|| SecureError::violation(Role::Aggregator, Breach::OutOfOrder { what }))
    }

    /// `values` encrypted in `shape`, as a reply `step`.
    fn encrypted(&self, step: Step, values: &[f64], shape: &Shape) -> Result<Reply, SecureError> {
        let v = encrypt_values(self.key, values, shape, self.config, &self.noise)?;
        Ok(Some((
            step,
            Writer::new().bytes(&v.to_bytes(self.key)).finish(),
        )))
    }

    /// One integer, encrypted at the count's shape, as a reply `step`.
    fn encrypted_count(&self, step: Step, count: u64) -> Result<Reply, SecureError> {
        let shape = self.config.count_shape(self.key);
        let v = EncryptedVector::encrypt(
            self.key,
            &[Fixed::integer(count)],
            &shape.bound,
            shape.packing,
            &self.noise,
        )?;
        Ok(Some((
            step,
            Writer::new().bytes(&v.to_bytes(self.key)).finish(),
        )))
    }

    /// The held-out rows' sums and scores at the final coefficients (zeros and none for a Node
    /// without held-out rows), once.
    fn evaluate(&mut self, reader: Reader<'_>) -> Result<Reply, SecureError> {
        let data = &mut *self.data;
        data.evaluations_left = data.evaluations_left.checked_sub(1).ok_or_else(|| {
            SecureError::violation(
                Role::Aggregator,
                Breach::NotInPlan {
                    what: "an evaluation the study's plan does not allow (or a second one)",
                },
            )
        })?;
        let n = self.n("evaluation requested before N")?;
        let columns = self.data.party()?.columns();
        let beta = read_beta(reader, columns)?;
        let (sums, scores) = match self.data.test_party()? {
            Some(test) => timed(&mut self.stats.local_seconds, || {
                Ok::<_, crate::rows::RowsError>((
                    crate::evaluation_sums::sums(&test, &beta)?,
                    crate::evaluation_sums::scores(&test, &beta)?,
                ))
            })?,
            None => ([0.0; crate::evaluation_sums::SUMS], Vec::new()),
        };
        let values: Vec<f64> = sums.iter().map(|v| v / n).collect();
        let shape = self.config.evaluation_shape(self.key);
        let v = encrypt_values(self.key, &values, &shape, self.config, &self.noise)?;
        let shares = super::ranking::NodeShares::new(self.key, scores, &self.noise)?;
        Ok(Some((
            Step::EvaluateReply,
            shares
                .write(Writer::new().bytes(&v.to_bytes(self.key)), self.key)
                .finish(),
        )))
    }

    /// The sums a Gaussian, Poisson or weighted model needs besides the gradient.
    fn constants(&mut self, reader: Reader<'_>) -> Result<Reply, SecureError> {
        reader.end().map_err(at("reading the constants request"))?;
        let data = &mut *self.data;
        data.constants_left = data.constants_left.checked_sub(1).ok_or_else(|| {
            SecureError::violation(
                Role::Aggregator,
                Breach::NotInPlan {
                    what: "constant sums the study's model does not need (or asked too often)",
                },
            )
        })?;
        let n = self.n("constants requested before N")?;
        let party = self.data.party()?;
        let sums = timed(&mut self.stats.local_seconds, || party.constant_sums())?;
        let values: Vec<f64> = sums.iter().map(|v| v / n).collect();
        self.encrypted(
            Step::ConstantsReply,
            &values,
            &self.config.constants_shape(self.key),
        )
    }

    /// How many rows the coefficients put on the wrong side of their label (the separation
    /// probe), encrypted.
    fn margins(&mut self, reader: Reader<'_>) -> Result<Reply, SecureError> {
        let party = self.data.party()?;
        let beta = read_beta(reader, party.columns())?;
        let wrong = party
            .sums(RowKernel::Misclassified(beta.to_vec()))?
            .values()[0] as u64;
        self.encrypted_count(Step::MarginsReply, wrong)
    }

    /// This Node's rows, encrypted (refused above the study's public limit).
    fn count(&mut self) -> Result<Reply, SecureError> {
        let rows = self.data.rows() as u64;
        if rows > self.config.max_rows {
            return Err(SecureError::Range(Overflow::Rows {
                rows,
                limit: self.config.max_rows,
            }));
        }
        self.encrypted_count(Step::CountReply, rows)
    }

    /// N, public by design.
    fn total(&mut self, mut reader: Reader<'_>) -> Result<Reply, SecureError> {
        let n = reader.u64().map_err(at("reading N"))?;
        reader.end().map_err(at("reading N"))?;
        if n < self.data.rows() as u64 {
            return Err(SecureError::violation(
                Role::Aggregator,
                Breach::OutOfRange {
                    what: "N",
                    value: n,
                    min: self.data.rows() as u64,
                    max: u64::MAX,
                },
            ));
        }
        self.n_total = Some(n as f64);
        Ok(None)
    }

    /// PrivLogit's bound `X^T X / 4N` (eq. 5.5), lower triangle, encrypted.
    fn bound(&mut self) -> Result<Reply, SecureError> {
        let n = self.n("bound requested before N")?;
        let party = self.data.party()?;
        let sums = timed(&mut self.stats.local_seconds, || {
            party.information_bound_sums().map(|s| s.values())
        })?;
        let values: Vec<f64> = sums.iter().map(|v| v / n).collect();
        self.encrypted(
            Step::BoundReply,
            &values,
            &self.config.bound_shape(self.key)?,
        )
    }

    /// PrivLogit-Local's `Enc((B/N)^-1)`, kept for the Node's local steps.
    fn inverse(&mut self, mut reader: Reader<'_>) -> Result<Reply, SecureError> {
        let bytes = reader.bytes().map_err(at("reading the inverse"))?;
        reader.end().map_err(at("reading the inverse"))?;
        self.inverse = Some(EncryptedMatrix::from_bytes(self.key, bytes)?);
        Ok(None)
    }

    /// Gradient and log-likelihood at the coefficients (and the local step under
    /// PrivLogit-Local; and the information `X^T A X / N` for a Newton round), encrypted.
    fn gradient(&mut self, reader: Reader<'_>, newton: bool) -> Result<Reply, SecureError> {
        let n = self.n("gradient requested before N")?;
        let (key, config) = (self.key, self.config);
        let party = self.data.party()?;
        let beta = read_beta(reader, party.columns())?;
        let mut sums = timed(&mut self.stats.local_seconds, || {
            party.gradient_sums(&beta).map(|s| s.values())
        })?;
        let log_likelihood = sums.pop().expect("p + 1 sums") / n;
        let gradient: Vec<f64> = sums.iter().map(|v| v / n).collect();
        // Unpacked for dot products under encryption, or packed for masked arithmetic (the
        // study's public choice).
        let g = encrypt_values(
            key,
            &gradient,
            &config.gradient_shape(key)?,
            config,
            &self.noise,
        )?;
        let l = encrypt_values(
            key,
            &[log_likelihood],
            &config.objective_shape(key),
            config,
            &self.noise,
        )?;
        let mut w = Writer::new()
            .bytes(&g.to_bytes(key))
            .bytes(&l.to_bytes(key));
        if let Some(m) = &self.inverse {
            let fixed = gradient
                .iter()
                .map(|&v| Fixed::from_f64(v, config.frac))
                .collect::<Result<Vec<_>, _>>()?;
            // Declared at the public bound, not the one these values give (which would tell
            // the Center the size of this Node's gradient).
            let shape = config.local_step_shape(m)?;
            let step = m.mul_vector(key, &fixed)?;
            if step.slot_bound() > &shape.bound {
                return Err(SecureError::Range(Overflow::Bound(
                    "a Node's step exceeds its public bound",
                )));
            }
            let step = step
                .assume_slot_bound(shape.bound)
                .rerandomized(key, &self.noise);
            w = w.bytes(&step.to_bytes(key));
        }
        if newton {
            // The local information X_i^T A X_i / N (eq. 2.13), lower triangle.
            let sums = timed(&mut self.stats.local_seconds, || {
                party.information_sums(&beta).map(|s| s.values())
            })?;
            let values: Vec<f64> = sums.iter().map(|v| v / n).collect();
            let h = encrypt_values(key, &values, &config.bound_shape(key)?, config, &self.noise)?;
            w = w.bytes(&h.to_bytes(key));
        }
        Ok(Some((Step::GradientReply, w.finish())))
    }

    /// Column means, or variances about the pooled means, over N (the setup's
    /// standardisation), encrypted at the moments' wide scale.
    fn moments(&mut self, mut reader: Reader<'_>) -> Result<Reply, SecureError> {
        let n = self.n("moments requested before N")?;
        let means = reader.f64s().map_err(at("reading the means"))?;
        reader.end().map_err(at("reading the means"))?;
        let data = &*self.data;
        if !(means.is_empty() || means.len() == data.features()) {
            return Err(SecureError::violation(
                Role::Aggregator,
                Breach::wrong_length("the aggregator's means", means.len(), data.features()),
            ));
        }
        if means.iter().any(|m| !m.is_finite()) {
            return Err(SecureError::violation(
                Role::Aggregator,
                Breach::Malformed {
                    what: "a mean from the aggregator that is not finite",
                },
            ));
        }
        let values = timed(&mut self.stats.local_seconds, || {
            data.moments((!means.is_empty()).then_some(&means[..]), n)
        })?;
        let limit = f64::from(MOMENT_BITS).exp2();
        if let Some(j) = values.iter().position(|v| v.is_nan() || v.abs() >= limit) {
            return Err(SecureError::Range(Overflow::Moment {
                source: data.raw.describe(),
                name: data.raw.names().get(j).cloned(),
                column: j + 1,
                variance: !means.is_empty(),
                value: values[j],
                bits: MOMENT_BITS,
            }));
        }
        let fixed = values
            .iter()
            .map(|&v| Fixed::from_f64(v, MOMENT_SCALE))
            .collect::<Result<Vec<_>, _>>()?;
        let shape = self.config.moments_shape(self.key, fixed.len())?;
        let v =
            EncryptedVector::encrypt(self.key, &fixed, &shape.bound, shape.packing, &self.noise)?;
        Ok(Some((
            Step::MomentsReply,
            Writer::new().bytes(&v.to_bytes(self.key)).finish(),
        )))
    }

    /// The pooled means and scales: the features become z-scores from the next request on.
    fn standardize(&mut self, mut reader: Reader<'_>) -> Result<Reply, SecureError> {
        let means = reader.f64s().map_err(at("reading the statistics"))?;
        let scales = reader.f64s().map_err(at("reading the statistics"))?;
        reader.end().map_err(at("reading the statistics"))?;
        let data = &mut *self.data;
        if (data.party.is_some() && !data.prepared)
            || means.len() != data.features()
            || scales.len() != data.features()
            || means.iter().any(|m| !m.is_finite())
            || scales.iter().any(|s| !(s.is_finite() && *s > 0.0))
        {
            return Err(SecureError::violation(
                Role::Aggregator,
                Breach::Malformed {
                    what: "unusable standardisation statistics",
                },
            ));
        }
        data.standardize = Some((means, scales));
        if data.prepared {
            // Formed again from its rows, scaled (the source is the design itself).
            data.party = None;
            data.prepared = false;
        }
        Ok(None)
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
        return Err(SecureError::Range(Overflow::NodeValue {
            value: *v,
            bits: config.value_bits,
        }));
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
    let at = |e| SecureError::io(Role::Node, "reading beta", e);
    let beta = Array1::from(reader.f64s().map_err(at)?);
    reader.end().map_err(at)?;
    if beta.len() != columns {
        return Err(SecureError::violation(
            Role::Aggregator,
            Breach::wrong_length("beta", beta.len(), columns),
        ));
    }
    Ok(beta)
}
