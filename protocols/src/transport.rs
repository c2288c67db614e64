//! Connections between the parties: TCP, mutual TLS with pinned party certificates (or, asked
//! for by name, plaintext), a greeting that binds each connection to its study and its party,
//! heartbeats and deadlines, and an abort that reaches every party.
//!
//! The crypto cores are synchronous (ARCHITECTURE.md: async code only moves bytes), so a
//! [`Link`] is the same [`ChunkChannel`] as the in-memory pair, over a pipe whose chunks go to
//! a writer task and come from a reader task, both on one shared tokio runtime.
//!
//! - [`identity`]: key pairs, self-signed certificates, fingerprints.
//! - [`roster`]: the study's parties by role, name, certificate and address.
//! - `tls`: rustls configurations that accept exactly the roster's certificates per role.
//! - `link`: the record layer (data, heartbeat, close, abort) and the connection's tasks.

pub mod identity;
mod link;
pub mod roster;
mod tls;

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use privlogit_circuits::channel::ChunkChannel;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio_rustls::{TlsAcceptor, TlsConnector};

pub use identity::{Fingerprint, Identity};
pub use link::{Group, LinkPipe, Timing};
pub use roster::{Member, Role, Roster};

use link::{Kind, MAX_CONTROL, read_record, truncated, write_record};

/// One end of a connection to another party.
pub type Link = ChunkChannel<LinkPipe>;

/// The runtime every connection's tasks run on (one worker: it only moves bytes).
fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("privlogit-net")
            .enable_io()
            .enable_time()
            .build()
            .expect("the network runtime starts")
    })
}

/// How a party's connections are protected.
#[derive(Debug, Clone)]
pub enum Security {
    /// Mutual TLS 1.3: this party's identity, and the roster whose certificates it accepts.
    Tls {
        /// This party's key and certificate.
        identity: Arc<Identity>,
        /// Every party's certificate fingerprint.
        roster: Arc<Roster>,
    },
    /// Plain TCP: anyone on the path reads the traffic, and a party is whoever claims to be it.
    /// Only when asked for by name (`--insecure-plaintext`), and in-process over loopback.
    InsecurePlaintext {
        /// The expected parties by name, if the study names them.
        roster: Option<Arc<Roster>>,
    },
}

/// One party's view of the network: who it is, how it connects, its study, its deadlines, and
/// the group of its connections that stop together.
#[derive(Debug, Clone)]
pub struct Network {
    security: Security,
    role: Role,
    name: String,
    study: [u8; 32],
    timing: Timing,
    group: Arc<Group>,
}

impl Network {
    /// The network of the party `name` in `role`, in the study `study` (see
    /// [`Roster::study_id`]).
    pub fn new(
        security: Security,
        role: Role,
        name: &str,
        study: [u8; 32],
        timing: Timing,
    ) -> Self {
        Self {
            security,
            role,
            name: name.to_string(),
            study,
            timing,
            group: Group::new(),
        }
    }

    /// The study id every connection is bound to.
    pub fn study(&self) -> [u8; 32] {
        self.study
    }

    /// The deadlines.
    pub fn timing(&self) -> Timing {
        self.timing
    }

    /// Stops every connection of this party with `reason`, which each peer receives.
    pub fn abort(&self, reason: &str) {
        self.group.abort(reason);
    }

    /// Why this party's connections stopped, if they did.
    pub fn stopped(&self) -> Option<Arc<str>> {
        self.group.reason()
    }

