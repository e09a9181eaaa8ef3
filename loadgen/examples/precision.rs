//! How exactly the load generator stamps token arrivals, against the simulator's ground truth.
//!
//!     cargo run --release -p loadgen --example precision -- [--token-clock kernel|read]
//!         [--case NAME] [--requests N]
//!
//! (`scripts/bench-precision.sh` runs every case with both token clocks, interleaved.) A
//! committed benchmark, not a test: it prints `key=value` lines per case and asserts nothing.
//!
//! The simulator runs in this process, on its own runtime threads, and records when each
//! request's handler started and the instant just before each token event's bytes went to
//! hyper (`sim::RequestTruth`). The load generator's client (`loadgen::client::Endpoint`, as
//! the runner drives it) runs closed-loop streams against it on a current-thread runtime, as
//! the runner's own runtime is, and stamps each token's arrival. Both ends read the same
//! monotonic clock (`Instant`), so a token's stamp minus its truth is the client's error with no
//! clock conversion in between: the hand-over to hyper, loopback, and then either the kernel's
//! receive stamp or the wake-up and read of the runner's thread (`--token-clock`). Requests are
//! driven here rather than through `loadgen::measure`, so that every record's times are µs
//! since an origin this program knows.
//!
//! Each request is tagged by its prompt's length (the simulator counts one token a word and
//! records the count), so record and truth pair exactly even when many streams send at once.
//!
//! Per case it prints:
//! * `first_token_error_us` — the record's first-token stamp minus the truth's first write;
//! * `later_token_error_us` — the same for every later token (arrivals = first + gaps);
//! * `send_error_us` — the truth's `arrived` (the kernel's stamp of the request's bytes at the
//!   server) minus the record's `sent_us`: how far before the wire the runner stamps its send;
//! * `request_leg_us` — the truth's `received` (its handler's start) minus the record's
//!   `sent_us`: the send's error, the server's wake-up and its parsing;
//! * `ttft_error_us` — the runner's TTFT from its send minus the server's own TTFT from its
//!   bytes' arrival: the runner's error on the TTFT it reports, both ends on the wire;
//! * `runner_cpu_us_per_token` — this process's CPU time less that of the simulator's threads
//!   (`provebench-sim*`, and the `provebench-timer` thread, which only the simulator's token
//!   deadlines use here; from `/proc/self/task/*/schedstat`) and of the busy neighbour;
//! * `steal_share` — CPU time the hypervisor stole, over wall time × online CPUs.
//!
//! Cases: `paced-16x2ms`, `paced-256x20ms`, `single`, and `single-busy`: one stream with a
//! thread spinning on the runner's CPU (both pinned there, the simulator's threads pinned
//! elsewhere), as when a busy server shares a core with the runner.

use anyhow::{bail, Context};
use loadgen::backend::Api;
use loadgen::client::{Endpoint, HttpClient, Job, Lean, TokenClock};
use schemas::document::{Phase, RawRecord, TokenTimestamps};
use sim::{RequestTruth, SimConfig, SimServer};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One workload: closed-loop streams against a simulator paced by `itl_ms`.
struct Case {
    name: &'static str,
    streams: usize,
    ttft_ms: f64,
    itl_ms: f64,
    output_tokens: u32,
    requests: usize,
    /// A thread spinning on the runner's CPU throughout.
    busy_neighbour: bool,
}

const CASES: [Case; 4] = [
    Case {
        name: "paced-16x2ms",
        streams: 16,
        ttft_ms: 2.0,
        itl_ms: 2.0,
        output_tokens: 256,
        requests: 400,
        busy_neighbour: false,
    },
    Case {
        name: "paced-256x20ms",
        streams: 256,
        ttft_ms: 2.0,
        itl_ms: 20.0,
        output_tokens: 64,
        requests: 1024,
        busy_neighbour: false,
    },
    Case {
        name: "single",
        streams: 1,
        ttft_ms: 5.0,
        itl_ms: 2.0,
        output_tokens: 64,
        requests: 50,
        busy_neighbour: false,
    },
    Case {
        name: "single-busy",
        streams: 1,
        ttft_ms: 5.0,
        itl_ms: 2.0,
        output_tokens: 64,
        requests: 50,
        busy_neighbour: true,
    },
];

