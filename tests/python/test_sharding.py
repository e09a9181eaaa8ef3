"""Sharded runs and their merge (`result/v0.5`) checked with no provebench code.

Two clients split one schedule (`runner run --shard i/2 --start-at T`) against `runner sim`;
`runner merge` combines them. The merged document must hold exactly the union of the shards'
record columns in schedule order (each shard listed with its file's sha256), its request
counts and TTFT mean must follow from those columns (definitions: schemas/src/metrics.rs),
and every document must validate against the checked-in schema.
"""

import base64
import hashlib
import json
import os
import subprocess
import time

import pytest

from conftest import PREDICATE_TYPE, RUNNER, run_runner, validator
from test_telemetry import running_sim


def statement_of(path):
    return json.loads(base64.b64decode(json.loads(path.read_text())["payload"]))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("sharding")
    assert run_runner("keygen", "lab", cwd=d).returncode == 0
    with running_sim(d, "--ttft-ms", "5", "--itl-ms", "1") as target:
        start = f"{time.time() + 4:.6f}"
        common = ["run", "--target", target, "--profile", "poisson", "--rate", "20",
                  "--max-requests", "30", "--data", "prompt_tokens=16,output_tokens=4", "--warmup-requests", "3",
                  "--key", "lab.key", "--start-at", start]
        clients = [subprocess.Popen([RUNNER, *common, "--shard", f"{i}/2", "--out", f"shard-{i}.json"], cwd=d,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    env={**os.environ, "RUST_LOG": "warn"})
                   for i in range(2)]
        for c in clients:
            out, _ = c.communicate(timeout=60)
            assert c.returncode == 0, out
    merge = run_runner("merge", "shard-1.json", "shard-0.json", "--trust-key", "lab.pub", "--key", "lab.key",
                       "--out", "merged.json", cwd=d)
    assert merge.returncode == 0, merge.stdout + merge.stderr
    return d


def test_shards_and_the_merge_validate_against_the_checked_in_schema(runs):
    for name in ("shard-0.json", "shard-1.json", "merged.json"):
        statement = statement_of(runs / name)
        assert statement["predicateType"] == PREDICATE_TYPE
        validator("statement.schema.json").validate(statement)


def test_the_merge_is_the_union_of_the_shards_in_schedule_order(runs):
    shards = [statement_of(runs / f"shard-{i}.json") for i in range(2)]
    merged = statement_of(runs / "merged.json")["predicate"]
    for i, s in enumerate(shards):
        assert s["predicate"]["shard"]["index"] == i and s["predicate"]["shard"]["count"] == 2
    listed = merged["shards"]
    assert [s["index"] for s in listed] == [0, 1]
    for s in listed:
        digest = hashlib.sha256((runs / f"shard-{s['index']}.json").read_bytes()).hexdigest()
        assert s["sha256"] == digest

    columns = [s["predicate"]["benchmarks"][0]["records"] for s in shards]
    rows = [dict(zip(c, values)) for c in columns for values in zip(*c.values())]
    rows.sort(key=lambda r: (r["scheduled_us"], r["sent_us"]))
    [bench] = merged["benchmarks"]
    records = bench["records"]
    assert len(records["phase"]) == 30
    for field in ("scheduled_us", "sent_us", "first_token_us", "end_us", "token_gaps", "phase"):
        assert records[field] == [r[field] for r in rows], field
    # One client's phases: the first 3 of the whole schedule are warm-up.
    assert records["phase"][:4] == ["warmup"] * 3 + ["measured"]

    measured = [i for i, p in enumerate(records["phase"]) if p == "measured"]
    completed = [i for i in measured if records["error"][i] is None]
    summary = bench["summary"]
    assert summary["requests"]["measured"] == len(measured)
    assert summary["requests"]["completed"] == len(completed)
    ttft = [(records["first_token_us"][i] - records["scheduled_us"][i]) / 1000 for i in completed]
    assert summary["ttft_ms"]["mean"] == pytest.approx(sum(ttft) / len(ttft), rel=1e-12)


def test_each_client_counts_what_stamped_its_tokens_and_the_merge_adds_them(runs):
    shards = [statement_of(runs / f"shard-{i}.json")["predicate"]["benchmarks"][0] for i in range(2)]
    [merged] = statement_of(runs / "merged.json")["predicate"]["benchmarks"]
    for b in (*shards, merged):
        t = b["token_timestamps"]
        # Every token event the records hold, stamped once: by the kernel on Linux loopback.
        assert t["kernel"] + t["read"] == sum(b["records"]["output_tokens_client"])
        assert t["kernel"] > 0 and t["read"] == 0
        assert 0 <= t["shared"] <= t["kernel"]
    for key in ("kernel", "read", "shared"):
        assert merged["token_timestamps"][key] == sum(s["token_timestamps"][key] for s in shards)
