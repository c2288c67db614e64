//! Dissertation Figure 5.5: from every coefficient = 2 on simulated data with 50 features,
//! Newton runs away while PrivLogit converges.

use crate::common;

use common::max_abs_diff;
use privlogit::data::partition;
use privlogit::fit::{self, Preparation};
use privlogit::protocols::cholesky::Cholesky;
use privlogit::protocols::{DivergenceReason, FitOptions, Initial, Optimizer, Status};
use privlogit::synthetic::Simulation;

#[test]
fn newton_diverges_from_two_where_privlogit_converges() {
    let data = Simulation::new(20_000, 50, 7)
        .expect("valid size")
        .dataset();
    let parties = partition::split_contiguous(&data, 5).expect("valid split");
    let prepared = fit::prepare(parties, Preparation::default()).expect("prepares");
    let from_two = FitOptions::new()
        .lambda(1.0)
        .initial(Initial::Constant(2.0));

    let newton = fit::fit(&prepared, Optimizer::Newton, &from_two, &mut |_| {}).expect("runs");
    assert_eq!(
        newton.report.status,
        Status::Diverged(DivergenceReason::ObjectiveDecreased)
    );
    assert!(
        newton.report.iterations <= 3,
        "detected early, not looped on"
    );

    // The optimum, from Newton's usual start at zero.
    let truth = fit::fit(
        &prepared,
        Optimizer::Newton,
        &FitOptions::new()
            .relative_tolerance(0.0)
            .gradient_tolerance(Some(1e-9)),
        &mut |_| {},
    )
    .expect("runs");
    assert_eq!(truth.report.status, Status::Converged);
    let optimum = truth.report.beta;

    // From the same start PrivLogit converges: by the paper's rule, and to the optimum when run
    // tight (gradient norm 1e-8).
    let tight_from_two = from_two
        .clone()
        .relative_tolerance(0.0)
        .gradient_tolerance(Some(1e-8));
    for optimizer in [
        Optimizer::PrivLogit,
        Optimizer::AcceleratedPrivLogit { memory: 5 },
    ] {
        let run = fit::fit(&prepared, optimizer, &from_two, &mut |_| {}).expect("runs");
        assert_eq!(run.report.status, Status::Converged, "{optimizer}");
        let run = fit::fit(&prepared, optimizer, &tight_from_two, &mut |_| {}).expect("runs");
        assert_eq!(run.report.status, Status::Converged, "{optimizer}");
        let distance = max_abs_diff(&run.report.beta, &optimum);
        assert!(
            distance < 1e-6,
            "{optimizer} ends {distance:e} from the optimum"
        );
    }

    // The detection is not a false alarm: unchecked Newton steps from 2 move ever further from
    // the optimum (Figure 5.5's "getting worse and worse").
    let mut beta = ndarray::Array1::from_elem(optimum.len(), 2.0);
    let mut distances = vec![(&beta - &optimum).mapv(|d| d * d).sum().sqrt()];
    for _ in 0..3 {
        let mut gradient = -&beta;
        let mut information = ndarray::Array2::eye(beta.len());
        for party in &prepared.parties {
            gradient += &party.gradient(&beta).expect("in memory");
            information += &party.information(&beta).expect("in memory");
        }
        let Some(factor) = Cholesky::factor(&information) else {
            break;
        };
        beta = &beta + &factor.solve(&gradient);
        distances.push((&beta - &optimum).mapv(|d| d * d).sum().sqrt());
    }
    eprintln!("unchecked Newton distances to the optimum from 2: {distances:?}");
    assert!(distances.windows(2).all(|w| w[1] > w[0]), "{distances:?}");
}
