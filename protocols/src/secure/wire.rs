//! Framed messages between the parties over a byte [`Channel`].
//!
//! A frame is `"PLM2"`, the session id (u64), the frame's offset in the sender's byte stream
//! (u64), the protocol step (u16), the payload length (u32) and the payload, all little-endian.
//! The receiver states which step it expects: a frame of another session or step is refused;
//! the offset must equal the bytes received so far on the channel, so a lost, replayed or
//! reordered frame is refused too (the offset is the frame's sequence number, and counts the
//! garbled tables in between); a length above the step's limit ([`HANDSHAKE_LIMIT`] for the
//! handshake, [`MAX_FRAME`] otherwise) is refused before anything is allocated, and the payload
//! buffer grows only as bytes arrive ([`READ_PIECE`] at a time), so a peer that claims a large
//! frame and sends little makes the receiver hold little.

use std::io;

use privlogit_circuits::channel::Channel;

/// Largest payload accepted off the wire (an encrypted 200 x 200 matrix under 4096-bit keys is
/// about 11 MB).
pub const MAX_FRAME: u32 = 1 << 28;

/// Largest payload of a handshake frame (feature names, parameters, a public key).
pub const HANDSHAKE_LIMIT: u32 = 1 << 20;

/// The payload is read, and its buffer grown, this many bytes at a time.
pub const READ_PIECE: usize = 1 << 20;

const MAGIC: &[u8; 4] = b"PLM2";

/// Bytes of a frame header.
const HEADER: usize = 26;

