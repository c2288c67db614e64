//! What one plaintext iteration costs: a Node's local sums per round, the one-time bound, and
//! whole fits of each optimiser on the breast-cancer demo.
//!
//! Run with: cargo bench --bench optimizers

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ndarray::Array1;
use privlogit::fit::{self, Preparation, Prepared};
use privlogit::protocols::{FitOptions, Optimizer, PartyData};
use privlogit::synthetic::Simulation;

/// One Node with 100,000 rows and 50 features (+ intercept), from a fixed seed.
fn node() -> PartyData {
    let data = Simulation::new(100_000, 50, 1)
        .expect("valid size")
        .dataset();
    let prepared = fit::prepare(vec![data], Preparation::default()).expect("prepares");
    prepared.parties.into_iter().next().expect("one party")
}

fn demo() -> Prepared {
    let dir = env!("CARGO_MANIFEST_DIR");
    let parties = ["hospital_a", "hospital_b", "hospital_c"]
        .iter()
        .map(|h| {
            let path = format!("{dir}/data/demo/{h}.csv");
            privlogit::data::load(path.as_ref(), &privlogit::data::LoadOptions::new("label"))
                .expect("demo data")
                .data
        })
        .collect();
    fit::prepare(
        parties,
        Preparation {
            standardize: true,
            intercept: true,
        },
    )
    .expect("prepares")
}

fn local_sums(c: &mut Criterion) {
    let party = node();
    let beta = Array1::from_elem(party.columns(), 0.01);
    let mut group = c.benchmark_group("node_100k_x_51");
    group.throughput(Throughput::Elements(party.rows() as u64));
    group.sample_size(20);
    group.bench_function("gradient_and_log_likelihood", |b| {
        b.iter(|| party.gradient_sums(&beta))
    });
    group.bench_function("hessian_bound_once", |b| {
        b.iter(|| party.information_bound_sums())
    });
    group.bench_function("newton_information", |b| {
        b.iter(|| party.information_sums(&beta))
    });
    group.finish();
}

fn whole_fits(c: &mut Criterion) {
    let prepared = demo();
    let options = FitOptions::new().lambda(1.0);
    let mut group = c.benchmark_group("fit_breast_cancer_3_parties");
    for optimizer in [
        Optimizer::Newton,
        Optimizer::PrivLogit,
        Optimizer::AcceleratedPrivLogit { memory: 5 },
    ] {
        group.bench_function(optimizer.name(), |b| {
            b.iter(|| fit::fit(&prepared, optimizer, &options, &mut |_| {}).expect("fits"))
        });
    }
    group.finish();
}

criterion_group!(benches, local_sums, whole_fits);
criterion_main!(benches);
