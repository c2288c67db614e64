//! Masked products from dealt correlations: the cross terms of a product without Paillier.
//!
//! A product `Z = X Y` needs the two cross terms `V_x R_y` (the key holder's view times the
//! aggregator's mask) and `R_x V_y`. Under Paillier ([`super::cross`]) each costs a
//! multi-exponentiation per block and a decryption per packed ciphertext, about `5 d^2 / 8`
//! decryptions for a `d x d` inverse. Here a dealer, an optional party colluding with neither
//! server (`privlogit dealer` between organizations, a thread of its own in one process; [`serve`]
//! either way), hands out one-use correlations, and each cross term is an oblivious linear
//! evaluation in Beaver's style over the integers:
//!
//! - the key holder draws `A` and `Z` from a seed it shares with the dealer, the aggregator `B`
//!   from a seed it shares with the dealer, and the dealer sends the aggregator `W = A B - Z`;
//! - the key holder sends `E = V - A`, the aggregator `F = R - B`;
//! - the key holder's share of `V R` is `A F + Z`, the aggregator's `E R + W`: they add up to
//!   `(E + A)(F + B) - ... = V R` exactly (integers, nothing wraps).
//!
//! What each side sees is statistically hidden (distance below `2^-40` per value): `E` hides the
//! secret `X` behind `A`, `sigma + 1` bits wider than `X`'s public bound (the aggregator knows
//! `R_x`, so `E` tells it `X - A`); `F` hides the secret `Y` behind `B` (the key holder knows
//! `V_y`, so `F` tells it `Y + B`); `W` hides `A` behind `Z`, `sigma` bits wider than `A B`.
//! A dealer that colluded with a server would undo this: the dealer must collude with neither
//! (the price written in the security model). The cost is integer matrix products (the
//! [`super::wide`] kernel) and one more round trip per product.

use num_bigint::{BigInt, Sign};
use privlogit_circuits::channel::Channel;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use zeroize::Zeroizing;

use super::matrix::IntMatrix;
use super::msgs::{MAX_SIDE, MAX_WIDTH};
use super::wide;
use crate::paillier::{DjnNoise, EncryptedVector, PublicKey};
use crate::secure::gc::{SIGMA, random_mask};
use crate::secure::seed::encrypt_seed;
use crate::secure::wire::{self, Reader, Step, Writer};
use crate::secure::{Breach, Party, SecureError, bits_for};
use crate::transport::Role;

/// The widths of one oblivious linear evaluation `P Q` (`rows x inner` times `inner x cols`),
/// where one side holds `P` and the other `Q`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OleShape {
    /// Rows of `P`.
    pub rows: usize,
    /// Columns of `P`, rows of `Q`.
    pub inner: usize,
    /// Columns of `Q`.
    pub cols: usize,
    /// Bits of the mask of the key holder's operand (`A`).
    pub keyholder_bits: u32,
    /// Bits of the mask of the aggregator's operand (`B`).
    pub aggregator_bits: u32,
    /// Bits of `Z`, which hides `A B` in `W`.
    pub zero_bits: u32,
}

impl OleShape {
    fn new(
        rows: usize,
        inner: usize,
        cols: usize,
        keyholder_bound: u32,
        aggregator_bound: u32,
    ) -> Self {
        let keyholder_bits = keyholder_bound + SIGMA + 1;
        let aggregator_bits = aggregator_bound + SIGMA + 1;
        Self {
            rows,
            inner,
            cols,
            keyholder_bits,
            aggregator_bits,
            zero_bits: keyholder_bits + aggregator_bits + bits_for(inner as u64) + SIGMA,
        }
    }
}

/// Both evaluations of a product `X Y` (`m x k` times `k x n`, public bounds `2^bx`, `2^by`):
/// the left one `V_x R_y` (the key holder's operand first), the right one `R_x V_y`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProductShapes {
    /// `V_x R_y`: `A` hides `X`, `B` hides `Y`.
    pub left: OleShape,
    /// `R_x V_y`: `B` hides `X`, `A` hides `Y`.
    pub right: OleShape,
}

