//! LoRA adapters in a benchmark's full detail: each adapter's share of the requests, its
//! latency and its output rate beside the whole benchmark's, with their 95 % intervals, as
//! `schemas::adapters` derived them; then what the server said of its adapters
//! (`host.server.lora`), and where that disagrees with what the requests named. Written only
//! when the summary has either.
//!
//! ```text
//! By LoRA adapter (95 % intervals in brackets):
//!
//! | Adapter | Share | Requests | Completed | TTFT mean (ms) | TTFT p99 (ms) | TPOT mean (ms) | E2E mean (ms) | Output tok/s |
//! | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
//! | sql | 50.0 % | 1000 | 1000 | 41.20 [40.10 – 42.30] | 44.10 | 8.01 [7.98 – 8.04] | 1044.2 [1040.1 – 1048.3] | 612.4 [598.0 – 626.8] |
//!
//! The server's own view (12 scrapes): at most 2 adapters running at once (it holds 2); it ran
//! or queued chat, sql. It agrees with the requests.
//! ```

use crate::escape::md_escape;
use crate::format;
use schemas::interval::{AdapterIntervals, Intervals};
use schemas::summary::{AdapterStats, Distribution, LoraServerView};

/// The table and the server's view, or an empty string without either.
pub fn section(s: &schemas::Summary) -> String {
    let view = s
        .host
        .as_ref()
        .and_then(|h| h.server.as_ref())
        .and_then(|server| server.lora.as_ref())
        .filter(|v| s.by_adapter.is_some() || !v.seen.is_empty());
    let mut out = String::new();
    if let Some(adapters) = &s.by_adapter {
        let intervals = s.uncertainty.as_ref().and_then(|u| u.by_adapter.as_ref());
        out.push_str(
            "By LoRA adapter (95 % intervals in brackets):\n\n\
             | Adapter | Share | Requests | Completed | TTFT mean (ms) | TTFT p99 (ms) | TPOT mean (ms) | E2E mean (ms) | Output tok/s |\n\
             | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
        );
        for (k, a) in adapters.iter().enumerate() {
            out.push_str(&row(a, intervals.and_then(|i| i.get(k))));
        }
    }
    if let Some(v) = view {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&server_view(v));
    }
    out
}

/// What the server said of its adapters, in two sentences: what it ran, and whether that
/// agrees with what the requests named.
fn server_view(v: &LoraServerView) -> String {
    let names = |list: &[String]| {
        list.iter()
            .map(|a| md_escape(a))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let holds = v
        .max_lora
        .map_or_else(String::new, |m| format!(" (it holds {m})"));
    let ran = if v.seen.is_empty() {
        "no scrape found an adapter running or waiting".to_string()
    } else {
        format!(
            "at most {} running at once{holds}; it ran or queued {}",
            super::host::plural(v.running_max, "adapter"),
            names(&v.seen)
        )
    };
    let agreement = if v.not_named.is_empty() {
        "It agrees with the requests.".to_string()
    } else {
        format!(
            "**It disagrees with the requests:** it ran or queued {}, which no request named \
             (another client used the server, or it names adapters otherwise).",
            names(&v.not_named)
        )
    };
    format!(
        "The server's own view ({}): {ran}. {agreement}\n",
        super::host::plural(v.scrapes, "scrape")
    )
}

fn row(a: &AdapterStats, i: Option<&AdapterIntervals>) -> String {
    let mean = |d: &Option<Distribution>, i: Option<&Option<Intervals>>| {
        format::with_interval(
            d.as_ref().map(|d| d.mean.get()),
            i.and_then(|i| i.as_ref()).map(|i| i.mean),
            2,
        )
    };
    format!(
        "| {} | {} % | {} | {} | {} | {} | {} | {} | {} |\n",
        md_escape(&a.adapter),
        format::fixed(a.share.get() * 100.0, 1),
        a.requests,
        a.completed,
        mean(&a.ttft_ms, i.map(|i| &i.ttft_ms)),
        format::fixed_opt(a.ttft_ms.as_ref().map(|d| d.p99.get()), 2),
        mean(&a.tpot_ms, i.map(|i| &i.tpot_ms)),
        mean(&a.e2e_ms, i.map(|i| &i.e2e_ms)),
        format::with_interval(
            a.output_token_throughput_per_s.map(|v| v.get()),
            i.and_then(|i| i.output_token_throughput_per_s),
            1
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemas::document::RawRecord;

    #[test]
    fn the_servers_view_says_whether_it_agrees() {
        let mut v = LoraServerView {
            scrapes: 12,
            max_lora: Some(2),
            running_max: 2,
            seen: vec!["chat".into(), "sql".into()],
            named: vec!["chat".into(), "sql".into()],
            not_named: vec![],
        };
        assert_eq!(
            server_view(&v),
            "The server's own view (12 scrapes): at most 2 adapters running at once (it holds \
             2); it ran or queued chat, sql. It agrees with the requests.\n"
        );
        v.seen.push("x|y".into());
        v.not_named.push("x|y".into());
        assert!(server_view(&v).contains(
            "**It disagrees with the requests:** it ran or queued x\\|y, which no request named"
        ));
    }

    #[test]
    fn each_adapter_is_a_row_with_its_intervals() {
        let records: Vec<RawRecord> = (0..200u64)
            .map(|i| {
                let (name, ttft) = if i % 4 == 0 {
                    ("b|x", 30_000)
                } else {
                    ("a", 10_000)
                };
                RawRecord {
                    scheduled_us: i * 20_000,
                    sent_us: i * 20_000,
                    first_token_us: Some(i * 20_000 + ttft + (i % 3) * 100),
                    token_gaps: schemas::token_times::encode(&[2000, 2000]),
                    end_us: i * 20_000 + ttft + 4000,
                    output_tokens_client: 3,
                    adapter: Some(name.into()),
                    ..RawRecord::default()
                }
            })
            .collect();
        let s = schemas::metrics::summarize(&records, None).unwrap();
        let table = section(&s);
        let rows: Vec<&str> = table
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| :"))
            .collect();
        assert_eq!(rows.len(), 3, "{table}");
        assert!(
            rows[1].starts_with("| a | 75.0 % | 150 | 150 | 10.10 ["),
            "{table}"
        );
        // A name is escaped as a table cell.
        assert!(
            rows[2].starts_with("| b\\|x | 25.0 % | 50 | 50 | 30.10"),
            "{table}"
        );
        assert!(rows[2].contains("| 34.00 [34.00 – 34.00] |"), "{table}");
        assert_eq!(
            section(&schemas::metrics::summarize(&records[..0], None).unwrap()),
            ""
        );
    }
}
