//! Every per-row sum a Node computes, named: one [`RowJob`] per kind of sum, with the block
//! computation written once and run in this process or, for a source whose rows live in a
//! cluster, on its partitions ([`crate::rows::partitioned`]), where a job travels as bytes.

use ndarray::{ArrayView1, ArrayView2};

use super::family::{Family, Glm};
use super::gram::{design_gram, lower_gram};
use super::kernels;
use super::row_terms::dot;
use crate::compensated::CompensatedSum;
use crate::rows::blocks::for_each_block;
use crate::rows::partitioned::{
    self, BlockPartial, Bytes, Read, answer_partition, answer_rows, asks_rows, read_request,
    write_request,
};
use crate::rows::{MemoryRows, RowSource, RowsError, RowsProblem};
use ndarray::{Array1, Array2};

/// How many sums [`PartyData::constant_sums`](crate::objective::PartyData::constant_sums) returns.
pub const CONSTANT_SUMS: usize = 5;

/// A kind of per-row sum.
#[derive(Debug, Clone, PartialEq)]
pub enum RowKernel {
    /// The gradient `X^T (y - mu)` and the log-likelihood at `beta` (`p + 1` sums).
    Gradient(Vec<f64>),
    /// The goodness-of-fit sums that do not depend on the coefficients
    /// ([`CONSTANT_SUMS`]).
    Constants,
    /// The lower triangle of `X^T A X` at `beta`.
    Information(Vec<f64>),
    /// The lower triangle of `1/4 X^T W X` (the PrivLogit bound).
    Bound,
    /// Per feature, the sum of `x` or, given means, of `(x - mean)^2`.
    Moments(Option<Vec<f64>>),
    /// How many rows `beta` puts on the wrong side of their label (the separation probe).
    Misclassified(Vec<f64>),
    /// A 0/1 label's negatives and positives.
    Classes,
    /// How many rows end with a value that is not a positive number (a weight column moved
    /// last): a weighted model's check, made where the rows are.
    BadWeights,
}

/// A kind of sum over rows read as a model (its trailing offset and weight columns).
#[derive(Debug, Clone, PartialEq)]
pub struct RowJob {
    /// How the rows are read.
    pub glm: Glm,
    /// What is summed.
    pub kernel: RowKernel,
}

impl RowJob {
    /// `kernel` over rows read as `glm`.
    pub fn new(glm: Glm, kernel: RowKernel) -> Self {
        Self { glm, kernel }
    }

    /// How many sums the job forms over rows of `width` columns (trailing ones included).
    pub fn len(&self, width: usize) -> usize {
        let p = width.saturating_sub(self.glm.trailing());
        match &self.kernel {
            RowKernel::Gradient(_) => p + 1,
            RowKernel::Constants => CONSTANT_SUMS,
            RowKernel::Information(_) | RowKernel::Bound => p * (p + 1) / 2,
            RowKernel::Moments(_) => p,
            RowKernel::Misclassified(_) => 1,
            RowKernel::Classes => 2,
            RowKernel::BadWeights => 1,
        }
    }

    /// Refuses a job that does not fit rows of `width` columns (a request from elsewhere: its
    /// coefficients or means of another length, more trailing columns than columns).
    pub fn check(&self, width: usize) -> Result<(), String> {
        let p = width
            .checked_sub(self.glm.trailing())
            .ok_or_else(|| format!("{width} columns cannot hold the model's trailing columns"))?;
        let given = match &self.kernel {
            RowKernel::Gradient(v) | RowKernel::Information(v) | RowKernel::Misclassified(v) => {
                Some(v.len())
            }
            RowKernel::Moments(Some(m)) => Some(m.len()),
            _ => None,
        };
        match given {
            Some(n) if n != p => Err(format!("{n} values for {p} columns")),
            _ => Ok(()),
        }
    }