impl ProductShapes {
    /// The shapes of a product, from public numbers only.
    pub fn new(m: usize, k: usize, n: usize, bound_x: u32, bound_y: u32) -> Self {
        Self {
            left: OleShape::new(m, k, n, bound_x, bound_y),
            right: OleShape::new(m, k, n, bound_y, bound_x),
        }
    }
}

/// A 256-bit seed, wiped when dropped.
pub type Seed = Zeroizing<[u8; 32]>;

/// `rows x cols` values uniform in `[0, 2^bits)` from `seed`, for correlation `index` and use
/// `tag` (each pair its own ChaCha20 stream).
fn draw(seed: &[u8; 32], index: u64, tag: u64, rows: usize, cols: usize, bits: u32) -> IntMatrix {
    let mut rng = ChaCha20Rng::from_seed(*seed);
    rng.set_stream(index.wrapping_mul(8).wrapping_add(tag));
    IntMatrix::from_fn(rows, cols, |_, _| {
        BigInt::from_biguint(Sign::Plus, random_mask(u64::from(bits), &mut rng))
    })
}

/// The key holder's part of correlation `index`: `A` and `Z` of both evaluations.
#[derive(Debug)]
pub struct KeyholderPart {
    /// `A` of `V_x R_y` (`m x k`).
    pub left_a: IntMatrix,
    /// `Z` of `V_x R_y` (`m x n`).
    pub left_z: IntMatrix,
    /// `A` of `R_x V_y` (`k x n`).
    pub right_a: IntMatrix,
    /// `Z` of `R_x V_y` (`m x n`).
    pub right_z: IntMatrix,
}

/// What the key holder draws for correlation `index` from its seed.
pub fn keyholder_part(seed: &[u8; 32], index: u64, s: &ProductShapes) -> KeyholderPart {
    let (l, r) = (&s.left, &s.right);
    KeyholderPart {
        left_a: draw(seed, index, 0, l.rows, l.inner, l.keyholder_bits),
        left_z: draw(seed, index, 1, l.rows, l.cols, l.zero_bits),
        right_a: draw(seed, index, 2, r.inner, r.cols, r.keyholder_bits),
        right_z: draw(seed, index, 3, r.rows, r.cols, r.zero_bits),
    }
}

/// What the aggregator draws for correlation `index` from its seed: `B` of `V_x R_y` (`k x n`)
/// and `B` of `R_x V_y` (`m x k`).
pub fn aggregator_part(seed: &[u8; 32], index: u64, s: &ProductShapes) -> (IntMatrix, IntMatrix) {
    let (l, r) = (&s.left, &s.right);
    (
        draw(seed, index, 0, l.inner, l.cols, l.aggregator_bits),
        draw(seed, index, 1, r.rows, r.inner, r.aggregator_bits),
    )
}

/// The dealer's message to the aggregator for correlation `index`: `W = A B - Z` of the left
/// evaluation and `W = B A - Z` of the right one.
pub fn deal(
    keyholder: &[u8; 32],
    aggregator: &[u8; 32],
    index: u64,
    s: &ProductShapes,
) -> (IntMatrix, IntMatrix) {
    let k = keyholder_part(keyholder, index, s);
    let (left_b, right_b) = aggregator_part(aggregator, index, s);
    let left = IntMatrix::combine(
        &[
            (&wide::product(&k.left_a, &left_b), false),
            (&k.left_z, true),
        ],
        &BigInt::ZERO,
    );
    let right = IntMatrix::combine(
        &[
            (&wide::product(&right_b, &k.right_a), false),
            (&k.right_z, true),
        ],
        &BigInt::ZERO,
    );
    (left, right)
}

/// Where the aggregator's engine gets the dealer's messages: asked first, taken once the key
/// holder has answered, so that a dealer on the network costs no round trip of its own (its
/// reply travels while the key holder's does).
pub trait Dealer: Send {
    /// Asks for `W` of both evaluations of correlation `index`.
    fn ask(&mut self, index: u64, shapes: &ProductShapes) -> Result<(), SecureError>;

    /// `W` of both evaluations of the correlation asked last.
    fn take(&mut self) -> Result<(IntMatrix, IntMatrix), SecureError>;
}

/// A dealer computing in this process from both seeds (tests and `bench linalg`; in a
/// one-process study the dealer is a thread of its own, served over a channel, and the
/// aggregator never holds the key holder's seed).
pub struct LocalDealer {
    keyholder: Seed,
    aggregator: Seed,
    asked: Option<(IntMatrix, IntMatrix)>,
}

