//! Linear axes whose range, ticks and tick labels are plain arithmetic.
//!
//! plotters' own `f64` axes pick ticks with `powf` and `log`, which come from the
//! platform's libm: a last-bit difference between glibc and the wasm32 libm can move a
//! tick at a power of ten, and so the SVG bytes. [`Axis`] picks a step of 1, 2 or 5 × 10^k
//! from a table of literals, places ticks at integer multiples of it, and formats labels
//! with the step's decimals: the same bytes on every platform. Every axis includes zero,
//! so bars of throughput and latency are read against their true origin.

use crate::format;
use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use std::ops::Range;

/// 10^-15 … 10^15, exact decimal literals rounded once by the compiler.
const POW10: [f64; 31] = [
    1e-15, 1e-14, 1e-13, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1,
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];
const POW10_ZERO: i32 = 15;

/// A linear axis from `lo` to `hi` with ticks every `step`.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
    decimals: usize,
}

impl Axis {
    /// The axis covering `min..=max` and zero with about `target` ticks (at least 2).
    /// Non-finite bounds are treated as zero.
    pub fn covering(min: f64, max: f64, target: usize) -> Axis {
        let finite = |v: f64| if v.is_finite() { v } else { 0.0 };
        let (min, max) = (finite(min).min(0.0), finite(max).max(0.0));
        let span = if max > min { max - min } else { 1.0 };
        let raw = span / target.max(2) as f64;
        let mut k = 0usize;
        while k + 1 < POW10.len() && POW10[k + 1] <= raw {
            k += 1;
        }
        let mut exp = k as i32 - POW10_ZERO;
        let p = POW10[k];
        let m = raw / p;
        let step = if m <= 1.0 {
            p
        } else if m <= 2.0 {
            2.0 * p
        } else if m <= 5.0 {
            5.0 * p
        } else if k + 1 < POW10.len() {
            exp += 1;
            POW10[k + 1]
        } else {
            p * m.ceil()
        };
        let decimals = if exp < 0 { (-exp) as usize } else { 0 };
        let lo_i = (min / step).floor() as i64;
        let mut hi_i = (max / step).ceil() as i64;
        if hi_i <= lo_i {
            hi_i = lo_i + 1;
        }
        let ticks: Vec<f64> = (lo_i..=hi_i).map(|i| i as f64 * step).collect();
        Axis {
            lo: ticks[0],
            hi: ticks[ticks.len() - 1],
            ticks,
            decimals,
        }
    }

    /// Tick values, lowest first.
    pub fn ticks(&self) -> &[f64] {
        &self.ticks
    }

    /// A tick label: the value with the step's decimals.
    pub fn label(&self, v: f64) -> String {
        format::fixed(v, self.decimals)
    }
}

impl Ranged for Axis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let frac = (value - self.lo) / (self.hi - self.lo);
        limit.0 + (frac * f64::from(limit.1 - limit.0)).round() as i32
    }

    /// The ticks for bold grid lines and labels; no light grid lines.
    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        let bold_only = !hint.weight().allow_light_points();
        if hint.max_num_points() == 0 || !(bold_only || hint.max_num_points() == hint.bold_points())
        {
            return vec![];
        }
        self.ticks.clone()
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

impl ValueFormatter<f64> for Axis {
    fn format_ext(&self, value: &f64) -> String {
        self.label(*value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps_and_labels() {
        let a = Axis::covering(0.0, 9.3, 5);
        assert_eq!(a.ticks(), &[0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(a.label(2.0), "2");
        let a = Axis::covering(128.0, 2048.0, 5);
        assert_eq!(a.ticks().last(), Some(&2500.0));
        let a = Axis::covering(0.0, 0.37, 5);
        assert_eq!(a.label(a.ticks()[3]), "0.3");
        let a = Axis::covering(0.0, 0.0, 5);
        assert_eq!(a.ticks().len(), 2);
        let a = Axis::covering(f64::NAN, f64::INFINITY, 5);
        assert!(a.ticks().iter().all(|t| t.is_finite()));
        assert_eq!(Axis::covering(0.0, 10.0, 5).map(&5.0, (0, 100)), 50);
    }
}
