//! Rows that live in a cluster (a Spark or Dask DataFrame's partitions), summed where they are.
//!
//! A Node whose rows sit in a cluster keeps the protocol (keys, encryption, messages) in its own
//! process and sends every per-row sum out to the partitions: an engine (the Python package's
//! Spark and Dask front ends) runs one request on every partition with privlogit's own kernels
//! and hands back one answer per partition, which this process combines.
//!
//! **Same sums whatever the partitioning.** A Node's sums are formed over fixed blocks of
//! [`BLOCK_ROWS`] rows counted from its first row and merged in block order
//! ([`super::blocks`]). A partition knows the index of its first row (`offset`), so it computes
//! the blocks that lie wholly inside it and returns the rows at its two edges as they are; this
//! process forms the blocks that straddle partitions (or end the data) from those rows and
//! merges every block's partial in block order. Every floating-point operation is then grouped
//! exactly as a file Node groups it: the same rows in the same order give the same bits, on 1 or
//! 17 partitions, on Spark, Dask or a file. (Rows in another order, after a shuffle, give sums
//! equal to the compensated accumulators' rounding instead.) The same bits also need the same
//! arithmetic everywhere: the executors and the Node on one build of privlogit and CPUs with the
//! same vector features (the matrix products pick an FMA kernel at run time, `exp` and `ln` come
//! from the platform's maths library); on mixed machines the sums agree to rounding.
//!
//! **The design travels with the request.** The transformations between a source's raw columns
//! and the design a sum is taken over (columns moved or left out, constant columns, the
//! intercept, pooled standardisation, unit norm) are described by [`Layer`]s that each wrapper
//! source adds to [`RowSource::partitioned`]; a partition rebuilds the same wrappers over its
//! raw rows, so the design's values are computed by the same code.

use std::collections::BTreeMap;
use std::sync::Arc;

use ndarray::{Array1, Array2, ArrayView1, ArrayView2};

use super::blocks::{BLOCK_ROWS, for_each_block};
pub use super::cluster_layers::{Bytes, DesignLayer, Layer, PartitionEngine, Partitioned, Read};
use super::constant::WithConstants;
use super::design::DesignRows;
use super::memory::MemoryRows;
use super::reordered::Reordered;
use super::row_source::{ChunkVisitor, RowSource};
use super::rows_error::{RowsError, RowsProblem};
use crate::compensated::CompensatedSum;

/// One block's partial sums, merged into the running accumulators as the local Node merges
/// them: a plain vector (one matrix product) as one term per accumulator, compensated
/// accumulators by [`CompensatedSum::merge`].
#[derive(Debug, Clone, PartialEq)]
pub enum BlockPartial {
    /// Plain sums.
    Plain(Vec<f64>),
    /// Compensated sums.
    Compensated(CompensatedSum),
}

impl BlockPartial {
    /// Adds this block into `total`.
    pub fn merge_into(&self, total: &mut CompensatedSum) {
        match self {
            BlockPartial::Plain(v) => total.add_scaled(0, v, 1.0),
            BlockPartial::Compensated(c) => total.merge(c),
        }
    }

    fn write(&self, out: &mut Bytes) {
        match self {
            BlockPartial::Plain(v) => {
                out.u8(0);
                out.f64s(v);
            }
            BlockPartial::Compensated(c) => {
                let (hi, lo) = c.parts();
                out.u8(1);
                out.f64s(hi);
                out.f64s(lo);
            }
        }
    }

    fn read(input: &mut Read<'_>) -> Result<Self, RowsError> {
        Ok(match input.u8()? {
            0 => BlockPartial::Plain(input.f64s()?),
            1 => {
                let (hi, lo) = (input.f64s()?, input.f64s()?);
                if hi.len() != lo.len() {
                    return Err(input.malformed("compensated sums of two lengths"));
                }
                BlockPartial::Compensated(CompensatedSum::from_parts(hi, lo))
            }
            tag => return Err(input.unknown("partial", tag)),
        })
    }
}

/// A block's partial sums over its rows (already transformed by the layers).
pub type BlockFn<'a> = dyn Fn(ArrayView2<'_, f64>, ArrayView1<'_, f64>) -> BlockPartial + Sync + 'a;

/// A request's layers and, after them, the kernel's own bytes (which the caller decodes).
pub fn write_request(layers: &[Layer], kernel: &[u8]) -> Vec<u8> {
    let mut out = Bytes::default();
    out.u64(layers.len() as u64);
    layers.iter().for_each(|l| l.write(&mut out));
    out.0.extend_from_slice(kernel);
    out.0
}

