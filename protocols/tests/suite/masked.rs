//! Masked linear algebra between the two servers: products and truncation against exact integer
//! arithmetic, the SPD inverse and Cholesky factor against f64 references, the mask widths of
//! everything the key holder learns, and the refusal of matrices that are not positive definite.

#![allow(clippy::needless_range_loop)] // matrix indices read clearer than iterator chains here

use std::sync::OnceLock;

use num_bigint::BigInt;
use num_traits::{One, ToPrimitive, Zero};
use privlogit_protocols::paillier::{DjnNoise, KeyPair, Packing, SecretKey};
use privlogit_protocols::secure::SecureError;
use privlogit_protocols::secure::masked::block_spd::{self, SpdBounds};
use privlogit_protocols::secure::masked::dealt;
use privlogit_protocols::secure::masked::matrix::IntMatrix;
use privlogit_protocols::secure::masked::packed::PackedMatrix;
use privlogit_protocols::secure::masked::pair::{self, KeyholderEnd};
use privlogit_protocols::secure::masked::{MaskedEngine, ProductKind, Shared};
use proptest::prelude::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;

const FRAC: u32 = 46;
const SIGMA: u32 = 40;

/// One 1024-bit key for every test (insecure size, fast; slots of about 250 bits fit four).
fn secret() -> &'static SecretKey {
    static KEY: OnceLock<KeyPair> = OnceLock::new();
    &KEY.get_or_init(|| KeyPair::generate_insecure_for_tests(1024, &mut rand::rng()))
        .secret
}

/// Encrypts integers packed by columns, in slots wide enough for a masked entry.
fn encrypt(values: &IntMatrix, bound: u32) -> PackedMatrix {
    let key = secret().public_key();
    let packing = Packing::new(key, bound + SIGMA + 3).expect("fits");
    PackedMatrix::encrypt(key, values, packing, &DjnNoise::new(key, &mut rand::rng()))
        .expect("encrypts")
}

/// The secret value of a shared matrix: the key holder's view minus the aggregator's masks.
fn reveal(shared: &Shared, keyholder: &KeyholderEnd) -> IntMatrix {
    let view = keyholder.helper.view(shared.id()).expect("view kept");
    IntMatrix::combine(&[(view, false), (shared.masks(), true)], &BigInt::zero())
}

fn int_matrix(rows: usize, cols: usize, f: impl FnMut(usize, usize) -> i64) -> IntMatrix {
    let mut f = f;
    IntMatrix::from_fn(rows, cols, |i, j| BigInt::from(f(i, j)))
}

fn to_fixed(x: f64) -> BigInt {
    BigInt::from((x * f64::from(FRAC).exp2()).round() as i128)
}

fn from_fixed(v: &BigInt) -> f64 {
    v.to_f64().expect("finite") / f64::from(FRAC).exp2()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// The product of two shared matrices is `floor(x y / 2^frac)` or one less, exactly, for
    /// any shapes and signs (reference: integer arithmetic).
    #[test]
    fn products_truncate_to_within_one_unit(m in 1usize..6, k in 1usize..7, n in 1usize..6,
                                            seed in any::<u64>()) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let bound = 60;
        let limit = 1i64 << 59;
        let x = int_matrix(m, k, |_, _| rng.random_range(-limit..limit));
        let y = int_matrix(k, n, |_, _| rng.random_range(-limit..limit));
        let (ex, ey) = (encrypt(&x, bound), encrypt(&y, bound));
        let product_bound = 2 * bound + 4 - FRAC;
        let ((xs, ys, z), _, keyholder) = pair::run(secret(), FRAC, false, |e, gc| {
            let mut xs = e.share(gc, &ex, bound)?;
            let mut ys = e.share(gc, &ey, bound)?;
            let z = e.product(gc, &mut xs, &mut ys, product_bound, ProductKind::Truncated)?;
            Ok((xs, ys, z))
        }).expect("runs");
        prop_assert_eq!(reveal(&xs, &keyholder), x.clone());
        prop_assert_eq!(reveal(&ys, &keyholder), y.clone());
        let got = reveal(&z, &keyholder);
        for i in 0..m {
            for j in 0..n {
                let exact: BigInt = (0..k).map(|l| x.get(i, l) * y.get(l, j)).sum();
                let floor = exact >> FRAC;
                let diff = &floor - got.get(i, j);
                prop_assert!(diff.is_zero() || diff.is_one(), "({}, {}): {} vs {}", i, j, got.get(i, j), floor);
            }
        }
    }
}

