//! Paillier known answers and algebraic laws.

use num_bigint::{BigInt, BigUint};
use privlogit_protocols::paillier::{
    Ciphertext, CrtNoise, DjnNoise, KeyPair, NoisePool, NoiseSource, PublicKey, SecretKey,
    StandardNoise,
};
use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn hex(s: &str) -> BigUint {
    BigUint::parse_bytes(s.trim_start_matches("0x").as_bytes(), 16).expect("hex number")
}

/// The ISO/IEC 18033-6 vector (file header records its provenance).
fn iso_vector() -> std::collections::HashMap<String, BigUint> {
    let text = include_str!("../vectors/iso_iec_18033_6_paillier.txt");
    text.lines()
        .filter(|l| !l.starts_with('#') && l.contains('='))
        .map(|l| {
            let (k, v) = l.split_once('=').expect("key = value");
            (k.trim().to_string(), hex(v.trim()))
        })
        .collect()
}

#[test]
fn iso_iec_18033_6_vector() {
    let v = iso_vector();
    let secret = SecretKey::from_primes(&v["p"], &v["q"]).expect("valid primes");
    let key = secret.public_key();
    assert_eq!(key.bits(), 2048);
    let noise = StandardNoise::new(key);
    let c1 = key.encrypt_with_noise(&v["m1"], &noise.for_r(&v["r1"]));
    let c2 = key.encrypt_with_noise(&v["m2"], &noise.for_r(&v["r2"]));
    assert_eq!(c1.value(key), v["c1"]);
    assert_eq!(c2.value(key), v["c2"]);
    let sum = key.add(&c1, &c2);
    assert_eq!(sum.value(key), v["c1c2"]);
    assert_eq!(secret.decrypt(&sum).expect("decrypts"), v["m1_plus_m2"]);
    assert_eq!(secret.decrypt(&c1).expect("decrypts"), v["m1"]);
    assert_eq!(secret.decrypt_without_crt(&c2).expect("decrypts"), v["m2"]);
}

/// p = 23194683100664294251, q = 11084480205242485763, m = 150, r = 464682464, g = n + 1
/// encrypts to the value below (from the issue; checked with Python's pow in
/// `(1 + m n) * pow(r, n, n * n) % (n * n)` in Python).
#[test]
fn small_known_answer() {
    let p = BigUint::from(23194683100664294251u128);
    let q = BigUint::from(11084480205242485763u128);
    let secret = SecretKey::from_primes_insecure_for_tests(&p, &q).expect("valid primes");
    let key = secret.public_key();
    let noise = StandardNoise::new(key).for_r(&BigUint::from(464682464u32));
    let c = key.encrypt_with_noise(&BigUint::from(150u32), &noise);
    let expected: BigUint =
        "1841450431121342017079889925321805034960817609110249141263892292849164403537"
            .parse()
            .expect("decimal");
    assert_eq!(c.value(key), expected);
    assert_eq!(secret.decrypt(&c).expect("decrypts"), BigUint::from(150u32));
    assert_eq!(
        secret.decrypt_without_crt(&c).expect("decrypts"),
        BigUint::from(150u32)
    );
}

