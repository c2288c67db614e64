//! A party's whole contribution to a vertical study's secure fit, dealt before the fit starts:
//! its columns opened under a mask, and the Beaver products of its masks for every round it
//! allows ([`super::shares`] says how the servers use them).

use std::ops::Range;

use rand::CryptoRng;

use super::ring::{self, Seed, X_FRAC};
use super::shares::{HessianProducts, label};

/// What a party sends: the key holder's seed (to be encrypted for it), and the aggregator's
/// part.
pub struct Deal {
    /// The key holder's seed: its shares of every mask and product.
    pub keyholder_seed: Seed,
    /// The aggregator's part.
    pub aggregator: AggregatorDeal,
}

/// The aggregator's part of a deal (the key holder receives `d` too, forwarded).
pub struct AggregatorDeal {
    /// The party's columns among all.
    pub columns: Range<usize>,
    /// The aggregator's seed.
    pub seed: Seed,
    /// `D = X - R`, `n x p_k` by rows.
    pub d: Vec<u128>,
    /// Per round, the aggregator's share of `R^T v_t`.
    pub w: Vec<Vec<u128>>,
    /// The aggregator's share of `R^T V` (`p_k x p`).
    pub bound_w: Vec<u128>,
    /// Per secure Newton round, the aggregator's shares of the Hessian's products.
    pub hessian: Vec<HessianProducts>,
    /// The labelling party's: the aggregator's bit share of the labels.
    pub labels: Option<Vec<u64>>,
}

/// Why a party's rows cannot enter a vertical study.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DealError {
    /// A value beyond the study's public bound.
    #[error(
        "row {row}, column {column}: {value} is beyond the study's bound of 2^{bits} on feature \
         values"
    )]
    OutOfRange {
        /// Row (from 0, in the common order).
        row: usize,
        /// Column among the party's.
        column: usize,
        /// The value.
        value: f64,
        /// The bound's bits.
        bits: u32,
    },
}

/// How many rounds a party deals for: gradient rounds, and among them the first
/// `hessian_rounds` also secure Newton's (a PrivLogit study deals none of those).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rounds {
    /// Gradient rounds.
    pub gradient: u64,
    /// Newton rounds (the Hessian's products), at most `gradient`.
    pub hessian: u64,
}

/// Most iterations of a vertical study: its parties deal every round up front, so a Node
/// refuses to deal more than [`MAX_DEALT_ROUNDS`] whatever the aggregator asks.
pub const MAX_VERTICAL_ITERATIONS: usize = 10_000;

/// Most rounds a party deals (PrivLogit's two a round at [`MAX_VERTICAL_ITERATIONS`], and the
/// spare ones).
pub const MAX_DEALT_ROUNDS: u64 = 2 * MAX_VERTICAL_ITERATIONS as u64 + 4;

/// Bytes of Newton products the aggregator holds at most (`16 n p` a Newton round: the
/// weighted columns' products of every party).
const NEWTON_PRODUCTS_BUDGET: u64 = 1 << 30;

/// How many secure Newton iterations a vertical study of `rows x coefficients` deals the
/// Hessian's products for: as many as fit in [`NEWTON_PRODUCTS_BUDGET`], between 10 and 50
/// (penalised logistic Newton converges in a handful; the demo in 9), at most `max_iter`.
/// A study that has not converged by then stops as at `--max-iter`, with a warning. Public:
/// from N and p only.
pub fn newton_iterations(rows: usize, coefficients: usize, max_iter: usize) -> usize {
    let per_round = 16 * rows.max(1) as u64 * coefficients.max(1) as u64;
    let fit = (NEWTON_PRODUCTS_BUDGET / per_round).clamp(10, 50) as usize;
    fit.min(max_iter)
}

/// Whether `rounds` are ones a party deals for a study of `rows x coefficients`: a Node's own
/// bound on what an aggregator may ask of it (and the key holder's on a setup).
pub fn rounds_allowed(rounds: Rounds, rows: usize, coefficients: usize) -> bool {
    rounds.gradient <= MAX_DEALT_ROUNDS
        && rounds.hessian <= rounds.gradient
        && rounds.hessian <= newton_iterations(rows, coefficients, usize::MAX) as u64 + 1
}

