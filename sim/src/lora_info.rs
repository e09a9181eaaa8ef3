//! The LoRA adapters' requests as vLLM exports them: `vllm:lora_requests_info`, a gauge
//! labelled `max_lora`, `waiting_lora_adapters` and `running_lora_adapters` (the adapters of
//! the requests waiting and running, comma-joined), whose value is when its label set was last
//! set (`set_to_current_time`). prometheus_client keeps every label set once set, so the page
//! lists past states beside the current one, which is the newest: a scraper that sums the
//! gauge, or reads its first label set, misreads it. The simulator writes it as vLLM does, so
//! that the scraper is held to the newest (`tests.rs`, and the runner's tests against
//! `runner sim --lora-modules`).

use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// Label sets kept at most, the oldest dropped first: a long run changes state at every
/// admission and every finish, and vLLM's page grows with every distinct one.
const SETS_KEPT: usize = 64;

/// The label sets set so far: (running, waiting) as written, and when each was last set
/// (seconds since the epoch), in the order they were first set. What runs and waits is
/// admission's (`admission.rs`), which sets the state here whenever it changes.
#[derive(Default)]
pub(crate) struct LoraRequests(Mutex<State>);

#[derive(Default)]
struct State {
    sets: Vec<((String, String), f64)>,
}

impl State {
    /// The label set (`running`, `waiting`: comma-joined adapters), set now (never at the
    /// same time as the newest before).
    fn set(&mut self, running: &str, waiting: &str) {
        let newest = self.sets.iter().map(|s| s.1).fold(0.0, f64::max);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
            .max(newest + 1e-6);
        match self
            .sets
            .iter_mut()
            .find(|s| s.0 .0 == running && s.0 .1 == waiting)
        {
            Some(s) => s.1 = now,
            None => {
                if self.sets.len() == SETS_KEPT {
                    self.sets.remove(0);
                }
                self.sets
                    .push(((running.to_string(), waiting.to_string()), now));
            }
        }
    }
}

impl LoraRequests {
    /// The adapters of the requests running and waiting now, comma-joined.
    pub fn now(&self, running: &str, waiting: &str) {
        self.0
            .lock()
            .expect("lora requests lock")
            .set(running, waiting);
    }

    /// The gauge's lines, every label set kept (the initial empty one too, set at start).
    pub fn write(&self, max_lora: u32, out: &mut String) {
        let mut s = self.0.lock().expect("lora requests lock");
        if s.sets.is_empty() {
            s.set("", "");
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
