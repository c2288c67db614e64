//! The aggregator's requests to the key holder in masked arithmetic, one frame each
//! ([`Step::Masked`](crate::secure::wire::Step::Masked)), and their wire encoding.
//!
//! Every request that hands the key holder new masked values declares, for each of them, the
//! public bound of the secret part and the width of its mask ([`Widths`]); the key holder
//! refuses a mask less than sigma = 40 bits wider than the bound and a value outside the
//! declared ranges, so a bound that was wrong is a named error rather than a leak.

use std::io;
use std::ops::RangeInclusive;

use num_bigint::BigInt;

use super::cross::CrossTerm;
use super::layout::{Need, layout};
use super::matrix::IntMatrix;
use super::packed::PackedMatrix;
use crate::paillier::{EncryptedVector, Malformed, PaillierError, PublicKey};
use crate::secure::BlockFault;
use crate::secure::wire::{Reader, Writer};

/// Largest matrix side a request may name.
pub const MAX_SIDE: usize = crate::secure::MAX_DIMENSION;
/// Widest bound or mask a request may declare, in bits.
pub const MAX_WIDTH: u32 = 1024;

/// A value's public bound and its mask: `|x| < 2^bound` and the mask lies in `[0, 2^mask)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Widths {
    /// Bits of the public bound on the secret value (integer units at the fractional scale).
    pub bound: u32,
    /// Bits of the mask.
    pub mask: u32,
}

/// A non-linear step on a 1 x 1 view, in a garbled circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafKind {
    /// `1 / x` (the pivots of the SPD inverse).
    Reciprocal,
    /// `sqrt(x)` and `1 / sqrt(x)` (the pivots of the Cholesky factorisation).
    SqrtPair,
    /// No output: only the admission bit, `threshold <= x < 2^bound` (a public test such as
    /// "the inverse's trace is small enough for the working precision").
    Check,
}

impl LeafKind {
    fn code(self) -> u64 {
        match self {
            LeafKind::Reciprocal => 1,
            LeafKind::SqrtPair => 2,
            LeafKind::Check => 3,
        }
    }

    fn from_code(c: u64) -> io::Result<Self> {
        match c {
            1 => Ok(LeafKind::Reciprocal),
            2 => Ok(LeafKind::SqrtPair),
            3 => Ok(LeafKind::Check),
            _ => Err(invalid(format!("unknown leaf kind {c}"))),
        }
    }

    /// Outputs of the step.
    pub fn outputs(self) -> usize {
        match self {
            LeafKind::Reciprocal => 1,
            LeafKind::SqrtPair => 2,
            LeafKind::Check => 0,
        }
    }
}

