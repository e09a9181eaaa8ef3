//! `runner campaign`: a 2 × 2 matrix of simulated engines (a recipe that launches `runner
//! sim`, its batch as wide as the cell's GPU count) run here and as a real Slurm array job
//! (Debian's slurm-wlm on 127.0.0.1, started by scripts/install-slurm.sh); interrupted and
//! killed cells resume without losing or duplicating a result; bad plans are refused with
//! the file, line and field; collect verifies, signs and publishes.

use crate::support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::{statement, text};

const RUNNER: &str = env!("CARGO_BIN_EXE_runner");

fn runner(dir: &Path, args: &[&str]) -> Command {
    let mut c = support::command(dir, args);
    c.env("RUST_LOG", "info");
    c
}

/// A campaign directory: a signing key, the simulated engine's recipe, and a plan of
/// `engines` × GPU counts 1 and 2, each cell `requests` Poisson requests at 20/s of 8 tokens
/// (about 50 ms each on one simulated GPU, 90 on the slow engine's).
fn campaign_dir(requests: u32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = runner(dir.path(), &["keygen", "lab"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    std::fs::write(
        dir.path().join("sim.toml"),
        format!(
            r#"# A simulated engine: `runner sim`, its batch as wide as its GPU count.
name = "sim"
port = 8000
command = ["{RUNNER}", "sim", "--port", "{{port}}", "--model", "{{model}}", "--max-batch", "{{gpus}}", "--itl-ms", "4", "{{args}}"]
ready = {{ request = "GET /health", timeout_s = 30 }}
version = {{ request = "GET /version", field = "version" }}
"#
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("plan.toml"),
        format!(
            r#"name = "sim-matrix"
key = "lab.key"

[axes]
engine = ["sim.toml", {{ recipe = "sim.toml", label = "sim-slow", args = ["--ttft-ms", "60", "--wrong-answers", "1"] }}]
gpus = [1, 2]

[fixed]
model = "sim-model"
profile = "poisson"
rate = [20.0]
max_requests = {requests}
data = {{ prompt_tokens = 64, output_tokens = 8 }}
accuracy = "builtin:arithmetic:5"
"#
        ),
    )
    .unwrap();
    dir
}

const IDS: [&str; 4] = ["sim_1gpu", "sim_2gpu", "sim-slow_1gpu", "sim-slow_2gpu"];

/// Every cell has exactly one result, complete and verified by the campaign's public key.
fn assert_one_verified_result_per_cell(dir: &Path) {
    let results = dir.join("results");
    for id in IDS {
        let path = results.join(format!("{id}.json"));
        let out = runner(dir, &["verify", path.to_str().unwrap(), "--key", "lab.pub"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{id}: {}", text(&out));
        let s = statement(&path);
        assert_eq!(s["predicate"]["run"]["complete"], true, "{id}");
    }
    let jsons = std::fs::read_dir(&results)
        .unwrap()
        .filter(|e| {
            let name = e
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .into_owned();
            name.ends_with(".json") && name != "campaign.json" && name != "keys.json"
        })
        .count();
    assert_eq!(jsons, IDS.len(), "one result per cell, no more");
}

#[test]
fn show_lists_cells_with_stable_ids_and_bad_plans_are_refused() {
    let dir = campaign_dir(10);
    let d = dir.path();
    let out = runner(d, &["campaign", "show", "plan.toml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    for (i, id) in IDS.iter().enumerate() {
        assert!(
            shown.lines().any(|l| {
                l.split_whitespace().take(3).collect::<Vec<_>>()
                    == [i.to_string().as_str(), *id, "missing"]
            }),
            "{id} at {i}:\n{shown}"
        );
    }

    let plan = std::fs::read_to_string(d.join("plan.toml")).unwrap();
    let refused = |name: &str, text: String, wanted: &[&str]| {
        std::fs::write(d.join(name), text).unwrap();
        let out = runner(d, &["campaign", "show", name]).output().unwrap();
        assert_eq!(out.status.code(), Some(3), "{name}: {}", self::text(&out));
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        for w in wanted {
            assert!(err.contains(w), "{name}: {w:?} not in {err}");
        }
    };
    refused(
        "unknown-axis.toml",
        plan.replace("gpus = [1, 2]", "gpus = [1, 2]\nnodes = [1, 2]"),
        &["unknown-axis.toml", "line 7", "axes.nodes is not an axis"],
    );
    refused(
        "empty.toml",
        plan.replace("gpus = [1, 2]", "gpus = []"),
        &["empty.toml", "line 6", "axes.gpus is empty"],
    );
    refused(
        "no-recipe.toml",
        plan.replace("[\"sim.toml\",", "[\"vllm-nightly\","),
        &["no-recipe.toml", "line 5", "axes.engine", "vllm-nightly"],
    );
    refused(
        "bad-field.toml",
        plan.replace("max_requests", "max_request"),
        &["bad-field.toml", "line 12", "[fixed]", "max_request"],
    );
    let out = runner(d, &["campaign", "cell", "plan.toml", "--index", "4"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("cell index 4 is out of range: the plan has 4 cells"),
        "{}",
        text(&out)
    );

    // A key others can read is refused before anything runs (exit 4).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d.join("lab.key"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = runner(d, &["campaign", "run", "plan.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    assert!(text(&out).contains("chmod 600"), "{}", text(&out));
    assert!(!d.join("results").exists());
}

/// Waits for `path` to exist (a cell's journal: its benchmark has started).
fn wait_for(path: &Path, within: Duration) {
    let deadline = Instant::now() + within;
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn local_campaign_resumes_after_an_interrupt_and_a_kill_then_collects() {
    let dir = campaign_dir(30);
    let d = dir.path();
    let results = d.join("results");

    // Counted before any cell runs: the plan's registration, which every cell refers to.
    let out = runner(d, &["register", "plan.toml"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("registered as entry 0 of provebench.local/attempts/"),
        "{}",
        text(&out)
    );

    // Ctrl-C during the second cell: the first is verified, the second written incomplete.
    // The campaign leads its own process group, as a shell's foreground job does.
    use std::os::unix::process::CommandExt;
    let mut child = runner(d, &["campaign", "run", "plan.toml"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    // Once its benchmark has begun (its first record journaled: a cell interrupted before
    // then has measured nothing), while it has most of its requests still to send.
    support::children::wait_for_records(
        &mut child,
        &results.join("sim_2gpu.json.journal.jsonl"),
        1,
    );
    unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(results.join("sim_1gpu.json").exists());
    let interrupted = statement(&results.join("sim_2gpu.json"));
    assert_eq!(interrupted["predicate"]["run"]["complete"], false);

    let out = runner(d, &["campaign", "status", "plan.toml"])
        .output()
        .unwrap();
    let status_text = text(&out);
    assert!(
        status_text.contains("sim_1gpu") && status_text.contains("verified"),
        "{status_text}"
    );
    assert!(
        status_text
            .lines()
            .any(|l| l.contains("sim_2gpu") && l.contains("failed") && l.contains("incomplete")),
        "{status_text}"
    );

    // SIGKILL the third cell's runner mid-benchmark: a journal and no result.
    let mut child = runner(d, &["campaign", "cell", "plan.toml", "--index", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let journal = results.join("sim-slow_1gpu.json.journal.jsonl");
    wait_for(&journal, Duration::from_secs(60));
    // The same cell started again meanwhile (a task resubmitted by hand) leaves it alone.
    let out = runner(d, &["campaign", "cell", "plan.toml", "--index", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6), "{}", text(&out));
    assert!(
        text(&out).contains("cell sim-slow_1gpu is being run by another process (pid "),
        "{}",
        text(&out)
    );
    support::children::wait_for_records(&mut child, &journal, 1);
    child.kill().unwrap();
    child.wait().unwrap();
    let killed_journal = std::fs::read(&journal).unwrap();
    assert!(!results.join("sim-slow_1gpu.json").exists());
    // The engine the killed runner started is stopped with it (it watches its parent).
    std::thread::sleep(Duration::from_millis(500));

    let out = runner(d, &["campaign", "run", "plan.toml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_one_verified_result_per_cell(d);
    // The first cell ran once: resumed, not repeated.
    let log = text(&out);
    assert!(
        !log.contains("cell=sim_1gpu"),
        "a verified cell ran again:\n{log}"
    );
    // Nothing measured was lost: the interrupted result and the killed journal are kept.
    let attempts = results.join("attempts");
    let kept = statement(&attempts.join("sim_2gpu.1.sim_2gpu.json"));
    assert_eq!(kept, interrupted);
    assert_eq!(
        std::fs::read(attempts.join("sim-slow_1gpu.1.sim-slow_1gpu.json.journal.jsonl")).unwrap(),
        killed_journal
    );

    // Run again: nothing to do.
    let out = runner(d, &["campaign", "run", "plan.toml"])
        .output()
        .unwrap();
    assert!(text(&out).contains("nothing to run"), "{}", text(&out));
    collect_and_check(d);
    check_the_published_log(d);

    // Another cell's signed result under this cell's name does not count for it.
    std::fs::copy(results.join("sim_1gpu.json"), results.join("sim_2gpu.json")).unwrap();
    let out = runner(d, &["campaign", "status", "plan.toml"])
        .output()
        .unwrap();
    let status = text(&out);
    assert!(
        status.lines().any(|l| l.contains("sim_2gpu")
            && l.contains("failed")
            && l.contains("engine.gpus is 1, not this cell's 2")),
        "{status}"
    );
    let out = runner(d, &["campaign", "collect", "plan.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6), "{}", text(&out));
}

/// The local campaign's published log: the six attempts its cells made (the first, the
/// interrupted one, the killed one, the three the second run made) and the plan registered
/// before them, which every cell names.
fn check_the_published_log(d: &Path) {
    let out = runner(d, &["verify-site", "site", "--key", "lab.pub", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let log = &v["logs"][0];
    let t = &log["tally"];
    // Six attempts: the first cell, the interrupted one, the killed one, and the three the
    // second run made; the plan apart.
    assert_eq!(
        [
            &t["registered"],
            &t["completed"],
            &t["failed"],
            &t["killed"],
            &t["plans"]
        ],
        [6, 4, 1, 1, 1].map(serde_json::Value::from).each_ref(),
        "{log}"
    );
    assert_eq!(log["published"], 4, "{log}");
    let shown = runner(d, &["log", "show", "lab.attempts", "--json"])
        .output()
        .unwrap();
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    let cells: Vec<&serde_json::Value> = shown["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["registration"]["command"] == "campaign cell")
        .collect();
    assert_eq!(cells.len(), 6);
    assert!(
        cells.iter().all(|a| a["registration"]["plan"] == 0),
        "{shown}"
    );
}

/// `collect` writes a campaign document signed by the campaign's key that binds the plan and
/// each cell's result by digest, and publishes them.
fn collect_and_check(d: &Path) {
    let out = runner(d, &["campaign", "collect", "plan.toml", "--site", "site"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let results = d.join("results");
    let doc = statement(&results.join("campaign.json"));
    assert_eq!(doc["predicateType"], "https://provebench.dev/campaign/v0.2");
    let p = &doc["predicate"];
    assert_eq!(p["name"], "sim-matrix");
    assert_eq!(
        p["plan"],
        std::fs::read_to_string(d.join("plan.toml")).unwrap()
    );
    let materials = p["materials"].as_array().unwrap();
    assert_eq!(materials.len(), 1 + IDS.len());
    assert_eq!(materials[0]["uri"], "plan.toml");
    for (i, id) in IDS.iter().enumerate() {
        let cell = &p["cells"][i];
        assert_eq!(
            (cell["index"].as_u64(), cell["id"].as_str()),
            (Some(i as u64), Some(*id))
        );
        assert_eq!(cell["outcome"], "verified");
        use sha2::Digest;
        let digest = hex::encode(sha2::Sha256::digest(
            std::fs::read(results.join(format!("{id}.json"))).unwrap(),
        ));
        let m = materials
            .iter()
            .find(|m| m["uri"] == format!("{id}.json"))
            .unwrap();
        assert_eq!(m["digest"]["sha256"], digest.as_str());
        assert!(doc["subject"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["digest"]["sha256"] == digest.as_str()));
    }
    // Signed by the campaign's key: the envelope verifies under lab.pub.
    let keys = std::fs::read_to_string(results.join("keys.json")).unwrap();
    assert!(keys.contains(
        &std::fs::read_to_string(d.join("lab.pub"))
            .unwrap()
            .replace('\n', "\\n")
    ));
    // The matrix, engines × GPU counts, each cell verified with its numbers.
    let matrix = std::fs::read_to_string(results.join("campaign.md")).unwrap();
    assert!(matrix.contains("| engine | 1gpu | 2gpu |"), "{matrix}");
    assert_eq!(matrix.matches("verified ✓").count(), 4, "{matrix}");
    assert!(matrix.contains("4 cells: 4 verified"), "{matrix}");
    // Every cell asked the suite ([fixed] accuracy); the slow engine answers every question
    // wrongly, and each cell says its grade.
    assert_eq!(
        matrix.matches("accuracy 100.0 % exact").count(),
        2,
        "{matrix}"
    );
    assert_eq!(
        matrix.matches("accuracy 0.0 % exact").count(),
        2,
        "{matrix}"
    );
    let site = d.join("site");
    for f in ["index.html", "index.json", "keys.json"] {
        assert!(site.join(f).exists(), "site/{f}");
    }
    let index = std::fs::read_to_string(site.join("index.json")).unwrap();
    assert!(
        IDS.iter().all(|id| index.contains(&format!("{id}.json"))),
        "{index}"
    );
    assert!(index.contains("campaign.json"), "{index}");
}

/// SLURM_CONF of the project's single-node Slurm (scripts/install-slurm.sh installs and
/// starts it, idempotently); `None` (the test skips) outside CI where it cannot run.
pub(crate) fn slurm() -> Option<String> {
    let script = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").unwrap())
        .join("../scripts/install-slurm.sh");
    let out = Command::new(&script).output().unwrap();
    let conf = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .and_then(|l| l.strip_prefix("export SLURM_CONF="))
        .map(str::to_string);
    if !out.status.success() || conf.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "scripts/install-slurm.sh failed: {}",
            text(&out)
        );
        eprintln!("SKIPPED: no Slurm here: {}", text(&out));
        return None;
    }
    conf
}

pub(crate) fn slurm_runner(dir: &Path, conf: &str, args: &[&str]) -> Output {
    runner(dir, args).env("SLURM_CONF", conf).output().unwrap()
}

/// `runner campaign run plan.toml --executor slurm EXTRA…` against the Slurm of `conf`.
pub(crate) fn slurm_submit(dir: &Path, conf: &str, extra: &[&str]) -> Output {
    let base = ["campaign", "run", "plan.toml", "--executor", "slurm"];
    slurm_runner(dir, conf, &[&base[..], extra].concat())
}

/// The campaign's tasks queued or running, from `squeue`.
fn active_tasks(conf: &str, dir: &Path) -> Vec<String> {
    let jobs = std::fs::read_to_string(dir.join("results/slurm/jobs.jsonl")).unwrap();
    let ids: Vec<String> = jobs
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["job_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let out = Command::new("squeue")
        .env("SLURM_CONF", conf)
        .args(["-h", "-r", "-o", "%i %T", "-j", &ids.join(",")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Cells `campaign status` calls verified.
fn verified_lines(status: &str) -> usize {
    status
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.len() >= 3 && w[0].parse::<usize>().is_ok() && w[2] == "verified")
        .count()
}

pub(crate) fn wait_until_idle(conf: &str, dir: &Path, within: Duration) {
    let deadline = Instant::now() + within;
    while !active_tasks(conf, dir).is_empty() {
        assert!(
            Instant::now() < deadline,
            "tasks still queued: {:?}",
            active_tasks(conf, dir)
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn slurm_array_runs_the_matrix_and_a_cancelled_task_is_resubmitted() {
    let Some(conf) = slurm() else { return };
    let dir = campaign_dir(40);
    let d = dir.path();
    let out = slurm_submit(d, &conf, &["--time", "10"]);
    assert!(out.status.success(), "{}", text(&out));
    // One array per GPU count, task ids the cells' indices.
    let one = std::fs::read_to_string(d.join("results/slurm/1gpu.sbatch")).unwrap();
    assert!(
        one.contains("#SBATCH --array=0,2\n") && one.contains("#SBATCH --gres=gpu:1\n"),
        "{one}"
    );
    let two = std::fs::read_to_string(d.join("results/slurm/2gpu.sbatch")).unwrap();
    assert!(
        two.contains("#SBATCH --array=1,3\n") && two.contains("#SBATCH --gres=gpu:2\n"),
        "{two}"
    );
    assert!(two.contains("#SBATCH --time=10\n"), "{two}");

    // Submitting again while they are queued or running hands nothing out twice.
    let again = slurm_submit(d, &conf, &[]);
    assert!(
        text(&again).contains("nothing to run: the selected cells are queued or running on Slurm"),
        "{}",
        text(&again)
    );
    assert_eq!(
        std::fs::read_to_string(d.join("results/slurm/jobs.jsonl"))
            .unwrap()
            .lines()
            .count(),
        2
    );

    // Cancel the first task seen running once its benchmark has begun.
    let deadline = Instant::now() + Duration::from_secs(120);
    let (task, cell) = loop {
        assert!(
            Instant::now() < deadline,
            "no task ran: {:?}",
            active_tasks(&conf, d)
        );
        let running = active_tasks(&conf, d).into_iter().find_map(|l| {
            let (id, state) = l.split_once(' ')?;
            let cell: usize = id.split_once('_')?.1.parse().ok()?;
            let journal = d.join(format!("results/{}.json.journal.jsonl", IDS[cell]));
            // Begun: its first record journaled (the journal itself is created before the
            // engine the cell starts serves, and a cancel then leaves nothing measured).
            (state == "RUNNING" && support::children::journal_records(&journal) > 0)
                .then(|| (id.to_string(), cell))
        });
        if let Some(found) = running {
            break found;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    std::thread::sleep(Duration::from_millis(500));
    let out = Command::new("scancel")
        .env("SLURM_CONF", &conf)
        .arg(&task)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    wait_until_idle(&conf, d, Duration::from_secs(180));

    let out = slurm_runner(d, &conf, &["campaign", "status", "plan.toml"]);
    let status = text(&out);
    assert!(out.status.success(), "{status}");
    let line = status
        .lines()
        .find(|l| l.contains(&format!(" {} ", IDS[cell])))
        .unwrap();
    assert!(
        line.contains("failed"),
        "the cancelled cell is not failed:\n{status}"
    );
    assert!(
        status.contains(&format!(
            "log: {}",
            d.join(format!("results/logs/slurm-{task}.out")).display()
        )),
        "the cancelled task's log is not named:\n{status}"
    );
    assert_eq!(verified_lines(&status), 3, "{status}");

    // Collect refuses while a cell is missing its result.
    let out = slurm_runner(d, &conf, &["campaign", "collect", "plan.toml"]);
    assert_eq!(out.status.code(), Some(6), "{}", text(&out));
    assert!(text(&out).contains(IDS[cell]), "{}", text(&out));

    // Re-submitted alone, it completes.
    let out = slurm_submit(d, &conf, &["--only", "failed"]);
    assert!(out.status.success(), "{}", text(&out));
    let resubmitted =
        std::fs::read_to_string(d.join(format!("results/slurm/{}gpu.sbatch", cell % 2 + 1)))
            .unwrap();
    assert!(
        resubmitted.contains(&format!("#SBATCH --array={cell}\n")),
        "{resubmitted}"
    );
    wait_until_idle(&conf, d, Duration::from_secs(120));
    let out = slurm_runner(d, &conf, &["campaign", "status", "plan.toml"]);
    assert_eq!(verified_lines(&text(&out)), 4, "{}", text(&out));
    assert_one_verified_result_per_cell(d);
    // What the cancelled task measured is kept.
    let kept = d.join(format!("results/attempts/{0}.1.{0}.json", IDS[cell]));
    assert_eq!(statement(&kept)["predicate"]["run"]["complete"], false);
    collect_and_check(d);
}
