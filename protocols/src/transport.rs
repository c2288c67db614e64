//! Connections between the parties: TCP, mutual TLS with pinned party certificates (or, asked
//! for by name, plaintext), a greeting that binds each connection to its study and its party,
//! heartbeats and deadlines, and an abort that reaches every party.
//!
//! The crypto cores are synchronous (docs/src/architecture.md: async code only moves bytes), so a
//! [`Link`] is the same [`ChunkChannel`] as the in-memory pair, over a pipe whose chunks go to
//! a writer task and come from a reader task, both on one shared tokio runtime.
//!
//! - [`identity`]: key pairs, self-signed certificates, fingerprints.
//! - [`roster`]: the study's parties by role, name, certificate and address.
//! - `tls`: rustls configurations that accept exactly the roster's certificates per role.
//! - `link`: the record layer (data, heartbeat, close, abort) and the connection's tasks.
//! - [`shape`]: a dialled-in latency and bandwidth, to run a study as if far apart.

pub mod identity;
mod link;
pub mod roster;
pub mod shape;
mod tls;
mod transport_error;

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use privlogit_circuits::channel::ChunkChannel;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::{TlsAcceptor, TlsConnector};

pub use identity::{Fingerprint, Identity};
pub use link::{Group, LinkPipe, Timing};
pub use roster::{Member, Role, Roster};
pub use transport_error::TransportError;

use link::{
    Admission, Kind, LinkPipe as Pipe, MAX_CONTROL, read_record, runtime, stopped, truncated,
    write_record,
};