/// One request.
#[derive(Debug, Clone)]
pub enum Request {
    /// Decrypt `masked` (an encrypted matrix plus masks) and keep it as view `id`.
    View {
        /// New view.
        id: u64,
        /// Bound and mask of every entry.
        widths: Widths,
        /// `Enc(X + R)`, re-randomised.
        masked: Masked,
    },
    /// View `id` is the block `window` of view `from`.
    Slice {
        /// New view.
        id: u64,
        /// Source.
        from: u64,
        /// The block.
        window: Window,
    },
    /// View `id` is the transpose of view `from`.
    Transpose {
        /// New view.
        id: u64,
        /// Source.
        from: u64,
    },
    /// View `id` is `sum_k (-1)^negate_k view_k + offset`.
    Combine {
        /// New view.
        id: u64,
        /// Terms: view and whether it is subtracted.
        terms: Vec<(u64, bool)>,
        /// A public constant added to every entry (keeps the masks non-negative).
        offset: BigInt,
    },
    /// View `id` (`rows x cols`) made of blocks `(view, row, col, transposed)` that tile it.
    Assemble {
        /// New view.
        id: u64,
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
        /// The blocks.
        blocks: Vec<(u64, usize, usize, bool)>,
    },
    /// View `id` (1 x 1) is the trace of the square view `from`.
    Trace {
        /// New view.
        id: u64,
        /// Source.
        from: u64,
    },
    /// View `id` is the public `rows x cols` zero matrix (an empty block of a triangle).
    Zeros {
        /// New view.
        id: u64,
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
    },
    /// Forget views.
    Drop {
        /// The views.
        ids: Vec<u64>,
    },
    /// Encrypt view `id` (or its transpose) packed by columns in slots of `slot_bits`, from
    /// slot `offset`; the key holder answers with the [`PackedMatrix`].
    Encrypt {
        /// The view.
        id: u64,
        /// Encrypt the transpose (a matrix wanted packed by rows).
        transpose: bool,
        /// Slot width.
        slot_bits: u32,
        /// First slot of every column (0, or a short column's place in a shared plaintext).
        offset: usize,
    },
    /// The product of views `x` and `y` (see [`super::engine`] for the algebra).
    Product(ProductRequest),
    /// The key holder's seed for dealt correlations ([`super::dealt`]), encrypted under the
    /// study's key by the dealer and relayed by the aggregator.
    DealerSeed {
        /// One 256-bit plaintext.
        seed: EncryptedVector,
    },
    /// The first half of a product from dealt correlation `index`: the aggregator's `F` of
    /// both evaluations; the key holder answers with its `E` of both and keeps its share.
    DealtProduct(DealtProductRequest),
    /// The second half: the aggregator's share plus the output's mask (as in
    /// [`Request::Product`]); the key holder adds its own.
    DealtShare(Finish),
    /// A non-linear step on the 1 x 1 view `x` in a garbled circuit: fails (one bit to the
    /// aggregator) unless `threshold <= x < 2^input.bound`; the outputs become views `outputs`.
    Leaf(LeafRequest),
    /// The inverse of the symmetric `k x k` view `x` in one garbled circuit
    /// ([`super::block_leaf`]); the output becomes view `output`.
    BlockLeaf {
        /// Input view.
        x: u64,
        /// The circuit's public numbers (side, widths, threshold).
        shape: BlockShape,
        /// New view.
        output: u64,
    },
}

/// A block of a matrix: `rows x cols` at `(r0, c0)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Top row.
    pub r0: usize,
    /// Left column.
    pub c0: usize,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
}

impl Window {
    /// Whether the block lies inside a matrix of `(rows, cols)`.
    pub fn inside(&self, (rows, cols): (usize, usize)) -> bool {
        self.r0 + self.rows <= rows && self.c0 + self.cols <= cols
    }

    /// The block of `m`.
    pub fn of(&self, m: &IntMatrix) -> IntMatrix {
        m.slice(self.r0, self.c0, self.rows, self.cols)
    }

    fn write(&self, w: Writer) -> Writer {
        w.u64(self.r0 as u64)
            .u64(self.c0 as u64)
            .u64(self.rows as u64)
            .u64(self.cols as u64)
    }

    fn read(r: &mut Reader<'_>) -> io::Result<Self> {
        Ok(Window {
            r0: offset(r.u64()?)?,
            c0: offset(r.u64()?)?,
            rows: side(r.u64()?)?,
            cols: side(r.u64()?)?,
        })
    }
}

/// How a product ends, under Paillier or dealt correlations alike: the aggregator's share and
/// where the sum goes.
#[derive(Debug, Clone)]
pub struct Finish {
    /// New view of the truncated product (when not revealed).
    pub id: u64,
    /// All entries, or only the lower triangle of a product known to be symmetric.
    pub need: Need,
    /// Fractional bits dropped from the product.
    pub frac: u32,
    /// The aggregator's share plus the output's mask: truncated for a new view, whole
    /// (with `frac` 0) for a product sent back.
    pub share: IntMatrix,
    /// Where the product goes, and the widths of its mask.
    pub out: ProductOut,
}