    /// Connects to `server` at `address`, retrying while nobody listens there yet, for at most
    /// `patience`. A refusal (certificate, study or role) fails at once, with the reason.
    pub fn connect(&self, address: &str, server: &Member, patience: Duration) -> io::Result<Link> {
        let deadline = Instant::now() + patience;
        let stream = runtime().block_on(async {
            loop {
                match TcpStream::connect(address).await {
                    Ok(s) => return Ok(s),
                    Err(e) if Instant::now() >= deadline => {
                        return Err(io::Error::new(
                            e.kind(),
                            format!("cannot connect to {server} at {address}: {e}"),
                        ));
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        })?;
        stream.set_nodelay(true)?;
        let peer_address = stream.peer_addr()?.to_string();
        let label = server.to_string();
        let hello = self.hello();
        let timing = self.timing;
        let own = match &self.security {
            Security::Tls { identity, .. } => Some(identity.fingerprint()),
            Security::InsecurePlaintext { .. } => None,
        };
        let refused = |e: io::Error| {
            let text = e.to_string();
            // A TLS alert carries no reason; the listener logs it. Say what it means here.
            let why = if text.contains("CertificateUnknown") || text.contains("BadCertificate") {
                format!(
                    "it does not accept this party's certificate {} in the role of {} \
                     (not in its study file, or named there for another role)",
                    own.map_or_else(String::new, |f| f.to_string()),
                    self.role
                )
            } else {
                text
            };
            io::Error::new(
                e.kind(),
                format!("{label} at {address} refused this party: {why}"),
            )
        };
        match &self.security {
            Security::Tls { identity, roster } => {
                if server.fingerprint.is_none() && roster.ca.is_none() {
                    return Err(io::Error::other(format!(
                        "the study names no certificate for {server}"
                    )));
                }
                let config = tls::client_config(identity, Arc::clone(roster), server.clone())?;
                let name = rustls::pki_types::ServerName::try_from(tls::SERVER_NAME)
                    .expect("a valid name");
                let stream = runtime()
                    .block_on(async {
                        let mut s = tokio::time::timeout(
                            timing.deadline,
                            TlsConnector::from(config).connect(name, stream),
                        )
                        .await
                        .map_err(|_| timed_out("the TLS handshake"))??;
                        greet(&mut s, &hello, timing).await?;
                        Ok::<_, io::Error>(s)
                    })
                    .map_err(refused)?;
                Ok(self.link(stream, label, peer_address))
            }
            Security::InsecurePlaintext { .. } => {
                let mut stream = stream;
                runtime()
                    .block_on(greet(&mut stream, &hello, timing))
                    .map_err(refused)?;
                Ok(self.link(stream, label, peer_address))
            }
        }
    }

    /// Listens on `address` (`127.0.0.1:0` picks a free port).
    pub fn listen(&self, address: &str) -> io::Result<Listener> {
        let listener = runtime()
            .block_on(TcpListener::bind(address))
            .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {address}: {e}")))?;
        Ok(Listener {
            listener,
            network: self.clone(),
        })
    }

    fn hello(&self) -> Vec<u8> {
        let name = truncated(&self.name, 256);
        let mut body = Vec::with_capacity(35 + name.len());
        body.extend_from_slice(&self.study);
        body.push(self.role.code());
        body.extend_from_slice(&(name.len() as u16).to_le_bytes());
        body.extend_from_slice(name.as_bytes());
        body
    }

    fn link<S>(&self, stream: S, peer: String, peer_address: String) -> Link
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        ChunkChannel::new(link::start(
            stream,
            peer,
            peer_address,
            self.timing,
            Arc::clone(&self.group),
        ))
    }
}

fn timed_out(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("{what} did not finish in time"),
    )
}

/// The connecting side's greeting: hello out, welcome (or the refusal's reason) back.
async fn greet<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    hello: &[u8],
    timing: Timing,
) -> io::Result<()> {
    use tokio::io::AsyncWriteExt as _;
    write_record(s, Kind::Hello, hello).await?;
    s.flush().await?;
    let (kind, body) = tokio::time::timeout(timing.deadline, read_record(s))
        .await
        .map_err(|_| timed_out("the greeting"))??;
    match kind {
        Kind::Welcome => Ok(()),
        Kind::Abort => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            String::from_utf8_lossy(&body).into_owned(),
        )),
        other => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("answered the greeting with a {other:?} record"),
        )),
    }
}

/// A greeting as received.
struct Hello {
    study: [u8; 32],
    role: Role,
    name: String,
}

fn parse_hello(body: &[u8]) -> Result<Hello, String> {
    if body.len() < 35 {
        return Err("a greeting too short".into());
    }
    let study: [u8; 32] = body[..32].try_into().expect("32 bytes");
    let role = Role::from_code(body[32]).ok_or("a greeting with an unknown role")?;
    let len = usize::from(u16::from_le_bytes([body[33], body[34]]));
    let name = body
        .get(35..35 + len)
        .filter(|_| body.len() == 35 + len)
        .ok_or("a greeting whose name length is wrong")?;
    let name = std::str::from_utf8(name).map_err(|_| "a greeting whose name is not UTF-8")?;
    Ok(Hello {
        study,
        role,
        name: name.to_string(),
    })
}

