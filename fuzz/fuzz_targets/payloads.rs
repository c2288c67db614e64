//! Every payload decoder a party runs on what a peer sent (fields, masked-arithmetic requests,
//! encrypted vectors and matrices, integer replies, public keys) and on what it reads back from
//! its own state (the aggregator's checkpoint, the key holder's key file).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use privlogit_protocols::paillier::{EncryptedMatrix, EncryptedVector, KeyPair, PublicKey};
use privlogit_protocols::secure::checkpoint::Checkpoint;
use privlogit_protocols::secure::keyholder::decode_kept;
use privlogit_protocols::secure::masked::matrix::IntMatrix;
use privlogit_protocols::secure::masked::msgs::Request;
use privlogit_protocols::secure::wire::Reader;

fn key() -> &'static PublicKey {
    static KEY: OnceLock<PublicKey> = OnceLock::new();
    KEY.get_or_init(|| {
        KeyPair::generate_insecure_for_tests(512, &mut rand::rng())
            .secret
            .public_key()
            .clone()
    })
}

fuzz_target!(|data: &[u8]| {
    let mut r = Reader::new(data);
    let _ = r.u64();
    let _ = r.bytes();
    let _ = r.f64s();
    let _ = r.string();
    let _ = Request::decode(key(), data);
    let _ = EncryptedVector::from_bytes(key(), data);
    let _ = EncryptedMatrix::from_bytes(key(), data);
    let _ = PublicKey::from_bytes(data);
    let _ = PublicKey::from_bytes_insecure_for_tests(data);
    let _ = IntMatrix::read(&mut Reader::new(data), 1 << 16, 4096);
    let _ = Checkpoint::from_bytes(data, key());
    let _ = Checkpoint::key_of(data);
    let _ = decode_kept(data);
});
