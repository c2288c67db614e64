//! Paillier at 2048-bit n, one thread: encryption (each noise source), decryption, scalar
//! multiplication. Keys and inputs are built outside the timed closures from fixed seeds.
//!
//! Run with: cargo bench -p privlogit-protocols --bench paillier

use criterion::{Criterion, criterion_group, criterion_main};
use num_bigint::{BigInt, BigUint};
use privlogit_protocols::paillier::{
    CrtNoise, DjnNoise, KeyPair, KeySize, NoisePool, StandardNoise,
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
    let pool = NoisePool::new(DjnNoise::from_base(key, djn.base().clone()));
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
    group.bench_function("decrypt_crt", |b| b.iter(|| secret.decrypt(&c1)));
    group.bench_function("decrypt_without_crt", |b| {
        b.iter(|| secret.decrypt_without_crt(&c1))
    });
    group.bench_function("mul_signed_64bit_scalar", |b| {
        b.iter(|| key.mul_scalar(&c1, &scalar))
    });
    group.bench_function("add", |b| b.iter(|| key.add(&c1, &c1)));
    group.finish();
}

criterion_group!(benches, paillier);
criterion_main!(benches);
