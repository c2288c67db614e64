//! The logistic function and the softplus on a fixed-point word, for a vertical study's
//! per-row residual `sigmoid(z) - y` and objective `log(1 + e^z) - y z`, evaluated on secret
//! linear predictors (privlogit-protocols `vertical`).
//!
//! Method: by symmetry only `a = |z|` is tabulated (`sigmoid(-a) = 1 - sigmoid(a)`,
//! `softplus(z) = max(z, 0) + log(1 + e^-a)`). On `[0, 32)` the circuit picks one of 512
//! segments of width 1/16 from `a`'s bits (a one-hot decoder; a coefficient's bits are XORs of
//! the decoder's outputs, which cost no AND), and evaluates that segment's cubic by Horner's rule
//! on the offset `t` in the segment, each product on only the bits of `t` its term needs.
//! The cubics interpolate at the four Chebyshev points of their segment (error at most
//! `max|f''''| / 4! * 2 (h/4)^4`, about 6e-10 for both functions); beyond 32 the sigmoid is 1
//! and the softplus' tail 0 (`e^-32 < 1.3e-14`). Measured against the exact functions over the
//! whole range (tests below): error below 2^-30 (9.3e-10) for both.
//!
//! The tables are computed from `+ - * /` only ([`exp`], [`log1p`] here), which IEEE 754
//! rounds the same on every machine, so the two parties of a garbled circuit, on different
//! machines, fold the same public constants.

use std::sync::OnceLock;

use crate::backend::{Backend, Bit, Builder, Word};
use crate::word::{self, ColumnSum};

/// Width of the input word (two's complement).
pub const Z_BITS: usize = 48;
/// Fractional bits of the input and of both outputs.
pub const FRAC: usize = 32;
/// Bound on the error of either output (checked over every segment by the tests below): what
/// a vertical study's objective comparisons allow for.
pub const ERROR_BOUND: f64 = 9.313_225_746_154_785e-10; // 2^-30

/// Width of the sigmoid output (two's complement: the interpolation's error can put it a few
/// units in the last place below 0 or above `2^FRAC`).
pub const SIGMOID_BITS: usize = FRAC + 2;

/// Integer bits of the tabulated range `[0, 2^INT_BITS)`.
const INT_BITS: usize = 5;
/// Segments per unit (`2^SEG_FRAC`).
const SEG_FRAC: usize = 4;
const INDEX_BITS: usize = INT_BITS + SEG_FRAC;
const SEGMENTS: usize = 1 << INDEX_BITS;
/// Bits of the offset `t` in a segment (at `FRAC` fractional bits).
const T_BITS: usize = FRAC - SEG_FRAC;

/// One Horner step: `acc' = floor(acc * t_top / 2^shift) + c`, with `t_top` the top `t_bits`
/// bits of `t` and `c` at `acc'`'s scale.
struct Step {
    t_bits: usize,
    shift: usize,
    width: usize,
}

/// The cubic's leading coefficient: fractional bits and signed width.
const LEAD_FRAC: usize = 20;
const LEAD_WIDTH: usize = 17;
/// `c3 t + c2` at 26 fractional bits, `(...) t + c1` and `(...) t + c0` at [`FRAC`].
const STEPS: [Step; 3] = [
    Step {
        t_bits: 14,
        shift: 12,
        width: 26,
    },
    Step {
        t_bits: 20,
        shift: 18,
        width: 34,
    },
    Step {
        t_bits: 26,
        shift: 30,
        width: 35,
    },
];

/// The fractional bits of each coefficient, `c3` first.
const COEFFICIENT_FRAC: [usize; 4] = [LEAD_FRAC, 26, FRAC, FRAC];

/// Per segment, the quantised cubic `c3..c0` (as `i64` at [`COEFFICIENT_FRAC`]).
struct Table {
    coefficients: Vec<[i64; 4]>,
}

/// The sigmoid's and the softplus tail's tables.
fn tables() -> &'static (Table, Table) {
    static TABLES: OnceLock<(Table, Table)> = OnceLock::new();
    TABLES.get_or_init(|| (Table::new(sigmoid), Table::new(softplus_tail)))
}