/// A revealed product (a PrivLogit-Hessian step) reaches the aggregator as the exact floor of
/// the product, whatever the masks (no share is truncated on the way), and the key holder sees
/// it only masked sigma bits past its bound (it used to see the step itself).
#[test]
fn revealed_product_is_exact_and_masked_from_the_key_holder() {
    let x = int_matrix(3, 4, |i, j| (i as i64 - 1) * (1 << 50) + j as i64 * 12345);
    let y = int_matrix(4, 1, |i, _| (i as i64 + 1) * -(1 << 47));
    let (ex, ey) = (encrypt(&x, 55), encrypt(&y, 55));
    for _ in 0..3 {
        let (z, engine, keyholder) = pair::run(secret(), FRAC, true, |e, gc| {
            let mut xs = e.share(gc, &ex, 55)?;
            let mut ys = e.share(gc, &ey, 55)?;
            e.product_revealed(gc, &mut xs, &mut ys)
        })
        .expect("runs");
        for i in 0..3 {
            let exact: BigInt = (0..4).map(|l| x.get(i, l) * y.get(l, 0)).sum();
            assert_eq!(&(&exact >> FRAC), z.get(i, 0), "row {i}");
        }
        // The key holder's last record is the reply: the product at twice the fractional
        // bits plus a mask 40 bits wider than its bound.
        let (sent, learnt) = (engine.audit(), keyholder.helper.audit());
        assert_eq!(sent.len(), learnt.len());
        let (mask, view) = (sent.last().expect("reply"), learnt.last().expect("reply"));
        assert_eq!(mask.widths, view.widths);
        assert!(mask.widths.mask >= mask.widths.bound + SIGMA);
        for i in 0..3 {
            let exact: BigInt = (0..4).map(|l| x.get(i, l) * y.get(l, 0)).sum();
            assert_eq!(view.values.get(i, 0) - mask.masks.get(i, 0), exact);
            assert_ne!(
                view.values.get(i, 0),
                &exact,
                "the key holder saw the product"
            );
        }
    }
}

/// A random SPD matrix like a PrivLogit bound: `X^T X / (4 n) + mu I`.
fn spd(d: usize, rows: usize, mu: f64, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let x: Vec<Vec<f64>> = (0..rows)
        .map(|_| (0..d).map(|_| rng.random_range(-1.0..1.0)).collect())
        .collect();
    (0..d)
        .map(|i| {
            (0..d)
                .map(|j| {
                    let s: f64 = x.iter().map(|r| r[i] * r[j]).sum();
                    s / (4.0 * rows as f64) + if i == j { mu } else { 0.0 }
                })
                .collect()
        })
        .collect()
}

/// Gauss-Jordan inverse with partial pivoting in f64 (the reference).
fn reference_inverse(a: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let d = a.len();
    let mut m: Vec<Vec<f64>> = a
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut row = r.clone();
            row.extend((0..d).map(|j| if i == j { 1.0 } else { 0.0 }));
            row
        })
        .collect();
    for c in 0..d {
        let p = (c..d)
            .max_by(|&i, &j| m[i][c].abs().total_cmp(&m[j][c].abs()))
            .expect("rows");
        m.swap(c, p);
        let pivot = m[c][c];
        m[c].iter_mut().for_each(|v| *v /= pivot);
        for r in 0..d {
            if r != c {
                let f = m[r][c];
                let pivot_row = m[c].clone();
                m[r].iter_mut()
                    .zip(pivot_row)
                    .for_each(|(v, p)| *v -= f * p);
            }
        }
    }
    m.into_iter().map(|r| r[d..].to_vec()).collect()
}

fn share_spd(a: &[Vec<f64>], bounds: &SpdBounds) -> (IntMatrix, PackedMatrix, u32) {
    let d = a.len();
    let fixed = IntMatrix::from_fn(d, d, |i, j| to_fixed(a[i][j]));
    let bound = bounds.entry_bits(FRAC);
    let enc = encrypt(&fixed, bound);
    (fixed, enc, bound)
}

/// Largest entry error relative to the largest entry.
fn relative_error(got: &IntMatrix, expected: &[Vec<f64>]) -> f64 {
    let d = expected.len();
    let largest = expected
        .iter()
        .flatten()
        .fold(0.0f64, |m, v| m.max(v.abs()));
    let mut worst = 0.0f64;
    for i in 0..d {
        for j in 0..d {
            worst = worst.max((from_fixed(got.get(i, j)) - expected[i][j]).abs());
        }
    }
    worst / largest
}

