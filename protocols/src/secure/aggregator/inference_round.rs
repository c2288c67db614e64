//! Inference at the optimum, the aggregator's part: after the fit, the Nodes send their
//! encrypted information `X_i^T A_i X_i / N` at the final coefficients (a Newton round), the
//! Center adds the penalty, inverts the sum in masked arithmetic (the same inverse a Newton
//! step uses) and reveals to itself only what the plan's [`Reveal`] allows: the inverse's
//! diagonal (standard errors) or the whole matrix (covariance). With them it reveals the
//! log-likelihood at the final coefficients and, when the model has an intercept, the count of
//! rows labelled 1 (the null model's deviance is a function of it), each in one masked
//! product the key holder cannot read.

use crate::secure::{Inconsistency, MatrixShapes};
use ndarray::{Array1, Array2};
use num_bigint::{BigInt, BigUint};
use privlogit_circuits::channel::Channel;

use super::revealed::{HeldOut, Reveal, Revealed};
use super::{SCALED_INFERENCE_FLOOR, SecureAggregation, UNPENALISED_INFERENCE_FLOOR};
use crate::objective::{CONSTANT_SUMS, Glm};
use crate::paillier::{EncryptedVector, Fixed, Packing};
use crate::penalty::Penalty;
use crate::secure::masked::Shared;
use crate::secure::masked::block_spd;
use crate::secure::masked::cross::Zeros;
use crate::secure::masked::engine::{MaskedEngine, ProductKind, to_f64};
use crate::secure::masked::matrix::IntMatrix;
use crate::secure::masked::packed::PackedMatrix;
use crate::secure::ranking::{MAX_RANKED_ROWS, NodeShares, auc as ranking_auc, rank_circuit};
use crate::secure::round_trips::Phase;
use crate::secure::wire::{Reader, Step};
use crate::secure::{PlanReason, SecureError};
use crate::transport::Role;

impl<C: Channel> SecureAggregation<C> {
    /// Whether `beta` separates the classes completely (every row strictly on its label's
    /// side): the Nodes count their rows that are not, encrypted; the Center sums the counts and
    /// learns one bit from a comparison circuit, "none". In an unpenalised study that means the
    /// likelihood has no maximum.
    pub fn classes_separated(&mut self, beta: &Array1<f64>) -> Result<bool, SecureError> {
        let payload = crate::secure::wire::Writer::new()
            .f64s(beta.as_slice().expect("contiguous"))
            .finish();
        let replies = self.ask_nodes(
            crate::secure::wire::Step::Margins,
            &payload,
            crate::secure::wire::Step::MarginsReply,
        )?;
        let shape = self.config.count_shape(&self.key);
        let counts = self.read_each(&replies, &[&shape], "margin count")?;
        let total = EncryptedVector::sum(&self.key, &counts.iter().collect::<Vec<_>>())?;
        // total - 1 >= 0 (at least one row on the wrong side) is "not separated".
        // Declared at the circuit word's width: the key holder refuses narrower comparisons.
        let less_one = total
            .add_plain(&self.key, &[BigInt::from(-1)])?
            .assume_slot_bound(BigUint::from(1u8) << (self.config.format.width() - 2));
        let some_wrong = self.compare(
            crate::secure::gc::Comparison::NonNegative,
            &less_one,
            &less_one,
        )?;
        Ok(!some_wrong)
    }

    /// The Nodes' [`crate::objective::PartyData::constant_sums`], totalled under encryption and
    /// revealed to the aggregator alone (one masked product the key holder sees masked): the
    /// null model's sufficient sums, the saturated log-likelihood and `sum log w`. Needs the
    /// masked linear algebra.
    pub fn constants(&mut self) -> Result<[f64; CONSTANT_SUMS], SecureError> {
        let shape = self.config.constants_shape(&self.key);
        let values = self.reveal_node_sums(
            (Step::Constants, Step::ConstantsReply),
            &[],
            &shape,
            "constant sums",
        )?;
        let mut out = [0.0; CONSTANT_SUMS];
        out.copy_from_slice(&values);
        Ok(out)
    }