#[test]
fn keys_serialise_and_refuse_garbage() {
    let v = iso_vector();
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let pair = KeyPair {
        secret: SecretKey::from_primes(&v["p"], &v["q"]).expect("valid primes"),
    };
    let key = pair.public_key();
    let back = PublicKey::from_bytes(&key.to_bytes()).expect("round trip");
    assert_eq!(&back, key);
    let secret = SecretKey::import_secret(&pair.secret.export_secret()).expect("round trip");
    assert_eq!(secret.public_key(), key);
    let mut bad = key.to_bytes();
    bad[5] = 9;
    assert!(PublicKey::from_bytes(&bad).is_err());
    assert!(PublicKey::from_bytes(&key.to_bytes()[..20]).is_err());
    let mut long = key.to_bytes();
    long.push(0);
    assert!(PublicKey::from_bytes(&long).is_err());
    // Keys below 2048 bits are refused from outside.
    let small = KeyPair::generate_insecure_for_tests(512, &mut rng);
    assert!(PublicKey::from_bytes(&small.public_key().to_bytes()).is_err());
    assert!(SecretKey::import_secret(&small.secret.export_secret()).is_err());
    // Secret keys with equal, even or composite "primes" are refused, not panicked on.
    let secret_bytes = |p: &BigUint, q: &BigUint| {
        let mut out = b"PLSK".to_vec();
        out.extend_from_slice(&1u16.to_be_bytes());
        for x in [p, q] {
            let bytes = x.to_bytes_be();
            out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
            out.extend_from_slice(&bytes);
        }
        out
    };
    let composite = BigUint::from(3u8) * ((&v["p"] >> 2u32) | BigUint::from(1u8));
    for (p, q) in [
        (v["p"].clone(), v["p"].clone()),
        (&v["p"] + 1u32, v["q"].clone()),
        (composite, v["q"].clone()),
    ] {
        assert!(SecretKey::import_secret(&secret_bytes(&p, &q)).is_err());
    }
    // Debug output never shows secrets, in decimal or hex.
    let shown = format!("{:?} {:?} {:?}", pair.secret, key, pair);
    for x in [&v["p"], &v["q"]] {
        assert!(!shown.contains(&x.to_string()) && !shown.contains(&format!("{x:x}")));
    }
    // Ciphertexts: fixed length, range-checked, units only.
    let c = key.encrypt(&BigUint::from(7u8), &StandardNoise::new(key), &mut rng);
    let bytes = c.to_bytes(key);
    assert_eq!(bytes.len(), key.ciphertext_bytes());
    assert_eq!(Ciphertext::from_bytes(key, &bytes).expect("round trip"), c);
    assert!(Ciphertext::from_bytes(key, &bytes[1..]).is_err());
    assert!(Ciphertext::from_bytes(key, &vec![0u8; bytes.len()]).is_err());
    assert!(Ciphertext::from_bytes(key, &vec![0xffu8; bytes.len()]).is_err());
    for not_a_unit in [key.n().clone(), &v["p"] * 12345u32, v["q"].clone()] {
        assert!(Ciphertext::from_value(key, &not_a_unit).is_err());
    }
    // A DJN base of 1 (deterministic encryption) or a non-unit is refused.
    assert!(DjnNoise::from_base(key, BigUint::from(1u8)).is_err());
    assert!(DjnNoise::from_base(key, key.n().clone()).is_err());
    // Pooled noise is secret: Debug shows only the count.
    let pool = NoisePool::new(StandardNoise::new(key));
    pool.fill(1);
    assert_eq!(format!("{pool:?}"), "NoisePool { available: 1 }");
}

#[test]
fn generated_keys_have_exact_size() {
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    for bits in [256u32, 768, 1024] {
        let pair = KeyPair::generate_insecure_for_tests(bits, &mut rng);
        assert_eq!(pair.public_key().bits(), u64::from(bits));
    }
}

/// A shared 768-bit key for the property tests (generated once, seeded).
fn test_key() -> &'static SecretKey {
    static KEY: std::sync::OnceLock<SecretKey> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        KeyPair::generate_insecure_for_tests(768, &mut ChaCha20Rng::seed_from_u64(5)).secret
    })
}

fn plaintext(seed: u64, key: &PublicKey) -> BigUint {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let words: Vec<u32> = (0..key.bits() / 32 + 1)
        .map(|_| rand::Rng::next_u32(&mut rng))
        .collect();
    BigUint::from_slice(&words) % key.n()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// E(a) E(b) = E(a + b); E(a)^k = E(k a); E(a) (1 + b n) = E(a + b); E(a) / E(b) = E(a - b);
    /// CRT and textbook decryption agree; every noise source decrypts correctly.
    #[test]
    fn homomorphic_laws(sa in any::<u64>(), sb in any::<u64>(), k in any::<i64>(), seed in any::<u64>()) {
        let secret = test_key();
        let key = secret.public_key();
        let n = key.n();
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let (a, b) = (plaintext(sa, key), plaintext(sb, key));
        let standard = StandardNoise::new(key);
        let ea = key.encrypt(&a, &standard, &mut rng);
        let eb = key.encrypt(&b, &CrtNoise::new(secret), &mut rng);
        prop_assert_eq!(secret.decrypt(&ea).expect("decrypts"), a.clone());
        prop_assert_eq!(secret.decrypt_without_crt(&eb).expect("decrypts"), b.clone());
        prop_assert_eq!(secret.decrypt(&key.add(&ea, &eb)).expect("decrypts"), (&a + &b) % n);
        prop_assert_eq!(secret.decrypt(&key.sub(&ea, &eb)).expect("decrypts"), (&a + n - &b) % n);
        prop_assert_eq!(secret.decrypt(&key.add_plain(&ea, &b)).expect("decrypts"), (&a + &b) % n);
        let kb = BigInt::from(k);
        let expected = ((BigInt::from(a.clone()) * &kb) % BigInt::from(n.clone()) + BigInt::from(n.clone()))
            % BigInt::from(n.clone());
        let product = key.mul_scalar(&ea, &kb);
        prop_assert_eq!(BigInt::from(secret.decrypt(&product).expect("decrypts")), expected);
        prop_assert_eq!(secret.decrypt(&product).expect("decrypts"), secret.decrypt_without_crt(&product).expect("decrypts"));
        let fresh = key.rerandomize(&ea, &standard, &mut rng);
        prop_assert_ne!(&fresh, &ea);
        prop_assert_eq!(secret.decrypt(&fresh).expect("decrypts"), a.clone());
        prop_assert_eq!(secret.decrypt(&key.sum([&ea, &eb, &ea])).expect("decrypts"), (&a + &a + &b) % n);
    }
}

