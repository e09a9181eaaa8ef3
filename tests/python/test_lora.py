"""LoRA adapters (`result/v0.16`) recomputed with no provebench code.

The definitions are public (docs/reference/metrics.md, docs/reference/lora.md): each record
keeps the adapter its request's `model` named (`adapter`); the summary's `by_adapter` gives,
per adapter in the order of their names, its measured and completed requests, its share of the
measured requests, its output tokens and their rate over the benchmark's window, and its TTFT,
TPOT and end-to-end distributions; `uncertainty.by_adapter` their batch-means intervals (over
the adapter's values in schedule order; the rate over the window's ten slices).

The real runner measures `runner sim --lora-modules … --max-loras 1 --lora-load-ms 5` with
`--lora-adapters`; every number is recomputed here from the records.
"""

import numpy as np
import pytest

from conftest import check_current_and_valid, run_runner, statement_of
from test_telemetry import running_sim
from test_uncertainty import check_intervals, check_rate, close, samples

WEIGHTS = {"sql": 3, "chat": 1, "code": 1}


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    d = tmp_path_factory.mktemp("lora")
    with running_sim(d, "--ttft-ms", "2", "--itl-ms", "0.5", "--itl-noise-ms", "0.2", "--seed", "3",
                     "--lora-modules", ",".join(WEIGHTS), "--max-loras", "1", "--lora-load-ms", "5") as target:
        run = run_runner("run", "--target", target, "--no-sign", "--out", str(d / "l.json"),
                         "--backend", "openai-chat", "--profile", "concurrent", "--concurrency", "4",
                         "--max-requests", "600", "--data", "prompt_tokens=16,output_tokens=8",
                         "--lora-adapters", ",".join(f"{k}:{w}" for k, w in WEIGHTS.items()), cwd=d)
        assert run.returncode == 0, run.stdout + run.stderr
    return statement_of(d / "l.json")


def distribution_point(values):
    return {"mean": sum(values) / len(values), "median": float(np.percentile(values, 50)),
            "p90": float(np.percentile(values, 90)), "p99": float(np.percentile(values, 99))}


def test_each_adapters_numbers_follow_from_the_records(result):
    check_current_and_valid({"lora": result})
    [bench] = result["predicate"]["benchmarks"]
    records, summary = bench["records"], bench["summary"]
    n = len(records["phase"])
    names = records["adapter"]
    # Each adapter's share is its weight's: exact over whole blocks of 64 requests.
    total = sum(WEIGHTS.values())
    for name, w in WEIGHTS.items():
        assert abs(names.count(name) / n - w / total) <= 0.02 * w / total, name
    stated = summary["by_adapter"]
    intervals = summary["uncertainty"]["by_adapter"]
    assert [s["adapter"] for s in stated] == sorted(WEIGHTS)
    _, _, window = samples(records, None)
    measured = [i for i in range(n) if records["phase"][i] == "measured" and names[i] is not None]
    for s, stated_intervals in zip(stated, intervals):
        mine = [i for i in range(n) if names[i] == s["adapter"]]
        sub = {k: [v[i] for i in mine] if isinstance(v, list) else v for k, v in records.items()}
        series, ends, _ = samples(sub, None)
        assert s["requests"] == len([i for i in mine if records["phase"][i] == "measured"])
        assert s["completed"] == len(ends)
        assert close(s["share"], s["requests"] / len(measured))
        out = sum(e[1] for e in ends)
        assert s["output_tokens"] == out
        rate = out / ((window[1] - window[0]) / 1e6)
        assert close(s["output_token_throughput_per_s"], rate)
        for key in ("ttft_ms", "tpot_ms", "e2e_ms"):
            point = distribution_point(series[key])
            for stat in ("mean", "median", "p90", "p99"):
                assert close(s[key][stat], point[stat]), (s["adapter"], key, stat)
            check_intervals(stated_intervals[key], series[key], point, tail=False)
        check_rate(stated_intervals["output_token_throughput_per_s"], ends, window, rate, lambda e: e[1])
    # The swap cost shows: with one place, the adapter that changes least often waits least.
    ttft = {s["adapter"]: s["ttft_ms"]["mean"] for s in stated}
    assert ttft["sql"] < ttft["chat"] and ttft["sql"] < ttft["code"], ttft


