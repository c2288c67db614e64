//! Byte channels between the two parties. Protocol code is synchronous and talks to a
//! [`Channel`]; [`MemoryChannel`] pairs connect two threads in one process (tests, the CLI), and
//! [`IoChannel`] wraps any byte stream (a TCP socket) with buffering. Both count bytes.

use std::io::{self, BufReader, BufWriter, Read, Write};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

/// A reliable, ordered byte pipe to the other party.
pub trait Channel {
    /// Queues `bytes` for the other party (may buffer; see [`Channel::flush`]).
    fn send(&mut self, bytes: &[u8]) -> io::Result<()>;

    /// Fills `buf` with the next bytes from the other party, waiting as needed.
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<()>;

    /// Pushes buffered bytes out (before waiting for an answer).
    fn flush(&mut self) -> io::Result<()>;

    /// Bytes sent so far.
    fn bytes_sent(&self) -> u64;

    /// Bytes received so far.
    fn bytes_received(&self) -> u64;

    /// Sequential round trips so far: receives that had to wait for the other party after
    /// this side had sent something since its last receive. A party that sends and then
    /// reads pays one network round trip for it, whatever the sizes, so this, not bytes, is
    /// what a long-distance link's latency multiplies. A channel that cannot tell says 0.
    fn round_trips(&self) -> u64 {
        0
    }

    /// Stops the study on this connection and every other of this party, telling each peer
    /// `reason` (a network transport); a channel without peers to tell does nothing. A role
    /// calls it when it fails while it still holds the connection, so that the others learn
    /// why instead of only that it hung up.
    fn abort(&self, reason: &str) {
        let _ = reason;
    }
}

/// Bytes per chunk a [`ChunkChannel`] hands to its pipe (it may hand more after a large send).
pub const CHUNK: usize = 1 << 16;
/// Chunks that may be in flight in one direction before the sender waits (bounds memory).
pub const IN_FLIGHT: usize = 64;

/// Moves whole chunks of bytes to and from the other party, in order. [`ChunkChannel`] makes a
/// byte [`Channel`] of it; the in-memory pair and the TCP transport differ only in their pipe.
pub trait ChunkPipe {
    /// Hands `chunk` over, waiting while too many are in flight; fails once the other side is
    /// gone.
    fn push(&mut self, chunk: Vec<u8>) -> io::Result<()>;

    /// The next chunk from the other side, waiting for it; fails once the other side is gone.
    fn pull(&mut self) -> io::Result<Vec<u8>>;

    /// [`Channel::abort`]: nothing unless the pipe belongs to a transport.
    fn abort(&self, reason: &str) {
        let _ = reason;
    }
}

/// A byte channel over a [`ChunkPipe`]: sends are gathered into chunks of about [`CHUNK`]
/// bytes, receives are served from the current chunk.
#[derive(Debug)]
pub struct ChunkChannel<P> {
    pipe: P,
    write_buffer: Vec<u8>,
    read_buffer: Vec<u8>,
    read_position: usize,
    sent: u64,
    received: u64,
    /// Whether a chunk went out since the last one came in.
    pushed_since_pull: bool,
    round_trips: u64,
}

impl<P: ChunkPipe> ChunkChannel<P> {
    /// A channel over `pipe`.
    pub fn new(pipe: P) -> Self {
        Self {
            pipe,
            write_buffer: Vec::with_capacity(CHUNK),
            read_buffer: Vec::new(),
            read_position: 0,
            sent: 0,
            received: 0,
            pushed_since_pull: false,
            round_trips: 0,
        }
    }

    /// The pipe.
    pub fn pipe(&self) -> &P {
        &self.pipe
    }
}

/// The error of a pipe whose other side is gone.
pub fn disconnected() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the other party hung up")
}

impl<P: ChunkPipe> Channel for ChunkChannel<P> {
    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.sent += bytes.len() as u64;
        self.write_buffer.extend_from_slice(bytes);
        if self.write_buffer.len() >= CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<()> {
        let mut filled = 0;
        while filled < buf.len() {
            if self.read_position == self.read_buffer.len() {
                if std::mem::take(&mut self.pushed_since_pull) {
                    self.round_trips += 1;
                }
                self.read_buffer = self.pipe.pull()?;
                self.read_position = 0;
            }
            let n = (buf.len() - filled).min(self.read_buffer.len() - self.read_position);
            buf[filled..filled + n]
                .copy_from_slice(&self.read_buffer[self.read_position..self.read_position + n]);
            self.read_position += n;
            filled += n;
        }
        self.received += buf.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.write_buffer.is_empty() {
            let chunk = std::mem::replace(&mut self.write_buffer, Vec::with_capacity(CHUNK));
            self.pipe.push(chunk)?;
            self.pushed_since_pull = true;
        }
        Ok(())
    }

    fn bytes_sent(&self) -> u64 {
        self.sent
    }

    fn bytes_received(&self) -> u64 {
        self.received
    }

