//! A secure study stopped mid-way and taken up again from the aggregator's checkpoint and the
//! key holder's kept key ends with the same coefficients, to the last bit, as an uninterrupted
//! study with the same mask seed: every protocol, both linear-algebra methods, plain and
//! accelerated PrivLogit, standardised. (The separate-process version, with a killed Node and
//! TLS, is in `study_cli.rs`.)
//!
//! The study is stopped by the checkpoint writer failing after a given iteration's checkpoint
//! is kept, which stops the aggregator with an error: every party then sees its peer hang up,
//! as when a process dies.

use crate::common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread;

use privlogit::data::partition;
use privlogit::protocols::paillier::{KeyPair, PublicKey, SecretKey};
use privlogit::protocols::secure::SecureError;
use privlogit::protocols::secure::aggregator::Protocol;
use privlogit::protocols::secure::checkpoint::Checkpoint;
use privlogit::protocols::secure::keyholder::{DecryptionBudget, KeyStore};
use privlogit::protocols::secure::node::NodeData;
use privlogit::protocols::secure::solver::LinearAlgebra;
use privlogit::protocols::secure::study_protocol::{self, Continuity, StudyOutcome, StudyPlan};
use privlogit::protocols::{FitOptions, Optimizer};
use privlogit_circuits::channel::MemoryChannel;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// A study's kept key (exported) and budget.
type Kept = (Vec<u8>, DecryptionBudget);

/// A key store in memory, shared between the runs of one test (as the key file is).
#[derive(Clone, Default)]
struct MemoryStore(Arc<Mutex<HashMap<u64, Kept>>>);

impl KeyStore for MemoryStore {
    fn save(
        &mut self,
        session: u64,
        (secret, budget): (&SecretKey, &DecryptionBudget),
    ) -> Result<(), SecureError> {
        let bytes = secret.export_secret();
        self.0
            .lock()
            .expect("store")
            .insert(session, (bytes.to_vec(), budget.clone()));
        Ok(())
    }

    fn load(&mut self, session: u64) -> Result<Option<(SecretKey, DecryptionBudget)>, SecureError> {
        Ok(self
            .0
            .lock()
            .expect("store")
            .get(&session)
            .map(|(bytes, budget)| {
                let secret = SecretKey::import_secret_insecure_for_tests(bytes).expect("kept");
                (secret, budget.clone())
            }))
    }
}

fn nodes() -> Vec<(Vec<String>, NodeData)> {
    let whole = common::load_shared("winequality_red.csv");
    partition::split_contiguous(&whole, 3)
        .expect("split")
        .into_iter()
        .map(|d| (d.names.clone(), NodeData::new(d.x, d.y, true)))
        .collect()
}

/// One run of the study: `from` a checkpoint or not; the checkpoint writer fails (stopping
/// the study) once it has kept the checkpoint after `stop_after` iterations. Returns the
/// outcome (or the error) and the last checkpoint kept.
fn run(
    plan: &StudyPlan,
    store: &MemoryStore,
    from: Option<Checkpoint>,
    stop_after: Option<usize>,
) -> (Result<StudyOutcome, String>, Option<Checkpoint>) {
    let (to_keyholder, keyholder_end) = MemoryChannel::pair();
    let mut kept: Option<Checkpoint> = None;
    let outcome = thread::scope(|scope| {
        let mut store = store.clone();
        let keyholder = scope.spawn(move || {
            let make = |_| {
                Ok(
                    KeyPair::generate_insecure_for_tests(1024, &mut ChaCha20Rng::seed_from_u64(3))
                        .secret,
                )
            };
            study_protocol::run_keyholder(keyholder_end, make, None, &mut store, None)
        });
        let mut node_ends = Vec::new();
        for (names, data) in nodes() {
            let (a, n) = MemoryChannel::pair();
            node_ends.push(a);
            scope.spawn(move || study_protocol::run_node(n, &names, data, 1024, None, None));
        }
        let mut save = |c: &Checkpoint| {
            // Through the bytes, as the file is.
            let key = PublicKey::from_bytes_insecure_for_tests(&c.key).expect("key");
            let back = Checkpoint::from_bytes(&c.to_bytes(&key), &key).expect("reads back");
            let done = back.progress.iterations();
            kept = Some(back);
            if stop_after == Some(done) {
                return Err(std::io::Error::other("the aggregator's machine restarts"));
            }
            Ok(())
        };
        let continuity = Continuity {
            study: [5; 32],
            from,
            save: &mut save,
        };
        let outcome = study_protocol::run_aggregator(
            node_ends,
            to_keyholder,
            plan,
            &mut |_| {},
            Some(continuity),
            None,
        );
        let _ = keyholder.join();
        outcome.map_err(|e| e.to_string())
    });
    (outcome, kept)
}

