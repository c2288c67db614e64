//! The record layer of every connection, below the protocol's frames: data, heartbeats, a
//! closing handshake and an abort that carries its reason.
//!
//! A record is a kind byte, a u32 little-endian length and the body. Lengths are bounded by
//! kind before anything is allocated (data [`CHUNK`], control [`MAX_CONTROL`], heartbeat and
//! close 0). Each connection has a writer task, which sends a heartbeat whenever it has written
//! nothing for `heartbeat`, and a reader task, which fails the connection when nothing at all
//! (data or heartbeat) has arrived for `deadline` while it was waiting. A frozen peer (a
//! stopped process, a cut network) is thus noticed within the deadline even when the protocol
//! itself is quiet, as it is while a Node computes for minutes; a busy peer still heartbeats,
//! because its network task runs beside its computation.
//!
//! The connections of one party form a [`Group`]: when any of them fails, every other one is
//! aborted (its peer receives an abort record with the reason, its blocked reads and writes
//! return the reason), so a lost party stops the whole study within the deadline.
//!
//! A listener's connections run (heartbeats both ways) from the moment each party is admitted,
//! however long the others take to join. Until the last one has joined they are on
//! [`Admission`]: a connection lost then gives up its place, which the party may take again
//! by reconnecting, instead of stopping the group.

use std::collections::HashSet;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use privlogit_circuits::channel::{CHUNK, ChunkPipe, IN_FLIGHT};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::runtime::Runtime;
use tokio::sync::{mpsc, oneshot, watch};

use super::transport_error::TransportError;

/// The runtime every connection's tasks run on (one worker: it only moves bytes).
pub(super) fn runtime() -> &'static Runtime {
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

/// Largest body of a control record (hello, welcome, abort).
pub(crate) const MAX_CONTROL: u32 = 4096;

/// What a record carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// Protocol bytes.
    Data = 1,
    /// Nothing: the sender is alive.
    Heartbeat = 2,
    /// The sender has sent everything and is done.
    Close = 3,
    /// The sender stops the study; the body is the reason (UTF-8).
    Abort = 4,
    /// First record of a connection: study id, role, name.
    Hello = 5,
    /// The listener's answer to an accepted hello.
    Welcome = 6,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Self> {
        [
            Kind::Data,
            Kind::Heartbeat,
            Kind::Close,
            Kind::Abort,
            Kind::Hello,
            Kind::Welcome,
        ]
        .into_iter()
        .find(|k| *k as u8 == v)
    }

    fn limit(self) -> u32 {
        match self {
            Kind::Data => CHUNK as u32,
            Kind::Heartbeat | Kind::Close => 0,
            Kind::Abort | Kind::Hello | Kind::Welcome => MAX_CONTROL,
        }
    }
}

/// Writes one record (header and body in one buffer, one TLS record where it fits).
pub(crate) async fn write_record<W: AsyncWrite + Unpin>(
    w: &mut W,
    kind: Kind,
    body: &[u8],
) -> io::Result<()> {
    debug_assert!(body.len() <= kind.limit() as usize);
    let mut record = Vec::with_capacity(5 + body.len());
    record.push(kind as u8);
    record.extend_from_slice(&(body.len() as u32).to_le_bytes());
    record.extend_from_slice(body);
    w.write_all(&record).await
}

/// Reads one record, refusing an unknown kind or a length above the kind's limit before
/// allocating its body.
pub(crate) async fn read_record<R: AsyncRead + Unpin>(r: &mut R) -> io::Result<(Kind, Vec<u8>)> {
    let mut header = [0u8; 5];
    r.read_exact(&mut header).await?;
    let kind = Kind::from_u8(header[0]).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unknown record kind {}", header[0]),
        )
    })?;
    let len = u32::from_le_bytes(header[1..].try_into().expect("4 bytes"));
    if len > kind.limit() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a {kind:?} record of {len} bytes (limit {})", kind.limit()),
        ));
    }
    let mut body = vec![0u8; len as usize];
    r.read_exact(&mut body).await?;
    Ok((kind, body))
}

/// When a party's connections give up on a silent peer, and how often they show life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// A heartbeat goes out after this long without writing.
    pub heartbeat: Duration,
    /// A connection fails after this long without receiving anything.
    pub deadline: Duration,
}

impl Timing {
    /// A deadline with a heartbeat six times as often (at least every 100 ms).
    pub fn with_deadline(deadline: Duration) -> Self {
        Self {
            heartbeat: (deadline / 6).max(Duration::from_millis(100)),
            deadline,
        }
    }
}

