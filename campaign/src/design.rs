//! An experiment's design: the plan's `[factors]` — settings, each with its levels — and its
//! `[design]` — which treatments (combinations of levels) run, how many times, in what order.
//!
//! ```toml
//! [factors]                              # each a setting and its levels
//! max_num_seqs = { flag = "--max-num-seqs", levels = [128, 256] }   # an engine flag
//! chunked = { flag = "--enable-chunked-prefill", levels = [true, false] }  # present or not
//! attn = { env = "VLLM_ATTENTION_BACKEND", levels = ["FLASH_ATTN", "FLASHINFER"] }
//! concurrency = { field = "concurrency", levels = [[16], [64]] }     # a run spec field
//!
//! [design]
//! repetitions = 2                        # every treatment this many times (default 1)
//! order = "random"                       # per repetition, seeded ("plan": as written)
//! seed = 7
//! # treatments = [{ max_num_seqs = 128, chunked = true }, …]   # a listed design; default:
//! #                                                             # the full factorial
//! ```
//!
//! Where it sits: `plan.rs` reads it beside the axes; each cell of the matrix is then one
//! combination of axis values, one treatment and one repetition, and carries its levels.
//! Randomising the order within each repetition (seeded, so the order is part of the plan
//! and recorded with every cell) keeps a drift in the machine from reading as an effect.

use anyhow::{anyhow, Result};
use serde::Deserialize;
use std::collections::BTreeMap;

/// A factor as the plan writes it.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FactorFile {
    flag: Option<String>,
    env: Option<String>,
    field: Option<String>,
    levels: Vec<toml::Value>,
}

/// `[design]` as the plan writes it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DesignFile {
    repetitions: Option<u32>,
    order: Option<String>,
    seed: Option<u64>,
    treatments: Option<Vec<toml::Table>>,
}

/// One factor: the setting it varies and its levels, in the plan's order.
#[derive(Clone, Debug, PartialEq)]
pub struct Factor {
    pub name: String,
    pub setting: Setting,
    pub levels: Vec<Level>,
}

/// What a factor sets in a cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Setting {
    /// An engine flag: `--flag value` added to the engine's arguments (`true`: the flag
    /// alone; `false`: left out).
    Flag(String),
    /// An environment variable of the engine.
    Env(String),
    /// A run spec field, by its dotted path (`data.prompt_tokens`).
    Field(Vec<String>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    /// How it is written in ids, tables and charts.
    pub label: String,
    pub value: toml::Value,
}

/// The order cells run in within a repetition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// As the plan expands them.
    Plan,
    /// Shuffled, per repetition, from the design's seed.
    Random,
}

impl Order {
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Plan => "plan",
            Order::Random => "random",
        }
    }
}

/// The design, read: the treatments (each factor's level index), repetitions and order.
#[derive(Clone, Debug, PartialEq)]
pub struct Design {
    pub factors: Vec<Factor>,
    pub treatments: Vec<Vec<usize>>,
    /// Whether the treatments are the full factorial (else a listed design).
    pub full_factorial: bool,
    pub repetitions: u32,
    pub order: Order,
    pub seed: u64,
}

/// The most treatments a design may hold.
pub const MAX_TREATMENTS: usize = 4096;