/// The seeds are secret: they expand into every correlation.
impl std::fmt::Debug for LocalDealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LocalDealer(..)")
    }
}

impl LocalDealer {
    /// A dealer for these two seeds.
    pub fn new(keyholder: Seed, aggregator: Seed) -> Self {
        Self {
            keyholder,
            aggregator,
            asked: None,
        }
    }
}

impl Dealer for LocalDealer {
    fn ask(&mut self, index: u64, shapes: &ProductShapes) -> Result<(), SecureError> {
        self.asked = Some(deal(&self.keyholder, &self.aggregator, index, shapes));
        Ok(())
    }

    fn take(&mut self) -> Result<(IntMatrix, IntMatrix), SecureError> {
        self.asked.take().ok_or_else(|| {
            SecureError::inconsistent("a dealt correlation taken before it was asked")
        })
    }
}

/// A fresh seed from the operating system's CSPRNG.
pub fn fresh_seed() -> Seed {
    let mut seed = Seed::new([0u8; 32]);
    rand::rng().fill_bytes(&mut seed[..]);
    seed
}

/// The dealer as a party of its own, asked over a channel (a `privlogit dealer` process or an
/// in-process study's dealer thread, both running [`serve`]).
#[derive(Debug)]
pub struct ChannelDealer<C: Channel> {
    channel: C,
    session: u64,
    /// The shapes of the correlation asked and not yet taken.
    asked: Option<ProductShapes>,
}

impl<C: Channel + Send> ChannelDealer<C> {
    /// Sets the dealer up: sends it the study's public key and returns the dealer (for the
    /// engine), the aggregator's seed and the key holder's, encrypted under `key`.
    pub fn connect(
        mut channel: C,
        session: u64,
        key: &PublicKey,
    ) -> Result<(Self, Seed, EncryptedVector), SecureError> {
        let at = |e| SecureError::io(Role::Aggregator, "setting the dealer up", e);
        wire::send(&mut channel, session, Step::DealerSetup, &key.to_bytes()).map_err(at)?;
        let (_, payload) =
            wire::recv(&mut channel, session, &[Step::DealerSetupReply]).map_err(at)?;
        let mut r = Reader::new(&payload);
        let bytes = r.bytes().map_err(at)?;
        let seed: [u8; 32] = bytes.try_into().map_err(|_| {
            SecureError::violation(
                Role::Node,
                Breach::Malformed {
                    what: "the dealer's seed is not 32 bytes",
                },
            )
        })?;
        let sealed = EncryptedVector::from_bytes(key, r.bytes().map_err(at)?)?;
        r.end().map_err(at)?;
        if sealed.len() != 1 {
            return Err(SecureError::violation(
                Role::Node,
                Breach::wrong_length("the dealer's sealed seed", sealed.len(), 1),
            ));
        }
        Ok((
            Self {
                channel,
                session,
                asked: None,
            },
            Seed::new(seed),
            sealed,
        ))
    }
}

fn write_shapes(w: Writer, index: u64, s: &ProductShapes) -> Writer {
    let l = &s.left;
    w.u64(index)
        .u64(l.rows as u64)
        .u64(l.inner as u64)
        .u64(l.cols as u64)
        .u64(u64::from(l.keyholder_bits - SIGMA - 1))
        .u64(u64::from(l.aggregator_bits - SIGMA - 1))
}

fn read_shapes(r: &mut Reader<'_>) -> std::io::Result<(u64, ProductShapes)> {
    let bad = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
    let index = r.u64()?;
    let mut side = || {
        r.u64().and_then(|v| {
            usize::try_from(v)
                .ok()
                .filter(|&v| v > 0 && v <= MAX_SIDE)
                .ok_or_else(|| bad(format!("a matrix side of {v}")))
        })
    };
    let (m, k, n) = (side()?, side()?, side()?);
    let mut bound = || {
        r.u64().and_then(|v| {
            u32::try_from(v)
                .ok()
                .filter(|&v| v <= MAX_WIDTH)
                .ok_or_else(|| bad(format!("a bound of {v} bits")))
        })
    };
    let (bx, by) = (bound()?, bound()?);
    Ok((index, ProductShapes::new(m, k, n, bx, by)))
}

