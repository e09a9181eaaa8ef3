"""Tool calls (`result/v0.15`) judged and graded with no provebench code.

The definitions are public (docs/reference/tool-calls.md): a benchmark's record keeps the calls
its answer made (`tool_calls`: name and arguments as streamed); a call is valid when it names a
function the workload's `tools` offered and its arguments parse and match that function's
`parameters`; `tool_calls.valid_share` is valid / calls over completed requests, with a
batch-means interval (10 batches of requests in schedule order, Σ valid / Σ calls per batch).
An accuracy suite graded `tool_call` follows BFCL's AST checker (test_accuracy.ast_mark).

The real runner measures `runner sim --malformed-tool-call-fraction` with `--tools`; the calls
are judged again by the `jsonschema` package (Draft 2020-12), and the shipped suite
`builtin:tool-calls` is regraded by this file's own BFCL rules.
"""

import json

import jsonschema
import pytest

from conftest import check_current_and_valid, run_runner, statement_of
from test_accuracy import ast_mark, check
from test_speculative import completed_in_schedule_order
from test_telemetry import running_sim
from test_uncertainty import BATCHES, close, half_width

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "minLength": 4},
                                         "unit": {"enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}},
    {"type": "function", "function": {"name": "add", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "number"}},
        "required": ["a", "b"], "additionalProperties": False}}},
]


def measured(d, backend, *extra):
    (d / "tools.json").write_text(json.dumps(TOOLS))
    with running_sim(d, "--ttft-ms", "1", "--itl-ms", "0.2", "--seed", "5",
                     "--malformed-tool-call-fraction", "0.3") as target:
        run = run_runner("run", "--target", target, "--no-sign", "--out", str(d / "t.json"),
                         "--backend", backend, "--profile", "concurrent", "--concurrency", "4",
                         "--max-requests", "200", "--data", "prompt_tokens=24,output_tokens=64",
                         "--tools", str(d / "tools.json"), *extra, cwd=d)
        assert run.returncode == 0, run.stdout + run.stderr
    return statement_of(d / "t.json")


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return measured(tmp_path_factory.mktemp("tools"), "openai-chat",
                    "--accuracy", "builtin:tool-calls", "--accuracy-during-load", "5%")


@pytest.fixture(scope="module")
def responses(tmp_path_factory):
    return measured(tmp_path_factory.mktemp("responses"), "openai-responses")


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_every_call_is_judged_alike_by_an_independent_validator(api, request):
    st = request.getfixturevalue("result" if api == "chat" else "responses")
    check_current_and_valid({"tools": st})
    [bench] = st["predicate"]["benchmarks"]
    records, summary = bench["records"], bench["summary"]
    offered = {t["function"]["name"]: t["function"]["parameters"] for t in bench["workload"]["tools"]["tools"]}
    assert bench["workload"]["tools"]["tools"] == TOOLS
    order = completed_in_schedule_order(records)
    called = calls = parsed = valid = 0
    parts = []
    for i in order:
        made = records["tool_calls"][i]
        good = 0
        for c in made:
            try:
                args = json.loads(c["arguments"])
            except ValueError:
                continue
            parsed += 1
            schema = offered.get(c["name"])
            good += schema is not None and jsonschema.Draft202012Validator(schema).is_valid(args)
        called += bool(made)
        calls += len(made)
        valid += good
        parts.append((good, len(made)))
    x = summary["tool_calls"]
    assert (x["requests"], x["called"], x["calls"], x["parsed"], x["valid"]) == (
        len(order), called, calls, parsed, valid)
    assert called == calls == len(order) == 200, "the simulator calls once an answer"
    assert 30 < calls - valid < 100, "about 30 % malformed"
    assert close(x["valid_share"], valid / calls)
    n = len(parts)
    batches = [parts[j * n // BATCHES:(j + 1) * n // BATCHES] for j in range(BATCHES)]
    hw = half_width([sum(g for g, _ in b) / sum(c for _, c in b) for b in batches])
    interval = summary["uncertainty"]["tool_call_valid_share"]
    share = valid / calls
    assert close(interval["low"], share - hw) and close(interval["high"], share + hw)
    # Every piece of a call is a timed token, as many as the server counted.
    for i in order:
        assert records["output_tokens_client"][i] == records["output_tokens_server"][i]


def test_the_shipped_suite_is_regraded_by_bfcl_rules(result):
    fresh = check(result)
    (score,) = fresh
    assert score["rule"] == "ast" and score["total"] == 16
    # The simulator calls with arguments built from the schema, not from the question.
    assert score["unparsed"] == 0 and score["correct"] < 16


def test_bfcl_rules_on_hand_written_cases():
    gold = json.dumps([{"f": {"city": ["Paris"], "n": [3], "x": [1.5, ""]}}])
    call = lambda args: json.dumps([{"name": "f", "arguments": json.dumps(args)}])
    assert ast_mark(call({"city": "PARIS", "n": 3}), gold) == "correct"
    assert ast_mark(call({"city": "paris", "n": 3, "x": 1.5}), gold) == "correct"
    assert ast_mark(call({"city": "paris", "n": 3.0}), gold) == "wrong"
    assert ast_mark(call({"city": "paris"}), gold) == "wrong"
    assert ast_mark(call({"city": "paris", "n": 3, "y": 1}), gold) == "wrong"
    assert ast_mark("Paris is sunny.", gold) == "unparsed"
    assert ast_mark(json.dumps([{"name": "f", "arguments": '{"city": '}]), gold) == "wrong"
    # Irrelevance (gold []): calling nothing is right, any call wrong.
    assert ast_mark("No tool fits.", "[]") == "correct"
    assert ast_mark("[]", "[]") == "correct"
    assert ast_mark(call({"city": "paris"}), "[]") == "wrong"
