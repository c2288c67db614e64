//! The aggregator's side of masked linear algebra: it drives, the key holder
//! ([`super::helper`]) answers.
//!
//! **Representation.** A secret matrix `X` (integers at `frac` fractional bits, `|x| <
//! 2^bound` by a public bound) is held as a mask `R` at the aggregator (uniform in `[0,
//! 2^mask)`, `mask >= bound + sigma`) and a view `V = X + R` at the key holder, which cannot tell
//! `V` from random. Encryptions `Enc(X)` the aggregator needs are made by the key holder from
//! its view (`Enc(V)`, packed as asked) and unmasked under encryption (`- R`).
//!
//! **Products** (Beaver-style, the key holder as the helper). For `Z = X Y`:
//! `XY = V_x V_y - X R_y - R_x Y - R_x R_y`. The aggregator computes the cross terms under
//! encryption, `Enc(X) R_y` and `(Enc(Y^T) R_x^T)^T` ([`super::cross`]), masks them with fresh
//! `M1`, `M2` (sigma bits wider than their bounds) and sends them; the key holder decrypts them
//! and forms its share `Z_k = V_x V_y - D1 - D2`, the aggregator's share being `Z_a = M1 + M2 -
//! R_x R_y`. Truncation is local: each side drops `frac` bits of its share (`floor`), so the sum
//! is `floor(Z / 2^frac)` or one less (one unit in the last place, as in SecureML's truncation
//! but over the integers, where it never fails). The aggregator then sends `floor(Z_a / 2^frac) +
//! R_z` with a fresh mask `R_z`, and the key holder's new view is its truncated share plus that:
//! `V_z = Z' + R_z`. One message, no reply, no decryption of the result. Linear steps (blocks,
//! transposes, sums) are free: both sides apply them to their halves.
//!
//! **What each server sees.** The key holder: views and masked cross terms, every one hidden by
//! a mask at least sigma bits wider than the public bound of what it hides (statistical
//! distance below `2^-40` per value); the aggregator: ciphertexts, and one admission bit per
//! non-linear step ([`super::leaf`]).

use crate::secure::Inconsistency;
use std::time::Instant;

use num_bigint::{BigInt, BigUint, Sign};
use num_traits::{One, Zero};
use privlogit_circuits::channel::Channel;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use super::block_leaf::{self, BlockShape};
use super::cross::{self, Zeros};
use super::dealt::{self, Dealer, ProductShapes, Seed};
use super::layout::{Layout, Need, layout};
use super::leaf::{self, LeafShape};
use super::matrix::{IntMatrix, pow2};
use super::msgs::{
    DealtProductRequest, Finish, LeafKind, LeafRequest, Masked, ProductOut, ProductRequest,
    Request, Widths, Window,
};
use super::packed::{self, PackedMatrix};
use super::wide;
use crate::paillier::{DjnNoise, EncryptedVector, NoiseSource, Packing, PublicKey};
use crate::secure::gc::{AggregatorGc, SIGMA, random_mask};
use crate::secure::wire::{self, Reader, Step};
use crate::secure::{Breach, Overflow, SecureError, bits_for};
use crate::transport::Role;

/// A secret matrix: the aggregator's mask of it, its public bound and zeros, and encryptions
/// of it (packed by columns; of its transpose for "packed by rows").
#[derive(Debug, Clone)]
pub struct Shared {
    id: u64,
    rows: usize,
    cols: usize,
    bound: u32,
    mask_bits: u32,
    masks: IntMatrix,
    zeros: Zeros,
    encryptions: Vec<Encryption>,
}

/// An encryption asked of the key holder: of `X` or `X^T`, packed by columns in `packing` from
/// slot `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Want {
    transpose: bool,
    packing: Packing,
    offset: usize,
}

/// `Enc(X)` (or `Enc(X^T)` when `transposed`) packed by columns from some slot offset.
#[derive(Debug, Clone)]
struct Encryption {
    transposed: bool,
    matrix: PackedMatrix,
}

impl Shared {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Bits of the public bound on every entry (integer units).
    pub fn bound(&self) -> u32 {
        self.bound
    }

    /// Bits of the masks.
    pub fn mask_bits(&self) -> u32 {
        self.mask_bits
    }

    /// The key holder's name for its view.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The aggregator's masks (tests use them to read views back).
    pub fn masks(&self) -> &IntMatrix {
        &self.masks
    }

    fn widths(&self) -> Widths {
        Widths {
            bound: self.bound,
            mask: self.mask_bits,
        }
    }

    /// Its public zeros.
    pub fn zeros(&self) -> Zeros {
        self.zeros
    }

    /// A fresh handle with no encryptions.
    fn new(
        id: u64,
        (rows, cols): (usize, usize),
        widths: Widths,
        masks: IntMatrix,
        zeros: Zeros,
    ) -> Self {
        Self {
            id,
            rows,
            cols,
            bound: widths.bound,
            mask_bits: widths.mask,
            masks,
            zeros,
            encryptions: Vec::new(),
        }
    }

    /// The cached encryption in `packing` at `offset`.
    fn cached(&self, transposed: bool, packing: Packing, offset: usize) -> Option<&PackedMatrix> {
        self.encryptions
            .iter()
            .find(|e| {
                e.transposed == transposed
                    && e.matrix.packing() == packing
                    && e.matrix.offset() == offset
            })
            .map(|e| &e.matrix)
    }

    /// The packing of a cached encryption from slot 0 with slots of at least `bits`.
    fn cached_packing(&self, transposed: bool, bits: u32) -> Option<Packing> {
        self.encryptions
            .iter()
            .filter(|e| e.transposed == transposed && e.matrix.offset() == 0)
            .map(|e| e.matrix.packing())
            .find(|p| p.slot_bits() >= bits)
    }
}

/// Where the aggregator's time in masked arithmetic went.
#[derive(Debug, Clone, Default)]
pub struct MaskedStats {
    /// Seconds computing cross terms (multi-exponentiations) and re-randomising them.
    pub cross_seconds: f64,
    /// Seconds waiting for the key holder (its decryptions and encryptions).
    pub wait_seconds: f64,
    /// Seconds in garbled-circuit leaves.
    pub leaf_seconds: f64,
    /// Masked products.
    pub products: u64,
    /// Garbled-circuit leaves.
    pub leaves: u64,
    /// Bytes sent to the key holder in masked requests.
    pub bytes_sent: u64,
}