impl Default for Timing {
    /// A 6 s deadline, a heartbeat every second: a lost party stops the study within 10 s.
    fn default() -> Self {
        Self::with_deadline(Duration::from_secs(6))
    }
}

/// The connections of one party, which stop together.
#[derive(Debug)]
pub struct Group {
    reason: watch::Sender<Option<Arc<str>>>,
    /// The peer whose loss stopped the group, when that is why it stopped.
    lost: std::sync::Mutex<Option<String>>,
    writers: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Group {
    /// A group with no connections yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            reason: watch::channel(None).0,
            lost: std::sync::Mutex::new(None),
            writers: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// Stops every connection of the group with `reason` (the first reason stays) and waits,
    /// at most a second, for the abort records to go out.
    pub fn abort(&self, reason: &str) {
        self.trigger(reason);
        let writers = std::mem::take(&mut *self.writers.lock().expect("writers"));
        runtime().block_on(async {
            let _ = tokio::time::timeout(Duration::from_secs(1), async {
                for w in writers {
                    let _ = w.await;
                }
            })
            .await;
        });
    }

    /// Why the group stopped, if it did.
    pub fn reason(&self) -> Option<Arc<str>> {
        self.reason.borrow().clone()
    }

    /// A receiver that sees the group stop (for [`stopped`]).
    pub(crate) fn watch(&self) -> watch::Receiver<Option<Arc<str>>> {
        self.reason.subscribe()
    }

    pub(crate) fn trigger(&self, reason: &str) {
        self.stop(reason, None);
    }

    /// Stops the group because `peer` was lost (unless it had stopped already).
    pub(crate) fn lose(&self, peer: &str, reason: &str) {
        self.stop(reason, Some(peer));
    }

    fn stop(&self, reason: &str, lost: Option<&str>) {
        self.reason.send_if_modified(|r| {
            if r.is_none() {
                *self.lost.lock().expect("lost") = lost.map(str::to_string);
                *r = Some(reason.into());
                true
            } else {
                false
            }
        });
    }

    /// The error of a connection of this group stopped for `reason` (the group's).
    pub(crate) fn aborted(&self, reason: &str) -> io::Error {
        TransportError::Aborted {
            message: reason.to_string(),
            lost_peer: self.lost.lock().expect("lost").clone(),
        }
        .into_io(io::ErrorKind::ConnectionAborted)
    }
}

/// The connections a listener has admitted while it still waits for others. A loss among
/// them is reported here (the place opens again) rather than stopping the group; once the
/// listener [`closes`](Self::close) admission, a loss stops the group as on any connection.
#[derive(Debug, Default)]
pub(crate) struct Admission {
    state: Mutex<AdmissionState>,
    lost: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct AdmissionState {
    closed: bool,
    /// Connections lost while admission was open, with why, not yet taken by the listener.
    lost: Vec<(u64, String)>,
    /// Connections the listener dropped (replaced by a reconnection): their end is silent.
    dropped: HashSet<u64>,
}

impl Admission {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Records the loss of connection `id`; `false` when admission is closed, so that the loss
    /// must stop the group.
    fn report(&self, id: u64, why: &str) -> bool {
        let mut state = self.state.lock().expect("admission");
        if state.dropped.contains(&id) {
            return true;
        }
        if state.closed {
            return false;
        }
        state.lost.push((id, why.to_string()));
        self.lost.notify_one();
        true
    }

    /// Resolves when a loss may have been reported.
    pub(crate) async fn changed(&self) {
        self.lost.notified().await;
    }

    /// The losses reported since the last call.
    pub(crate) fn take_lost(&self) -> Vec<(u64, String)> {
        std::mem::take(&mut self.state.lock().expect("admission").lost)
    }

    /// Marks connection `id` as dropped by the listener: its later failure means nothing.
    pub(crate) fn drop_connection(&self, id: u64) {
        self.state.lock().expect("admission").dropped.insert(id);
    }