impl Table {
    fn new(f: fn(f64) -> f64) -> Self {
        let h = 1.0 / (1 << SEG_FRAC) as f64;
        // cos((2j + 1) pi / 8), j = 0..3, as literals (no libm).
        const COS: [f64; 4] = [
            0.923_879_532_511_286_7,
            0.382_683_432_365_089_8,
            -0.382_683_432_365_089_8,
            -0.923_879_532_511_286_7,
        ];
        let coefficients = (0..SEGMENTS)
            .map(|s| {
                let start = s as f64 * h;
                let nodes: Vec<f64> = COS.iter().map(|c| 0.5 * h * (1.0 + c)).collect();
                let values: Vec<f64> = nodes.iter().map(|t| f(start + t)).collect();
                let cubic = newton_to_monomial(&nodes, &values);
                let mut q = [0i64; 4];
                for (k, slot) in q.iter_mut().enumerate() {
                    // cubic[3 - k] is the coefficient of t^(3 - k); q[0] = c3.
                    let scaled = cubic[3 - k] * (1u64 << COEFFICIENT_FRAC[k]) as f64;
                    *slot = scaled.round() as i64;
                }
                q
            })
            .collect();
        Self { coefficients }
    }
}

/// The cubic through `(x_j, y_j)`, as monomial coefficients `[c0, c1, c2, c3]` in `t` (Newton's
/// divided differences, then the nested form expanded).
fn newton_to_monomial(x: &[f64], y: &[f64]) -> [f64; 4] {
    let n = x.len();
    let mut d = y.to_vec();
    for level in 1..n {
        for i in (level..n).rev() {
            d[i] = (d[i] - d[i - 1]) / (x[i] - x[i - level]);
        }
    }
    // p(t) = d0 + (t - x0)(d1 + (t - x1)(d2 + (t - x2) d3)), expanded from the inside.
    let mut poly = [0.0f64; 4];
    poly[0] = d[n - 1];
    for (degree, i) in (0..n - 1).rev().enumerate() {
        // poly = poly * (t - x_i) + d_i
        let mut next = [0.0f64; 4];
        for k in 0..=degree {
            next[k + 1] += poly[k];
            next[k] -= poly[k] * x[i];
        }
        next[0] += d[i];
        poly = next;
    }
    poly
}

/// `e^x` from `+ - * /` only: `x = k ln 2 + r`, `|r| <= ln 2 / 2`, a 20-term Taylor series of
/// `e^r`, scaled by `2^k` exactly. Relative error about 2e-16.
pub fn exp(x: f64) -> f64 {
    if x < -700.0 {
        return 0.0;
    }
    const LN2_HI: f64 = 0.693_147_180_369_123_8;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    let k = (x / (LN2_HI + LN2_LO) + if x < 0.0 { -0.5 } else { 0.5 }) as i64;
    let r = (x - k as f64 * LN2_HI) - k as f64 * LN2_LO;
    let mut term = 1.0;
    let mut sum = 1.0;
    for i in 1..=20 {
        term = term * r / i as f64;
        sum += term;
    }
    sum * f64::from_bits(((1023 + k) as u64) << 52)
}

/// `ln(1 + u)` for `u` in `[0, 1]` from `+ - * /` only: `2 atanh(u / (2 + u))`, whose series in
/// `w <= 1/3` converges by a factor 9 per term.
pub fn log1p(u: f64) -> f64 {
    let w = u / (2.0 + u);
    let w2 = w * w;
    let mut power = w;
    let mut sum = 0.0;
    for k in 0..30 {
        sum += power / (2 * k + 1) as f64;
        power *= w2;
    }
    2.0 * sum
}

/// `1 / (1 + e^-a)`.
pub fn sigmoid(a: f64) -> f64 {
    1.0 / (1.0 + exp(-a))
}

/// `log(1 + e^-a)` for `a >= 0`.
pub fn softplus_tail(a: f64) -> f64 {
    log1p(exp(-a))
}