/// The fields of [`Request::Product`].
#[derive(Debug, Clone)]
pub struct ProductRequest {
    /// Left operand.
    pub x: u64,
    /// Right operand.
    pub y: u64,
    /// Rows of `x`, columns of `x` (rows of `y`), columns of `y`.
    pub shape: (usize, usize, usize),
    /// `Enc(X R_y + M1)`, laid out by [`Request::layouts`].
    pub left_cross: CrossTerm,
    /// Its widths.
    pub left_widths: Widths,
    /// `Enc((R_x Y + M2)^T)`, laid out by [`Request::layouts`].
    pub right_cross: CrossTerm,
    /// Its widths.
    pub right_widths: Widths,
    /// The share and where the product goes.
    pub finish: Finish,
}

/// The fields of [`Request::DealtProduct`].
#[derive(Debug, Clone)]
pub struct DealtProductRequest {
    /// Left operand.
    pub x: u64,
    /// Right operand.
    pub y: u64,
    /// Rows of `x`, columns of `x` (rows of `y`), columns of `y`.
    pub shape: (usize, usize, usize),
    /// Public bounds of `x` and `y` (bits), from which both sides size the correlation.
    pub bounds: (u32, u32),
    /// The correlation (each is used once, in order).
    pub index: u64,
    /// `R_y - B` of `V_x R_y` (`k x n`).
    pub f_left: IntMatrix,
    /// `R_x - B` of `R_x V_y` (`m x k`).
    pub f_right: IntMatrix,
}

/// The fields of [`Request::Leaf`].
#[derive(Debug, Clone)]
pub struct LeafRequest {
    /// Which step.
    pub kind: LeafKind,
    /// Input view.
    pub x: u64,
    /// Its widths.
    pub input: Widths,
    /// Smallest admissible input (integer units), public.
    pub threshold: BigInt,
    /// Fractional bits.
    pub frac: u32,
    /// New views.
    pub outputs: Vec<(u64, Widths)>,
}

/// Where a product goes: a new view at the key holder, or back to the aggregator. Either way
/// it is masked (these are the mask's widths), so the key holder learns nothing of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProductOut {
    /// Kept as a new view.
    Keep(Widths),
    /// Sent back to the aggregator, which removes the mask.
    Reveal(Widths),
}

/// An encrypted matrix as it travels to the key holder to be decrypted.
#[derive(Debug, Clone)]
pub enum Masked {
    /// A matrix packed by columns.
    Matrix(PackedMatrix),
    /// The lower triangle of a symmetric `d x d` matrix, row by row, as one vector.
    Lower(usize, EncryptedVector),
}

const VIEW: u64 = 1;
const SLICE: u64 = 2;
const TRANSPOSE: u64 = 3;
const COMBINE: u64 = 4;
const ASSEMBLE: u64 = 5;
const DROP: u64 = 6;
const ENCRYPT: u64 = 7;
const PRODUCT: u64 = 8;
const LEAF: u64 = 9;
const ZEROS: u64 = 10;
const TRACE: u64 = 11;
const DEALER_SEED: u64 = 12;
const DEALT_PRODUCT: u64 = 13;
const DEALT_SHARE: u64 = 14;
const BLOCK_LEAF: u64 = 15;

fn product_out(w: Writer, out: &ProductOut) -> Writer {
    match out {
        ProductOut::Keep(o) => widths(w.u64(1), *o),
        ProductOut::Reveal(o) => widths(w.u64(2), *o),
    }
}

fn read_product_out(r: &mut Reader<'_>) -> io::Result<ProductOut> {
    match r.u64()? {
        1 => Ok(ProductOut::Keep(read_widths(r)?)),
        2 => Ok(ProductOut::Reveal(read_widths(r)?)),
        other => Err(invalid(format!("a product's output of kind {other}"))),
    }
}