    /// Ends admission unless a loss is waiting to be taken (then returns those losses and
    /// admission stays open): from here on a lost connection stops the group.
    pub(crate) fn close(&self) -> Result<(), Vec<(u64, String)>> {
        let mut state = self.state.lock().expect("admission");
        if !state.lost.is_empty() {
            return Err(std::mem::take(&mut state.lost));
        }
        state.closed = true;
        Ok(())
    }
}

/// Resolves once the group has stopped, with the reason.
pub(crate) async fn stopped(rx: &mut watch::Receiver<Option<Arc<str>>>) -> Arc<str> {
    loop {
        if let Some(r) = rx.borrow_and_update().clone() {
            return r;
        }
        if rx.changed().await.is_err() {
            // The group is gone: nothing can stop this connection any more.
            std::future::pending::<()>().await;
        }
    }
}

enum Outgoing {
    /// Bytes, and when the protocol handed them over (for a dialled-in latency).
    Data(Vec<u8>, tokio::time::Instant),
    Close,
}

/// One end of an established connection: chunks go to its writer task and come from its
/// reader task. Dropping it ends the connection with the closing handshake (bounded by the
/// deadline) unless the group has stopped.
#[derive(Debug)]
pub struct LinkPipe {
    peer: String,
    peer_address: String,
    outgoing: Option<mpsc::Sender<Outgoing>>,
    incoming: mpsc::Receiver<io::Result<Vec<u8>>>,
    written: Option<oneshot::Receiver<()>>,
    peer_closed: bool,
    group: Arc<Group>,
    timing: Timing,
}

impl LinkPipe {
    /// Who is at the other end (`Node hospital-a`, `the key holder (keyholder)`).
    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// The other end's network address.
    pub fn peer_address(&self) -> &str {
        &self.peer_address
    }

    /// Drops this end without the closing handshake (a connection replaced or given up while
    /// its listener was still admitting): the writer stops, the socket closes.
    pub(crate) fn discard(mut self) {
        self.outgoing = None;
    }

    fn failure(&self, fallback: io::Error) -> io::Error {
        self.group
            .reason()
            .map_or(fallback, |r| self.group.aborted(&r))
    }

    /// Ends the connection: everything sent so far, then a close record, reaches the peer, and
    /// the peer's own close record arrives, both within the deadline. After this both sides
    /// know the other has finished, so either may exit.
    pub fn close(&mut self) -> io::Result<()> {
        let Some(outgoing) = self.outgoing.take() else {
            return Ok(());
        };
        if let Some(reason) = self.group.reason() {
            return Err(self.group.aborted(&reason));
        }
        let deadline = self.timing.deadline;
        let written = self.written.take();
        let peer = self.peer.clone();
        let incoming = &mut self.incoming;
        let peer_closed = &mut self.peer_closed;
        runtime().block_on(async move {
            let ended = tokio::time::timeout(deadline, async {
                outgoing.send(Outgoing::Close).await.map_err(|_| {
                    lost(
                        &peer,
                        format!("{peer}: the connection is gone"),
                        io::ErrorKind::ConnectionAborted,
                    )
                })?;
                if let Some(w) = written {
                    let _ = w.await;
                }
                while !*peer_closed {
                    match incoming.recv().await {
                        Some(Ok(_)) => {} // bytes the protocol did not read: nothing to do
                        Some(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => {
                            *peer_closed = true;
                        }
                        Some(Err(e)) => return Err(e),
                        None => *peer_closed = true,
                    }
                }
                drop(outgoing);
                Ok(())
            })
            .await;
            ended.unwrap_or_else(|_| {
                Err(TransportError::TimedOut {
                    message: format!(
                        "{peer} did not confirm the end of the study within {} s",
                        deadline.as_secs_f64()
                    ),
                }
                .into_io(io::ErrorKind::TimedOut))
            })
        })
    }
}

impl Drop for LinkPipe {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl ChunkPipe for LinkPipe {
    fn abort(&self, reason: &str) {
        self.group.abort(reason);
    }

    fn push(&mut self, chunk: Vec<u8>) -> io::Result<()> {
        let Some(outgoing) = &self.outgoing else {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the connection was closed",
            ));
        };
        let mut stop = self.group.reason.subscribe();
        let sent = runtime().block_on(async {
            tokio::select! {
                r = outgoing.send(Outgoing::Data(chunk, tokio::time::Instant::now())) => r.map_err(|_| ()),
                _ = stopped(&mut stop) => Err(()),
            }
        });
        sent.map_err(|()| {
            self.failure(lost(
                &self.peer,
                format!("{} hung up", self.peer),
                io::ErrorKind::BrokenPipe,
            ))
        })
    }

