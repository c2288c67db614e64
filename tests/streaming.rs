//! Streamed Nodes give the same fits as the same rows in memory, bit for bit.

use std::sync::Arc;

use privlogit::protocols::rows::{DesignRows, MemoryRows, RowSource};
use privlogit::protocols::{FitOptions, Optimizer, PartyData, PlaintextAggregation};
use privlogit::synthetic::Simulation;

/// Three simulated parts, regenerated block by block on every pass (the random-access path),
/// against the same rows collected into memory (the chunked path): every optimiser's
/// coefficients and iteration counts are identical (`assert_eq!` on f64: no tolerance, because
/// both paths group every floating-point operation by the same fixed row blocks).
#[test]
fn streamed_and_in_memory_fits_are_identical() {
    let sim = Simulation::new(10_000, 12, 3).expect("valid size");
    let parts = sim.parts(3).expect("three parts");
    let streamed: Vec<PartyData> = parts
        .iter()
        .map(|part| {
            let raw: Arc<dyn RowSource> = Arc::new(part.clone());
            PartyData::from_source(Arc::new(DesignRows::new(raw, true)))
        })
        .collect();
    let in_memory: Vec<PartyData> = streamed
        .iter()
        .map(|party| {
            let (x, y) = party.collect().expect("generates");
            PartyData::from_source(Arc::new(MemoryRows::new(x, y)))
        })
        .collect();
    assert!(streamed.iter().all(|p| p.source().random_access()));
    assert!(in_memory.iter().all(|p| !p.source().random_access()));
    for optimizer in [
        Optimizer::Newton,
        Optimizer::PrivLogit,
        Optimizer::AcceleratedPrivLogit { memory: 5 },
    ] {
        let options = FitOptions::new().lambda(1.0);
        let fit = |parties: &[PartyData]| {
            optimizer
                .fit(
                    &mut PlaintextAggregation::new(parties),
                    &options,
                    &mut |_| {},
                )
                .expect("fits")
        };
        let (a, b) = (fit(&streamed), fit(&in_memory));
        assert_eq!(a.iterations, b.iterations, "{optimizer}");
        assert_eq!(a.beta, b.beta, "{optimizer}");
    }
}

/// A part's rows read at random (any block on its own) equal the same rows read in order.
#[test]
fn random_access_reads_match_the_scan() {
    let part = Simulation::new(5_000, 7, 9)
        .expect("valid size")
        .parts(2)
        .expect("two parts")
        .remove(1);
    let (x, y) = PartyData::from_source(Arc::new(part.clone()))
        .collect()
        .expect("scan");
    for (start, len) in [(0, 10), (1000, 1024), (1500, 1000), (2490, 10)] {
        let mut xb = vec![0.0; len * 7];
        let mut yb = vec![0.0; len];
        part.read_rows(start, &mut xb, &mut yb).expect("in range");
        let rows = ndarray::s![start..start + len, ..];
        assert_eq!(xb, x.slice(rows).iter().copied().collect::<Vec<_>>());
        assert_eq!(yb, y.slice(ndarray::s![start..start + len]).to_vec());
    }
    let mut too_far = vec![0.0; 7];
    assert!(part.read_rows(2500, &mut too_far, &mut [0.0]).is_err());
}