impl<C: Channel + Send> Dealer for ChannelDealer<C> {
    fn ask(&mut self, index: u64, shapes: &ProductShapes) -> Result<(), SecureError> {
        let at = |e| SecureError::io(Role::Aggregator, "asking the dealer", e);
        let payload = write_shapes(Writer::new(), index, shapes).finish();
        wire::send(&mut self.channel, self.session, Step::Deal, &payload).map_err(at)?;
        self.asked = Some(*shapes);
        Ok(())
    }

    fn take(&mut self) -> Result<(IntMatrix, IntMatrix), SecureError> {
        let at = |e| SecureError::io(Role::Aggregator, "asking the dealer", e);
        let shapes = self.asked.take().ok_or_else(|| {
            SecureError::inconsistent("a dealt correlation taken before it was asked")
        })?;
        let shapes = &shapes;
        let (_, payload) =
            wire::recv(&mut self.channel, self.session, &[Step::DealReply]).map_err(at)?;
        let mut r = Reader::new(&payload);
        let (m, n) = (shapes.left.rows, shapes.left.cols);
        let bits = |o: &OleShape| u64::from(o.zero_bits) + 2;
        let left = IntMatrix::read(&mut r, m * n, bits(&shapes.left)).map_err(at)?;
        let right = IntMatrix::read(&mut r, m * n, bits(&shapes.right)).map_err(at)?;
        r.end().map_err(at)?;
        if let Some(w) = [&left, &right]
            .iter()
            .find(|w| (w.rows(), w.cols()) != (m, n))
        {
            return Err(SecureError::violation(
                Role::Node,
                Breach::wrong_shape("a dealt correlation", (w.rows(), w.cols()), (m, n)),
            ));
        }
        Ok((left, right))
    }
}

/// Both seeds from a reproducible run's seed (`--seed`: as secret as the masks it also seeds),
/// so that a run repeats another's rounding with dealt products too.
fn seeds_from(seed: u64) -> (Seed, Seed) {
    use sha2::{Digest, Sha256};
    let derive = |party: &[u8]| {
        let digest = Sha256::new()
            .chain_update(b"privlogit dealer seed")
            .chain_update(seed.to_le_bytes())
            .chain_update(party)
            .finalize();
        Seed::new(digest.into())
    };
    (derive(b"key holder"), derive(b"aggregator"))
}