/// The layers of a request and the rest of its bytes (the kernel's).
pub fn read_request(request: &[u8]) -> Result<(Vec<Layer>, &[u8]), RowsError> {
    let mut input = Read::new(request, "a partition request");
    let count = input.count()?;
    let layers = (0..count)
        .map(|_| Layer::read(&mut input))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((layers, input.rest()))
}

/// `raw` wrapped in `layers`, innermost first.
pub fn wrapped(raw: Arc<dyn RowSource>, layers: &[Layer]) -> Result<Arc<dyn RowSource>, RowsError> {
    layers.iter().try_fold(raw, |rows, layer| wrap(layer, rows))
}

/// `inner` wrapped as `layer` describes.
fn wrap(layer: &Layer, inner: Arc<dyn RowSource>) -> Result<Arc<dyn RowSource>, RowsError> {
    let malformed =
        |what: &'static str| RowsError::new(inner.describe(), RowsProblem::Malformed(what));
    Ok(match layer {
        Layer::Reordered(order) => {
            if order.iter().any(|&j| j >= inner.columns()) {
                return Err(malformed("a column order beyond the rows' columns"));
            }
            Arc::new(Reordered::with_order(inner, order.clone()))
        }
        Layer::Constants(values) => {
            let names = (1..=values.len()).map(|k| format!("c{k}")).collect();
            Arc::new(WithConstants::new(inner, names, values.clone()))
        }
        Layer::Design(settings) => {
            if settings.trailing > inner.columns() {
                return Err(malformed("more trailing columns than columns"));
            }
            let mut design =
                DesignRows::new(inner, settings.intercept).with_trailing(settings.trailing);
            if let Some((means, scales)) = &settings.standardize {
                design = design.standardized(means.clone(), scales.clone())?;
            }
            if settings.unit_norm {
                design = design.unit_norm();
            }
            Arc::new(design)
        }
    })
}

/// A run of raw rows: where it starts among the source's rows, and its values.
#[derive(Debug, Clone, PartialEq)]
struct RawRun {
    start: u64,
    x: Vec<f64>,
    y: Vec<f64>,
}

/// What one partition answers: its first row and row count, the partials of the blocks wholly
/// inside it, and its raw rows before the first and after the last of those blocks.
#[derive(Debug, Clone, PartialEq)]
struct PartitionAnswer {
    offset: u64,
    rows: u64,
    blocks: Vec<(u64, BlockPartial)>,
    edges: Vec<RawRun>,
}

/// The answer of the partition whose raw rows are `raw` and whose first row is row `offset` of
/// the source: `partial` on every whole block inside it (wrapped in `layers` first), the rows
/// of the blocks it shares with its neighbours as they are.
pub fn answer_partition(
    raw: MemoryRows,
    offset: u64,
    layers: &[Layer],
    partial: &BlockFn<'_>,
) -> Result<Vec<u8>, RowsError> {
    let (n, width) = (raw.rows() as u64, raw.columns());
    if offset > 1 << 62 {
        return Err(RowsError::new(
            "a partition",
            RowsProblem::OffsetBeyond { offset },
        ));
    }
    let block = BLOCK_ROWS as u64;
    let first_whole = offset.div_ceil(block) * block;
    let end = offset + n;
    let whole = if first_whole < end {
        (end - first_whole) / block
    } else {
        0
    };
    let from = first_whole.min(end);
    let to = from + whole * block;
    let run = |a: u64, b: u64| {
        let (i, j) = ((a - offset) as usize, (b - offset) as usize);
        RawRun {
            start: a,
            x: raw.x().as_slice().expect("standard layout")[i * width..j * width].to_vec(),
            y: raw.y().as_slice().expect("contiguous")[i..j].to_vec(),
        }
    };
    let mut edges = vec![run(offset, from), run(to, end)];
    edges.retain(|e| !e.y.is_empty());
    let mut blocks = Vec::with_capacity(whole as usize);
    if whole > 0 {
        let (i, j) = ((from - offset) as usize, (to - offset) as usize);
        // The whole blocks' rows in place: a row range of the partition's own arrays.
        let (x, y, names) = raw.into_parts();
        let inner = MemoryRows::new(
            x.slice_move(ndarray::s![i..j, ..]),
            y.slice_move(ndarray::s![i..j]),
        )
        .with_names(names);
        let rows = wrapped(Arc::new(inner), layers)?;
        let mut index = first_whole / block;
        for_each_block(rows.as_ref(), partial, |b| {
            blocks.push((index, b));
            index += 1;
        })?;
    }
    let answer = PartitionAnswer {
        offset,
        rows: n,
        blocks,
        edges,
    };
    Ok(answer.write(width))
}