/// The parties of one process share one DJN table per key: a second `shared` noise has the
/// first's base (no second table), another key gets its own, encryptions still decrypt and
/// differ, and once every noise of a key is dropped its table goes (a new one has a new base).
#[test]
fn djn_noise_is_shared_within_a_process_while_in_use() {
    let secret = test_key();
    let key = secret.public_key();
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let other = KeyPair::generate_insecure_for_tests(512, &mut rng);
    let first = DjnNoise::shared(key);
    let second = DjnNoise::shared(key);
    assert_eq!(first.base(), second.base());
    assert_ne!(
        DjnNoise::shared(other.secret.public_key()).base(),
        first.base()
    );
    let m = BigUint::from(4242u32);
    let (a, b) = (
        key.encrypt(&m, &first, &mut rng),
        key.encrypt(&m, &second, &mut rng),
    );
    assert_ne!(a, b);
    assert_eq!(secret.decrypt(&a).expect("decrypts"), m);
    assert_eq!(secret.decrypt(&b).expect("decrypts"), m);
    let base = first.base().clone();
    drop((first, second));
    assert_ne!(
        DjnNoise::shared(key).base(),
        &base,
        "a table outlived its noises"
    );
}

#[test]
fn djn_and_pooled_noise_decrypt() {
    let secret = test_key();
    let key = secret.public_key();
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    let djn = DjnNoise::new(key, &mut rng);
    let pool = NoisePool::new(DjnNoise::from_base(key, djn.base().clone()).expect("valid base"));
    pool.fill(5);
    assert_eq!(pool.available(), 5);
    for i in 0..8u32 {
        let m = BigUint::from(1000u32 + i);
        let a = key.encrypt(&m, &djn, &mut rng);
        let b = key.encrypt(&m, &pool, &mut rng);
        assert_ne!(a, b);
        assert_eq!(secret.decrypt(&a).expect("decrypts"), m);
        assert_eq!(secret.decrypt(&b).expect("decrypts"), m);
    }
    assert_eq!(
        pool.available(),
        0,
        "pool used first, then refilled on demand"
    );
    let batch: Vec<BigUint> = (0..20u32).map(BigUint::from).collect();
    let encrypted = key.encrypt_all(&batch, &djn);
    assert_eq!(secret.decrypt_all(&encrypted).expect("decrypts"), batch);
    // DJN noise is an n-th power: it decrypts to 0.
    let zero = key.encrypt(&BigUint::ZERO, &djn, &mut rng);
    assert_eq!(secret.decrypt(&zero).expect("decrypts"), BigUint::ZERO);
    let _ = NoiseSource::public_key(&djn);
}

mod encoded {
    use super::*;
    use ndarray::Array2;
    use privlogit_protocols::paillier::{
        EncryptedMatrix, EncryptedNumber, EncryptedVector, Fixed, Packing, PaillierError,
    };

