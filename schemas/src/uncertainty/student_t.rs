//! Student's t quantile for the intervals of [`super`]: the one transcendental step of an
//! interval, so it is computed here with `libm` (Rust's port of musl's), which gives the same
//! bits natively and in wasm, where `f64::atan` would call whichever libm the platform has.

/// The two-sided critical value of Student's t with `df` degrees of freedom: the `t` with
/// P(|T| ≤ t) = `confidence`. `df` ≥ 1, `confidence` in (0, 1).
pub fn critical_value(df: u32, confidence: f64) -> f64 {
    assert!(df >= 1 && confidence > 0.0 && confidence < 1.0);
    // P(|T| ≤ t) rises with t: bisect until the bracket stops shrinking (at most ~1100 halvings
    // of f64 exponents and mantissa; in practice about 60).
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while central_probability(df, hi) < confidence {
        hi *= 2.0;
    }
    loop {
        let mid = lo + (hi - lo) / 2.0;
        if mid <= lo || mid >= hi {
            return hi;
        }
        if central_probability(df, mid) < confidence {
            lo = mid;
        } else {
            hi = mid;
        }
    }
}

/// P(|T| ≤ t) for Student's t with integer `df`, by the finite series of Abramowitz & Stegun
/// 26.7.3–4 in θ = atan(t / √df): exact up to rounding for every integer `df`.
fn central_probability(df: u32, t: f64) -> f64 {
    let theta = libm::atan(t / libm::sqrt(f64::from(df)));
    let (s, c) = (libm::sin(theta), libm::cos(theta));
    let c2 = c * c;
    if df % 2 == 1 {
        // θ + sinθ·(cosθ + (2/3)cos³θ + (2·4)/(3·5)cos⁵θ + …), terms up to cos^(df−2).
        let mut term = c;
        let mut sum = if df > 1 { c } else { 0.0 };
        let mut k = 2u32;
        while k < df - 1 {
            term *= c2 * f64::from(k) / f64::from(k + 1);
            sum += term;
            k += 2;
        }
        2.0 / std::f64::consts::PI * (theta + s * sum)
    } else {
        // sinθ·(1 + (1/2)cos²θ + (1·3)/(2·4)cos⁴θ + …), terms up to cos^(df−2).
        let mut term = 1.0;
        let mut sum = 1.0;
        let mut k = 1u32;
        while k < df - 1 {
            term *= c2 * f64::from(k) / f64::from(k + 1);
            sum += term;
            k += 2;
        }
        s * sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the printed tables (to their 3 decimals) and the normal limit.
    #[test]
    fn known_critical_values() {
        for (df, want) in [
            (1, 12.706),
            (2, 4.303),
            (3, 3.182),
            (4, 2.776),
            (9, 2.262),
            (10, 2.228),
            (19, 2.093),
            (29, 2.045),
            (30, 2.042),
            (120, 1.980),
        ] {
            let got = critical_value(df, 0.95);
            assert!((got - want).abs() < 6e-4, "df {df}: {got} vs {want}");
        }
        assert!((critical_value(5_000, 0.95) - 1.959_964).abs() < 1e-3);
        assert!((critical_value(9, 0.99) - 3.250).abs() < 6e-4);
    }
}