fn plan(protocol: Protocol, optimizer: Optimizer, method: LinearAlgebra) -> StudyPlan {
    StudyPlan {
        protocol,
        optimizer,
        options: FitOptions::new().lambda(1.0).relative_tolerance(1e-8),
        format: privlogit::protocols::secure::DEFAULT_FORMAT,
        key_bits: 1024,
        parties: 3,
        standardize: true,
        intercept: true,
        linear_algebra: method,
        circuit_block: privlogit_protocols::secure::masked::engine::DEFAULT_BLOCK,
        release: None,
        reveal: privlogit_protocols::secure::aggregator::Reveal::Coefficients,
        glm: privlogit_protocols::Glm::logistic(),
        evaluate: false,
        mask_seed: Some(42),
    }
}

#[test]
fn a_resumed_study_equals_an_uninterrupted_one_bit_for_bit() {
    let accel = Optimizer::AcceleratedPrivLogit { memory: 5 };
    for (protocol, optimizer, method) in [
        (Protocol::Local, Optimizer::PrivLogit, LinearAlgebra::Masked),
        (Protocol::Local, accel, LinearAlgebra::Masked),
        (
            Protocol::Hessian,
            Optimizer::PrivLogit,
            LinearAlgebra::Masked,
        ),
        (Protocol::Hessian, accel, LinearAlgebra::Circuit),
        (Protocol::Newton, Optimizer::Newton, LinearAlgebra::Masked),
    ] {
        let plan = plan(protocol, optimizer, method);
        let store = MemoryStore::default();
        let (whole, _) = run(&plan, &store, None, None);
        let whole = whole.expect("uninterrupted study");
        let stop = (whole.fit.iterations / 2).max(1);
        let (stopped, kept) = run(&plan, &store, None, Some(stop));
        let e = stopped.expect_err("stopped");
        assert!(e.contains("restarts"), "{e}");
        let kept = kept.expect("a checkpoint");
        assert_eq!(kept.progress.iterations(), stop);
        let (resumed, _) = run(&plan, &store, Some(kept), None);
        let resumed = resumed.expect("resumed study");
        let tag = format!("{protocol:?} {optimizer} {method}");
        eprintln!(
            "{tag}: {} iterations, resumed after {stop}, max diff {:e}",
            whole.fit.iterations,
            whole
                .fit
                .beta
                .iter()
                .zip(resumed.fit.beta.iter())
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max)
        );
        assert_eq!(resumed.resumed_from, Some(stop), "{tag}");
        assert_eq!(resumed.fit.iterations, whole.fit.iterations, "{tag}");
        assert_eq!(resumed.fit.beta, whole.fit.beta, "{tag}: bit for bit");
        assert_eq!(resumed.standardization, whole.standardization, "{tag}");
        assert_eq!(resumed.rows, whole.rows, "{tag}");
    }
}

/// A checkpoint is refused by a study with another plan, and by another study.
#[test]
fn a_checkpoint_resumes_only_its_own_study_and_plan() {
    let plan = plan(Protocol::Local, Optimizer::PrivLogit, LinearAlgebra::Masked);
    let store = MemoryStore::default();
    let (_, kept) = run(&plan, &store, None, Some(1));
    let kept = kept.expect("kept");
    let mut other = plan.clone();
    other.options = other.options.clone().lambda(2.0);
    let (e, _) = run(&other, &store, Some(kept.clone()), None);
    let e = e.expect_err("another plan");
    assert!(e.contains("another plan"), "{e}");
    let mut foreign = kept;
    foreign.study = [6; 32];
    let (e, _) = run(&plan, &store, Some(foreign), None);
    let e = e.expect_err("another study");
    assert!(e.contains("another study"), "{e}");
}