/// One end of a connection to another party.
pub type Link = ChunkChannel<LinkPipe>;

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

    /// This party's name (its certificate's in the study file, with TLS).
    pub fn name(&self) -> &str {
        &self.name
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

    /// Connects to `server` at `address`, retrying while nobody listens there yet, the
    /// listener is too busy to answer the handshake (a flood of strangers), or the connection
    /// ends before any answer (a TCP forwarder or load balancer whose backend is not listening
    /// yet accepts and then closes or resets), for at most `patience`. A refusal (a TLS alert,
    /// or the listener's abort record with its reason: certificate, study, role, a place
    /// already taken) fails at once; so does an abort of this party's group.
    pub fn connect(&self, address: &str, server: &Member, patience: Duration) -> io::Result<Link> {
        self.connect_reporting(address, server, patience, &mut |_| {})
    }

    /// [`Network::connect`], telling `log` while nobody listens at `address`: after
    /// [`FIRST_WAIT_REPORT`], then every [`WAIT_REPORT_EVERY`] (each at most a quarter of
    /// `patience`), with why and how long is left, so that a wrong address or a server not
    /// started yet shows at once, not after the whole patience in silence.
    pub fn connect_reporting(
        &self,
        address: &str,
        server: &Member,
        patience: Duration,
        log: &mut dyn FnMut(&str),
    ) -> io::Result<Link> {
        let deadline = Instant::now() + patience;
        let mut reports = Reports {
            next: Instant::now() + FIRST_WAIT_REPORT.min(patience / 4),
            every: WAIT_REPORT_EVERY.min(patience / 4),
            log,
        };
        loop {
            let stream = self.dial(address, server, deadline, &mut reports)?;
            match self.handshake(stream, address, server, &mut reports) {
                Err(e) if retryable(e.kind()) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                result => return result,
            }
        }
    }

    /// A TCP connection to `address`, retried until `deadline`; each failed try past the next
    /// report's time is told to `log`.
    fn dial(
        &self,
        address: &str,
        server: &Member,
        deadline: Instant,
        reports: &mut Reports<'_>,
    ) -> io::Result<TcpStream> {
        let attempt = self.timing.deadline;
        let stream = self.unless_stopped(async {
            loop {
                let tried = tokio::time::timeout(attempt, TcpStream::connect(address)).await;
                let e = match tried {
                    Ok(Ok(s)) => return Ok(s),
                    Ok(Err(e)) => e,
                    Err(_) => timed_out("connecting"),
                };
                if Instant::now() >= deadline {
                    return Err(TransportError::Unreachable {
                        peer: server.to_string(),
                        address: address.to_string(),
                        message: format!("cannot connect to {server} at {address}: {e}"),
                    }
                    .into_io(e.kind()));
                }
                let now = Instant::now();
                if now >= reports.next {
                    (reports.log)(&format!(
                        "waiting for {server} at {address} ({e}): trying again for {} s more",
                        deadline.saturating_duration_since(now).as_secs()
                    ));
                    reports.next = now + reports.every;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }

    /// The TLS handshake (unless plaintext) and the greeting on a new connection.
    fn handshake(
        &self,
        stream: TcpStream,
        address: &str,
        server: &Member,
        reports: &mut Reports<'_>,
    ) -> io::Result<Link> {
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
            let certificate =
                text.contains("CertificateUnknown") || text.contains("BadCertificate");
            let why = if certificate {
                format!(
                    "it does not accept this party's certificate {} in the role of {} \
                     (not in its study file, or named there for another role)",
                    own.map_or_else(String::new, |f| f.to_string()),
                    self.role
                )
            } else {
                text
            };
            let (peer, address) = (label.clone(), address.to_string());
            let message = format!("{peer} at {address} refused this party: {why}");
            // The listener's refusal comes as an abort record, its reason in words (the wire
            // carries no code): `Handshake::decide` words another study's refusal so.
            let error = if certificate {
                TransportError::CertificateRefused {
                    peer,
                    address,
                    message,
                }
            } else if e.kind() == io::ErrorKind::PermissionDenied && why.contains(OTHER_STUDY) {
                TransportError::OtherStudy {
                    peer,
                    address,
                    message,
                }
            } else if e.kind() == io::ErrorKind::TimedOut {
                TransportError::TimedOut { message }
            } else if let Some(TransportError::Aborted { lost_peer, .. }) = TransportError::of(&e) {
                TransportError::Aborted {
                    message,
                    lost_peer: lost_peer.clone(),
                }
            } else {
                TransportError::Refused {
                    peer,
                    address,
                    message,
                }
            };
            error.into_io(e.kind())
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
                let handshake = async {
                    let mut s = tokio::time::timeout(
                        timing.deadline,
                        TlsConnector::from(config).connect(name, stream),
                    )
                    .await
                    .map_err(|_| timed_out("the TLS handshake"))??;
                    greet(&mut s, &hello, timing).await?;
                    Ok::<_, io::Error>(s)
                };
                let stream = self
                    .unless_stopped(reporting(handshake, reports, &label, address))
                    .map_err(refused)?;
                Ok(self.link(stream, label, peer_address))
            }
            Security::InsecurePlaintext { .. } => {
                let mut stream = stream;
                let handshake = async {
                    greet(&mut stream, &hello, timing).await?;
                    Ok(())
                };
                self.unless_stopped(reporting(handshake, reports, &label, address))
                    .map_err(refused)?;
                Ok(self.link(stream, label, peer_address))
            }
        }
    }

    /// Runs `work` on the network runtime, given up as soon as this party's group stops (an
    /// abort, a lost peer): no wait outlives the study.
    fn unless_stopped<T>(&self, work: impl Future<Output = io::Result<T>>) -> io::Result<T> {
        let mut stop = self.group.watch();
        runtime().block_on(async {
            tokio::select! {
                biased;
                reason = stopped(&mut stop) => Err(self.group.aborted(&reason)),
                r = work => r,
            }
        })
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
            None,
        ))
    }
}

/// A handshake that ended this way may succeed when tried again: it timed out, or the
/// connection closed or reset before the listener answered (no TLS alert, no abort record).
fn retryable(kind: io::ErrorKind) -> bool {
    matches!(
        kind,
        io::ErrorKind::TimedOut
            | io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
    )
}

fn timed_out(what: &str) -> io::Error {
    TransportError::TimedOut {
        message: format!("{what} did not finish in time"),
    }
    .into_io(io::ErrorKind::TimedOut)
}

/// How a listener's refusal of a party of another study begins its reason.
const OTHER_STUDY: &str = "belongs to another study";

/// How long a dial waits for a server before it first says so (parties started together find
/// each other well within it).
pub const FIRST_WAIT_REPORT: Duration = Duration::from_secs(5);

/// How often a dial that still waits says so again.
pub const WAIT_REPORT_EVERY: Duration = Duration::from_secs(30);

/// When a dial that waits for a server says so, and to whom.
struct Reports<'l> {
    /// When the next report is due (kept across the dials of one connect, so that retried
    /// handshakes do not postpone it).
    next: Instant,
    every: Duration,
    log: &'l mut dyn FnMut(&str),
}