/// Reads `[factors]` and `[design]`; errors say `factors.NAME` or `design.FIELD` and what is
/// wrong (the caller adds the file and line).
pub(crate) fn read(
    factors: &[(String, FactorFile)],
    design: Option<&DesignFile>,
) -> std::result::Result<Design, (String, String)> {
    let mut read = Vec::with_capacity(factors.len());
    for (name, f) in factors {
        let at = |what: String| (format!("factors.{name}"), what);
        let setting = match (&f.flag, &f.env, &f.field) {
            (Some(flag), None, None) if flag.starts_with('-') && flag.len() > 1 => {
                Setting::Flag(flag.clone())
            }
            (Some(flag), None, None) => {
                return Err(at(format!("flag {flag:?} is not a flag (`--name`)")))
            }
            (None, Some(env), None) if !env.is_empty() && !env.contains('=') => {
                Setting::Env(env.clone())
            }
            (None, Some(env), None) => {
                return Err(at(format!("env {env:?} is not a variable's name")))
            }
            (None, None, Some(field)) if !field.is_empty() => {
                Setting::Field(field.split('.').map(str::to_string).collect())
            }
            _ => {
                return Err(at(
                    "a factor sets exactly one of `flag`, `env` or `field`".to_string()
                ))
            }
        };
        if f.levels.len() < 2 {
            return Err(at(format!(
                "{} level(s): a factor varies, so it has two or more",
                f.levels.len()
            )));
        }
        let mut levels: Vec<Level> = Vec::with_capacity(f.levels.len());
        for value in &f.levels {
            if matches!(setting, Setting::Env(_))
                && !matches!(
                    value,
                    toml::Value::String(_) | toml::Value::Integer(_) | toml::Value::Boolean(_)
                )
            {
                return Err(at(format!("level {value} is not a variable's value")));
            }
            if matches!(setting, Setting::Flag(_)) && matches!(value, toml::Value::Table(_)) {
                return Err(at(format!("level {value} is not a flag's value")));
            }
            let label = label(value);
            if levels.iter().any(|l| l.label == label) {
                return Err(at(format!("two levels are both {label:?}")));
            }
            levels.push(Level {
                label,
                value: value.clone(),
            });
        }
        read.push(Factor {
            name: name.clone(),
            setting,
            levels,
        });
    }
    let d = |what: &str, message: String| (format!("design.{what}"), message);
    let repetitions = design.and_then(|d| d.repetitions).unwrap_or(1);
    if repetitions == 0 {
        return Err(d(
            "repetitions",
            "0: every treatment runs at least once".into(),
        ));
    }
    let order = match design.and_then(|d| d.order.as_deref()) {
        None | Some("random") => Order::Random,
        Some("plan") => Order::Plan,
        Some(o) => return Err(d("order", format!("{o:?} is not `random` or `plan`"))),
    };
    let seed = design.and_then(|d| d.seed).unwrap_or(0);
    let (treatments, full_factorial) = match design.and_then(|d| d.treatments.as_ref()) {
        None => {
            let count = read
                .iter()
                .try_fold(1usize, |n, f| n.checked_mul(f.levels.len()))
                .filter(|&n| n <= MAX_TREATMENTS)
                .ok_or_else(|| {
                    d(
                        "treatments",
                        format!("the full factorial holds over {MAX_TREATMENTS} treatments: list the ones to run"),
                    )
                })?;
            let treatments = (0..count)
                .map(|mut i| {
                    // Mixed-radix digits, the last factor fastest.
                    let mut t = vec![0; read.len()];
                    for (k, f) in read.iter().enumerate().rev() {
                        t[k] = i % f.levels.len();
                        i /= f.levels.len();
                    }
                    t
                })
                .collect();
            (treatments, true)
        }
        Some(listed) => {
            if listed.is_empty() {
                return Err(d(
                    "treatments",
                    "empty: the design would have no treatment".into(),
                ));
            }
            let mut treatments = Vec::with_capacity(listed.len());
            for (i, row) in listed.iter().enumerate() {
                let at = |m: String| d(&format!("treatments[{i}]"), m);
                if let Some(k) = row.keys().find(|k| !read.iter().any(|f| &f.name == *k)) {
                    return Err(at(format!("{k} is not a factor")));
                }
                let mut t = Vec::with_capacity(read.len());
                for f in &read {
                    let v = row
                        .get(&f.name)
                        .ok_or_else(|| at(format!("gives no level of {}", f.name)))?;
                    let k = f.levels.iter().position(|l| &l.value == v).ok_or_else(|| {
                        at(format!("{v} is not a level of {} ({})", f.name, labels(f)))
                    })?;
                    t.push(k);
                }
                if treatments.contains(&t) {
                    return Err(at("lists a treatment twice".into()));
                }
                treatments.push(t);
            }
            (treatments, false)
        }
    };
    Ok(Design {
        factors: read,
        treatments,
        full_factorial,
        repetitions,
        order,
        seed,
    })
}

