//! The plan: `plan.toml` read, checked and expanded to cells.
//!
//! ```toml
//! name = "seed-004"
//! results = "results"                # beside the plan unless absolute
//! key = "campaign.key"               # the signing key every cell uses (shared storage)
//! log = "campaign.attempts"          # the attempt log every cell is counted in (default:
//!                                    # beside the key; shared storage too)
//!
//! [axes]                             # expanded in this order, the last fastest
//! engine = ["vllm", "sglang", { recipe = "lmdeploy", args = ["--cache-max-entry-count", "0.9"] }]
//! model = ["meta-llama/Llama-3.1-70B-Instruct"]
//! gpus = [2, 4, 8]                   # tensor-parallel size, and the GPUs each cell asks for
//! workload = ["chat"]                # names of [workload.NAME] tables
//! profile = ["sweep"]                # names of [profile.NAME] tables
//!
//! [fixed]                            # any `runner run` spec field, for every cell
//! max_requests = 500
//!
//! [workload.chat]
//! data = { prompt_tokens = 512, output_tokens = 128 }
//!
//! [profile.sweep]
//! profile = "sweep"
//! ```
//!
//! A cell's spec is `[fixed]`, then its workload's table, then its profile's, merged key by
//! key (tables recursively), with the engine, model and GPU count of its axes on top. Its id
//! is made of its axis values' labels (`vllm_llama-3.1-70b-instruct_2gpu_chat_sweep`), so it
//! stays the same when other values are added to an axis; its index is its position in the
//! expansion, which is what a Slurm array task or an Indexed Job's completion picks.

use crate::design::{Design, DesignFile, FactorFile};
use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use spec::{EngineSpec, RunSpec};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The axes a plan may name, in expansion order.
pub const AXES: [&str; 5] = ["engine", "model", "gpus", "workload", "profile"];

/// One cell: one `runner run`, one result.
#[derive(Clone, Debug)]
pub struct Cell {
    /// Position in the expansion (0-based).
    pub index: usize,
    /// Stable id: the labels of its axis values joined by `_`.
    pub id: String,
    /// The label of each axis the plan names, by axis.
    pub axes: BTreeMap<&'static str, String>,
    /// GPUs the cell asks the scheduler for (its tensor-parallel size), when the plan says.
    pub gpus: Option<u32>,
    /// An experiment's cell: each factor's level (factor → label), and its repetition (from 1).
    pub factors: BTreeMap<String, String>,
    pub repetition: Option<u32>,
    pub spec: RunSpec,
}

/// A plan, read and expanded.
#[derive(Clone, Debug)]
pub struct Plan {
    pub path: PathBuf,
    pub name: String,
    /// The plan's bytes: the campaign document cites them by digest.
    pub text: String,
    pub sha256: String,
    pub results: PathBuf,
    pub key: Option<PathBuf>,
    /// The attempt log its cells are counted in (`log = …`); default: beside the key.
    pub log: Option<PathBuf>,
    /// Each named axis with its values' labels, in the plan's order.
    pub axes: Vec<(&'static str, Vec<String>)>,
    pub cells: Vec<Cell>,
    pub slurm: Option<toml::Table>,
    pub kubernetes: Option<toml::Table>,
    /// An experiment's factors and design (`[factors]`, `[design]`).
    pub design: Option<Design>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    name: String,
    results: Option<String>,
    key: Option<String>,
    log: Option<String>,
    axes: Spanned<BTreeMap<String, Spanned<Vec<Spanned<toml::Value>>>>>,
    #[serde(default)]
    fixed: Option<Spanned<toml::Table>>,
    #[serde(default)]
    workload: BTreeMap<String, Spanned<toml::Table>>,
    #[serde(default)]
    profile: BTreeMap<String, Spanned<toml::Table>>,
    slurm: Option<toml::Table>,
    kubernetes: Option<toml::Table>,
    factors: Option<BTreeMap<String, Spanned<FactorFile>>>,
    design: Option<Spanned<DesignFile>>,
}

/// An engine axis value: a recipe name or file, or a table of the run spec's `[engine]`
/// fields (less `gpus` and `model_path`, which other axes give) and a label.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EngineValue {
    recipe: String,
    label: Option<String>,
    port: Option<u16>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    container: Option<String>,
    image: Option<String>,
    /// Speculative decoding: `speculative_method`, `speculative_model`,
    /// `num_speculative_tokens`, as `runner run`'s flags.
    speculative_method: Option<String>,
    speculative_model: Option<String>,
    num_speculative_tokens: Option<u32>,
    /// LoRA adapters to load (`NAME=PATH` each) and how many a batch holds, as `runner
    /// run`'s `--lora-module` and `--max-loras`.
    #[serde(default)]
    lora_modules: Vec<String>,
    max_loras: Option<u32>,
}