    /// The final model on the Nodes' held-out rows: their sums ([`crate::evaluation_sums::sums`]),
    /// totalled under encryption and revealed to the aggregator alone, as
    /// [`SecureAggregation::constants`] (a Node without held-out rows adds zeros), and the
    /// exact AUC from the ranking circuit ([`crate::secure::ranking`]).
    pub fn evaluate(&mut self, beta: &Array1<f64>) -> Result<HeldOut, SecureError> {
        self.enter(Phase::Evaluation);
        let payload = crate::secure::wire::Writer::new()
            .f64s(beta.as_slice().expect("contiguous"))
            .finish();
        let shape = self.config.evaluation_shape(&self.key);
        let replies = self.ask_nodes(Step::Evaluate, &payload, Step::EvaluateReply)?;
        let mut sums = Vec::with_capacity(replies.len());
        let mut shares = Vec::with_capacity(replies.len());
        for (i, reply) in replies.iter().enumerate() {
            let node = i + 1;
            let at = |e| {
                SecureError::io(Role::Aggregator, "reading the evaluation of", e).with_node(node)
            };
            let mut r = Reader::new(reply);
            let v = EncryptedVector::from_bytes(&self.key, r.bytes().map_err(at)?)?;
            shape.check(&v, node, "evaluation sums")?;
            sums.push(v);
            shares.push(NodeShares::read(&mut r, &self.key, node, MAX_RANKED_ROWS)?);
            r.end().map_err(at)?;
        }
        let sums = self.reveal_total(&sums)?;
        let start = std::time::Instant::now();
        let auc = self.rank(shares)?;
        Ok(HeldOut {
            sums,
            auc,
            ranking_seconds: start.elapsed().as_secs_f64(),
        })
    }

    /// The exact AUC of the Nodes' shared held-out rows: the key holder gets the counts and
    /// seeds, both servers run the ranking circuit, the aggregator learns `D` and `P`.
    fn rank(&mut self, shares: Vec<NodeShares>) -> Result<Option<f64>, SecureError> {
        let counts: Vec<usize> = shares.iter().map(NodeShares::rows).collect();
        let total: usize = counts.iter().sum();
        if total > MAX_RANKED_ROWS {
            return Err(SecureError::invalid_plan(
                "test_party",
                PlanReason::too_many("held-out rows to rank", total, MAX_RANKED_ROWS),
            ));
        }
        let mut w = crate::secure::wire::Writer::new().u64(shares.len() as u64);
        for s in &shares {
            let seed = s
                .seed
                .as_ref()
                .map(|c| {
                    c.rerandomized(&self.key, &self.gc.noise)
                        .to_bytes(&self.key)
                })
                .unwrap_or_default();
            w = w.u64(s.rows() as u64).bytes(&seed);
        }
        let session = self.config.session;
        let at = |e| SecureError::io(Role::Aggregator, "the ranking circuit", e);
        crate::secure::wire::send(self.keyholder()?, session, Step::Rank, &w.finish())
            .map_err(at)?;
        let own: Vec<Vec<u64>> = shares.into_iter().map(|s| s.shares).collect();
        let start = std::time::Instant::now();
        let revealed = rank_circuit(&mut self.gc, &counts, None, Some(&own)).map_err(at)?;
        self.gc_seconds += start.elapsed().as_secs_f64();
        let (d, positives) = revealed.expect("the aggregator learns D and P");
        Ok(ranking_auc(d, positives, total as u64))
    }

    /// Asks every Node `steps.0` with `payload`, adds their encrypted replies of `shape` and
    /// reveals the total (times N: the Nodes divide by it) to the aggregator.
    fn reveal_node_sums(
        &mut self,
        steps: (Step, Step),
        payload: &[u8],
        shape: &crate::secure::shapes::Shape,
        what: &'static str,
    ) -> Result<Vec<f64>, SecureError> {
        let replies = self.ask_nodes(steps.0, payload, steps.1)?;
        let sums = self.read_each(&replies, &[shape], what)?;
        self.reveal_total(&sums)
    }

