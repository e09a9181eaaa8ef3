"""Shared-prefix and multi-turn summaries (`result/v0.4`) re-derived with no provebench code.

`summary.by_prefix_group` and `summary.by_turn` are what the runner says each prefix group
and each turn of its conversations saw. Their definitions are public (schemas/src/breakdown.rs):
measured requests grouped by the record's `prefix_group` or `turn`; TTFT = first token −
scheduled send, over completed requests, as ms; percentiles interpolate linearly between
closest ranks (numpy's default); the mean prompt length uses the server's usage, else the
client's count. This file recomputes them from the record columns and compares.

The documents come from the real runner against `runner sim` with a prefill cost, so that
the prefix cache the simulator keeps shows: later turns and shared prefixes are faster.
"""

import base64
import json

import pytest

from conftest import PREDICATE_TYPE, run_runner, validator
from test_telemetry import running_sim


def percentile(sorted_values, p):
    rank = p / 100 * (len(sorted_values) - 1)
    lo = int(rank)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (rank - lo)


def regroup(records, key):
    """{value of `key`: (measured, completed, input tokens, TTFT ms)} over measured requests."""
    groups = {}
    for i, phase in enumerate(records["phase"]):
        if phase != "measured":
            continue
        g = groups.setdefault(records[key][i], [0, 0, [], []])
        g[0] += 1
        if records["error"][i] is None:
            g[1] += 1
            server = records["input_tokens_server"][i]
            g[2].append(server if server is not None else records["input_tokens_client"][i] or 0)
            first = records["first_token_us"][i]
            if first is not None:
                g[3].append(max(first - records["scheduled_us"][i], 0) / 1000)
    return groups


def check_distribution(stated, sample):
    values = sorted(sample)
    assert stated["count"] == len(values)
    for field, exact in (("mean", sum(sample) / len(sample)), ("median", percentile(values, 50)),
                         ("p99", percentile(values, 99)), ("min", values[0]), ("max", values[-1])):
        assert stated[field] == pytest.approx(exact, rel=1e-12, abs=1e-9), field


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    d = tmp_path_factory.mktemp("workloads")
    with running_sim(d, "--ttft-ms", "5", "--prefill-us-per-token", "50", "--itl-ms", "2") as url:
        target = ["--target", url, "--no-sign"]
        runs = {
            "prefix": ["--data", "prompt_tokens=512,output_tokens=4,prefix_tokens=384,prefix_groups=3",
                       "--profile", "concurrent", "--concurrency", "2", "--max-requests", "18", "--warmup-requests", "2"],
            "sessions": ["--backend", "openai-chat", "--sessions", "turns=3", "--data", "prompt_tokens=256,output_tokens=8",
                         "--profile", "concurrent", "--concurrency", "3", "--max-requests", "15"],
        }
        for name, args in runs.items():
            run = run_runner("run", *target, "--out", str(d / f"{name}.json"), *args, cwd=d)
            assert run.returncode == 0, run.stdout + run.stderr
    return {name: json.loads(base64.b64decode(json.loads((d / f"{name}.json").read_text())["payload"]))
            for name in runs}


def test_the_documents_validate_against_the_checked_in_schema(documents):
    for statement in documents.values():
        assert statement["predicateType"] == PREDICATE_TYPE
        validator("statement.schema.json").validate(statement)


def test_ttft_by_prefix_group_follows_from_the_records(documents):
    [bench] = documents["prefix"]["predicate"]["benchmarks"]
    groups = regroup(bench["records"], "prefix_group")
    stated = bench["summary"]["by_prefix_group"]
    assert [g["group"] for g in stated] == sorted(groups) == [0, 1, 2]
    # One interval entry a group, in the same order; 6 requests a group are too few for one.
    assert bench["summary"]["uncertainty"]["ttft_ms_by_prefix_group"] == [None, None, None]
    for g in stated:
        measured, completed, _, ttft = groups[g["group"]]
        assert (g["requests"], g["completed"]) == (measured, completed)
        check_distribution(g["ttft_ms"], ttft)


def test_ttft_and_prompt_length_by_turn_follow_from_the_records(documents):
    [bench] = documents["sessions"]["predicate"]["benchmarks"]
    records = bench["records"]
    turns = regroup(records, "turn")
    stated = bench["summary"]["by_turn"]
    assert [t["turn"] for t in stated] == [1, 2, 3]
    assert bench["summary"]["uncertainty"]["ttft_ms_by_turn"] == [None, None, None]
    for t in stated:
        measured, completed, tokens, ttft = turns[t["turn"]]
        assert (t["requests"], t["completed"]) == (measured, completed)
        assert t["input_tokens_mean"] == pytest.approx(sum(tokens) / len(tokens), rel=1e-12)
        check_distribution(t["ttft_ms"], ttft)
    # The conversation so far: turn k carries k - 1 earlier messages and answers.
    assert [t["input_tokens_mean"] for t in stated] == [256, 256 + 8 + 256, 2 * (256 + 8) + 256]
    # Every turn of a conversation is its own record, in order, once.
    pairs = sorted(zip(records["session"], records["turn"]))
    assert pairs == [(s, k) for s in range(5) for k in (1, 2, 3)]
    # Later turns find the conversation so far in the simulator's prefix cache: a request can
    # be late for reasons of the machine, never early, so one answered sooner than the
    # simulator prefills its whole prompt (5 ms + 50 us a token) proves the cache held the rest.
    for t in stated[1:]:
        floor_ms = 5 + 0.05 * t["input_tokens_mean"]
        assert t["ttft_ms"]["min"] < floor_ms, (t["turn"], t["ttft_ms"], floor_ms)