/// Prompt length of request `i` is `i + TAG_BASE` words: the warm-up requests' one-word
/// prompts never collide with a measured request's tag.
const TAG_BASE: usize = 2;
/// Thread names (as `/proc` truncates them to 15 bytes) whose CPU time is not the runner's.
const NOT_RUNNER: [&str; 3] = ["provebench-sim", "provebench-time", SPINNER];
const SPINNER: &str = "precision-spin";

struct Args {
    clock: TokenClock,
    case: Option<String>,
    requests: Option<usize>,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args {
        clock: TokenClock::Kernel,
        case: None,
        requests: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (arg, None),
        };
        let mut value = || inline.clone().or_else(|| it.next()).context(flag.clone());
        match flag.as_str() {
            "--token-clock" => args.clock = parse_clock(&value()?)?,
            "--case" => args.case = Some(value()?),
            "--requests" => args.requests = Some(value()?.parse().context("--requests")?),
            _ => bail!(
                "unknown argument {flag}; usage: precision [--token-clock kernel|read] \
                 [--case NAME] [--requests N]"
            ),
        }
    }
    Ok(args)
}

fn parse_clock(s: &str) -> anyhow::Result<TokenClock> {
    match s {
        "kernel" => Ok(TokenClock::Kernel),
        "read" => Ok(TokenClock::Read),
        _ => bail!("--token-clock must be kernel or read, not {s}"),
    }
}

fn clock_name(clock: TokenClock) -> &'static str {
    match clock {
        TokenClock::Kernel => "kernel",
        TokenClock::Read => "read",
    }
}

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let cases: Vec<&Case> = CASES
        .iter()
        .filter(|c| args.case.as_deref().is_none_or(|n| n == c.name))
        .collect();
    if cases.is_empty() {
        let names: Vec<&str> = CASES.iter().map(|c| c.name).collect();
        bail!("no case named {:?}; cases: {}", args.case, names.join(", "));
    }
    // The runner's runtime is current-thread: so is this one, on the main thread.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    for case in cases {
        let requests = args.requests.unwrap_or(case.requests);
        let result = runtime.block_on(run_case(case, requests, args.clock))?;
        print_result(case, requests, &args, &result);
    }
    Ok(())
}

fn sim_config(case: &Case) -> SimConfig {
    SimConfig {
        ttft_ms: case.ttft_ms,
        itl_ms: case.itl_ms,
        itl_growth: 0.0,
        // Prompt lengths are tags: they must not move the first token.
        prefill_us_per_token: 0.0,
        prefix_caching: false,
        max_batch: case.streams as u32,
        ..SimConfig::default()
    }
}

fn endpoint(sim: &SimServer, streams: usize, clock: TokenClock) -> anyhow::Result<Endpoint> {
    let api = Api::OpenaiCompletions;
    let url = format!("{}{}", sim.base_url(), api.path());
    Ok(Endpoint {
        server: loadgen::client::server(&sim.base_url(), streams, None)?,
        lean: Lean::for_url(&url, HttpClient::Auto, clock),
        url,
        api,
        model: SimConfig::default().model,
        ignore_eos: true,
        temperature: 0.0,
        request_timeout: Duration::from_secs(30),
        stall_timeout: Duration::from_secs(30),
        stamps: Default::default(),
        ignored_events: Default::default(),
        request_ids: Default::default(),
        server_fields: Default::default(),
        extra_body: None,
        shape: None,
    })
}

/// What one case measured.
struct CaseResult {
    matched: Vec<(RawRecord, RequestTruth)>,
    unmatched: usize,
    origin: Instant,
    tokens: u64,
    /// The measured tokens by what stamped them.
    stamps: TokenTimestamps,
    wall: Duration,
    cost: Cost,
}

async fn run_case(case: &Case, requests: usize, clock: TokenClock) -> anyhow::Result<CaseResult> {
    let sim = SimServer::start(sim_config(case)).await?;
    let endpoint = endpoint(&sim, case.streams, clock)?;
    endpoint.warm_connections(case.streams).await;
    let warm = sim.truth().len();
    let neighbour = case
        .busy_neighbour
        .then(Neighbour::start)
        .transpose()
        .context("starting the busy neighbour")?;
    let prompts: Vec<String> = (0..requests).map(|i| tagged_prompt(i + TAG_BASE)).collect();
    let stamps_before = endpoint.stamps.snapshot();
    let before = Counters::now();
    let origin = Instant::now();
    let records = drive(&endpoint, case, &prompts, origin).await;
    let after = Counters::now();
    let stamps = endpoint.stamps.snapshot().since(&stamps_before);
    drop(neighbour);
    let truth = measured_truth(&sim, warm, records.len()).await;
    sim.shutdown().await;
    let tokens = records
        .iter()
        .map(|(_, r)| u64::from(r.output_tokens_client))
        .sum();
    let (matched, unmatched) = pair(records, truth);
    Ok(CaseResult {
        matched,
        unmatched,
        origin,
        tokens,
        stamps,
        wall: after.at - before.at,
        cost: Cost::between(&before, &after),
    })
}

