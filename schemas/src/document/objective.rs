//! One objective of a service-level objective, `ttft:p99<=500ms` or `error_rate<=1%`: how it
//! is spelled on the command line and in a document, and what it asks of a sample — that the
//! share of values above its bound be at most a given fraction.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// What an objective bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    Ttft,
    TtftFromSend,
    Itl,
    Tpot,
    E2e,
    /// The share of requests that failed.
    ErrorRate,
}

const MEASURES: [(&str, Measure); 6] = [
    ("ttft", Measure::Ttft),
    ("ttft_from_send", Measure::TtftFromSend),
    ("itl", Measure::Itl),
    ("tpot", Measure::Tpot),
    ("e2e", Measure::E2e),
    ("error_rate", Measure::ErrorRate),
];

impl Measure {
    pub fn name(self) -> &'static str {
        MEASURES.iter().find(|(_, m)| *m == self).expect("listed").0
    }
}

/// `METRIC:pNN<=BOUND` (a latency percentile at most BOUND ms) or `error_rate<=X%`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Objective {
    pub measure: Measure,
    /// The percentile in percent (99, 99.9); `None` for the error rate.
    pub percentile: Option<f64>,
    /// Milliseconds for a latency; percent for the error rate.
    pub bound: f64,
}

impl Objective {
    /// The share of values (requests, or token gaps for ITL) that may lie above the bound:
    /// 1 − p for a percentile, the rate itself for errors.
    pub fn allowed_share(&self) -> f64 {
        match self.percentile {
            Some(pct) => 1.0 - pct / 100.0,
            None => self.bound / 100.0,
        }
    }

    /// The unit of [`Objective::bound`] as written after it.
    pub fn unit(&self) -> &'static str {
        match self.measure {
            Measure::ErrorRate => "%",
            _ => "ms",
        }
    }

    /// The statistic's name: `p99`, or `rate` for errors.
    pub fn statistic(&self) -> String {
        match self.percentile {
            Some(pct) => format!("p{pct}"),
            None => "rate".into(),
        }
    }
}

impl fmt::Display for Objective {
    /// `ttft:p99<=500ms`, `error_rate<=1%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.percentile {
            Some(pct) => write!(f, "{}:p{pct}<={}ms", self.measure.name(), self.bound),
            None => write!(f, "{}<={}%", self.measure.name(), self.bound),
        }
    }
}

/// A whole `--slo` value: objectives separated by commas.
pub fn parse_list(s: &str) -> Result<Vec<Objective>, String> {
    let list: Vec<Objective> = s
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    if list.is_empty() {
        return Err(format!(
            "{s:?} names no objective (e.g. ttft:p99<=500ms,tpot:p99<=50ms)"
        ));
    }
    Ok(list)
}

const EXAMPLE: &str = "e.g. ttft:p99<=500ms, tpot:p90<=50ms, error_rate<=1%";

impl FromStr for Objective {
    type Err = String;

    /// Errors say which part is wrong and what it may be.
    fn from_str(s: &str) -> Result<Objective, String> {
        let Some((left, bound)) = s.split_once("<=") else {
            return Err(format!("{s:?} is not METRIC:STAT<=BOUND ({EXAMPLE})"));
        };
        let (metric, stat) = match left.split_once(':') {
            Some((m, st)) => (m.trim(), Some(st.trim())),
            None => (left.trim(), None),
        };
        let measure = MEASURES
            .iter()
            .find(|(n, _)| *n == metric)
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                let known: Vec<&str> = MEASURES.iter().map(|(n, _)| *n).collect();
                format!(
                    "unknown metric {metric:?} in {s:?}; expected one of {}",
                    known.join(", ")
                )
            })?;
        let bound = bound.trim();
        if measure == Measure::ErrorRate {
            if stat.is_some() {
                return Err(format!(
                    "{s:?}: error_rate takes no statistic (error_rate<=1%)"
                ));
            }
            let number = bound.strip_suffix('%').unwrap_or(bound).trim();
            let pct: f64 = number
                .parse()
                .map_err(|_| format!("{s:?}: {bound:?} is not a percentage like 1%"))?;
            if !(pct > 0.0 && pct < 100.0) {
                return Err(format!(
                    "{s:?}: an error rate bound must be above 0 % and below 100 %, got {pct} %"
                ));
            }
            return Ok(Objective {
                measure,
                percentile: None,
                bound: pct,
            });
        }
        let stat = stat.ok_or_else(|| format!("{s:?} names no statistic ({EXAMPLE})"))?;
        let pct = match stat {
            "median" => 50.0,
            _ => stat
                .strip_prefix('p')
                .and_then(|n| n.parse::<f64>().ok())
                .filter(|p| *p > 0.0 && *p < 100.0)
                .ok_or_else(|| {
                    format!(
                        "unknown statistic {stat:?} in {s:?}; expected a percentile p50, p90, \
                         p95, p99, p99.9 (or median)"
                    )
                })?,
        };
        let (number, scale) = [("ms", 1.0), ("us", 1e-3), ("µs", 1e-3), ("s", 1e3)]
            .iter()
            .find_map(|(unit, scale)| bound.strip_suffix(unit).map(|n| (n, *scale)))
            .unwrap_or((bound, 1.0));
        let value: f64 = number
            .trim()
            .parse()
            .map_err(|_| format!("{s:?}: {bound:?} is not a duration like 500ms, 0.5s or 800us"))?;
        let ms = value * scale;
        if !(ms.is_finite() && ms > 0.0) {
            return Err(format!("{s:?}: the bound must be above 0, got {bound}"));
        }
        Ok(Objective {
            measure,
            percentile: Some(pct),
            bound: ms,
        })
    }
}

impl Serialize for Objective {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Objective {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Objective, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_read_and_write_as_typed() {
        for (text, written, share) in [
            ("ttft:p99<=500ms", "ttft:p99<=500ms", 0.01),
            ("tpot:p90<=0.05s", "tpot:p90<=50ms", 0.1),
            ("itl:p99.9<=800us", "itl:p99.9<=0.8ms", 0.001),
            ("e2e:median<=2s", "e2e:p50<=2000ms", 0.5),
            ("ttft_from_send:p95<=120", "ttft_from_send:p95<=120ms", 0.05),
            ("error_rate<=1%", "error_rate<=1%", 0.01),
        ] {
            let o: Objective = text.parse().unwrap();
            assert_eq!(o.to_string(), written, "{text}");
            assert!((o.allowed_share() - share).abs() < 1e-12, "{text}");
            assert_eq!(o, written.parse().unwrap(), "{text} round trip");
        }
        let list = parse_list("ttft:p99<=500ms, tpot:p99<=50ms").unwrap();
        assert_eq!(list.len(), 2);
        for (bad, says) in [
            ("ttfb:p99<=5ms", "unknown metric \"ttfb\""),
            ("ttft:p100<=5ms", "unknown statistic \"p100\""),
            ("ttft:mean<=5ms", "unknown statistic \"mean\""),
            ("ttft:p99<=0ms", "above 0"),
            ("ttft:p99<=-3ms", "above 0"),
            ("ttft:p99<=fast", "not a duration"),
            ("ttft:p99>=5ms", "not METRIC:STAT<=BOUND"),
            ("ttft<=5ms", "names no statistic"),
            ("error_rate<=0%", "above 0 %"),
            ("error_rate:p99<=1%", "takes no statistic"),
        ] {
            let e = bad.parse::<Objective>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        assert!(parse_list(" , ")
            .unwrap_err()
            .contains("names no objective"));
    }
}
