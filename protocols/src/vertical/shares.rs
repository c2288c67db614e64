//! The two servers' shares of a vertical study's data and the products they compute on them,
//! by Beaver's method with each party as the dealer of its own columns.
//!
//! Party `k` holds `X_k` (`n x p_k`, fixed point). It draws a mask `R_k` whose shares are two
//! seeded streams (one seed per server), and opens `D_k = X_k - R_k` to both servers once: the
//! servers hold `X_k` as `D_k + R_k` (the aggregator `D_k + R_k^A`, the key holder `R_k^K`). A
//! product `X_k^T M` with any shared `M` (a residual vector every round, the whole design once
//! for the bound) uses a fresh shared mask `V` from the same seeds and the party's
//! `W = R_k^T V`, shared: the servers open `E = M - V` and
//!
//! `X_k^T M = D_k^T E + D_k^T V + R_k^T E + W`,
//!
//! of which the aggregator computes `D_k^T E` and its shares of the rest, the key holder its
//! shares. `E` is masked by `V`, which only party `k` knows whole; `D_k` by `R_k`. The party's
//! part is data-independent except for `D_k`, so it deals everything for a study's rounds up
//! front ([`super::deal`]) and is not needed afterwards. Security rests on no server colluding
//! with a party or with the other server (docs/src/security-model.md, "Vertical studies").

use std::ops::Range;

use super::ring::{self, Seed, Side};

/// Stream labels: the mask of the columns, the per-round vector mask and its product, the
/// bound's matrix mask and its product, the labels' bit mask.
pub(crate) mod label {
    pub const R: &str = "R";
    pub const V: &str = "v";
    pub const W: &str = "w";
    pub const BOUND_V: &str = "V";
    pub const BOUND_W: &str = "W";
    pub const Y: &str = "y";
    /// Secure Newton, per round: the weights' vector mask, its product with the columns' mask,
    /// the weighted design's matrix mask and its product.
    pub const A: &str = "a";
    pub const C: &str = "c";
    pub const HV: &str = "hv";
    pub const HW: &str = "hw";
}

/// One secure Newton round's products of a party's mask, the aggregator's shares: `c = a o R`
/// (`n x p_k`: each row of `R` times that row's entry of the round's vector mask `a`, for the
/// weighted columns `diag(w) X_k`) and `R^T V` (`p_k x p`, for `X_k^T (diag(w) X)`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HessianProducts {
    /// `a o R`, `n x p_k` by rows.
    pub c: Vec<u128>,
    /// `R^T V`, `p_k x p` by rows.
    pub hw: Vec<u128>,
}

/// What a party dealt a server beyond its opened columns: the rounds it allows and, at the
/// aggregator, the explicit shares of its products (the key holder's are seeded, so its
/// vectors are empty).
#[derive(Clone, Debug, Default)]
pub struct Products {
    /// Gradient rounds dealt.
    pub rounds: u64,
    /// The aggregator's shares of `W = R_k^T v_t`, per round.
    pub w: Vec<Vec<u128>>,
    /// The aggregator's share of `R_k^T V` (`p_k x p`).
    pub bound_w: Vec<u128>,
    /// Secure Newton rounds dealt (the first of the gradient rounds).
    pub hessian_rounds: u64,
    /// The aggregator's shares of each Newton round's products.
    pub hessian: Vec<HessianProducts>,
}

/// What one server holds of one party's columns.
#[derive(Clone)]
pub struct PartyShares {
    /// The party's columns among all (the study's order).
    pub columns: Range<usize>,
    /// `D_k = X_k - R_k`, `n x p_k` by rows (both servers).
    pub d: Vec<u128>,
    /// The server's seed from this party.
    pub seed: Seed,
    /// This server's share of `R_k`.
    r: Vec<u128>,
    /// The rounds the party dealt and the aggregator's explicit shares.
    pub products: Products,
}

impl PartyShares {
    /// A party's shares as a server holds them: `d`, and what the party dealt (for the key
    /// holder only the rounds: its shares are seeded).
    pub fn new(
        rows: usize,
        columns: Range<usize>,
        d: Vec<u128>,
        seed: Seed,
        products: Products,
    ) -> Self {
        let r = ring::stream(&seed, label::R, 0, rows * columns.len());
        Self {
            columns,
            d,
            seed,
            r,
            products,
        }
    }