/// Whom a listener waits for.
#[derive(Debug, Clone)]
pub enum Expected {
    /// These parties, each once, returned in this order whatever order they connect in.
    Members(Vec<Member>),
    /// The first `count` parties of `role` that greet, in connection order (plaintext without
    /// a roster: a party is whoever connects).
    Anyone {
        /// Their role.
        role: Role,
        /// How many.
        count: usize,
    },
}

impl Expected {
    fn count(&self) -> usize {
        match self {
            Expected::Members(m) => m.len(),
            Expected::Anyone { count, .. } => *count,
        }
    }

    fn role(&self) -> Role {
        match self {
            Expected::Members(m) => m.first().map_or(Role::Node, |m| m.role),
            Expected::Anyone { role, .. } => *role,
        }
    }
}

/// A listening socket that admits the expected parties and refuses everyone else.
#[derive(Debug)]
pub struct Listener {
    listener: TcpListener,
    network: Network,
}

/// An admitted connection: its stream, who it is, from where.
type Admitted = (Box<dyn Stream>, String, String);

/// A connection handshake's result, from a task of its own.
type Admission = (
    Option<usize>,
    Result<(Box<dyn Stream>, String), String>,
    SocketAddr,
);

trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

impl std::fmt::Debug for dyn Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Stream")
    }
}

impl Listener {
    /// The address actually bound.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Admits every expected party, at most `patience` in all, and closes the listening
    /// socket. Handshakes run side by side, each bounded by the deadline, so a stranger that
    /// stalls delays nobody. A refused connection (unknown certificate, wrong role, another
    /// study, a party already admitted) is told why and reported to `log`; the wait goes on.
    pub fn admit(
        self,
        expected: &Expected,
        patience: Duration,
        log: &mut dyn FnMut(&str),
    ) -> io::Result<Vec<Link>> {
        let network = self.network.clone();
        let listener = self.listener;
        let count = expected.count();
        let mut slots: Vec<Option<Admitted>> = (0..count).map(|_| None).collect();
        let deadline = tokio::time::Instant::now() + patience;
        let acceptor = match &network.security {
            Security::Tls { identity, roster } => Some(TlsAcceptor::from(tls::server_config(
                identity,
                Arc::clone(roster),
                expected.role(),
            )?)),
            Security::InsecurePlaintext { .. } => None,
        };
        runtime().block_on(async {
            let (done_tx, mut done_rx) = tokio::sync::mpsc::channel::<Admission>(16);
            let mut pending = 0usize;
            let claimed = Arc::new(std::sync::Mutex::new(vec![false; count]));
            while slots.iter().any(Option::is_none) {
                tokio::select! {
                    accepted = tokio::time::timeout_at(deadline, listener.accept()) => {
                        let (stream, address) = match accepted {
                            Err(_) => {
                                let missing = describe_missing(expected, &slots);
                                return Err(io::Error::new(
                                    io::ErrorKind::TimedOut,
                                    format!("{missing} did not join within {} s", patience.as_secs()),
                                ));
                            }
                            Ok(r) => r?,
                        };
                        let _ = stream.set_nodelay(true);
                        pending += 1;
                        let task = Handshake {
                            network: network.clone(),
                            expected: expected.clone(),
                            acceptor: acceptor.clone(),
                            claimed: Arc::clone(&claimed),
                        };
                        let done = done_tx.clone();
                        tokio::spawn(async move {
                            let (slot, result) = task.run(stream).await;
                            let _ = done.send((slot, result, address)).await;
                        });
                    }
                    Some((slot, result, address)) = done_rx.recv(), if pending > 0 => {
                        pending -= 1;
                        match (slot, result) {
                            (Some(i), Ok((stream, label))) => {
                                slots[i] = Some((stream, label, address.to_string()));
                            }
                            (_, Err(reason)) => log(&format!("refused a connection from {address}: {reason}")),
                            (None, Ok(_)) => {}
                        }
                    }
                }
            }
            Ok(())
        })?;
        Ok(slots
            .into_iter()
            .map(|s| {
                let (stream, label, address) = s.expect("every slot filled");
                network.link(stream, label, address)
            })
            .collect())
    }
}

fn describe_missing(expected: &Expected, slots: &[Option<Admitted>]) -> String {
    let missing: Vec<String> = slots
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(i, _)| match expected {
            Expected::Members(m) => m[i].to_string(),
            Expected::Anyone { role, .. } => format!("{role} {}", i + 1),
        })
        .collect();
    missing.join(", ")
}