    fn pull(&mut self) -> io::Result<Vec<u8>> {
        if self.peer_closed {
            return Err(closed(&self.peer));
        }
        let item = self.incoming.blocking_recv();
        match item {
            Some(Ok(chunk)) => Ok(chunk),
            Some(Err(e)) => {
                if e.kind() == io::ErrorKind::UnexpectedEof {
                    self.peer_closed = true;
                }
                Err(e)
            }
            None => Err(self.failure(lost(
                &self.peer,
                format!("{} hung up", self.peer),
                io::ErrorKind::BrokenPipe,
            ))),
        }
    }
}

/// `s` cut to at most `max` bytes at a character boundary.
pub(crate) fn truncated(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn closed(peer: &str) -> io::Error {
    lost(
        peer,
        format!("{peer} ended the connection"),
        io::ErrorKind::UnexpectedEof,
    )
}

/// `peer` lost, as an error of `kind` saying `message`.
fn lost(peer: &str, message: String, kind: io::ErrorKind) -> io::Error {
    TransportError::PeerLost {
        peer: peer.to_string(),
        message,
    }
    .into_io(kind)
}

/// Starts the reader and writer tasks of an established (and greeted) connection; with
/// `admission`, its loss is reported there (as connection `id`) while admission is open.
pub(crate) fn start<S>(
    stream: S,
    peer: String,
    peer_address: String,
    timing: Timing,
    group: Arc<Group>,
    admission: Option<(Arc<Admission>, u64)>,
) -> LinkPipe
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (reader, writer) = tokio::io::split(stream);
    let (to_writer, from_pipe) = mpsc::channel::<Outgoing>(IN_FLIGHT);
    let (to_pipe, from_reader) = mpsc::channel::<io::Result<Vec<u8>>>(IN_FLIGHT);
    let (written_tx, written_rx) = oneshot::channel();
    let rt = runtime();

    let stop = group.reason.subscribe();
    let writer_task = rt.spawn(write_loop(writer, from_pipe, written_tx, timing, stop));
    group.writers.lock().expect("writers").push(writer_task);
    let stop = group.reason.subscribe();
    rt.spawn(read_loop(
        reader,
        to_pipe,
        Arc::clone(&group),
        peer.clone(),
        admission,
        timing,
        stop,
    ));

    LinkPipe {
        peer,
        peer_address,
        outgoing: Some(to_writer),
        incoming: from_reader,
        written: Some(written_rx),
        peer_closed: false,
        group,
        timing,
    }
}

/// The most bytes sent just before an abort that still go out ahead of it.
const DRAIN_BEFORE_ABORT: usize = 64 * 1024;

/// The writer task of a connection: what the pipe hands over, as data records (held back by
/// a dialled-in link's latency and bandwidth), heartbeats while idle, the closing record, and
/// an abort record with the reason when the group stops (unless a record is half written).
async fn write_loop<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut from_pipe: mpsc::Receiver<Outgoing>,
    written_tx: oneshot::Sender<()>,
    timing: Timing,
    mut stop: watch::Receiver<Option<Arc<str>>>,
) {
    let shape = super::shape::link_shape();
    let mid_record = AtomicBool::new(false);
    // When the dialled-in link has finished serialising what went before.
    let mut line_free = tokio::time::Instant::now();
    let work = async {
        loop {
            let next = tokio::select! {
                m = from_pipe.recv() => m,
                () = tokio::time::sleep(timing.heartbeat) => {
                    mid_record.store(true, Ordering::Relaxed);
                    write_record(&mut writer, Kind::Heartbeat, &[]).await?;
                    writer.flush().await?;
                    mid_record.store(false, Ordering::Relaxed);
                    continue;
                }
            };
            mid_record.store(true, Ordering::Relaxed);
            match next {
                Some(Outgoing::Data(chunk, handed)) => {
                    if !shape.is_native() {
                        line_free = line_free.max(handed) + shape.serialisation(chunk.len());
                        tokio::time::sleep_until(line_free + shape.latency).await;
                    }
                    for piece in chunk.chunks(CHUNK) {
                        write_record(&mut writer, Kind::Data, piece).await?;
                    }
                    if from_pipe.is_empty() {
                        writer.flush().await?;
                    }
                }
                Some(Outgoing::Close) => {
                    write_record(&mut writer, Kind::Close, &[]).await?;
                    writer.flush().await?;
                    let _ = written_tx.send(());
                    // Keep heartbeating until this end is dropped, so that the peer,
                    // still finishing, does not take this end for lost.
                    mid_record.store(false, Ordering::Relaxed);
                    loop {
                        tokio::select! {
                            m = from_pipe.recv() => if m.is_none() { return Ok(()) },
                            () = tokio::time::sleep(timing.heartbeat) => {
                                write_record(&mut writer, Kind::Heartbeat, &[]).await?;
                                writer.flush().await?;
                            }
                        }
                    }
                }
                None => return Ok::<(), io::Error>(()),
            }
            mid_record.store(false, Ordering::Relaxed);
        }
    };
    let reason = tokio::select! {
        biased;
        r = stopped(&mut stop) => Some(r),
        _ = work => None,
    };
    // The pipe may have been dropped (ending `work`) just as the group stopped.
    let reason = reason.or_else(|| stop.borrow().clone());
    if let Some(reason) = reason.filter(|_| !mid_record.load(Ordering::Relaxed)) {
        let body = truncated(&reason, MAX_CONTROL as usize);
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            // What the party sent just before it stopped (the aggregator's verdict frame to the
            // key holder) goes first, when it is small: the abort would otherwise overtake it.
            let mut drained = 0;
            while let Ok(Outgoing::Data(chunk, _)) = from_pipe.try_recv() {
                drained += chunk.len();
                if drained > DRAIN_BEFORE_ABORT {
                    break;
                }
                for piece in chunk.chunks(CHUNK) {
                    write_record(&mut writer, Kind::Data, piece).await?;
                }
            }
            write_record(&mut writer, Kind::Abort, body.as_bytes()).await?;
            writer.flush().await
        })
        .await;
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), writer.shutdown()).await;
}

