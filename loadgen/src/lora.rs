//! LoRA adapters (`--lora-adapters`): which request asks for which adapter. Sits between the
//! prompts ([`crate::workload`]) and the scheduler: each prompt of a benchmark gets an
//! adapter, whose name the request's `model` field carries and its record keeps.
//!
//! The order is a smooth weighted round-robin (nginx's: each adapter gains its weight every
//! request, the one furthest ahead is chosen and drops the total), so that every prefix of
//! the benchmark holds each adapter's share to within one request, and then shuffled within
//! blocks of [`BLOCK`] requests by the benchmark's seed, so that no adapter follows a fixed
//! rhythm an engine's adapter cache could lock onto. A benchmark cut short (by
//! `--max-seconds`, or a warm-up left out) keeps its shares to within a block.

use crate::rng::Rng;
use spec::lora::AdapterWeight;

/// Requests a shuffle keeps together.
pub const BLOCK: usize = 64;

/// Adapter indices (into `mix`) for `n` requests, by the benchmark's `seed`.
pub fn assign(mix: &[AdapterWeight], n: usize, seed: u64) -> Vec<usize> {
    if mix.is_empty() {
        return Vec::new();
    }
    let total: f64 = mix.iter().map(|a| a.weight).sum();
    let mut current = vec![0.0f64; mix.len()];
    let mut order = Vec::with_capacity(n);
    for _ in 0..n {
        for (c, a) in current.iter_mut().zip(mix) {
            *c += a.weight;
        }
        // The first of the largest, so that equal weights take turns in the spec's order.
        let pick = (0..mix.len())
            .reduce(|best, k| if current[k] > current[best] { k } else { best })
            .expect("mix is not empty");
        current[pick] -= total;
        order.push(pick);
    }
    let mut rng = Rng::new(seed ^ 0x4c6f_5241_5f6d_6978);
    for block in order.chunks_mut(BLOCK) {
        for i in (1..block.len()).rev() {
            block.swap(i, rng.below(i + 1));
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix(w: &[(&str, f64)]) -> Vec<AdapterWeight> {
        w.iter()
            .map(|&(name, weight)| AdapterWeight {
                name: name.into(),
                weight,
            })
            .collect()
    }

    #[test]
    fn every_prefix_holds_the_shares_to_within_a_block() {
        let m = mix(&[("a", 5.0), ("b", 3.0), ("c", 1.5), ("d", 0.5)]);
        let order = assign(&m, 2000, 7);
        let total: f64 = m.iter().map(|a| a.weight).sum();
        for end in (100..=2000).step_by(37) {
            for (k, a) in m.iter().enumerate() {
                let got = order[..end].iter().filter(|&&i| i == k).count() as f64;
                let want = end as f64 * a.weight / total;
                assert!((got - want).abs() <= BLOCK as f64 / 2.0 + 1.0, "{end} {k}");
            }
        }
        // Whole blocks hold them to within one request.
        for (k, a) in m.iter().enumerate() {
            let got = order[..1984].iter().filter(|&&i| i == k).count() as f64;
            assert!((got - 1984.0 * a.weight / total).abs() <= 1.0, "{k} {got}");
        }
    }

    #[test]
    fn the_seed_decides_the_order_and_nothing_else_does() {
        let m = mix(&[("a", 1.0), ("b", 1.0)]);
        assert_eq!(assign(&m, 500, 1), assign(&m, 500, 1));
        assert_ne!(assign(&m, 500, 1), assign(&m, 500, 2));
        // Not a strict alternation: the shuffle breaks the round-robin's rhythm.
        let order = assign(&m, 500, 1);
        assert!(order.windows(2).any(|w| w[0] == w[1]));
    }
}
