//! `--reference-acceptance`: the acceptance a speculative deployment is held to, as a number
//! (a mean acceptance length: tokens a verification step yields, the target's own one
//! included) or a TOML file of references keyed by model, drafter and data set:
//!
//! ```toml
//! [[reference]]
//! model = "meta-llama/Llama-3.1-8B-Instruct"
//! drafter = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"   # optional: any drafter
//! dataset = "real-text"                               # optional: any prompts
//! mean_acceptance_length = 2.9
//! ```
//!
//! The first entry whose keys all match the run is its reference; a file with none that
//! matches gives none. A bad file is refused naming it, the line and the field.

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::path::Path;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    reference: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    model: String,
    drafter: Option<String>,
    dataset: Option<String>,
    mean_acceptance_length: f64,
}

/// What the run is, for matching a reference file's keys.
pub struct Run<'a> {
    /// The model served.
    pub model: &'a str,
    /// The draft model, when the run knows it (`--speculative-model`).
    pub drafter: Option<&'a str>,
    /// The prompts: a dataset's path as given (`real-text`), or `synthetic`.
    pub dataset: &'a str,
}

/// The reference `arg` names for `run`, and where it came from; `None` when a file has no
/// entry for it.
pub fn resolve(arg: &str, run: &Run<'_>) -> Result<Option<(f64, String)>> {
    if let Ok(length) = arg.trim().parse::<f64>() {
        check(length, "--reference-acceptance")?;
        return Ok(Some((length, "--reference-acceptance".into())));
    }
    let text = std::fs::read_to_string(Path::new(arg)).with_context(|| {
        format!("--reference-acceptance {arg}: not a number, nor a file to read")
    })?;
    let file: File = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{arg}: {}", e.to_string().trim_end()))?;
    for (i, e) in file.reference.iter().enumerate() {
        check(
            e.mean_acceptance_length,
            &format!("{arg}: reference[{i}].mean_acceptance_length"),
        )?;
    }
    let found = file.reference.iter().position(|e| {
        e.model == run.model
            && e.drafter.as_deref().is_none_or(|d| Some(d) == run.drafter)
            && e.dataset.as_deref().is_none_or(|d| d == run.dataset)
    });
    Ok(found.map(|i| {
        let e = &file.reference[i];
        let mut key = format!("model {}", e.model);
        if let Some(d) = &e.drafter {
            key.push_str(&format!(", drafter {d}"));
        }
        if let Some(d) = &e.dataset {
            key.push_str(&format!(", data set {d}"));
        }
        (
            e.mean_acceptance_length,
            format!("{arg}: reference[{i}], {key}"),
        )
    }))
}

fn check(length: f64, what: &str) -> Result<()> {
    if !(1.0..=64.0).contains(&length) {
        bail!(
            "{what} is {length}: a mean acceptance length counts the target's own token, so it \
             is at least 1 (and no draft is 64 tokens long)"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<'a>(model: &'a str, drafter: Option<&'a str>, dataset: &'a str) -> Run<'a> {
        Run {
            model,
            drafter,
            dataset,
        }
    }

    #[test]
    fn a_number_or_the_first_matching_entry_of_a_file() {
        let any = run("m", None, "synthetic");
        assert_eq!(
            resolve("2.9", &any).unwrap(),
            Some((2.9, "--reference-acceptance".into()))
        );
        assert!(resolve("0.5", &any)
            .unwrap_err()
            .to_string()
            .contains("at least 1"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("refs.toml");
        std::fs::write(
            &path,
            "[[reference]]\nmodel = \"m\"\ndrafter = \"d\"\nmean_acceptance_length = 3.1\n\n\
             [[reference]]\nmodel = \"m\"\ndataset = \"real-text\"\nmean_acceptance_length = 2.4\n",
        )
        .unwrap();
        let file = path.to_str().unwrap();
        let (length, source) = resolve(file, &run("m", Some("d"), "x")).unwrap().unwrap();
        assert_eq!(length, 3.1);
        assert!(
            source.ends_with("reference[0], model m, drafter d"),
            "{source}"
        );
        let (length, _) = resolve(file, &run("m", None, "real-text"))
            .unwrap()
            .unwrap();
        assert_eq!(length, 2.4);
        assert_eq!(
            resolve(file, &run("other", None, "real-text")).unwrap(),
            None
        );
        // A misspelt field is named with its line.
        std::fs::write(&path, "[[reference]]\nmodel = \"m\"\nmean_length = 2\n").unwrap();
        let e = resolve(file, &any).unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("mean_length"), "{e}");
    }
}
