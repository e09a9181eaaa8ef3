//! The LoRA adapters' requests as vLLM exports them: `vllm:lora_requests_info`, a gauge
//! labelled `max_lora`, `waiting_lora_adapters` and `running_lora_adapters` (the adapters of
//! the requests waiting and running, comma-joined), whose value is when its label set was last
//! set (`set_to_current_time`). prometheus_client keeps every label set once set, so the page
//! lists past states beside the current one, which is the newest: a scraper that sums the
//! gauge, or reads its first label set, misreads it. The simulator writes it as vLLM does, so
//! that the scraper is held to the newest (`tests.rs`, and the runner's tests against
//! `runner sim --lora-modules`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// Label sets kept at most, the oldest dropped first: a long run changes state at every
/// admission and every finish, and vLLM's page grows with every distinct one.
const SETS_KEPT: usize = 64;

/// The adapters of the requests waiting and running, and the label sets set so far.
#[derive(Default)]
pub(crate) struct LoraRequests(Mutex<State>);

#[derive(Default)]
struct State {
    waiting: BTreeMap<String, u32>,
    running: BTreeMap<String, u32>,
    /// (running, waiting) as written, and when each was last set (seconds since the epoch),
    /// in the order they were first set.
    sets: Vec<((String, String), f64)>,
}

impl State {
    /// The current state's label set, set now (never at the same time as the newest before).
    fn set(&mut self) {
        let joined = |m: &BTreeMap<String, u32>| {
            m.iter()
                .filter(|(_, &n)| n > 0)
                .map(|(a, _)| a.as_str())
                .collect::<Vec<_>>()
                .join(",")
        };
        let key = (joined(&self.running), joined(&self.waiting));
        let newest = self.sets.iter().map(|s| s.1).fold(0.0, f64::max);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
            .max(newest + 1e-6);
        match self.sets.iter_mut().find(|s| s.0 == key) {
            Some(s) => s.1 = now,
            None => {
                if self.sets.len() == SETS_KEPT {
                    self.sets.remove(0);
                }
                self.sets.push((key, now));
            }
        }
    }
}

fn add(m: &mut BTreeMap<String, u32>, name: &str, by: i32) {
    let n = m.entry(name.to_string()).or_default();
    *n = n.saturating_add_signed(by);
}

impl LoraRequests {
    /// A request for `name` starts waiting for a batch slot.
    pub fn waits(&self, name: &str) {
        let mut s = self.0.lock().expect("lora requests lock");
        add(&mut s.waiting, name, 1);
        s.set();
    }

    /// It stops waiting: admitted (then running), or gone.
    pub fn leaves_the_queue(&self, name: &str, admitted: bool) {
        let mut s = self.0.lock().expect("lora requests lock");
        add(&mut s.waiting, name, -1);
        if admitted {
            add(&mut s.running, name, 1);
        }
        s.set();
    }

    /// A running request for `name` ends.
    pub fn ends(&self, name: &str) {
        let mut s = self.0.lock().expect("lora requests lock");
        add(&mut s.running, name, -1);
        s.set();
    }

    /// The gauge's lines, every label set kept (the initial empty one too, set at start).
    pub fn write(&self, max_lora: u32, out: &mut String) {
        let mut s = self.0.lock().expect("lora requests lock");
        if s.sets.is_empty() {
            s.set();
        }
        let name = "vllm:lora_requests_info";
        let _ = write!(
            out,
            "# HELP {name} Running stats on lora requests.\n# TYPE {name} gauge\n"
        );
        for ((running, waiting), at) in &s.sets {
            // In the order vLLM declares the labels.
            let _ = writeln!(
                out,
                "{name}{{max_lora=\"{max_lora}\",waiting_lora_adapters=\"{}\",\
                 running_lora_adapters=\"{}\"}} {}",
                super::http::label_value(waiting),
                super::http::label_value(running),
                super::http::go_float(*at)
            );
        }
    }
}

/// Counts a request for an adapter as waiting for as long as it lives, and as running once
/// [`Waiting::admitted`].
pub(crate) struct Waiting<'a> {
    lora: &'a LoraRequests,
    name: &'a str,
    admitted: bool,
}

impl<'a> Waiting<'a> {
    pub fn enter(lora: &'a LoraRequests, name: &'a str) -> Waiting<'a> {
        lora.waits(name);
        Waiting {
            lora,
            name,
            admitted: false,
        }
    }

    pub fn admitted(mut self) {
        self.admitted = true;
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.lora.leaves_the_queue(self.name, self.admitted);
    }
}
