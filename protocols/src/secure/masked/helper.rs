//! The key holder's side of masked linear algebra: it keeps views `V = X + R` of the
//! aggregator's secret matrices and answers [`Request`]s (see [`super::engine`] for the
//! algebra). It checks what it can: shapes and ids, that every new mask is at least sigma
//! bits wider than the bound it hides, and that every masked value it learns lies in the range
//! its declared bound and mask allow (a value far past its public bound is a named error, not
//! a silently wrong model).

use std::collections::HashMap;
use std::time::Instant;

use num_bigint::BigInt;
use num_traits::Zero;
use privlogit_circuits::channel::Channel;
use rand::CryptoRng;

use super::block_leaf;
use super::dealt::{self, ProductShapes, Seed};
use super::layout::{Need, layout};
use super::leaf::{self, LeafShape};
use super::matrix::{IntMatrix, pow2};
use super::msgs::{
    BlockShape, DealtProductRequest, Finish, LeafRequest, Masked, ProductOut, ProductRequest,
    Request, Widths,
};
use super::packed::{PackedMatrix, packing_of};
use super::wide;
use crate::paillier::{DjnNoise, EncryptedVector, SecretKey};
use crate::secure::gc::{KeyholderGc, SIGMA};
use crate::secure::wire::{self, Step, Writer};
use crate::secure::{Breach, Overflow, SecureError};
use crate::transport::Role;

/// Most view entries the key holder keeps at once (bounds its memory whatever it is asked).
pub const MAX_ENTRIES: usize = 16 * super::msgs::MAX_SIDE * super::msgs::MAX_SIDE;

/// Where the key holder's time in masked arithmetic went.
#[derive(Debug, Clone, Default)]
pub struct HelperStats {
    /// Seconds decrypting masked values and encrypting views.
    pub paillier_seconds: f64,
    /// Seconds multiplying views (plaintext integers).
    pub product_seconds: f64,
    /// Seconds in garbled-circuit leaves.
    pub leaf_seconds: f64,
    /// Ciphertexts decrypted.
    pub decryptions: u64,
    /// Ciphertexts encrypted.
    pub encryptions: u64,
}

/// One masked transfer as the key holder received it (kept only when auditing).
#[derive(Debug, Clone)]
pub struct ViewRecord {
    /// Declared bound and mask width.
    pub widths: Widths,
    /// The masked values learnt.
    pub values: IntMatrix,
}

/// The key holder's state.
pub struct MaskedHelper {
    views: HashMap<u64, IntMatrix>,
    entries: usize,
    noise: DjnNoise,
    stats: HelperStats,
    audit: Option<Vec<ViewRecord>>,
    dealt: Option<DealtSide>,
}

/// The key holder's side of dealt products: its seed, the next correlation (each is used once,
/// in order), and the share of a product whose second half has not come yet.
struct DealtSide {
    seed: Seed,
    next: u64,
    pending: Option<IntMatrix>,
}

impl std::fmt::Debug for MaskedHelper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MaskedHelper {{ views: {} }}", self.views.len())
    }
}

/// A request of the aggregator's that breaks the protocol.
fn protocol(breach: Breach) -> SecureError {
    SecureError::violation(Role::Aggregator, breach)
}

impl MaskedHelper {
    /// A helper encrypting with `noise`.
    pub fn new(noise: DjnNoise) -> Self {
        Self {
            views: HashMap::new(),
            entries: 0,
            noise,
            stats: HelperStats::default(),
            audit: None,
            dealt: None,
        }
    }

    /// Keeps every masked value learnt (tests).
    pub fn with_audit(mut self) -> Self {
        self.audit = Some(Vec::new());
        self
    }

    /// The masked transfers so far (empty unless auditing).
    pub fn audit(&self) -> &[ViewRecord] {
        self.audit.as_deref().unwrap_or(&[])
    }

    /// The counters.
    pub fn stats(&self) -> &HelperStats {
        &self.stats
    }