    /// The total of the Nodes' encrypted sums (times N: the Nodes divide by it), revealed to
    /// the aggregator by one masked product with a shared 1, which the key holder sees masked.
    fn reveal_total(&mut self, sums: &[EncryptedVector]) -> Result<Vec<f64>, SecureError> {
        let sum = EncryptedVector::sum(&self.key, &sums.iter().collect::<Vec<_>>())?;
        let (key, noise, frac, n) = (
            self.key.clone(),
            self.gc.noise.clone(),
            self.config.frac,
            self.rows as f64,
        );
        let gc = &mut self.gc;
        let engine = self.solver.engine().ok_or_else(|| {
            SecureError::invalid_plan(
                "linear_algebra",
                "a Gaussian, Poisson or weighted model's sums and held-out evaluations are \
                 revealed in masked arithmetic: use setting `linear_algebra` masked",
            )
        })?;
        let one = share_one(engine, gc, &key, &noise, frac)?;
        let shared = engine.share_vector(gc, &sum, sum.slot_bound().bits() as u32)?;
        let values = reveal_shared(engine, gc, shared, &one, frac)?;
        engine.release(gc, &[&one])?;
        Ok(values.into_iter().map(|v| v * n).collect())
    }

    /// The inference round at the final coefficients `beta` (see the module's documentation);
    /// `None` for [`Reveal::Coefficients`]. Needs the masked linear algebra.
    pub fn inference(
        &mut self,
        beta: &Array1<f64>,
        penalty: Penalty<'_>,
        intercept: bool,
        reveal: Reveal,
        glm: Glm,
        raw_intercept: Option<&[f64]>,
    ) -> Result<Option<Revealed>, SecureError> {
        self.enter(Phase::Inference);
        if reveal == Reveal::Coefficients {
            return Ok(None);
        }
        // Another model's null deviance, deviance and likelihood need sums the gradient at
        // zero does not give: the Nodes send them, encrypted, and only their totals are
        // revealed (below, masked from the key holder).
        let constants = if glm.is_logistic() {
            None
        } else {
            Some(self.constants()?)
        };
        let start = std::time::Instant::now();
        // Features scaled only (not centred) keep the raw design's conditioning (a nearly
        // constant column beside the intercept): the floor's error, `floor / lambda_min`
        // relative, needs the smaller floor there, at 20 more bits of the inverse's words.
        let floor = if penalty.weights.is_some() {
            SCALED_INFERENCE_FLOOR
        } else {
            UNPENALISED_INFERENCE_FLOOR
        };
        let curvature = self.curvature(penalty, floor)?;
        let d = self.config.dimension;
        let n = self.rows as f64;
        let frac = self.config.frac;
        // The intercept's gradient entry at beta = 0 is sum_i (y_i - 1/2) / N (plus the public
        // penalty term): the label count, with nothing else of the rows.
        let positives_term = if intercept && glm.is_logistic() {
            let (zero_gradient, _, _) = self.gather(&Array1::zeros(d), penalty, false)?;
            let mut pick = vec![Fixed::integer(0); d];
            pick[0] = Fixed::integer(1);
            Some(self.gradient_dot(&zero_gradient, &pick)?)
        } else {
            None
        };
        let (_, objective, information) = self.gather(beta, penalty, true)?;
        let information = information.expect("asked for the information");
        let lower = self.add_penalty_diagonal(&information, &curvature)?;
        let bounds = self.bounds(&lower, curvature.least, curvature.penalised);
        let key = self.key.clone();
        let noise = self.gc.noise.clone();
        let gc = &mut self.gc;
        let engine = self.solver.engine().ok_or_else(|| {
            SecureError::invalid_plan(
                "reveal",
                "standard errors are computed in masked arithmetic: use setting `linear_algebra` masked, \
                 or setting `reveal` coefficients",
            )
        })?;
        let one_value = Fixed {
            value: BigInt::from(1u8) << frac,
            scale: frac,
        };
        let one = share_one(engine, gc, &key, &noise, frac)?;
        let shared = engine.share_lower(gc, &lower, d, lower.slot_bound().bits() as u32)?;
        let inverse = block_spd::spd_inverse(engine, gc, &shared, &bounds)?;
        engine.release(gc, &[&shared])?;
        // The inverse holds N (X^T A X + lambda I)^-1: everything is divided by N.
        let (variances, covariance) = match reveal {
            Reveal::Covariance => {
                // inverse x I in one revealed product; the identity is public.
                let identity: Vec<Fixed> = (0..d * d)
                    .map(|k| {
                        if k % (d + 1) == 0 {
                            one_value.clone()
                        } else {
                            Fixed {
                                value: BigInt::from(0),
                                scale: frac,
                            }
                        }
                    })
                    .collect();
                let bound = BigUint::from(1u8) << frac;
                let unpacked = Packing::unpacked(&key);
                let e = EncryptedVector::encrypt(&key, &identity, &bound, unpacked, &noise)?;
                let e = PackedMatrix::from_blocks(d, d, unpacked, e.ciphertexts().to_vec())?;
                let mut e = engine.share(gc, &e, frac + 1)?;
                let mut inverse = inverse.clone();
                let values = engine.product_revealed(gc, &mut inverse, &mut e)?;
                engine.release(gc, &[&e])?;
                let m = Array2::from_shape_fn((d, d), |(i, j)| to_f64(values.get(i, j), frac) / n);
                // Symmetric in value; the masked rounding differs a hair between triangles.
                let m = (&m + &m.t()) * 0.5;
                (m.diag().to_vec(), Some(m))
            }
            _ => {
                let diagonal = (0..d)
                    .map(|j| engine.slice(gc, &inverse, (j, j), (1, 1)))
                    .collect::<Result<Vec<_>, _>>()?;
                let all = stack(engine, gc, diagonal)?;
                let values = reveal_shared(engine, gc, all, &one, frac)?;
                (values.iter().map(|v| v / n).collect(), None)
            }
        };
        // The raw intercept's variance from the shared inverse and the public row `u`, unless
        // the whole covariance was revealed (then the caller forms it).
        let raw_intercept_variance = match (raw_intercept, &covariance) {
            (Some(u), None) => Some(quadratic_form(engine, gc, &inverse, u, frac)? / n),
            _ => None,
        };
        engine.release(gc, &[&inverse])?;
        let bits = objective.slot_bound().bits() as u32;
        let shared_objective = engine.share_vector(gc, &objective, bits)?;
        let objective = reveal_shared(engine, gc, shared_objective, &one, 2 * frac)?[0] * n;
        let log_likelihood = objective - penalty.objective(beta);
        let positives = match positives_term {
            Some(term) => {
                let bits = term.slot_bound().bits() as u32;
                let shared_term = engine.share_vector(gc, &term, bits)?;
                let value = reveal_shared(engine, gc, shared_term, &one, frac)?[0];
                let public = penalty.gradient(&Array1::zeros(d))[0] / n;
                Some((n * (value - public) + n / 2.0).round())
            }
            None => None,
        };
        engine.release(gc, &[&one])?;
        Ok(Some(Revealed {
            variances,
            covariance,
            raw_intercept_variance,
            log_likelihood,
            positives,
            constants,
            seconds: start.elapsed().as_secs_f64(),
        }))
    }
}