/// `handshake`, telling `reports` while it waits (something accepted the connection but does
/// not answer privlogit's handshake: another program on the port, or a server too busy), so
/// that a wrong address does not look like a hang.
async fn reporting<T>(
    handshake: impl Future<Output = io::Result<T>>,
    reports: &mut Reports<'_>,
    server: &str,
    address: &str,
) -> io::Result<T> {
    let started = Instant::now();
    tokio::pin!(handshake);
    loop {
        tokio::select! {
            r = &mut handshake => return r,
            () = tokio::time::sleep_until(reports.next.into()) => {
                (reports.log)(&format!(
                    "connected to {server} at {address}, but no answer to privlogit's handshake \
                     for {} s (another program on that port, or a server too busy): waiting",
                    started.elapsed().as_secs()
                ));
                reports.next = Instant::now() + reports.every;
            }
        }
    }
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

/// How many connections may be in their handshake at once; a newer one drops the oldest, so
/// idle or slow strangers cannot hold the listener (nor its open files) while real parties wait.
const MAX_HANDSHAKES: usize = 64;

/// The longest pause after a failed `accept()` (too many open files, say) before trying again.
const MAX_ACCEPT_BACKOFF: Duration = Duration::from_secs(1);

/// A handshake's result, from its own task: its task number, the slot and stream it won (or
/// why it was refused), and where it came from.
type Handshaken = (
    u64,
    Result<(usize, Box<dyn Stream>, String), String>,
    SocketAddr,
);

trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

impl std::fmt::Debug for dyn Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Stream")
    }
}

/// A party admitted while the listener still waits for others: its connection is live.
struct Joined {
    pipe: Pipe,
    /// The connection's number in [`Admission`].
    connection: u64,
}