/// The protocol steps a frame can belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Step {
    /// Aggregator to Node: send your encrypted row count.
    Count = 1,
    /// Node to aggregator: `Enc(n_i)`.
    CountReply,
    /// Aggregator to key holder: decrypt these public-by-design values (N, a PrivLogit-Local step).
    DecryptPublic,
    /// Key holder to aggregator: the plaintexts.
    DecryptPublicReply,
    /// Aggregator to Node: the total row count N (public by design).
    Total,
    /// Aggregator to Node: send your encrypted Hessian bound.
    Bound,
    /// Node to aggregator: `Enc(1/4 X_i^T X_i / N)`, lower triangle.
    BoundReply,
    /// Aggregator to key holder: a masked bound to factor in a garbled circuit.
    Factor,
    /// Key holder to aggregator: the masked inverse (PrivLogit-Local), encrypted.
    FactorReply,
    /// Aggregator to Nodes: `Enc(B^-1 / N)` for PrivLogit-Local.
    Inverse,
    /// Aggregator to Node: `beta`; send your encrypted gradient and objective.
    Gradient,
    /// Node to aggregator: `Enc(g_i / N)`, `Enc(l_i / N)` and, for PrivLogit-Local,
    /// `Enc(B^-1 g_i / N)`.
    GradientReply,
    /// Aggregator to key holder: a masked gradient to solve against a factor in a circuit.
    Solve,
    /// Aggregator to Node: `beta`; send your encrypted gradient, objective and Hessian
    /// (secure Newton).
    Newton,
    /// Aggregator to key holder: masked values for a comparison circuit.
    Compare,
    /// Aggregator to everyone: the study is over.
    Done,
    /// Node to aggregator, first message: its feature names.
    Join,
    /// Aggregator to Node: the study's parameters and the public key.
    Welcome,
    /// Aggregator to key holder, first message: the study's parameters and the key size.
    Setup,
    /// Key holder to aggregator: the public key.
    PublicKey,
    /// Aggregator to Node: send encrypted feature sums (or, given means, squared deviations).
    Moments,
    /// Node to aggregator: the encrypted sums.
    MomentsReply,
    /// Aggregator to Node: the pooled means and standard deviations to standardise with.
    Standardize,
    /// Aggregator to key holder: a masked-arithmetic request.
    Masked,
    /// Key holder to aggregator: the answer to a masked-arithmetic request.
    MaskedReply,
    /// Aggregator to key holder (secure PLR): N; draw your share of the objective's noise.
    Perturb,
    /// Key holder to aggregator: the penalty it derived and `Enc(-b_2/N)`.
    PerturbReply,
    /// Aggregator to Node (an unpenalised study, after the fit): `beta`; send how many of your
    /// rows are not strictly on their label's side of it, encrypted.
    Margins,
    /// Node to aggregator: `Enc(#{i: (2 y_i - 1) x_i beta <= 0})`.
    MarginsReply,
    /// Aggregator to Node (a Gaussian, Poisson or weighted study's inference): send your
    /// encrypted sums for the null model, the saturated likelihood and the weights.
    Constants,
    /// Node to aggregator: `Enc(PartyData::constant_sums / N)`.
    ConstantsReply,
    /// Aggregator to Node (after the fit, when the study evaluates): `beta`; send your
    /// encrypted sums over your held-out rows.
    Evaluate,
    /// Node to aggregator: `Enc(evaluation::sums / N)` (zeros without held-out rows), then its
    /// held-out rows' shares for the ranking ([`crate::secure::ranking::NodeShares`]).
    EvaluateReply,
    /// Aggregator to key holder: each Node's count of held-out rows and encrypted seed; run the
    /// ranking circuit (once a study).
    Rank,
    /// Aggregator to key holder (a vertical study, first request): the shape, and each party's
    /// encrypted seed; each party's opened columns follow as [`Step::VerticalShares`].
    VerticalSetup,
    /// Aggregator to key holder: form your shares of the bound `X^T X` (once).
    VerticalBound,
    /// Aggregator to key holder: `beta` and the round; run the logistic circuit and form your
    /// shares of the gradient and objective.
    VerticalRound,
    /// Either server to the other within a vertical request: ring elements (openings, opened
    /// columns) or the key holder's encrypted shares.
    VerticalShares,
    /// Node to aggregator, first message of a vertical study: its column names, whether it
    /// holds the labels, and an X25519 public key for the PSI key.
    VerticalJoin,
    /// Aggregator to the labelling Node: the other Nodes' X25519 keys; it answers with the PSI
    /// key sealed for each, which the aggregator relays, one to each Node.
    VerticalKey,
    /// Node to aggregator: its identifiers' keyed tags, ascending.
    VerticalTags,
    /// Aggregator to Node: which of its tags are in the intersection.
    VerticalMembership,
    /// Aggregator to Node: the study's parameters, the public key and the Node's columns among
    /// the coefficients.
    VerticalWelcome,
    /// Node to aggregator: its deal (the key holder's seed encrypted, the aggregator's seed,
    /// the label shares, its standardisation); the ring values follow as
    /// [`Step::VerticalShares`].
    VerticalDeal,
    /// Aggregator to Node: the model the study fitted.
    VerticalModel,
    /// Aggregator to the dealer of masked products: the study's public key; the dealer
    /// answers with the aggregator's seed and the key holder's, encrypted.
    DealerSetup,
    /// Dealer to aggregator: the seeds.
    DealerSetupReply,
    /// Aggregator to the dealer: the next product's shape and bounds.
    Deal,
    /// Dealer to aggregator: `W` of both evaluations.
    DealReply,
    /// Aggregator to key holder: decrypt these public-by-design values (a PrivLogit-Local
    /// step), and answer after the next request's answer, so that both cost one round trip.
    DecryptPublicAfterNext,
    /// Aggregator to key holder: the study ended with a verdict on the data (separated
    /// classes), which a resumed study would reach again; the payload is the verdict's text.
    /// Read where any request was expected, it ends the receiving party's study.
    Verdict,
}

impl Step {
    /// Every step, for decoding.
    const ALL: [Step; 51] = [
        Step::Count,
        Step::CountReply,
        Step::DecryptPublic,
        Step::DecryptPublicReply,
        Step::Total,
        Step::Bound,
        Step::BoundReply,
        Step::Factor,
        Step::FactorReply,
        Step::Inverse,
        Step::Gradient,
        Step::GradientReply,
        Step::Solve,
        Step::Newton,
        Step::Compare,
        Step::Done,
        Step::Join,
        Step::Welcome,
        Step::Setup,
        Step::PublicKey,
        Step::Moments,
        Step::MomentsReply,
        Step::Standardize,
        Step::Masked,
        Step::MaskedReply,
        Step::Perturb,
        Step::PerturbReply,
        Step::Margins,
        Step::MarginsReply,
        Step::Constants,
        Step::ConstantsReply,
        Step::Evaluate,
        Step::EvaluateReply,
        Step::Rank,
        Step::VerticalSetup,
        Step::VerticalBound,
        Step::VerticalRound,
        Step::VerticalShares,
        Step::VerticalJoin,
        Step::VerticalKey,
        Step::VerticalTags,
        Step::VerticalMembership,
        Step::VerticalWelcome,
        Step::VerticalDeal,
        Step::VerticalModel,
        Step::DealerSetup,
        Step::DealerSetupReply,
        Step::Deal,
        Step::DealReply,
        Step::DecryptPublicAfterNext,
        Step::Verdict,
    ];