/// A prompt of `tag` words (the simulator's tokens), which the truth records.
fn tagged_prompt(tag: usize) -> String {
    vec!["a"; tag].join(" ")
}

/// `case.streams` closed-loop streams sending the `prompts` in turn; each record with its tag.
async fn drive(
    endpoint: &Endpoint,
    case: &Case,
    prompts: &[String],
    origin: Instant,
) -> Vec<(usize, RawRecord)> {
    let next = std::cell::Cell::new(0usize);
    let stream = || async {
        let mut out = Vec::new();
        while let Some(prompt) = prompts.get(next.get()) {
            let tag = next.get() + TAG_BASE;
            next.set(next.get() + 1);
            let job = Job {
                model: None,
                prompt,
                history: &[],
                previous_response_id: None,
                session: None,
                prompt_tokens: None,
                output_tokens: case.output_tokens,
                scheduled: Instant::now(),
                phase: Phase::Measured,
                attachments: None,
            };
            out.push((tag, endpoint.execute(&job, origin).await));
        }
        out
    };
    let streams = futures_util::future::join_all((0..case.streams).map(|_| stream())).await;
    streams.into_iter().flatten().collect()
}

/// The truth of the measured requests: those after the first `warm` in arrival order whose
/// prompt carries a tag. Waits (up to 2 s) for the simulator to file the last ones, which it
/// does after their final bytes.
async fn measured_truth(sim: &SimServer, warm: usize, expected: usize) -> Vec<RequestTruth> {
    let tagged = || {
        let mut all = sim.truth();
        all.sort_by_key(|t| t.index);
        let mut measured = all.split_off(warm.min(all.len()));
        measured.retain(|t| t.prompt_tokens as usize >= TAG_BASE);
        measured
    };
    let give_up = Instant::now() + Duration::from_secs(2);
    let mut truth = tagged();
    while truth.len() < expected && Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(1)).await;
        truth = tagged();
    }
    truth
}

/// Pairs each record with the truth of the same tag (prompt length); a pair whose request
/// failed or whose token counts disagree is left out. Returns the pairs and how many records
/// were left unpaired.
fn pair(
    records: Vec<(usize, RawRecord)>,
    truth: Vec<RequestTruth>,
) -> (Vec<(RawRecord, RequestTruth)>, usize) {
    let mut by_tag: HashMap<usize, RequestTruth> = truth
        .into_iter()
        .map(|t| (t.prompt_tokens as usize, t))
        .collect();
    let total = records.len();
    let matched: Vec<_> = records
        .into_iter()
        .filter_map(|(tag, r)| {
            let t = by_tag.remove(&tag)?;
            let agree = r.error.is_none()
                && t.fault.is_none()
                && r.first_token_us.is_some()
                && r.output_tokens_client as usize == t.token_written.len();
            agree.then_some((r, t))
        })
        .collect();
    let unmatched = total - matched.len();
    (matched, unmatched)
}

/// Every token's arrival (µs since the origin): the first, then the first plus the gaps.
fn arrivals(r: &RawRecord) -> Option<Vec<i64>> {
    let first = r.first_token_us? as i64;
    let gaps = schemas::token_times::decode(&r.token_gaps).ok()?;
    let mut at = first;
    let mut out = Vec::with_capacity(gaps.len() + 1);
    out.push(first);
    for gap in gaps {
        at += gap as i64;
        out.push(at);
    }
    Some(out)
}

/// The errors of one case, µs, each sample signed.
#[derive(Default)]
struct Errors {
    first_token: Vec<f64>,
    later_token: Vec<f64>,
    send: Vec<f64>,
    request_leg: Vec<f64>,
    ttft: Vec<f64>,
}