/// One masked transfer as the aggregator made it: the widths it declared and the masks it
/// used (kept only when auditing, for the mask-width tests).
#[derive(Debug, Clone)]
pub struct MaskRecord {
    /// Declared bound and mask width.
    pub widths: Widths,
    /// The masks.
    pub masks: IntMatrix,
}

/// The aggregator's engine.
pub struct MaskedEngine {
    key: PublicKey,
    noise: DjnNoise,
    /// Where the masks come from: seeded from the OS, or (reproducible runs) by [`Self::reseed`].
    masks: ChaCha20Rng,
    session: u64,
    frac: u32,
    next_id: u64,
    stats: MaskedStats,
    audit: Option<Vec<MaskRecord>>,
    dealt: Option<Dealt>,
    /// Side of the blocks the SPD inverse inverts in one circuit ([`super::block_leaf`]).
    block: usize,
}

/// The default side of the blocks the SPD inverse ends at: a `d x d` inverse then waits for
/// about `5 d / 4` round trips between the servers instead of `5 d`, for circuits of about
/// 0.5 million AND gates a block (measured in docs/src/results/performance.md).
pub const DEFAULT_BLOCK: usize = 4;

/// Products from dealt correlations ([`super::dealt`]): the aggregator's seed, where the
/// dealer's messages come from, and the next correlation's index.
struct Dealt {
    seed: Seed,
    dealer: Box<dyn Dealer>,
    next: u64,
}

impl std::fmt::Debug for MaskedEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MaskedEngine {{ frac: {}, views: {} }}",
            self.frac, self.next_id
        )
    }
}

/// Slack added to the slot width asked of the key holder, so an encryption made for one
/// product serves the next ones too.
const SLOT_SLACK: u32 = 6;

impl MaskedEngine {
    /// An engine for `key`, in study `session`, computing at `frac` fractional bits.
    pub fn new(key: &PublicKey, session: u64, frac: u32) -> Self {
        Self::with_noise(DjnNoise::new(key, &mut rand::rng()), session, frac)
    }

    /// An engine encrypting with `noise` (shared with the party's other uses), under its key.
    pub fn with_noise(noise: DjnNoise, session: u64, frac: u32) -> Self {
        Self {
            key: noise.public_key().clone(),
            noise,
            masks: ChaCha20Rng::from_rng(&mut rand::rng()),
            session,
            frac,
            next_id: 1,
            stats: MaskedStats::default(),
            audit: None,
            dealt: None,
            block: DEFAULT_BLOCK,
        }
    }

    /// Ends the SPD inverse's recursion at blocks of side `block` (1: at scalar pivots),
    /// inverted in one circuit each; at most [`block_leaf::MAX_BLOCK`].
    pub fn set_block(&mut self, block: usize) {
        self.block = block.clamp(1, block_leaf::MAX_BLOCK);
    }

    /// The side of the blocks the SPD inverse ends at.
    pub fn block(&self) -> usize {
        self.block
    }

    /// Installs a dealer without sending the key holder its seed (tests of the key holder's
    /// refusal).
    #[doc(hidden)]
    pub fn set_dealer_for_tests(&mut self, seed: Seed, dealer: Box<dyn Dealer>) {
        self.dealt = Some(Dealt {
            seed,
            dealer,
            next: 0,
        });
    }