fn read_frac(r: &mut Reader<'_>) -> io::Result<u32> {
    let frac = r.u64()?;
    if frac > u64::from(MAX_WIDTH) {
        return Err(invalid(format!("{frac} fractional bits")));
    }
    Ok(frac as u32)
}

fn widths(w: Writer, x: Widths) -> Writer {
    w.u64(u64::from(x.bound)).u64(u64::from(x.mask))
}

fn read_widths(r: &mut Reader<'_>) -> io::Result<Widths> {
    let bound = r.u64()?;
    let mask = r.u64()?;
    if bound > u64::from(MAX_WIDTH) || mask > u64::from(MAX_WIDTH) {
        return Err(invalid(format!("widths {bound} / {mask} bits")));
    }
    Ok(Widths {
        bound: bound as u32,
        mask: mask as u32,
    })
}

fn int(w: Writer, v: &BigInt) -> Writer {
    IntMatrix::from_vec(1, 1, vec![v.clone()]).write(w)
}

fn read_int(r: &mut Reader<'_>) -> io::Result<BigInt> {
    let m = IntMatrix::read(r, 1, u64::from(MAX_WIDTH) + 8)?;
    m.data()
        .first()
        .cloned()
        .ok_or_else(|| invalid("an empty integer".into()))
}

fn side(v: u64) -> io::Result<usize> {
    if v == 0 || v > MAX_SIDE as u64 {
        return Err(invalid(format!("a matrix side of {v}")));
    }
    Ok(v as usize)
}

fn offset(v: u64) -> io::Result<usize> {
    if v > MAX_SIDE as u64 {
        return Err(invalid(format!("a matrix offset of {v}")));
    }
    Ok(v as usize)
}

fn need_code(need: Need) -> u64 {
    match need {
        Need::All => 0,
        Need::Lower => 1,
        Need::Upper => 2,
    }
}

fn need_from(code: u64) -> io::Result<Need> {
    match code {
        0 => Ok(Need::All),
        1 => Ok(Need::Lower),
        _ => Err(invalid(format!("product need {code}"))),
    }
}

impl Request {
    /// What each cross term of a product lays out: everything, or for a symmetric product
    /// (`Need::Lower`) the left term's lower triangle and the transposed right term's upper one.
    pub fn needs(need: Need) -> (Need, Need) {
        match need {
            Need::All => (Need::All, Need::All),
            _ => (Need::Lower, Need::Upper),
        }
    }

    /// The payload.
    pub fn encode(&self, key: &PublicKey) -> Vec<u8> {
        let w = Writer::new();
        match self {
            Request::View {
                id,
                widths: x,
                masked,
            } => {
                let w = widths(w.u64(VIEW).u64(*id), *x);
                match masked {
                    Masked::Matrix(m) => m.write(key, w.u64(0)).finish(),
                    Masked::Lower(d, v) => w.u64(*d as u64).bytes(&v.to_bytes(key)).finish(),
                }
            }
            Request::Slice { id, from, window } => {
                window.write(w.u64(SLICE).u64(*id).u64(*from)).finish()
            }
            Request::Transpose { id, from } => w.u64(TRANSPOSE).u64(*id).u64(*from).finish(),
            Request::Combine { id, terms, offset } => {
                let mut w = w.u64(COMBINE).u64(*id).u64(terms.len() as u64);
                for (t, negate) in terms {
                    w = w.u64(*t).u64(u64::from(*negate));
                }
                int(w, offset).finish()
            }
            Request::Assemble {
                id,
                rows,
                cols,
                blocks,
            } => {
                let mut w = w
                    .u64(ASSEMBLE)
                    .u64(*id)
                    .u64(*rows as u64)
                    .u64(*cols as u64)
                    .u64(blocks.len() as u64);
                for (b, r0, c0, t) in blocks {
                    w = w.u64(*b).u64(*r0 as u64).u64(*c0 as u64).u64(u64::from(*t));
                }
                w.finish()
            }
            Request::Trace { id, from } => w.u64(TRACE).u64(*id).u64(*from).finish(),
            Request::Zeros { id, rows, cols } => w
                .u64(ZEROS)
                .u64(*id)
                .u64(*rows as u64)
                .u64(*cols as u64)
                .finish(),
            Request::Drop { ids } => {
                let mut w = w.u64(DROP).u64(ids.len() as u64);
                for i in ids {
                    w = w.u64(*i);
                }
                w.finish()
            }
            Request::Encrypt {
                id,
                transpose,
                slot_bits,
                offset,
            } => w
                .u64(ENCRYPT)
                .u64(*id)
                .u64(u64::from(*transpose))
                .u64(u64::from(*slot_bits))
                .u64(*offset as u64)
                .finish(),
            Request::Product(p) => p.write(key, w.u64(PRODUCT)).finish(),
            Request::DealerSeed { seed } => w.u64(DEALER_SEED).bytes(&seed.to_bytes(key)).finish(),
            Request::DealtProduct(p) => p.write(w.u64(DEALT_PRODUCT)).finish(),
            Request::DealtShare(f) => {
                let w = w
                    .u64(DEALT_SHARE)
                    .u64(f.id)
                    .u64(need_code(f.need))
                    .u64(u64::from(f.frac));
                product_out(f.share.write(w), &f.out).finish()
            }
            Request::BlockLeaf { x, shape, output } => {
                shape.write(w.u64(BLOCK_LEAF).u64(*x).u64(*output)).finish()
            }
            Request::Leaf(l) => l.write(w.u64(LEAF)).finish(),
        }
    }