    /// Values at the edges of the centred range decode exactly; one more is refused.
    #[test]
    fn extremes_of_the_centred_range() {
        let secret = test_key();
        let key = secret.public_key();
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let noise = StandardNoise::new(key);
        let half = BigInt::from(key.half_n().clone());
        let one = BigInt::from(1);
        for v in [
            half.clone(),
            -half.clone(),
            &half - &one,
            -(&half - &one),
            -one.clone(),
        ] {
            let x = Fixed::integer(v.clone());
            let e = EncryptedNumber::encrypt(key, &x, key.half_n(), &noise, &mut rng)
                .expect("in range");
            assert_eq!(e.decrypt(secret).expect("decrypts").value, v);
        }
        let too_big = Fixed::integer(&half + &one);
        let bound = too_big.value.magnitude().clone();
        assert!(matches!(
            EncryptedNumber::encrypt(key, &too_big, &bound, &noise, &mut rng),
            Err(PaillierError::Overflow { .. })
        ));
        // Operations whose bound could leave the range are refused, not wrapped.
        let big = EncryptedNumber::encrypt(
            key,
            &Fixed::integer(&half - &one),
            key.half_n(),
            &noise,
            &mut rng,
        )
        .expect("in range");
        assert!(matches!(
            big.add(key, &big),
            Err(PaillierError::Overflow { .. })
        ));
        assert!(matches!(
            big.mul_plain(key, &Fixed::integer(2)),
            Err(PaillierError::Overflow { .. })
        ));
        assert!(matches!(
            big.rescaled(key, 1),
            Err(PaillierError::Overflow { .. })
        ));
        // Arithmetic that lands exactly on the edges: (floor(n/2) - 1) + 1 and its negative.
        let near = EncryptedNumber::encrypt(
            key,
            &Fixed::integer(&half - &one),
            &(key.half_n() - 1u32),
            &noise,
            &mut rng,
        )
        .expect("in range");
        let edge = near
            .add_plain(key, &Fixed::integer(1))
            .expect("lands on floor(n/2)");
        assert_eq!(edge.decrypt(secret).expect("decrypts").value, half.clone());
        let negative_edge = near
            .neg(key)
            .add_plain(key, &Fixed::integer(-1))
            .expect("lands on -floor(n/2)");
        assert_eq!(
            negative_edge.decrypt(secret).expect("decrypts").value,
            -half.clone()
        );
        // A small one stays fine.
        let small = EncryptedNumber::encrypt(
            key,
            &Fixed::integer(-3),
            &BigUint::from(10u8),
            &noise,
            &mut rng,
        )
        .expect("in range");
        assert_eq!(
            small
                .add(key, &small)
                .expect("fits")
                .decrypt(secret)
                .expect("decrypts")
                .value,
            BigInt::from(-6)
        );
    }

    /// phe's example: E(-1.5) * (-2.25) + E(0.1) = 3.475, with exact float encodings.
    #[test]
    fn fixed_point_arithmetic_like_phe() {
        let secret = test_key();
        let key = secret.public_key();
        let mut rng = ChaCha20Rng::seed_from_u64(8);
        let noise = DjnNoise::new(key, &mut rng);
        let enc = |x: f64, rng: &mut ChaCha20Rng| {
            let f = Fixed::from_f64_exact(x).expect("finite");
            let bound = Fixed::bound_for(4.0, f.scale).expect("finite");
            EncryptedNumber::encrypt(key, &f, &bound, &noise, rng).expect("fits")
        };
        let a = enc(-1.5, &mut rng);
        let b = enc(0.1, &mut rng);
        assert_eq!(a.decrypt_f64(secret).expect("decrypts"), -1.5);
        assert_eq!(b.decrypt_f64(secret).expect("decrypts"), 0.1);
        let product = a
            .mul_plain(key, &Fixed::from_f64_exact(-2.25).expect("finite"))
            .expect("fits");
        let result = product.add(key, &b).expect("fits");
        assert_eq!(result.decrypt_f64(secret).expect("decrypts"), 3.475);
        assert_eq!(
            result
                .sub(key, &b)
                .expect("fits")
                .decrypt_f64(secret)
                .expect("decrypts"),
            3.375
        );
        assert_eq!(
            a.add_plain(key, &Fixed::from_f64(0.25, 2).expect("finite"))
                .expect("fits")
                .decrypt_f64(secret)
                .expect("decrypts"),
            -1.25
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]

        /// Packed vectors with negative slots: sums of three and scalar products decode to the
        /// slot-wise integer results.
        #[test]
        fn packed_sums_with_negative_slots(values in proptest::collection::vec(-1_000_000i64..1_000_000, 1..40), k in -500i64..500) {
            let secret = test_key();
            let key = secret.public_key();
            let noise = StandardNoise::new(key);
            let bound = BigUint::from(1_000_000u32);
            let packing = Packing::for_sums(key, &(&bound * 500u32), 3).expect("fits");
            prop_assert!(packing.slots() > 1);
            let fixed: Vec<Fixed> = values.iter().map(|&v| Fixed::integer(v)).collect();
            let negated: Vec<Fixed> = values.iter().map(|&v| Fixed::integer(-v / 2)).collect();
            let a = EncryptedVector::encrypt(key, &fixed, &bound, packing, &noise).expect("fits");
            let b = EncryptedVector::encrypt(key, &negated, &bound, packing, &noise).expect("fits");
            let sum = EncryptedVector::sum(key, &[&a, &b, &a]).expect("fits");
            let expected: Vec<BigInt> = values.iter().map(|&v| BigInt::from(2 * v - v / 2)).collect();
            let got: Vec<BigInt> = sum.decrypt(secret).expect("decrypts").into_iter().map(|f| f.value).collect();
            prop_assert_eq!(got, expected);
            let scaled = a.mul_scalar(key, &Fixed::integer(k)).expect("fits");
            let got: Vec<BigInt> = scaled.decrypt(secret).expect("decrypts").into_iter().map(|f| f.value).collect();
            let expected: Vec<BigInt> = values.iter().map(|&v| BigInt::from(v * k)).collect();
            prop_assert_eq!(got, expected);
        }
    }

