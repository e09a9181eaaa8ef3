"""The runner in a pipeline, read as a pipeline reads it: the worked example (scripts/ci-gate.sh)
records a baseline from the simulator, passes against the same simulator, and fails once the
simulator decodes a quarter slower (`make test` runs this file alone, before the Node, Chromium and
other Python tests, whose load would widen the intervals; the runner's own gate test, run alone,
fails a 10 % slower decode); every `--json` outcome (run, verify, diff, gate, and a run that
cannot reach its server) validates against the committed schemas/json/cli-output.schema.json,
and the gate's verdict is re-derived here from the comparisons it printed."""

import json
import os
import subprocess

import pytest

from conftest import ROOT, RUNNER, run_runner, validator

# A steady server with known noise (as the runner's own reproduce and gate tests use), and a
# run long enough for the intervals, with its warm-up left out.
SIM = "--ttft-ms 5 --ttft-noise-ms 5 --itl-noise-ms 1 --seed 11 --max-batch 64"
BENCH = ("--profile constant --rate 200 --max-requests 900 --warmup-requests 200 "
         "--data prompt_tokens=16,output_tokens=8 --seed 42")


def pipeline(d, out, sim_args, *extra):
    env = {**os.environ, "RUNNER": RUNNER, "SIM_ARGS": sim_args, "BENCH_ARGS": BENCH, "RUST_LOG": "warn"}
    return subprocess.run([str(ROOT / "scripts" / "ci-gate.sh"), "--baseline", str(d / "bench" / "baseline.json"),
                           "--keys", str(d / "keys.json"), "--key", str(d / "ci.key"), "--out", str(d / out), *extra],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def ci(tmp_path_factory):
    d = tmp_path_factory.mktemp("ci-gate")
    assert run_runner("keygen", "ci", cwd=d).returncode == 0
    assert run_runner("trust", "--keys", "keys.json", "ci.pub", cwd=d).returncode == 0
    recorded = pipeline(d, "record", f"{SIM} --itl-ms 4", "--record")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    same = pipeline(d, "same", f"{SIM} --itl-ms 4")
    slower = pipeline(d, "slower", f"{SIM} --itl-ms 5")
    return d, same, slower


def outcome(path):
    o = json.loads(path.read_text())
    validator("cli-output.schema.json").validate(o)
    return o


def test_the_same_server_passes_the_gate_and_the_site_is_published(ci):
    d, same, _ = ci
    assert same.returncode == 0, same.stdout + same.stderr
    gate = outcome(d / "same" / "gate.json")
    assert gate["exit"] == {"code": 0, "reason": "ok"}
    assert gate["baseline"].endswith("baseline.json")
    assert not [c for c in gate["comparisons"] if c.get("gate") == "fail"]
    run = outcome(d / "same" / "run.json")
    assert run["command"] == "run" and run["result"].endswith("candidate.json")
    assert (d / "same" / "site" / "index.html").is_file()
    assert (d / "same" / "site" / "results" / "candidate.json").read_bytes() == (d / "same" / "candidate.json").read_bytes()


def test_a_slower_server_fails_it_naming_tpot_and_itl(ci):
    d, _, slower = ci
    assert slower.returncode == 10, slower.stdout + slower.stderr
    gate = outcome(d / "slower" / "gate.json")
    assert gate["exit"]["reason"] == "regressed" and gate["exit"]["code"] == 10
    failed = {c["metric"] for c in gate["comparisons"] if c.get("gate") == "fail"}
    assert {"tpot:mean", "itl:mean"} <= failed, failed
    assert "tpot:mean" in gate["exit"]["message"]


def test_the_gate_rule_re_derived_from_what_it_printed(ci):
    """A metric fails exactly when its (widened) interval of B − A lies wholly beyond the allowed
    regression on the worse side: below −allowed × |A| for throughputs, above it for latencies."""
    d, _, _ = ci
    for run in ("same", "slower"):
        gate = outcome(d / run / "gate.json")
        allowed = gate["max_regression"]
        judged = 0
        for c in gate["comparisons"]:
            if "interval" not in c or c["gate"] == "not_judged":
                assert c["gate"] == "not_judged", c
                continue
            judged += 1
            low, high = c["interval"]
            assert low <= c["change"] <= high, c
            higher_is_better = c["metric"] in ("request_throughput", "output_throughput", "goodput")
            bound = allowed * abs(c["a"])
            beyond = high < -bound if higher_is_better else low > bound
            assert c["gate"] == ("fail" if beyond else "pass"), c
        assert judged >= 8, gate


def test_every_json_outcome_validates(ci, tmp_path):
    d, _, _ = ci
    baseline, candidate = d / "bench" / "baseline.json", d / "slower" / "candidate.json"
    verify = run_runner("verify", str(baseline), str(candidate), "--keys", str(d / "keys.json"), "--json", cwd=tmp_path)
    assert verify.returncode == 0, verify.stderr
    v = json.loads(verify.stdout)
    validator("cli-output.schema.json").validate(v)
    assert [f["verdict"]["ok"] for f in v["files"]] == [True, True]

    diff = run_runner("diff", str(baseline), str(candidate), "--out", "diff", "--keys", str(d / "keys.json"),
                      "--json", cwd=tmp_path)
    assert diff.returncode == 0, diff.stderr
    o = json.loads(diff.stdout)
    validator("cli-output.schema.json").validate(o)
    tpot = [c for c in o["comparisons"] if c["metric"] == "tpot:mean"]
    assert tpot and tpot[0]["verdict"] == "worse", tpot
    assert (tmp_path / "diff" / "diff.md").is_file()

    unreachable = run_runner("run", "--target", "http://127.0.0.1:1", "--max-requests", "3", "--no-sign",
                             "--out", "r.json", "--json", cwd=tmp_path)
    assert unreachable.returncode == 9, unreachable.stderr
    o = json.loads(unreachable.stdout)
    validator("cli-output.schema.json").validate(o)
    assert o["exit"]["reason"] == "unreachable" and "connection refused" in o["exit"]["message"]
    assert not (tmp_path / "r.json").exists()