/// A model axis value: the served name, or a table with the file the engine loads.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelValue {
    name: String,
    path: Option<String>,
    label: Option<String>,
}

/// Where in the plan's text something is: errors name the file and the line.
struct Source<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    fn line(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }

    fn at(&self, span: std::ops::Range<usize>, what: impl std::fmt::Display) -> anyhow::Error {
        anyhow!(
            "{}, line {}: {what}",
            self.path.display(),
            self.line(span.start)
        )
    }

    /// The line of `key = …` in the table starting at `span` (up to the next `[header]`),
    /// else the table's first line.
    fn key_line(&self, span: std::ops::Range<usize>, key: &str) -> usize {
        let start = span.start.min(self.text.len());
        let mut offset = start;
        for (i, line) in self.text[start..].split_inclusive('\n').enumerate() {
            let t = line.trim_start();
            if i > 0 && t.starts_with('[') {
                break;
            }
            if t.starts_with(key) && t[key.len()..].trim_start().starts_with(['=', '.']) {
                return self.line(offset);
            }
            offset += line.len();
        }
        self.line(start)
    }
}

impl Plan {
    /// Reads `path`; every error names the file, the line and the field.
    pub fn load(path: &Path) -> Result<Plan> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading campaign plan {}", path.display()))?;
        Plan::parse(path, text)
    }

    pub fn parse(path: &Path, text: String) -> Result<Plan> {
        let src = Source { path, text: &text };
        let file: PlanFile = toml::from_str(&text).map_err(|e| match e.span() {
            Some(span) => src.at(span, e.message().trim()),
            None => anyhow!("{}: {}", path.display(), e.message().trim()),
        })?;
        if file.name.trim().is_empty() {
            bail!(
                "{}, line {}: name is empty",
                path.display(),
                src.key_line(0..text.len(), "name")
            );
        }
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        // Absolute: a cell runs from wherever its scheduler starts it.
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        let dir = dir.as_path();
        let beside = |p: &str| -> PathBuf {
            let p = Path::new(p);
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                dir.join(p)
            }
        };

        check_axis_names(&file, &src)?;
        let axes = parse_axes(&file, &src, &beside)?;
        check_fragments(&file, &axes, &src)?;
        let design = read_design(&file, &axes, &src)?;
        let fixed = file.fixed.as_ref();
        let cells = expand(
            &axes,
            design.as_ref(),
            fixed.map(|f| f.get_ref()),
            &beside,
            path,
        )?;

        use sha2::Digest;
        Ok(Plan {
            path: path.to_path_buf(),
            name: file.name,
            sha256: hex::encode(sha2::Sha256::digest(text.as_bytes())),
            results: beside(file.results.as_deref().unwrap_or("results")),
            key: file.key.as_deref().map(beside),
            log: file.log.as_deref().map(beside),
            axes: axes
                .iter()
                .map(|(a, v)| (*a, v.iter().map(AxisValue::label).collect()))
                .collect(),
            cells,
            slurm: file.slurm,
            kubernetes: file.kubernetes,
            design,
            text,
        })
    }

    /// The cell at `index`, or an error that says how many there are.
    pub fn cell(&self, index: usize) -> Result<&Cell> {
        self.cells.get(index).ok_or_else(|| {
            anyhow!(
                "{}: cell index {index} is out of range: the plan has {} cells (0 to {})",
                self.path.display(),
                self.cells.len(),
                self.cells.len().saturating_sub(1)
            )
        })
    }

    /// Where a cell's result goes.
    pub fn result_path(&self, cell: &Cell) -> PathBuf {
        self.results.join(format!("{}.json", cell.id))
    }
}

