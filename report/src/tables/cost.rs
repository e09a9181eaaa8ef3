//! What a million tokens cost at each load, from the prices the result assumed
//! (`predicate.pricing`) and what its benchmarks measured: derived here, where it is shown (the
//! report's details, a campaign's cells, a comparison), never stored.
//!
//! * GPU time: the result's GPUs (those its host lists) at the GPU-hour price, for as long as
//!   the benchmark's rate takes to serve a million tokens: `price × GPUs / (tokens/s × 3600) ×
//!   10⁶`. Each kind of token is charged the whole GPU-hour (a GPU serving both kinds at once
//!   costs the same either way): per million output tokens at the output rate, per million input
//!   tokens at the input rate. The output cost's 95 % interval is the output rate's turned over
//!   (its ends swap); the input rate has no interval of its own, and its cost none.
//! * Energy: the kWh price for the GPUs' measured energy (NVML): `price × J / 3.6 × 10⁶` per
//!   million tokens, J the energy per output (input) token over the benchmark. One counter's
//!   difference, without an interval.
//!
//! Nothing is shown without a price, and the GPU-hour cost needs the GPU count (a result
//! measured on a host that lists no GPU has none).

use crate::format;
use schemas::document::pricing::{Price, Pricing};
use schemas::document::{Benchmark, Predicate};

/// An amount per million tokens, with its interval where there is one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerMillion {
    pub value: f64,
    pub interval: Option<(f64, f64)>,
}

/// A benchmark's costs per million tokens, in the currency of each price.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Cost {
    pub gpu_output: Option<PerMillion>,
    pub gpu_input: Option<PerMillion>,
    pub energy_output: Option<PerMillion>,
    pub energy_input: Option<PerMillion>,
}

/// The GPUs a result's GPU-hour price is charged for.
pub fn gpus(p: &Predicate) -> Option<u32> {
    crate::view::gpus(&p.host).map(|(n, _)| n)
}

/// What a million tokens cost in GPU time, the GPUs costing `per_second` a second and serving
/// `rate` tokens a second: `per_second / rate × 10⁶`, its interval the rate's (`low`, `high`)
/// turned over where the rate's stays above 0; `None` at a rate of 0.
pub fn gpu_time(per_second: f64, rate: f64, interval: Option<(f64, f64)>) -> Option<PerMillion> {
    (rate > 0.0).then(|| PerMillion {
        value: per_second / rate * 1e6,
        interval: interval
            .filter(|&(low, _)| low > 0.0)
            .map(|(low, high)| (per_second / high * 1e6, per_second / low * 1e6)),
    })
}

/// What `b` costs per million tokens at the result's prices; `None` without a price.
pub fn of(p: &Predicate, b: &Benchmark) -> Option<Cost> {
    let pricing = p.pricing.as_ref()?;
    let s = &b.summary;
    let mut cost = Cost::default();
    if let (Some(price), Some(n)) = (&pricing.gpu_hour, gpus(p)) {
        let per_second = price.amount.get() * f64::from(n) / 3600.0;
        if let Some(out) = s.output_token_throughput_per_s.map(|v| v.get()) {
            let interval = s
                .uncertainty
                .as_ref()
                .and_then(|u| u.output_token_throughput_per_s)
                .map(|i| (i.low.get(), i.high.get()));
            cost.gpu_output = gpu_time(per_second, out, interval);
        }
        let input = match (
            s.total_token_throughput_per_s,
            s.output_token_throughput_per_s,
        ) {
            (Some(t), Some(o)) => Some(t.get() - o.get()),
            _ => None,
        };
        cost.gpu_input = input.and_then(|rate| gpu_time(per_second, rate, None));
    }
    if let (Some(price), Some(g)) = (&pricing.kwh, s.host.as_ref().and_then(|h| h.gpu.as_ref())) {
        let per_joule = price.amount.get() / 3.6e6;
        let energy = g.energy_j.map(|j| j as f64);
        let per = |tokens: u64| {
            energy.filter(|_| tokens > 0).map(|j| PerMillion {
                value: per_joule * j / tokens as f64 * 1e6,
                interval: None,
            })
        };
        cost.energy_output = per(s.output_tokens);
        cost.energy_input = per(s.input_tokens);
    }
    Some(cost)
}

