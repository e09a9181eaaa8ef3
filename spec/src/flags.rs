//! `runner run`'s spec flags, laid over a spec file.
//!
//! The flags are declared on the spec's own types — [`RunSpec`]'s fields, and
//! [`DatasetSpec`], [`TraceSpec`] and [`EngineSpec`] for the fields that take a table — so a
//! new spec field is one declaration that a file, a campaign plan and the command line all
//! read. This module gathers those declarations into one set of flags and applies what was
//! given: a flag on the command line replaces the file's value, a flag left out leaves it.

use super::{parse_data, parse_grid, DatasetSpec, EngineSpec, ProfileName, RunSpec, TraceSpec};
use anyhow::{bail, Result};
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, Command, FromArgMatches};
use std::path::Path;

/// The spec's flags as the command line gave them (`#[command(flatten)]` them into a command).
#[derive(Clone, Debug, Default)]
pub struct SpecFlags {
    matches: ArgMatches,
}

/// `--grid`, the one spec field whose flag takes two values.
#[derive(Args)]
struct GridFlag {
    /// Input × output grid, one benchmark per cell: `--grid input=128,512 output=128,512`.
    #[arg(long, num_args = 2, value_names = ["input=LIST", "output=LIST"])]
    grid: Option<Vec<String>>,
}

impl Args for SpecFlags {
    fn augment_args(cmd: Command) -> Command {
        // `_for_update`: no flag is required, and none has a default that would hide the file's.
        let cmd = RunSpec::augment_args_for_update(cmd);
        let cmd = DatasetSpec::augment_args_for_update(cmd);
        let cmd = GridFlag::augment_args_for_update(cmd);
        let cmd = TraceSpec::augment_args_for_update(cmd);
        let cmd = EngineSpec::augment_args_for_update(cmd);
        // The tables' headings ("Arrivals", "Engine") end with them: what follows is an option.
        cmd.next_help_heading(None::<&'static str>)
    }
    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for SpecFlags {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(SpecFlags {
            matches: matches.clone(),
        })
    }
    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.matches = matches.clone();
        Ok(())
    }
}

impl SpecFlags {
    /// The spec a run executes: the file's (or the defaults), with every flag given on top.
    pub fn resolve(&self, file: Option<&Path>) -> Result<RunSpec> {
        let mut spec = match file {
            Some(path) => RunSpec::from_toml_file(path)?,
            None => RunSpec::default(),
        };
        self.apply(&mut spec, file.is_some())?;
        Ok(spec)
    }

    fn given(&self, id: &str) -> bool {
        self.matches.value_source(id) == Some(ValueSource::CommandLine)
    }

    fn apply(&self, s: &mut RunSpec, from_file: bool) -> Result<()> {
        let mut m = self.matches.clone();
        s.update_from_arg_matches_mut(&mut m)?;
        if let Some(d) = m.get_one::<String>("data") {
            // A value of key=value pairs is a synthetic workload; anything else names a file.
            if d.contains('=') && !Path::new(d).exists() {
                s.data = parse_data(d)?;
                s.dataset = None;
            } else {
                s.dataset = Some(DatasetSpec {
                    path: d.clone(),
                    format: None,
                    output_tokens: None,
                });
            }
        }
        match &mut s.dataset {
            Some(d) => d.update_from_arg_matches_mut(&mut m)?,
            None if self.given("data_format") || self.given("data_output_tokens") => {
                bail!("--data-format and --data-output-tokens need --data FILE")
            }
            None => {}
        }
        if let Some(parts) = m.get_many::<String>("grid") {
            s.grid = Some(parse_grid(&parts.cloned().collect::<Vec<_>>())?);
        }
        if self.given("trace") {
            // A trace on the command line replaces the file's, as a --data file does.
            s.trace = Some(TraceSpec {
                path: String::new(),
                format: None,
                speedup: 1.0,
            });
        }
        match &mut s.trace {
            Some(t) => t.update_from_arg_matches_mut(&mut m)?,
            None if self.given("trace_format") || self.given("trace_speedup") => {
                bail!("--trace-format and --trace-speedup need --trace FILE")
            }
            None => {}
        }
        // A trace, a ramp or stages name their profile; an explicit --profile still wins.
        if !self.given("profile") && !from_file {
            if s.trace.is_some() {
                s.profile = ProfileName::Trace;
            } else if s.ramp.is_some() {
                s.profile = ProfileName::Ramp;
            } else if !s.stages.is_empty() {
                s.profile = ProfileName::Staged;
            }
        }
        if self.given("engine") {
            s.engine.get_or_insert_with(EngineSpec::default);
        }
        match &mut s.engine {
            Some(e) => {
                // --engine-arg adds to the file's arguments rather than replacing them.
                let file_args = std::mem::take(&mut e.args);
                e.update_from_arg_matches_mut(&mut m)?;
                e.args = file_args.into_iter().chain(e.args.drain(..)).collect();
            }
            None if EngineSpec::augment_args(Command::new("engine"))
                .get_arguments()
                .any(|a| self.given(a.get_id().as_str())) =>
            {
                bail!(
                    "the --engine-* flags need --engine RECIPE (or an [engine] table in the spec)"
                )
            }
            None => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