/// One incoming connection's TLS handshake and greeting.
struct Handshake {
    network: Network,
    expected: Expected,
    acceptor: Option<TlsAcceptor>,
    claimed: Arc<std::sync::Mutex<Vec<bool>>>,
}

impl Handshake {
    async fn run(
        self,
        stream: TcpStream,
    ) -> (Option<usize>, Result<(Box<dyn Stream>, String), String>) {
        let deadline = self.network.timing.deadline;
        let outcome = tokio::time::timeout(deadline, async {
            match &self.acceptor {
                Some(acceptor) => {
                    let tls = acceptor
                        .accept(stream)
                        .await
                        .map_err(|e| format!("TLS handshake failed: {e}"))?;
                    let certificates = tls
                        .get_ref()
                        .1
                        .peer_certificates()
                        .ok_or("no client certificate")?;
                    let (end_entity, chain) =
                        certificates.split_first().ok_or("no client certificate")?;
                    let Security::Tls { roster, .. } = &self.network.security else {
                        unreachable!("an acceptor means TLS");
                    };
                    // rustls's verifier accepted it, so this names the party.
                    let member = roster
                        .identify(end_entity, chain, roster::Side::Client)?
                        .clone();
                    self.welcome(Box::new(tls), Some(member)).await
                }
                None => self.welcome(Box::new(stream), None).await,
            }
        })
        .await;
        match outcome {
            Ok(Ok((slot, stream, label))) => (Some(slot), Ok((stream, label))),
            Ok(Err(reason)) => (None, Err(reason)),
            Err(_) => (
                None,
                Err(format!(
                    "the handshake took longer than {} s",
                    deadline.as_secs_f64()
                )),
            ),
        }
    }

    /// Reads the greeting, decides which expected party this is, answers.
    async fn welcome(
        &self,
        mut stream: Box<dyn Stream>,
        certified: Option<Member>,
    ) -> Result<(usize, Box<dyn Stream>, String), String> {
        use tokio::io::AsyncWriteExt as _;
        let (kind, body) = read_record(&mut stream)
            .await
            .map_err(|e| format!("no greeting: {e}"))?;
        let decided = if kind == Kind::Hello {
            parse_hello(&body).and_then(|h| self.decide(&h, certified.as_ref()))
        } else {
            Err(format!("a {kind:?} record instead of a greeting"))
        };
        match decided {
            Ok((slot, label)) => {
                write_record(&mut stream, Kind::Welcome, &[])
                    .await
                    .map_err(|e| e.to_string())?;
                stream.flush().await.map_err(|e| e.to_string())?;
                Ok((slot, stream, label))
            }
            Err(reason) => {
                let body = truncated(&reason, MAX_CONTROL as usize);
                let _ = write_record(&mut stream, Kind::Abort, body.as_bytes()).await;
                let _ = stream.flush().await;
                let _ = stream.shutdown().await;
                Err(reason)
            }
        }
    }

    fn decide(&self, hello: &Hello, certified: Option<&Member>) -> Result<(usize, String), String> {
        if hello.study != self.network.study {
            return Err(format!(
                "{} {:?} belongs to another study (its study id differs)",
                hello.role, hello.name
            ));
        }
        let role = self.expected.role();
        let mut claimed = self.claimed.lock().expect("claimed");
        let slot = match (&self.expected, certified) {
            (Expected::Members(members), Some(c)) => {
                let i = members
                    .iter()
                    .position(|m| m.role == c.role && m.name == c.name)
                    .ok_or_else(|| format!("{c} is not a {role} of this study"))?;
                let m = &members[i];
                if hello.role != m.role || hello.name != m.name {
                    return Err(format!(
                        "the certificate of {m} comes with the claim to be {} {:?}",
                        hello.role, hello.name
                    ));
                }
                i
            }
            (Expected::Members(members), None) => members
                .iter()
                .position(|m| m.role == hello.role && m.name == hello.name)
                .ok_or_else(|| format!("{} {:?} is not expected here", hello.role, hello.name))?,
            (Expected::Anyone { role, .. }, _) => {
                if hello.role != *role {
                    return Err(format!("a {} may not connect as a {role}", hello.role));
                }
                claimed
                    .iter()
                    .position(|c| !c)
                    .ok_or("every place is taken")?
            }
        };
        if claimed[slot] {
            return Err(format!(
                "{} {:?} is connected already",
                hello.role, hello.name
            ));
        }
        claimed[slot] = true;
        let label = match &self.expected {
            Expected::Members(members) => members[slot].to_string(),
            Expected::Anyone {
                role: Role::Node, ..
            } => format!("Node {}", slot + 1),
            Expected::Anyone { role, .. } => format!("the {role}"),
        };
        Ok((slot, label))
    }
}