/// The column blocks `parts` stacked into one column, at most 16 blocks an assembly (the
/// key holder's bound on a request).
fn stack<C: Channel>(
    engine: &mut MaskedEngine,
    gc: &mut crate::secure::gc::AggregatorGc<C>,
    mut parts: Vec<Shared>,
) -> Result<Shared, SecureError> {
    while parts.len() > 1 {
        let mut next = Vec::with_capacity(parts.len().div_ceil(16));
        for chunk in parts.chunks(16) {
            let mut row = 0;
            let blocks: Vec<(&Shared, usize, usize, bool)> = chunk
                .iter()
                .map(|p| {
                    let at = row;
                    row += p.rows();
                    (p, at, 0, false)
                })
                .collect();
            next.push(engine.assemble(gc, (row, 1), &blocks, Zeros::None)?);
            engine.release(gc, &chunk.iter().collect::<Vec<_>>())?;
        }
        parts = next;
    }
    parts
        .pop()
        .ok_or_else(|| SecureError::inconsistent("nothing to stack"))
}

/// The public constant 1 at `frac` fractional bits, encrypted and shared.
fn share_one<C: Channel>(
    engine: &mut MaskedEngine,
    gc: &mut crate::secure::gc::AggregatorGc<C>,
    key: &crate::paillier::PublicKey,
    noise: &crate::paillier::DjnNoise,
    frac: u32,
) -> Result<Shared, SecureError> {
    let one = Fixed {
        value: BigInt::from(1u8) << frac,
        scale: frac,
    };
    let bound = BigUint::from(1u8) << frac;
    let v = EncryptedVector::encrypt(
        key,
        std::slice::from_ref(&one),
        &bound,
        Packing::unpacked(key),
        noise,
    )?;
    engine.share_vector(gc, &v, frac + 1)
}