impl PartitionAnswer {
    fn write(&self, width: usize) -> Vec<u8> {
        let mut out = Bytes::default();
        out.u64(self.offset);
        out.u64(self.rows);
        out.u64(width as u64);
        out.u64(self.blocks.len() as u64);
        for (index, partial) in &self.blocks {
            out.u64(*index);
            partial.write(&mut out);
        }
        out.u64(self.edges.len() as u64);
        for e in &self.edges {
            out.u64(e.start);
            out.f64s(&e.x);
            out.f64s(&e.y);
        }
        out.0
    }

    fn read(bytes: &[u8], width: usize) -> Result<Self, RowsError> {
        let mut input = Read::new(bytes, "a partition's answer");
        let (offset, rows) = (input.u64()?, input.u64()?);
        if input.u64()? != width as u64 {
            return Err(input.malformed("rows of another width"));
        }
        let count = input.count()?;
        let mut blocks = Vec::with_capacity(count.min(1 << 16));
        for _ in 0..count {
            let index = input.u64()?;
            blocks.push((index, BlockPartial::read(&mut input)?));
        }
        let count = input.count()?;
        let mut edges = Vec::with_capacity(count.min(4));
        for _ in 0..count {
            let start = input.u64()?;
            let (x, y) = (input.f64s()?, input.f64s()?);
            if x.len() != y.len() * width {
                return Err(input.malformed("edge rows of the wrong shape"));
            }
            edges.push(RawRun { start, x, y });
        }
        input.end()?;
        Ok(Self {
            offset,
            rows,
            blocks,
            edges,
        })
    }
}

/// The sums of `len` accumulators over all the partitions' rows, from their `answers` (in
/// partition order): the blocks that straddle partitions formed from the edge rows (wrapped in
/// `layers`, summed by `partial`), every block merged in block order. Refuses answers that do
/// not cover rows `0..rows` once each, in order.
pub fn combine(
    answers: &[Vec<u8>],
    cluster: &Partitioned,
    partial: &BlockFn<'_>,
    len: usize,
) -> Result<CompensatedSum, RowsError> {
    let (engine, layers) = (&cluster.engine, &cluster.layers);
    let names = engine.names();
    let width = names.len();
    let wrong = |what: String| RowsError::new(engine.describe(), what);
    let mut partials: BTreeMap<u64, BlockPartial> = BTreeMap::new();
    let mut straddling: BTreeMap<u64, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let block = BLOCK_ROWS as u64;
    let mut next = 0u64;
    for (k, bytes) in answers.iter().enumerate() {
        let answer = PartitionAnswer::read(bytes, width)?;
        if answer.offset != next {
            return Err(wrong(format!(
                "partition {k} starts at row {} where row {next} was due (the partitions \
                 changed since they were counted)",
                answer.offset
            )));
        }
        let end = next
            .checked_add(answer.rows)
            .ok_or_else(|| wrong(format!("partition {k} claims {} rows", answer.rows)))?;
        for (index, partial) in answer.blocks {
            let first = index.saturating_mul(block);
            if first < next || first.saturating_add(block) > end {
                return Err(wrong(format!(
                    "partition {k} answered block {index}, not its own"
                )));
            }
            if partials.insert(index, partial).is_some() {
                return Err(wrong(format!("block {index} answered twice")));
            }
        }
        for edge in answer.edges {
            let len = edge.y.len() as u64;
            if edge.start < next || edge.start.saturating_add(len) > end {
                return Err(wrong(format!("partition {k} sent rows outside its own")));
            }
            for (i, y) in edge.y.iter().enumerate() {
                let row = edge.start + i as u64;
                let (xs, ys) = straddling.entry(row / block).or_default();
                xs.extend_from_slice(&edge.x[i * width..(i + 1) * width]);
                ys.push(*y);
            }
        }
        next = end;
    }
    if next != engine.rows() as u64 {
        return Err(wrong(format!(
            "the partitions hold {next} rows, {} when they were counted",
            engine.rows()
        )));
    }
    for (index, (xs, ys)) in straddling {
        let n = ys.len();
        let due = (engine.rows() as u64 - index * block).min(block);
        if n as u64 != due || partials.contains_key(&index) {
            return Err(wrong(format!(
                "block {index} formed from {n} rows where it has {due}"
            )));
        }
        let x = Array2::from_shape_vec((n, width), xs)
            .map_err(|e| RowsError::new(engine.describe(), RowsProblem::Shape(e)))?;
        let rows = MemoryRows::new(x, Array1::from(ys)).with_names(names.clone());
        let rows = wrapped(Arc::new(rows), layers)?;
        let mut formed = Vec::with_capacity(1);
        for_each_block(rows.as_ref(), partial, |b| formed.push(b))?;
        match (formed.pop(), formed.is_empty()) {
            (Some(b), true) => {
                partials.insert(index, b);
            }
            _ => return Err(wrong(format!("block {index} did not form one block"))),
        }
    }
    let expected = (engine.rows() as u64).div_ceil(block);
    if partials.len() as u64 != expected
        || partials.keys().next_back() != expected.checked_sub(1).as_ref()
    {
        return Err(wrong(format!(
            "{} blocks answered where the rows make {expected}",
            partials.len()
        )));
    }
    let mut total = CompensatedSum::zeros(len);
    for partial in partials.values() {
        if partial_len(partial) != len {
            return Err(wrong("a block's sums of the wrong length".into()));
        }
        partial.merge_into(&mut total);
    }
    Ok(total)
}