fn errors(result: &CaseResult) -> Errors {
    let us = |i: Instant| i.saturating_duration_since(result.origin).as_micros() as i64;
    let mut e = Errors::default();
    for (r, t) in &result.matched {
        let Some(stamps) = arrivals(r) else { continue };
        let written: Vec<i64> = t.token_written.iter().map(|&w| us(w)).collect();
        let (sent, received) = (r.sent_us as i64, us(t.received));
        let arrived = us(t.arrived.unwrap_or(t.received));
        e.first_token.push((stamps[0] - written[0]) as f64);
        e.later_token.extend(
            stamps[1..]
                .iter()
                .zip(&written[1..])
                .map(|(s, w)| (s - w) as f64),
        );
        e.send.push((arrived - sent) as f64);
        e.request_leg.push((received - sent) as f64);
        e.ttft
            .push(((stamps[0] - sent) - (written[0] - arrived)) as f64);
    }
    e
}

/// `p50=… p99=…` (and `max=…`) of a sample, or `n=0`.
fn quantiles(mut v: Vec<f64>, with_max: bool) -> String {
    if v.is_empty() {
        return "n=0".into();
    }
    v.sort_by(f64::total_cmp);
    let p = |q| schemas::distribution::percentile(&v, q);
    let mut s = format!("p50={:.0} p99={:.0}", p(50.0), p(99.0));
    if with_max {
        s += &format!(" max={:.0}", v[v.len() - 1]);
    }
    s
}

fn print_result(case: &Case, requests: usize, args: &Args, result: &CaseResult) {
    let e = errors(result);
    println!(
        "case={} clock={} streams={} requests={requests} tokens={} wall_s={:.2}",
        case.name,
        clock_name(args.clock),
        case.streams,
        result.tokens,
        result.wall.as_secs_f64()
    );
    println!(
        "matched={} unmatched={}",
        result.matched.len(),
        result.unmatched
    );
    let s = &result.stamps;
    println!(
        "token_stamps kernel={} read={} shared={}",
        s.kernel, s.read, s.shared
    );
    println!("first_token_error_us {}", quantiles(e.first_token, true));
    println!("later_token_error_us {}", quantiles(e.later_token, true));
    println!("send_error_us {}", quantiles(e.send, true));
    println!("request_leg_us {}", quantiles(e.request_leg, false));
    println!("ttft_error_us {}", quantiles(e.ttft, false));
    match result.cost.runner_cpu {
        Some(cpu) if result.tokens > 0 => println!(
            "runner_cpu_us_per_token={:.2}",
            cpu.as_secs_f64() * 1e6 / result.tokens as f64
        ),
        _ => println!("runner_cpu_us_per_token=unavailable"),
    }
    match result.cost.steal {
        Some(steal) => println!(
            "steal_share={:.4}",
            steal.as_secs_f64() / (result.wall.as_secs_f64() * online_cpus() as f64)
        ),
        None => println!("steal_share=unavailable"),
    }
}

fn online_cpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(1) as usize
}

/// Counters read before and after a case's measured part.
struct Counters {
    at: Instant,
    process_cpu: Duration,
    /// ns on CPU of each thread that is not the runner's, by thread id; `None` where
    /// `/proc/self/task/*/schedstat` cannot be read or no simulator thread was found.
    not_runner_ns: Option<HashMap<u32, u64>>,
    steal: Option<Duration>,
}

impl Counters {
    fn now() -> Counters {
        Counters {
            at: Instant::now(),
            process_cpu: clock::cpu::cpu_time(),
            not_runner_ns: not_runner_threads(),
            steal: clock::cpu::steal_time(),
        }
    }
}

/// Deltas between two [`Counters`].
struct Cost {
    runner_cpu: Option<Duration>,
    steal: Option<Duration>,
}

impl Cost {
    fn between(before: &Counters, after: &Counters) -> Cost {
        let runner_cpu = before
            .not_runner_ns
            .as_ref()
            .zip(after.not_runner_ns.as_ref())
            .map(|(b, a)| {
                // A thread started in between counts from zero.
                let others: u64 = a
                    .iter()
                    .map(|(tid, ns)| ns.saturating_sub(b.get(tid).copied().unwrap_or(0)))
                    .sum();
                let process = after.process_cpu.saturating_sub(before.process_cpu);
                process.saturating_sub(Duration::from_nanos(others))
            });
        let steal = before
            .steal
            .zip(after.steal)
            .map(|(b, a)| a.saturating_sub(b));
        Cost { runner_cpu, steal }
    }
}

/// This process's threads: id and name (`/proc/self/task/<tid>/comm`).
fn threads() -> Vec<(u32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let tid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok()?;
        Some((tid, comm.trim_end().to_string()))
    })
    .collect()
}