    /// The job's sums over one block of rows (standard layout, trailing columns last).
    pub fn partial(&self, x: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>) -> BlockPartial {
        let glm = self.glm;
        let width = x.ncols();
        let p = width - glm.trailing();
        let xs = x.as_slice().expect("blocks are in standard layout");
        let rows = || xs.chunks_exact(width.max(1)).zip(y.iter().copied());
        match &self.kernel {
            RowKernel::Gradient(beta) if glm.is_logistic() => {
                BlockPartial::Compensated(kernels::gradient_block(x, y, beta))
            }
            RowKernel::Gradient(beta) => {
                let mut acc = CompensatedSum::zeros(p + 1);
                for (row, label) in rows() {
                    let (offset, weight) = glm.offset_and_weight(row, p);
                    let eta = dot(&row[..p], beta) + offset;
                    let mu = glm.family.mean(eta);
                    acc.add_scaled(0, &row[..p], weight * (label - mu));
                    acc.add(p, weight * glm.family.log_likelihood_term(eta, label));
                }
                BlockPartial::Compensated(acc)
            }
            RowKernel::Constants => {
                let mut acc = CompensatedSum::zeros(CONSTANT_SUMS);
                for (row, label) in rows() {
                    let (offset, weight) = glm.offset_and_weight(row, p);
                    acc.add_scaled(0, &glm.family.null_terms(label, offset, weight), 1.0);
                    acc.add(3, weight * glm.family.saturated_term(label));
                    acc.add(4, weight.ln());
                }
                BlockPartial::Compensated(acc)
            }
            RowKernel::Information(beta) => {
                let weights: Vec<f64> = rows()
                    .map(|(row, _)| {
                        let (offset, weight) = glm.offset_and_weight(row, p);
                        let mu = glm.family.mean(dot(&row[..p], beta) + offset);
                        weight * glm.family.variance(mu)
                    })
                    .collect();
                BlockPartial::Plain(design_gram(x, p, Some(&weights), 1.0))
            }
            RowKernel::Bound if glm.trailing() == 0 => {
                BlockPartial::Plain(lower_gram(x, None, 0.25))
            }
            RowKernel::Bound => {
                let weights: Vec<f64> = rows()
                    .map(|(row, _)| glm.offset_and_weight(row, p).1)
                    .collect();
                BlockPartial::Plain(design_gram(x, p, Some(&weights), 0.25))
            }
            RowKernel::Moments(means) => {
                let mut acc = CompensatedSum::zeros(p);
                let mut term = vec![0.0; p];
                for (row, _) in rows() {
                    for (j, (t, x)) in term.iter_mut().zip(row).enumerate() {
                        *t = match means {
                            Some(m) => (x - m[j]) * (x - m[j]),
                            None => *x,
                        };
                    }
                    acc.add_scaled(0, &term, 1.0);
                }
                BlockPartial::Compensated(acc)
            }
            RowKernel::Misclassified(beta) => {
                let wrong = rows()
                    .filter(|(row, label)| {
                        let (offset, _) = glm.offset_and_weight(row, p);
                        let eta = dot(&row[..p], beta) + offset;
                        eta * (2.0 * label - 1.0) <= 0.0
                    })
                    .count();
                BlockPartial::Plain(vec![wrong as f64])
            }
            RowKernel::BadWeights => {
                let bad = rows()
                    .filter(|(row, _)| row.last().is_some_and(|w| !(w.is_finite() && *w > 0.0)))
                    .count();
                BlockPartial::Plain(vec![bad as f64])
            }
            RowKernel::Classes => {
                let positives = y.iter().filter(|&&label| label > 0.5).count();
                BlockPartial::Plain(vec![(y.len() - positives) as f64, positives as f64])
            }
        }
    }

    /// The job's sums over every row of `rows`: block by block in this process, or on the
    /// partitions of a cluster when the rows live in one.
    pub fn fold(&self, rows: &dyn RowSource) -> Result<CompensatedSum, RowsError> {
        let len = self.len(rows.columns());
        let partial = |x: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>| self.partial(x, y);
        if let Some(cluster) = rows.partitioned() {
            let request = write_request(&cluster.layers, &self.bytes());
            let answers = cluster.engine.run(&request)?;
            return partitioned::combine(&answers, &cluster, &partial, len);
        }
        let mut total = CompensatedSum::zeros(len);
        for_each_block(rows, partial, |b| b.merge_into(&mut total))?;
        Ok(total)
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = Bytes::default();
        let glm = self.glm;
        out.u8(glm.family as u8);
        out.u8(u8::from(glm.offset) | (u8::from(glm.weights) << 1));
        let (tag, values): (u8, Option<&Vec<f64>>) = match &self.kernel {
            RowKernel::Gradient(b) => (0, Some(b)),
            RowKernel::Constants => (1, None),
            RowKernel::Information(b) => (2, Some(b)),
            RowKernel::Bound => (3, None),
            RowKernel::Moments(m) => (4, m.as_ref()),
            RowKernel::Misclassified(b) => (5, Some(b)),
            RowKernel::Classes => (6, None),
            RowKernel::BadWeights => (7, None),
        };
        out.u8(tag);
        match values {
            Some(v) => {
                out.u8(1);
                out.f64s(v);
            }
            None => out.u8(0),
        }
        out.0
    }

