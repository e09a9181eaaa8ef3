"""The GPU proof (scripts/gpu-proof.sh) without a GPU: the bundle is made and checked for size, then
`--run` plays a scripted GPU through the fake NVML library with llama-server on the CPU, so every
step but the driver's own numbers runs here: the model writer, the recipe-launched engine, the
sweep with NVML telemetry, the independent energy reader (nvidia-ml-py on the same library), the
idle benchmark, the runner benchmark, verification and every check of the summary."""

import base64
import gzip
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, RUNNER


def llama_server():
    env_file = ROOT / "build" / "llama-server.env"
    values = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line)
    return os.environ.get("LLAMA_SERVER_BIN", values["LLAMA_SERVER_BIN"])


@pytest.fixture(scope="module")
def proof(tmp_path_factory, fake_nvml):
    d = tmp_path_factory.mktemp("gpu-proof")
    lib = fake_nvml
    # The dev runner is larger than the release one and xz -1 packs less than -9, so a bundle
    # made this way that fits, fits.
    bundle = subprocess.run([str(ROOT / "scripts" / "gpu-proof.sh"), "--bundle", str(d / "bundle")],
                            capture_output=True, text=True,
                            env={**os.environ, "RUNNER_BIN": RUNNER, "PROOF_XZ_LEVEL": "1"})
    assert bundle.returncode == 0, bundle.stdout + bundle.stderr
    env = {**os.environ, "PYTHON": sys.executable, "PROOF_SECONDS": "2",
           "PROOF_DATA": "prompt_tokens=32,output_tokens=16", "PROOF_BENCH_REQUESTS": "50", "BENCH_SMOKE": "1",
           "PROOF_CEILING_MAX": "1500", "PROOF_CEILING_SECONDS": "1",
           "PROOF_MODEL_ARGS": "--hidden 128 --layers 2 --ff 256 --heads 4 --kv-heads 2",
           "PROOF_SPEC_REQUESTS": "8",
           "PROOF_CAPACITY_DATA": "prompt_tokens=32,output_tokens=4", "PROOF_CAPACITY_SECONDS": "2",
           "PROOF_IDLE_SECONDS": "3"}
    run = subprocess.run([str(d / "bundle" / "gpu-proof.sh"), "--run", "--out", str(d / "out"),
                          "--fake-nvml", str(lib), "--llama-server", llama_server()],
                         capture_output=True, text=True, env=env, timeout=600)
    return d, bundle, run


def test_the_bundle_fits_in_what_a_gpu_host_may_be_sent(proof):
    d, bundle, _ = proof
    size = sum(f.stat().st_size for f in (d / "bundle").rglob("*") if f.is_file())
    assert size <= 60 * 2**20, size
    names = {f.name for f in (d / "bundle").iterdir()}
    assert {"runner.xz", "llama-server.tar.xz", "vocab.gguf", "gpu-proof.sh", "gpu-proof-check.py",
            "gpu-proof-model.py", "bench-runner.sh", "bench-client-ceiling.sh", "lib.sh", "MANIFEST.sha256", "wheels", "wasm.tar.xz"} <= names, names
    listing = subprocess.run(["tar", "-tJf", str(d / "bundle" / "llama-server.tar.xz")],
                             capture_output=True, text=True).stdout.split()
    for lib in ("llama-server/llama-server", "llama-server/libggml-vulkan.so.0", "llama-server/libvulkan.so.1"):
        assert lib in listing, listing


def test_every_check_passes_on_the_scripted_gpu(proof):
    d, _, run = proof
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    summary = json.loads((d / "out" / "summary.json").read_text())
    assert summary["ok"], json.dumps(summary["checks"], indent=1)
    names = [c["check"] for c in summary["checks"]]
    assert names == ["engine on the GPU", "NVML columns real", "energy = the driver's counter (2 %)",
                     "energy = power integrated (5 %)", "gpu_idle right", "runner cost measured",
                     "client ceiling measured", "within 8 minutes", "GPU UUID and driver", "agentic sessions",
                     "model named", "speculative decoding", "capacity under an SLO", "attempt log"], names
    assert summary["driver"] == "580.00.00-fake"
    # Five benchmarks in the sweep: synchronous, throughput and three rates between. On this
    # 2-core host the "GPU" is llama-server on a CPU shared with the other suites, and its
    # 2-second throughput benchmark can serve fewer requests a second than one at a time;
    # the runner then places no rates between and says so with a run-wide `saturated` flag (a
    # real GPU serves 16 streams faster than one). A rate benchmark that fell short of its own
    # target carries its own `saturated` flag, which says nothing about the sweep's length.
    # Either way every benchmark's energy is checked.
    statement = json.loads(base64.b64decode(json.loads((d / "out" / "result.json").read_text())["payload"]))
    saturated = any(f["code"] == "saturated" and f.get("benchmark") is None
                    for f in statement["predicate"]["validity"])
    assert len(summary["benchmarks"]) == (2 if saturated else 5), (saturated, len(summary["benchmarks"]))
    for b in summary["benchmarks"]:
        assert b["energy_j"] > 0 and abs(b["energy_j"] - b["driver_counter_j"]) <= max(0.02 * b["energy_j"], 3)


