//! Number formatting shared by every table, chart label and diff: fixed decimals, never
//! `NaN`, never `-0.00`.
//!
//! Why here: the seed tables print every value with two decimals (`6.55`, `0.60 req/sec`),
//! and a value the document does not have (a distribution with no samples is null in the
//! schema) must not turn into `NaN` or `0.00` on the way to a reader. One function decides
//! for all renderers, so a table, a chart axis and a diff always agree on a number.
//! Rust's float formatting is done in `core` (no libc), so the text is the same natively
//! and in wasm32.

/// What a table cell shows for a value the document does not have.
pub const MISSING: &str = "—";

/// `v` with exactly `decimals` decimals; [`MISSING`] when it is not finite. A value that
/// rounds to zero prints as `0.00`, never `-0.00`.
pub fn fixed(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return MISSING.to_string();
    }
    let s = format!("{v:.decimals$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.bytes().all(|b| b == b'0' || b == b'.') => rest.to_string(),
        _ => s,
    }
}

/// [`fixed`] of an optional value; [`MISSING`] for `None`.
pub fn fixed_opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| MISSING.to_string(), |v| fixed(v, decimals))
}

/// ` [40.10 – 42.30]`: a 95 % interval after a value, its ends with `decimals` decimals;
/// empty without one.
pub fn bracketed(interval: Option<(f64, f64)>, decimals: usize) -> String {
    interval.map_or_else(String::new, |(low, high)| {
        format!(" [{} – {}]", fixed(low, decimals), fixed(high, decimals))
    })
}

/// `41.20 [40.10 – 42.30]`: a value and its interval (the value alone without one), both
/// with `decimals` decimals; [`MISSING`] without a value.
pub fn with_interval(
    v: Option<f64>,
    interval: Option<schemas::interval::Interval>,
    decimals: usize,
) -> String {
    match v {
        Some(v) => format!(
            "{}{}",
            fixed(v, decimals),
            bracketed(interval.map(|i| (i.low.get(), i.high.get())), decimals)
        ),
        None => MISSING.to_string(),
    }
}

/// `1.67 sec`: the value with two decimals and a unit, or [`MISSING`] alone (no unit
/// after a dash).
pub fn with_unit(v: Option<f64>, unit: &str) -> String {
    match v.filter(|v| v.is_finite()) {
        Some(v) => format!("{} {unit}", fixed(v, 2)),
        None => MISSING.to_string(),
    }
}

/// `+1.23` / `-1.23` / `0.00`: a change with an explicit sign.
pub fn signed(v: f64, decimals: usize) -> String {
    let s = fixed(v, decimals);
    if s == MISSING || s.starts_with('-') || s.bytes().all(|b| b == b'0' || b == b'.') {
        s
    } else {
        format!("+{s}")
    }
}

/// A duration held in whole microseconds (clock errors, lateness, offset bounds): `340 µs`
/// below 1 ms, `1.10 ms` below 1 s, `16.00 s` from there, two decimals as everywhere else.
pub fn micros(us: u64) -> String {
    if us < 1_000 {
        format!("{us} µs")
    } else if us < 1_000_000 {
        format!("{} ms", fixed(us as f64 / 1e3, 2))
    } else {
        format!("{} s", fixed(us as f64 / 1e6, 2))
    }
}

/// `+3.1%` from a relative change of 0.031.
pub fn percent(fraction: f64) -> String {
    let s = signed(fraction * 100.0, 1);
    if s == MISSING {
        s
    } else {
        format!("{s}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_decimals_and_no_nan() {
        assert_eq!(fixed(6.55, 2), "6.55");
        assert_eq!(fixed(0.6, 2), "0.60");
        assert_eq!(fixed(14455.79, 2), "14455.79");
        assert_eq!(fixed(f64::NAN, 2), MISSING);
        assert_eq!(fixed(f64::INFINITY, 2), MISSING);
        assert_eq!(fixed(-0.0, 2), "0.00");
        assert_eq!(fixed(-0.001, 2), "0.00");
        assert_eq!(fixed(-1.5, 1), "-1.5");
        assert_eq!(fixed_opt(None, 2), MISSING);
        assert_eq!(with_unit(Some(1.666), "sec"), "1.67 sec");
        assert_eq!(with_unit(None, "sec"), MISSING);
        assert_eq!(with_unit(Some(f64::NAN), "sec"), MISSING);
    }

    #[test]
    fn micros_picks_the_unit() {
        assert_eq!(micros(0), "0 µs");
        assert_eq!(micros(999), "999 µs");
        assert_eq!(micros(1_000), "1.00 ms");
        assert_eq!(micros(1_100), "1.10 ms");
        assert_eq!(micros(999_994), "999.99 ms");
        assert_eq!(micros(16_000_000), "16.00 s");
    }

    #[test]
    fn signs_and_percentages() {
        assert_eq!(signed(1.234, 2), "+1.23");
        assert_eq!(signed(-1.234, 2), "-1.23");
        assert_eq!(signed(0.0001, 2), "0.00");
        assert_eq!(signed(-0.0001, 2), "0.00");
        assert_eq!(percent(0.031), "+3.1%");
        assert_eq!(percent(-0.05), "-5.0%");
        assert_eq!(percent(0.0), "0.0%");
        assert_eq!(percent(f64::NAN), MISSING);
    }
}
