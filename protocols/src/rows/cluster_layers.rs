//! The description of a cluster's rows that travels with every request: the engine that runs
//! requests on the partitions ([`PartitionEngine`]) and the [`Layer`]s, one per wrapper source
//! between the raw rows and the rows a sum is taken over, with the bytes they travel as. The
//! wrappers add their layer here ([`super::RowSource::partitioned`]); [`super::partitioned`] rebuilds
//! them on a partition.

use std::fmt::Debug;
use std::sync::Arc;

use super::rows_error::{RowsError, RowsProblem};

/// Runs a request on every partition of a cluster's rows, where the rows are.
pub trait PartitionEngine: Send + Sync + Debug {
    /// A name for messages ("Spark DataFrame (8 partitions)").
    fn describe(&self) -> String;

    /// Rows over all the partitions (counted once, before the study).
    fn rows(&self) -> usize;

    /// The raw columns' names, in the order a partition hands its rows over.
    fn names(&self) -> Vec<String>;

    /// Hands `request` to [`super::partitioned::answer_partition`] on every partition (with that partition's first
    /// row and raw rows) and returns the answers in partition order.
    fn run(&self, request: &[u8]) -> Result<Vec<Vec<u8>>, RowsError>;
}

/// How a source's sums are computed in a cluster: the engine, and the layers that turn a
/// partition's raw rows into the rows the source hands over.
#[derive(Debug, Clone)]
pub struct Partitioned {
    /// Runs requests on the partitions.
    pub engine: Arc<dyn PartitionEngine>,
    /// Wrappers from the raw rows outward, in the order they apply.
    pub layers: Vec<Layer>,
}

impl Partitioned {
    /// The raw rows of `engine`'s partitions.
    pub fn new(engine: Arc<dyn PartitionEngine>) -> Self {
        Self {
            engine,
            layers: Vec::new(),
        }
    }

    /// The same rows with `layer` applied on top.
    pub fn with(mut self, layer: Layer) -> Self {
        self.layers.push(layer);
        self
    }
}

/// One wrapper between raw rows and the rows a sum is taken over.
#[derive(Debug, Clone, PartialEq)]
pub enum Layer {
    /// [`super::reordered::Reordered`]: for each output column, the input column it comes from.
    Reordered(Vec<usize>),
    /// [`super::constant::WithConstants`]: these values appended to every row.
    Constants(Vec<f64>),
    /// [`super::design::DesignRows`]: its settings.
    Design(DesignLayer),
}

/// What a [`super::design::DesignRows`] does to its rows: intercept, trailing columns,
/// standardisation and unit norm.
#[derive(Debug, Clone, PartialEq)]
pub struct DesignLayer {
    /// An intercept column first.
    pub intercept: bool,
    /// Trailing columns passed through.
    pub trailing: usize,
    /// Pooled means and scales.
    pub standardize: Option<(Vec<f64>, Vec<f64>)>,
    /// Each row scaled to norm 1.
    pub unit_norm: bool,
}

impl Layer {
    /// Appends this layer's bytes.
    pub fn write(&self, out: &mut Bytes) {
        match self {
            Layer::Reordered(order) => {
                out.u8(0);
                out.u64(order.len() as u64);
                order.iter().for_each(|&j| out.u64(j as u64));
            }
            Layer::Constants(values) => {
                out.u8(1);
                out.f64s(values);
            }
            Layer::Design(design) => {
                out.u8(2);
                out.u8(u8::from(design.intercept) | (u8::from(design.unit_norm) << 1));
                out.u64(design.trailing as u64);
                match &design.standardize {
                    Some((means, scales)) => {
                        out.u8(1);
                        out.f64s(means);
                        out.f64s(scales);
                    }
                    None => out.u8(0),
                }
            }
        }
    }

    /// Reads what [`Layer::write`] wrote.
    pub fn read(input: &mut Read<'_>) -> Result<Self, RowsError> {
        Ok(match input.u8()? {
            0 => {
                let len = input.count()?;
                Layer::Reordered(
                    (0..len)
                        .map(|_| input.u64().map(|j| j as usize))
                        .collect::<Result<_, _>>()?,
                )
            }
            1 => Layer::Constants(input.f64s()?),
            2 => {
                let flags = input.u8()?;
                let trailing = input.u64()? as usize;
                let standardize = match input.u8()? {
                    0 => None,
                    _ => Some((input.f64s()?, input.f64s()?)),
                };
                Layer::Design(DesignLayer {
                    intercept: flags & 1 != 0,
                    trailing,
                    standardize,
                    unit_norm: flags & 2 != 0,
                })
            }
            tag => return Err(input.unknown("layer", tag)),
        })
    }
}

/// Little-endian bytes of a request or an answer.
#[derive(Default)]
pub struct Bytes(pub Vec<u8>);

impl Bytes {
    /// One byte.
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    /// A u64.
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// A length, then the values' bits.
    pub fn f64s(&mut self, v: &[f64]) {
        self.u64(v.len() as u64);
        v.iter()
            .for_each(|x| self.0.extend_from_slice(&x.to_le_bytes()));
    }
}

/// Reads what [`Bytes`] wrote, refusing anything short or malformed.
pub struct Read<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl<'a> Read<'a> {
    /// A reader of `bytes`, named `what` in errors.
    pub fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Self { bytes, what }
    }

    /// An error naming what is read.
    pub fn malformed(&self, why: &'static str) -> RowsError {
        RowsError::new(self.what, RowsProblem::Malformed(why))
    }

    /// An error naming what is read: a tag of `what` that names nothing known.
    pub fn unknown(&self, what: &'static str, tag: u8) -> RowsError {
        RowsError::new(self.what, RowsProblem::UnknownTag { what, tag })
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], RowsError> {
        if self.bytes.len() < n {
            return Err(self.malformed("it ends early"));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    /// One byte.
    pub fn u8(&mut self) -> Result<u8, RowsError> {
        Ok(self.take(1)?[0])
    }

    /// A u64.
    pub fn u64(&mut self) -> Result<u64, RowsError> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("eight bytes")))
    }

    /// A count of things that follow, each at least a byte: no larger than what is left.
    pub fn count(&mut self) -> Result<usize, RowsError> {
        let n = self.u64()?;
        if n > self.bytes.len() as u64 {
            return Err(self.malformed("a count beyond its bytes"));
        }
        Ok(n as usize)
    }

    /// What [`Bytes::f64s`] wrote.
    pub fn f64s(&mut self) -> Result<Vec<f64>, RowsError> {
        let n = self.u64()?;
        if n > (self.bytes.len() / 8) as u64 {
            return Err(self.malformed("a count beyond its bytes"));
        }
        let b = self.take(n as usize * 8)?;
        Ok(b.chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("eight bytes")))
            .collect())
    }

    /// Whatever is left.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.bytes)
    }

    /// Refuses bytes left over.
    pub fn end(&self) -> Result<(), RowsError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(self.malformed("bytes left over"))
        }
    }
}