    /// Enc(M) v by multi-exponentiation equals the entrywise product and the plaintext product,
    /// packed and unpacked, with negative entries on both sides.
    #[test]
    fn matrix_vector_products() {
        let secret = test_key();
        let key = secret.public_key();
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let noise = DjnNoise::new(key, &mut rng);
        let (rows, cols, scale) = (9, 6, 16);
        let m = Array2::from_shape_fn((rows, cols), |(i, j)| {
            ((i * 7 + j * 3) % 11) as f64 / 4.0 - 1.25
        });
        let v: Vec<f64> = (0..cols).map(|j| (j as f64 - 2.5) * 0.75).collect();
        let vf: Vec<Fixed> = v
            .iter()
            .map(|&x| Fixed::from_f64(x, scale).expect("finite"))
            .collect();
        let bound = Fixed::bound_for(2.0, scale).expect("finite");
        for packing in [
            Packing::unpacked(key),
            Packing::for_sums(
                key,
                &(&bound * Fixed::bound_for(4.0, scale).expect("finite")),
                cols,
            )
            .expect("fits"),
        ] {
            let em = EncryptedMatrix::encrypt_f64(key, m.view(), scale, 2.0, packing, &noise)
                .expect("fits");
            assert_eq!(em.decrypt_f64(secret).expect("decrypts")[3][4], m[(3, 4)]);
            let fast = em.mul_vector(key, &vf).expect("fits");
            let slow = em.mul_vector_entrywise(key, &vf).expect("fits");
            let fast_values = fast.decrypt_f64(secret).expect("decrypts");
            assert_eq!(fast_values, slow.decrypt_f64(secret).expect("decrypts"));
            for r in 0..rows {
                let expected: f64 = (0..cols).map(|j| m[(r, j)] * v[j]).sum();
                assert!(
                    (fast_values[r] - expected).abs() < 1e-12,
                    "row {r}: {} vs {expected}",
                    fast_values[r]
                );
            }
            // Wire round trip, and refusal of truncated or padded bytes.
            let bytes = em.to_bytes(key);
            assert_eq!(
                EncryptedMatrix::from_bytes(key, &bytes).expect("round trip"),
                em
            );
            assert!(EncryptedMatrix::from_bytes(key, &bytes[..bytes.len() - 1]).is_err());
            let mut padded = bytes.clone();
            padded.push(0);
            assert!(EncryptedMatrix::from_bytes(key, &padded).is_err());
            let vb = fast.to_bytes(key);
            assert_eq!(
                EncryptedVector::from_bytes(key, &vb).expect("round trip"),
                fast
            );
            // The dot product of an unpacked vector equals the plaintext one; packed is refused.
            let column = &em.columns()[2];
            let w: Vec<Fixed> = (0..rows)
                .map(|i| Fixed::from_f64(i as f64 - 4.0, 0).expect("finite"))
                .collect();
            let dot = column.dot(key, &w);
            if packing.slots() == 1 {
                let expected: f64 = (0..rows).map(|i| m[(i, 2)] * (i as f64 - 4.0)).sum();
                assert_eq!(
                    dot.expect("unpacked")
                        .decrypt_f64(secret)
                        .expect("decrypts"),
                    expected
                );
            } else {
                assert!(dot.is_err());
            }
            let mut lying = vb.clone();
            lying[6..14].copy_from_slice(&(1u64 << 40).to_be_bytes());
            assert!(EncryptedVector::from_bytes(key, &lying).is_err());
        }
    }