/// The masked SPD inverse of `d x d` test matrices against f64, with Paillier cross terms or
/// (`dealt`) a dealer's correlations: the engine's and the key holder's counters.
fn inverse_against_f64(d: usize, seed: u64, dealt: bool) -> (MaskedEngine, KeyholderEnd) {
    let a = spd(d, 4 * d + 10, 0.01, seed);
    let bounds = SpdBounds::new(d, 1.0, 0.01);
    let (_, enc, bound) = share_spd(&a, &bounds);
    let (inverse, engine, keyholder) = pair::run(secret(), FRAC, false, |e, gc| {
        if dealt {
            e.use_local_dealer(gc)?;
        }
        let shared = e.share(gc, &enc, bound)?;
        block_spd::spd_inverse(e, gc, &shared, &bounds)
    })
    .expect("runs");
    let got = reveal(&inverse, &keyholder);
    let error = relative_error(&got, &reference_inverse(&a));
    eprintln!("d = {d}, dealt {dealt}: relative error {error:e}");
    assert!(error < 1e-9, "d = {d}: relative error {error:e}");
    (engine, keyholder)
}

/// The masked SPD inverse matches the f64 inverse to 1e-9 relative to its largest entry, at
/// sizes that exercise uneven splits (tolerance: 46 fractional bits leave about 1e-13 per
/// rounding, amplified by the condition number, here below 1e3).
#[test]
fn spd_inverse_matches_f64() {
    for (d, seed) in [(1usize, 1u64), (2, 2), (5, 3), (13, 4)] {
        inverse_against_f64(d, seed, false);
    }
}

/// With dealt correlations instead of Paillier cross terms the inverse is as accurate (same
/// reference and tolerance), and the key holder decrypts only the shared input and its seed.
#[test]
fn spd_inverse_from_dealt_products_matches_f64() {
    for (d, seed) in [(1usize, 11u64), (5, 12), (13, 13)] {
        let (engine, keyholder) = inverse_against_f64(d, seed, true);
        assert!(engine.stats().products > 0 || d == 1);
        // The shared input (packed) and the seed: no cross term is decrypted.
        assert!(
            keyholder.helper.stats().decryptions <= 1 + d as u64 * d as u64,
            "d = {d}"
        );
    }
}

/// A dot product of weights the aggregator holds with a shared column (the acceptance test's
/// `s^T g` on a packed gradient) is the exact integer dot product, at twice the fractional
/// bits, with Paillier or dealt cross terms; its encryption, made by the key holder from its
/// view and unmasked by the aggregator, decrypts to it; and the key holder's view of the held
/// weights is the public constant (reference: integer arithmetic).
#[test]
fn held_weights_times_a_shared_column_is_exact() {
    let key = secret().public_key();
    let g = int_matrix(7, 1, |i, _| (i as i64 - 3) * (1 << 52) + 977 * i as i64);
    let w = int_matrix(1, 7, |_, j| {
        (j as i64 % 3 - 1) * ((1 << 44) + 31 * j as i64)
    });
    let exact: BigInt = (0..7).map(|j| w.get(0, j) * g.get(j, 0)).sum();
    let enc = encrypt(&g, 56);
    for dealt in [false, true] {
        let ((row, dot, encrypted), _, keyholder) = pair::run(secret(), FRAC, false, |e, gc| {
            if dealt {
                e.use_local_dealer(gc)?;
            }
            let mut column = e.share(gc, &enc, 56)?;
            let mut row = e.held(gc, &w, 46)?;
            let dot = e.product(gc, &mut row, &mut column, 56 + 46 + 3, ProductKind::Exact)?;
            let encrypted = e.encrypted(gc, &dot, Packing::unpacked(key))?;
            Ok((row, dot, encrypted))
        })
        .expect("runs");
        assert_eq!(reveal(&dot, &keyholder).get(0, 0), &exact, "dealt {dealt}");
        assert_eq!(reveal(&row, &keyholder), w, "dealt {dealt}");
        let view = keyholder.helper.view(row.id()).expect("view kept");
        assert!(
            view.data().iter().all(|v| v == &(BigInt::one() << 47)),
            "the held weights' view is the public constant 2^47"
        );
        let plain = secret().decrypt_all(encrypted.blocks()).expect("decrypts");
        assert_eq!(key.decode_signed(&plain[0]), exact, "dealt {dealt}");
    }
}

