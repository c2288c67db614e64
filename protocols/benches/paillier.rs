//! Paillier at 2048-bit n: encryption (each noise source), decryption, scalar multiplication,
//! and the encrypted matrix-vector product. Keys and inputs are built outside the timed
//! closures from fixed seeds. The figures in the README are for one thread:
//!
//! Run with: RAYON_NUM_THREADS=1 cargo bench -p privlogit-protocols --bench paillier
//! (PRIVLOGIT_NO_IFMA=1 measures the portable engine.)

use criterion::{Criterion, criterion_group, criterion_main};
use ndarray::Array2;
use num_bigint::{BigInt, BigUint};
use privlogit_protocols::paillier::{
    CrtNoise, DjnNoise, EncryptedMatrix, Fixed, KeyPair, KeySize, NoisePool, Packing, StandardNoise,
};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn paillier(c: &mut Criterion) {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let pair = KeyPair::generate(KeySize::Bits2048, &mut rng);
    let key = pair.public_key();
    let secret = &pair.secret;
    let m = BigUint::from(0x1234_5678_9abc_def0u64);
    let standard = StandardNoise::new(key);
    let djn = DjnNoise::new(key, &mut rng);
    let crt = CrtNoise::new(secret);
    let pool = NoisePool::new(DjnNoise::from_base(key, djn.base().clone()).expect("valid base"));
    let c1 = key.encrypt(&m, &djn, &mut rng);
    let scalar = BigInt::from(-0x7654_3210_fedc_ba98i64);

    let mut group = c.benchmark_group("paillier_2048");
    group.sample_size(20);
    group.bench_function("encrypt_standard_noise", |b| {
        b.iter(|| key.encrypt(&m, &standard, &mut rng))
    });
    group.bench_function("encrypt_djn_noise", |b| {
        b.iter(|| key.encrypt(&m, &djn, &mut rng))
    });
    group.bench_function("encrypt_crt_noise_keyholder", |b| {
        b.iter(|| key.encrypt(&m, &crt, &mut rng))
    });
    group.bench_function("encrypt_from_pool_online", |b| {
        b.iter_batched(
            || pool.fill(1),
            |()| key.encrypt(&m, &pool, &mut rng),
            criterion::BatchSize::SmallInput,
        )
    });
    group.bench_function("decrypt_crt", |b| {
        b.iter(|| secret.decrypt(&c1).expect("decrypts"))
    });
    group.bench_function("decrypt_without_crt", |b| {
        b.iter(|| secret.decrypt_without_crt(&c1).expect("decrypts"))
    });
    group.bench_function("mul_signed_63bit_scalar", |b| {
        b.iter(|| key.mul_scalar(&c1, &scalar))
    });
    group.bench_function("add", |b| b.iter(|| key.add(&c1, &c1)));
    group.finish();

    // Enc(M) v for a 200 x 200 matrix, entries in [-1, 1] and vector entries in [-4, 4] at 32
    // fractional bits: packed columns with multi-exponentiation (the whole product), against
    // one scalar multiplication per entry of an unpacked matrix (one row of 200 entries; the
    // whole product is 200 such rows).
    const N: usize = 200;
    const SCALE: u32 = 32;
    let mut next = {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        }
    };
    let matrix = Array2::from_shape_fn((N, N), |_| next() * 2.0 - 1.0);
    let v: Vec<Fixed> = (0..N)
        .map(|_| Fixed::from_f64(next() * 8.0 - 4.0, SCALE).expect("finite"))
        .collect();
    let bound = Fixed::bound_for(1.0, SCALE).expect("finite");
    let packing = Packing::for_sums(
        key,
        &(&bound * Fixed::bound_for(4.0, SCALE).expect("finite")),
        N,
    )
    .expect("fits");
    let packed =
        EncryptedMatrix::encrypt_f64(key, matrix.view(), SCALE, 1.0, packing, &djn).expect("fits");
    let one_row = EncryptedMatrix::encrypt_f64(
        key,
        matrix.slice(ndarray::s![0..1, ..]),
        SCALE,
        1.0,
        Packing::unpacked(key),
        &djn,
    )
    .expect("fits");
    let mut group = c.benchmark_group("matvec_200");
    group.sample_size(10);
    group.bench_function("packed_multiexp_whole_product", |b| {
        b.iter(|| packed.mul_vector(key, &v).expect("fits"))
    });
    group.bench_function("entrywise_one_row_of_200", |b| {
        b.iter(|| one_row.mul_vector_entrywise(key, &v).expect("fits"))
    });
    group.finish();
}

criterion_group!(benches, paillier);
criterion_main!(benches);