    fn read(bytes: &[u8]) -> Result<Self, RowsError> {
        let mut input = Read::new(bytes, "a partition request's kernel");
        let family = match input.u8()? {
            0 => Family::Binomial,
            1 => Family::Poisson,
            2 => Family::Gaussian,
            f => return Err(input.unknown("family", f)),
        };
        let flags = input.u8()?;
        let glm = Glm {
            family,
            offset: flags & 1 != 0,
            weights: flags & 2 != 0,
        };
        let tag = input.u8()?;
        let values = match input.u8()? {
            0 => None,
            _ => Some(input.f64s()?),
        };
        input.end()?;
        let needs = |v: Option<Vec<f64>>| v.ok_or_else(|| input.malformed("coefficients missing"));
        let kernel = match tag {
            0 => RowKernel::Gradient(needs(values)?),
            1 => RowKernel::Constants,
            2 => RowKernel::Information(needs(values)?),
            3 => RowKernel::Bound,
            4 => RowKernel::Moments(values),
            5 => RowKernel::Misclassified(needs(values)?),
            6 => RowKernel::Classes,
            7 => RowKernel::BadWeights,
            t => return Err(input.unknown("kernel", t)),
        };
        Ok(Self { glm, kernel })
    }
}

/// A partition's answer to `request` (a [`RowJob`] in a cluster, or a request for its rows):
/// run where the partition's raw rows `x`, `y` (columns `names`) are, its first row being row
/// `offset` of the source named `source`. Refuses values that are not finite and labels the
/// job's family does not take, naming the row (counted from 1 over the whole source) and column.
pub fn answer(
    request: &[u8],
    offset: u64,
    x: Array2<f64>,
    y: Array1<f64>,
    names: Vec<String>,
    source: &str,
) -> Result<Vec<u8>, RowsError> {
    let at = |i: usize| format!("{source}, row {}", offset + i as u64 + 1);
    if x.nrows() != y.len() || names.len() != x.ncols() {
        return Err(RowsError::new(
            source,
            RowsProblem::PartitionShape {
                rows: x.nrows(),
                columns: x.ncols(),
                labels: y.len(),
                names: names.len(),
            },
        ));
    }
    for (i, row) in x.rows().into_iter().enumerate() {
        if let Some(j) = row.iter().position(|v| !v.is_finite()) {
            return Err(RowsError::new(
                at(i),
                RowsProblem::NotFinite {
                    column: names[j].clone(),
                    value: row[j],
                },
            ));
        }
    }
    let job = if asks_rows(request) {
        None
    } else {
        let (layers, kernel) = read_request(request)?;
        Some((layers, RowJob::read(kernel)?))
    };
    let family = job.as_ref().map_or(Family::Gaussian, |(_, j)| j.glm.family);
    for (i, &label) in y.iter().enumerate() {
        if let Some(why) = family.label_problem(label) {
            return Err(RowsError::new(at(i), RowsProblem::Label { label, why }));
        }
    }
    let raw = MemoryRows::new(x, y).with_names(names);
    match job {
        None => Ok(answer_rows(&raw, offset)),
        Some((layers, job)) => {
            let empty = MemoryRows::new(Array2::zeros((0, raw.columns())), Array1::zeros(0))
                .with_names(raw.names());
            let design = partitioned::wrapped(std::sync::Arc::new(empty), &layers)?;
            job.check(design.columns())
                .map_err(|why| RowsError::new(source, why))?;
            answer_partition(raw, offset, &layers, &|x, y| job.partial(x, y))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ndarray::{Array1, Array2, s};

    use super::*;
    use crate::rows::DesignRows;
    use crate::rows::blocks::BLOCK_ROWS;
    use crate::rows::partitioned::{ClusterRows, PartitionEngine};
    use crate::rows::reordered::Reordered;

    /// A cluster in this process: the rows cut into partitions of the given sizes, each
    /// answered by [`answer`] as an executor would.
    #[derive(Debug)]
    struct Cut {
        rows: MemoryRows,
        sizes: Vec<usize>,
    }

    impl PartitionEngine for Cut {
        fn describe(&self) -> String {
            format!("{} partitions", self.sizes.len())
        }
        fn rows(&self) -> usize {
            self.rows.rows()
        }
        fn names(&self) -> Vec<String> {
            self.rows.names()
        }
        fn run(&self, request: &[u8]) -> Result<Vec<Vec<u8>>, RowsError> {
            let mut start = 0;
            self.sizes
                .iter()
                .map(|&n| {
                    let (x, y) = (
                        self.rows.x().slice(s![start..start + n, ..]).to_owned(),
                        self.rows.y().slice(s![start..start + n]).to_owned(),
                    );
                    start += n;
                    answer(request, (start - n) as u64, x, y, self.names(), "test")
                })
                .collect()
        }
    }

    fn rows(n: usize) -> MemoryRows {
        let x = Array2::from_shape_fn((n, 3), |(i, j)| ((i * 7 + j * 13) % 23) as f64 / 7.0 - 1.3);
        let y = Array1::from_shape_fn(n, |i| ((i * 5) % 3 == 0) as u8 as f64);
        MemoryRows::new(x, y).with_names(vec!["a".into(), "b".into(), "c".into()])
    }

    /// The design a study forms: columns reordered, standardised, an intercept first.
    fn design(raw: Arc<dyn RowSource>) -> Arc<dyn RowSource> {
        let moved = Arc::new(Reordered::trailing(raw, &[0]));
        let design = DesignRows::new(moved, true)
            .standardized(vec![0.1, -0.2, 0.3], vec![1.5, 0.5, 2.0])
            .expect("valid");
        Arc::new(design)
    }

    /// Every kind of sum over a cluster's partitions equals, bit for bit, the same sum over
    /// the rows in this process, however the rows are cut (block edges inside partitions,
    /// partitions inside a block, empty partitions).
    #[test]
    fn sums_on_partitions_are_the_local_sums_bit_for_bit() {
        let n = 3 * BLOCK_ROWS + 123;
        let local = rows(n);
        let beta = vec![0.3, -0.7, 0.2, 0.05];
        let kernels = [
            RowKernel::Gradient(beta.clone()),
            RowKernel::Constants,
            RowKernel::Information(beta.clone()),
            RowKernel::Bound,
            RowKernel::Moments(None),
            RowKernel::Moments(Some(vec![0.1, 0.2, 0.3, 0.4])),
            RowKernel::Misclassified(beta),
            RowKernel::Classes,
            RowKernel::BadWeights,
        ];
        let cuts = [
            vec![n],
            vec![1, BLOCK_ROWS, n - BLOCK_ROWS - 1],
            vec![17, 0, 500, 2 * BLOCK_ROWS, n - 17 - 500 - 2 * BLOCK_ROWS],
            vec![BLOCK_ROWS, BLOCK_ROWS, BLOCK_ROWS, 123],
        ];
        let here = design(Arc::new(local.clone()));
        for sizes in cuts {
            let engine = Arc::new(Cut {
                rows: local.clone(),
                sizes: sizes.clone(),
            });
            let there = design(Arc::new(ClusterRows::new(engine)));
            for kernel in &kernels {
                let job = RowJob::new(Glm::logistic(), kernel.clone());
                let (a, b) = (job.fold(here.as_ref()), job.fold(there.as_ref()));
                assert_eq!(a, b, "{kernel:?} on {sizes:?}");
            }
            let mut scanned = Vec::new();
            there
                .scan(&mut |x, _| {
                    scanned.extend(x.iter().copied());
                    Ok(())
                })
                .expect("rows");
            assert_eq!(scanned.len(), n * 4);
        }
    }

    /// Answers out of order, cut short or claiming another partition's rows are refused, as
    /// is a request whose coefficients do not fit the rows: errors, never panics or sums.
    #[test]
    fn malformed_answers_and_requests_are_refused() {
        #[derive(Debug)]
        struct Swapped(Cut);
        impl PartitionEngine for Swapped {
            fn describe(&self) -> String {
                self.0.describe()
            }
            fn rows(&self) -> usize {
                self.0.rows()
            }
            fn names(&self) -> Vec<String> {
                self.0.names()
            }
            fn run(&self, request: &[u8]) -> Result<Vec<Vec<u8>>, RowsError> {
                let mut answers = self.0.run(request)?;
                answers.swap(0, 1);
                let half = answers[1].len() / 2;
                answers[1].truncate(half);
                Ok(answers)
            }
        }
        let n = BLOCK_ROWS + 10;
        let cut = Cut {
            rows: rows(n),
            sizes: vec![5, n - 5],
        };
        let job = RowJob::new(Glm::logistic(), RowKernel::Bound);
        let swapped = ClusterRows::new(Arc::new(Swapped(cut)));
        assert!(job.fold(&swapped).is_err());
        let (x, y) = (rows(4).x().clone(), rows(4).y().clone());
        let names = rows(4).names();
        let short = RowJob::new(Glm::logistic(), RowKernel::Gradient(vec![1.0]));
        let request = partitioned::write_request(&[], &short.bytes());
        let err = answer(&request, 0, x.clone(), y.clone(), names.clone(), "p").expect_err("short");
        assert!(err.to_string().contains("1 values for 3 columns"), "{err}");
        for cut in 0..request.len() {
            let _ = answer(&request[..cut], 0, x.clone(), y.clone(), names.clone(), "p");
        }
    }

    /// A partition's bad value is refused with the row counted over the whole source.
    #[test]
    fn a_partitions_bad_value_names_its_row_and_column() {
        let mut local = rows(10);
        let mut x = local.x().clone();
        x[(4, 1)] = f64::NAN;
        local = MemoryRows::new(x, local.y().clone()).with_names(local.names());
        let engine = Arc::new(Cut {
            rows: local,
            sizes: vec![3, 7],
        });
        let job = RowJob::new(Glm::logistic(), RowKernel::Bound);
        let err = job
            .fold(&ClusterRows::new(engine))
            .expect_err("refused")
            .to_string();
        assert!(err.contains("row 5") && err.contains("\"b\""), "{err}");
    }
}