    fn width(&self) -> usize {
        self.columns.len()
    }
}

/// One server's shares of a whole vertical study.
pub struct ServerShares {
    side: Side,
    rows: usize,
    features: usize,
    parties: Vec<PartyShares>,
    /// This server's share of the labels, one bit per row, 64 to a word.
    labels: Vec<u64>,
}

impl ServerShares {
    /// A server's shares: `labels` is its bit share of the labels (the key holder's seeded from
    /// the labelling party's seed).
    pub fn new(side: Side, rows: usize, parties: Vec<PartyShares>, labels: Vec<u64>) -> Self {
        let features = parties.iter().map(PartyShares::width).sum();
        Self {
            side,
            rows,
            features,
            parties,
            labels,
        }
    }

    /// Rows (the intersection's size).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns of all parties.
    pub fn features(&self) -> usize {
        self.features
    }

    /// Parties.
    pub fn parties(&self) -> usize {
        self.parties.len()
    }

    /// The label share of row `i`.
    pub fn label(&self, i: usize) -> bool {
        self.labels[i / 64] >> (i % 64) & 1 == 1
    }

    /// This server's share of `X beta` (at `X_FRAC + BETA_FRAC`), `beta` in fixed point.
    pub fn linear_predictor(&self, beta: &[u128]) -> Vec<u128> {
        let mut z = vec![0u128; self.rows];
        for p in &self.parties {
            let b = &beta[p.columns.clone()];
            ring::add_into(&mut z, &ring::times(&p.r, p.width(), b));
            if self.side == Side::Aggregator {
                ring::add_into(&mut z, &ring::times(&p.d, p.width(), b));
            }
        }
        z
    }

    /// This server's share of the whole design `X` (`n x p` by rows).
    fn design(&self) -> Vec<u128> {
        let p = self.features;
        let mut x = vec![0u128; self.rows * p];
        for party in &self.parties {
            let w = party.width();
            for i in 0..self.rows {
                for j in 0..w {
                    let mut v = party.r[i * w + j];
                    if self.side == Side::Aggregator {
                        v = v.wrapping_add(party.d[i * w + j]);
                    }
                    x[i * p + party.columns.start + j] = v;
                }
            }
        }
        x
    }

    /// This server's share of `E = X - V_k`, opened for party `k`'s block of the bound.
    pub fn bound_opening(&self, k: usize) -> Vec<u128> {
        let v = ring::stream(
            &self.parties[k].seed,
            label::BOUND_V,
            0,
            self.rows * self.features,
        );
        ring::sub(&self.design(), &v)
    }

    /// This server's share of `X_k^T X` (`p_k x p` by rows) from the opened `E = X - V_k`.
    pub fn bound_block(&self, k: usize, e: &[u128]) -> Vec<u128> {
        let party = &self.parties[k];
        let (pk, p) = (party.width(), self.features);
        let v = ring::stream(&party.seed, label::BOUND_V, 0, self.rows * p);
        let mut out = ring::transpose_product(&party.d, pk, &v, p);
        ring::add_into(&mut out, &ring::transpose_product(&party.r, pk, e, p));
        match self.side {
            Side::Aggregator => {
                ring::add_into(&mut out, &ring::transpose_product(&party.d, pk, e, p));
                ring::add_into(&mut out, &party.products.bound_w);
            }
            Side::KeyHolder => {
                ring::add_into(
                    &mut out,
                    &ring::stream(&party.seed, label::BOUND_W, 0, pk * p),
                );
            }
        }
        out
    }

    /// This server's share of `E = r - v_t` for party `k` in round `t`, `r` its share of the
    /// residuals.
    pub fn gradient_opening(&self, k: usize, round: u64, residual: &[u128]) -> Vec<u128> {
        let v = ring::stream(&self.parties[k].seed, label::V, round, self.rows);
        ring::sub(residual, &v)
    }