    /// Reads a payload, bounding every size before allocating for it.
    pub fn decode(key: &PublicKey, payload: &[u8]) -> Result<Self, PaillierError> {
        let mut r = Reader::new(payload);
        let request = Self::read(key, &mut r)?;
        r.end().map_err(format)?;
        Ok(request)
    }

    fn read(key: &PublicKey, r: &mut Reader<'_>) -> Result<Self, PaillierError> {
        Ok(match r.u64().map_err(format)? {
            VIEW => Request::View {
                id: r.u64().map_err(format)?,
                widths: read_widths(r).map_err(format)?,
                masked: Masked::read(key, r)?,
            },
            SLICE => Request::Slice {
                id: r.u64().map_err(format)?,
                from: r.u64().map_err(format)?,
                window: Window::read(r).map_err(format)?,
            },
            TRANSPOSE => Request::Transpose {
                id: r.u64().map_err(format)?,
                from: r.u64().map_err(format)?,
            },
            COMBINE => {
                let id = r.u64().map_err(format)?;
                let count = read_within(r, "terms in a combination", 1..=16)?;
                let terms = (0..count)
                    .map(|_| Ok((r.u64()?, r.u64()? == 1)))
                    .collect::<io::Result<Vec<_>>>()
                    .map_err(format)?;
                let offset = read_int(r).map_err(format)?;
                Request::Combine { id, terms, offset }
            }
            ASSEMBLE => {
                let id = r.u64().map_err(format)?;
                let rows = side(r.u64().map_err(format)?).map_err(format)?;
                let cols = side(r.u64().map_err(format)?).map_err(format)?;
                let count = read_within(r, "blocks in an assembly", 1..=16)?;
                let blocks = (0..count)
                    .map(|_| {
                        Ok((
                            r.u64()?,
                            offset(r.u64()?)?,
                            offset(r.u64()?)?,
                            r.u64()? == 1,
                        ))
                    })
                    .collect::<io::Result<Vec<_>>>()
                    .map_err(format)?;
                Request::Assemble {
                    id,
                    rows,
                    cols,
                    blocks,
                }
            }
            TRACE => Request::Trace {
                id: r.u64().map_err(format)?,
                from: r.u64().map_err(format)?,
            },
            ZEROS => Request::Zeros {
                id: r.u64().map_err(format)?,
                rows: side(r.u64().map_err(format)?).map_err(format)?,
                cols: side(r.u64().map_err(format)?).map_err(format)?,
            },
            DROP => {
                let count = read_within(r, "views dropped at once", 0..=1 << 20)?;
                let ids = (0..count)
                    .map(|_| r.u64())
                    .collect::<io::Result<Vec<_>>>()
                    .map_err(format)?;
                Request::Drop { ids }
            }
            ENCRYPT => {
                let id = r.u64().map_err(format)?;
                let transpose = r.u64().map_err(format)? == 1;
                let slot_bits = read_within(r, "slot width (bits)", 2..=key.bits())?;
                let offset = offset(r.u64().map_err(format)?).map_err(format)?;
                Request::Encrypt {
                    id,
                    transpose,
                    slot_bits: slot_bits as u32,
                    offset,
                }
            }
            PRODUCT => Request::Product(ProductRequest::read(key, r)?),
            DEALER_SEED => {
                let seed = EncryptedVector::from_bytes(key, r.bytes().map_err(format)?)?;
                if seed.len() != 1 {
                    return Err(PaillierError::Format(Malformed::Length {
                        what: "a dealer's seed (values)",
                        got: seed.len(),
                        expected: 1,
                    }));
                }
                Request::DealerSeed { seed }
            }
            DEALT_PRODUCT => Request::DealtProduct(DealtProductRequest::read(r)?),
            DEALT_SHARE => {
                let id = r.u64().map_err(format)?;
                let need = need_from(r.u64().map_err(format)?).map_err(format)?;
                let frac = read_frac(r).map_err(format)?;
                let share =
                    IntMatrix::read(r, MAX_SIDE * MAX_SIDE, MAX_SHARE_BITS).map_err(format)?;
                let out = read_product_out(r).map_err(format)?;
                Request::DealtShare(Finish {
                    id,
                    need,
                    frac,
                    share,
                    out,
                })
            }
            BLOCK_LEAF => {
                let x = r.u64().map_err(format)?;
                let output = r.u64().map_err(format)?;
                let shape = BlockShape::read(r).map_err(format)?;
                Request::BlockLeaf { x, shape, output }
            }
            LEAF => Request::Leaf(LeafRequest::read(r)?),
            other => {
                return Err(PaillierError::Format(Malformed::Value {
                    what: "unknown masked request",
                    value: other,
                }));
            }
        })
    }
}