impl Listener {
    /// The address actually bound.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Admits every expected party, at most `patience` in all, and closes the listening
    /// socket. Each admitted connection is live at once (heartbeats both ways), so a party may
    /// join any time within `patience`; one lost before the last has joined gives its place
    /// up (a restarted Node takes it again), and a second connection claiming a place that a
    /// live one holds is refused with the reason. Handshakes run
    /// side by side, each bounded by the deadline and at most [`MAX_HANDSHAKES`] at once, so
    /// strangers that stall delay nobody; `accept()` errors are waited out. A refused
    /// connection (unknown certificate, wrong role, another study) is told why and reported to
    /// `log` (a flood of them in summary); the wait goes on. It ends early if this party's
    /// group stops.
    pub fn admit(
        self,
        expected: &Expected,
        patience: Duration,
        log: &mut dyn FnMut(&str),
    ) -> io::Result<Vec<Link>> {
        let network = self.network.clone();
        let listener = self.listener;
        let count = expected.count();
        let mut slots: Vec<Option<Joined>> = (0..count).map(|_| None).collect();
        let deadline = tokio::time::Instant::now() + patience;
        let acceptor = match &network.security {
            Security::Tls { identity, roster } => Some(TlsAcceptor::from(tls::server_config(
                identity,
                Arc::clone(roster),
                expected.role(),
            )?)),
            Security::InsecurePlaintext { .. } => None,
        };
        let admission = Admission::new();
        let mut log = Throttled::new(log);
        let claimed: Arc<Claims> = Arc::new(Mutex::new(vec![None; count]));
        let result = runtime().block_on(async {
            let (done_tx, mut done_rx) = tokio::sync::mpsc::channel::<Handshaken>(16);
            let mut handshakes: VecDeque<(u64, tokio::task::JoinHandle<()>)> = VecDeque::new();
            let mut stop = network.group.watch();
            let mut tasks = 0u64;
            let mut accept_errors = 0u32;
            let mut retry_at: Option<tokio::time::Instant> = None;
            loop {
                if slots.iter().all(Option::is_some) {
                    match admission.close() {
                        Ok(()) => return Ok(()),
                        Err(lost) => {
                            free(&lost, &mut slots, &claimed, expected, &mut log);
                            continue;
                        }
                    }
                }
                tokio::select! {
                    reason = stopped(&mut stop) => return Err(network.group.aborted(&reason)),
                    () = tokio::time::sleep_until(deadline) => {
                        return Err(TransportError::TimedOut {
                            message: format!(
                                "{} did not join within {} s",
                                describe_missing(expected, &slots),
                                patience.as_secs()
                            ),
                        }
                        .into_io(io::ErrorKind::TimedOut));
                    }
                    () = tokio::time::sleep_until(retry_at.unwrap_or(deadline)), if retry_at.is_some() => {
                        retry_at = None;
                    }
                    accepted = listener.accept(), if retry_at.is_none() => {
                        let (stream, address) = match accepted {
                            Ok(a) => a,
                            Err(e) => {
                                // Transient for a listener (EMFILE, ECONNABORTED): back off, go on.
                                accept_errors += 1;
                                let pause = (Duration::from_millis(25) * 2u32.pow(accept_errors.min(6)))
                                    .min(MAX_ACCEPT_BACKOFF);
                                log.noise(&format!("cannot accept a connection ({e}); trying again in {} ms", pause.as_millis()));
                                retry_at = Some(tokio::time::Instant::now() + pause);
                                continue;
                            }
                        };
                        accept_errors = 0;
                        let _ = stream.set_nodelay(true);
                        if handshakes.len() >= MAX_HANDSHAKES
                            && let Some((evicted, oldest)) = handshakes.pop_front()
                        {
                            oldest.abort();
                            release(&claimed, evicted, &slots);
                            log.noise(&format!(
                                "{MAX_HANDSHAKES} connections were in their handshake at once: \
                                 dropped the oldest"
                            ));
                        }
                        tasks += 1;
                        let task = Handshake {
                            network: network.clone(),
                            expected: expected.clone(),
                            acceptor: acceptor.clone(),
                            claimed: Arc::clone(&claimed),
                            task: tasks,
                        };
                        let done = done_tx.clone();
                        let id = tasks;
                        handshakes.push_back((id, tokio::spawn(async move {
                            let result = task.run(stream).await;
                            let _ = done.send((id, result, address)).await;
                        })));
                    }
                    Some((id, result, address)) = done_rx.recv() => {
                        handshakes.retain(|(task, _)| *task != id);
                        match result {
                            Ok((slot, stream, label)) => {
                                let connection = id;
                                let pipe = link::start(
                                    stream,
                                    label.clone(),
                                    address.to_string(),
                                    network.timing,
                                    Arc::clone(&network.group),
                                    Some((Arc::clone(&admission), connection)),
                                );
                                if let Some(old) = slots[slot].take() {
                                    admission.drop_connection(old.connection);
                                    log.line(&format!(
                                        "{label} connected again from {address}: its earlier \
                                         connection from {} is dropped",
                                        old.pipe.peer_address()
                                    ));
                                    old.pipe.discard();
                                }
                                slots[slot] = Some(Joined { pipe, connection });
                                let joined = slots.iter().filter(|s| s.is_some()).count();
                                let waiting = if joined < count {
                                    format!("; waiting for {}", describe_missing(expected, &slots))
                                } else {
                                    String::new()
                                };
                                log.line(&format!("{label} joined from {address} ({joined} of {count}{waiting})"));
                            }
                            Err(reason) => {
                                release(&claimed, id, &slots);
                                log.noise(&format!("refused a connection from {address}: {reason}"));
                            }
                        }
                    }
                    () = admission.changed() => {
                        let lost = admission.take_lost();
                        free(&lost, &mut slots, &claimed, expected, &mut log);
                    }
                }
            }
        });
        if let Err(e) = &result {
            // The parties admitted so far learn why the study does not start.
            network.group.trigger(&e.to_string());
        }
        log.flush();
        result?;
        Ok(slots
            .into_iter()
            .map(|s| ChunkChannel::new(s.expect("every slot filled").pipe))
            .collect())
    }
}

/// Opens the places of the connections `lost` while admission was open.
fn free(
    lost: &[(u64, String)],
    slots: &mut [Option<Joined>],
    claimed: &Claims,
    expected: &Expected,
    log: &mut Throttled<'_>,
) {
    for (connection, why) in lost {
        let Some(i) = slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|j| j.connection == *connection))
        else {
            continue;
        };
        if let Some(joined) = slots[i].take() {
            joined.pipe.discard();
        }
        claimed.lock().expect("claimed")[i] = None;
        log.line(&format!(
            "{} left before the study started ({why}); its place is open again",
            place(expected, i)
        ));
    }
}

/// Gives up the place handshake `task` claimed, unless a party holds it.
fn release(claimed: &Claims, task: u64, slots: &[Option<Joined>]) {
    let mut claimed = claimed.lock().expect("claimed");
    for (i, c) in claimed.iter_mut().enumerate() {
        if *c == Some(task) && slots[i].is_none() {
            *c = None;
        }
    }
}

