//! MLPerf LoadGen's early-stopping estimate of a latency percentile (`loadgen/results.cc`,
//! `loadgen/early_stopping.cc`, confidence 0.99, tolerance 0).
//!
//! With N requests and t of them slower than the reported value, the rule asks that seeing t
//! or fewer slow requests among N be unlikely (below 1 − c) if the true p-th percentile were
//! above that value: P(Binomial(N, 1 − p) ≤ t) < 1 − c. LoadGen phrases the same condition as
//! N ≥ h(t) + t, h(t) the smallest h with BetaRegularized(p; h, t + 1) < 1 − c (the two are one
//! probability: I_p(h, t + 1) = P(Binomial(h + t, 1 − p) ≤ t)). It takes the largest such t,
//! starting from t = 1, and reports the value at 0-based rank N − t of the sorted sample: the
//! t − 1 slowest requests are discarded, and the estimate is conservative (it errs high). A
//! sample too small for t = 1 supports no estimate of that percentile at all.
//!
//! The binomial terms are summed in t's order from their logarithms (`libm`'s `lgamma`,
//! `log`, `exp`: the same bits natively and in wasm), so the work is O(t), not LoadGen's
//! binary searches over a hypergeometric series.

/// LoadGen's confidence for early stopping.
pub const CONFIDENCE: f64 = 0.99;