/// A level's label: text as it is, other values as TOML writes them.
fn label(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

fn labels(f: &Factor) -> String {
    f.levels
        .iter()
        .map(|l| l.label.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Design {
    /// The runs in the order they go: (combination of axis values, treatment, repetition
    /// from 1), each repetition every combination × treatment once, shuffled from the seed
    /// when the order is random.
    pub fn runs(&self, combinations: usize) -> Vec<(usize, usize, u32)> {
        let mut runs = Vec::new();
        for rep in 1..=self.repetitions {
            let mut block: Vec<(usize, usize)> = (0..combinations)
                .flat_map(|c| (0..self.treatments.len()).map(move |t| (c, t)))
                .collect();
            if self.order == Order::Random {
                shuffle(&mut block, self.seed, rep);
            }
            runs.extend(block.into_iter().map(|(c, t)| (c, t, rep)));
        }
        runs
    }

    /// Treatment `t`'s levels: factor name → level.
    pub fn levels(&self, t: usize) -> Vec<(&Factor, &Level)> {
        self.factors
            .iter()
            .zip(&self.treatments[t])
            .map(|(f, &k)| (f, &f.levels[k]))
            .collect()
    }
}

/// Fisher–Yates with SplitMix64 from `seed` and the repetition: the same plan gives the same
/// order on every machine.
fn shuffle<T>(items: &mut [T], seed: u64, rep: u32) {
    let mut state = seed ^ (u64::from(rep)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for i in (1..items.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

/// Sets `level` of a `field` factor in a cell's spec table (tables made as needed).
pub(crate) fn set_field(
    table: &mut toml::Table,
    path: &[String],
    level: &toml::Value,
) -> Result<()> {
    let (last, parents) = path.split_last().expect("a field has a name");
    let mut t = table;
    for p in parents {
        let entry = t
            .entry(p.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = entry
            .as_table_mut()
            .ok_or_else(|| anyhow!("`{p}` is not a table of the spec"))?;
    }
    t.insert(last.clone(), level.clone());
    Ok(())
}

/// A flag or env factor's level on the cell's engine arguments and environment.
pub(crate) fn set_engine(
    setting: &Setting,
    level: &toml::Value,
    args: &mut Vec<String>,
    env: &mut BTreeMap<String, String>,
) {
    match (setting, level) {
        (Setting::Flag(_), toml::Value::Boolean(false)) => {}
        (Setting::Flag(f), toml::Value::Boolean(true)) => args.push(f.clone()),
        (Setting::Flag(f), v) => {
            args.push(f.clone());
            match v {
                toml::Value::Array(items) => args.extend(items.iter().map(label)),
                v => args.push(label(v)),
            }
        }
        (Setting::Env(name), v) => {
            env.insert(name.clone(), label(v));
        }
        (Setting::Field(_), _) => {}
    }
}

/// Refuses a design that cannot run, naming the factor.
pub(crate) fn check_settings(
    design: &Design,
    has_engine: bool,
) -> std::result::Result<(), (String, String)> {
    for f in &design.factors {
        if matches!(f.setting, Setting::Flag(_) | Setting::Env(_)) && !has_engine {
            return Err((
                format!("factors.{}", f.name),
                "an engine setting, but no cell starts an engine (axes.engine or [fixed.engine])"
                    .into(),
            ));
        }
        if let Setting::Field(path) = &f.setting {
            if matches!(path[0].as_str(), "engine" | "model") {
                return Err((
                    format!("factors.{}", f.name),
                    format!(
                        "`{}` is the engine's or the model's: vary it with axes, flag or env",
                        path[0]
                    ),
                ));
            }
            for level in &f.levels {
                let mut t = toml::Table::new();
                set_field(&mut t, path, &level.value)
                    .map_err(|e| (format!("factors.{}", f.name), e.to_string()))?;
                if let Err(e) = toml::Value::Table(t).try_into::<spec::RunSpec>() {
                    return Err((
                        format!("factors.{}", f.name),
                        format!("level {}: {}", level.label, e.message().trim()),
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