fn partial_len(partial: &BlockPartial) -> usize {
    match partial {
        BlockPartial::Plain(v) => v.len(),
        BlockPartial::Compensated(c) => c.len(),
    }
}

/// A request for every partition's raw rows (a scan of the source in this process).
pub fn rows_request() -> Vec<u8> {
    let mut out = Bytes::default();
    out.u64(u64::MAX);
    out.0
}

/// Whether `request` asks for the partition's raw rows.
pub fn asks_rows(request: &[u8]) -> bool {
    request == rows_request().as_slice()
}

/// A partition's raw rows as an answer to [`rows_request`].
pub fn answer_rows(raw: &MemoryRows, offset: u64) -> Vec<u8> {
    let answer = PartitionAnswer {
        offset,
        rows: raw.rows() as u64,
        blocks: Vec::new(),
        edges: vec![RawRun {
            start: offset,
            x: raw.x().iter().copied().collect(),
            y: raw.y().to_vec(),
        }],
    };
    answer.write(raw.columns())
}

/// Rows and their labels.
pub type Labelled = (Array2<f64>, Array1<f64>);

/// The raw rows of the answers to [`rows_request`], in order: `(x, y)` per partition.
pub fn rows_of(answers: &[Vec<u8>], width: usize) -> Result<Vec<Labelled>, RowsError> {
    let mut out = Vec::with_capacity(answers.len());
    let mut next = 0;
    for bytes in answers {
        let answer = PartitionAnswer::read(bytes, width)?;
        for e in answer.edges {
            if e.start != next {
                return Err(RowsError::new(
                    "a cluster's rows",
                    RowsProblem::OutOfOrder {
                        got: e.start,
                        due: next,
                    },
                ));
            }
            next += e.y.len() as u64;
            if e.y.is_empty() {
                continue;
            }
            let x = Array2::from_shape_vec((e.y.len(), width), e.x)
                .map_err(|err| RowsError::new("a cluster's rows", RowsProblem::Shape(err)))?;
            out.push((x, Array1::from(e.y)));
        }
    }
    Ok(out)
}

/// A cluster's rows as a [`RowSource`]: every sum goes to the partitions
/// ([`RowSource::partitioned`]); a plain scan (held-out rows' scores, a wrapper that adds no
/// layer) brings the rows here, a partition at a time.
#[derive(Debug, Clone)]
pub struct ClusterRows {
    engine: Arc<dyn PartitionEngine>,
}

impl ClusterRows {
    /// The rows `engine` runs requests on.
    pub fn new(engine: Arc<dyn PartitionEngine>) -> Self {
        Self { engine }
    }
}

impl RowSource for ClusterRows {
    fn describe(&self) -> String {
        self.engine.describe()
    }

    fn rows(&self) -> usize {
        self.engine.rows()
    }

    fn columns(&self) -> usize {
        self.engine.names().len()
    }

    fn names(&self) -> Vec<String> {
        self.engine.names()
    }

    fn scan(&self, visit: &mut ChunkVisitor<'_>) -> Result<(), RowsError> {
        let answers = self.engine.run(&rows_request())?;
        let rows = rows_of(&answers, self.columns())?;
        let total: usize = rows.iter().map(|(_, y)| y.len()).sum();
        if total != self.rows() {
            return Err(RowsError::new(
                self.describe(),
                RowsProblem::PartitionRows {
                    counted: self.rows(),
                    now: total,
                },
            ));
        }
        for (x, y) in rows {
            visit(x.view(), y.view())?;
        }
        Ok(())
    }

    fn partitioned(&self) -> Option<Partitioned> {
        Some(Partitioned::new(Arc::clone(&self.engine)))
    }
}
