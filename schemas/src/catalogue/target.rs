//! `--until-precise METRIC:±X%`, as typed and as stored: a metric of the catalogue and the
//! fraction its interval must be within. Whether a summary meets it is
//! [`crate::precision`]'s.

use super::{find, Metric, CATALOGUE};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// One `METRIC:±X%`: the 95 % interval of a metric of the catalogue (one with an interval:
/// [`Metric::targetable`]) is at most `within` (a fraction) of the estimate on either side.
#[derive(Clone, Copy)]
pub struct Target {
    pub metric: &'static Metric,
    pub within: f64,
}

impl PartialEq for Target {
    fn eq(&self, other: &Target) -> bool {
        self.metric.key == other.metric.key && self.within == other.within
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Target({self})")
    }
}

impl fmt::Display for Target {
    /// `ttft:p99:±5%`: the metric's key and the precision.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = self.within * 100.0;
        write!(f, "{}:±{}%", self.metric.key, pct)
    }
}

impl FromStr for Target {
    type Err = String;

    /// `METRIC:±X%`, the metric as the catalogue names it (`ttft:p99`, `ttft:median`,
    /// `output_throughput` or `output_throughput:mean`), the `±` and `%` optional; errors say
    /// which part is wrong and what it may be.
    fn from_str(s: &str) -> Result<Target, String> {
        let example = "e.g. ttft:p99:±5%, output_throughput:±2%";
        let Some((name, within)) = s.rsplit_once(':') else {
            return Err(format!("{s:?} is not METRIC:±X% ({example})"));
        };
        let targetable = || {
            CATALOGUE
                .iter()
                .filter(|m| m.targetable())
                .map(|m| m.key)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let number = within.trim().trim_start_matches(['±', '+']);
        let number = number.strip_suffix('%').unwrap_or(number).trim();
        let Ok(pct) = number.parse::<f64>() else {
            if find(s).is_some() {
                return Err(format!(
                    "{s:?} names a metric but no precision: add :±X% ({example})"
                ));
            }
            return Err(format!(
                "{s:?}: precision {within:?} is not a percentage like ±5%"
            ));
        };
        let metric = find(name).ok_or_else(|| {
            format!(
                "unknown metric {name:?} in {s:?}; expected one of {}",
                targetable()
            )
        })?;
        if !metric.targetable() {
            return Err(format!(
                "{s:?}: {} carries no interval to narrow; expected one of {}",
                metric.key,
                targetable()
            ));
        }
        if !(pct > 0.0 && pct < 100.0) {
            return Err(format!(
                "{s:?}: precision must be above 0 % and below 100 %, got {pct} %"
            ));
        }
        Ok(Target {
            metric,
            within: pct / 100.0,
        })
    }
}

impl Serialize for Target {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Target, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}