/// The outputs of [`logistic`].
pub struct Logistic<W> {
    /// `sigmoid(z)`, [`SIGMOID_BITS`] wide (signed) at [`FRAC`] fractional bits.
    pub sigmoid: Word<W>,
    /// `log(1 + e^z)`, [`Z_BITS`] wide (signed: a few units in the last place below 0 where
    /// the tail vanishes) at [`FRAC`] fractional bits.
    pub softplus: Word<W>,
}

/// `sigmoid(z)` and `softplus(z)` of a [`Z_BITS`]-bit two's-complement `z` at [`FRAC`]
/// fractional bits (so `|z| < 2^15`). About 7,600 AND gates.
pub fn logistic<B: Backend>(b: &mut Builder<B>, z: &[Bit<B::Wire>]) -> Logistic<B::Wire> {
    assert_eq!(z.len(), Z_BITS, "a {Z_BITS}-bit linear predictor");
    let sign = z[Z_BITS - 1].clone();
    let a = word::abs(b, z);
    // Saturated when a >= 2^INT_BITS.
    let high: Vec<Bit<B::Wire>> = a[FRAC + INT_BITS..].to_vec();
    let saturated = any(b, &high);
    let index = &a[T_BITS..FRAC + INT_BITS];
    let t = &a[..T_BITS];
    let one_hot = decode(b, index);
    let (sigmoid_table, tail_table) = tables();
    let v = horner(b, &one_hot, sigmoid_table, t);
    let tail = horner(b, &one_hot, tail_table, t);
    // sigmoid(|z|), 1 when saturated; then sigmoid(z) = s ? 1 - v : v.
    let one = word::constant(1u128 << FRAC, v.len());
    let v = word::select(b, &saturated, &one, &v);
    let flipped = word::sub(b, &one, &v);
    let sigmoid = word::select(b, &sign, &flipped, &v);
    // softplus(z) = max(z, 0) + tail, the tail 0 when saturated.
    let keep = b.not(&saturated);
    let tail: Word<B::Wire> = tail.iter().map(|t| b.and(t, &keep)).collect();
    let positive = b.not(&sign);
    let relu: Word<B::Wire> = z.iter().map(|bit| b.and(bit, &positive)).collect();
    let softplus = word::add(b, &relu, &word::sign_extend(&tail, Z_BITS));
    Logistic {
        sigmoid: sigmoid[..SIGMOID_BITS].to_vec(),
        softplus,
    }
}

/// `sigmoid (1 - sigmoid)`, the logistic model's weight `w` (the Hessian is `X^T diag(w) X`),
/// from [`logistic`]'s sigmoid word: `s - round(s^2 / 2^FRAC)`, a signed [`SIGMOID_BITS`]-bit
/// word at [`FRAC`] fractional bits (within one unit in the last place of `s (1 - s)` for the
/// given `s`). About 1,200 AND gates.
pub fn weight<B: Backend>(b: &mut Builder<B>, sigmoid: &[Bit<B::Wire>]) -> Word<B::Wire> {
    assert_eq!(sigmoid.len(), SIGMOID_BITS, "a {SIGMOID_BITS}-bit sigmoid");
    let columns = FRAC + SIGMOID_BITS;
    let square = word::mul_columns(
        b,
        sigmoid,
        sigmoid,
        true,
        columns,
        vec![(FRAC - 1, Bit::Const(true))],
    );
    word::sub(b, sigmoid, &square[FRAC..])
}

/// OR of bits.
fn any<B: Backend>(b: &mut Builder<B>, bits: &[Bit<B::Wire>]) -> Bit<B::Wire> {
    bits.iter()
        .fold(Bit::Const(false), |acc, bit| b.or(&acc, bit))
}