/// A dealt correlation is used once and in order: the key holder refuses a product before
/// the dealer's seed.
#[test]
fn dealt_product_without_a_seed_is_refused() {
    let x = int_matrix(2, 2, |i, j| (i + 2 * j) as i64);
    let enc = encrypt(&x, 8);
    let error = pair::run(secret(), FRAC, false, |e, gc| {
        let mut a = e.share(gc, &enc, 8)?;
        let mut b = e.share(gc, &enc, 8)?;
        // A dealer the key holder has no seed for: the engine asks, the key holder refuses.
        let dealer = dealt::LocalDealer::new(dealt::fresh_seed(), dealt::fresh_seed());
        e.set_dealer_for_tests(dealt::fresh_seed(), Box::new(dealer));
        e.product(gc, &mut a, &mut b, 20, ProductKind::Truncated)
    })
    .expect_err("refused");
    assert!(
        error.to_string().contains("before the dealer's seed"),
        "{error}"
    );
}

/// The masked Cholesky factor and its inverse match f64 (`L L^T = A`, `L^-1 L = I`).
#[test]
fn cholesky_matches_f64() {
    let d = 9;
    let a = spd(d, 50, 0.02, 7);
    let bounds = SpdBounds::new(d, 1.0, 0.02);
    let (_, enc, bound) = share_spd(&a, &bounds);
    let ((l, m), _, keyholder) = pair::run(secret(), FRAC, false, |e, gc| {
        let shared = e.share(gc, &enc, bound)?;
        let (l, m) = block_spd::cholesky(e, gc, &shared, &bounds, true)?;
        Ok((l, m.expect("asked for")))
    })
    .expect("runs");
    let (l, m) = (reveal(&l, &keyholder), reveal(&m, &keyholder));
    let lf = |i: usize, j: usize| from_fixed(l.get(i, j));
    let mf = |i: usize, j: usize| from_fixed(m.get(i, j));
    for i in 0..d {
        for j in 0..d {
            if j > i {
                assert_eq!(l.get(i, j), &BigInt::zero(), "L is lower triangular");
                assert_eq!(m.get(i, j), &BigInt::zero(), "L^-1 is lower triangular");
            }
            let llt: f64 = (0..d).map(|k| lf(i, k) * lf(j, k)).sum();
            assert!((llt - a[i][j]).abs() < 1e-11, "L L^T at ({i}, {j})");
            let ml: f64 = (0..d).map(|k| mf(i, k) * lf(k, j)).sum();
            let identity = if i == j { 1.0 } else { 0.0 };
            assert!((ml - identity).abs() < 1e-10, "L^-1 L at ({i}, {j})");
        }
    }
}

/// Every masked value the key holder learnt carries a mask at least sigma = 40 bits wider than
/// the public bound declared for it, and the secret it hides is inside that bound. Checked on
/// the transcripts of both servers for a whole SPD inverse (views, cross terms, products,
/// pivot outputs), ending at 1 x 1 pivots and at 4 x 4 blocks inverted in one circuit.
#[test]
fn every_value_the_key_holder_learns_is_masked_forty_bits_past_its_bound() {
    for block in [1, 4] {
        audit_inverse(block);
    }
}

fn audit_inverse(block: usize) {
    let d = 6;
    let a = spd(d, 40, 0.05, 11);
    let bounds = SpdBounds::new(d, 1.0, 0.05);
    let (_, enc, bound) = share_spd(&a, &bounds);
    let (_, engine, keyholder) = pair::run(secret(), FRAC, true, |e, gc| {
        e.set_block(block);
        let shared = e.share(gc, &enc, bound)?;
        block_spd::spd_inverse(e, gc, &shared, &bounds)
    })
    .expect("runs");
    let sent: &[_] = engine.audit();
    let learnt = keyholder.helper.audit();
    assert_eq!(
        sent.len(),
        learnt.len(),
        "one record per transfer on both sides"
    );
    // Side 1: six pivots and four transfers per split at least; side 4: a split of 6 into
    // blocks of 3, two block circuits and the products between them.
    let least = if block == 1 { 3 * d } else { d };
    assert!(sent.len() > least, "{} transfers", sent.len());
    for (k, (mask, view)) in sent.iter().zip(learnt).enumerate() {
        assert_eq!(
            mask.widths, view.widths,
            "transfer {k}: declared widths agree"
        );
        assert!(
            mask.widths.mask >= mask.widths.bound + SIGMA,
            "transfer {k}: mask of {} bits for a bound of {}",
            mask.widths.mask,
            mask.widths.bound
        );
        let limit = BigInt::one() << mask.widths.mask;
        for (r, v) in mask.masks.data().iter().zip(view.values.data()) {
            assert!(
                r >= &BigInt::zero() && r < &limit,
                "transfer {k}: mask in range"
            );
            // The secret the view hides, up to the one unit a truncation may take off.
            let secret = v - r;
            assert!(
                secret.bits() <= u64::from(mask.widths.bound),
                "transfer {k}: a secret of {} bits past its bound of {}",
                secret.bits(),
                mask.widths.bound
            );
        }
    }
}

