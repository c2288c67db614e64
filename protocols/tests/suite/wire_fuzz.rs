//! Property tests over everything a party parses off the wire (the CI part of the fuzzing; the
//! cargo-fuzz targets under `fuzz/` run the same entry points for longer; the checkpoint and the
//! key file are read back from disk, and parsed as carefully): arbitrary bytes are
//! refused with an error, never a panic, and well-formed frames round trip.

use std::sync::OnceLock;

use privlogit_circuits::channel::{Channel, MemoryChannel};
use privlogit_protocols::paillier::{EncryptedMatrix, EncryptedVector, KeyPair, PublicKey};
use privlogit_protocols::secure::checkpoint::Checkpoint;
use privlogit_protocols::secure::keyholder::decode_kept;
use privlogit_protocols::secure::masked::matrix::IntMatrix;
use privlogit_protocols::secure::masked::msgs::Request;
use privlogit_protocols::secure::wire::{self, Reader, Step};
use privlogit_protocols::transport;
use proptest::prelude::*;

fn key() -> &'static PublicKey {
    static KEY: OnceLock<PublicKey> = OnceLock::new();
    KEY.get_or_init(|| {
        KeyPair::generate_insecure_for_tests(512, &mut rand::rng())
            .secret
            .public_key()
            .clone()
    })
}

const STEPS: [Step; 6] = [
    Step::Join,
    Step::Welcome,
    Step::Gradient,
    Step::GradientReply,
    Step::Masked,
    Step::Done,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A frame sent is the frame received, for any session, step and payload.
    #[test]
    fn frames_round_trip(session in any::<u64>(), step in 0usize..6, payload in proptest::collection::vec(any::<u8>(), 0..5000)) {
        let (mut a, mut b) = MemoryChannel::pair();
        wire::send(&mut a, session, STEPS[step], &payload).expect("send");
        wire::send(&mut a, session, STEPS[step], &payload[..payload.len() / 2]).expect("send");
        let (got, body) = wire::recv(&mut b, session, &[STEPS[step]]).expect("recv");
        prop_assert_eq!(got, STEPS[step]);
        prop_assert_eq!(body, payload.clone());
        let (_, body) = wire::recv(&mut b, session, &[STEPS[step]]).expect("second");
        prop_assert_eq!(body, payload[..payload.len() / 2].to_vec());
    }

    /// Arbitrary bytes where a frame is expected: an error, not a panic.
    #[test]
    fn arbitrary_frames_are_refused(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let (mut a, mut b) = MemoryChannel::pair();
        a.send(&bytes).expect("send");
        a.flush().expect("flush");
        drop(a);
        let _ = wire::recv(&mut b, 0, &STEPS);
    }

    /// Arbitrary payloads through the field reader and every payload decoder.
    #[test]
    fn arbitrary_payloads_are_refused(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        let mut r = Reader::new(&bytes);
        let _ = r.u64();
        let _ = r.bytes();
        let _ = r.f64s();
        let _ = r.string();
        let _ = Request::decode(key(), &bytes);
        let _ = EncryptedVector::from_bytes(key(), &bytes);
        let _ = EncryptedMatrix::from_bytes(key(), &bytes);
        let _ = PublicKey::from_bytes(&bytes);
        let _ = PublicKey::from_bytes_insecure_for_tests(&bytes);
        let _ = IntMatrix::read(&mut Reader::new(&bytes), 1 << 16, 4096);
        let _ = Checkpoint::from_bytes(&bytes, key());
        let _ = Checkpoint::key_of(&bytes);
        let _ = decode_kept(&bytes);
    }

    /// Arbitrary bytes through the connection's record layer and greeting.
    #[test]
    fn arbitrary_records_are_refused(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        transport::fuzz_records(&bytes);
    }

    /// Valid encodings with one byte changed: refused or decoded, never a panic.
    #[test]
    fn mutated_vectors(values in proptest::collection::vec(-1000i64..1000, 1..20), at in any::<usize>(), flip in 1u8..=255) {
        let fixed: Vec<_> = values
            .iter()
            .map(|&v| privlogit_protocols::paillier::Fixed::from_f64(v as f64, 0).expect("fixed"))
            .collect();
        let bound = num_bigint::BigUint::from(1u32 << 20);
        let packing = privlogit_protocols::paillier::Packing::for_sums(key(), &bound, 3).expect("packing");
        let noise = privlogit_protocols::paillier::DjnNoise::new(key(), &mut rand::rng());
        let v = EncryptedVector::encrypt(key(), &fixed, &bound, packing, &noise).expect("encrypt");
        let mut bytes = v.to_bytes(key());
        let i = at % bytes.len();
        bytes[i] ^= flip;
        let _ = EncryptedVector::from_bytes(key(), &bytes);
    }
}
