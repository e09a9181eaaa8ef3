//! Prefill and decode roles in a benchmark's full detail: each side of a disaggregated
//! deployment's GPUs, its tokens per second per GPU, its servers' count beside the client's,
//! its GPUs' joules per token and the KV transfers, with their 95 % intervals, as
//! `schemas::roles` derived them. Written only when the summary has `host.roles`.
//!
//! ```text
//! Prefill and decode roles (95 % intervals in brackets):
//!
//! | Role | GPUs | Tokens | Tokens/s per GPU | Server count | J/token | KV transfers | KV transfer mean (ms) |
//! | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
//! | prefill (input) | 1 | 28800 | 9146.0 [9050.1 – 9241.9] | 28800 | 0.0123 [0.0121 – 0.0125] | — | — |
//! | decode (output) | 2 | 1440 | 274.4 [270.2 – 278.6] | 1440 | 0.5102 [0.5011 – 0.5193] | 120 | 12.06 [12.04 – 12.08] |
//! ```

use crate::format;
use schemas::document::Benchmark;
use schemas::interval::RoleIntervals;
use schemas::summary::RoleSummary;

/// The table and a line for each role whose servers' count and the client's differ by more
/// than 1 %; an empty string without roles.
pub fn section(b: &Benchmark) -> String {
    let Some(roles) = b.summary.host.as_ref().and_then(|h| h.roles.as_ref()) else {
        return String::new();
    };
    let intervals = b
        .summary
        .uncertainty
        .as_ref()
        .and_then(|u| u.by_role.as_ref());
    let mut out = String::from(
        "Prefill and decode roles (95 % intervals in brackets):\n\n\
         | Role | GPUs | Tokens | Tokens/s per GPU | Server count | J/token | KV transfers | KV transfer mean (ms) |\n\
         | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for (k, r) in roles.iter().enumerate() {
        out.push_str(&row(r, intervals.and_then(|i| i.get(k))));
    }
    for r in roles.iter().filter(|r| r.counts_disagree == Some(true)) {
        let server = r.server_tokens.map_or(0.0, |v| v.get());
        let client = r.benchmark_tokens as f64;
        out.push_str(&format!(
            "\nThe {} servers counted {} tokens where the client counted {} ({} %).\n",
            r.role.as_str(),
            format::fixed(server, 0),
            r.benchmark_tokens,
            format::signed(
                if client > 0.0 {
                    (server / client - 1.0) * 100.0
                } else {
                    f64::NAN
                },
                1
            )
        ));
    }
    out
}

fn row(r: &RoleSummary, i: Option<&RoleIntervals>) -> String {
    let work = match r.role {
        schemas::document::telemetry::ServingRole::Prefill => "input",
        schemas::document::telemetry::ServingRole::Decode => "output",
    };
    format!(
        "| {} ({work}) | {} | {} | {} | {} | {} | {} | {} |\n",
        r.role.as_str(),
        r.gpus,
        r.tokens,
        format::with_interval(
            r.tokens_per_s_per_gpu.map(|v| v.get()),
            i.and_then(|i| i.tokens_per_s_per_gpu),
            1
        ),
        format::fixed_opt(r.server_tokens.map(|v| v.get()), 0),
        format::with_interval(
            r.j_per_token.map(|v| v.get()),
            i.and_then(|i| i.j_per_token),
            4
        ),
        format::fixed_opt(r.kv_transfers.map(|v| v.get()), 0),
        format::with_interval(
            r.kv_transfer_mean_ms.map(|v| v.get()),
            i.and_then(|i| i.kv_transfer_mean_ms),
            2
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::*;
    use schemas::document::telemetry::ServingRole;
    use schemas::interval::Interval;

    fn role(kind: ServingRole, gpus: u32, server: f64, transfers: Option<f64>) -> RoleSummary {
        RoleSummary {
            role: kind,
            gpus,
            tokens: 1000,
            tokens_per_s_per_gpu: Some(fin(250.0)),
            benchmark_tokens: 1000,
            server_tokens: Some(fin(server)),
            counts_disagree: Some((server - 1000.0).abs() > 10.0),
            energy_j: Some(500),
            j_per_token: Some(fin(0.5)),
            kv_transfers: transfers.map(fin),
            kv_transfer_mean_ms: transfers.map(|_| fin(12.25)),
        }
    }

    #[test]
    fn each_role_is_a_row_and_a_disagreeing_count_is_said() {
        let mut b = with_telemetry(sweep(128, 64, 1.0).remove(0), 3, &[]);
        assert_eq!(section(&b), "", "no roles, no table");
        b.summary.host.as_mut().unwrap().roles = Some(vec![
            role(ServingRole::Prefill, 1, 1000.0, None),
            role(ServingRole::Decode, 2, 900.0, Some(64.0)),
        ]);
        let iv = |lo: f64, hi: f64| {
            Some(Interval {
                low: fin(lo),
                high: fin(hi),
            })
        };
        b.summary.uncertainty.as_mut().unwrap().by_role = Some(vec![
            RoleIntervals {
                tokens_per_s_per_gpu: iv(240.0, 260.0),
                j_per_token: None,
                kv_transfer_mean_ms: None,
            },
            RoleIntervals {
                tokens_per_s_per_gpu: None,
                j_per_token: iv(0.45, 0.55),
                kv_transfer_mean_ms: iv(12.0, 12.5),
            },
        ]);
        let table = section(&b);
        assert!(
            table.contains(
                "| prefill (input) | 1 | 1000 | 250.0 [240.0 – 260.0] | 1000 | 0.5000 | — | — |\n"
            ),
            "{table}"
        );
        assert!(
            table.contains(
                "| decode (output) | 2 | 1000 | 250.0 | 900 | 0.5000 [0.4500 – 0.5500] | 64 | 12.25 [12.00 – 12.50] |\n"
            ),
            "{table}"
        );
        assert!(
            table.contains(
                "The decode servers counted 900 tokens where the client counted 1000 (-10.0 %)."
            ),
            "{table}"
        );
        assert!(!table.contains("The prefill servers"), "{table}");
    }
}