/// Two collinear columns and a tiny penalty: the smallest eigenvalue is far below the public
/// bound the study assumed, so a pivot falls below its threshold and the inverse stops naming
/// the dependent column, the second (never a wrong inverse).
#[test]
fn a_matrix_below_its_public_eigenvalue_bound_is_refused() {
    let d = 4;
    let mut a = spd(d, 30, 1e-9, 5);
    for i in 0..d {
        a[i][1] = a[i][0];
    }
    for j in 0..d {
        a[1][j] = a[0][j];
    }
    a[1][1] = a[0][0] + 1e-9;
    let bounds = SpdBounds::new(d, 1.0, 1e-6);
    let (_, enc, bound) = share_spd(&a, &bounds);
    let error = pair::run(secret(), FRAC, false, |e, gc| {
        let shared = e.share(gc, &enc, bound)?;
        block_spd::spd_inverse(e, gc, &shared, &bounds)
    })
    .expect_err("refused");
    assert!(
        matches!(error, SecureError::Singular { column: 1, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("column 2"), "{error}");
}

/// A value far past the bound declared for it is refused by the key holder with a named range
/// error (here a matrix of 2^60-unit entries shared as if below 2^10: its masked view cannot
/// lie in the range a 50-bit mask allows).
#[test]
fn a_value_far_past_its_bound_is_refused() {
    let big = int_matrix(2, 2, |_, _| 1 << 60);
    let enc = encrypt(&big, 70);
    let error = pair::run(secret(), FRAC, false, |e: &mut MaskedEngine, gc| {
        let mut xs = e.share(gc, &enc, 10)?;
        let mut ys = e.share(gc, &enc, 70)?;
        e.product(gc, &mut xs, &mut ys, 100, ProductKind::Truncated)
    })
    .expect_err("refused");
    assert!(matches!(error, SecureError::Range(_)), "{error}");
}

/// One-value ciphertexts (a gradient, a lower triangle as the Nodes send them) reach the key
/// holder packed: its views hold the secrets plus masks, and it decrypts one ciphertext per
/// slot-full (slots of `bound + sigma + 2` bits: 10 to a 1024-bit key at a 60-bit bound), not one
/// per entry.
#[test]
fn one_value_ciphertexts_are_shared_packed() {
    use privlogit_protocols::paillier::{EncryptedVector, Fixed};
    let key = secret().public_key();
    let noise = DjnNoise::new(key, &mut rand::rng());
    let bound = 60u32;
    let d = 7;
    let lower_len = d * (d + 1) / 2;
    let value = |i: usize| {
        let v: BigInt = BigInt::from(i as i64 * 0x1234_5678_9abc) - (BigInt::one() << 59);
        Fixed {
            value: if i.is_multiple_of(3) { -v } else { v },
            scale: FRAC,
        }
    };
    let encrypt_unpacked = |values: &[Fixed]| {
        let limit = (num_bigint::BigUint::from(1u8) << bound) - 1u8;
        EncryptedVector::encrypt(key, values, &limit, Packing::unpacked(key), &noise)
            .expect("encrypts")
    };
    let vector: Vec<Fixed> = (0..d).map(value).collect();
    let lower: Vec<Fixed> = (0..lower_len).map(value).collect();
    let (enc_vector, enc_lower) = (encrypt_unpacked(&vector), encrypt_unpacked(&lower));
    let ((column, triangle), _, keyholder) = pair::run(secret(), FRAC, false, |e, gc| {
        let column = e.share_vector(gc, &enc_vector, bound)?;
        let triangle = e.share_lower(gc, &enc_lower, d, bound)?;
        Ok((column, triangle))
    })
    .expect("runs");
    let got = reveal(&column, &keyholder);
    for (i, v) in vector.iter().enumerate() {
        assert_eq!(got.get(i, 0), &v.value, "vector entry {i}");
    }
    let got = reveal(&triangle, &keyholder);
    let mut k = 0;
    for i in 0..d {
        for j in 0..=i {
            assert_eq!(got.get(i, j), &lower[k].value, "lower ({i}, {j})");
            assert_eq!(got.get(j, i), &lower[k].value, "mirrored ({j}, {i})");
            k += 1;
        }
    }
    let slots = (1024 - 2) / (bound + SIGMA + 2) as usize;
    assert_eq!(slots, 10);
    let expected = d.div_ceil(slots) + lower_len.div_ceil(slots);
    assert_eq!(
        keyholder.helper.stats().decryptions,
        expected as u64,
        "{} one-value ciphertexts in {expected} decryptions",
        d + lower_len
    );
}