/// `2.5 USD per GPU-hour × 8 GPUs; 0.12 USD per kWh of GPU energy`: the prices a cost assumed.
pub fn assumed(pricing: &Pricing, gpus: Option<u32>) -> String {
    let mut parts = Vec::new();
    if let Some(p) = &pricing.gpu_hour {
        parts.push(match gpus {
            Some(n) => format!(
                "{p} per GPU-hour × {n} GPU{}",
                if n == 1 { "" } else { "s" }
            ),
            None => format!("{p} per GPU-hour (no GPU count: the host listed none)"),
        });
    }
    if let Some(p) = &pricing.kwh {
        parts.push(format!("{p} per kWh of GPU energy"));
    }
    if pricing.readers {
        parts.push("the reader's prices, not the result's".into());
    }
    parts.join("; ")
}

/// `0.4213 USD [0.4101 – 0.4330]`: an amount with four significant decimals (cents of a
/// million tokens are often fractions of a cent), its interval where it has one.
pub fn money(v: Option<PerMillion>, price: Option<&Price>) -> String {
    let (Some(v), Some(price)) = (v, price) else {
        return format::MISSING.to_string();
    };
    format!(
        "{} {}{}",
        format::fixed(v.value, 4),
        price.currency,
        format::bracketed(v.interval, 4)
    )
}