/// Entry points for fuzzing (`fuzz/`, and the proptests): decode `bytes` as a stream of
/// records, then as a greeting; must return, never panic or allocate beyond the record limits.
#[doc(hidden)]
pub fn fuzz_records(bytes: &[u8]) -> usize {
    let mut reader = bytes;
    let mut records = 0;
    runtime().block_on(async {
        while let Ok((kind, body)) = read_record(&mut reader).await {
            records += 1;
            if kind == Kind::Hello {
                let _ = parse_hello(&body);
            }
        }
    });
    let _ = parse_hello(bytes);
    records
}

/// A connected pair of plaintext links over loopback TCP, each end with its own group (the
/// in-process study and tests): the listening end first.
pub fn loopback_pair() -> io::Result<(Link, Link)> {
    let study = [0u8; 32];
    let plain = Security::InsecurePlaintext { roster: None };
    let server = Network::new(
        plain.clone(),
        Role::Aggregator,
        "aggregator",
        study,
        Timing::default(),
    );
    let client = Network::new(plain, Role::Node, "node", study, Timing::default());
    pair(
        &server,
        &client,
        &Expected::Anyone {
            role: Role::Node,
            count: 1,
        },
        &Member {
            role: Role::Aggregator,
            name: "aggregator".into(),
            address: None,
            fingerprint: None,
        },
    )
}

/// A connected pair of mutual-TLS links over loopback TCP with fresh identities (for measuring
/// what TLS costs).
pub fn tls_loopback_pair() -> io::Result<(Link, Link)> {
    let server_id = Arc::new(Identity::generate("aggregator")?);
    let client_id = Arc::new(Identity::generate("node")?);
    let member = |role, name: &str, id: &Identity| Member {
        role,
        name: name.into(),
        address: None,
        fingerprint: Some(id.fingerprint()),
    };
    let roster = Arc::new(Roster {
        keyholder: member(
            Role::KeyHolder,
            "keyholder",
            &Identity::generate("keyholder")?,
        ),
        aggregator: member(Role::Aggregator, "aggregator", &server_id),
        nodes: vec![member(Role::Node, "node", &client_id)],
        ca: None,
    });
    let study = roster.study_id("");
    let server = Network::new(
        Security::Tls {
            identity: server_id,
            roster: Arc::clone(&roster),
        },
        Role::Aggregator,
        "aggregator",
        study,
        Timing::default(),
    );
    let client = Network::new(
        Security::Tls {
            identity: client_id,
            roster: Arc::clone(&roster),
        },
        Role::Node,
        "node",
        study,
        Timing::default(),
    );
    pair(
        &server,
        &client,
        &Expected::Members(roster.nodes.clone()),
        &roster.aggregator,
    )
}

fn pair(
    server: &Network,
    client: &Network,
    expected: &Expected,
    server_member: &Member,
) -> io::Result<(Link, Link)> {
    let listener = server.listen("127.0.0.1:0")?;
    let address = listener.local_addr()?.to_string();
    let client = client.clone();
    let server_member = server_member.clone();
    let dial = std::thread::spawn(move || {
        client.connect(&address, &server_member, Duration::from_secs(10))
    });
    let mut refused = String::new();
    let mut accepted = listener.admit(expected, Duration::from_secs(10), &mut |m| {
        refused = m.to_string()
    })?;
    let client_end = dial
        .join()
        .map_err(|_| io::Error::other("the connecting thread panicked"))??;
    let server_end = accepted.pop().expect("one");
    let _ = refused;
    Ok((server_end, client_end))
}
#[cfg(test)]
mod tests {
    use super::*;
    use privlogit_circuits::channel::Channel;