    /// [`Self::use_dealer`] with a dealer in this process holding both fresh seeds
    /// ([`dealt::LocalDealer`]: tests and `bench linalg`; a study's dealer is a party of its own).
    pub fn use_local_dealer<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
    ) -> Result<(), SecureError> {
        let (keyholder, aggregator) = (dealt::fresh_seed(), dealt::fresh_seed());
        let sealed = crate::secure::seed::encrypt_seed(&self.key, &keyholder, &self.noise)?;
        let dealer = dealt::LocalDealer::new(keyholder, Seed::new(*aggregator));
        self.use_dealer(gc, aggregator, Box::new(dealer), sealed)
    }

    /// Computes every product's cross terms from correlations `dealer` hands out
    /// ([`super::dealt`]) instead of on Paillier ciphertexts. `keyholder_seed` is the key
    /// holder's seed encrypted by the dealer under the study's key, relayed here.
    pub fn use_dealer<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        seed: Seed,
        dealer: Box<dyn Dealer>,
        keyholder_seed: EncryptedVector,
    ) -> Result<(), SecureError> {
        self.send(
            gc,
            &Request::DealerSeed {
                seed: keyholder_seed,
            },
        )?;
        self.dealt = Some(Dealt {
            seed,
            dealer,
            next: 0,
        });
        Ok(())
    }

    /// Draws the masks from here on from `seed` (reproducible benchmarks and tests, where a
    /// run must repeat another's rounding: the truncations of masked products depend on the
    /// masks). The seed is as secret as the masks themselves.
    pub fn reseed(&mut self, seed: [u8; 32]) {
        self.masks = ChaCha20Rng::from_seed(seed);
    }

    /// Keeps every mask the engine hands out (tests).
    pub fn with_audit(mut self) -> Self {
        self.audit = Some(Vec::new());
        self
    }

    /// The masked transfers so far (empty unless auditing).
    pub fn audit(&self) -> &[MaskRecord] {
        self.audit.as_deref().unwrap_or(&[])
    }

    /// Fractional bits.
    pub fn frac(&self) -> u32 {
        self.frac
    }

    /// The counters.
    pub fn stats(&self) -> &MaskedStats {
        &self.stats
    }

    fn fresh_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Sends the request `make` builds around a fresh id, and returns the id.
    fn issue<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        make: impl FnOnce(u64) -> Request,
    ) -> Result<u64, SecureError> {
        let id = self.fresh_id();
        self.send(gc, &make(id))?;
        Ok(id)
    }

    fn record(&mut self, widths: Widths, masks: &IntMatrix) {
        if let Some(audit) = self.audit.as_mut() {
            audit.push(MaskRecord {
                widths,
                masks: masks.clone(),
            });
        }
    }

    /// Masks of width `bound + sigma` for a value bounded by `2^bound`.
    fn fresh_masks(&mut self, rows: usize, cols: usize, bound: u32) -> (IntMatrix, Widths) {
        let widths = Widths {
            bound,
            mask: bound + SIGMA,
        };
        let rng = &mut self.masks;
        let masks = IntMatrix::from_fn(rows, cols, |_, _| {
            BigInt::from_biguint(Sign::Plus, random_mask(u64::from(widths.mask), rng))
        });
        (masks, widths)
    }

    fn send<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        request: &Request,
    ) -> Result<(), SecureError> {
        let payload = request.encode(&self.key);
        self.stats.bytes_sent += payload.len() as u64;
        let ch = gc
            .session
            .channel()
            .map_err(|e| SecureError::io(Role::Aggregator, "masked arithmetic", e))?;
        wire::send(ch, self.session, Step::Masked, &payload)
            .map_err(|e| SecureError::io(Role::Aggregator, "a masked request", e))
    }

    fn reply<C: Channel>(&mut self, gc: &mut AggregatorGc<C>) -> Result<Vec<u8>, SecureError> {
        let start = Instant::now();
        let at = |e| {
            SecureError::io(
                Role::Aggregator,
                "waiting for the key holder's masked reply",
                e,
            )
        };
        let ch = gc.session.channel().map_err(at)?;
        let (_, payload) = wire::recv(ch, self.session, &[Step::MaskedReply]).map_err(at)?;
        self.stats.wait_seconds += start.elapsed().as_secs_f64();
        Ok(payload)
    }

    /// Shares an encrypted matrix (packed by columns, every entry below `2^bound`): the key
    /// holder decrypts it masked and keeps the view. The packing must hold `bound + sigma + 2`
    /// bits.
    pub fn share<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        encrypted: &PackedMatrix,
        bound: u32,
    ) -> Result<Shared, SecureError> {
        let (rows, cols) = (encrypted.rows(), encrypted.cols());
        let (masks, widths) = self.fresh_masks(rows, cols, bound);
        let masked = encrypted
            .add_plain(&self.key, &masks)?
            .packed_to(&self.key, view_slot_bits(widths))?
            .rerandomized(&self.key, &self.noise);
        self.record(widths, &masks);
        let id = self.issue(gc, |id| Request::View {
            id,
            widths,
            masked: Masked::Matrix(masked),
        })?;
        let mut shared = Shared::new(id, (rows, cols), widths, masks, Zeros::None);
        shared.encryptions.push(Encryption {
            transposed: false,
            matrix: encrypted.clone(),
        });
        Ok(shared)
    }

    /// Shares a symmetric `d x d` matrix given as its encrypted lower triangle (row by row),
    /// every entry below `2^bound`.
    pub fn share_lower<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        lower: &EncryptedVector,
        d: usize,
        bound: u32,
    ) -> Result<Shared, SecureError> {
        if lower.len() != d * (d + 1) / 2 {
            return Err(SecureError::inconsistent(Inconsistency::Triangle {
                entries: lower.len(),
                dimension: d,
            }));
        }
        let (masks, widths) = self.fresh_masks(lower.len(), 1, bound);
        let masked = pack_vector(
            &self.key,
            &lower.add_plain(&self.key, masks.data())?,
            widths,
        )?
        .rerandomized(&self.key, &self.noise);
        self.record(widths, &masks);
        let id = self.issue(gc, |id| Request::View {
            id,
            widths,
            masked: Masked::Lower(d, masked),
        })?;
        let masks = IntMatrix::from_lower(d, masks.data());
        Ok(Shared::new(id, (d, d), widths, masks, Zeros::None))
    }

    /// Shares an encrypted column vector (unpacked, as the Nodes send gradients), every entry
    /// below `2^bound`. Its ciphertexts serve as its encryption in both orientations.
    pub fn share_vector<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        v: &EncryptedVector,
        bound: u32,
    ) -> Result<Shared, SecureError> {
        let unpacked = Packing::unpacked(&self.key);
        if v.packing() != unpacked {
            return Err(SecureError::inconsistent(
                "a vector to share must be unpacked",
            ));
        }
        let column = PackedMatrix::from_blocks(v.len(), 1, unpacked, v.ciphertexts().to_vec())?;
        let mut shared = self.share(gc, &column, bound)?;
        shared.encryptions.push(Encryption {
            transposed: true,
            matrix: PackedMatrix::from_blocks(1, v.len(), unpacked, v.ciphertexts().to_vec())?,
        });
        Ok(shared)
    }

    /// The block of `x` of `rows x cols` at `(r0, c0)`.
    pub fn slice<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        x: &Shared,
        (r0, c0): (usize, usize),
        (rows, cols): (usize, usize),
    ) -> Result<Shared, SecureError> {
        let window = Window { r0, c0, rows, cols };
        if !window.inside((x.rows, x.cols)) || rows == 0 || cols == 0 {
            return Err(SecureError::inconsistent(Inconsistency::Block {
                shape: (rows, cols),
                at: (r0, c0),
                of: (x.rows, x.cols),
            }));
        }
        let id = self.issue(gc, |id| Request::Slice {
            id,
            from: x.id,
            window,
        })?;
        // A diagonal block keeps a triangle's zeros; an off-diagonal one is dense below it.
        let zeros = if r0 == c0 { x.zeros } else { Zeros::None };
        let masks = window.of(&x.masks);
        Ok(Shared::new(id, (rows, cols), x.widths(), masks, zeros))
    }

    /// `x^T`.
    pub fn transpose<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        x: &Shared,
    ) -> Result<Shared, SecureError> {
        let id = self.issue(gc, |id| Request::Transpose { id, from: x.id })?;
        let mut t = Shared::new(
            id,
            (x.cols, x.rows),
            x.widths(),
            x.masks.transpose(),
            x.zeros.transposed(),
        );
        t.encryptions = x
            .encryptions
            .iter()
            .map(|e| Encryption {
                transposed: !e.transposed,
                matrix: e.matrix.clone(),
            })
            .collect();
        Ok(t)
    }

    /// `sum_k (-1)^negate_k x_k`, whose entries the caller knows to be below `2^bound`. The
    /// masks stay non-negative: a subtracted mask `-R` is shifted by the public `2^mask`.
    pub fn combine<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        terms: &[(&Shared, bool)],
        bound: u32,
    ) -> Result<Shared, SecureError> {
        let first = terms
            .first()
            .ok_or_else(|| SecureError::inconsistent("an empty combination"))?
            .0;
        if terms
            .iter()
            .any(|(t, _)| t.rows != first.rows || t.cols != first.cols)
        {
            return Err(SecureError::inconsistent(
                "combined matrices differ in shape",
            ));
        }
        let offset: BigInt = terms
            .iter()
            .filter(|(_, negate)| *negate)
            .map(|(t, _)| pow2(t.mask_bits))
            .sum();
        let span: BigInt = terms.iter().map(|(t, _)| pow2(t.mask_bits)).sum();
        let masks = IntMatrix::combine(
            &terms
                .iter()
                .map(|(t, n)| (&t.masks, *n))
                .collect::<Vec<_>>(),
            &offset,
        );
        let id = self.issue(gc, |id| Request::Combine {
            id,
            terms: terms.iter().map(|(t, n)| (t.id, *n)).collect(),
            offset,
        })?;
        let widths = Widths {
            bound,
            mask: span.bits() as u32,
        };
        Ok(Shared::new(
            id,
            (first.rows, first.cols),
            widths,
            masks,
            Zeros::None,
        ))
    }

    /// A matrix tiled by blocks `(x, row, col, transposed)`, whose public zeros the caller
    /// states (a triangle assembled with a zero block).
    pub fn assemble<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        (rows, cols): (usize, usize),
        blocks: &[(&Shared, usize, usize, bool)],
        zeros: Zeros,
    ) -> Result<Shared, SecureError> {
        let covered: usize = blocks.iter().map(|(b, ..)| b.rows * b.cols).sum();
        let fits = blocks.iter().all(|(b, r0, c0, t)| {
            let (br, bc) = if *t {
                (b.cols, b.rows)
            } else {
                (b.rows, b.cols)
            };
            r0 + br <= rows && c0 + bc <= cols
        });
        if covered != rows * cols || !fits {
            return Err(SecureError::inconsistent("blocks do not tile the matrix"));
        }
        let masks = IntMatrix::assemble(
            rows,
            cols,
            &blocks
                .iter()
                .map(|(b, r0, c0, t)| (&b.masks, *r0, *c0, *t))
                .collect::<Vec<_>>(),
        );
        let id = self.issue(gc, |id| Request::Assemble {
            id,
            rows,
            cols,
            blocks: blocks
                .iter()
                .map(|(b, r0, c0, t)| (b.id, *r0, *c0, *t))
                .collect(),
        })?;
        let widths = Widths {
            bound: blocks.iter().map(|(b, ..)| b.bound).max().unwrap_or(1),
            mask: blocks.iter().map(|(b, ..)| b.mask_bits).max().unwrap_or(1),
        };
        Ok(Shared::new(id, (rows, cols), widths, masks, zeros))
    }

    /// The trace of the square `x`, entries below `2^bound` each (so the trace below `2^(bound
    /// + bits(d))`).
    pub fn trace<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        x: &Shared,
    ) -> Result<Shared, SecureError> {
        if x.rows != x.cols {
            return Err(SecureError::inconsistent(
                "the trace of a non-square matrix",
            ));
        }
        let id = self.issue(gc, |id| Request::Trace { id, from: x.id })?;
        let sum: BigInt = (0..x.rows).map(|i| x.masks.get(i, i)).sum();
        let grow = bits_for(x.rows as u64);
        let widths = Widths {
            bound: x.bound + grow,
            mask: x.mask_bits + grow,
        };
        Ok(Shared::new(
            id,
            (1, 1),
            widths,
            IntMatrix::from_vec(1, 1, vec![sum]),
            Zeros::None,
        ))
    }

    /// One revealed bit: is the 1 x 1 `x` in `[threshold, 2^bits)`? (`bits` at most `x`'s mask
    /// width.)
    pub fn check_range<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        x: &Shared,
        threshold: &BigInt,
        bits: u32,
    ) -> Result<bool, SecureError> {
        if bits > x.mask_bits {
            return Err(SecureError::inconsistent(Inconsistency::Bits {
                what: "a range check's bound (the value's mask)",
                bits: u64::from(bits),
                limit: u64::from(x.mask_bits),
            }));
        }
        let probe = Shared {
            bound: bits,
            ..x.clone()
        };
        match self.leaf(gc, LeafKind::Check, &probe, threshold, &[]) {
            Ok(_) => Ok(true),
            Err(SecureError::Range(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The public zero matrix (mask 0: nothing to hide).
    pub fn zeros<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        (rows, cols): (usize, usize),
    ) -> Result<Shared, SecureError> {
        let id = self.issue(gc, |id| Request::Zeros { id, rows, cols })?;
        let widths = Widths { bound: 0, mask: 0 };
        Ok(Shared::new(
            id,
            (rows, cols),
            widths,
            IntMatrix::zeros(rows, cols),
            Zeros::None,
        ))
    }

    /// A matrix the aggregator knows (a public step, a selection), entries below `2^bound`,
    /// as a shared value for products with secret ones. The key holder's view is the public
    /// constant `c = 2^(bound + 1)` and the mask `c - X` (non-negative, as every mask), so the
    /// view tells it nothing; in a product, `X` is hidden from it by that product's own masks
    /// (Paillier's `M2`, or the dealt `B`), which are sized from `bound`.
    pub fn held<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        values: &IntMatrix,
        bound: u32,
    ) -> Result<Shared, SecureError> {
        if values.max_bits() > u64::from(bound) {
            return Err(SecureError::inconsistent(Inconsistency::Bits {
                what: "a held matrix's entry (its bound)",
                bits: values.max_bits(),
                limit: u64::from(bound),
            }));
        }
        let (rows, cols) = (values.rows(), values.cols());
        let zeros = self.zeros(gc, (rows, cols))?;
        let c = pow2(bound + 1);
        let id = self.issue(gc, |id| Request::Combine {
            id,
            terms: vec![(zeros.id, false)],
            offset: c.clone(),
        })?;
        self.release(gc, &[&zeros])?;
        let masks = IntMatrix::combine(&[(values, true)], &c);
        let widths = Widths {
            bound,
            mask: bound + 2,
        };
        Ok(Shared::new(id, (rows, cols), widths, masks, Zeros::None))
    }

    /// Lets the key holder forget views no longer needed.
    pub fn release<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        xs: &[&Shared],
    ) -> Result<(), SecureError> {
        let ids = xs.iter().map(|x| x.id).collect();
        self.send(gc, &Request::Drop { ids })
    }

    /// `Enc(x)` packed by columns in `packing` (made by the key holder from its view).
    pub fn encrypted<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        x: &Shared,
        packing: Packing,
    ) -> Result<PackedMatrix, SecureError> {
        let want = Want {
            transpose: false,
            packing,
            offset: 0,
        };
        self.ask_encryption(gc, x, want)?;
        self.take_encryption(gc, x, want)
    }

    /// Asks the key holder for `Enc(x)` (or `Enc(x^T)`) without waiting: several asked for
    /// together cost one round trip ([`Self::take_encryption`] reads them in order).
    fn ask_encryption<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        x: &Shared,
        want: Want,
    ) -> Result<(), SecureError> {
        self.send(
            gc,
            &Request::Encrypt {
                id: x.id,
                transpose: want.transpose,
                slot_bits: want.packing.slot_bits(),
                offset: want.offset,
            },
        )
    }

    /// The key holder's answer to the oldest [`Self::ask_encryption`] still unread, which
    /// must be this one, with `x`'s masks taken off.
    fn take_encryption<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        x: &Shared,
        want: Want,
    ) -> Result<PackedMatrix, SecureError> {
        let payload = self.reply(gc)?;
        let mut r = Reader::new(&payload);
        let side = x.rows.max(x.cols);
        let views = PackedMatrix::read(&self.key, &mut r, side * side)?;
        r.end()
            .map_err(|e| SecureError::io(Role::Aggregator, "reading an encryption", e))?;
        let (rows, cols) = if want.transpose {
            (x.cols, x.rows)
        } else {
            (x.rows, x.cols)
        };
        if (views.rows(), views.cols()) != (rows, cols) {
            return Err(SecureError::violation(
                Role::KeyHolder,
                Breach::wrong_shape(
                    "the key holder's encryption",
                    (views.rows(), views.cols()),
                    (rows, cols),
                ),
            ));
        }
        if (views.packing(), views.offset()) != (want.packing, want.offset) {
            return Err(SecureError::violation(
                Role::KeyHolder,
                Breach::Malformed {
                    what: "the key holder encrypted with the wrong packing",
                },
            ));
        }
        let masks = if want.transpose {
            x.masks.transpose()
        } else {
            x.masks.clone()
        };
        let minus = IntMatrix::combine(&[(&masks, true)], &BigInt::zero());
        Ok(views.add_plain(&self.key, &minus)?)
    }

    /// The packing for `x`'s encryption (`transposed`: of `x^T`) as a cross term's operand
    /// whose products need slots of `bits`: one already cached if wide enough.
    fn operand_packing(
        &self,
        x: &Shared,
        transposed: bool,
        bits: u32,
    ) -> Result<Packing, SecureError> {
        match x.cached_packing(transposed, bits) {
            Some(p) => Ok(p),
            None => {
                let wanted = (bits + SLOT_SLACK).min(self.key.bits() as u32 - 2);
                Ok(Packing::new(&self.key, wanted)?)
            }
        }
    }

    /// The slot offsets at which `x` (`transposed`: `x^T`) must be encrypted in `packing` for
    /// `layout`, in order.
    fn copy_offsets(x: &Shared, transposed: bool, layout: &Layout) -> Vec<usize> {
        let rows = if transposed { x.cols } else { x.rows };
        (0..layout.copies)
            .map(|t| if layout.copies > 1 { t * rows } else { 0 })
            .collect()
    }

    /// Makes sure both operands of a product are encrypted as their layouts need: every
    /// missing encryption of either is asked for before any answer is read, so the product
    /// waits one round trip at most.
    fn fetch_operands<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        operands: [(&mut Shared, bool, Packing, &Layout); 2],
    ) -> Result<(), SecureError> {
        let mut missing: Vec<Vec<usize>> = Vec::with_capacity(2);
        for (x, transposed, packing, layout) in &operands {
            let wanted: Vec<usize> = Self::copy_offsets(x, *transposed, layout)
                .into_iter()
                .filter(|&o| x.cached(*transposed, *packing, o).is_none())
                .collect();
            for &offset in &wanted {
                let want = Want {
                    transpose: *transposed,
                    packing: *packing,
                    offset,
                };
                self.ask_encryption(gc, x, want)?;
            }
            missing.push(wanted);
        }
        for ((x, transposed, packing, _), wanted) in operands.into_iter().zip(missing) {
            for offset in wanted {
                let want = Want {
                    transpose: transposed,
                    packing,
                    offset,
                };
                let matrix = self.take_encryption(gc, x, want)?;
                x.encryptions.push(Encryption { transposed, matrix });
            }
        }
        Ok(())
    }

    /// `x`'s encryptions (`transposed`: of `x^T`) in `packing` at the offsets `layout` needs,
    /// in offset order, all fetched before.
    fn operand_copies<'s>(
        x: &'s Shared,
        transposed: bool,
        packing: Packing,
        layout: &Layout,
    ) -> Result<Vec<&'s PackedMatrix>, SecureError> {
        Self::copy_offsets(x, transposed, layout)
            .iter()
            .map(|&o| {
                x.cached(transposed, packing, o)
                    .ok_or_else(|| SecureError::inconsistent("an operand's encryption is missing"))
            })
            .collect()
    }

    /// `x y` as `kind` says, as a new shared matrix whose entries the caller knows to be below
    /// `2^bound`.
    pub fn product<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        x: &mut Shared,
        y: &mut Shared,
        bound: u32,
        kind: ProductKind,
    ) -> Result<Shared, SecureError> {
        let (need, drop) = match kind {
            ProductKind::Truncated => (Need::All, self.frac),
            ProductKind::Exact => (Need::All, 0),
            ProductKind::Symmetric if x.rows != y.cols => {
                return Err(SecureError::inconsistent(
                    "a symmetric product must be square",
                ));
            }
            ProductKind::Symmetric => (Need::Lower, self.frac),
        };
        let (masks, out) = self.fresh_masks(x.rows, y.cols, bound);
        // A symmetric result gets a symmetric mask: the key holder mirrors its view.
        let masks = if need == Need::Lower {
            IntMatrix::from_fn(x.rows, y.cols, |i, j| masks.get(i.max(j), i.min(j)).clone())
        } else {
            masks
        };
        let id = self.fresh_id();
        self.product_request(gc, x, y, id, need, Output::Kept(&masks, out, drop))?;
        Ok(Shared::new(id, (x.rows, y.cols), out, masks, Zeros::None))
    }

    /// `floor(x y / 2^frac)`, exactly, revealed to the aggregator alone (for values public by
    /// design, a PrivLogit step): the key holder forms `x y + S` at twice the fractional bits
    /// for a fresh mask `S` sigma bits wider than the product's bound, so it learns nothing,
    /// and the aggregator removes `S` and truncates. No share is truncated on the way, so the
    /// result is the exact floor, the same whatever the masks were.
    pub fn product_revealed<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        x: &mut Shared,
        y: &mut Shared,
    ) -> Result<IntMatrix, SecureError> {
        // |x y| < k 2^(bound_x + bound_y) at twice the fractional bits.
        let bound = x.bound + y.bound + bits_for(x.cols as u64);
        let (masks, widths) = self.fresh_masks(x.rows, y.cols, bound);
        self.product_request(gc, x, y, 0, Need::All, Output::Revealed(&masks, widths))?;
        let payload = self.reply(gc)?;
        let mut r = Reader::new(&payload);
        let side = x.rows.max(y.cols);
        let values = IntMatrix::read(&mut r, side * side, u64::from(widths.mask) + 2)
            .and_then(|v| r.end().map(|()| v))
            .map_err(|e| SecureError::io(Role::Aggregator, "reading a revealed product", e))?;
        if values.rows() != x.rows || values.cols() != y.cols {
            return Err(SecureError::violation(
                Role::KeyHolder,
                Breach::wrong_shape(
                    "the key holder's revealed product",
                    (values.rows(), values.cols()),
                    (x.rows, y.cols),
                ),
            ));
        }
        let exact = IntMatrix::combine(&[(&values, false), (&masks, true)], &BigInt::zero());
        if exact.max_bits() > u64::from(bound) {
            return Err(SecureError::Range(Overflow::Bound(
                "a revealed product left its public bound",
            )));
        }
        Ok(exact.floor_shift(self.frac))
    }

    fn product_request<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        x: &mut Shared,
        y: &mut Shared,
        id: u64,
        need: Need,
        out: Output<'_>,
    ) -> Result<(), SecureError> {
        if x.cols != y.rows {
            return Err(SecureError::inconsistent(Inconsistency::Product {
                left: (x.rows, x.cols),
                right: (y.rows, y.cols),
            }));
        }
        if self.dealt.is_some() {
            return self.dealt_product(gc, x, y, id, need, out);
        }
        let (m, k, n) = (x.rows, x.cols, y.cols);
        // D1 = X R_y + M1 and D2 = R_x Y + M2: bounds, then masks sigma bits wider.
        let bits_k = bits_for(k as u64);
        let left = Widths {
            bound: bits_k + x.bound + y.mask_bits,
            mask: bits_k + x.bound + y.mask_bits + SIGMA,
        };
        let right = Widths {
            bound: bits_k + y.bound + x.mask_bits,
            mask: bits_k + y.bound + x.mask_bits + SIGMA,
        };
        let (left_need, right_need) = Request::needs(need);
        let left_packing = self.operand_packing(x, false, left.mask + 2)?;
        let right_packing = self.operand_packing(y, true, right.mask + 2)?;
        let left_layout = layout(m, n, left_packing.slots(), left_need);
        let right_layout = layout(n, m, right_packing.slots(), right_need);
        let (x_zeros, y_zeros) = (x.zeros, y.zeros.transposed());
        let x_masks_t = x.masks.transpose();
        let y_masks = y.masks.clone();
        self.fetch_operands(
            gc,
            [
                (&mut *x, false, left_packing, &left_layout),
                (&mut *y, true, right_packing, &right_layout),
            ],
        )?;
        let left_copies = Self::operand_copies(x, false, left_packing, &left_layout)?;
        let right_copies = Self::operand_copies(y, true, right_packing, &right_layout)?;
        let start = Instant::now();
        let (m1, _) = self.fresh_masks(m, n, left.bound);
        let (m2t, _) = self.fresh_masks(n, m, right.bound);
        // The two cross terms are independent: computed side by side (small products have a
        // block or two each, which would otherwise leave a core idle).
        let (key, noise) = (&self.key, &self.noise);
        let cross_term = |copies: &[&PackedMatrix],
                          zeros,
                          exponents: &IntMatrix,
                          plan: &Layout,
                          masks: &IntMatrix| {
            cross::times_plain(key, copies, zeros, exponents, plan)?
                .add_plain(key, plan, masks)
                .map(|c| c.rerandomized(key, noise))
        };
        let (left_cross, right_cross) = rayon::join(
            || cross_term(&left_copies, x_zeros, &y_masks, &left_layout, &m1),
            || cross_term(&right_copies, y_zeros, &x_masks_t, &right_layout, &m2t),
        );
        let (left_cross, right_cross) = (left_cross?, right_cross?);
        // The aggregator's share M1 + M2 - R_x R_y, truncated, plus the new view's mask (or,
        // revealed, whole plus the reply's mask, and the key holder does not truncate).
        let rr = wide::product(&x_masks_t.transpose(), &y_masks);
        let m2 = m2t.transpose();
        let share = IntMatrix::combine(&[(&m1, false), (&m2, false), (&rr, true)], &BigInt::zero());
        let finish = out.finish(id, need, &share);
        if self.audit.is_some() {
            self.record(left, &restrict(&m1, &left_layout));
            self.record(right, &restrict(&m2t, &right_layout));
        }
        self.count_product(out, start);
        self.send(
            gc,
            &Request::Product(ProductRequest {
                x: x.id,
                y: y.id,
                shape: (m, k, n),
                left_cross,
                left_widths: left,
                right_cross,
                right_widths: right,
                finish,
            }),
        )
    }

    /// [`Self::product_request`] with dealt correlations: `F` of both evaluations out, the key
    /// holder's `E` back, then the aggregator's share `R_x R_y - (E_l R_y + W_l) - (R_x E_r +
    /// W_r)` (truncated, plus the output's mask, as under Paillier).
    fn dealt_product<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        x: &Shared,
        y: &Shared,
        id: u64,
        need: Need,
        out: Output<'_>,
    ) -> Result<(), SecureError> {
        let (m, k, n) = (x.rows, x.cols, y.cols);
        let start = Instant::now();
        let shapes = ProductShapes::new(m, k, n, x.bound, y.bound);
        let state = self.dealt.as_mut().expect("checked by the caller");
        let index = state.next;
        state.next += 1;
        // The dealer's answer travels while the key holder's does.
        state.dealer.ask(index, &shapes)?;
        let (b_left, b_right) = dealt::aggregator_part(&state.seed, index, &shapes);
        let f_left = IntMatrix::combine(&[(&y.masks, false), (&b_left, true)], &BigInt::zero());
        let f_right = IntMatrix::combine(&[(&x.masks, false), (&b_right, true)], &BigInt::zero());
        self.stats.cross_seconds += start.elapsed().as_secs_f64();
        self.send(
            gc,
            &Request::DealtProduct(DealtProductRequest {
                x: x.id,
                y: y.id,
                shape: (m, k, n),
                bounds: (x.bound, y.bound),
                index,
                f_left,
                f_right,
            }),
        )?;
        let payload = self.reply(gc)?;
        let (w_left, w_right) = self
            .dealt
            .as_mut()
            .expect("checked by the caller")
            .dealer
            .take()?;
        let start = Instant::now();
        let mut r = Reader::new(&payload);
        // E = V - A: below 2^(max(mask + 1, bits of A) + 1) in magnitude.
        let widest = |mask: u32, a: u32| u64::from(mask.max(a)) + 3;
        let read = |r: &mut Reader<'_>, rows, cols, bits| {
            IntMatrix::read(r, rows * cols, bits)
                .map_err(|e| SecureError::io(Role::Aggregator, "reading a dealt product", e))
                .and_then(|v| {
                    if (v.rows(), v.cols()) == (rows, cols) {
                        Ok(v)
                    } else {
                        Err(SecureError::violation(
                            Role::KeyHolder,
                            Breach::wrong_shape(
                                "the key holder's dealt product",
                                (v.rows(), v.cols()),
                                (rows, cols),
                            ),
                        ))
                    }
                })
        };
        let e_left = read(
            &mut r,
            m,
            k,
            widest(x.mask_bits, shapes.left.keyholder_bits),
        )?;
        let e_right = read(
            &mut r,
            k,
            n,
            widest(y.mask_bits, shapes.right.keyholder_bits),
        )?;
        r.end()
            .map_err(|e| SecureError::io(Role::Aggregator, "reading a dealt product", e))?;
        let (left, right) = rayon::join(
            || wide::product(&e_left, &y.masks),
            || wide::product(&x.masks, &e_right),
        );
        let rr = wide::product(&x.masks, &y.masks);
        let share = IntMatrix::combine(
            &[
                (&rr, false),
                (&left, true),
                (&w_left, true),
                (&right, true),
                (&w_right, true),
            ],
            &BigInt::zero(),
        );
        let finish = out.finish(id, need, &share);
        self.count_product(out, start);
        self.send(gc, &Request::DealtShare(finish))
    }

    /// Counts a product (its share timed from `start`) and keeps its output's mask (auditing).
    fn count_product(&mut self, out: Output<'_>, start: Instant) {
        self.stats.cross_seconds += start.elapsed().as_secs_f64();
        self.stats.products += 1;
        let (Output::Kept(masks, widths, _) | Output::Revealed(masks, widths)) = out;
        self.record(widths, masks);
    }

    /// A non-linear step on the 1 x 1 `x` in a garbled circuit ([`super::leaf`]): the outputs,
    /// bounded by `2^bounds[k]`, as new shared values; a named error when `x` is below
    /// `threshold` (integer units) or past its bound.
    pub fn leaf<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        kind: LeafKind,
        x: &Shared,
        threshold: &BigInt,
        bounds: &[u32],
    ) -> Result<Vec<Shared>, SecureError> {
        if x.rows != 1 || x.cols != 1 || bounds.len() != kind.outputs() {
            return Err(SecureError::inconsistent("a leaf takes one value"));
        }
        let fresh: Vec<(IntMatrix, Widths)> =
            bounds.iter().map(|&b| self.fresh_masks(1, 1, b)).collect();
        let ids: Vec<u64> = fresh.iter().map(|_| self.fresh_id()).collect();
        let shape = LeafShape {
            kind,
            input: x.widths(),
            outputs: fresh.iter().map(|(_, w)| *w).collect(),
            threshold: threshold.clone(),
            frac: self.frac,
        };
        for (masks, widths) in &fresh {
            self.record(*widths, masks);
        }
        self.send(
            gc,
            &Request::Leaf(LeafRequest {
                kind,
                x: x.id,
                input: shape.input,
                threshold: threshold.clone(),
                frac: self.frac,
                outputs: ids
                    .iter()
                    .zip(&shape.outputs)
                    .map(|(i, w)| (*i, *w))
                    .collect(),
            }),
        )?;
        let start = Instant::now();
        let output_masks: Vec<BigInt> = fresh.iter().map(|(m, _)| m.get(0, 0).clone()).collect();
        let result = leaf::run(
            gc,
            &shape,
            None,
            Some(x.masks.get(0, 0)),
            Some(&output_masks),
        )
        .map_err(|e| SecureError::io(Role::Aggregator, "a pivot circuit", e))?;
        self.stats.leaf_seconds += start.elapsed().as_secs_f64();
        self.stats.leaves += 1;
        if result.admitted != Some(true) {
            return Err(SecureError::Range(Overflow::Pivot {
                threshold: to_f64(threshold, self.frac),
                bound: f64::from(x.bound).exp2() * f64::from(self.frac).exp2().recip(),
            }));
        }
        Ok(fresh
            .into_iter()
            .zip(ids)
            .map(|((masks, widths), id)| Shared::new(id, (1, 1), widths, masks, Zeros::None))
            .collect())
    }
}