fn is_not_runner(name: &str) -> bool {
    NOT_RUNNER.iter().any(|p| name.starts_with(p))
}

/// ns on CPU (the first field of `schedstat`) of every thread that is not the runner's.
fn not_runner_threads() -> Option<HashMap<u32, u64>> {
    let mut out = HashMap::new();
    let mut sim_seen = false;
    for (tid, name) in threads() {
        if !is_not_runner(&name) {
            continue;
        }
        sim_seen |= name.starts_with("provebench-sim");
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
        out.insert(tid, stat.split_whitespace().next()?.parse().ok()?);
    }
    sim_seen.then_some(out)
}

/// A thread spinning on the CPU the runner's (this) thread is pinned to, while the simulator's
/// threads are pinned to the other CPUs. Dropping it stops the spinner and undoes the pinning.
struct Neighbour {
    stop: Arc<AtomicBool>,
    spinner: Option<JoinHandle<()>>,
    /// Each pinned thread (0: this one) and the CPUs it could run on before.
    restore: Vec<(u32, libc::cpu_set_t)>,
}

impl Neighbour {
    fn start() -> anyhow::Result<Neighbour> {
        // SAFETY: sched_getcpu has no preconditions.
        let cpu = unsafe { libc::sched_getcpu() };
        if cpu < 0 {
            bail!("sched_getcpu: {}", std::io::Error::last_os_error());
        }
        let cpu = cpu as usize;
        let mut neighbour = Neighbour {
            stop: Arc::new(AtomicBool::new(false)),
            spinner: None,
            restore: Vec::new(),
        };
        neighbour.pin(0, &only(cpu))?;
        let elsewhere = all_but(cpu);
        if online_cpus() > 1 {
            for (tid, name) in threads() {
                if name.starts_with("provebench-sim") || name.starts_with("provebench-time") {
                    neighbour.pin(tid, &elsewhere)?;
                }
            }
        }
        neighbour.spinner = Some(spin_on(cpu, neighbour.stop.clone())?);
        Ok(neighbour)
    }

    /// Pins thread `tid` (0: the calling thread) to `set`, remembering where it ran before.
    fn pin(&mut self, tid: u32, set: &libc::cpu_set_t) -> anyhow::Result<()> {
        let before = affinity(tid)?;
        set_affinity(tid, set)?;
        self.restore.push((tid, before));
        Ok(())
    }
}

impl Drop for Neighbour {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(spinner) = self.spinner.take() {
            let _ = spinner.join();
        }
        for (tid, set) in self.restore.drain(..).rev() {
            // A simulator thread may have ended since; nothing to restore then.
            let _ = set_affinity(tid, &set);
        }
    }
}

/// Starts a thread that pins itself to `cpu` and spins until `stop`; returns once it spins.
fn spin_on(cpu: usize, stop: Arc<AtomicBool>) -> anyhow::Result<JoinHandle<()>> {
    let (ready, pinned) = std::sync::mpsc::channel();
    let handle = std::thread::Builder::new()
        .name(SPINNER.into())
        .spawn(move || {
            // The default nice (0), as a server's busy thread would have.
            let _ = ready.send(set_affinity(0, &only(cpu)));
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })?;
    pinned
        .recv()
        .context("the spinner ended before pinning itself")??;
    Ok(handle)
}

fn only(cpu: usize) -> libc::cpu_set_t {
    // SAFETY: an all-zero cpu_set_t is the empty set; CPU_SET writes into it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    set
}

fn all_but(cpu: usize) -> libc::cpu_set_t {
    // SAFETY: as in `only`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for c in (0..online_cpus()).filter(|&c| c != cpu) {
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    set
}

fn affinity(tid: u32) -> anyhow::Result<libc::cpu_set_t> {
    // SAFETY: sched_getaffinity writes at most size_of::<cpu_set_t>() bytes into `set`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::sched_getaffinity(tid as libc::pid_t, std::mem::size_of_val(&set), &mut set)
    };
    if rc != 0 {
        bail!(
            "sched_getaffinity({tid}): {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(set)
}

fn set_affinity(tid: u32, set: &libc::cpu_set_t) -> anyhow::Result<()> {
    // SAFETY: sched_setaffinity reads size_of::<cpu_set_t>() bytes from `set`.
    let rc =
        unsafe { libc::sched_setaffinity(tid as libc::pid_t, std::mem::size_of_val(set), set) };
    if rc != 0 {
        bail!(
            "sched_setaffinity({tid}): {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}