def test_the_outputs_are_a_verifiable_result_and_its_key(proof):
    d, _, _ = proof
    out = d / "out"
    assert {"result.json", "proof.pub", "summary.json", "summary.md", "proof.log", "extras.tar.gz", "attempts.json"} <= \
        {f.name for f in out.iterdir()}
    # Every run was counted in the proof key's log, and the site published them all.
    attempts = json.loads((out / "attempts.json").read_text())
    assert attempts["tally"]["registered"] == 5 and attempts["tally"]["completed"] == 5, attempts
    assert sorted(attempts["published"].values()) == \
        ["results/agentic.json", "results/capacity.json", "results/idle.json", "results/result.json",
         "results/speculative.json"], attempts
    assert attempts["not_published"] == []
    verify = subprocess.run([RUNNER, "verify", "--key", str(out / "proof.pub"), str(out / "result.json")],
                            capture_output=True, text=True)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    statement = json.loads(base64.b64decode(json.loads((out / "result.json").read_text())["payload"]))
    engine = statement["predicate"]["engine"]
    assert engine["launch"]["recipe"] == "llama.cpp", engine.get("launch")
    assert "--n-gpu-layers" in engine["launch"]["argv"], engine["launch"]["argv"]
    # The model is named by its file's name and sha256, not by the temporary path it was served from.
    model = statement["predicate"]["model"]
    assert model["id"] == "proof-random-llama.gguf", model
    summary = json.loads((out / "summary.json").read_text())
    [named] = [c for c in summary["checks"] if c["check"] == "model named"]
    assert model["digest"]["sha256"] == named["figures"]["sha256"], (model, named)
    # The speculative run: the model drafting for itself, on the shipped real text.
    spec = json.loads(base64.b64decode(json.loads((out / "speculative.json").read_text())["payload"]))
    launch = spec["predicate"]["engine"]["launch"]
    assert launch["speculative"]["method"] == "draft-simple", launch
    assert launch["speculative"]["model"].endswith("/proof-random-llama.gguf"), launch
    assert spec["predicate"]["benchmarks"][0]["workload"]["path"] == "real-text"
    capacity = json.loads(base64.b64decode(json.loads((out / "capacity.json").read_text())["payload"]))
    assert capacity["predicate"]["capacity"]["search"] is not None


def test_a_failed_check_fails_the_proof(proof, tmp_path):
    """The checker is not a formality: an energy log that disagrees with the result fails it."""
    d, _, _ = proof
    extras = subprocess.run(["tar", "-xzf", str(d / "out" / "extras.tar.gz"), "-C", str(tmp_path)])
    assert extras.returncode == 0
    log = tmp_path / "energy.log"
    lines = log.read_text().splitlines()
    scaled = [l if l.startswith("#") else " ".join([l.split()[0]] + [str(int(int(x) * 1.05)) for x in l.split()[1:]])
              for l in lines]
    log.write_text("\n".join(scaled) + "\n")
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu-proof-check.py"), "check",
                            "--result", str(d / "out" / "result.json"), "--idle", str(tmp_path / "idle.json"),
                            "--energy-log", str(log), "--engine-log", "/dev/null",
                            "--bench", str(tmp_path / "bench-runner.txt"), "--smi", str(tmp_path / "smi.csv"),
                            "--seconds", "1", "--cpu", "--out", str(tmp_path / "summary")],
                           capture_output=True, text=True)
    assert check.returncode == 1, check.stdout + check.stderr
    summary = json.loads((tmp_path / "summary" / "summary.json").read_text())
    failed = [c["check"] for c in summary["checks"] if not c["ok"]]
    assert failed == ["energy = the driver's counter (2 %)"], failed

    # A site whose log counts a third attempt (one the kit did not publish) fails the log's check.
    verdict = json.loads((tmp_path / "verify-site.json").read_text())
    verdict["logs"][0]["tally"]["registered"] = 3
    (tmp_path / "verify-site.json").write_text(json.dumps(verdict))
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu-proof-check.py"), "check",
                            "--result", str(d / "out" / "result.json"), "--idle", str(tmp_path / "idle.json"),
                            "--energy-log", str(tmp_path / "energy.log"), "--engine-log", "/dev/null",
                            "--bench", str(tmp_path / "bench-runner.txt"), "--smi", str(tmp_path / "smi.csv"),
                            "--seconds", "1", "--cpu", "--site-verdict", str(tmp_path / "verify-site.json"),
                            "--out", str(tmp_path / "summary-log")], capture_output=True, text=True)
    summary = json.loads((tmp_path / "summary-log" / "summary.json").read_text())
    assert "attempt log" in [c["check"] for c in summary["checks"] if not c["ok"]], summary["checks"]


