//! LoRA adapters a benchmark spreads its requests over (`--lora-adapters NAME[:WEIGHT],…`):
//! each request's `model` field names one adapter, as vLLM (`--lora-modules`) and SGLang
//! (`--lora-paths`) serve them. The names and weights are the spec's; which request gets
//! which adapter is the load generator's (`loadgen::lora`).

use anyhow::{bail, Result};

/// One adapter and its weight: its share of the requests is `weight / Σ weights`.
#[derive(Clone, Debug, PartialEq)]
pub struct AdapterWeight {
    pub name: String,
    pub weight: f64,
}

/// Reads `NAME[:WEIGHT]` entries: what follows the last `:` is the weight when it reads as a
/// number, else part of the name (SGLang names an adapter `BASE:ADAPTER`), and the weight is
/// then 1. Names are distinct and weights positive numbers.
pub fn parse(entries: &[String]) -> Result<Vec<AdapterWeight>> {
    let mut out: Vec<AdapterWeight> = Vec::with_capacity(entries.len());
    for entry in entries {
        let (name, weight) = match entry.rsplit_once(':') {
            Some((name, w)) if w.trim().parse::<f64>().is_ok() => {
                (name, w.trim().parse::<f64>().expect("checked above"))
            }
            _ => (entry.as_str(), 1.0),
        };
        let name = name.trim();
        if name.is_empty() {
            bail!("--lora-adapters {entry:?}: an adapter needs a name (NAME or NAME:WEIGHT)");
        }
        if !(weight.is_finite() && weight > 0.0) {
            bail!("--lora-adapters {entry:?}: the weight must be a positive number, got {weight}");
        }
        if out.iter().any(|a| a.name == name) {
            bail!("--lora-adapters names {name:?} twice");
        }
        out.push(AdapterWeight {
            name: name.to_string(),
            weight,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_number_after_the_last_colon_is_the_weight_else_part_of_the_name() {
        let mix = parse(&entries(&["sql", "chat:3", "org/base:v1:0.5", "base:sql"])).unwrap();
        let got: Vec<(&str, f64)> = mix.iter().map(|a| (a.name.as_str(), a.weight)).collect();
        assert_eq!(
            got,
            [
                ("sql", 1.0),
                ("chat", 3.0),
                ("org/base:v1", 0.5),
                ("base:sql", 1.0)
            ]
        );
    }

    #[test]
    fn a_bad_entry_is_named() {
        for (bad, says) in [
            (":2", "needs a name"),
            ("a:0", "positive"),
            ("a:-1", "positive"),
            ("a:inf", "positive"),
        ] {
            let e = parse(&entries(&[bad])).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains(says), "{bad}: {e}");
        }
        let e = parse(&entries(&["a", "a:2"])).unwrap_err().to_string();
        assert!(e.contains("\"a\" twice"), "{e}");
    }
}
