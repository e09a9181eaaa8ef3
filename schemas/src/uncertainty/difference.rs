//! The difference of two estimates, each with its 95 % interval, and whether it is real: the
//! one rule `runner diff` (and the pages built on it) judge a change by.
//!
//! The interval of B − A combines the two sides' intervals by Newcombe's MOVER ("method of
//! variance estimates recovery"): each side's distance from its estimate to the interval's
//! end stands for its margin of error, and margins add in quadrature, each side's in the
//! direction it moves the difference. For symmetric intervals this is the familiar
//! ±√(h_A² + h_B²); for the skewed intervals of percentiles it keeps the skew. The two runs
//! are taken as independent (two runs of a benchmark share no requests). A difference whose
//! interval holds 0 is within the noise of the two runs.

use super::Interval;

/// The 95 % interval of `b − a`, from each estimate and its interval.
pub fn interval(a: f64, ia: &Interval, b: f64, ib: &Interval) -> (f64, f64) {
    between(
        a,
        (ia.low.get(), ia.high.get()),
        b,
        (ib.low.get(), ib.high.get()),
    )
}

/// [`interval`], the intervals given as `(low, high)`.
pub fn between(a: f64, (a_lo, a_hi): (f64, f64), b: f64, (b_lo, b_hi): (f64, f64)) -> (f64, f64) {
    let d = b - a;
    let (a_low, a_high) = (a - a_lo, a_hi - a);
    let (b_low, b_high) = (b - b_lo, b_hi - b);
    let low = d - (b_low * b_low + a_high * a_high).sqrt();
    let high = d + (b_high * b_high + a_low * a_low).sqrt();
    (low, high)
}

/// How much wider each of `m` differences' intervals must be for all of them together to hold
/// with 95 % confidence (Bonferroni: each at 1 − 0.05 / m): the ratio of the critical values of
/// the batch-means t (9 degrees of freedom). 1 for one difference, 1.44 for five.
pub fn family_factor(m: usize) -> f64 {
    let df = super::BATCHES as u32 - 1;
    let each = 1.0 - (1.0 - super::CONFIDENCE) / m.max(1) as f64;
    super::student_t::critical_value(df, each)
        / super::student_t::critical_value(df, super::CONFIDENCE)
}

/// The interval `(low, high)` of the difference `d`, each margin scaled by `factor`.
pub fn widened(d: f64, (low, high): (f64, f64), factor: f64) -> (f64, f64) {
    (d - factor * (d - low), d + factor * (high - d))
}

/// Welch's interval of `b − a` for two means over runs, each side given as (mean, standard
/// deviation, runs), at two-sided `confidence`, the degrees of freedom by Welch–Satterthwaite
/// rounded down. It holds what moves between runs, which within-run intervals do not. `None`
/// with fewer than two runs on a side; the point itself when neither side spreads.
pub fn welch(a: (f64, f64, usize), b: (f64, f64, usize), confidence: f64) -> Option<(f64, f64)> {
    if a.2 < 2 || b.2 < 2 {
        return None;
    }
    let (va, vb) = (a.1.powi(2) / a.2 as f64, b.1.powi(2) / b.2 as f64);
    let se = (va + vb).sqrt();
    let d = b.0 - a.0;
    if se == 0.0 {
        return Some((d, d));
    }
    let df = (va + vb).powi(2) / (va * va / (a.2 as f64 - 1.0) + vb * vb / (b.2 as f64 - 1.0));
    let t = super::student_t::critical_value((df.floor() as u32).max(1), confidence);
    Some((d - t * se, d + t * se))
}

/// Whether the difference is real: its interval leaves out 0.
pub fn is_real(low: f64, high: f64) -> bool {
    low > 0.0 || high < 0.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numbers::Finite;

    fn iv(low: f64, high: f64) -> Interval {
        Interval {
            low: Finite::new(low).unwrap(),
            high: Finite::new(high).unwrap(),
        }
    }

    #[test]
    fn symmetric_margins_add_in_quadrature() {
        // 10 ± 3 and 15 ± 4: 5 ± 5.
        let (low, high) = interval(10.0, &iv(7.0, 13.0), 15.0, &iv(11.0, 19.0));
        assert!((low - 0.0).abs() < 1e-12 && (high - 10.0).abs() < 1e-12);
        assert!(!is_real(low, high), "an interval touching 0 holds it");
        let (low, high) = interval(10.0, &iv(9.0, 11.0), 15.0, &iv(14.0, 16.0));
        assert!(is_real(low, high));
    }

    #[test]
    fn skewed_intervals_keep_their_skew() {
        // A's long upper tail widens the difference's lower side only.
        let (low, high) = interval(10.0, &iv(9.0, 20.0), 10.0, &iv(9.0, 11.0));
        assert!((low + (1.0f64 + 100.0).sqrt()).abs() < 1e-12, "{low}");
        assert!((high - 2f64.sqrt()).abs() < 1e-12, "{high}");
    }
}
