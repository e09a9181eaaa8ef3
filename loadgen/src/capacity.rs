//! `--profile capacity`: the course of the search — the loads it tries, in order, given the
//! verdicts so far. It doubles the load from its start until a step does not pass (halving
//! instead when the first does not), then bisects between the highest passing load and the
//! lowest one that did not pass, until they are within `--search-precision` of each other.
//! Each step is a benchmark that [`crate::watch`] ends as soon as its verdict is decided; the
//! verdict and the answer are `schemas::capacity`'s, which every verifier recomputes.

use schemas::document::capacity::{Search, Verdict};

/// Steps at most, whatever the verdicts: a search that needs more has a precision finer than
/// its steps can resolve.
pub const MAX_STEPS: u32 = 24;

/// Halvings below the start before a rate search concludes that nothing passes.
const MAX_HALVINGS: u32 = 8;

/// The measured-request counts at which a step is looked at: 50 (the fewest that make ten
/// batches), then each twice the last, up to `cap`: at most ten looks up to 25,600 requests,
/// which is what `schemas::capacity::judge::LOOK_CONFIDENCE` shares its 1 % among. A failure
/// can be certain at the first look; a pass needs the tightest percentile's early-stopping
/// minimum at 99.9 % (920 requests for p99).
pub fn checkpoints(cap: u64) -> impl Iterator<Item = u64> {
    std::iter::successors(Some(50u64), |&n| Some(2 * n)).take_while(move |&n| n <= cap)
}

/// Where the search stands.
#[derive(Clone, Debug)]
pub struct Course {
    search: Search,
    precision: f64,
    start: f64,
    passed: Option<f64>,
    /// The lowest load above `passed` that did not pass (failed, or stayed undecided).
    above: Option<f64>,
    next: Option<f64>,
    steps: u32,
}

impl Course {
    /// A search from `start` (a concurrency is rounded down, to at least 1).
    pub fn new(search: Search, precision: f64, start: f64) -> Course {
        let start = match search {
            Search::Rate => start,
            Search::Concurrency => start.floor().max(1.0),
        };
        Course {
            search,
            precision,
            start,
            passed: None,
            above: None,
            next: Some(start),
            steps: 0,
        }
    }

    /// The load of the next step; `None` when the search is over.
    pub fn next(&self) -> Option<f64> {
        self.next
    }

    /// The verdict of the step at `load`; `starved` when it ended with too few values to
    /// decide anything (fewer than ten batches' worth): lower loads would only give fewer,
    /// so a search that has passed nothing yet stops there rather than halve on.
    pub fn record(&mut self, load: f64, verdict: Verdict, starved: bool) {
        self.steps += 1;
        // An undecided step bounds the search as a failure does: no load above it can be
        // shown to pass by steps of the same length.
        if verdict == Verdict::Pass {
            self.passed = Some(self.passed.map_or(load, |p| p.max(load)));
        } else if self.passed.is_none_or(|p| load > p) {
            self.above = Some(self.above.map_or(load, |f| f.min(load)));
        }
        self.next = if self.steps >= MAX_STEPS || (starved && self.passed.is_none()) {
            None
        } else {
            self.plan()
        };
    }

    fn plan(&self) -> Option<f64> {
        let whole = self.search == Search::Concurrency;
        match (self.passed, self.above) {
            (Some(p), None) => Some(2.0 * p),
            (None, Some(f)) => {
                let half = if whole { (f / 2.0).floor() } else { f / 2.0 };
                let floor = self.start / f64::from(1u32 << MAX_HALVINGS);
                (half >= 1.0 || !whole)
                    .then_some(half)
                    .filter(|&h| h >= floor && h > 0.0)
            }
            (Some(p), Some(f)) => {
                let close = f - p <= self.precision * p * (1.0 + 1e-9);
                let mid = if whole {
                    ((p + f) / 2.0).floor()
                } else {
                    (p + f) / 2.0
                };
                (!close && mid > p && mid < f).then_some(mid)
            }
            (None, None) => Some(self.start),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a course against a load limit: loads at or below it pass.
    fn course(search: Search, start: f64, limit: f64) -> (Vec<f64>, Course) {
        let mut c = Course::new(search, 0.05, start);
        let mut tried = vec![];
        while let Some(load) = c.next() {
            tried.push(load);
            let verdict = if load <= limit {
                Verdict::Pass
            } else {
                Verdict::Fail
            };
            c.record(load, verdict, false);
        }
        (tried, c)
    }

    #[test]
    fn a_rate_search_doubles_then_bisects_to_its_precision() {
        let (tried, c) = course(Search::Rate, 10.0, 54.0);
        assert_eq!(&tried[..4], &[10.0, 20.0, 40.0, 80.0]);
        let (p, f) = (c.passed.unwrap(), c.above.unwrap());
        assert!(
            p <= 54.0 && f > 54.0 && f - p <= 0.05 * p,
            "{p} {f}: {tried:?}"
        );
        assert!(tried.len() <= 10, "{tried:?}");
    }

    #[test]
    fn a_first_step_that_fails_halves_down() {
        let (tried, c) = course(Search::Rate, 100.0, 30.0);
        assert_eq!(&tried[..3], &[100.0, 50.0, 25.0]);
        assert!(c.passed.unwrap() <= 30.0 && c.above.unwrap() > 30.0);
        // Nothing passes: the search gives up after its halvings.
        let (tried, c) = course(Search::Rate, 100.0, 0.0);
        assert!(c.passed.is_none());
        assert_eq!(tried.len(), MAX_HALVINGS as usize + 1);
    }

    #[test]
    fn a_step_too_short_to_decide_ends_a_search_that_passed_nothing() {
        let mut c = Course::new(Search::Rate, 0.05, 8.0);
        c.record(8.0, Verdict::Fail, false);
        assert_eq!(c.next(), Some(4.0));
        c.record(4.0, Verdict::Undecided, true);
        assert_eq!(c.next(), None);
    }

    #[test]
    fn a_concurrency_search_ends_on_neighbouring_integers() {
        let (tried, c) = course(Search::Concurrency, 1.0, 6.0);
        assert_eq!(&tried[..4], &[1.0, 2.0, 4.0, 8.0]);
        assert_eq!((c.passed, c.above), (Some(6.0), Some(7.0)));
        let (_, c) = course(Search::Concurrency, 1.0, 0.0);
        assert_eq!((c.passed, c.above), (None, Some(1.0)));
    }

    #[test]
    fn checkpoints_start_at_fifty_and_double() {
        let at: Vec<u64> = checkpoints(1000).collect();
        assert_eq!(at, [50, 100, 200, 400, 800]);
        assert_eq!(checkpoints(25_600).count(), 10);
    }
}