def lora_view(scrapes, records):
    """`host.server.lora` from the scrapes and the records, as docs/reference/lora.md says:
    every scrape but the first (unless it is the only one)."""
    def names(joined):
        return {a.strip() for a in joined.split(",") if a.strip()}
    n = len(scrapes["running"])
    assert len(scrapes["waiting"]) == n
    seen, running_max = set(), 0
    for running, waiting in list(zip(scrapes["running"], scrapes["waiting"]))[1 if n > 1 else 0:]:
        running_max = max(running_max, len(names(running)))
        seen |= names(running) | names(waiting)
    named = {a for a in records["adapter"] if a is not None}
    return {"scrapes": n, "max_lora": scrapes["max_lora"], "running_max": running_max,
            "seen": sorted(seen), "named": sorted(named), "not_named": sorted(seen - named)}


def test_the_servers_own_view_follows_from_its_scrapes(result):
    [bench] = result["predicate"]["benchmarks"]
    server = bench["telemetry"]["server"]
    assert server["roles"]["lora_requests_info"] == ["vllm:lora_requests_info"]
    scrapes = server["lora"]
    view = bench["summary"]["host"]["server"]["lora"]
    assert view == lora_view(scrapes, bench["records"])
    # What the simulator did: one place (`--max-loras 1`), so one adapter running at a time as
    # vLLM's scheduler keeps it (the four streams' others wait), every adapter the requests
    # named seen over the run's scrapes, and none other.
    assert view["max_lora"] == 1
    assert view["scrapes"] >= 5, view
    assert view["running_max"] == 1, view
    assert view["seen"] == view["named"] == sorted(WEIGHTS)
    assert view["not_named"] == []


def test_an_adapter_no_request_named_is_the_disagreement(tmp_path):
    """Another client asks for an adapter the benchmark never names while it runs: the server's
    view names it, the report says the two disagree, and the document still verifies."""
    import json as _json
    import threading
    import urllib.request

    d = tmp_path
    with running_sim(d, "--ttft-ms", "5", "--itl-ms", "1", "--seed", "4",
                     "--lora-modules", "sql,chat,code", "--max-loras", "3") as target:
        stop = threading.Event()

        def other_client():
            body = _json.dumps({"model": "code", "prompt": "a b c d", "max_tokens": 16}).encode()
            while not stop.is_set():
                request = urllib.request.Request(f"{target}/v1/completions", data=body,
                                                 headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(request, timeout=10) as answer:
                    answer.read()

        other = threading.Thread(target=other_client, daemon=True)
        other.start()
        try:
            run = run_runner("run", "--target", target, "--no-sign", "--out", str(d / "l.json"),
                             "--backend", "openai-chat", "--profile", "concurrent", "--concurrency", "2",
                             "--max-requests", "120", "--data", "prompt_tokens=16,output_tokens=16",
                             "--lora-adapters", "sql,chat", cwd=d)
        finally:
            stop.set()
            other.join(timeout=15)
        assert run.returncode == 0, run.stdout + run.stderr
    statement = statement_of(d / "l.json")
    check_current_and_valid({"contaminated": statement})
    [bench] = statement["predicate"]["benchmarks"]
    view = bench["summary"]["host"]["server"]["lora"]
    assert view == lora_view(bench["telemetry"]["server"]["lora"], bench["records"])
    assert view["named"] == ["chat", "sql"]
    assert view["not_named"] == ["code"], view
    report = run_runner("report", str(d / "l.json"), "--out", str(d / "report"), cwd=d)
    assert report.returncode == 0, report.stdout + report.stderr
    text = (d / "report" / "report.md").read_text()
    assert "**It disagrees with the requests:** it ran or queued code, which no request named" in text