    /// View `id` (tests read results back through it).
    pub fn view(&self, id: u64) -> Option<&IntMatrix> {
        self.views.get(&id)
    }

    fn get(&self, id: u64) -> Result<&IntMatrix, SecureError> {
        self.views
            .get(&id)
            .ok_or_else(|| protocol(Breach::Unknown { what: "view", id }))
    }

    fn insert(&mut self, id: u64, view: IntMatrix) -> Result<(), SecureError> {
        let size = view.rows() * view.cols();
        if self.entries + size > MAX_ENTRIES {
            return Err(protocol(Breach::TooMany {
                what: "values kept by masked arithmetic",
                count: (self.entries + size) as u64,
                limit: MAX_ENTRIES as u64,
            }));
        }
        if let Some(old) = self.views.insert(id, view) {
            self.entries -= old.rows() * old.cols();
        }
        self.entries += size;
        Ok(())
    }

    /// Refuses a mask narrower than sigma bits past its bound, and values outside
    /// `(-2^bound, 2^mask + 2^bound)`.
    fn check(
        &mut self,
        what: &'static str,
        widths: Widths,
        values: &IntMatrix,
    ) -> Result<(), SecureError> {
        if widths.mask < widths.bound + SIGMA {
            return Err(protocol(Breach::NarrowMask {
                what,
                mask: widths.mask,
                bound: widths.bound,
            }));
        }
        let low = -pow2(widths.bound);
        let high = pow2(widths.mask) + pow2(widths.bound);
        if values.data().iter().any(|v| v <= &low || v >= &high) {
            return Err(SecureError::Range(Overflow::Masked {
                what,
                bits: widths.bound,
            }));
        }
        if let Some(audit) = self.audit.as_mut() {
            audit.push(ViewRecord {
                widths,
                values: values.clone(),
            });
        }
        Ok(())
    }

    /// A product's last step on either path: the key holder's share `mine` (truncated here)
    /// plus the aggregator's, mirrored when only the lower triangle was formed, kept as a view
    /// or sent back.
    fn finish_product<C: Channel, R: CryptoRng>(
        &mut self,
        mine: &IntMatrix,
        finish: Finish,
        party: &mut KeyholderGc<C, R>,
        session: u64,
    ) -> Result<(), SecureError> {
        let mine = mine.floor_shift(finish.frac);
        let mut value =
            IntMatrix::combine(&[(&mine, false), (&finish.share, false)], &BigInt::zero());
        if finish.need != Need::All {
            // Only the lower triangle was formed: mirror it.
            let n = value.cols();
            value = IntMatrix::from_fn(n, n, |i, j| value.get(i.max(j), i.min(j)).clone());
        }
        match finish.out {
            ProductOut::Keep(widths) => {
                self.check("a product", widths, &value)?;
                self.insert(finish.id, value)
            }
            ProductOut::Reveal(widths) => {
                self.check("a revealed product", widths, &value)?;
                let payload = value.write(Writer::new()).finish();
                reply(party, session, &payload)
            }
        }
    }