    /// This server's share of `X_k^T r` from the opened `E = r - v_t`; `None` when the party
    /// dealt fewer rounds.
    pub fn gradient_block(&self, k: usize, round: u64, e: &[u128]) -> Option<Vec<u128>> {
        let party = &self.parties[k];
        if round >= party.products.rounds {
            return None;
        }
        let pk = party.width();
        let v = ring::stream(&party.seed, label::V, round, self.rows);
        let mut out = ring::transpose_times(&party.d, pk, &v);
        ring::add_into(&mut out, &ring::transpose_times(&party.r, pk, e));
        match self.side {
            Side::Aggregator => {
                ring::add_into(&mut out, &ring::transpose_times(&party.d, pk, e));
                ring::add_into(&mut out, party.products.w.get(round as usize)?);
            }
            Side::KeyHolder => {
                ring::add_into(&mut out, &ring::stream(&party.seed, label::W, round, pk));
            }
        }
        Some(out)
    }

    /// This server's share of `f = w - a_t` for party `k` in Newton round `t`, `w` its share
    /// of the rows' weights `sigmoid (1 - sigmoid)`.
    pub fn weight_opening(&self, k: usize, round: u64, weights: &[u128]) -> Vec<u128> {
        let a = ring::stream(&self.parties[k].seed, label::A, round, self.rows);
        ring::sub(weights, &a)
    }

    /// This server's share of party `k`'s weighted columns `diag(w) X_k` (`n x p_k` by rows,
    /// at the weights' scale plus `X_FRAC`), from its share of `w` and the opened
    /// `f = w - a_t`: `w o D + f o R + a o R`. `None` beyond the Newton rounds dealt.
    pub fn weighted_columns(
        &self,
        k: usize,
        round: u64,
        weights: &[u128],
        f: &[u128],
    ) -> Option<Vec<u128>> {
        let party = &self.parties[k];
        if round >= party.products.hessian_rounds {
            return None;
        }
        let pk = party.width();
        let c = match self.side {
            Side::Aggregator => party.products.hessian.get(round as usize)?.c.clone(),
            Side::KeyHolder => ring::stream(&party.seed, label::C, round, self.rows * pk),
        };
        let mut out = c;
        for (i, ((row_d, row_r), out_row)) in party
            .d
            .chunks_exact(pk)
            .zip(party.r.chunks_exact(pk))
            .zip(out.chunks_exact_mut(pk))
            .enumerate()
        {
            for ((o, &dij), &rij) in out_row.iter_mut().zip(row_d).zip(row_r) {
                *o = o
                    .wrapping_add(weights[i].wrapping_mul(dij))
                    .wrapping_add(f[i].wrapping_mul(rij));
            }
        }
        Some(out)
    }

    /// This server's share of `E = U - V_t` (`n x p`) for party `k`'s block of the Hessian in
    /// Newton round `t`, `U` its share of the weighted design `diag(w) X`.
    pub fn hessian_opening(&self, k: usize, round: u64, weighted: &[u128]) -> Vec<u128> {
        let v = ring::stream(
            &self.parties[k].seed,
            label::HV,
            round,
            self.rows * self.features,
        );
        ring::sub(weighted, &v)
    }

    /// This server's share of `X_k^T U` (`p_k x p` by rows) from the opened `E = U - V_t`: the
    /// bound's product ([`Self::bound_block`]) with the weighted design as the second factor.
    /// `None` beyond the Newton rounds dealt.
    pub fn hessian_block(&self, k: usize, round: u64, e: &[u128]) -> Option<Vec<u128>> {
        let party = &self.parties[k];
        if round >= party.products.hessian_rounds {
            return None;
        }
        let (pk, p) = (party.width(), self.features);
        let v = ring::stream(&party.seed, label::HV, round, self.rows * p);
        let mut out = ring::transpose_product(&party.d, pk, &v, p);
        ring::add_into(&mut out, &ring::transpose_product(&party.r, pk, e, p));
        match self.side {
            Side::Aggregator => {
                ring::add_into(&mut out, &ring::transpose_product(&party.d, pk, e, p));
                ring::add_into(&mut out, &party.products.hessian.get(round as usize)?.hw);
            }
            Side::KeyHolder => {
                ring::add_into(
                    &mut out,
                    &ring::stream(&party.seed, label::HW, round, pk * p),
                );
            }
        }
        Some(out)
    }

    /// The party blocks' column ranges.
    pub fn columns(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        self.parties.iter().map(|p| p.columns.clone())
    }
}