/// The fewest requests for which the rule gives an estimate of percentile `p` (a fraction):
/// the smallest N with P(Binomial(N, 1 − p) ≤ 1) < 1 − c. 662 for p99.
pub fn min_requests(p: f64) -> u64 {
    let supported = |n: u64| largest_t(n, p).is_some();
    // P(Binomial(N, q) ≤ 1) falls as N grows: double, then bisect.
    let mut hi = 2u64;
    while !supported(hi) {
        hi *= 2;
    }
    let mut lo = hi / 2;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if supported(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// The number t of slow requests the rule allows among `n` for percentile `p`: the largest
/// t ≥ 1 with P(Binomial(n, 1 − p) ≤ t) < 1 − c, or `None` when even t = 1 fails.
pub fn largest_t(n: u64, p: f64) -> Option<u64> {
    largest_t_at(n, p, CONFIDENCE)
}

/// [`largest_t`] at confidence `c` rather than LoadGen's.
pub fn largest_t_at(n: u64, p: f64, c: f64) -> Option<u64> {
    if n < 2 {
        return None;
    }
    for (x, cumulative) in (0u64..).zip(lower_tail(n, p)) {
        if cumulative >= 1.0 - c {
            // x is the first count the rule refuses; x − 1 is the largest it allows.
            return (x >= 2).then(|| x - 1);
        }
    }
    Some(n)
}

/// The mirror of [`largest_t`]: whether `over` values above a bound among `n` make it
/// certain, at the same confidence, that the bound is not percentile `p` or above: seeing
/// `over` or more such values would be unlikely (below 1 − c) if the true p-th percentile
/// were at the bound, P(Binomial(n, 1 − p) ≥ over) < 1 − c. The capacity search ends a step
/// that violates its SLO on it ([`crate::capacity`]).
pub fn certainly_above(n: u64, over: u64, p: f64) -> bool {
    certainly_above_at(n, over, p, CONFIDENCE)
}

/// [`certainly_above`] at confidence `c`.
pub fn certainly_above_at(n: u64, over: u64, p: f64, c: f64) -> bool {
    if over == 0 || over > n {
        return false;
    }
    // P(X ≥ over) = 1 − P(X ≤ over − 1).
    lower_tail(n, p).take(over as usize).any(|below| below > c)
}

/// P(X ≤ x) for x = 0, 1, …, n, X ~ Binomial(n, 1 − p): the terms summed in x's order from
/// their logarithms.
fn lower_tail(n: u64, p: f64) -> impl Iterator<Item = f64> {
    assert!(p > 0.0 && p < 1.0);
    let q = 1.0 - p;
    let (ln_q, ln_p) = (libm::log(q), libm::log(p));
    let nf = n as f64;
    let ln_n_fact = libm::lgamma(nf + 1.0);
    (0..=n).scan(0.0, move |cumulative, x| {
        let xf = x as f64;
        let ln_term = ln_n_fact - libm::lgamma(xf + 1.0) - libm::lgamma(nf - xf + 1.0)
            + xf * ln_q
            + (nf - xf) * ln_p;
        *cumulative += libm::exp(ln_term);
        Some(*cumulative)
    })
}

/// LoadGen's estimate of percentile `p` from `values` (any order): `None` when `values` are
/// too few for the rule. Returns the estimate and t − 1, the slowest values it discards.
/// (The summaries find it with their other order statistics, in one selection.)
pub fn estimate(values: &[f64], p: f64) -> Option<(f64, u64)> {
    let n = values.len() as u64;
    let t = largest_t(n, p)?.min(n);
    let mut copy = values.to_vec();
    let (_, v, _) = copy.select_nth_unstable_by((n - t) as usize, f64::total_cmp);
    Some((*v, t - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// LoadGen's h(t) + t ≤ N, computed apart with scipy's `betainc` (the regularized
    /// incomplete beta LoadGen's `beta_regularized` evaluates): the fewest requests for t = 1,
    /// and the largest t for N requests.
    #[test]
    fn agrees_with_scipy() {
        for (p, n) in [
            (0.5, 11),
            (0.9, 64),
            (0.95, 130),
            (0.99, 662),
            (0.999, 6636),
        ] {
            assert_eq!(min_requests(p), n, "p {p}");
        }
        for (n, p, t) in [
            (662, 0.99, 1),
            (700, 0.99, 1),
            (1000, 0.99, 2),
            (5000, 0.99, 33),
            (10000, 0.99, 77),
            (100, 0.9, 3),
            (1000, 0.9, 78),
            (10000, 0.999, 2),
            (20000, 0.999, 9),
            (64, 0.5, 22),
            (2000, 0.5, 947),
        ] {
            assert_eq!(largest_t(n, p), Some(t), "N {n}, p {p}");
        }
    }

    /// scipy's `binom.sf(over − 1, n, 1 − p) < 0.01`, computed apart: the fewest values over
    /// the bound that make a violation certain.
    #[test]
    fn certainly_above_agrees_with_scipy() {
        for (n, p, fewest) in [
            (20, 0.99, 3),
            (100, 0.99, 5),
            (662, 0.99, 14),
            (1000, 0.99, 19),
            (50, 0.9, 11),
            (11, 0.5, 10),
            (200, 0.99, 7),
        ] {
            assert!(certainly_above(n, fewest, p), "N {n}, p {p}, {fewest} over");
            assert!(
                !certainly_above(n, fewest - 1, p),
                "N {n}, p {p}, {} over",
                fewest - 1
            );
        }
        assert!(!certainly_above(10, 0, 0.99));
    }

    #[test]
    fn loadgen_minimums() {
        // LoadGen's "Need to process at least 662 queries" for p99 at c = 0.99, d = 0.
        assert_eq!(min_requests(0.99), 662);
        assert!(largest_t(661, 0.99).is_none());
        assert_eq!(largest_t(662, 0.99), Some(1));
    }

    #[test]
    fn the_estimate_discards_t_minus_one_slowest() {
        let values: Vec<f64> = (0..1000).map(f64::from).collect();
        let t = largest_t(1000, 0.99).unwrap();
        let (v, discarded) = estimate(&values, 0.99).unwrap();
        assert_eq!(discarded, t - 1);
        assert_eq!(v, (1000 - t) as f64);
        // Conservative: at or above the sample's own p99 (989.01 here).
        assert!(v >= 989.01, "{v}");
        assert!(estimate(&values[..100], 0.99).is_none());
    }
}