/// The reader task of a connection: records off the wire (within the deadline) to the pipe,
/// heartbeats dropped; a loss, a closing or an abort ends it with the error the pipe reports
/// (and, while admission is open, is reported there as connection `id`).
async fn read_loop<R: AsyncRead + Unpin>(
    mut reader: R,
    to_pipe: mpsc::Sender<io::Result<Vec<u8>>>,
    reader_group: Arc<Group>,
    who: String,
    admission: Option<(Arc<Admission>, u64)>,
    timing: Timing,
    mut stop: watch::Receiver<Option<Arc<str>>>,
) {
    // The peer is lost (`true`) or stopped the study itself.
    let fail = |message: String, peer_lost: bool| {
        let reported = admission
            .as_ref()
            .is_some_and(|(admission, id)| admission.report(*id, &message));
        if !reported {
            if peer_lost {
                reader_group.lose(&who, &message);
            } else {
                reader_group.trigger(&message);
            }
        }
        let error = if peer_lost {
            TransportError::PeerLost {
                peer: who.clone(),
                message,
            }
        } else {
            TransportError::Aborted {
                message,
                lost_peer: None,
            }
        };
        error.into_io(io::ErrorKind::ConnectionAborted)
    };
    loop {
        let record = tokio::select! {
            r = stopped(&mut stop) => {
                let _ = to_pipe.try_send(Err(reader_group.aborted(&r)));
                return;
            }
            r = tokio::time::timeout(timing.deadline, read_record(&mut reader)) => r,
        };
        let item = match record {
            Err(_) => Err(fail(
                format!(
                    "{who} gave no sign of life for {} s (stopped, or its network is down)",
                    timing.deadline.as_secs_f64()
                ),
                true,
            )),
            Ok(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => {
                Err(fail(format!("{who} hung up"), true))
            }
            Ok(Err(e)) => Err(fail(format!("{who}: {e}"), true)),
            Ok(Ok((Kind::Data, body))) => Ok(body),
            Ok(Ok((Kind::Heartbeat, _))) => continue,
            Ok(Ok((Kind::Close, _))) => {
                // Before admission ends, a closed connection gives up its place.
                if let Some((admission, id)) = &admission {
                    admission.report(*id, &format!("{who} ended the connection"));
                }
                Err(closed(&who))
            }
            Ok(Ok((Kind::Abort, body))) => Err(fail(
                format!(
                    "{who} stopped the study: {}",
                    String::from_utf8_lossy(&body)
                ),
                false,
            )),
            Ok(Ok((kind, _))) => Err(fail(
                format!("{who} sent a {kind:?} record mid-study"),
                true,
            )),
        };
        let last = item.is_err();
        let delivered = tokio::select! {
            biased;
            r = to_pipe.send(item) => r.is_ok(),
            _ = stopped(&mut stop) => false,
        };
        if last || !delivered {
            return;
        }
    }
}