    /// Packed operations whose slots could overflow are refused.
    #[test]
    fn packed_overflow_is_refused() {
        let secret = test_key();
        let key = secret.public_key();
        let noise = StandardNoise::new(key);
        let packing = Packing::new(key, 20).expect("fits");
        let bound = BigUint::from(300_000u32);
        let values: Vec<Fixed> = (0..5).map(|i| Fixed::integer(i * 1000 - 2000)).collect();
        let v = EncryptedVector::encrypt(key, &values, &bound, packing, &noise).expect("fits");
        // 2^19 - 1 is the largest slot: two of these sum past it.
        assert!(matches!(
            EncryptedVector::sum(key, &[&v, &v]),
            Err(PaillierError::Overflow { .. })
        ));
        assert!(matches!(
            v.mul_scalar(key, &Fixed::integer(2)),
            Err(PaillierError::Overflow { .. })
        ));
        let m = EncryptedMatrix::encrypt_f64(
            key,
            Array2::from_elem((3, 2), 1.0).view(),
            0,
            300_000.0,
            packing,
            &noise,
        )
        .expect("fits");
        let small = [Fixed::integer(1), Fixed::integer(0)];
        assert!(m.mul_vector(key, &small).is_ok());
        let big = [Fixed::integer(1), Fixed::integer(1)];
        assert!(matches!(
            m.mul_vector(key, &big),
            Err(PaillierError::Overflow { .. })
        ));
    }

    /// Wire bytes with mixed column layouts or an absurd scale are refused.
    #[test]
    fn inconsistent_wire_tensors_are_refused() {
        let secret = test_key();
        let key = secret.public_key();
        let noise = StandardNoise::new(key);
        let bound = BigUint::from(1000u32);
        let values: Vec<Fixed> = (0..4).map(Fixed::integer).collect();
        let a = EncryptedVector::encrypt(
            key,
            &values,
            &bound,
            Packing::new(key, 40).expect("fits"),
            &noise,
        )
        .expect("fits");
        let b = EncryptedVector::encrypt(
            key,
            &values,
            &bound,
            Packing::new(key, 41).expect("fits"),
            &noise,
        )
        .expect("fits");
        // A matrix whose two columns were packed differently.
        let mut bytes = b"PLEM".to_vec();
        bytes.extend_from_slice(&1u16.to_be_bytes());
        bytes.extend_from_slice(&4u64.to_be_bytes());
        bytes.extend_from_slice(&2u64.to_be_bytes());
        bytes.extend_from_slice(&a.to_bytes(key)[6..]);
        bytes.extend_from_slice(&b.to_bytes(key)[6..]);
        assert!(matches!(
            EncryptedMatrix::from_bytes(key, &bytes),
            Err(PaillierError::Mismatch(_))
        ));
        // A scale beyond the supported range.
        let mut wire = a.to_bytes(key);
        wire[14..18].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(EncryptedVector::from_bytes(key, &wire).is_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Packing one-value ciphertexts under encryption (`PublicKey::pack`, Horner's rule on
    /// ciphertexts) decrypts to what packing the plaintexts gives (`Packing::pack`), for signed
    /// values filling every slot up to the largest magnitude a slot holds.
    #[test]
    fn packing_under_encryption_matches_plaintext_packing(
        slot_bits in 8u32..200, seed in any::<u64>(), count_seed in any::<usize>(),
    ) {
        use privlogit_protocols::paillier::packing::Packing;
        let secret = test_key();
        let key = secret.public_key();
        let packing = Packing::new(key, slot_bits).expect("fits");
        let count = 1 + count_seed % packing.slots();
        let max = BigInt::from(packing.max_slot(key));
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let values: Vec<BigInt> = (0..count)
            .map(|i| {
                let r = BigInt::from(rand::Rng::next_u64(&mut rng)) % (&max + 1u32);
                let v = if i == 0 { max.clone() } else { r };
                if i % 2 == 1 { -v } else { v }
            })
            .collect();
        let djn = DjnNoise::new(key, &mut rng);
        let singles: Vec<Ciphertext> = values
            .iter()
            .map(|v| key.encrypt(&key.encode_signed(v).expect("in range"), &djn, &mut rng))
            .collect();
        let packed = key.pack(&singles, slot_bits);
        let decrypted = key.decode_signed(&secret.decrypt(&packed).expect("decrypts"));
        prop_assert_eq!(&decrypted, &packing.pack(key, &values).expect("fits"));
        prop_assert_eq!(packing.unpack(&decrypted, count), values);
    }
}