impl MaskedEngine {
    /// The inverse of the symmetric `k x k` shared `x` in one garbled circuit
    /// ([`super::block_leaf`]): `entry` bits bound its entries and pivots, `inverse` bits the
    /// result's, `width` bits every value inside. A pivot below `threshold` fails with
    /// [`SecureError::Singular`] naming its column within the block.
    pub fn block_inverse<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        x: &Shared,
        threshold: &BigInt,
        (entry, inverse, width): (u32, u32, u32),
    ) -> Result<Shared, SecureError> {
        let k = x.rows;
        let (masks, out) = self.fresh_masks(k, k, inverse);
        // A symmetric result gets a symmetric mask: the key holder mirrors its view.
        let masks = IntMatrix::from_fn(k, k, |i, j| masks.get(i.max(j), i.min(j)).clone());
        let shape = BlockShape {
            size: k,
            input: x.widths(),
            entry,
            width,
            threshold: threshold.clone(),
            frac: self.frac,
            output: out,
        };
        if x.cols != k {
            return Err(SecureError::inconsistent(
                "a block circuit takes a square matrix",
            ));
        }
        shape
            .check()
            .map_err(|e| SecureError::inconsistent(Inconsistency::BlockShape(e)))?;
        self.record(out, &masks);
        let id = self.issue(gc, |id| Request::BlockLeaf {
            x: x.id,
            shape: shape.clone(),
            output: id,
        })?;
        let start = Instant::now();
        let lower = |m: &IntMatrix| -> Vec<BigInt> {
            (0..k)
                .flat_map(|i| (0..=i).map(move |j| (i, j)))
                .map(|(i, j)| m.get(i, j).clone())
                .collect()
        };
        let result = block_leaf::run(
            gc,
            &shape,
            None,
            Some(&lower(&x.masks)),
            Some(&lower(&masks)),
        )
        .map_err(|e| SecureError::io(Role::Aggregator, "a block circuit", e))?;
        self.stats.leaf_seconds += start.elapsed().as_secs_f64();
        self.stats.leaves += k as u64;
        if result.in_range != Some(true) {
            return Err(SecureError::Range(Overflow::Bound(
                "a block of a matrix left its public bound",
            )));
        }
        let pivots = result.pivots.unwrap_or_default();
        if let Some(column) = pivots.iter().position(|admitted| !admitted) {
            return Err(SecureError::Singular { column, name: None });
        }
        Ok(Shared::new(id, (k, k), out, masks, Zeros::None))
    }
}