/// The one-hot vector of an index (least significant bit first): the two halves decoded, then
/// combined pairwise.
fn decode<B: Backend>(b: &mut Builder<B>, index: &[Bit<B::Wire>]) -> Vec<Bit<B::Wire>> {
    if index.len() <= 1 {
        return match index.first() {
            Some(bit) => vec![b.not(bit), bit.clone()],
            None => vec![Bit::Const(true)],
        };
    }
    let half = index.len() / 2;
    let low = decode(b, &index[..half]);
    let high = decode(b, &index[half..]);
    let mut out = Vec::with_capacity(low.len() * high.len());
    for h in &high {
        for l in &low {
            out.push(b.and(h, l));
        }
    }
    out
}

/// The selected segment's coefficient `k` (`c3` first) as a signed word of `width` bits: bit
/// `i` is the XOR of the one-hot outputs of the segments whose constant has bit `i` set.
fn lookup<B: Backend>(
    b: &mut Builder<B>,
    one_hot: &[Bit<B::Wire>],
    table: &Table,
    k: usize,
    width: usize,
) -> Word<B::Wire> {
    (0..width)
        .map(|i| {
            let mut bit = Bit::Const(false);
            for (s, coefficients) in table.coefficients.iter().enumerate() {
                // Two's complement, sign-extended: bit i of an i64 (i < 64).
                if (coefficients[k] >> i.min(63)) & 1 == 1 {
                    bit = b.xor(&bit, &one_hot[s]);
                }
            }
            bit
        })
        .collect()
}

/// The cubic by Horner's rule on `t` (unsigned, [`T_BITS`] at [`FRAC`]): a signed
/// `STEPS[2].width`-bit word at [`FRAC`] fractional bits.
fn horner<B: Backend>(
    b: &mut Builder<B>,
    one_hot: &[Bit<B::Wire>],
    table: &Table,
    t: &[Bit<B::Wire>],
) -> Word<B::Wire> {
    let mut acc = lookup(b, one_hot, table, 0, LEAD_WIDTH);
    for (k, step) in STEPS.iter().enumerate() {
        let c = lookup(b, one_hot, table, k + 1, step.width);
        let top = &t[T_BITS - step.t_bits..];
        acc = multiply_add(b, &acc, top, step, &c);
    }
    acc
}