    /// Bytes cross a real loopback socket in order, in both directions, over plaintext and
    /// over TLS; when one end is dropped the other's next read says the peer ended.
    #[test]
    fn round_trip_and_close() {
        for make in [loopback_pair, tls_loopback_pair] {
            let (mut server, client) = make().expect("pair");
            let t = std::thread::spawn(move || {
                let mut c = client;
                let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
                c.send(&big).expect("send");
                c.flush().expect("flush");
                let mut reply = [0u8; 6];
                c.recv(&mut reply).expect("reply");
                assert_eq!(&reply, b"thanks");
            });
            let mut got = vec![0u8; 300_000];
            server.recv(&mut got).expect("recv");
            assert!(got.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
            server.send(b"thanks").expect("send");
            server.flush().expect("flush");
            let mut more = [0u8; 1];
            let e = server.recv(&mut more).expect_err("peer closed");
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}");
            assert!(e.to_string().contains("ended the connection"), "{e}");
            // The closing handshake completes at once on both sides.
            let started = Instant::now();
            drop(server);
            t.join().expect("client");
            assert!(started.elapsed() < Duration::from_secs(2));
        }
    }

    struct Study {
        roster: Arc<Roster>,
        ids: Vec<Arc<Identity>>,
    }

    /// A roster of key holder, aggregator and two Nodes with fresh identities, plus a stranger.
    fn study() -> Study {
        let names = ["keyholder", "aggregator", "node-a", "node-b", "stranger"];
        let ids: Vec<Arc<Identity>> = names
            .iter()
            .map(|n| Arc::new(Identity::generate(n).expect("identity")))
            .collect();
        let member = |i: usize, role| Member {
            role,
            name: names[i].into(),
            address: None,
            fingerprint: Some(ids[i].fingerprint()),
        };
        let roster = Arc::new(Roster {
            keyholder: member(0, Role::KeyHolder),
            aggregator: member(1, Role::Aggregator),
            nodes: vec![member(2, Role::Node), member(3, Role::Node)],
            ca: None,
        });
        Study { roster, ids }
    }

    fn network(s: &Study, i: usize, role: Role, name: &str) -> Network {
        Network::new(
            Security::Tls {
                identity: Arc::clone(&s.ids[i]),
                roster: Arc::clone(&s.roster),
            },
            role,
            name,
            s.roster.study_id(""),
            Timing::default(),
        )
    }