/// Deals party columns `columns` (of `features` in all) for `rounds`: `x` is `n x p_k` by rows
/// in the common order, `labels` the labelling party's 0/1 labels. Every value must be below
/// `2^value_bits` in magnitude.
#[allow(clippy::too_many_arguments)]
pub fn deal<R: CryptoRng>(
    x: &[f64],
    columns: Range<usize>,
    features: usize,
    labels: Option<&[bool]>,
    rounds: Rounds,
    value_bits: u32,
    rng: &mut R,
) -> Result<Deal, DealError> {
    let pk = columns.len();
    let rows = x
        .len()
        .checked_div(pk)
        .unwrap_or_else(|| labels.map_or(0, <[bool]>::len));
    let limit = f64::from(value_bits).exp2();
    let mut fixed = Vec::with_capacity(x.len());
    for (i, &v) in x.iter().enumerate() {
        if v.is_nan() || v.abs() >= limit {
            return Err(DealError::OutOfRange {
                row: i / pk,
                column: i % pk,
                value: v,
                bits: value_bits,
            });
        }
        fixed.push(ring::encode(v, X_FRAC).expect("below the bound"));
    }
    let mut keyholder_seed = [0u8; 32];
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut keyholder_seed);
    rng.fill_bytes(&mut seed);
    let both = |name: &str, index: u64, len: usize| -> (Vec<u128>, Vec<u128>) {
        let k = ring::stream(&keyholder_seed, name, index, len);
        let a = ring::stream(&seed, name, index, len);
        let mut whole = k.clone();
        ring::add_into(&mut whole, &a);
        (whole, k)
    };
    let (r, _) = both(label::R, 0, rows * pk);
    let d = ring::sub(&fixed, &r);
    let w = (0..rounds.gradient)
        .map(|t| {
            let (v, _) = both(label::V, t, rows);
            let product = ring::transpose_times(&r, pk, &v);
            ring::sub(&product, &ring::stream(&keyholder_seed, label::W, t, pk))
        })
        .collect();
    let (v, _) = both(label::BOUND_V, 0, rows * features);
    let bound_w = ring::sub(
        &ring::transpose_product(&r, pk, &v, features),
        &ring::stream(&keyholder_seed, label::BOUND_W, 0, pk * features),
    );
    let hessian = (0..rounds.hessian)
        .map(|t| {
            let (a, _) = both(label::A, t, rows);
            let mut c: Vec<u128> = r
                .chunks_exact(pk.max(1))
                .zip(&a)
                .flat_map(|(row, &ai)| row.iter().map(move |&rij| ai.wrapping_mul(rij)))
                .collect();
            c.truncate(rows * pk);
            let (v, _) = both(label::HV, t, rows * features);
            HessianProducts {
                c: ring::sub(&c, &ring::stream(&keyholder_seed, label::C, t, rows * pk)),
                hw: ring::sub(
                    &ring::transpose_product(&r, pk, &v, features),
                    &ring::stream(&keyholder_seed, label::HW, t, pk * features),
                ),
            }
        })
        .collect();
    let labels = labels.map(|y| {
        let mask = ring::bit_stream(&keyholder_seed, label::Y, 0, rows);
        let mut bits = vec![0u64; rows.div_ceil(64)];
        for (i, &label) in y.iter().enumerate() {
            bits[i / 64] |= u64::from(label) << (i % 64);
        }
        bits.iter().zip(&mask).map(|(b, m)| b ^ m).collect()
    });
    Ok(Deal {
        keyholder_seed,
        aggregator: AggregatorDeal {
            columns,
            seed,
            d,
            w,
            bound_w,
            hessian,
            labels,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vertical::ring::{R_FRAC, Side, decode};
    use crate::vertical::shares::{PartyShares, Products, ServerShares};
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// Both servers' shares of a study dealt by `xs` (per party, by rows) with labels at the
    /// first party.
    fn servers(xs: &[(Vec<f64>, usize)], labels: &[bool], rounds: u64) -> [ServerShares; 2] {
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let features: usize = xs.iter().map(|(_, p)| p).sum();
        let rows = labels.len();
        let mut start = 0;
        let (mut agg, mut kh) = (Vec::new(), Vec::new());
        let mut agg_labels = Vec::new();
        let mut kh_labels = Vec::new();
        for (k, (x, p)) in xs.iter().enumerate() {
            let columns = start..start + p;
            start += p;
            let y = (k == 0).then_some(labels);
            let rounds = Rounds {
                gradient: rounds,
                hessian: rounds,
            };
            let deal = deal(x, columns.clone(), features, y, rounds, 20, &mut rng).expect("deal");
            let a = deal.aggregator;
            if let Some(l) = a.labels {
                agg_labels = l;
                kh_labels = ring::bit_stream(&deal.keyholder_seed, label::Y, 0, rows);
            }
            kh.push(PartyShares::new(
                rows,
                columns.clone(),
                a.d.clone(),
                deal.keyholder_seed,
                Products {
                    rounds: rounds.gradient,
                    hessian_rounds: rounds.hessian,
                    ..Products::default()
                },
            ));
            agg.push(PartyShares::new(
                rows,
                columns,
                a.d,
                a.seed,
                Products {
                    rounds: rounds.gradient,
                    w: a.w,
                    bound_w: a.bound_w,
                    hessian_rounds: rounds.hessian,
                    hessian: a.hessian,
                },
            ));
        }
        [
            ServerShares::new(Side::KeyHolder, rows, kh, kh_labels),
            ServerShares::new(Side::Aggregator, rows, agg, agg_labels),
        ]
    }

    /// Random columns of `widths` parties over `rows` rows, the first party with random labels,
    /// both servers' shares of them dealt for `rounds`, and the whole design (`rows x p` by
    /// rows) as the parties' fixed-point values.
    fn random_study(
        seed: u64,
        rows: usize,
        widths: &[usize],
        rounds: u64,
    ) -> ([ServerShares; 2], Vec<bool>, Vec<f64>) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let xs: Vec<(Vec<f64>, usize)> = widths
            .iter()
            .map(|&p| {
                (
                    (0..rows * p).map(|_| rng.random_range(-3.0..3.0)).collect(),
                    p,
                )
            })
            .collect();
        let labels: Vec<bool> = (0..rows).map(|_| rng.random()).collect();
        let servers = servers(&xs, &labels, rounds);
        let fixed = |v: f64| decode(ring::encode(v, X_FRAC).expect("fits"), X_FRAC);
        let mut design = Vec::with_capacity(rows * widths.iter().sum::<usize>());
        for i in 0..rows {
            for (x, p) in &xs {
                design.extend(x[i * p..(i + 1) * p].iter().map(|&v| fixed(v)));
            }
        }
        (servers, labels, design)
    }

    #[test]
    fn the_servers_products_equal_the_plaintext_ones() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let rows = 37;
        let widths = [3usize, 1, 4];
        let ([kh, agg], labels, design) = random_study(3, rows, &widths, 4);
        let p: usize = widths.iter().sum();
        let x = |i: usize, j: usize| design[i * p + j];
        // Labels.
        for (i, &y) in labels.iter().enumerate() {
            assert_eq!(kh.label(i) ^ agg.label(i), y);
        }
        // X beta.
        let beta: Vec<f64> = (0..p).map(|j| 0.25 * j as f64 - 0.8).collect();
        let fixed: Vec<u128> = beta
            .iter()
            .map(|b| ring::encode(*b, ring::BETA_FRAC).expect("fits"))
            .collect();
        let (za, zb) = (kh.linear_predictor(&fixed), agg.linear_predictor(&fixed));
        for i in 0..rows {
            let z = decode(za[i].wrapping_add(zb[i]), X_FRAC + ring::BETA_FRAC);
            let exact: f64 = (0..p).map(|j| x(i, j) * beta[j]).sum();
            assert!((z - exact).abs() < 1e-9, "row {i}: {z} vs {exact}");
        }
        // X^T r in round 2, r shared at random.
        let r: Vec<f64> = (0..rows).map(|_| rng.random_range(-1.0..1.0)).collect();
        let r_fixed: Vec<u128> = r
            .iter()
            .map(|v| ring::encode(*v, R_FRAC).expect("fits"))
            .collect();
        let r_kh: Vec<u128> = (0..rows).map(|_| rng.random()).collect();
        let r_agg = ring::sub(&r_fixed, &r_kh);
        let round = 2;
        let mut g = vec![0.0; p];
        for k in 0..widths.len() {
            let mut e = kh.gradient_opening(k, round, &r_kh);
            ring::add_into(&mut e, &agg.gradient_opening(k, round, &r_agg));
            let mut sum = kh.gradient_block(k, round, &e).expect("dealt");
            ring::add_into(&mut sum, &agg.gradient_block(k, round, &e).expect("dealt"));
            let columns: Vec<_> = kh.columns().collect();
            for (j, v) in columns[k].clone().zip(sum) {
                g[j] = decode(v, X_FRAC + R_FRAC);
            }
        }
        for (j, gj) in g.iter().enumerate() {
            let exact: f64 = (0..rows)
                .map(|i| x(i, j) * decode(r_fixed[i], R_FRAC))
                .sum();
            assert!((gj - exact).abs() < 1e-12, "column {j}: {gj} vs {exact}");
        }
        assert!(kh.gradient_block(0, 4, &vec![0; rows]).is_none());
        // X^T X, block by block.
        for (k, columns) in kh.columns().collect::<Vec<_>>().into_iter().enumerate() {
            let mut e = kh.bound_opening(k);
            ring::add_into(&mut e, &agg.bound_opening(k));
            let mut block = kh.bound_block(k, &e);
            ring::add_into(&mut block, &agg.bound_block(k, &e));
            for (a, i) in columns.clone().enumerate() {
                for j in 0..p {
                    let got = decode(block[a * p + j], 2 * X_FRAC);
                    let exact: f64 = (0..rows).map(|r| x(r, i) * x(r, j)).sum();
                    assert!((got - exact).abs() < 1e-12, "({i}, {j}): {got} vs {exact}");
                }
            }
        }
    }

    /// Secure Newton's products: `diag(w) X` from the weights' shares (then truncated locally
    /// to `X_FRAC`), and `X^T diag(w) X` block by block, equal the plaintext ones.
    #[test]
    fn the_servers_hessian_equals_the_plaintext_one() {
        let mut rng = ChaCha20Rng::seed_from_u64(8);
        let rows = 29;
        let widths = [2usize, 3];
        let ([kh, agg], _, design) = random_study(8, rows, &widths, 3);
        let p: usize = widths.iter().sum();
        let x = |i: usize, j: usize| design[i * p + j];
        let w: Vec<u128> = (0..rows)
            .map(|_| ring::encode(rng.random_range(0.0..0.25), R_FRAC).expect("fits"))
            .collect();
        let w_kh: Vec<u128> = (0..rows).map(|_| rng.random()).collect();
        let w_agg = ring::sub(&w, &w_kh);
        let round = 1;
        let columns: Vec<_> = kh.columns().collect();
        // U = diag(w) X, each server's share truncated by R_FRAC bits.
        let (mut u_kh, mut u_agg) = (vec![0u128; rows * p], vec![0u128; rows * p]);
        for (k, cols) in columns.iter().enumerate() {
            let mut f = kh.weight_opening(k, round, &w_kh);
            ring::add_into(&mut f, &agg.weight_opening(k, round, &w_agg));
            let a = kh.weighted_columns(k, round, &w_kh, &f).expect("dealt");
            let b = agg.weighted_columns(k, round, &w_agg, &f).expect("dealt");
            for i in 0..rows {
                for (jj, j) in cols.clone().enumerate() {
                    let pk = cols.len();
                    u_kh[i * p + j] = ring::truncate_share(a[i * pk + jj], R_FRAC, Side::KeyHolder);
                    u_agg[i * p + j] =
                        ring::truncate_share(b[i * pk + jj], R_FRAC, Side::Aggregator);
                }
            }
        }
        for i in 0..rows {
            for j in 0..p {
                let got = decode(u_kh[i * p + j].wrapping_add(u_agg[i * p + j]), X_FRAC);
                let exact = decode(w[i], R_FRAC) * x(i, j);
                assert!((got - exact).abs() < 3e-8, "U ({i}, {j}): {got} vs {exact}");
            }
        }
        // X^T U, block by block: within the truncation's 2^-28 a row.
        for (k, cols) in columns.iter().enumerate() {
            let mut e = kh.hessian_opening(k, round, &u_kh);
            ring::add_into(&mut e, &agg.hessian_opening(k, round, &u_agg));
            let mut block = kh.hessian_block(k, round, &e).expect("dealt");
            ring::add_into(&mut block, &agg.hessian_block(k, round, &e).expect("dealt"));
            for (a, i) in cols.clone().enumerate() {
                for j in 0..p {
                    let got = decode(block[a * p + j], 2 * X_FRAC);
                    let exact: f64 = (0..rows)
                        .map(|r| x(r, i) * decode(w[r], R_FRAC) * x(r, j))
                        .sum();
                    assert!((got - exact).abs() < 1e-6, "({i}, {j}): {got} vs {exact}");
                }
            }
        }
        assert!(kh.hessian_block(0, 3, &vec![0; rows * p]).is_none());
    }

    #[test]
    fn a_value_beyond_the_bound_is_named() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let rounds = Rounds {
            gradient: 1,
            hessian: 0,
        };
        let err = deal(
            &[1.0, 2.0, 5000.0, 1.0],
            0..2,
            2,
            None,
            rounds,
            12,
            &mut rng,
        )
        .err()
        .expect("refused");
        assert_eq!(
            err,
            DealError::OutOfRange {
                row: 1,
                column: 0,
                value: 5000.0,
                bits: 12
            }
        );
    }
}
