//! Participants as separate processes: the server's side ([`RemoteParticipant`]) and the
//! participant's ([`serve`]), over any byte [`Channel`] - the project's transport (TCP or
//! mutual TLS, heartbeats, deadlines, aborts that reach every party) in the CLI, an in-memory
//! pair in tests.
//!
//! Frames are the secure study's (`protocols::secure::wire`: session id, sequence offset,
//! step, bounded length), with its steps reused: `Join` (participant: name, features, rows),
//! `Welcome` (server: session, the mechanism's settings, its selection seed, the participant's
//! round-robin position, iterations, hidden widths),
//! `Gradient` (server: iteration and parameters) answered by `GradientReply` (the encoded
//! upload), and `Done` (server: the final parameters).

use privlogit_circuits::channel::Channel;
use privlogit_protocols::secure::wire::{self, HANDSHAKE, Reader, Step, Writer};
use rand::RngExt;

use super::download::{self, Replay};
use super::network::Network;
use super::participant::{Settings, Trainer};
use super::server::{Participant, Turn};
use super::sparse::Sparse;
use super::upload::Upload;
use super::{DlError, ParticipantProblem, ServerProblem};

/// A `Gradient` message's kinds: the whole parameter vector, or the uploads since the
/// participant's last visit ([`super::download`]).
const FULL: u64 = 0;
const DELTA: u64 = 1;

/// What the server announces in its welcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Algorithm 2's settings.
    pub settings: Settings,
    /// Iterations `T`.
    pub iterations: u64,
    /// Hidden layer widths.
    pub hidden: Vec<usize>,
    /// The server's learning rate (a participant replays uploads with it).
    pub learning_rate: f64,
}

/// A participant's join, as the server reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Joined {
    /// The name it gave.
    pub name: String,
    /// Its feature count.
    pub features: usize,
}

fn io_err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The server's end of one participant's connection.
pub struct RemoteParticipant<C: Channel> {
    channel: C,
    session: u64,
    joined: Joined,
    dim: usize,
}

impl<C: Channel> std::fmt::Debug for RemoteParticipant<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteParticipant")
            .field("joined", &self.joined)
            .finish_non_exhaustive()
    }
}

/// Reads a participant's join on `channel`; `label` names the connection in errors.
pub fn read_join<C: Channel>(channel: &mut C, label: &str) -> Result<Joined, DlError> {
    let fail = |e: std::io::Error| DlError::Participant {
        participant: label.into(),
        reason: ParticipantProblem::Joining(e),
    };
    let (_, payload) = wire::recv(channel, HANDSHAKE, &[Step::Join]).map_err(fail)?;
    let mut r = Reader::new(&payload);
    let joined = Joined {
        name: r.string().map_err(fail)?,
        features: r.u64().map_err(fail)? as usize,
    };
    r.end().map_err(fail)?;
    Ok(joined)
}

impl<C: Channel> RemoteParticipant<C> {
    /// Welcomes a participant that joined with `joined` to the run of `plan` on `network`, at
    /// `position` of the round robin: refused (with the reason) if its features do not fit
    /// the network.
    pub fn welcome(
        mut channel: C,
        joined: Joined,
        network: &Network,
        plan: &Plan,
        position: usize,
    ) -> Result<Self, DlError> {
        if joined.features != network.inputs() {
            let e = DlError::Participant {
                participant: joined.name.clone(),
                reason: ParticipantProblem::Features {
                    features: joined.features,
                    network: network.inputs(),
                },
            };
            // Told to every participant (this one first of all) while its link is open:
            // dropped first, the link would show them only a hang-up.
            channel.abort(&e.to_string());
            return Err(e);
        }
        let session: u64 = rand::rng().random::<u64>() | 1;
        let s = &plan.settings;
        let mut w = Writer::new()
            .u64(session)
            .f64s(&[
                s.epsilon.unwrap_or(f64::NAN),
                s.q,
                s.upload_ratio,
                s.bound,
                if s.ternary { 1.0 } else { 0.0 },
                // The sparse Gaussian mechanism: 1, its noise multiplier (NaN: none), and the
                // public selection seed; DPSTGD: 0.
                if s.sparse.is_some() { 1.0 } else { 0.0 },
                s.sparse
                    .and_then(|p| p.noise_multiplier)
                    .unwrap_or(f64::NAN),
                plan.learning_rate,
            ])
            .u64(s.sparse.map_or(0, |p| p.seed))
            .u64(position as u64)
            .u64(plan.iterations)
            .u64(plan.hidden.len() as u64);
        for &h in &plan.hidden {
            w = w.u64(h as u64);
        }
        wire::send(&mut channel, HANDSHAKE, Step::Welcome, &w.finish()).map_err(|e| {
            DlError::Participant {
                participant: joined.name.clone(),
                reason: ParticipantProblem::Welcoming(e),
            }
        })?;
        Ok(Self {
            channel,
            session,
            dim: network.parameter_count(),
            joined,
        })
    }