def test_on_a_gpu_a_capacity_search_must_bracket_its_answer(proof, tmp_path):
    """On a CPU shared with the other suites the search need only have searched (a step run and
    judged); on a GPU it must bracket an answer (a load that passed and one above it that did not)
    over two steps or more. The CPU run's search, its bracket taken away, passes the check with
    --cpu and fails it without; so does its first step alone, undecided, as a contended CPU left
    it once; and no step at all fails both."""
    d, _, _ = proof
    subprocess.run(["tar", "-xzf", str(d / "out" / "extras.tar.gz"), "-C", str(tmp_path)], check=True)
    original = json.loads((d / "out" / "capacity.json").read_text())

    def edited(edit):
        envelope = dict(original)
        statement = json.loads(base64.b64decode(envelope["payload"]))
        edit(statement["predicate"])
        envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
        (tmp_path / "capacity.json").write_text(json.dumps(envelope))

    def unbracketed(p):
        p["capacity"]["failed"] = p["capacity"]["undecided"] = None

    def first_step_undecided(p):
        p["benchmarks"] = [b for b in p["benchmarks"] if b.get("capacity_step") is None] + \
            [next(b for b in p["benchmarks"] if b.get("capacity_step") is not None)]
        p["capacity"].update(passed=None, failed=None, undecided=1.0, converged=False)

    def no_step(p):
        p["benchmarks"] = [b for b in p["benchmarks"] if b.get("capacity_step") is None]

    def failed(*extra):
        out = tmp_path / f"summary{len(extra)}"
        subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu-proof-check.py"), "check",
                        "--result", str(d / "out" / "result.json"), "--idle", str(tmp_path / "idle.json"),
                        "--energy-log", str(tmp_path / "energy.log"), "--engine-log", "/dev/null",
                        "--bench", str(tmp_path / "bench-runner.txt"), "--smi", str(tmp_path / "smi.csv"),
                        "--seconds", "1", "--capacity", str(tmp_path / "capacity.json"), "--out", str(out),
                        *extra], capture_output=True, text=True)
        summary = json.loads((out / "summary.json").read_text())
        return [c["check"] for c in summary["checks"] if not c["ok"]]

    for edit in (unbracketed, first_step_undecided):
        edited(edit)
        assert "capacity under an SLO" not in failed("--cpu"), edit.__name__
        assert "capacity under an SLO" in failed(), edit.__name__
    edited(no_step)
    assert "capacity under an SLO" in failed("--cpu")


def test_a_run_past_its_deadline_skips_its_steps_and_says_so(proof, fake_nvml, tmp_path):
    """The kit keeps within PROOF_DEADLINE_S, as a lent GPU host's time limit needs: with no time
    left every step is skipped, named in the log, and the run fails as a step that could not run
    (exit 2) instead of running past a limit that would return nothing."""
    d, _, _ = proof
    env = {**os.environ, "PYTHON": sys.executable, "PROOF_DEADLINE_S": "0",
           "PROOF_MODEL_ARGS": "--hidden 128 --layers 2 --ff 256 --heads 4 --kv-heads 2"}
    run = subprocess.run([str(d / "bundle" / "gpu-proof.sh"), "--run", "--out", str(tmp_path / "out"),
                          "--fake-nvml", str(fake_nvml), "--llama-server", llama_server()],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 2, run.stdout[-3000:] + run.stderr[-3000:]
    log = (tmp_path / "out" / "proof.log").read_text()
    for step in ("the sweep", "the idle benchmark", "the agentic run", "the speculative run",
                 "the capacity search", "bench-runner.sh", "bench-client-ceiling.sh"):
        assert f"out of time: {step} skipped" in log, (step, log[-3000:])


H100 = ROOT / "tests" / "fixtures" / "gpu-proof" / "h100-2026-11-27"


def test_the_h100_proof_verifies_and_its_summary_follows_from_what_it_kept(tmp_path):
    """The proof run on a real H100 (driver 580.159.04): its results verify under its key, and the
    checker, run again on the inputs kept beside them, writes the committed summary again."""
    verify = subprocess.run([RUNNER, "verify", "--key", str(H100 / "proof.pub"), str(H100 / "result.json"),
                             str(H100 / "idle.json")], capture_output=True, text=True)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    kept = json.loads((H100 / "summary.json").read_text())
    assert kept["ok"] and kept["gpu"] == "NVIDIA H100 80GB HBM3" and kept["driver"] == "580.159.04"
    engine_log = tmp_path / "engine.log"
    engine_log.write_bytes(gzip.decompress((H100 / "result.json.engine.log.gz").read_bytes()))
    [gpu_check] = [c for c in kept["checks"] if c["check"] == "engine on the GPU"]
    model_bytes = round(gpu_check["figures"]["model_mib"] * 2**20)
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu-proof-check.py"), "check",
                            "--result", str(H100 / "result.json"), "--idle", str(H100 / "idle.json"),
                            "--energy-log", str(H100 / "energy.log"), "--engine-log", str(engine_log),
                            "--bench", str(H100 / "bench-runner.txt"), "--smi", str(H100 / "smi.csv"),
                            "--devices", str(H100 / "llama-server.devices.txt"), "--seconds", str(kept["seconds"]),
                            "--model-bytes", str(model_bytes), "--out", str(tmp_path / "again")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    again = json.loads((tmp_path / "again" / "summary.json").read_text())
    assert again == kept
    assert (tmp_path / "again" / "summary.md").read_text() == (H100 / "summary.md").read_text()
