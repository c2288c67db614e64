//! Interoperability with python-paillier (`phe`): each side decrypts what the other encrypted
//! under a key exported by this crate, the encodings of -1.5, 0.1 and -2.25 round-trip, and
//! E(-1.5) * (-2.25) + E(0.1) decrypts to 3.475 on both sides.
//!
//! Needs `python3` with `phe` (`pip install phe`). Without it the test says so and passes,
//! unless PRIVLOGIT_REQUIRE_PHE is set (CI sets it after installing phe), when it fails.

use std::io::Write;
use std::process::{Command, Stdio};

use num_bigint::BigUint;
use privlogit_protocols::paillier::{DjnNoise, EncryptedNumber, Fixed, KeyPair};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde_json::{Value, json};

/// Exact encoding of `x` at a scale rounded up to a multiple of 4 (phe's base-16 exponents).
fn phe_compatible(x: f64) -> Fixed {
    let exact = Fixed::from_f64_exact(x).expect("finite");
    exact
        .rescaled(exact.scale.div_ceil(4) * 4)
        .expect("within range")
}

#[test]
fn python_paillier_interoperates() {
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let pair = KeyPair::generate_insecure_for_tests(1024, &mut rng);
    let secret = &pair.secret;
    let key = pair.public_key();
    let noise = DjnNoise::new(key, &mut rng);
    let values = [("minus_1_5", -1.5), ("point_1", 0.1), ("minus_2_25", -2.25)];

    let mut ours = serde_json::Map::new();
    let mut numbers = Vec::new();
    for (name, x) in values {
        let f = phe_compatible(x);
        let bound = Fixed::bound_for(4.0, f.scale).expect("finite");
        let e = EncryptedNumber::encrypt(key, &f, &bound, &noise, &mut rng).expect("fits");
        let exponent = e.phe_exponent().expect("scale is a multiple of 4");
        ours.insert(
            name.into(),
            json!([e.ciphertext().value(key).to_string(), exponent]),
        );
        numbers.push(e);
    }
    let combined = numbers[0]
        .mul_plain(key, &phe_compatible(-2.25))
        .and_then(|p| p.add(key, &numbers[1]))
        .expect("fits");
    ours.insert(
        "combined".into(),
        json!([
            combined.ciphertext().value(key).to_string(),
            combined.phe_exponent().expect("multiple of 4")
        ]),
    );
    // The key as phe needs it (public n, secret p and q).
    let request = json!({
        "n": key.n().to_string(),
        "p": secret_p(&pair),
        "q": secret_q(&pair),
        "ciphertexts": Value::Object(ours),
    });

    let Some(reply) = run_phe(&request) else {
        return;
    };
    // phe decrypts ours.
    for (name, x) in values {
        assert_eq!(
            reply["decrypted"][name].as_f64(),
            Some(x),
            "phe decrypting our {name}"
        );
    }
    assert_eq!(reply["decrypted"]["combined"].as_f64(), Some(3.475));
    assert_eq!(reply["combined_decrypted_by_phe"].as_f64(), Some(3.475));
    // We decrypt phe's, and compute on them.
    let theirs = |name: &str| {
        let pair = &reply["encrypted"][name];
        let c: BigUint = pair[0].as_str().expect("string").parse().expect("decimal");
        let exponent = pair[1].as_i64().expect("exponent") as i32;
        let e = EncryptedNumber::from_phe(key, &c, exponent).expect("valid phe ciphertext");
        // We know these are the values above, all below 4 in magnitude.
        let bound = Fixed::bound_for(4.0, e.scale()).expect("finite");
        e.assume_bound(key, bound).expect("fits")
    };
    for (name, x) in values {
        assert_eq!(
            theirs(name).decrypt_f64(secret).expect("decrypts"),
            x,
            "decrypting phe's {name}"
        );
    }
    let c: BigUint = reply["combined"][0]
        .as_str()
        .expect("string")
        .parse()
        .expect("decimal");
    let exponent = reply["combined"][1].as_i64().expect("exponent") as i32;
    let phe_combined = EncryptedNumber::from_phe(key, &c, exponent).expect("valid");
    assert_eq!(phe_combined.decrypt_f64(secret).expect("decrypts"), 3.475);
    let mixed = theirs("minus_1_5")
        .mul_plain(key, &Fixed::from_f64_exact(-2.25).expect("finite"))
        .and_then(|p| p.add(key, &theirs("point_1")))
        .expect("fits");
    assert_eq!(mixed.decrypt_f64(secret).expect("decrypts"), 3.475);
}

fn secret_p(pair: &KeyPair) -> String {
    primes(pair).0.to_string()
}

fn secret_q(pair: &KeyPair) -> String {
    primes(pair).1.to_string()
}

/// The primes, through the explicit secret export (the only way out of a secret key).
fn primes(pair: &KeyPair) -> (BigUint, BigUint) {
    let bytes = pair.secret.export_secret();
    let mut rest = &bytes[6..];
    let mut read = || {
        let len = u32::from_be_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
        let value = BigUint::from_bytes_be(&rest[4..4 + len]);
        rest = &rest[4 + len..];
        value
    };
    let p = read();
    let q = read();
    (p, q)
}

/// Runs the phe side; `None` (test passes with a note) when phe is missing and not required.
fn run_phe(request: &Value) -> Option<Value> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/phe_interop.py");
    let required = std::env::var_os("PRIVLOGIT_REQUIRE_PHE").is_some();
    let child = Command::new("python3")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) if !required => {
            eprintln!("skipped: cannot run python3 ({e})");
            return None;
        }
        Err(e) => panic!("cannot run python3: {e}"),
    };
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(request.to_string().as_bytes())
        .expect("write request");
    let out = child.wait_with_output().expect("python3 finishes");
    if out.status.code() == Some(3) && !required {
        eprintln!("skipped: {}", String::from_utf8_lossy(&out.stderr).trim());
        return None;
    }
    assert!(
        out.status.success(),
        "phe side failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("phe side prints JSON"))
}