    /// Serves one request (replying on the channel when it has a reply).
    pub fn handle<C: Channel, R: CryptoRng>(
        &mut self,
        request: Request,
        secret: &SecretKey,
        party: &mut KeyholderGc<C, R>,
        session: u64,
    ) -> Result<(), SecureError> {
        match request {
            Request::View { id, widths, masked } => self.decrypt_view(id, widths, masked, secret),
            Request::Slice { id, from, window } => {
                let source = self.get(from)?;
                if !window.inside((source.rows(), source.cols())) {
                    return Err(protocol(Breach::Malformed {
                        what: "a block outside its matrix",
                    }));
                }
                let block = window.of(source);
                self.insert(id, block)
            }
            Request::Transpose { id, from } => {
                let t = self.get(from)?.transpose();
                self.insert(id, t)
            }
            Request::Combine { id, terms, offset } => {
                let views = terms
                    .iter()
                    .map(|(t, n)| Ok((self.get(*t)?, *n)))
                    .collect::<Result<Vec<_>, SecureError>>()?;
                let first = views[0].0;
                if let Some((v, _)) = views
                    .iter()
                    .find(|(v, _)| v.rows() != first.rows() || v.cols() != first.cols())
                {
                    return Err(protocol(Breach::wrong_shape(
                        "a combined view",
                        (v.rows(), v.cols()),
                        (first.rows(), first.cols()),
                    )));
                }
                let combined = IntMatrix::combine(&views, &offset);
                self.insert(id, combined)
            }
            Request::Assemble {
                id,
                rows,
                cols,
                blocks,
            } => self.assemble(id, rows, cols, &blocks),
            Request::Zeros { id, rows, cols } => self.insert(id, IntMatrix::zeros(rows, cols)),
            Request::Trace { id, from } => {
                let v = self.get(from)?;
                if v.rows() != v.cols() {
                    return Err(protocol(Breach::wrong_shape(
                        "a view to trace",
                        (v.rows(), v.cols()),
                        (v.rows(), v.rows()),
                    )));
                }
                let sum: BigInt = (0..v.rows()).map(|i| v.get(i, i)).sum();
                self.insert(id, IntMatrix::from_vec(1, 1, vec![sum]))
            }
            Request::Drop { ids } => {
                for id in ids {
                    if let Some(old) = self.views.remove(&id) {
                        self.entries -= old.rows() * old.cols();
                    }
                }
                Ok(())
            }
            Request::Encrypt {
                id,
                transpose,
                slot_bits,
                offset,
            } => {
                let payload = self.encrypt(id, transpose, slot_bits, offset, secret)?;
                reply(party, session, &payload)
            }
            Request::Product(request) => self.product(request, secret, party, session),
            Request::DealerSeed { seed } => self.dealer_seed(&seed, secret),
            Request::DealtProduct(request) => {
                let payload = self.dealt_product(request)?;
                reply(party, session, &payload)
            }
            Request::DealtShare(finish) => {
                let mine = self
                    .dealt
                    .as_mut()
                    .and_then(|side| side.pending.take())
                    .ok_or_else(|| {
                        protocol(Breach::Malformed {
                            what: "a dealt share without its product",
                        })
                    })?;
                let share = &finish.share;
                if (share.rows(), share.cols()) != (mine.rows(), mine.cols())
                    || (finish.need != Need::All && mine.rows() != mine.cols())
                {
                    return Err(protocol(Breach::Malformed {
                        what: "a dealt share of the wrong shape",
                    }));
                }
                self.finish_product(&mine, finish, party, session)
            }
            Request::BlockLeaf { x, shape, output } => self.block_leaf(x, &shape, output, party),
            Request::Leaf(request) => self.leaf(request, party),
        }
    }

    /// A view the aggregator hands over encrypted: decrypted, range-checked and kept.
    fn decrypt_view(
        &mut self,
        id: u64,
        widths: Widths,
        masked: Masked,
        secret: &SecretKey,
    ) -> Result<(), SecureError> {
        let start = Instant::now();
        self.stats.decryptions += match &masked {
            Masked::Matrix(m) => m.blocks().len(),
            Masked::Lower(_, v) => v.ciphertexts().len(),
        } as u64;
        let view = match masked {
            Masked::Matrix(m) => m.decrypt(secret)?,
            Masked::Lower(d, v) => {
                let lower: Vec<BigInt> = v.decrypt(secret)?.into_iter().map(|f| f.value).collect();
                IntMatrix::from_lower(d, &lower)
            }
        };
        self.stats.paillier_seconds += start.elapsed().as_secs_f64();
        self.check("a shared matrix", widths, &view)?;
        self.insert(id, view)
    }