/// The party expected in slot `i`.
fn place(expected: &Expected, i: usize) -> String {
    match expected {
        Expected::Members(m) => m[i].to_string(),
        Expected::Anyone { role, .. } => format!("{role} {}", i + 1),
    }
}

fn describe_missing(expected: &Expected, slots: &[Option<Joined>]) -> String {
    let missing: Vec<String> = slots
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(i, _)| place(expected, i))
        .collect();
    missing.join(", ")
}

/// A listener's log: what concerns the study's parties always, what strangers cause (refusals,
/// dropped handshakes, accept errors) at most [`Throttled::BURST`] lines in
/// [`Throttled::WINDOW`], the rest counted, so that a flood cannot flood the operator.
struct Throttled<'a> {
    log: &'a mut dyn FnMut(&str),
    since: Instant,
    lines: usize,
    held_back: usize,
}

impl<'a> Throttled<'a> {
    const BURST: usize = 10;
    const WINDOW: Duration = Duration::from_secs(10);

    fn new(log: &'a mut dyn FnMut(&str)) -> Self {
        Self {
            log,
            since: Instant::now(),
            lines: 0,
            held_back: 0,
        }
    }

    fn line(&mut self, message: &str) {
        (self.log)(message);
    }

    fn noise(&mut self, message: &str) {
        if self.since.elapsed() >= Self::WINDOW {
            self.flush();
            self.since = Instant::now();
            self.lines = 0;
        }
        if self.lines < Self::BURST {
            self.lines += 1;
            (self.log)(message);
        } else {
            self.held_back += 1;
        }
    }

    /// Says how many lines were held back, if any.
    fn flush(&mut self) {
        if self.held_back > 0 {
            (self.log)(&format!(
                "... and {} more refused or dropped connections",
                std::mem::take(&mut self.held_back)
            ));
        }
    }
}

/// Which handshake (or admitted connection's handshake) holds each place: a second claim to a
/// place already held is refused with the reason.
type Claims = Mutex<Vec<Option<u64>>>;

/// Tells the connecting party why it is refused (an abort record), closes, returns the reason.
async fn refuse(stream: &mut Box<dyn Stream>, reason: String) -> String {
    use tokio::io::AsyncWriteExt as _;
    let body = truncated(&reason, MAX_CONTROL as usize);
    let _ = write_record(stream, Kind::Abort, body.as_bytes()).await;
    let _ = stream.flush().await;
    let _ = stream.shutdown().await;
    reason
}

/// One incoming connection's TLS handshake and greeting.
struct Handshake {
    network: Network,
    expected: Expected,
    acceptor: Option<TlsAcceptor>,
    claimed: Arc<Claims>,
    /// This handshake's task number (what it claims places with).
    task: u64,
}