    fn from_u16(v: u16) -> Option<Self> {
        Self::ALL.into_iter().find(|s| *s as u16 == v)
    }

    /// The largest payload a frame of this step may claim.
    pub fn limit(self) -> u32 {
        match self {
            Step::Join
            | Step::Welcome
            | Step::Setup
            | Step::PublicKey
            | Step::VerticalJoin
            | Step::VerticalKey
            | Step::VerticalWelcome
            | Step::VerticalModel => HANDSHAKE_LIMIT,
            Step::Verdict => VERDICT_LIMIT,
            _ => MAX_FRAME,
        }
    }
}

/// The longest verdict text a frame carries.
const VERDICT_LIMIT: u32 = 4096;

/// The session id of the handshake frames sent before a study has its id.
pub const HANDSHAKE: u64 = 0;

/// Sends one frame and flushes.
pub fn send<C: Channel>(
    channel: &mut C,
    session: u64,
    step: Step,
    payload: &[u8],
) -> io::Result<()> {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|&l| l <= step.limit())
        .ok_or_else(|| {
            invalid(format!(
                "a {step:?} payload of {} bytes is too large",
                payload.len()
            ))
        })?;
    let mut header = Vec::with_capacity(HEADER);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&session.to_le_bytes());
    header.extend_from_slice(&channel.bytes_sent().to_le_bytes());
    header.extend_from_slice(&(step as u16).to_le_bytes());
    header.extend_from_slice(&len.to_le_bytes());
    channel.send(&header)?;
    channel.send(payload)?;
    channel.flush()
}

/// Receives one frame of `session` that must be `expected` (or [`Step::Done`] when `or_done`),
/// and returns its step and payload.
pub fn recv<C: Channel>(
    channel: &mut C,
    session: u64,
    expected: &[Step],
) -> io::Result<(Step, Vec<u8>)> {
    let offset = channel.bytes_received();
    let mut header = [0u8; HEADER];
    channel.recv(&mut header)?;
    if &header[..4] != MAGIC {
        return Err(invalid("not a privlogit message (bad magic)".to_string()));
    }
    let field = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().expect("8 bytes"));
    let got_session = field(4);
    if got_session != session {
        return Err(invalid(format!(
            "message of session {got_session:#x}, expected {session:#x}"
        )));
    }
    let got_offset = field(12);
    if got_offset != offset {
        return Err(invalid(format!(
            "a frame out of sequence (sent at byte {got_offset}, expected {offset}): a frame was lost, replayed or reordered"
        )));
    }
    let raw = u16::from_le_bytes(header[20..22].try_into().expect("2 bytes"));
    let ended = raw == Step::Verdict as u16 && !expected.contains(&Step::Verdict);
    let step = Step::from_u16(raw)
        .filter(|s| expected.contains(s) || ended)
        .ok_or_else(|| {
            invalid(format!(
                "unexpected protocol step {raw}, expected {expected:?}"
            ))
        })?;
    let len = u32::from_le_bytes(header[22..26].try_into().expect("4 bytes"));
    if len > step.limit() {
        return Err(invalid(format!(
            "a {step:?} frame claims {len} bytes (limit {})",
            step.limit()
        )));
    }
    // Grow the buffer as the bytes arrive, never ahead of them by more than one piece.
    let len = len as usize;
    let mut payload = Vec::with_capacity(len.min(READ_PIECE));
    while payload.len() < len {
        let start = payload.len();
        let piece = (len - start).min(READ_PIECE);
        payload.resize(start + piece, 0);
        channel.recv(&mut payload[start..])?;
    }
    if ended {
        return Err(io::Error::other(StudyEnded(
            String::from_utf8_lossy(&payload).into_owned(),
        )));
    }
    Ok((step, payload))
}

/// A [`Step::Verdict`] read where a request was expected: the study ended with a verdict on
/// the data, which resuming would reach again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StudyEnded(pub String);

impl std::fmt::Display for StudyEnded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the aggregator ended the study with a verdict on the data, which a resumed study \
             would reach again: {}",
            self.0
        )
    }
}

impl std::error::Error for StudyEnded {}

