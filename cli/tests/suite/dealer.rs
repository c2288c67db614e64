//! The optional dealer of masked products (`privlogit dealer`, `study --dealer-thread`): a
//! study between organizations with a sixth process runs the protocol a one-process study with
//! a dealer thread runs (the same coefficients and round trips under one seed), lands on the
//! plaintext optimum, and a dealer admits only the study file's aggregator.

use std::time::Duration;

use super::common::deployment::{Deployment, coefficients, free_port, json, plaintext_fit};
use super::common::largest_difference;
use super::common::process::{Role, all_succeed, new_identity};

/// The deployment's study file with a `[dealer]` table (the dealer's certificate, listening on
/// a free port); returns that address.
fn with_dealer(d: &Deployment) -> String {
    let fingerprint = new_identity(&d.dir, "dealer");
    let address = format!("127.0.0.1:{}", free_port());
    let mut file = std::fs::read_to_string(&d.study).expect("study file");
    file.push_str(&format!(
        "[dealer]\naddress = \"{address}\"\nfingerprint = \"{fingerprint}\"\n"
    ));
    std::fs::write(&d.study, file).expect("study file");
    address
}

fn dealer(d: &Deployment, identity: &str, extra: &[&str]) -> Role {
    let id = d.identity(identity);
    let mut args = vec!["dealer", "--study", &d.study, "--identity", &id];
    args.extend(extra);
    let mut role = Role::spawn(&args);
    role.wait_for("listening on", Duration::from_secs(30));
    role
}

/// Six processes over mutual TLS (the dealer beside the two servers and three Nodes), after a
/// Node that dialled the dealer by mistake was turned away, against
/// one `privlogit study --dealer-thread`, both with seed 7: the same coefficients (1e-12: the
/// same correlations and masks, so the same rounding), the same round trips by phase, and the
/// plaintext optimum to 1e-6 (the deployments' stopping rule, relative change 1e-6).
#[test]
fn a_dealer_process_runs_what_a_dealer_thread_runs() {
    let d = Deployment::new("dealer");
    let address = with_dealer(&d);
    let mut dealer = dealer(&d, "dealer", &["--seed", "7"]);
    // A Node dialling the dealer as its aggregator: each side refuses the other's certificate
    // by name, and the dealer goes on waiting for the aggregator.
    let impostor = d.node("hospital-a", 'a', &address);
    let (ok, log) = impostor.end(Duration::from_secs(60));
    assert!(!ok && log.contains("is the dealer"), "{log}");
    dealer.wait_for("refused a connection", Duration::from_secs(30));
    let out = d.dir.join("roles.json").display().to_string();
    let (keyholder, kh) = d.keyholder();
    let (aggregator, agg) = d.aggregator(&kh, &["--seed", "7", "--json", "--out", &out]);
    let nodes = d.hospital_nodes(&agg);
    all_succeed(
        [aggregator, keyholder, dealer].into_iter().chain(nodes),
        Duration::from_secs(120),
    );
    let roles = json(&std::fs::read(&out).expect("the aggregator's result"));

    let alone = d.one_process_study(&[
        "--label",
        "label",
        "--standardize",
        "--seed",
        "7",
        "--optimizer",
        "privlogit-accel",
        "--tol",
        "1e-6",
        "--gradient-tol",
        "0",
        "--dealer-thread",
        "--json",
        "--quiet",
    ]);

    let (secure, reference) = (coefficients(&roles), coefficients(&alone));
    let diff = largest_difference(&secure, &reference);
    assert!(
        diff <= 1e-12,
        "dealer process and thread differ by {diff:e}"
    );
    assert_eq!(roles["round_trips"], alone["round_trips"]);
    // The dealt products replaced the cross terms: the key holder decrypted only what it
    // shares (the inputs, the masked gradients), not a cross term a product.
    let products = alone["masked_products"].as_u64().expect("products");
    let decryptions = alone["keyholder_masked_decryptions"]
        .as_u64()
        .expect("decryptions");
    assert!(products > 20, "{products} masked products");
    assert!(
        decryptions < 2 * products,
        "{decryptions} decryptions for {products} products"
    );
    let plain = plaintext_fit(&d.hospitals, "privlogit-accel");
    let off = largest_difference(&secure, &plain);
    assert!(off <= 1e-6, "{off:e} from the plaintext fit");
}