impl Masked {
    fn read(key: &PublicKey, r: &mut Reader<'_>) -> Result<Self, PaillierError> {
        let lower = r.u64().map_err(format)?;
        if lower == 0 {
            return Ok(Masked::Matrix(PackedMatrix::read(
                key,
                r,
                MAX_SIDE * MAX_SIDE,
            )?));
        }
        let d = side(lower).map_err(format)?;
        let v = EncryptedVector::from_bytes(key, r.bytes().map_err(format)?)?;
        if v.len() != d * (d + 1) / 2 {
            return Err(PaillierError::Format(Malformed::Length {
                what: "values of a lower triangle",
                got: v.len(),
                expected: d * (d + 1) / 2,
            }));
        }
        Ok(Masked::Lower(d, v))
    }
}

/// The largest integer share a request carries, in bits (twice the widest circuit word).
const MAX_SHARE_BITS: u64 = 2 * MAX_WIDTH as u64;

impl ProductRequest {
    fn write(&self, key: &PublicKey, w: Writer) -> Writer {
        let (m, k, n) = self.shape;
        let f = &self.finish;
        let w = w
            .u64(self.x)
            .u64(self.y)
            .u64(f.id)
            .u64(m as u64)
            .u64(k as u64)
            .u64(n as u64)
            .u64(need_code(f.need))
            .u64(u64::from(f.frac));
        let w = widths(self.left_cross.write(key, w), self.left_widths);
        let w = widths(self.right_cross.write(key, w), self.right_widths);
        product_out(f.share.write(w), &f.out)
    }

