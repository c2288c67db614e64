//! TCP transport: a [`Channel`] whose bytes tokio moves.
//!
//! The crypto cores are synchronous (ARCHITECTURE.md: async code only moves bytes), so a
//! [`TcpChannel`] is the same [`ChunkChannel`] as the in-memory pair, over a pipe whose chunks
//! go to a writer task and come from a reader task, both on one shared tokio runtime. Bulk data (garbled tables) streams through in those chunks while
//! the garbler keeps working. When the peer goes away (process killed, socket closed) the reader
//! task ends and the next `recv` fails at once with "the other party hung up".

use std::io;
use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use privlogit_circuits::channel::{CHUNK, ChunkChannel, ChunkPipe, IN_FLIGHT, disconnected};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio::sync::mpsc;

/// The runtime every TCP channel's tasks run on (one worker: it only copies bytes).
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

/// The pipe of a TCP connection: chunks go to and come from the connection's two tasks.
#[derive(Debug)]
pub struct TcpPipe {
    peer: SocketAddr,
    local: SocketAddr,
    outgoing: mpsc::Sender<Vec<u8>>,
    incoming: mpsc::Receiver<io::Result<Vec<u8>>>,
}

impl TcpPipe {
    /// The peer's address.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// This end's address.
    pub fn local(&self) -> SocketAddr {
        self.local
    }
}

impl ChunkPipe for TcpPipe {
    fn push(&mut self, chunk: Vec<u8>) -> io::Result<()> {
        self.outgoing
            .blocking_send(chunk)
            .map_err(|_| disconnected())
    }

    fn pull(&mut self) -> io::Result<Vec<u8>> {
        self.incoming
            .blocking_recv()
            .unwrap_or_else(|| Err(disconnected()))
    }
}

/// One end of a TCP connection.
pub type TcpChannel = ChunkChannel<TcpPipe>;

/// Connects to `address`, retrying until `patience` has passed (the other party may not be
/// listening yet).
pub fn connect(address: &str, patience: Duration) -> io::Result<TcpChannel> {
    let deadline = Instant::now() + patience;
    let stream = runtime().block_on(async {
        loop {
            match TcpStream::connect(address).await {
                Ok(s) => return Ok(s),
                Err(e) if Instant::now() >= deadline => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("cannot connect to {address}: {e}"),
                    ));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    })?;
    from_stream(stream)
}

/// Starts the connection's reader and writer tasks.
fn from_stream(stream: TcpStream) -> io::Result<TcpChannel> {
    stream.set_nodelay(true)?;
    let peer = stream.peer_addr()?;
    let local = stream.local_addr()?;
    let (mut reader, mut writer) = stream.into_split();
    let (to_socket, mut from_channel) = mpsc::channel::<Vec<u8>>(IN_FLIGHT);
    let (to_channel, from_socket) = mpsc::channel::<io::Result<Vec<u8>>>(IN_FLIGHT);
    let rt = runtime();
    rt.spawn(async move {
        while let Some(chunk) = from_channel.recv().await {
            if writer.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = writer.shutdown().await;
    });
    rt.spawn(async move {
        loop {
            let mut chunk = vec![0u8; CHUNK];
            match reader.read(&mut chunk).await {
                Ok(0) => break,
                Ok(n) => {
                    chunk.truncate(n);
                    if to_channel.send(Ok(chunk)).await.is_err() {
                        break;
                    }
                }
                Err(e) => {
                    let _ = to_channel.send(Err(e)).await;
                    break;
                }
            }
        }
    });
    Ok(ChunkChannel::new(TcpPipe {
        peer,
        local,
        outgoing: to_socket,
        incoming: from_socket,
    }))
}

/// A listening socket that hands out [`TcpChannel`]s.
#[derive(Debug)]
pub struct Listener {
    listener: TcpListener,
}

impl Listener {
    /// Listens on `address` (`127.0.0.1:0` picks a free port).
    pub fn bind(address: &str) -> io::Result<Self> {
        let listener = runtime()
            .block_on(TcpListener::bind(address))
            .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {address}: {e}")))?;
        Ok(Self { listener })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Waits for the next connection, at most `patience`.
    pub fn accept(&self, patience: Duration) -> io::Result<TcpChannel> {
        let (stream, _) = runtime().block_on(async {
            tokio::time::timeout(patience, self.listener.accept())
                .await
                .map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("nobody connected within {} s", patience.as_secs()),
                    )
                })?
        })?;
        from_stream(stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use privlogit_circuits::channel::Channel;

    /// Bytes cross a real loopback socket in order, in both directions, and a closed peer is
    /// reported as hung up.
    #[test]
    fn loopback_round_trip_and_hang_up() {
        let listener = Listener::bind("127.0.0.1:0").expect("bind");
        let address = listener.local_addr().expect("address").to_string();
        let client = std::thread::spawn(move || {
            let mut c = connect(&address, Duration::from_secs(5)).expect("connect");
            let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
            c.send(&big).expect("send");
            c.flush().expect("flush");
            let mut reply = [0u8; 6];
            c.recv(&mut reply).expect("reply");
            assert_eq!(&reply, b"thanks");
        });
        let mut server = listener.accept(Duration::from_secs(5)).expect("accept");
        let mut got = vec![0u8; 300_000];
        server.recv(&mut got).expect("recv");
        assert!(got.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
        server.send(b"thanks").expect("send");
        server.flush().expect("flush");
        client.join().expect("client");
        let mut more = [0u8; 1];
        let e = server.recv(&mut more).expect_err("peer closed");
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
    }
}