enum AxisValue {
    Engine {
        label: String,
        spec: EngineSpec,
    },
    Model {
        label: String,
        name: String,
        path: Option<String>,
    },
    Gpus(u32),
    Fragment {
        label: String,
        table: toml::Table,
        section: String,
    },
}

impl AxisValue {
    fn label(&self) -> String {
        match self {
            AxisValue::Engine { label, .. }
            | AxisValue::Model { label, .. }
            | AxisValue::Fragment { label, .. } => label.clone(),
            AxisValue::Gpus(n) => format!("{n}gpu"),
        }
    }
}

/// Every axis the plan names is one there is, and has a value.
fn check_axis_names(file: &PlanFile, src: &Source) -> Result<()> {
    for (axis, values) in file.axes.get_ref() {
        if !AXES.contains(&axis.as_str()) {
            return Err(src.at(
                values.span(),
                format!(
                    "axes.{axis} is not an axis (the axes are {})",
                    AXES.join(", ")
                ),
            ));
        }
        if values.get_ref().is_empty() {
            return Err(src.at(
                values.span(),
                format!("axes.{axis} is empty: the matrix would have no cell"),
            ));
        }
    }
    if file.axes.get_ref().is_empty() {
        return Err(src.at(
            file.axes.span(),
            "[axes] names no axis: the matrix would have no cell",
        ));
    }
    Ok(())
}