    /// Its join.
    pub fn joined(&self) -> &Joined {
        &self.joined
    }
}

impl<C: Channel> Participant for RemoteParticipant<C> {
    fn name(&self) -> &str {
        &self.joined.name
    }

    fn train(&mut self, turn: Turn<'_>) -> Result<Upload, DlError> {
        let iteration = turn.iteration;
        let fail = |reason: ParticipantProblem| DlError::Participant {
            participant: self.joined.name.clone(),
            reason,
        };
        let link = |step: &'static str| {
            move |source: std::io::Error| {
                fail(ParticipantProblem::Link {
                    iteration,
                    step,
                    source,
                })
            }
        };
        let payload = turn_payload(turn);
        wire::send(&mut self.channel, self.session, Step::Gradient, &payload)
            .map_err(link("sending the parameters"))?;
        let (_, reply) = wire::recv(&mut self.channel, self.session, &[Step::GradientReply])
            .map_err(link("waiting for its upload"))?;
        Upload::decode(&reply, self.dim)
            .map_err(|reason| fail(ParticipantProblem::Upload { iteration, reason }))
    }

    fn finish(&mut self, params: &[f64]) -> Result<(), DlError> {
        let payload = Writer::new().f64s(params).finish();
        wire::send(&mut self.channel, self.session, Step::Done, &payload).map_err(|e| {
            DlError::Participant {
                participant: self.joined.name.clone(),
                reason: ParticipantProblem::Finishing(e),
            }
        })
    }

    fn traffic(&self) -> (u64, u64) {
        (self.channel.bytes_sent(), self.channel.bytes_received())
    }
}

/// A turn as it crosses the wire: the parameters, or the uploads applied since the
/// participant's last one with a checksum of the parameters they lead to.
fn turn_payload(turn: Turn<'_>) -> Vec<u8> {
    match turn.since {
        None => Writer::new()
            .u64(turn.iteration)
            .u64(FULL)
            .f64s(turn.params)
            .finish(),
        Some(entries) => {
            let mut w = Writer::new()
                .u64(turn.iteration)
                .u64(DELTA)
                .u64(download::checksum(turn.params))
                .u64(entries.len() as u64);
            for e in entries {
                w = w.u64(e.iteration).u64(e.position as u64).bytes(&e.bytes);
            }
            w.finish()
        }
    }
}

/// What a participant decides on the server's plan before it trains (its budget): `Err`
/// refuses the run with the reason.
pub type Consent<'a> = dyn FnMut(&Plan, &Network) -> Result<(), DlError> + 'a;

