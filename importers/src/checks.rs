//! What a reader of imported numbers must be told: benchmarks whose every number is zero
//! failed; rows out of rate order were sorted; grid cells that decode faster than the
//! engine does anywhere else in its grid are suspect (an early EOS counts tokens that were
//! never generated: seed 001's Qwen-14B 512×2048 and 1024×2048).

use schemas::flag::{Flag, FlagCode, Severity};

/// A cell below this share of its grid's median latency per output token is suspect.
/// Cells above it are not: a long prompt's prefill legitimately raises the latency per
/// output token of short outputs (seed 003's 2048×128 cells).
pub const SUSPECT_BELOW_MEDIAN: f64 = 0.8;

pub fn all_zero(index: u32, label: &str) -> Flag {
    Flag {
        code: FlagCode::AllFailed,
        severity: Severity::Error,
        benchmark: Some(index),
        message: format!("every number of {label:?} is 0.00 in the source: the benchmark failed"),
    }
}

/// An info flag when `rates` (in source order, `None` for synchronous/throughput rows
/// which sort first and last) are not ascending.
pub fn rate_order(rates: &[(String, f64)]) -> Option<Flag> {
    let sorted = rates.windows(2).all(|w| w[0].1 <= w[1].1);
    (!sorted).then(|| Flag {
        code: FlagCode::SourceOrder,
        severity: Severity::Info,
        benchmark: None,
        message: format!(
            "the source lists rates out of order ({}); they are shown sorted by rate",
            rates
                .iter()
                .map(|(l, _)| l.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })
}

/// Suspect flags for grid cells: `cells` are (benchmark index, input, output, latency per
/// output token in ms).
pub fn suspect_cells(cells: &[(u32, u32, u32, f64)]) -> Vec<Flag> {
    let mut values: Vec<f64> = cells.iter().map(|c| c.3).filter(|v| *v > 0.0).collect();
    if values.len() < 4 {
        return vec![];
    }
    values.sort_by(f64::total_cmp);
    let median = schemas::distribution::percentile(&values, 50.0);
    cells
        .iter()
        .filter(|c| c.3 > 0.0 && c.3 < SUSPECT_BELOW_MEDIAN * median)
        .map(|&(index, input, output, v)| Flag {
            code: FlagCode::Suspect,
            severity: Severity::Warning,
            benchmark: Some(index),
            message: format!(
                "{input}×{output}: latency per output token {v:.2} ms is {:.0}% below the grid's median {median:.2} ms — faster than this engine decodes anywhere else in the grid; likely an early EOS (tokens counted that were never generated)",
                (1.0 - v / median) * 100.0
            ),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cells_well_below_the_median_are_suspect() {
        let cells: Vec<(u32, u32, u32, f64)> = vec![
            (0, 128, 128, 25.7),
            (1, 512, 128, 26.8),
            (2, 512, 2048, 19.62),
            (3, 1024, 2048, 13.14),
            (4, 2048, 128, 29.2),
            (5, 128, 2048, 24.39),
        ];
        let flags = suspect_cells(&cells);
        assert_eq!(
            flags
                .iter()
                .map(|f| f.benchmark.unwrap())
                .collect::<Vec<_>>(),
            [2, 3]
        );
    }

    #[test]
    fn rates_out_of_order_are_noted_once() {
        let ok = [("a@1".to_string(), 1.0), ("a@2".to_string(), 2.0)];
        assert!(rate_order(&ok).is_none());
        let bad = [("a@2.6".to_string(), 2.6), ("a@1.9".to_string(), 1.9)];
        assert!(rate_order(&bad).unwrap().message.contains("a@2.6, a@1.9"));
    }
}