/// `floor((acc * u + 2^(shift-1)) / 2^shift) + c` for a signed `acc` and an unsigned `u`, in
/// one column sum: `acc * u = (acc + 2^(w-1)) u - 2^(w-1) u`, where `acc + 2^(w-1)` is `acc`
/// with its sign bit flipped (unsigned), and `-2^(w-1) u` enters as its two's complement.
fn multiply_add<B: Backend>(
    b: &mut Builder<B>,
    acc: &[Bit<B::Wire>],
    u: &[Bit<B::Wire>],
    step: &Step,
    c: &[Bit<B::Wire>],
) -> Word<B::Wire> {
    let w = acc.len();
    let columns = step.shift + step.width;
    let mut biased = acc.to_vec();
    biased[w - 1] = b.not(&acc[w - 1]);
    let mut sum = ColumnSum::new(columns);
    sum.add_product(b, &biased, u, |_, _| false);
    // -(u << (w-1)) mod 2^columns = !(u << (w-1)) + 1: the complement of every column's bit.
    for k in 0..columns {
        let bit = if k >= w - 1 && k - (w - 1) < u.len() {
            b.not(&u[k - (w - 1)])
        } else {
            Bit::Const(true)
        };
        sum.push(k, bit);
    }
    sum.push_one(0);
    if step.shift > 0 {
        sum.push_one(step.shift - 1);
    }
    for (i, bit) in word::sign_extend(c, step.width).into_iter().enumerate() {
        sum.push(step.shift + i, bit);
    }
    let total = sum.finish(b);
    total[step.shift..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Builder, Plain};

    fn run(z: f64) -> (f64, f64) {
        let scale = (1u64 << FRAC) as f64;
        let fixed = (z * scale).round() as i64;
        let mut b = Builder::plain();
        let input = b.input_u128(u128::from(fixed as u64) & ((1u128 << Z_BITS) - 1), Z_BITS);
        let out = logistic(&mut b, &input);
        let raw = Builder::<Plain>::value(&out.sigmoid) as u64;
        let bits = SIGMOID_BITS as u32;
        let s = ((raw << (64 - bits)) as i64 >> (64 - bits)) as f64 / scale;
        let raw = Builder::<Plain>::value(&out.softplus) as u64;
        let softplus = ((raw << (64 - Z_BITS)) as i64 >> (64 - Z_BITS)) as f64 / scale;
        (s, softplus)
    }

    fn reference(z: f64) -> (f64, f64) {
        let s = 1.0 / (1.0 + (-z).exp());
        let softplus = z.max(0.0) + (-z.abs()).exp().ln_1p();
        (s, softplus)
    }

    #[test]
    fn the_deterministic_helpers_agree_with_libm() {
        for i in -400..400 {
            let x = i as f64 * 0.173;
            assert!((exp(x) / x.exp() - 1.0).abs() < 1e-14, "exp({x})");
        }
        for i in 0..=1000 {
            let u = i as f64 / 1000.0;
            assert!((log1p(u) - u.ln_1p()).abs() < 1e-15, "log1p({u})");
        }
    }

    #[test]
    fn both_functions_are_within_2_to_the_minus_30_everywhere() {
        // Every segment at several offsets, both signs, the saturated range and the edges.
        let mut worst = (0.0f64, 0.0f64);
        let mut points: Vec<f64> = Vec::new();
        for s in 0..SEGMENTS {
            for k in 0..7 {
                points.push(s as f64 / 16.0 + k as f64 / 112.0);
            }
        }
        points.extend([0.0, 31.999_999_9, 32.0, 40.0, 1000.0, 30000.0]);
        let tolerance = ERROR_BOUND;
        assert_eq!(tolerance, 2f64.powi(-30));
        for &a in &points {
            for z in [a, -a] {
                let (s, sp) = run(z);
                let (rs, rsp) = reference(z);
                worst.0 = worst.0.max((s - rs).abs());
                worst.1 = worst.1.max((sp - rsp).abs());
                assert!((s - rs).abs() < tolerance, "sigmoid({z}): {s} vs {rs}");
                assert!((sp - rsp).abs() < tolerance, "softplus({z}): {sp} vs {rsp}");
            }
        }
        eprintln!(
            "worst errors: sigmoid {:.3e}, softplus {:.3e}",
            worst.0, worst.1
        );
        assert!(worst.0 > 0.0 && worst.1 > 0.0, "{worst:?}");
    }

    /// The weight of a sigmoid word equals `s (1 - s)` of that word to one unit in the last
    /// place, over [0, 1] and a few units outside it (the interpolation's overshoot).
    #[test]
    fn the_weight_is_s_times_one_minus_s() {
        let scale = (1u64 << FRAC) as f64;
        let values = (0..=64)
            .map(|k| k as f64 / 64.0)
            .chain([0.123_456_789, 0.987_654_321])
            .map(|v| (v * scale).round() as i64)
            .chain([-3, -1, (1i64 << FRAC) + 2]);
        for fixed in values {
            let mut b = Builder::plain();
            let s = b.input_u128(
                u128::from(fixed as u64) & ((1u128 << SIGMOID_BITS) - 1),
                SIGMOID_BITS,
            );
            let w = weight(&mut b, &s);
            let raw = Builder::<crate::backend::Plain>::value(&w) as u64;
            let got = ((raw << (64 - SIGMOID_BITS)) as i64 >> (64 - SIGMOID_BITS)) as f64 / scale;
            let v = fixed as f64 / scale;
            let want = v * (1.0 - v);
            assert!(
                (got - want).abs() <= 1.0 / scale,
                "s = {v}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn the_circuit_costs_what_its_documentation_says() {
        let mut b = Builder::counter();
        let z = b.input(Z_BITS);
        let _ = logistic(&mut b, &z);
        let counts = b.counts();
        let ands = counts.and;
        eprintln!("logistic: {} AND, {} XOR", counts.and, counts.xor);
        assert!((6_500..8_200).contains(&ands), "{ands} AND gates");
    }
}