/// A participant's side of a run: joins as `name` with rows `x` and labels `y`, accepts the
/// plan (or refuses it through `consent`), answers every `Gradient` with Algorithm 2's upload,
/// and returns the final parameters and the iterations served.
pub fn serve<C: Channel>(
    channel: &mut C,
    name: &str,
    x: ndarray::Array2<f64>,
    y: ndarray::ArrayView1<'_, f64>,
    rng: Box<dyn crate::dp::noise::CryptoRngBox + Send>,
    consent: &mut Consent<'_>,
    on_step: &mut dyn FnMut(u64),
) -> Result<Vec<f64>, DlError> {
    let fail = |step: &'static str| {
        move |source: std::io::Error| DlError::Server(ServerProblem::Link { step, source })
    };
    let refuse = |problem: ServerProblem| DlError::Server(problem);
    // No row count: under the add/remove relation the sparse mechanism accounts, an exact
    // count would tell D from D +- 1 row.
    let join = Writer::new().string(name).u64(x.ncols() as u64).finish();
    wire::send(channel, HANDSHAKE, Step::Join, &join).map_err(fail("joining"))?;
    let (_, welcome) = wire::recv(channel, HANDSHAKE, &[Step::Welcome])
        .map_err(fail("waiting for the welcome"))?;
    let (session, plan, position) =
        read_welcome(&welcome).map_err(|e| refuse(ServerProblem::Welcome(e)))?;
    let network = Network::new(x.ncols(), &plan.hidden)?;
    consent(&plan, &network)?;
    let dim = network.parameter_count();
    let replay = plan.settings.sparse.map(|s| Replay {
        seed: s.seed,
        dim: network.parameter_count(),
        n: plan.settings.upload_count(network.parameter_count()),
        head: network.head_parameters(),
        rate: plan.learning_rate,
        bound: plan.settings.bound,
    });
    let mut copy: Vec<f64> = Vec::new();
    let mut trainer = Trainer::new(network, plan.settings, x, y, rng)?.at_position(position);
    // The budget was agreed for the plan's iterations: never upload more, nor twice for one.
    let mut served = 0u64;
    loop {
        let (step, payload) = wire::recv(channel, session, &[Step::Gradient, Step::Done])
            .map_err(fail("waiting for parameters"))?;
        let mut r = Reader::new(&payload);
        if step == Step::Done {
            let params = r.f64s().map_err(fail("reading the final parameters"))?;
            r.end().map_err(fail("reading the final parameters"))?;
            if params.len() != dim {
                return Err(refuse(ServerProblem::FinalParameters {
                    got: params.len(),
                    dim,
                }));
            }
            return Ok(params);
        }
        let iteration = r.u64().map_err(fail("reading parameters"))?;
        let kind = r.u64().map_err(fail("reading parameters"))?;
        match kind {
            FULL => {
                copy = r.f64s().map_err(fail("reading parameters"))?;
            }
            DELTA => {
                let (Some(replay), false) = (replay, copy.is_empty()) else {
                    return Err(refuse(ServerProblem::ReplayFirst { iteration }));
                };
                let read = |r: &mut Reader<'_>| -> std::io::Result<_> {
                    let expected = r.u64()?;
                    let count = r.u64()?;
                    if count > 1 << 16 {
                        return Err(std::io::Error::other(format!("{count} uploads to replay")));
                    }
                    let mut entries = Vec::with_capacity(count as usize);
                    for _ in 0..count {
                        let t = r.u64()?;
                        let k = r.u64()? as usize;
                        entries.push((t, k, r.bytes()?.to_vec()));
                    }
                    Ok((expected, entries))
                };
                let (expected, entries) =
                    read(&mut r).map_err(fail("reading the uploads since"))?;
                replay.apply(&mut copy, &entries, expected)?;
            }
            other => {
                return Err(refuse(ServerProblem::UnknownKind {
                    iteration,
                    kind: other,
                }));
            }
        }
        r.end().map_err(fail("reading parameters"))?;
        let params = copy.clone();
        if iteration != served + 1 || iteration > plan.iterations {
            return Err(refuse(ServerProblem::OutOfTurn {
                iteration,
                expected: served + 1,
                agreed: plan.iterations,
            }));
        }
        served = iteration;
        if params.len() != dim || params.iter().any(|v| !v.is_finite()) {
            return Err(refuse(ServerProblem::Parameters {
                iteration,
                got: params.len(),
                dim,
            }));
        }
        let upload = trainer.step(&params, iteration)?;
        wire::send(channel, session, Step::GradientReply, &upload.encode())
            .map_err(|source| refuse(ServerProblem::Reply { iteration, source }))?;
        on_step(iteration);
    }
}