impl Handshake {
    async fn run(self, stream: TcpStream) -> Result<(usize, Box<dyn Stream>, String), String> {
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
                    // rustls's verifier accepted it, so this names the party (a refusal
                    // here still goes out as an abort record, so the party does not retry).
                    let member = roster
                        .identify(end_entity, chain, roster::Side::Client)
                        .cloned();
                    let mut stream: Box<dyn Stream> = Box::new(tls);
                    match member {
                        Ok(member) => self.welcome(stream, Some(member)).await,
                        Err(reason) => Err(refuse(&mut stream, reason).await),
                    }
                }
                None => self.welcome(Box::new(stream), None).await,
            }
        })
        .await;
        outcome.unwrap_or_else(|_| {
            Err(format!(
                "the handshake took longer than {} s",
                deadline.as_secs_f64()
            ))
        })
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
            Err(reason) => Err(refuse(&mut stream, reason).await),
        }
    }

    /// Takes place `i` of the roster's `member` for this handshake, unless another connection
    /// holds it: two processes with one identity (the second is refused with the reason and
    /// the first keeps its place). A party whose connection was lost finds its place open
    /// again once the listener notices (within the heartbeat deadline), so a restarted one
    /// gets in.
    fn claim_member(&self, i: usize, member: &Member) -> Result<usize, String> {
        let mut claimed = self.claimed.lock().expect("claimed");
        match claimed[i] {
            Some(holder) if holder != self.task => Err(format!(
                "{member} is already connected here: a second process with this identity is \
                 refused, and the first keeps its place (if the first has ended, its place \
                 opens again within {} s: start this one again then)",
                self.network.timing.deadline.as_secs_f64()
            )),
            _ => {
                claimed[i] = Some(self.task);
                Ok(i)
            }
        }
    }

    fn decide(&self, hello: &Hello, certified: Option<&Member>) -> Result<(usize, String), String> {
        if hello.study != self.network.study {
            return Err(format!(
                "{} {:?} {OTHER_STUDY} (its study id differs: its study file differs \
                 from this party's in `study_id`, the parties, their addresses or a shared \
                 setting; every party of a study uses the same file)",
                hello.role, hello.name
            ));
        }
        let role = self.expected.role();
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
                self.claim_member(i, m)?
            }
            (Expected::Members(members), None) => {
                let i = members
                    .iter()
                    .position(|m| m.role == hello.role && m.name == hello.name)
                    .ok_or_else(|| {
                        format!("{} {:?} is not expected here", hello.role, hello.name)
                    })?;
                self.claim_member(i, &members[i])?
            }
            (Expected::Anyone { role, .. }, _) => {
                if hello.role != *role {
                    return Err(format!("a {} may not connect as a {role}", hello.role));
                }
                let mut claimed = self.claimed.lock().expect("claimed");
                let i = claimed
                    .iter()
                    .position(Option::is_none)
                    .ok_or("every place is taken")?;
                claimed[i] = Some(self.task);
                i
            }
        };
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
        dealer: None,
        ca: None,
    });
    let study = roster.study_id("", "");
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
            assert!(
                matches!(
                    TransportError::of(&e),
                    Some(TransportError::PeerLost { .. })
                ),
                "{e:?}"
            );
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
            dealer: None,
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
            s.roster.study_id("", ""),
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
            matches!(
                TransportError::of(&e),
                Some(TransportError::CertificateRefused { .. })
            ),
            "{e:?}"
        );
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
        other.study = s.roster.study_id("another", "");
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
        assert!(
            matches!(
                TransportError::of(&e),
                Some(TransportError::OtherStudy { .. })
            ),
            "{e:?}"
        );
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
        assert!(
            matches!(
                TransportError::of(&e),
                Some(TransportError::PeerLost { .. })
            ),
            "{e:?}"
        );
        assert!(waited < Duration::from_secs(3), "{waited:?}");
        let (e, _) = warm.join().expect("warm");
        assert!(e.to_string().contains("stopped the study"), "{e}");
        assert!(
            matches!(TransportError::of(&e), Some(TransportError::Aborted { .. })),
            "{e:?}"
        );
        assert!(e.to_string().contains("no sign of life"), "{e}");
        drop(links);
        frozen.join().expect("frozen");
    }

    /// An admission running on its own thread: its links and its log.
    type Admitting = std::thread::JoinHandle<(io::Result<Vec<Link>>, String)>;

    /// A listener of `s`'s aggregator with deadline `deadline`, admitting the two Nodes on its
    /// own thread: (address, the admission's result and log).
    fn admit_nodes(s: &Study, deadline: Duration) -> (String, Admitting) {
        let mut aggregator = network(s, 1, Role::Aggregator, "aggregator");
        aggregator.timing = Timing::with_deadline(deadline);
        let listener = aggregator.listen("127.0.0.1:0").expect("listen");
        let address = listener.local_addr().expect("address").to_string();
        let nodes = s.roster.nodes.clone();
        let admitted = std::thread::spawn(move || {
            let mut log = Vec::new();
            let links = listener.admit(
                &Expected::Members(nodes),
                Duration::from_secs(60),
                &mut |m| log.push(m.to_string()),
            );
            (links, log.join("\n"))
        });
        (address, admitted)
    }

    fn dial(s: &Study, i: usize, name: &str, address: &str, deadline: Duration) -> Link {
        let mut n = network(s, i, Role::Node, name);
        n.timing = Timing::with_deadline(deadline);
        n.connect(address, &s.roster.aggregator, Duration::from_secs(10))
            .expect("admitted")
    }

    /// Each link of `links` carries a byte from its Node (`a`, `b`) to the listener.
    fn exchange(links: &mut [Link], nodes: &mut [&mut Link]) {
        for (i, node) in nodes.iter_mut().enumerate() {
            node.send(&[i as u8]).expect("send");
            node.flush().expect("flush");
        }
        for (i, link) in links.iter_mut().enumerate() {
            let mut got = [9u8; 1];
            link.recv(&mut got).expect("received");
            assert_eq!(got[0], i as u8);
        }
    }

    /// A Node admitted long before the last one (here 4 deadlines) stays connected: the
    /// listener heartbeats on its connection from admission on, and the study starts.
    #[test]
    fn a_node_may_join_long_before_the_others() {
        let s = study();
        let deadline = Duration::from_millis(600);
        let (address, admitted) = admit_nodes(&s, deadline);
        let mut a = dial(&s, 2, "node-a", &address, deadline);
        std::thread::sleep(4 * deadline);
        let mut b = dial(&s, 3, "node-b", &address, deadline);
        let (links, log) = admitted.join().expect("admit");
        let mut links = links.expect("both admitted");
        assert!(log.contains("Node node-a joined from"), "{log}");
        assert!(log.contains("waiting for Node node-b"), "{log}");
        exchange(&mut links, &mut [&mut a, &mut b]);
    }

    /// A second process with a Node's identity is refused with the reason while the first
    /// holds its place, and the first keeps it (the study used to hang without saying why);
    /// a Node that leaves gives its place up to its return; the study then runs on the first
    /// connections.
    #[test]
    fn a_second_process_with_one_identity_is_refused_and_a_leaver_returns() {
        let s = study();
        let deadline = Duration::from_secs(2);
        let (address, admitted) = admit_nodes(&s, deadline);
        // node-b joins, then leaves (its process ended); its place opens again.
        let gone = dial(&s, 3, "node-b", &address, deadline);
        std::thread::sleep(Duration::from_millis(300));
        drop(gone);
        std::thread::sleep(Duration::from_millis(300));
        let mut a = dial(&s, 2, "node-a", &address, deadline);
        let mut twin = network(&s, 2, Role::Node, "node-a");
        twin.timing = Timing::with_deadline(deadline);
        let started = Instant::now();
        let e = twin
            .connect(&address, &s.roster.aggregator, Duration::from_secs(10))
            .expect_err("a second node-a");
        assert!(e.to_string().contains("already connected here"), "{e}");
        assert!(started.elapsed() < deadline, "refused at once");
        let mut b = dial(&s, 3, "node-b", &address, deadline);
        let (links, log) = admitted.join().expect("admit");
        let mut links = links.expect("both admitted");
        assert!(log.contains("its place is open again"), "{log}");
        assert!(log.contains("already connected here"), "{log}");
        exchange(&mut links, &mut [&mut a, &mut b]);
    }

    /// A Node dialling through a TCP forwarder whose backend does not listen yet (the
    /// forwarder accepts, then closes: "tls handshake eof" at the Node, which used to exit at
    /// once while the aggregator waited its 600 s) keeps trying, and joins once the aggregator
    /// listens.
    #[test]
    fn a_node_joins_through_a_forwarder_that_closes_until_the_backend_listens() {
        let s = study();
        let backend = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .to_string();
        let front = std::net::TcpListener::bind("127.0.0.1:0").expect("front");
        let front_address = front.local_addr().expect("address").to_string();
        let closed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        {
            let (backend, closed) = (backend.clone(), Arc::clone(&closed));
            // Bounded: at most 500 connections, none accepted after 30 s.
            std::thread::spawn(move || {
                let started = Instant::now();
                for client in front.incoming().take(500) {
                    if started.elapsed() > Duration::from_secs(30) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    let Ok(server) = std::net::TcpStream::connect(&backend) else {
                        closed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        drop(client);
                        continue;
                    };
                    for (mut from, mut to) in [
                        (
                            client.try_clone().expect("clone"),
                            server.try_clone().expect("clone"),
                        ),
                        (server, client),
                    ] {
                        std::thread::spawn(move || {
                            let _ = std::io::copy(&mut from, &mut to);
                            let _ = to.shutdown(std::net::Shutdown::Both);
                        });
                    }
                }
            });
        }
        let joining = {
            let s = Study {
                roster: Arc::clone(&s.roster),
                ids: s.ids.clone(),
            };
            let front_address = front_address.clone();
            std::thread::spawn(move || {
                network(&s, 2, Role::Node, "node-a").connect(
                    &front_address,
                    &s.roster.aggregator,
                    Duration::from_secs(20),
                )
            })
        };
        std::thread::sleep(Duration::from_millis(800));
        assert!(!joining.is_finished(), "the Node kept trying");
        let aggregator = network(&s, 1, Role::Aggregator, "aggregator");
        let listener = aggregator.listen(&backend).expect("the backend listens");
        let mut links = listener
            .admit(
                &Expected::Members(vec![s.roster.nodes[0].clone()]),
                Duration::from_secs(20),
                &mut |_| {},
            )
            .expect("admitted");
        let mut node = joining.join().expect("thread").expect("joined");
        assert!(
            closed.load(std::sync::atomic::Ordering::Relaxed) > 0,
            "the forwarder closed"
        );
        exchange(&mut links, &mut [&mut node]);
    }

    /// Hundreds of idle connections (more than the handshakes the listener runs at once)
    /// neither stop the listener nor keep the real Nodes out.
    #[test]
    fn idle_connections_do_not_stop_the_listener() {
        let s = study();
        let deadline = Duration::from_secs(3);
        let (address, admitted) = admit_nodes(&s, deadline);
        let idle: Vec<std::net::TcpStream> = (0..4 * MAX_HANDSHAKES)
            .map(|_| std::net::TcpStream::connect(&address).expect("connect"))
            .collect();
        let started = Instant::now();
        let mut a = dial(&s, 2, "node-a", &address, deadline);
        let mut b = dial(&s, 3, "node-b", &address, deadline);
        let (links, log) = admitted.join().expect("admit");
        let mut links = links.expect("both admitted");
        assert!(started.elapsed() < 2 * deadline, "{:?}", started.elapsed());
        assert!(log.contains("dropped the oldest"), "{log}");
        // The strangers' lines come in summary, not one per connection.
        assert!(log.lines().count() < 40, "{log}");
        exchange(&mut links, &mut [&mut a, &mut b]);
        drop(idle);
    }

    /// A loopback address nobody listens on (a port bound, then let go).
    fn nobody_listens() -> String {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .to_string()
    }

    /// A wait to connect ends as soon as the party's group stops (a lost peer elsewhere), not
    /// when its patience runs out.
    #[test]
    fn an_abort_ends_a_connect_wait() {
        let s = study();
        let node = network(&s, 2, Role::Node, "node-a");
        let address = nobody_listens();
        let aborter = node.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            aborter.abort("Node node-b hung up");
        });
        let started = Instant::now();
        let e = node
            .connect(&address, &s.roster.aggregator, Duration::from_secs(60))
            .expect_err("aborted");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert!(e.to_string().contains("node-b hung up"), "{e}");
        assert!(
            matches!(TransportError::of(&e), Some(TransportError::Aborted { .. })),
            "{e:?}"
        );
    }

    /// A dial that finds nobody listening says so while it waits (a quarter of its patience in,
    /// then every quarter), naming the server, the address and why, before it gives up.
    #[test]
    fn a_connect_wait_says_whom_it_waits_for() {
        let s = study();
        let node = network(&s, 2, Role::Node, "node-a");
        let address = nobody_listens();
        let mut said = Vec::new();
        let e = node
            .connect_reporting(
                &address,
                &s.roster.aggregator,
                Duration::from_secs(2),
                &mut |m| said.push(m.to_string()),
            )
            .expect_err("nobody listens");
        assert!(e.to_string().contains(&address), "{e}");
        // Due at 0.5, 1 and 1.5 s: a stall on a busy machine may skip one, not all.
        assert!(!said.is_empty() && said.len() <= 3, "{said:?}");
        let expected = format!("waiting for {} at {address} (", s.roster.aggregator);
        assert!(said.iter().all(|m| m.starts_with(&expected)), "{said:?}");
        assert!(said.iter().all(|m| m.ends_with(" s more")), "{said:?}");
    }

    /// Something that accepts the connection and never answers (another program on the port)
    /// is reported while the handshake waits, not only once it gives up.
    #[test]
    fn a_silent_listener_is_reported_while_the_handshake_waits() {
        let s = study();
        let node = network(&s, 2, Role::Node, "node-a");
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = silent.local_addr().expect("address").to_string();
        let holder = std::thread::spawn(move || {
            let (held, _) = silent.accept().expect("accept");
            std::thread::sleep(Duration::from_millis(2500));
            drop(held);
        });
        let mut said = Vec::new();
        let _ = node.connect_reporting(
            &address,
            &s.roster.aggregator,
            Duration::from_secs(2),
            &mut |m| said.push(m.to_string()),
        );
        holder.join().expect("holder");
        let expected = format!(
            "connected to {} at {address}, but no answer to privlogit's handshake",
            s.roster.aggregator
        );
        assert!(said.iter().any(|m| m.starts_with(&expected)), "{said:?}");
    }
}
