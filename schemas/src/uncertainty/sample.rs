//! A sample as the intervals of [`super`] read it: its values in schedule order, visited batch
//! by batch, and the few operations the intervals need, for the two kinds of values a summary
//! has. Latencies are `f64` ms, one per request, collected into one vector. Token gaps are the
//! records' own `u64` µs, one slice per request, never copied (a 10,000-request result holds
//! over a million), compared and summed as integers (and ranked by the counts the summary's ITL
//! already made, `distribution::GapCounts`).

use super::{batch, BATCHES};
use crate::distribution;

/// A value of a sample.
pub(crate) trait Sample: Copy {
    /// A batch's running sum.
    type Sum: Copy + Default;
    fn add(sum: &mut Self::Sum, piece: &[Self]);
    /// The mean, in ms, of `n` values summing to `sum`.
    fn mean_ms(sum: Self::Sum, n: usize) -> f64;
    fn ms(self) -> f64;
    /// The largest value at or below `q` ms, as a bound for [`Sample::at_most`].
    fn bound(q_ms: f64) -> Self;
    fn at_most(self, bound: Self) -> bool;
}

/// A sample's values in schedule order, as consecutive slices.
pub(crate) struct Series<'a, T> {
    pieces: Vec<&'a [T]>,
    len: usize,
}

impl<T> Default for Series<'_, T> {
    fn default() -> Self {
        Series {
            pieces: Vec::new(),
            len: 0,
        }
    }
}

impl<'a, T: Copy> Series<'a, T> {
    /// One vector's values.
    pub fn whole(values: &'a [T]) -> Self {
        Series {
            pieces: vec![values],
            len: values.len(),
        }
    }

    pub fn push(&mut self, piece: &'a [T]) {
        self.len += piece.len();
        self.pieces.push(piece);
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn pieces(&self) -> impl Iterator<Item = &'a [T]> + '_ {
        self.pieces.iter().copied()
    }

    /// Calls `f(j, piece)` on consecutive pieces of the values, in order, each inside batch j
    /// (see [`batch`]).
    pub fn batches(&self, mut f: impl FnMut(usize, &[T])) {
        let n = self.len;
        let (mut pos, mut j) = (0usize, 0usize);
        let mut end = batch(n, 0).end;
        for piece in &self.pieces {
            let mut rest = *piece;
            while !rest.is_empty() {
                while pos >= end && j + 1 < BATCHES {
                    j += 1;
                    end = batch(n, j).end;
                }
                let take = (end - pos).min(rest.len());
                f(j, &rest[..take]);
                pos += take;
                rest = &rest[take..];
            }
        }
    }
}

impl Sample for f64 {
    type Sum = f64;
    fn add(sum: &mut f64, piece: &[f64]) {
        for &v in piece {
            *sum += v;
        }
    }
    fn mean_ms(sum: f64, n: usize) -> f64 {
        sum / n as f64
    }
    fn ms(self) -> f64 {
        self
    }
    fn bound(q_ms: f64) -> f64 {
        q_ms
    }
    fn at_most(self, bound: f64) -> bool {
        self <= bound
    }
}

impl Sample for u64 {
    type Sum = u128;
    fn add(sum: &mut u128, piece: &[u64]) {
        // In u64 while it fits (u128 arithmetic is emulated in wasm), exactly either way.
        match piece.iter().try_fold(0u64, |a, &v| a.checked_add(v)) {
            Some(part) => *sum += u128::from(part),
            None => *sum += piece.iter().map(|&v| u128::from(v)).sum::<u128>(),
        }
    }
    /// Σ µs / 1000 / n.
    fn mean_ms(sum: u128, n: usize) -> f64 {
        sum as f64 / 1000.0 / n as f64
    }
    fn ms(self) -> f64 {
        distribution::us_to_ms(self)
    }
    /// The largest `v` with `us_to_ms(v) <= q_ms` (0 when none is).
    fn bound(q_ms: f64) -> u64 {
        let mut v = (q_ms * 1000.0).max(0.0).floor() as u64;
        while v < u64::MAX && distribution::us_to_ms(v + 1) <= q_ms {
            v += 1;
        }
        while v > 0 && distribution::us_to_ms(v) > q_ms {
            v -= 1;
        }
        v
    }
    fn at_most(self, bound: u64) -> bool {
        self <= bound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces split at batch boundaries wherever they fall, every value once, in order.
    #[test]
    fn batches_cover_the_values_in_order() {
        let values: Vec<u64> = (0..103).collect();
        let mut series = Series::default();
        for chunk in values.chunks(7) {
            series.push(chunk);
        }
        series.push(&[]);
        let mut seen: Vec<(usize, u64)> = Vec::new();
        series.batches(|j, piece| seen.extend(piece.iter().map(|&v| (j, v))));
        assert_eq!(seen.len(), 103);
        for (k, &(j, v)) in seen.iter().enumerate() {
            assert_eq!(v, k as u64);
            assert!(batch(103, j).contains(&k), "{k} in batch {j}");
        }
        let counts = distribution::GapCounts::of(series.pieces());
        assert_eq!(
            counts.order_statistics(vec![0, 51, 102]),
            vec![(0, 0), (51, 51), (102, 102)]
        );
    }

    #[test]
    fn the_bound_of_a_gap_matches_its_milliseconds() {
        for q in [0.0, 0.001, 4.9995, 5.0, 12.345_678, 70_000.0] {
            let b = u64::bound(q);
            assert!(distribution::us_to_ms(b) <= q || b == 0, "{q}");
            assert!(distribution::us_to_ms(b + 1) > q, "{q}");
        }
    }
}