/// True when `e` is a [`StudyEnded`]: the aggregator's verdict, not a lost connection.
pub fn is_study_ended(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<StudyEnded>())
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// Builds a payload from length-prefixed fields.
#[derive(Debug, Default)]
pub struct Writer(Vec<u8>);

impl Writer {
    /// An empty payload.
    pub fn new() -> Self {
        Self::default()
    }

    /// A u64.
    pub fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// A length-prefixed byte string.
    pub fn bytes(mut self, b: &[u8]) -> Self {
        self = self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }

    /// A length-prefixed UTF-8 string.
    pub fn string(self, s: &str) -> Self {
        self.bytes(s.as_bytes())
    }

    /// A length-prefixed list of f64.
    pub fn f64s(mut self, values: &[f64]) -> Self {
        self = self.u64(values.len() as u64);
        for v in values {
            self.0.extend_from_slice(&v.to_le_bytes());
        }
        self
    }

    /// The payload.
    pub fn finish(self) -> Vec<u8> {
        self.0
    }
}

/// Reads the fields of a payload in order; every length is checked against what is left.
#[derive(Debug)]
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Reads `payload`.
    pub fn new(payload: &'a [u8]) -> Self {
        Self { rest: payload }
    }

    fn take(&mut self, n: u64) -> io::Result<&'a [u8]> {
        if n > self.rest.len() as u64 {
            return Err(invalid(format!(
                "a field of {n} bytes in a message with {} left",
                self.rest.len()
            )));
        }
        let (head, tail) = self.rest.split_at(n as usize);
        self.rest = tail;
        Ok(head)
    }

    /// A u64.
    pub fn u64(&mut self) -> io::Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    /// A length-prefixed byte string.
    pub fn bytes(&mut self) -> io::Result<&'a [u8]> {
        let n = self.u64()?;
        self.take(n)
    }

    /// A length-prefixed list of f64.
    pub fn f64s(&mut self) -> io::Result<Vec<f64>> {
        let n = self.u64()?;
        let raw = self.take(
            n.checked_mul(8)
                .ok_or_else(|| invalid("length overflow".into()))?,
        )?;
        Ok(raw
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect())
    }

    /// A length-prefixed UTF-8 string.
    pub fn string(&mut self) -> io::Result<String> {
        String::from_utf8(self.bytes()?.to_vec())
            .map_err(|_| invalid("a string is not UTF-8".into()))
    }

    /// Fails unless every byte was read.
    pub fn end(self) -> io::Result<()> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(invalid(format!(
                "{} unexpected trailing bytes",
                self.rest.len()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use privlogit_circuits::channel::MemoryChannel;

    /// Every step decodes to itself, and the codes are 1, 2, ... without gaps.
    #[test]
    fn every_step_round_trips() {
        for (k, step) in Step::ALL.iter().enumerate() {
            assert_eq!(*step as u16, k as u16 + 1);
            assert_eq!(Step::from_u16(*step as u16), Some(*step));
        }
        assert_eq!(Step::from_u16(0), None);
        assert_eq!(Step::from_u16(Step::ALL.len() as u16 + 1), None);
    }

    /// Frames of another session or step, bad magic and oversized lengths are refused.
    #[test]
    fn frames_are_checked() {
        let (mut a, mut b) = MemoryChannel::pair();
        send(&mut a, 7, Step::Gradient, b"beta").expect("send");
        let (step, payload) = recv(&mut b, 7, &[Step::Gradient]).expect("recv");
        assert_eq!((step, payload.as_slice()), (Step::Gradient, &b"beta"[..]));

        send(&mut a, 8, Step::Gradient, b"").expect("send");
        let e = recv(&mut b, 7, &[Step::Gradient]).expect_err("other session");
        assert!(e.to_string().contains("session"), "{e}");

        let (mut a, mut b) = MemoryChannel::pair();
        send(&mut a, 7, Step::Done, b"").expect("send");
        let e = recv(&mut b, 7, &[Step::Gradient]).expect_err("other step");
        assert!(e.to_string().contains("unexpected protocol step"), "{e}");

        let (mut a, mut b) = MemoryChannel::pair();
        let mut header = Vec::new();
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&7u64.to_le_bytes());
        header.extend_from_slice(&0u64.to_le_bytes());
        header.extend_from_slice(&(Step::Gradient as u16).to_le_bytes());
        header.extend_from_slice(&u32::MAX.to_le_bytes());
        a.send(&header).expect("send");
        a.flush().expect("flush");
        let e = recv(&mut b, 7, &[Step::Gradient]).expect_err("too long");
        assert!(e.to_string().contains("limit"), "{e}");

        let (mut a, mut b) = MemoryChannel::pair();
        a.send(&[0u8; HEADER]).expect("send");
        a.flush().expect("flush");
        let e = recv(&mut b, 7, &[Step::Gradient]).expect_err("bad magic");
        assert!(e.to_string().contains("magic"), "{e}");
    }

    /// A handshake frame above its own limit is refused; a frame whose offset is not the
    /// receiver's count (a replay of an earlier frame) is refused.
    #[test]
    fn step_limits_and_sequence() {
        let (mut a, mut b) = MemoryChannel::pair();
        let big = vec![0u8; HANDSHAKE_LIMIT as usize + 1];
        assert!(send(&mut a, 7, Step::Join, &big).is_err());
        let mut header = Vec::new();
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&7u64.to_le_bytes());
        header.extend_from_slice(&0u64.to_le_bytes());
        header.extend_from_slice(&(Step::Join as u16).to_le_bytes());
        header.extend_from_slice(&(HANDSHAKE_LIMIT + 1).to_le_bytes());
        a.send(&header).expect("send");
        a.flush().expect("flush");
        let e = recv(&mut b, 7, &[Step::Join]).expect_err("too long for a handshake");
        assert!(e.to_string().contains("limit"), "{e}");

        let (mut a, mut b) = MemoryChannel::pair();
        send(&mut a, 7, Step::Gradient, b"one").expect("send");
        recv(&mut b, 7, &[Step::Gradient]).expect("first");
        // A replay: the same bytes again, claiming offset 0 where 29 bytes were received.
        let mut replay = Vec::new();
        replay.extend_from_slice(MAGIC);
        replay.extend_from_slice(&7u64.to_le_bytes());
        replay.extend_from_slice(&0u64.to_le_bytes());
        replay.extend_from_slice(&(Step::Gradient as u16).to_le_bytes());
        replay.extend_from_slice(&3u32.to_le_bytes());
        replay.extend_from_slice(b"one");
        a.send(&replay).expect("send");
        a.flush().expect("flush");
        let e = recv(&mut b, 7, &[Step::Gradient]).expect_err("replayed");
        assert!(e.to_string().contains("out of sequence"), "{e}");
    }

    /// A channel that hands out `available` bytes, then fails, recording the largest buffer
    /// the reader asked to fill at once.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
        largest_request: usize,
    }

    impl Channel for Trickle {
        fn send(&mut self, _: &[u8]) -> io::Result<()> {
            Ok(())
        }
        fn recv(&mut self, buf: &mut [u8]) -> io::Result<()> {
            self.largest_request = self.largest_request.max(buf.len());
            if self.at + buf.len() > self.data.len() {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "gone"));
            }
            buf.copy_from_slice(&self.data[self.at..self.at + buf.len()]);
            self.at += buf.len();
            Ok(())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
        fn bytes_sent(&self) -> u64 {
            0
        }
        fn bytes_received(&self) -> u64 {
            self.at as u64
        }
    }

    /// A frame that claims the largest length and then sends a few bytes makes the receiver
    /// ask for (and allocate) at most one piece, not the claimed length.
    #[test]
    fn claimed_length_is_not_allocated_ahead() {
        let mut data = Vec::new();
        data.extend_from_slice(MAGIC);
        data.extend_from_slice(&7u64.to_le_bytes());
        data.extend_from_slice(&0u64.to_le_bytes());
        data.extend_from_slice(&(Step::GradientReply as u16).to_le_bytes());
        data.extend_from_slice(&MAX_FRAME.to_le_bytes());
        data.extend_from_slice(&[1u8; 100]);
        let mut c = Trickle {
            data,
            at: 0,
            largest_request: 0,
        };
        assert!(recv(&mut c, 7, &[Step::GradientReply]).is_err());
        assert!(c.largest_request <= READ_PIECE, "{}", c.largest_request);
    }

    /// A field longer than the payload is refused, not read past.
    #[test]
    fn reader_bounds_fields() {
        let payload = Writer::new().u64(1 << 40).finish();
        let mut r = Reader::new(&payload);
        assert!(r.bytes().is_err());
        let payload = Writer::new().f64s(&[1.0, 2.0]).finish();
        let mut r = Reader::new(&payload);
        assert_eq!(r.f64s().expect("two"), vec![1.0, 2.0]);
        r.end().expect("all read");
    }
}