/// Each axis value as (label, what it does to a cell's spec), axes in [`AXES`] order; labels
/// unique within an axis.
fn parse_axes(
    file: &PlanFile,
    src: &Source,
    beside: &dyn Fn(&str) -> PathBuf,
) -> Result<Vec<(&'static str, Vec<AxisValue>)>> {
    let mut axes: Vec<(&'static str, Vec<AxisValue>)> = Vec::new();
    for axis in AXES {
        let Some(values) = file.axes.get_ref().get(axis) else {
            continue;
        };
        let mut parsed = Vec::new();
        for value in values.get_ref() {
            let at = |what: String| src.at(value.span(), format!("axes.{axis}: {what}"));
            let v = match axis {
                "engine" => engine_value(value.get_ref(), beside).map_err(at)?,
                "model" => model_value(value.get_ref(), beside).map_err(at)?,
                "gpus" => match value.get_ref().as_integer() {
                    Some(n) if (1..=1024).contains(&n) => AxisValue::Gpus(n as u32),
                    _ => {
                        return Err(at(format!(
                            "{} is not a GPU count (1 to 1024)",
                            value.get_ref()
                        )))
                    }
                },
                "workload" | "profile" => {
                    let tables = if axis == "workload" {
                        &file.workload
                    } else {
                        &file.profile
                    };
                    let name = value.get_ref().as_str().ok_or_else(|| {
                        at(format!(
                            "{} is not the name of a [{axis}.NAME] table",
                            value.get_ref()
                        ))
                    })?;
                    let table = tables.get(name).ok_or_else(|| {
                        at(format!(
                            "no [{axis}.{name}] table (the plan has {})",
                            if tables.is_empty() {
                                "none".to_string()
                            } else {
                                tables.keys().cloned().collect::<Vec<_>>().join(", ")
                            }
                        ))
                    })?;
                    AxisValue::Fragment {
                        label: slug(name),
                        table: table.get_ref().clone(),
                        section: format!("{axis}.{name}"),
                    }
                }
                _ => unreachable!("AXES lists the axes"),
            };
            parsed.push(v);
        }
        let labels: Vec<String> = parsed.iter().map(AxisValue::label).collect();
        for (i, l) in labels.iter().enumerate() {
            if labels[..i].contains(l) {
                return Err(src.at(
                    values.get_ref()[i].span(),
                    format!("axes.{axis}: two values are both labelled {l:?}; give one a `label`"),
                ));
            }
        }
        axes.push((axis, parsed));
    }
    Ok(axes)
}

/// `[fixed]` and every `[workload.NAME]` and `[profile.NAME]` table is a spec fragment by
/// itself (an unknown field is named where it is), and none sets what an axis gives.
fn check_fragments(
    file: &PlanFile,
    axes: &[(&'static str, Vec<AxisValue>)],
    src: &Source,
) -> Result<()> {
    let path = src.path;
    let mut fragments: Vec<(String, &toml::Table, std::ops::Range<usize>)> = Vec::new();
    if let Some(f) = file.fixed.as_ref() {
        fragments.push(("fixed".into(), f.get_ref(), f.span()));
    }
    for (kind, tables) in [("workload", &file.workload), ("profile", &file.profile)] {
        for (name, t) in tables {
            fragments.push((format!("{kind}.{name}"), t.get_ref(), t.span()));
        }
    }
    for (section, table, span) in &fragments {
        if let Err(e) = toml::Value::Table((*table).clone()).try_into::<RunSpec>() {
            let message = e.message().trim().to_string();
            let key = message
                .split('`')
                .nth(1)
                .filter(|_| message.starts_with("unknown field"))
                .unwrap_or("");
            let line = if key.is_empty() {
                src.line(span.start)
            } else {
                src.key_line(span.clone(), key)
            };
            bail!("{}, line {line}: [{section}]: {message}", path.display());
        }
        for owned in ["engine", "model"] {
            if table.contains_key(owned) && axes.iter().any(|(a, _)| *a == owned) {
                bail!(
                    "{}, line {}: [{section}] sets `{owned}`, which axes.{owned} gives each cell",
                    path.display(),
                    src.key_line(span.clone(), owned)
                );
            }
        }
    }
    Ok(())
}

/// `[factors]` and `[design]`, read and checked (factors in the plan's order); `None` when
/// the plan names no factor.
fn read_design(
    file: &PlanFile,
    axes: &[(&'static str, Vec<AxisValue>)],
    src: &Source,
) -> Result<Option<Design>> {
    let Some(factors) = &file.factors else {
        if let Some(d) = &file.design {
            return Err(src.at(d.span(), "[design] without [factors]: nothing varies"));
        }
        return Ok(None);
    };
    let mut named: Vec<(&String, &Spanned<FactorFile>)> = factors.iter().collect();
    named.sort_by_key(|(_, f)| f.span().start);
    let span_of = |at: &str| -> std::ops::Range<usize> {
        match at.strip_prefix("factors.") {
            Some(name) => named
                .iter()
                .find(|(n, _)| n.as_str() == name.split('.').next().unwrap_or(name))
                .map(|(_, f)| f.span()),
            None => file.design.as_ref().map(|d| d.span()),
        }
        .unwrap_or(0..0)
    };
    if named.is_empty() {
        return Err(src.at(0..0, "[factors] names no factor"));
    }
    for (name, f) in &named {
        if AXES.contains(&name.as_str()) {
            return Err(src.at(f.span(), format!("factors.{name}: `{name}` is an axis")));
        }
    }
    let owned: Vec<(String, FactorFile)> = named
        .iter()
        .map(|(n, f)| ((*n).clone(), f.get_ref().clone()))
        .collect();
    let design = crate::design::read(&owned, file.design.as_ref().map(|d| d.get_ref()))
        .map_err(|(at, what)| src.at(span_of(&at), format!("{at}: {what}")))?;
    let has_engine = axes.iter().any(|(a, _)| *a == "engine")
        || file
            .fixed
            .as_ref()
            .is_some_and(|f| f.get_ref().contains_key("engine"));
    crate::design::check_settings(&design, has_engine)
        .map_err(|(at, what)| src.at(span_of(&at), format!("{at}: {what}")))?;
    Ok(Some(design))
}

/// The matrix: one cell per combination of axis values, the last axis fastest; with a
/// design, one per combination, treatment and repetition, in the design's order.
fn expand(
    axes: &[(&'static str, Vec<AxisValue>)],
    design: Option<&Design>,
    fixed: Option<&toml::Table>,
    beside: &dyn Fn(&str) -> PathBuf,
    path: &Path,
) -> Result<Vec<Cell>> {
    let mut counts: Vec<usize> = axes.iter().map(|_| 0).collect();
    let total: usize = axes.iter().map(|(_, v)| v.len()).product();
    let mut combinations = Vec::with_capacity(total);
    for index in 0..total {
        // Mixed-radix digits of the index, the last axis fastest.
        let mut rest = index;
        for (digit, (_, values)) in counts.iter_mut().zip(axes).rev() {
            *digit = rest % values.len();
            rest /= values.len();
        }
        let chosen: Vec<(&'static str, &AxisValue)> = axes
            .iter()
            .zip(&counts)
            .map(|((a, v), &d)| (*a, &v[d]))
            .collect();
        combinations.push(chosen);
    }
    let Some(design) = design else {
        return combinations
            .iter()
            .enumerate()
            .map(|(index, chosen)| cell(index, chosen, None, fixed, beside, path))
            .collect();
    };
    design
        .runs(combinations.len())
        .into_iter()
        .enumerate()
        .map(|(index, (c, t, rep))| {
            cell(
                index,
                &combinations[c],
                Some((design, t, rep)),
                fixed,
                beside,
                path,
            )
        })
        .collect()
}

fn engine_value(
    value: &toml::Value,
    beside: &dyn Fn(&str) -> PathBuf,
) -> Result<AxisValue, String> {
    let v: EngineValue = match value {
        toml::Value::String(recipe) => EngineValue {
            recipe: recipe.clone(),
            label: None,
            port: None,
            args: vec![],
            env: BTreeMap::new(),
            container: None,
            image: None,
            speculative_method: None,
            speculative_model: None,
            num_speculative_tokens: None,
            lora_modules: vec![],
            max_loras: None,
        },
        other => other
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| e.message().trim().to_string())?,
    };
    // A recipe file beside the plan, else a shipped recipe's name.
    let file = beside(&v.recipe);
    let recipe = if file.is_file() {
        file.display().to_string()
    } else {
        v.recipe.clone()
    };
    let loaded = engine::recipe::load(&recipe).map_err(|e| format!("{e:#}"))?;
    let label = v
        .label
        .clone()
        .unwrap_or_else(|| loaded.recipe.name.clone());
    Ok(AxisValue::Engine {
        label: slug(&label),
        spec: EngineSpec {
            recipe,
            port: v.port,
            gpus: None,
            model_path: None,
            args: v.args,
            env: v.env,
            container: v.container,
            image: v.image,
            speculative_method: v.speculative_method,
            speculative_model: v.speculative_model,
            num_speculative_tokens: v.num_speculative_tokens,
            lora_modules: v.lora_modules,
            max_loras: v.max_loras,
        },
    })
}

fn model_value(value: &toml::Value, beside: &dyn Fn(&str) -> PathBuf) -> Result<AxisValue, String> {
    let v: ModelValue = match value {
        toml::Value::String(name) => ModelValue {
            name: name.clone(),
            path: None,
            label: None,
        },
        other => other
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| e.message().trim().to_string())?,
    };
    let label = v
        .label
        .clone()
        .unwrap_or_else(|| v.name.rsplit('/').next().unwrap_or(&v.name).to_string());
    Ok(AxisValue::Model {
        label: slug(&label),
        name: v.name,
        path: v.path.map(|p| beside(&p).display().to_string()),
    })
}

/// Lower-case letters, digits, `.` and `-`: safe in file names, URLs and Slurm job names.
pub fn slug(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            'a'..='z' | '0'..='9' | '.' | '-' => out.push(c),
            'A'..='Z' => out.push(c.to_ascii_lowercase()),
            _ if !out.ends_with('-') => out.push('-'),
            _ => {}
        }
    }
    let trimmed = out.trim_matches(['-', '.']).to_string();
    if trimmed.is_empty() {
        "x".into()
    } else {
        trimmed
    }
}

/// `over` merged onto `base`: tables key by key, recursively; anything else replaced.
fn merge(base: &mut toml::Table, over: &toml::Table) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

fn cell(
    index: usize,
    chosen: &[(&'static str, &AxisValue)],
    treatment: Option<(&Design, usize, u32)>,
    fixed: Option<&toml::Table>,
    beside: &dyn Fn(&str) -> PathBuf,
    path: &Path,
) -> Result<Cell> {
    let mut table = fixed.cloned().unwrap_or_default();
    for (_, v) in chosen {
        if let AxisValue::Fragment { table: t, .. } = v {
            merge(&mut table, t);
        }
    }
    let levels = treatment.map_or(Vec::new(), |(d, t, _)| d.levels(t));
    for (f, level) in &levels {
        if let crate::design::Setting::Field(p) = &f.setting {
            crate::design::set_field(&mut table, p, &level.value)
                .map_err(|e| anyhow!("{}: factors.{}: {e}", path.display(), f.name))?;
        }
    }
    let sections: Vec<&str> = chosen
        .iter()
        .filter_map(|(_, v)| match v {
            AxisValue::Fragment { section, .. } => Some(section.as_str()),
            _ => None,
        })
        .collect();
    let mut spec: RunSpec =
        toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| {
                anyhow!(
                    "{}: [fixed] with [{}]: {}",
                    path.display(),
                    sections.join("], ["),
                    e.message().trim()
                )
            })?;
    let mut gpus = None;
    for (_, v) in chosen {
        match v {
            AxisValue::Engine { spec: e, .. } => spec.engine = Some(e.clone()),
            AxisValue::Model { name, .. } => spec.model = Some(name.clone()),
            AxisValue::Gpus(n) => gpus = Some(*n),
            AxisValue::Fragment { .. } => {}
        }
    }
    for (_, v) in chosen {
        if let AxisValue::Model { path: Some(p), .. } = v {
            let e = spec.engine.as_mut().ok_or_else(|| {
                anyhow!(
                    "{}: a model with a `path` needs axes.engine to load it",
                    path.display()
                )
            })?;
            e.model_path = Some(p.clone());
        }
    }
    if let Some(n) = gpus {
        match spec.engine.as_mut() {
            Some(e) => e.gpus = Some(n),
            None => bail!(
                "{}: axes.gpus needs axes.engine (or an [fixed.engine] table): GPUs are the engine's",
                path.display()
            ),
        }
    }
    // Files a spec names are found beside the plan.
    if let Some(d) = &mut spec.dataset {
        d.path = beside(&d.path).display().to_string();
    }
    if let Some(t) = &mut spec.trace {
        t.path = beside(&t.path).display().to_string();
    }
    if let Some(t) = &mut spec.tokenizer {
        *t = beside(t).display().to_string();
    }
    for (f, level) in &levels {
        if let Some(e) = spec.engine.as_mut() {
            crate::design::set_engine(&f.setting, &level.value, &mut e.args, &mut e.env);
        }
    }
    let mut id = chosen
        .iter()
        .map(|(_, v)| v.label())
        .chain(
            levels
                .iter()
                .map(|(f, l)| format!("{}-{}", slug(&f.name), slug(&l.label))),
        )
        .collect::<Vec<_>>()
        .join("_");
    let repetition = treatment.map(|(_, _, rep)| rep);
    if let Some(rep) = repetition.filter(|_| treatment.is_some_and(|(d, _, _)| d.repetitions > 1)) {
        id.push_str(&format!("_r{rep}"));
    }
    spec.validate()
        .map_err(|e| anyhow!("{}: cell {index} ({id}): {e:#}", path.display()))?;
    Ok(Cell {
        index,
        id,
        axes: chosen.iter().map(|(a, v)| (*a, v.label())).collect(),
        gpus: gpus.or(spec.engine.as_ref().and_then(|e| e.gpus)),
        factors: levels
            .iter()
            .map(|(f, l)| (f.name.clone(), l.label.clone()))
            .collect(),
        repetition,
        spec,
    })
}

/// The axes and settings of a plan of 2 engines × 2 GPU counts, for the executors' tests:
/// a `name` line goes before it and an executor's table after.
#[cfg(test)]
pub(crate) const TWO_BY_TWO: &str = r#"[axes]
engine = ["vllm", "sglang"]
gpus = [2, 8]
[fixed]
profile = "poisson"
rate = [1.0]
max_requests = 10
"#;

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = r#"name = "seed-004"
key = "c.key"

[axes]
engine = ["vllm", "sglang", { recipe = "lmdeploy", label = "lmd" }]
gpus = [2, 4, 8]
workload = ["chat"]

[fixed]
max_requests = 50

[workload.chat]
data = { prompt_tokens = 512, output_tokens = 128 }
profile = "poisson"
rate = [2.0]
"#;

    fn parse(text: &str) -> Result<Plan> {
        Plan::parse(Path::new("/tmp/plan.toml"), text.to_string())
    }

    #[test]
    fn expands_axes_in_order_with_stable_ids() {
        let p = parse(PLAN).unwrap();
        assert_eq!(p.cells.len(), 9);
        assert_eq!(p.cells[0].id, "vllm_2gpu_chat");
        assert_eq!(p.cells[1].id, "vllm_4gpu_chat");
        assert_eq!(p.cells[8].id, "lmd_8gpu_chat");
        let c = &p.cells[4];
        assert_eq!(c.id, "sglang_4gpu_chat");
        assert_eq!(c.gpus, Some(4));
        assert_eq!(c.spec.engine.as_ref().unwrap().gpus, Some(4));
        assert_eq!(c.spec.max_requests, Some(50));
        assert_eq!(c.spec.data.prompt_tokens, 512);
        assert_eq!(p.key.as_deref(), Some(Path::new("/tmp/c.key")));
        // Another GPU count leaves every existing id as it was.
        let more = parse(&PLAN.replace("[2, 4, 8]", "[1, 2, 4, 8]")).unwrap();
        let ids: Vec<_> = more.cells.iter().map(|c| c.id.clone()).collect();
        assert!(p.cells.iter().all(|c| ids.contains(&c.id)));
    }

    #[test]
    fn bad_plans_name_line_and_field() {
        let e = |t: &str| parse(t).unwrap_err().to_string();
        let unknown = e(&PLAN.replace("gpus = [2, 4, 8]", "gpus = [2, 4, 8]\nnodes = [1]"));
        assert!(
            unknown.contains("line 7") && unknown.contains("axes.nodes is not an axis"),
            "{unknown}"
        );
        let empty = e(&PLAN.replace("[2, 4, 8]", "[]"));
        assert!(
            empty.contains("line 6") && empty.contains("axes.gpus is empty"),
            "{empty}"
        );
        let recipe = e(&PLAN.replace("\"sglang\"", "\"sglang-nightly\""));
        assert!(
            recipe.contains("line 5") && recipe.contains("sglang-nightly"),
            "{recipe}"
        );
        let field = e(&PLAN.replace("rate = [2.0]", "rates = [2.0]"));
        assert!(
            field.contains("line 15")
                && field.contains("[workload.chat]")
                && field.contains("rates"),
            "{field}"
        );
        let table = e(&PLAN.replace("workload = [\"chat\"]", "workload = [\"chat\", \"code\"]"));
        assert!(
            table.contains("line 7") && table.contains("no [workload.code] table"),
            "{table}"
        );
        let top = e(&PLAN.replace("key = \"c.key\"", "key = \"c.key\"\nresult = \"r\""));
        assert!(top.contains("line 3") && top.contains("result"), "{top}");
        // A price is an amount and its currency: a bare number is refused before any cell
        // runs, naming the setting and the cell.
        let price = e(&PLAN.replace(
            "max_requests = 50",
            "max_requests = 50\ngpu_hour_price = \"2.5\"",
        ));
        assert!(
            price.contains("cell 0")
                && price.contains("gpu_hour_price")
                && price.contains("needs its currency"),
            "{price}"
        );
        let priced = parse(&PLAN.replace(
            "max_requests = 50",
            "max_requests = 50\ngpu_hour_price = \"2.5 USD\"\nkwh_price = \"$0.12\"",
        ))
        .unwrap();
        assert_eq!(
            priced.cells[3].spec.gpu_hour_price.as_deref(),
            Some("2.5 USD")
        );
        assert_eq!(priced.cells[3].spec.kwh_price.as_deref(), Some("$0.12"));
        let p = parse(PLAN).unwrap();
        assert!(p
            .cell(9)
            .unwrap_err()
            .to_string()
            .contains("out of range: the plan has 9 cells"));
    }
}