    /// Strangers and parties in the wrong role are refused with the reason on both sides, and
    /// the study goes on: the Nodes are admitted in roster order whatever order they connect in.
    #[test]
    fn only_the_roster_gets_in() {
        let s = study();
        let aggregator = network(&s, 1, Role::Aggregator, "aggregator");
        let listener = aggregator.listen("127.0.0.1:0").expect("listen");
        let address = listener.local_addr().expect("address").to_string();
        let server = s.roster.aggregator.clone();
        let dial = |n: Network| {
            let (address, server) = (address.clone(), server.clone());
            std::thread::spawn(move || n.connect(&address, &server, Duration::from_secs(10)))
        };
        let nodes = s.roster.nodes.clone();
        let admitted = std::thread::spawn(move || {
            let mut log = Vec::new();
            let links = listener.admit(
                &Expected::Members(nodes),
                Duration::from_secs(20),
                &mut |m| log.push(m.to_string()),
            );
            (links, log.join("\n"))
        });
        let stranger = dial(network(&s, 4, Role::Node, "node-a"));
        let impostor = dial(network(&s, 0, Role::Node, "node-a"));
        let e = stranger.join().expect("thread").expect_err("refused");
        assert!(e.to_string().contains("refused this party"), "{e}");
        assert!(
            e.to_string().contains(&s.ids[4].fingerprint().to_string()),
            "{e}"
        );
        let e = impostor.join().expect("thread").expect_err("refused");
        assert!(e.to_string().contains("does not accept"), "{e}");
        let b = dial(network(&s, 3, Role::Node, "node-b"));
        std::thread::sleep(Duration::from_millis(200));
        let a = dial(network(&s, 2, Role::Node, "node-a"));
        let (links, log) = admitted.join().expect("admit");
        let mut links = links.expect("admitted");
        assert_eq!(links[0].pipe().peer(), "Node node-a");
        assert_eq!(links[1].pipe().peer(), "Node node-b");
        assert!(log.contains("is not one of this study's parties"), "{log}");
        assert!(log.contains("may not connect as a Node"), "{log}");
        let (mut a, mut b) = (
            a.join().expect("a").expect("a"),
            b.join().expect("b").expect("b"),
        );
        a.send(b"a").expect("send");
        a.flush().expect("flush");
        b.send(b"b").expect("send");
        b.flush().expect("flush");
        let mut got = [0u8; 1];
        links[0].recv(&mut got).expect("from a");
        assert_eq!(&got, b"a");
        links[1].recv(&mut got).expect("from b");
        assert_eq!(&got, b"b");
        // Both sides end at once: each closing handshake completes without waiting.
        let started = Instant::now();
        let server_side = std::thread::spawn(move || drop(links));
        drop((a, b));
        server_side.join().expect("closed");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    /// A party of another study (same certificates, another study id) is refused.
    #[test]
    fn another_study_is_refused() {
        let s = study();
        let aggregator = network(&s, 1, Role::Aggregator, "aggregator");
        let listener = aggregator.listen("127.0.0.1:0").expect("listen");
        let address = listener.local_addr().expect("address").to_string();
        let mut other = network(&s, 2, Role::Node, "node-a");
        other.study = s.roster.study_id("another");
        let server = s.roster.aggregator.clone();
        let t =
            std::thread::spawn(move || other.connect(&address, &server, Duration::from_secs(5)));
        let mut log = String::new();
        let r = listener.admit(
            &Expected::Members(s.roster.nodes[..1].to_vec()),
            Duration::from_secs(2),
            &mut |m| log = m.to_string(),
        );
        assert!(r.is_err());
        let e = t.join().expect("thread").expect_err("refused");
        assert!(e.to_string().contains("another study"), "{e}");
        assert!(log.contains("another study"), "{log}");
    }

    /// A peer that greets and then falls silent (a frozen process) fails the connection
    /// within the deadline, and the abort reaches the party's other connections' peers with
    /// the reason.
    #[test]
    fn a_silent_peer_stops_the_group() {
        let timing = Timing::with_deadline(Duration::from_millis(1500));
        let plain = Security::InsecurePlaintext { roster: None };
        let hub = Network::new(
            plain.clone(),
            Role::Aggregator,
            "aggregator",
            [0; 32],
            timing,
        );
        let listener = hub.listen("127.0.0.1:0").expect("listen");
        let address = listener.local_addr().expect("address").to_string();
        // Node 1: greets by hand over a raw socket, then never sends another byte.
        let frozen = {
            let address = address.clone();
            std::thread::spawn(move || {
                use std::io::{Read as _, Write as _};
                let mut s = std::net::TcpStream::connect(&address).expect("connect");
                let mut hello = vec![Kind::Hello as u8];
                let mut body = vec![0u8; 32];
                body.push(Role::Node.code());
                body.extend_from_slice(&4u16.to_le_bytes());
                body.extend_from_slice(b"cold");
                hello.extend_from_slice(&(body.len() as u32).to_le_bytes());
                hello.extend_from_slice(&body);
                s.write_all(&hello).expect("hello");
                let mut welcome = [0u8; 5];
                s.read_exact(&mut welcome).expect("welcome");
                std::thread::sleep(Duration::from_secs(6));
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        let node = Network::new(plain, Role::Node, "warm", [0; 32], timing);
        let server = Member {
            role: Role::Aggregator,
            name: "aggregator".into(),
            address: None,
            fingerprint: None,
        };
        let warm = std::thread::spawn(move || {
            let mut link = node
                .connect(&address, &server, Duration::from_secs(5))
                .expect("connect");
            let mut b = [0u8; 1];
            let started = Instant::now();
            let e = link.recv(&mut b).expect_err("aborted");
            (e, started.elapsed())
        });
        let mut links = listener
            .admit(
                &Expected::Anyone {
                    role: Role::Node,
                    count: 2,
                },
                Duration::from_secs(5),
                &mut |_| {},
            )
            .expect("admitted");
        let started = Instant::now();
        let mut b = [0u8; 1];
        let e = links[0].recv(&mut b).expect_err("silent");
        let waited = started.elapsed();
        assert!(e.to_string().contains("no sign of life"), "{e}");
        assert!(waited < Duration::from_secs(3), "{waited:?}");
        let (e, _) = warm.join().expect("warm");
        assert!(e.to_string().contains("stopped the study"), "{e}");
        assert!(e.to_string().contains("no sign of life"), "{e}");
        drop(links);
        frozen.join().expect("frozen");
    }
}