/// What a masked product keeps of `x y`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProductKind {
    /// `floor(x y / 2^frac)` (or one less).
    Truncated,
    /// `x y` exactly, at twice the fractional bits (nothing dropped, so no rounding: a square
    /// compared with a small threshold, a dot product compared with an objective's change).
    Exact,
    /// [`ProductKind::Truncated`] of a product the caller knows to be symmetric (`A21 X
    /// A21^T`, `L21 L21^T`): only the lower triangle is computed, and mirrored.
    Symmetric,
}

/// Where a masked product goes.
#[derive(Clone, Copy)]
enum Output<'a> {
    /// Kept at the key holder as a new view, masked by these masks of these widths, with
    /// this many fractional bits dropped (the engine's `frac`, or 0 for an exact product).
    Kept(&'a IntMatrix, Widths, u32),
    /// Sent back to the aggregator, masked by these.
    Revealed(&'a IntMatrix, Widths),
}

impl Output<'_> {
    /// The end of product `id` as it goes to the key holder: the aggregator's `share`
    /// truncated plus the new view's mask, or (revealed) whole plus the reply's mask, the key
    /// holder then truncating nothing.
    fn finish(&self, id: u64, need: Need, share: &IntMatrix) -> Finish {
        let (share, frac, out) = match *self {
            Output::Kept(masks, widths, drop) => (
                IntMatrix::combine(
                    &[(&share.floor_shift(drop), false), (masks, false)],
                    &BigInt::zero(),
                ),
                drop,
                ProductOut::Keep(widths),
            ),
            Output::Revealed(masks, widths) => (
                IntMatrix::combine(&[(share, false), (masks, false)], &BigInt::zero()),
                0,
                ProductOut::Reveal(widths),
            ),
        };
        Finish {
            id,
            need,
            frac,
            share,
            out,
        }
    }
}

