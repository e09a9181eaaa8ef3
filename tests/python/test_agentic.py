"""Agentic sessions, the prefix cache against its ideal and structured output (`result/v0.14`),
re-derived with no provebench code.

The definitions are public (docs/reference/agentic.md, docs/reference/metrics.md): a record's
`agent` places it in its session's tree (`agent`, `depth`, `parent`), `session` names the session
and `turn` the agent's turn; `cached_tokens` holds what a perfect prefix cache would have served
(`ideal`, at `block_tokens`) and what the server said it served (`server`). The summary's
`sessions` are over measured requests: a session is completed when every request of it completed,
its time runs from its first scheduled send to its last end; `prefix_cache` is Σ cached / Σ prompt
tokens of completed requests (the server's prompt count where it gave one); the intervals are batch
means (10 batches in schedule order; sessions in the order they started).

The real runner measures `runner sim --enable-prompt-tokens-details` with `--agentic`; this file
recomputes every new number with numpy, checks the session tree's shape against the generator's
settings, and checks that every request of a session named the same `x-session-id`.
"""

import json

import jsonschema
import numpy as np
import pytest

from conftest import check_current_and_valid, run_runner, statement_of
from test_speculative import completed_in_schedule_order, same_distribution
from test_telemetry import running_sim
from test_uncertainty import BATCHES, check_intervals, close, half_width

SETTINGS = ("turns=6,subagents=2,spawn_every=2,subagent_turns=2,system_tokens=64,task_tokens=48,"
            "output_tokens=8,tool_result_tokens=40,tool_result_stdev=6,tool_ms=3")
# 6 main turns; turns 2 and 4 spawn 2 subagents of 2 turns: 14 requests a session.
PER_SESSION = 6 + 2 * 2 * 2


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    d = tmp_path_factory.mktemp("agentic")
    with running_sim(d, "--ttft-ms", "2", "--itl-ms", "1", "--seed", "3",
                     "--enable-prompt-tokens-details") as target:
        run = run_runner("run", "--target", target, "--no-sign", "--out", str(d / "a.json"),
                         "--backend", "openai-completions", "--profile", "concurrent",
                         "--concurrency", "6", "--max-requests", str(PER_SESSION * 60),
                         "--agentic", SETTINGS, "--seed", "7", cwd=d)
        assert run.returncode == 0, run.stdout + run.stderr
    return statement_of(d / "a.json")


def test_the_document_is_of_this_version_and_valid_against_the_schema(result):
    check_current_and_valid({"agentic": result})


def test_each_session_is_the_declared_tree(result):
    [bench] = result["predicate"]["benchmarks"]
    w, records = bench["workload"], bench["records"]
    assert w["kind"] == "agentic" and w["session_header"] == "x-session-id"
    assert (w["sessions"], w["requests"]) == (60, PER_SESSION * 60)
    sessions = {}
    for i, s in enumerate(records["session"]):
        sessions.setdefault(s, []).append(i)
    assert len(sessions) == 60
    for s, idx in sessions.items():
        steps = [records["agent"][i] for i in idx]
        assert len(idx) == PER_SESSION
        main = [i for i, a in zip(idx, steps) if a["agent"] == 0]
        subs = [a for a in steps if a["agent"] > 0]
        assert len(main) == 6 and len(subs) == 8
        assert all(a["depth"] == 1 and a["parent"] == 0 for a in subs)
        # The main agent's prompt grows every turn; a turn after its last one's end.
        main.sort(key=lambda i: records["turn"][i])
        lengths = [records["input_tokens_server"][i] for i in main]
        assert lengths == sorted(lengths) and len(set(lengths)) == 6
        for a, b in zip(main, main[1:]):
            assert records["scheduled_us"][b] >= records["end_us"][a]


def test_sessions_and_depths_follow_from_the_records(result):
    [bench] = result["predicate"]["benchmarks"]
    records, summary = bench["records"], bench["summary"]
    n = len(records["phase"])
    prompt = [records["input_tokens_server"][i] if records["input_tokens_server"][i] is not None
              else records["input_tokens_client"][i] for i in range(n)]
    out = [records["output_tokens_server"][i] if records["output_tokens_server"][i] is not None
           else records["output_tokens_client"][i] for i in range(n)]
    sessions = {}
    for i in range(n):
        if records["phase"][i] != "measured":
            continue
        s = sessions.setdefault(records["session"][i], {"first": records["scheduled_us"][i], "last": 0,
                                                        "failed": False, "requests": 0, "in": 0, "out": 0})
        s["first"] = min(s["first"], records["scheduled_us"][i])
        s["last"] = max(s["last"], records["end_us"][i])
        s["requests"] += 1
        s["failed"] |= records["error"][i] is not None
        if records["error"][i] is None:
            s["in"] += prompt[i]
            s["out"] += out[i]
    done = sorted((s for s in sessions.values() if not s["failed"]), key=lambda s: s["first"])
    x = summary["sessions"]
    assert (x["sessions"], x["completed"], x["context_overflows"]) == (len(sessions), len(done), 0)
    times = [(s["last"] - s["first"]) / 1000 for s in done]
    same_distribution(x["session_time_ms"], times)
    assert close(x["requests_per_session"], np.mean([s["requests"] for s in done]))
    assert close(x["input_tokens_per_session"], np.mean([s["in"] for s in done]))
    assert close(x["output_tokens_per_session"], np.mean([s["out"] for s in done]))
    u = summary["uncertainty"]
    check_intervals(u["session_time_ms"], times, x["session_time_ms"], tail=False)
    order = completed_in_schedule_order(records)
    for d, row in enumerate(x["by_depth"]):
        assert row["depth"] == d
        ttft = [(records["first_token_us"][i] - records["scheduled_us"][i]) / 1000
                for i in order if records["agent"][i]["depth"] == d]
        assert row["completed"] == len(ttft)
        same_distribution(row["ttft_ms"], ttft)
        check_intervals(u["ttft_ms_by_depth"][d], ttft, row["ttft_ms"], tail=False)


