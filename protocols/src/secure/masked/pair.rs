//! Both servers in one process over an in-memory channel: the key holder serves masked requests
//! on its own thread while the caller drives the aggregator's engine. For tests and for `privlogit
//! bench linalg`; studies use the full roles ([`crate::secure::keyholder`]).

use std::thread;

use privlogit_circuits::channel::{Channel, MemoryChannel};
use privlogit_circuits::session::{EvaluatorSession, GarblerSession};

use super::engine::MaskedEngine;
use super::helper::MaskedHelper;
use super::msgs::Request;
use crate::paillier::{DjnNoise, SecretKey};
use crate::secure::SecureError;
use crate::secure::gc::{AggregatorGc, KeyholderGc};
use crate::secure::wire::{self, Step};
use crate::transport::Role;

const SESSION: u64 = 0x6d61_736b;

/// What the key holder's thread ends with.
#[derive(Debug)]
pub struct KeyholderEnd {
    /// Its state (views, counters, audit).
    pub helper: MaskedHelper,
    /// AND gates it garbled.
    pub and_gates: u64,
    /// Bytes it sent.
    pub bytes_sent: u64,
}

/// Runs `work` as the aggregator against a key holder holding `secret`, and returns what
/// `work` returned with the key holder's final state. `audit` keeps every masked transfer on
/// both sides.
pub fn run<T>(
    secret: &SecretKey,
    frac: u32,
    audit: bool,
    work: impl FnOnce(&mut MaskedEngine, &mut AggregatorGc<MemoryChannel>) -> Result<T, SecureError>,
) -> Result<(T, MaskedEngine, KeyholderEnd), SecureError> {
    let (a, k) = MemoryChannel::pair();
    let key = secret.public_key().clone();
    thread::scope(|scope| {
        let keyholder = scope.spawn(move || serve(k, secret, audit));
        let outcome = (|| {
            let session = EvaluatorSession::new(a, &mut rand::rng())
                .map_err(|e| SecureError::io(Role::Aggregator, "base OT", e))?;
            let mut gc = AggregatorGc::new(session, &key);
            let mut engine = MaskedEngine::new(&key, SESSION, frac);
            if audit {
                engine = engine.with_audit();
            }
            let value = work(&mut engine, &mut gc)?;
            let ch = gc
                .session
                .channel()
                .map_err(|e| SecureError::io(Role::Aggregator, "ending", e))?;
            wire::send(ch, SESSION, Step::Done, &[])
                .map_err(|e| SecureError::io(Role::Aggregator, "ending", e))?;
            Ok((value, engine))
        })();
        let end = keyholder
            .join()
            .map_err(|_| SecureError::Panicked(Role::KeyHolder))?;
        match (outcome, end) {
            (Ok((value, engine)), Ok(end)) => Ok((value, engine, end)),
            // The aggregator's own error names the cause; the key holder then only saw a
            // hang-up, unless it was the one that failed.
            (Err(e), Ok(_)) => Err(e),
            (Ok(_), Err(e)) => Err(e),
            (Err(e), Err(k)) if e.is_disconnection() => Err(k),
            (Err(e), Err(_)) => Err(e),
        }
    })
}

fn serve(
    channel: MemoryChannel,
    secret: &SecretKey,
    audit: bool,
) -> Result<KeyholderEnd, SecureError> {
    let at = |e| SecureError::io(Role::KeyHolder, "running", e);
    let session = GarblerSession::new(channel, &mut rand::rng()).map_err(at)?;
    let mut party = KeyholderGc {
        session,
        rng: rand::rng(),
    };
    let key = secret.public_key();
    let mut helper = MaskedHelper::new(DjnNoise::new(key, &mut rand::rng()));
    if audit {
        helper = helper.with_audit();
    }
    loop {
        let ch = party.session.channel().map_err(at)?;
        let (step, payload) = wire::recv(ch, SESSION, &[Step::Masked, Step::Done]).map_err(at)?;
        if step == Step::Done {
            let and_gates = party.session.and_gates();
            let bytes_sent = party.session.channel().map_err(at)?.bytes_sent();
            return Ok(KeyholderEnd {
                helper,
                and_gates,
                bytes_sent,
            });
        }
        let request = Request::decode(key, &payload)?;
        helper.handle(request, secret, &mut party, SESSION)?;
    }
}