    /// Blocks placed into one new view, which they must cover exactly once.
    fn assemble(
        &mut self,
        id: u64,
        rows: usize,
        cols: usize,
        blocks: &[(u64, usize, usize, bool)],
    ) -> Result<(), SecureError> {
        let parts = blocks
            .iter()
            .map(|(b, r0, c0, t)| Ok((self.get(*b)?, *r0, *c0, *t)))
            .collect::<Result<Vec<_>, SecureError>>()?;
        let mut covered = vec![false; rows * cols];
        for (v, r0, c0, t) in &parts {
            let (br, bc) = if *t {
                (v.cols(), v.rows())
            } else {
                (v.rows(), v.cols())
            };
            if r0 + br > rows || c0 + bc > cols {
                return Err(protocol(Breach::Malformed {
                    what: "a block outside the assembled matrix",
                }));
            }
            for i in *r0..r0 + br {
                for j in *c0..c0 + bc {
                    if std::mem::replace(&mut covered[i * cols + j], true) {
                        return Err(protocol(Breach::Malformed {
                            what: "assembled blocks overlap",
                        }));
                    }
                }
            }
        }
        if covered.iter().any(|c| !c) {
            return Err(protocol(Breach::Malformed {
                what: "assembled blocks leave a gap",
            }));
        }
        let assembled = IntMatrix::assemble(rows, cols, &parts);
        self.insert(id, assembled)
    }

    /// A view encrypted for the aggregator (packed, transposed on request): the reply's bytes.
    fn encrypt(
        &mut self,
        id: u64,
        transpose: bool,
        slot_bits: u32,
        offset: usize,
        secret: &SecretKey,
    ) -> Result<Vec<u8>, SecureError> {
        let view = self.get(id)?;
        let view = if transpose {
            view.transpose()
        } else {
            view.clone()
        };
        let key = secret.public_key();
        let packing = packing_of(key, slot_bits)?;
        let start = Instant::now();
        let encrypted = PackedMatrix::encrypt_at(key, &view, packing, offset, &self.noise)?;
        self.stats.encryptions += encrypted.blocks().len() as u64;
        self.stats.paillier_seconds += start.elapsed().as_secs_f64();
        Ok(encrypted.write(key, Writer::new()).finish())
    }

    /// The key holder's half of a masked product under Paillier: `V_x V_y` less the two
    /// decrypted cross terms, truncated.
    fn product<C: Channel, R: CryptoRng>(
        &mut self,
        request: ProductRequest,
        secret: &SecretKey,
        party: &mut KeyholderGc<C, R>,
        session: u64,
    ) -> Result<(), SecureError> {
        let ProductRequest {
            x,
            y,
            shape: (m, k, n),
            left_cross,
            left_widths,
            right_cross,
            right_widths,
            finish,
        } = request;
        let (need, share) = (finish.need, &finish.share);

        let (vx, vy) = (self.get(x)?, self.get(y)?);
        if (vx.rows(), vx.cols(), vy.rows(), vy.cols()) != (m, k, k, n)
            || (share.rows(), share.cols()) != (m, n)
            || (need != Need::All && m != n)
        {
            return Err(protocol(Breach::Malformed {
                what: "a masked product of mismatched shapes",
            }));
        }
        let start = Instant::now();
        let product = wide::product(vx, vy);
        self.stats.product_seconds += start.elapsed().as_secs_f64();
        let (left_need, right_need) = Request::needs(need);
        let left_layout = layout(m, n, left_cross.packing().slots(), left_need);
        let right_layout = layout(n, m, right_cross.packing().slots(), right_need);
        let start = Instant::now();
        let (d1, d2) = rayon::join(
            || left_cross.decrypt(secret, &left_layout),
            || right_cross.decrypt(secret, &right_layout),
        );
        let (d1, d2) = (d1?, d2?);
        self.stats.decryptions += (left_cross.len() + right_cross.len()) as u64;
        self.stats.paillier_seconds += start.elapsed().as_secs_f64();
        self.check("a product's left cross term", left_widths, &d1)?;
        self.check("a product's right cross term", right_widths, &d2)?;
        let d2 = d2.transpose();
        // Z_k = V_x V_y - D1 - D2, truncated, plus the aggregator's truncated share.
        let mine = IntMatrix::combine(
            &[(&product, false), (&d1, true), (&d2, true)],
            &BigInt::zero(),
        );
        self.finish_product(&mine, finish, party, session)
    }