def test_the_prefix_cache_shares_follow_from_the_records(result):
    [bench] = result["predicate"]["benchmarks"]
    records, summary = bench["records"], bench["summary"]
    order = completed_in_schedule_order(records)
    prompt = [records["input_tokens_server"][i] for i in order]
    ideal = [records["cached_tokens"][i]["ideal"] for i in order]
    server = [records["cached_tokens"][i]["server"] for i in order]
    p = summary["prefix_cache"]
    assert p["block_tokens"] == 16
    u = summary["uncertainty"]
    for name, cached in (("ideal", ideal), ("server", server)):
        share = p[name]
        assert (share["requests"], share["input_tokens"], share["cached_tokens"]) == \
            (len(order), sum(prompt), sum(cached))
        rate = sum(cached) / sum(prompt)
        assert close(share["hit_rate"], rate)
        parts = list(zip(cached, prompt))
        n = len(parts)
        batch = [parts[j * n // BATCHES:(j + 1) * n // BATCHES] for j in range(BATCHES)]
        hw = half_width([sum(a for a, _ in b) / sum(d for _, d in b) for b in batch])
        interval = u[f"prefix_cache_{name}_hit_rate"]
        assert close(interval["low"], rate - hw) and close(interval["high"], rate + hw)
    # A cache that never evicts serves what a perfect one would: the simulator's own count
    # equals the ideal the client counted, to the token.
    assert sum(server) == sum(ideal)
    # Whole blocks, never the last prompt token.
    assert all(c % 16 == 0 and c < n for c, n in zip(ideal, prompt))


# ---- Structured output, judged by the `jsonschema` package (Draft 2020-12) ----

SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "minLength": 4, "maxLength": 16},
    "age": {"type": "integer", "minimum": 18},
    "kind": {"enum": ["cat", "dog"]},
    "tags": {"type": "array", "items": {"type": "boolean"}, "minItems": 2},
}, "required": ["name", "age"], "additionalProperties": False}


@pytest.fixture(scope="module")
def structured(tmp_path_factory):
    d = tmp_path_factory.mktemp("structured")
    (d / "person.json").write_text(json.dumps(SCHEMA))
    with running_sim(d, "--ttft-ms", "1", "--itl-ms", "0.2", "--seed", "9",
                     "--invalid-json-fraction", "0.25") as target:
        run = run_runner("run", "--target", target, "--no-sign", "--out", str(d / "s.json"),
                         "--backend", "openai-chat", "--profile", "concurrent", "--concurrency", "4",
                         "--max-requests", "200", "--data", "prompt_tokens=24,output_tokens=64",
                         "--json-schema", str(d / "person.json"), cwd=d)
        assert run.returncode == 0, run.stdout + run.stderr
    return statement_of(d / "s.json")


def test_structured_output_is_judged_alike_by_an_independent_validator(structured):
    check_current_and_valid({"structured": structured})
    [bench] = structured["predicate"]["benchmarks"]
    records, summary = bench["records"], bench["summary"]
    schema = bench["workload"]["json_schema"]["schema"]
    assert schema == SCHEMA
    validator = jsonschema.Draft202012Validator(schema)
    order = completed_in_schedule_order(records)
    parsed = valid = 0
    flags = []
    for i in order:
        try:
            answer = json.loads(records["output_text"][i])
        except json.JSONDecodeError:
            flags.append(0)
            continue
        parsed += 1
        ok = validator.is_valid(answer)
        valid += ok
        flags.append(int(ok))
    x = summary["structured_output"]
    assert (x["requests"], x["parsed"], x["valid"]) == (len(order), parsed, valid)
    assert 20 < len(order) - valid < 80, "about a quarter cut short"
    assert close(x["valid_share"], valid / len(order))
    n = len(flags)
    batch = [flags[j * n // BATCHES:(j + 1) * n // BATCHES] for j in range(BATCHES)]
    hw = half_width([sum(b) / len(b) for b in batch])
    interval = summary["uncertainty"]["structured_valid_share"]
    assert close(interval["low"], valid / n - hw) and close(interval["high"], valid / n + hw)
