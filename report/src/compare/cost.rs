//! Cost across a group: each priced result's cost per million tokens at its peak (and at its
//! capacity under an SLO, where it searched for one), stating the prices it assumed. Results
//! priced in different currencies, or at different prices, are not one column to rank: no leader
//! is marked; each row says its own prices.

use super::subject::Subject;
use super::Member;
use crate::escape::md_escape;
use crate::format::MISSING;
use crate::tables::cost;

/// The table, or an empty string when no result of the group names a price.
pub(crate) fn table(subjects: &[Subject], members: &[Member]) -> String {
    let mut rows = String::new();
    for m in members {
        let s = &subjects[m.subject];
        let p = &s.statement().predicate;
        let Some(pricing) = &p.pricing else { continue };
        let peak = crate::campaign::peak(m.benchmarks.iter().map(|&i| &p.benchmarks[i]));
        let c = peak.and_then(|b| cost::of(p, b)).unwrap_or_default();
        let (gpu, kwh) = (pricing.gpu_hour.as_ref(), pricing.kwh.as_ref());
        rows.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            s.number,
            s.link(),
            md_escape(&cost::assumed(pricing, cost::gpus(p))),
            cost::money(c.gpu_output, gpu),
            cost::money(c.gpu_input, gpu),
            cost::money(c.energy_output, kwh),
            cost::at_capacity(p).map_or_else(|| MISSING.to_string(), |l| md_escape(&l)),
        ));
    }
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "\n### Cost per million tokens\n\nAt each result's peak, at the prices it assumed \
         (the output cost's 95 % interval in brackets).\n\n\
         | # | Result | Prices | Output, GPU time | Input, GPU time | Output, energy | At capacity |\n\
         | ---: | :--- | :--- | ---: | ---: | ---: | :--- |\n{rows}"
    )
}