/// Slot width for masked values sent to the key holder: they lie in `(-2^bound, 2^mask +
/// 2^bound)`, below `2^(mask + 1)` in magnitude, so `mask + 2` bits hold one signed.
fn view_slot_bits(widths: Widths) -> u32 {
    widths.mask + 2
}

/// A one-value-per-ciphertext vector of masked values packed for the key holder's view (see
/// [`PackedMatrix::packed_to`]).
fn pack_vector(
    key: &PublicKey,
    v: &EncryptedVector,
    widths: Widths,
) -> Result<EncryptedVector, SecureError> {
    let Some(packing) = packed::repacking(key, v.packing(), view_slot_bits(widths)) else {
        return Ok(v.clone());
    };
    let blocks = packed::pack_columns(key, v.ciphertexts(), v.len(), packing);
    let bound = (BigUint::one() << widths.mask) + (BigUint::one() << widths.bound);
    Ok(EncryptedVector::from_parts(
        key,
        v.len(),
        v.scale(),
        bound,
        packing,
        blocks,
    )?)
}

/// `values` where `layout` lays entries out, zero elsewhere (what the key holder decrypts).
fn restrict(values: &IntMatrix, layout: &Layout) -> IntMatrix {
    let mut out = IntMatrix::zeros(values.rows(), values.cols());
    for segments in &layout.blocks {
        for s in segments {
            for i in 0..s.count {
                out.set(s.row + i, s.column, values.get(s.row + i, s.column).clone());
            }
        }
    }
    out
}

/// Bits of the integer bound `ceil(value 2^frac)` for a positive real `value`, at least 1.
pub fn bound_bits(value: f64, frac: u32) -> u32 {
    if !(value.is_finite() && value > 0.0) {
        return 1;
    }
    let log = value.log2().ceil();
    ((log + f64::from(frac)).max(0.0) as u32 + 1).max(1)
}

/// `round(value 2^frac)` as an integer (for public thresholds).
pub fn to_integer(value: f64, frac: u32) -> BigInt {
    let scaled = value * f64::from(frac).exp2();
    let rounded = scaled.round();
    BigInt::from_biguint(
        if rounded < 0.0 {
            Sign::Minus
        } else {
            Sign::Plus
        },
        BigUint::from(rounded.abs() as u128),
    )
}

/// The real value of an integer at `frac` fractional bits.
pub fn to_f64(v: &BigInt, frac: u32) -> f64 {
    use num_traits::ToPrimitive;
    v.to_f64().unwrap_or(f64::NAN) * f64::from(frac).exp2().recip()
}

/// `1` as an integer at `frac` bits.
pub fn one(frac: u32) -> BigInt {
    BigInt::one() << frac
}