fn read_welcome(payload: &[u8]) -> Result<(u64, Plan, usize), String> {
    let mut r = Reader::new(payload);
    let session = r.u64().map_err(io_err)?;
    let s = r.f64s().map_err(io_err)?;
    if s.len() != 8 {
        return Err(format!("{} settings, expected 8", s.len()));
    }
    if !(s[7].is_finite() && s[7] > 0.0) {
        return Err(format!("a learning rate of {}", s[7]));
    }
    let seed = r.u64().map_err(io_err)?;
    let position = usize::try_from(r.u64().map_err(io_err)?)
        .ok()
        .filter(|&p| p < 1 << 20)
        .ok_or("a round-robin position past 2^20")?;
    let iterations = r.u64().map_err(io_err)?;
    let layers = r.u64().map_err(io_err)?;
    if layers > 16 {
        return Err(format!("{layers} hidden layers (at most 16)"));
    }
    let hidden = (0..layers)
        .map(|_| {
            r.u64().map_err(io_err).and_then(|h| {
                usize::try_from(h)
                    .ok()
                    .filter(|&h| (1..=1 << 16).contains(&h))
                    .ok_or(format!("a hidden width of {h}"))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    r.end().map_err(io_err)?;
    let settings = Settings {
        epsilon: if s[0].is_nan() { None } else { Some(s[0]) },
        q: s[1],
        upload_ratio: s[2],
        bound: s[3],
        ternary: s[4] == 1.0,
        sparse: (s[5] == 1.0).then(|| Sparse {
            noise_multiplier: (!s[6].is_nan()).then_some(s[6]),
            seed,
        }),
    };
    settings.validate().map_err(|e| e.to_string())?;
    Ok((
        session,
        Plan {
            settings,
            iterations,
            hidden,
            learning_rate: s[7],
        },
        position,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array1, Array2};
    use privlogit_circuits::channel::ChunkChannel;
    use rand::SeedableRng;

    fn plan(iterations: u64) -> Plan {
        Plan {
            settings: Settings {
                epsilon: Some(1.0),
                q: 1.0,
                upload_ratio: 0.5,
                bound: 0.1,
                ternary: true,
                sparse: None,
            },
            iterations,
            hidden: vec![3],
            learning_rate: 0.1,
        }
    }

    /// A server that asks for more uploads than the plan agreed (or one twice) is refused by
    /// the participant: its budget covers the plan's iterations only.
    #[test]
    fn a_participant_refuses_uploads_beyond_the_plan() {
        for asked in [[1u64, 2, 3], [1, 1, 2]] {
            let (mut server_end, mut participant_end) = ChunkChannel::pair();
            let worker = std::thread::spawn(move || {
                let x = Array2::from_shape_fn((6, 2), |(i, j)| (i + j) as f64 / 10.0);
                let y = Array1::from_iter((0..6).map(|i| f64::from(i % 2 == 0)));
                serve(
                    &mut participant_end,
                    "p",
                    x,
                    y.view(),
                    Box::new(rand_chacha::ChaCha20Rng::seed_from_u64(1)),
                    &mut |_, _| Ok(()),
                    &mut |_| {},
                )
            });
            let joined = read_join(&mut server_end, "p").expect("join");
            let network = Network::new(2, &[3]).expect("valid");
            let mut remote = RemoteParticipant::welcome(server_end, joined, &network, &plan(2), 0)
                .expect("welcome");
            let params = vec![0.1; network.parameter_count()];
            assert!(
                remote
                    .train(Turn {
                        params: &params,
                        iteration: asked[0],
                        since: None
                    })
                    .is_ok()
            );
            // The second ask: fine if it is iteration 2, refused if it repeats iteration 1.
            let second = remote.train(Turn {
                params: &params,
                iteration: asked[1],
                since: None,
            });
            let third = second.is_ok().then(|| {
                remote.train(Turn {
                    params: &params,
                    iteration: asked[2],
                    since: None,
                })
            });
            let outcome = worker.join().expect("thread");
            let text = format!("{}", outcome.expect_err("refused"));
            assert!(text.contains("out of turn"), "{text}");
            assert!(third.is_none_or(|r| r.is_err()));
        }
    }
}