    fn read(key: &PublicKey, r: &mut Reader<'_>) -> Result<Self, PaillierError> {
        let x = r.u64().map_err(format)?;
        let y = r.u64().map_err(format)?;
        let id = r.u64().map_err(format)?;
        let m = side(r.u64().map_err(format)?).map_err(format)?;
        let k = side(r.u64().map_err(format)?).map_err(format)?;
        let n = side(r.u64().map_err(format)?).map_err(format)?;
        let need = need_from(r.u64().map_err(format)?).map_err(format)?;
        let frac = read_within(r, "fractional bits", 0..=u64::from(MAX_WIDTH))?;
        let (left_need, right_need) = Request::needs(need);
        let left_cross = CrossTerm::read(key, r, |s| layout(m, n, s, left_need).blocks.len())?;
        let left_widths = read_widths(r).map_err(format)?;
        let right_cross = CrossTerm::read(key, r, |s| layout(n, m, s, right_need).blocks.len())?;
        let right_widths = read_widths(r).map_err(format)?;
        let share = IntMatrix::read(r, MAX_SIDE * MAX_SIDE, MAX_SHARE_BITS).map_err(format)?;
        let out = read_product_out(r).map_err(format)?;
        Ok(ProductRequest {
            x,
            y,
            shape: (m, k, n),
            left_cross,
            left_widths,
            right_cross,
            right_widths,
            finish: Finish {
                id,
                need,
                frac: frac as u32,
                share,
                out,
            },
        })
    }
}

impl DealtProductRequest {
    fn write(&self, w: Writer) -> Writer {
        let (m, k, n) = self.shape;
        let (bx, by) = self.bounds;
        let w = w
            .u64(self.x)
            .u64(self.y)
            .u64(m as u64)
            .u64(k as u64)
            .u64(n as u64)
            .u64(u64::from(bx))
            .u64(u64::from(by))
            .u64(self.index);
        self.f_right.write(self.f_left.write(w))
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, PaillierError> {
        let x = r.u64().map_err(format)?;
        let y = r.u64().map_err(format)?;
        let m = side(r.u64().map_err(format)?).map_err(format)?;
        let k = side(r.u64().map_err(format)?).map_err(format)?;
        let n = side(r.u64().map_err(format)?).map_err(format)?;
        let bx = r.u64().map_err(format)?;
        let by = r.u64().map_err(format)?;
        if let Some((what, value)) = [("left bound (bits)", bx), ("right bound (bits)", by)]
            .into_iter()
            .find(|&(_, bits)| bits > u64::from(MAX_WIDTH))
        {
            return Err(PaillierError::Format(Malformed::Value { what, value }));
        }
        let index = r.u64().map_err(format)?;
        let f_left = IntMatrix::read(r, MAX_SIDE * MAX_SIDE, MAX_SHARE_BITS).map_err(format)?;
        let f_right = IntMatrix::read(r, MAX_SIDE * MAX_SIDE, MAX_SHARE_BITS).map_err(format)?;
        Ok(DealtProductRequest {
            x,
            y,
            shape: (m, k, n),
            bounds: (bx as u32, by as u32),
            index,
            f_left,
            f_right,
        })
    }
}

impl LeafRequest {
    fn write(&self, w: Writer) -> Writer {
        let w = widths(w.u64(self.kind.code()).u64(self.x), self.input);
        let mut w = int(w, &self.threshold)
            .u64(u64::from(self.frac))
            .u64(self.outputs.len() as u64);
        for (id, o) in &self.outputs {
            w = widths(w.u64(*id), *o);
        }
        w
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, PaillierError> {
        let kind = LeafKind::from_code(r.u64().map_err(format)?).map_err(format)?;
        let x = r.u64().map_err(format)?;
        let input = read_widths(r).map_err(format)?;
        let threshold = read_int(r).map_err(format)?;
        let frac = read_within(r, "fractional bits", 0..=u64::from(MAX_WIDTH) / 4)?;
        let outputs = kind.outputs() as u64;
        let count = read_within(r, "leaf outputs", outputs..=outputs)?;
        let outputs = (0..count)
            .map(|_| Ok((r.u64()?, read_widths(r)?)))
            .collect::<io::Result<Vec<_>>>()
            .map_err(format)?;
        Ok(LeafRequest {
            kind,
            x,
            input,
            threshold,
            frac: frac as u32,
            outputs,
        })
    }
}

/// The next number, refused by name unless within `range`.
fn read_within(
    r: &mut Reader<'_>,
    what: &'static str,
    range: RangeInclusive<u64>,
) -> Result<u64, PaillierError> {
    let value = r.u64().map_err(format)?;
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(PaillierError::Format(Malformed::Value { what, value }))
    }
}

fn format(e: io::Error) -> PaillierError {
    PaillierError::Format(Malformed::Read(e))
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// Largest block side a circuit inverts (the circuit grows as the cube of the side).
pub const MAX_BLOCK: usize = 8;

/// What both servers know of one block inversion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockShape {
    /// The block's side `k`.
    pub size: usize,
    /// Every input entry's bound and mask.
    pub input: Widths,
    /// Bits of the bound on the block's entries and Schur complements (pivots must lie below
    /// `2^entry`).
    pub entry: u32,
    /// Signed width of every value inside the circuit (above every intermediate's bound).
    pub width: u32,
    /// Smallest admissible pivot, integer units.
    pub threshold: BigInt,
    /// Fractional bits.
    pub frac: u32,
    /// Every output entry's bound and mask.
    pub output: Widths,
}

impl BlockShape {
    fn write(&self, w: Writer) -> Writer {
        let w = w
            .u64(self.size as u64)
            .u64(u64::from(self.entry))
            .u64(u64::from(self.width))
            .u64(u64::from(self.frac));
        let w = widths(widths(w, self.input), self.output);
        int(w, &self.threshold)
    }