/// The dealer's side: draws both seeds (from `reproducible`, a reproducible run's seed, when
/// given), hands them out, then answers [`Step::Deal`] requests in order until [`Step::Done`] or
/// the channel closes. Refuses a key below `min_key_bits`.
pub fn serve<C: Channel>(
    mut channel: C,
    session: u64,
    min_key_bits: u32,
    reproducible: Option<u64>,
) -> Result<(), SecureError> {
    let at = |e| SecureError::io(Party::Dealer, "serving the aggregator", e);
    let (step, payload) = match wire::recv(&mut channel, session, &[Step::DealerSetup, Step::Done])
    {
        Ok(frame) => frame,
        // The study ended before any product (or failed elsewhere): nothing to deal.
        Err(_) => return Ok(()),
    };
    if step == Step::Done {
        return Ok(());
    }
    let key = if min_key_bits >= 2048 {
        PublicKey::from_bytes(&payload)?
    } else {
        PublicKey::from_bytes_insecure_for_tests(&payload)?
    };
    if key.bits() < u64::from(min_key_bits) {
        return Err(SecureError::violation(
            Role::Aggregator,
            Breach::OutOfRange {
                what: "the dealer's key size (bits)",
                value: key.bits(),
                min: u64::from(min_key_bits),
                max: u64::MAX,
            },
        ));
    }
    let (keyholder, aggregator) = match reproducible {
        Some(seed) => seeds_from(seed),
        None => (fresh_seed(), fresh_seed()),
    };
    let sealed = encrypt_seed(&key, &keyholder, &DjnNoise::shared(&key))?;
    let reply = Writer::new()
        .bytes(&aggregator[..])
        .bytes(&sealed.to_bytes(&key))
        .finish();
    wire::send(&mut channel, session, Step::DealerSetupReply, &reply).map_err(at)?;
    let mut next = 0u64;
    loop {
        let Ok((step, payload)) = wire::recv(&mut channel, session, &[Step::Deal, Step::Done])
        else {
            return Ok(());
        };
        if step == Step::Done {
            return Ok(());
        }
        let mut r = Reader::new(&payload);
        let (index, shapes) = read_shapes(&mut r).map_err(at)?;
        r.end().map_err(at)?;
        if index != next {
            return Err(SecureError::violation(
                Role::Aggregator,
                Breach::Mismatch {
                    what: "dealt correlation asked out of order",
                    got: index,
                    expected: next,
                },
            ));
        }
        next += 1;
        let (left, right) = deal(&keyholder, &aggregator, index, &shapes);
        let reply = right.write(left.write(Writer::new())).finish();
        wire::send(&mut channel, session, Step::DealReply, &reply).map_err(at)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    fn random(rows: usize, cols: usize, bits: u32, rng: &mut ChaCha20Rng) -> IntMatrix {
        IntMatrix::from_fn(rows, cols, |_, _| {
            let v = BigInt::from_biguint(Sign::Plus, random_mask(u64::from(bits), rng));
            if rng.random_bool(0.5) { -v } else { v }
        })
    }

    /// Both evaluations add up to the exact integer products, whatever the seeds.
    #[test]
    fn shares_add_up_to_the_products() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let (m, k, n) = (3, 4, 2);
        let s = ProductShapes::new(m, k, n, 70, 90);
        let (seed_k, seed_a) = ([1u8; 32], [2u8; 32]);
        let (w_left, w_right) = deal(&seed_k, &seed_a, 5, &s);
        let kp = keyholder_part(&seed_k, 5, &s);
        let (b_left, b_right) = aggregator_part(&seed_a, 5, &s);
        let (vx, vy) = (random(m, k, 111, &mut rng), random(k, n, 131, &mut rng));
        let (rx, ry) = (random(m, k, 110, &mut rng), random(k, n, 130, &mut rng));
        // Left: the key holder holds V_x, the aggregator R_y.
        let e = IntMatrix::combine(&[(&vx, false), (&kp.left_a, true)], &BigInt::ZERO);
        let f = IntMatrix::combine(&[(&ry, false), (&b_left, true)], &BigInt::ZERO);
        let mine = IntMatrix::combine(
            &[(&wide::product(&kp.left_a, &f), false), (&kp.left_z, false)],
            &BigInt::ZERO,
        );
        let theirs = IntMatrix::combine(
            &[(&wide::product(&e, &ry), false), (&w_left, false)],
            &BigInt::ZERO,
        );
        let sum = IntMatrix::combine(&[(&mine, false), (&theirs, false)], &BigInt::ZERO);
        assert_eq!(sum, wide::product(&vx, &ry));
        // Right: the aggregator holds R_x, the key holder V_y.
        let e = IntMatrix::combine(&[(&vy, false), (&kp.right_a, true)], &BigInt::ZERO);
        let f = IntMatrix::combine(&[(&rx, false), (&b_right, true)], &BigInt::ZERO);
        let mine = IntMatrix::combine(
            &[
                (&wide::product(&f, &kp.right_a), false),
                (&kp.right_z, false),
            ],
            &BigInt::ZERO,
        );
        let theirs = IntMatrix::combine(
            &[(&wide::product(&rx, &e), false), (&w_right, false)],
            &BigInt::ZERO,
        );
        let sum = IntMatrix::combine(&[(&mine, false), (&theirs, false)], &BigInt::ZERO);
        assert_eq!(sum, wide::product(&rx, &vy));
    }

    /// Different correlations and different uses draw different values.
    #[test]
    fn every_correlation_is_fresh() {
        let s = ProductShapes::new(2, 2, 2, 60, 60);
        let a = keyholder_part(&[9u8; 32], 1, &s);
        let b = keyholder_part(&[9u8; 32], 2, &s);
        assert_ne!(a.left_a, b.left_a);
        assert_ne!(a.left_a.slice(0, 0, 2, 2), a.right_a);
        assert!(a.left_z.max_bits() > u64::from(s.left.keyholder_bits + s.left.aggregator_bits));
    }
}