    /// The dealer's seed, once.
    fn dealer_seed(
        &mut self,
        seed: &EncryptedVector,
        secret: &SecretKey,
    ) -> Result<(), SecureError> {
        if self.dealt.is_some() {
            return Err(protocol(Breach::OutOfOrder {
                what: "a second dealer's seed",
            }));
        }
        let start = Instant::now();
        let seed = crate::secure::seed::decrypt_seed(seed, secret)?;
        self.stats.decryptions += 1;
        self.stats.paillier_seconds += start.elapsed().as_secs_f64();
        self.dealt = Some(DealtSide {
            seed,
            next: 0,
            pending: None,
        });
        Ok(())
    }

    /// The first half of a product from the next dealt correlation: the key holder's `E` of
    /// both evaluations (the reply's bytes); its share waits for the second half.
    fn dealt_product(&mut self, request: DealtProductRequest) -> Result<Vec<u8>, SecureError> {
        let DealtProductRequest {
            x,
            y,
            shape: (m, k, n),
            bounds: (bx, by),
            index,
            f_left,
            f_right,
        } = request;

        let (vx, vy) = (self.get(x)?, self.get(y)?);
        if (vx.rows(), vx.cols(), vy.rows(), vy.cols()) != (m, k, k, n)
            || (f_left.rows(), f_left.cols()) != (k, n)
            || (f_right.rows(), f_right.cols()) != (m, k)
        {
            return Err(protocol(Breach::Malformed {
                what: "a dealt product of mismatched shapes",
            }));
        }
        let Some(side) = self.dealt.as_ref() else {
            return Err(protocol(Breach::OutOfOrder {
                what: "a dealt product before the dealer's seed",
            }));
        };
        // A correlation used twice would tell the aggregator V - V' of two views.
        if index != side.next || side.pending.is_some() {
            return Err(protocol(Breach::Mismatch {
                what: "dealt correlation asked out of order",
                got: index,
                expected: side.next,
            }));
        }
        let start = Instant::now();
        let shapes = ProductShapes::new(m, k, n, bx, by);
        let part = dealt::keyholder_part(&side.seed, index, &shapes);
        let e_left = IntMatrix::combine(&[(vx, false), (&part.left_a, true)], &BigInt::zero());
        let e_right = IntMatrix::combine(&[(vy, false), (&part.right_a, true)], &BigInt::zero());
        // V_x V_y - (A_l F_l + Z_l) - (F_r A_r + Z_r), untruncated until the second half.
        let (product, (left, right)) = rayon::join(
            || wide::product(vx, vy),
            || {
                rayon::join(
                    || wide::product(&part.left_a, &f_left),
                    || wide::product(&f_right, &part.right_a),
                )
            },
        );
        let mine = IntMatrix::combine(
            &[
                (&product, false),
                (&left, true),
                (&part.left_z, true),
                (&right, true),
                (&part.right_z, true),
            ],
            &BigInt::zero(),
        );
        self.stats.product_seconds += start.elapsed().as_secs_f64();
        let side = self.dealt.as_mut().expect("checked above");
        side.next += 1;
        side.pending = Some(mine);
        Ok(e_right.write(e_left.write(Writer::new())).finish())
    }