/// `u^T M u` for the shared symmetric `M` (at `frac` fractional bits) and the public `u`,
/// revealed to the aggregator alone: `u^T M` exactly as a new shared row (the aggregator holds
/// `u`), then its product with `u`, revealed (the key holder sees both products masked).
fn quadratic_form<C: Channel>(
    engine: &mut MaskedEngine,
    gc: &mut crate::secure::gc::AggregatorGc<C>,
    m: &Shared,
    u: &[f64],
    frac: u32,
) -> Result<f64, SecureError> {
    let d = u.len();
    if m.rows() != d || m.cols() != d {
        return Err(SecureError::inconsistent(Inconsistency::Shape(
            MatrixShapes {
                what: "the matrix of a quadratic form",
                got: (m.rows(), m.cols()),
                expected: (d, d),
            },
        )));
    }
    let values = u
        .iter()
        .map(|&v| Fixed::from_f64(v, frac).map(|f| f.value))
        .collect::<Result<Vec<_>, _>>()?;
    let largest = u.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    let bits = crate::secure::masked::engine::bound_bits(largest, frac);
    let mut row = engine.held(gc, &IntMatrix::from_vec(1, d, values.clone()), bits)?;
    let mut column = engine.held(gc, &IntMatrix::from_vec(d, 1, values), bits)?;
    let mut m = m.clone();
    let bound = bits + m.bound() + crate::secure::bits_for(d as u64);
    let mut um = engine.product(gc, &mut row, &mut m, bound, ProductKind::Exact)?;
    // u^T M at twice the fractional bits, times u at `frac`, floored by 2^frac: 2 frac.
    let value = engine.product_revealed(gc, &mut um, &mut column)?;
    engine.release(gc, &[&row, &column, &um])?;
    Ok(to_f64(value.get(0, 0), 2 * frac))
}

/// The values of the column `x` (at `scale` fractional bits), revealed to the aggregator by one
/// masked product with the shared constant 1 (the key holder sees the product masked).
fn reveal_shared<C: Channel>(
    engine: &mut MaskedEngine,
    gc: &mut crate::secure::gc::AggregatorGc<C>,
    mut x: Shared,
    one: &Shared,
    scale: u32,
) -> Result<Vec<f64>, SecureError> {
    let mut one = one.clone();
    let values = engine.product_revealed(gc, &mut x, &mut one)?;
    engine.release(gc, &[&x])?;
    Ok(values.data().iter().map(|v| to_f64(v, scale)).collect())
}
