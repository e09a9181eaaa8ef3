//! Which value of a comparison's column leads, and whether the noise could undo the lead.
//!
//! The best value (highest throughput, lowest latency) is bold only when it is better than
//! every other value of the column beyond the noise: the 95 % interval of each difference
//! (`schemas::uncertainty::difference`) leaves out zero. When the noise cannot tell the best
//! from some others, those leaders are each marked tied (`≈`), and none is bold. A column where
//! some value carries no interval (results written before `result/v0.7`, imported, or too few
//! requests) is judged on the printed values, as before intervals existed: the best, and any
//! equal to it at the printed precision, bold. A column with fewer than two values marks
//! nothing.

use super::subject::Better;
use schemas::uncertainty::difference;

/// A value and, where its result says, its 95 % interval.
pub(crate) use schemas::trend::Estimate;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    None,
    /// Better than every other value beyond the noise (or, without intervals, the best).
    Best,
    /// A leader the noise cannot tell from another.
    Tied,
}

/// The mark of each value of a column; `text` prints a value as its cell does.
pub(crate) fn marks(
    column: &[Option<Estimate>],
    better: Better,
    text: impl Fn(f64) -> String,
) -> Vec<Mark> {
    let mut marks = vec![Mark::None; column.len()];
    let present: Vec<(usize, Estimate)> = column
        .iter()
        .enumerate()
        .filter_map(|(i, e)| e.map(|e| (i, e)))
        .collect();
    if present.len() < 2 {
        return marks;
    }
    let (best_index, best) = present
        .iter()
        .copied()
        .reduce(|a, b| {
            if better.of(a.1.value, b.1.value) == b.1.value && b.1.value != a.1.value {
                b
            } else {
                a
            }
        })
        .expect("two or more present");
    if present.iter().any(|(_, e)| e.interval.is_none()) {
        let best_text = text(best.value);
        for (i, e) in &present {
            if text(e.value) == best_text {
                marks[*i] = Mark::Best;
            }
        }
        return marks;
    }
    let tied: Vec<usize> = present
        .iter()
        .filter(|(i, e)| *i != best_index && !apart(&best, e))
        .map(|(i, _)| *i)
        .collect();
    if tied.is_empty() {
        marks[best_index] = Mark::Best;
    } else {
        marks[best_index] = Mark::Tied;
        for i in tied {
            marks[i] = Mark::Tied;
        }
    }
    marks
}

/// Whether two estimates differ beyond the noise.
fn apart(a: &Estimate, b: &Estimate) -> bool {
    let (Some(ia), Some(ib)) = (a.interval, b.interval) else {
        return false;
    };
    let (low, high) = difference::between(a.value, ia, b.value, ib);
    difference::is_real(low, high)
}

/// A cell as its mark shows it: `**cell**`, `≈ cell`, or as it is.
pub(crate) fn marked(cell: String, mark: Mark) -> String {
    match mark {
        Mark::Best if cell != crate::format::MISSING => format!("**{cell}**"),
        Mark::Tied => format!("≈ {cell}"),
        _ => cell,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(value: f64, half: Option<f64>) -> Option<Estimate> {
        Some(Estimate {
            value,
            interval: half.map(|h| (value - h, value + h)),
        })
    }

    fn text(v: f64) -> String {
        format!("{v:.2}")
    }

    #[test]
    fn bold_only_beyond_the_noise() {
        // 100 ± 1 against 90 ± 1: apart.
        let m = marks(
            &[e(100.0, Some(1.0)), e(90.0, Some(1.0))],
            Better::Higher,
            text,
        );
        assert_eq!(m, [Mark::Best, Mark::None]);
        // 100 ± 5 against 98 ± 5 and 80 ± 1: the first two tied, the third behind.
        let m = marks(
            &[e(100.0, Some(5.0)), e(98.0, Some(5.0)), e(80.0, Some(1.0))],
            Better::Higher,
            text,
        );
        assert_eq!(m, [Mark::Tied, Mark::Tied, Mark::None]);
        // Lower is better.
        let m = marks(
            &[e(10.0, Some(0.1)), e(12.0, Some(0.1)), None],
            Better::Lower,
            text,
        );
        assert_eq!(m, [Mark::Best, Mark::None, Mark::None]);
    }

    #[test]
    fn without_intervals_the_printed_best() {
        let m = marks(
            &[e(100.0, None), e(100.001, Some(5.0)), e(90.0, None)],
            Better::Higher,
            text,
        );
        assert_eq!(m, [Mark::Best, Mark::Best, Mark::None]);
        assert_eq!(
            marks(&[e(1.0, None), None], Better::Higher, text),
            [Mark::None, Mark::None]
        );
    }
}