/// The cost table of a result's benchmarks, in `order` (the details' order): empty without a
/// price.
pub fn table(p: &Predicate, order: &[usize]) -> String {
    let Some(pricing) = &p.pricing else {
        return String::new();
    };
    let (gpu, kwh) = (pricing.gpu_hour.as_ref(), pricing.kwh.as_ref());
    let mut out = format!(
        "Cost per million tokens ({}; the output cost's 95 % interval in brackets):\n\n\
         | Benchmark | Output tok/s | Output, GPU time | Input, GPU time | Output, energy | Input, energy |\n\
         | :--- | ---: | ---: | ---: | ---: | ---: |\n",
        crate::escape::md_escape(&assumed(pricing, gpus(p)))
    );
    for &i in order {
        let b = &p.benchmarks[i];
        let c = of(p, b).unwrap_or_default();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            crate::escape::md_escape(&b.label),
            format::fixed_opt(b.summary.output_token_throughput_per_s.map(|v| v.get()), 2),
            money(c.gpu_output, gpu),
            money(c.gpu_input, gpu),
            money(c.energy_output, kwh),
            money(c.energy_input, kwh),
        ));
    }
    if let Some(line) = at_capacity(p) {
        out.push('\n');
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// `At the capacity under the SLO (12.50 req/s): 0.4213 USD per million output tokens of GPU
/// time.` — the cost at the load a capacity search found; `None` without one or a price.
pub fn at_capacity(p: &Predicate) -> Option<String> {
    let c = p.capacity.as_ref()?;
    let b = p.benchmarks.get(c.passed_benchmark? as usize)?;
    let cost = of(p, b)?;
    let pricing = p.pricing.as_ref()?;
    let mut parts = Vec::new();
    if cost.gpu_output.is_some() {
        parts.push(format!(
            "{} per million output tokens of GPU time",
            money(cost.gpu_output, pricing.gpu_hour.as_ref())
        ));
    }
    if cost.energy_output.is_some() {
        parts.push(format!(
            "{} of energy",
            money(cost.energy_output, pricing.kwh.as_ref())
        ));
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!(
        "At the capacity under the SLO ({}): {}.",
        crate::tables::capacity::load(c.search, c.passed?.get()),
        parts.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::*;
    use schemas::document::ProfileKind;

    fn priced(gpus: Option<(u32, &str)>, pricing: Option<&str>) -> Predicate {
        let load = Load {
            requests: 400,
            input: 100,
            output: 50,
            gap_us: 10_000,
            ttft_us: 20_000,
            ttft_growth_us: 0,
            itl_us: 5_000,
            fail_every: None,
        };
        let b = with_telemetry(
            measured(
                "constant@100",
                profile(ProfileKind::Constant, Some(100.0), None),
                &load,
            ),
            gpus.map_or(1, |g| g.0),
            &[],
        );
        let doc = Doc::vllm(gpus);
        let mut p = sealed(predicate(&doc, vec![b], vec![])).predicate;
        p.pricing = pricing.map(|t| {
            let (gpu, kwh) = t.split_once(';').unwrap();
            Pricing {
                gpu_hour: Price::parse(gpu, "x").ok(),
                kwh: Price::parse(kwh, "x").ok(),
                readers: false,
            }
        });
        p
    }

    #[test]
    fn a_million_tokens_cost_the_gpu_hours_and_the_energy_they_took() {
        let p = priced(Some((8, "NVIDIA H100")), Some("2.5 USD;0.12 EUR"));
        let b = &p.benchmarks[0];
        let c = of(&p, b).unwrap();
        let s = &b.summary;
        let out = s.output_token_throughput_per_s.unwrap().get();
        let input = s.total_token_throughput_per_s.unwrap().get() - out;
        // 8 GPUs at 2.5 USD an hour: 20 USD an hour, for 10⁶ / rate seconds.
        let want = 20.0 / 3600.0 * 1e6 / out;
        let got = c.gpu_output.unwrap();
        assert!((got.value - want).abs() < 1e-9 * want, "{got:?} vs {want}");
        let i = s
            .uncertainty
            .as_ref()
            .unwrap()
            .output_token_throughput_per_s
            .unwrap();
        let (low, high) = got.interval.unwrap();
        assert!((low - 20.0 / 3600.0 * 1e6 / i.high.get()).abs() < 1e-9 && low < got.value);
        assert!((high - 20.0 / 3600.0 * 1e6 / i.low.get()).abs() < 1e-9 && high > got.value);
        assert!((c.gpu_input.unwrap().value - 20.0 / 3600.0 * 1e6 / input).abs() < 1e-6);
        // Energy: J per output token over the benchmark, at 0.12 EUR per 3.6 MJ.
        let g = s.host.as_ref().unwrap().gpu.as_ref().unwrap();
        let per_token = g.energy_j.unwrap() as f64 / s.output_tokens as f64;
        let e = c.energy_output.unwrap().value;
        assert!((e - 0.12 * per_token / 3.6e6 * 1e6).abs() < 1e-12, "{e}");
        let table = table(&p, &[0]);
        assert!(
            table.starts_with("Cost per million tokens (2.5 USD per GPU-hour × 8 GPUs; 0.12 EUR per kWh of GPU energy;"),
            "{table}"
        );
        let row = table
            .lines()
            .find(|l| l.starts_with("| constant@100"))
            .unwrap();
        assert!(
            row.contains(&format!("| {} USD [", format::fixed(want, 4))),
            "{row}"
        );
        assert!(row.contains(" EUR |"), "{row}");
        // The details say it too.
        assert!(crate::tables::full::details(&statement(p.clone())).contains(&table));
    }

    #[test]
    fn nothing_without_a_price_and_no_gpu_hour_cost_without_gpus() {
        let p = priced(Some((2, "NVIDIA H100")), None);
        assert!(of(&p, &p.benchmarks[0]).is_none());
        assert_eq!(table(&p, &[0]), "");
        let p = priced(None, Some("$2;€0.1"));
        let c = of(&p, &p.benchmarks[0]).unwrap();
        assert!(c.gpu_output.is_none() && c.gpu_input.is_none());
        assert!(table(&p, &[0]).contains("(no GPU count: the host listed none)"));
    }
}