    /// A small block's inverse in one garbled circuit; the output becomes a view.
    fn block_leaf<C: Channel, R: CryptoRng>(
        &mut self,
        x: u64,
        shape: &BlockShape,
        output: u64,
        party: &mut KeyholderGc<C, R>,
    ) -> Result<(), SecureError> {
        let view = self.get(x)?;
        let k = shape.size;
        if view.rows() != k || view.cols() != k {
            return Err(protocol(Breach::wrong_shape(
                "a block circuit's view",
                (view.rows(), view.cols()),
                (k, k),
            )));
        }
        if shape.output.mask < shape.output.bound + SIGMA {
            return Err(protocol(Breach::NarrowMask {
                what: "a block's inverse",
                mask: shape.output.mask,
                bound: shape.output.bound,
            }));
        }
        let lower: Vec<BigInt> = (0..k)
            .flat_map(|i| (0..=i).map(move |j| (i, j)))
            .map(|(i, j)| view.get(i, j).clone())
            .collect();
        if lower
            .iter()
            .any(|v| v.bits() > u64::from(shape.input.mask) + 1)
        {
            return Err(SecureError::Range(Overflow::Bound(
                "a block's view is wider than its declared mask",
            )));
        }
        let start = Instant::now();
        let result = block_leaf::run(party, shape, Some(&lower), None, None)
            .map_err(|e| SecureError::io(Role::KeyHolder, "a block circuit", e))?;
        self.stats.leaf_seconds += start.elapsed().as_secs_f64();
        let views = result.views.expect("the key holder learns its views");
        let value = IntMatrix::from_lower(k, &views);
        if let Some(audit) = self.audit.as_mut() {
            audit.push(ViewRecord {
                widths: shape.output,
                values: value.clone(),
            });
        }
        self.insert(output, value)
    }

    /// A pivot's non-linear step in a garbled circuit; its outputs become views.
    fn leaf<C: Channel, R: CryptoRng>(
        &mut self,
        request: LeafRequest,
        party: &mut KeyholderGc<C, R>,
    ) -> Result<(), SecureError> {
        let LeafRequest {
            kind,
            x,
            input,
            threshold,
            frac,
            outputs,
        } = request;

        let view = self.get(x)?;
        if view.rows() != 1 || view.cols() != 1 {
            return Err(protocol(Breach::wrong_shape(
                "a pivot leaf",
                (view.rows(), view.cols()),
                (1, 1),
            )));
        }
        let v = view.get(0, 0).clone();
        if input.bound > input.mask || v.bits() > u64::from(input.mask) + 1 {
            return Err(SecureError::Range(Overflow::Bound(
                "a pivot's view is wider than its declared mask",
            )));
        }
        for (_, w) in &outputs {
            if w.mask < w.bound + SIGMA {
                return Err(protocol(Breach::NarrowMask {
                    what: "a pivot output",
                    mask: w.mask,
                    bound: w.bound,
                }));
            }
        }
        let shape = LeafShape {
            kind,
            input,
            outputs: outputs.iter().map(|(_, w)| *w).collect(),
            threshold,
            frac,
        };
        let start = Instant::now();
        let result = leaf::run(party, &shape, Some(&v), None, None)
            .map_err(|e| SecureError::io(Role::KeyHolder, "a pivot circuit", e))?;
        self.stats.leaf_seconds += start.elapsed().as_secs_f64();
        let views = result.views.expect("the key holder learns its views");
        for ((id, widths), value) in outputs.into_iter().zip(views) {
            let value = IntMatrix::from_vec(1, 1, vec![value]);
            // An inadmissible pivot stops the study at the aggregator; its garbage
            // output is not range-checked here.
            if let Some(audit) = self.audit.as_mut() {
                audit.push(ViewRecord {
                    widths,
                    values: value.clone(),
                });
            }
            self.insert(id, value)?;
        }
        Ok(())
    }
}

fn reply<C: Channel, R: CryptoRng>(
    party: &mut KeyholderGc<C, R>,
    session: u64,
    payload: &[u8],
) -> Result<(), SecureError> {
    let at = |e| SecureError::io(Role::KeyHolder, "a masked reply", e);
    let ch = party.session.channel().map_err(at)?;
    wire::send(ch, session, Step::MaskedReply, payload).map_err(at)
}