    fn round_trips(&self) -> u64 {
        self.round_trips
    }

    fn abort(&self, reason: &str) {
        self.pipe.abort(reason);
    }
}

/// The pipe between two threads of one process.
#[derive(Debug)]
pub struct MemoryPipe {
    outgoing: SyncSender<Vec<u8>>,
    incoming: Receiver<Vec<u8>>,
}

impl ChunkPipe for MemoryPipe {
    fn push(&mut self, chunk: Vec<u8>) -> io::Result<()> {
        self.outgoing.send(chunk).map_err(|_| disconnected())
    }

    fn pull(&mut self) -> io::Result<Vec<u8>> {
        self.incoming.recv().map_err(|_| disconnected())
    }
}

/// One end of an in-memory channel pair.
pub type MemoryChannel = ChunkChannel<MemoryPipe>;

impl ChunkChannel<MemoryPipe> {
    /// Two connected ends.
    pub fn pair() -> (Self, Self) {
        let (a_out, b_in) = sync_channel(IN_FLIGHT);
        let (b_out, a_in) = sync_channel(IN_FLIGHT);
        let end = |outgoing, incoming| Self::new(MemoryPipe { outgoing, incoming });
        (end(a_out, a_in), end(b_out, b_in))
    }
}

/// A channel over a byte stream (for example a `TcpStream`), buffered both ways.
#[derive(Debug)]
pub struct IoChannel<S: Read + Write> {
    reader: BufReader<S>,
    writer: BufWriter<S>,
    sent: u64,
    received: u64,
}

impl<S: Read + Write> IoChannel<S> {
    /// Wraps a stream; `reader` and `writer` are two handles to the same connection (for TCP,
    /// a stream and its `try_clone`).
    pub fn new(reader: S, writer: S) -> Self {
        Self {
            reader: BufReader::with_capacity(1 << 16, reader),
            writer: BufWriter::with_capacity(1 << 16, writer),
            sent: 0,
            received: 0,
        }
    }
}

impl<S: Read + Write> Channel for IoChannel<S> {
    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.sent += bytes.len() as u64;
        self.writer.write_all(bytes)
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.reader.read_exact(buf)?;
        self.received += buf.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }

    fn bytes_sent(&self) -> u64 {
        self.sent
    }

    fn bytes_received(&self) -> u64 {
        self.received
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_is_a_receive_after_a_send() {
        let (mut a, mut b) = MemoryChannel::pair();
        let peer = std::thread::spawn(move || {
            for _ in 0..3 {
                let mut ask = [0u8; 1];
                b.recv(&mut ask).expect("ask");
                b.send(&[ask[0], ask[0]]).expect("answer");
                b.flush().expect("flush");
            }
            b.round_trips()
        });
        // Two messages before one receive: one round trip.
        a.send(&[1]).expect("send");
        a.flush().expect("flush");
        a.send(&[2]).expect("send");
        a.flush().expect("flush");
        let mut got = [0u8; 4];
        a.recv(&mut got).expect("answers");
        assert_eq!(a.round_trips(), 1);
        // Reading what already came in is no new round trip.
        a.send(&[3]).expect("send");
        a.flush().expect("flush");
        let mut last = [0u8; 1];
        a.recv(&mut last).expect("first half");
        a.recv(&mut last).expect("second half");
        assert_eq!(a.round_trips(), 2);
        // The answering side waits after each answer but the first receive.
        assert_eq!(peer.join().expect("peer"), 2);
    }

    #[test]
    fn memory_pair_carries_bytes_both_ways() {
        let (mut a, mut b) = MemoryChannel::pair();
        let sender = std::thread::spawn(move || {
            let data: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
            a.send(&data).expect("send");
            a.flush().expect("flush");
            let mut reply = [0u8; 3];
            a.recv(&mut reply).expect("reply");
            (reply, a.bytes_sent())
        });
        let mut got = vec![0u8; 200_000];
        b.recv(&mut got).expect("recv");
        assert!(got.iter().enumerate().all(|(i, &v)| v == i as u8));
        b.send(b"ok!").expect("send");
        b.flush().expect("flush");
        let (reply, sent) = sender.join().expect("thread");
        assert_eq!(&reply, b"ok!");
        assert_eq!(sent, 200_000);
        drop(b);
    }

    #[test]
    fn hang_up_is_an_error() {
        let (mut a, b) = MemoryChannel::pair();
        drop(b);
        let mut buf = [0u8; 1];
        assert!(a.recv(&mut buf).is_err());
    }
}

/// A channel that discards what is sent (for timing the garbler alone).
#[derive(Debug, Default)]
pub struct Discard {
    sent: u64,
}

impl Channel for Discard {
    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.sent += bytes.len() as u64;
        Ok(())
    }

    fn recv(&mut self, _: &mut [u8]) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "a discarding channel receives nothing",
        ))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn bytes_sent(&self) -> u64 {
        self.sent
    }

    fn bytes_received(&self) -> u64 {
        0
    }
}