    fn read(r: &mut Reader<'_>) -> io::Result<Self> {
        let size = r.u64()?;
        let entry = r.u64()?;
        let width = r.u64()?;
        let frac = r.u64()?;
        let numbers = [size, entry, width, frac];
        if numbers.iter().any(|&v| v > u64::from(MAX_WIDTH)) {
            return Err(invalid(format!("a block circuit's numbers {numbers:?}")));
        }
        let input = read_widths(r)?;
        let output = read_widths(r)?;
        let threshold = read_int(r)?;
        let shape = BlockShape {
            size: size as usize,
            input,
            entry: entry as u32,
            width: width as u32,
            threshold,
            frac: frac as u32,
            output,
        };
        shape.check().map_err(|e| invalid(e.to_string()))?;
        Ok(shape)
    }

    /// Entries of the lower triangle, the inputs and outputs in row order (`i >= j`).
    pub fn triangle(&self) -> usize {
        self.size * (self.size + 1) / 2
    }

    /// Whether the numbers are ones a circuit can be built for.
    pub fn check(&self) -> Result<(), BlockFault> {
        let w = self.width;
        if self.size == 0 || self.size > MAX_BLOCK {
            return Err(BlockFault::Side {
                size: self.size,
                max: MAX_BLOCK,
            });
        }
        if !(8..=512).contains(&w) || self.frac == 0 || 2 * self.frac + 2 > 4 * w {
            return Err(BlockFault::Words {
                width: w,
                frac: self.frac,
            });
        }
        if self.entry + 2 > w || self.input.bound + 2 > w || self.output.bound + 1 > w {
            return Err(BlockFault::Bounds {
                width: w,
                entry: self.entry,
                input: self.input.bound,
                output: self.output.bound,
            });
        }
        if self.input.mask < self.input.bound || self.output.mask < self.output.bound {
            return Err(BlockFault::NarrowMask);
        }
        Ok(())
    }
}
