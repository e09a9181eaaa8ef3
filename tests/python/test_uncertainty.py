"""How sure a summary is (`summary.uncertainty`), how far repeated runs lie apart (`repetitions`) and
where a run until precise stopped (`precision`), re-derived with no provebench code (`result/v0.8`).

The definitions are public (docs/reference/statistics.md; schemas/src/uncertainty.rs):
measured, completed requests in the order they were scheduled (ties by record order); each
sample cut into 10 consecutive batches, batch j holding positions [j·n//10, (j+1)·n//10);
a mean's interval is the sample mean ± t(0.975, 9) · s / √10 with s the standard deviation of
the batch means; a percentile's is the sample's percentiles at p ∓ δ, δ = t · s / √10 of the
batches' shares at or below the sample percentile; a rate's cuts the window into 10 equal slices
and takes the slice rates of the requests that ended in each. MLPerf LoadGen's early stopping:
the largest t with N ≥ h(t) + t, h(t) the smallest h with I_p(h, t + 1) < 0.01, and the value at
0-based rank N − t of the sorted sample.

This file recomputes all of it from the record columns with numpy and scipy (its t quantile,
its regularized incomplete beta) and compares. The document comes from the real runner against
`runner sim` with seeded latency noise.
"""

import base64
import json
import math

import numpy as np
import pytest
from scipy.special import betainc
from scipy.stats import t as student_t

from conftest import PREDICATE_TYPE, run_runner
from test_telemetry import running_sim

BATCHES = 10
T = student_t.ppf(0.975, BATCHES - 1)


def decode_gaps(text):
    """LEB128 varints in base64 (schemas/src/token_times.rs), as µs."""
    out, value, shift = [], 0, 0
    for byte in base64.b64decode(text):
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            out.append(value)
            value, shift = 0, 0
    return out


def meets(slo, ttft, tpot, e2e):
    """Goodput's test: every threshold given is met; a one-token answer meets any TPOT."""
    return all(limit is None or value <= limit for limit, value in (
        (slo.get("ttft_ms"), ttft), (slo.get("tpot_ms"), 0.0 if tpot is None else tpot), (slo.get("e2e_ms"), e2e)))


def samples(records, slo):
    """(series by name, completed ends with (end, output, total, good), window) in schedule order."""
    n = len(records["phase"])
    order = sorted((i for i in range(n) if records["phase"][i] == "measured"),
                   key=lambda i: (records["scheduled_us"][i], i))
    series = {k: [] for k in ("ttft_ms", "ttft_from_send_ms", "itl_ms", "tpot_ms", "e2e_ms")}
    ends = []
    window = (min(records["scheduled_us"][i] for i in order), max(records["end_us"][i] for i in order))
    for i in order:
        if records["error"][i] is not None:
            continue
        scheduled, sent, first, end = (records[k][i] for k in ("scheduled_us", "sent_us", "first_token_us", "end_us"))
        out = records["output_tokens_server"][i]
        out = records["output_tokens_client"][i] if out is None else out
        inp = records["input_tokens_server"][i]
        inp = (records["input_tokens_client"][i] or 0) if inp is None else inp
        e2e = max(end - scheduled, 0) / 1000
        series["e2e_ms"].append(e2e)
        series["itl_ms"].extend(g / 1000 for g in decode_gaps(records["token_gaps"][i]))
        good = False
        if first is not None:
            ttft = max(first - scheduled, 0) / 1000
            series["ttft_ms"].append(ttft)
            series["ttft_from_send_ms"].append(max(first - sent, 0) / 1000)
            tpot = max(end - first, 0) / 1000 / (out - 1) if out > 1 else None
            if tpot is not None:
                series["tpot_ms"].append(tpot)
            good = slo is not None and meets(slo, ttft, tpot, e2e)
        ends.append((end, out, inp + out, good))
    return series, ends, window


def batches(values):
    n = len(values)
    return [values[j * n // BATCHES:(j + 1) * n // BATCHES] for j in range(BATCHES)]


def half_width(stats):
    return T * np.std(stats, ddof=1) / math.sqrt(len(stats))


def h(t, p):
    """LoadGen's h(t): the smallest h with I_p(h, t + 1) < 1 − 0.99."""
    lo, hi = 1, 1
    while betainc(hi, t + 1, p) >= 0.01:
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if betainc(mid, t + 1, p) < 0.01:
            hi = mid
        else:
            lo = mid + 1
    return lo


def largest_t(n, p):
    t = 0
    while n >= h(t + 1, p) + t + 1:
        t += 1
    return t or None


def min_for_interval(p):
    """LoadGen's minimum (above the median), 50 values, and 2 a batch expected beyond p."""
    return max(math.ceil(2 * BATCHES / (1 - p) - 1e-9), BATCHES * 5, h(1, p) + 1 if p > 0.5 else 0)


def close(a, b):
    return a == pytest.approx(b, rel=1e-9, abs=1e-9)


def check_intervals(stated, values, point, tail):
    n = len(values)
    if n < BATCHES * 5:
        assert stated is None
        return
    means = [sum(b) / len(b) for b in batches(values)]
    hw = half_width(means)
    assert close(stated["mean"]["low"], point["mean"] - hw), (stated["mean"], point["mean"], hw)
    assert close(stated["mean"]["high"], point["mean"] + hw)
    for name, p in (("median", 0.5), ("p90", 0.9), ("p99", 0.99)):
        if n < min_for_interval(p):
            assert stated[name] is None, name
            continue
        q = float(np.percentile(values, 100 * p))
        assert close(q, point[name])
        shares = [sum(v <= q for v in b) / len(b) for b in batches(values)]
        delta = half_width(shares)
        low = min(float(np.percentile(values, 100 * max(p - delta, 0))), q)
        high = max(float(np.percentile(values, 100 * min(p + delta, 1))), q)
        assert close(stated[name]["low"], low), (name, stated[name], low, high)
        assert close(stated[name]["high"], high), (name, stated[name], low, high)
    if not tail:
        assert stated["early_stopping"] is None
        return
    ordered = sorted(values)
    for name, p in (("p90", 0.9), ("p99", 0.99), ("p99_9", 0.999)):
        es = stated["early_stopping"][name]
        assert es["min_requests"] == h(1, p) + 1, name
        t = largest_t(n, p)
        if t is None:
            assert es["estimate"] is None and es["discarded"] == 0
        else:
            assert es["discarded"] == t - 1, name
            assert es["estimate"] == ordered[n - t], name


def check_rate(stated, ends, window, rate, count):
    start, end = window
    if len(ends) < BATCHES * 5:
        assert stated is None
        return
    span = end - start
    per_slice = [0] * BATCHES
    for e in ends:
        offset = min(max(e[0] - start, 0), span - 1)
        per_slice[offset * BATCHES // span] += count(e)
    slice_s = span / 1e6 / BATCHES
    hw = half_width([c / slice_s for c in per_slice])
    assert close(stated["low"], rate - hw) and close(stated["high"], rate + hw), (stated, rate, hw)


@pytest.fixture(scope="module")
def statement(tmp_path_factory):
    d = tmp_path_factory.mktemp("uncertainty")
    with running_sim(d, "--ttft-ms", "4", "--ttft-noise-ms", "4", "--itl-ms", "1", "--itl-noise-ms", "1",
                     "--seed", "7") as target:
        run = run_runner("run", "--target", target, "--no-sign", "--out", str(d / "r.json"),
                         "--profile", "poisson", "--rate", "150", "--max-requests", "700", "--seed", "3",
                         "--data", "prompt_tokens=16,output_tokens=6", "--slo-ttft-ms", "12", cwd=d)
        assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(base64.b64decode(json.loads((d / "r.json").read_text())["payload"]))


def test_the_document_is_v0_8_with_intervals(statement):
    assert statement["predicateType"] == PREDICATE_TYPE
    [bench] = statement["predicate"]["benchmarks"]
    u = bench["summary"]["uncertainty"]
    assert (u["method"], u["batches"]) == ("batch_means", BATCHES)
    # 700 requests: enough for LoadGen's p99 estimate (662), not for p99.9's (6636); an
    # interval for p90 (200) but not for p99 (2000).
    assert u["ttft_ms"]["p90"] is not None and u["ttft_ms"]["p99"] is None
    assert u["ttft_ms"]["early_stopping"]["p99"]["min_requests"] == 662
    assert u["ttft_ms"]["early_stopping"]["p99"]["estimate"] is not None
    assert u["ttft_ms"]["early_stopping"]["p99_9"]["estimate"] is None


def test_every_interval_follows_from_the_records(statement):
    [bench] = statement["predicate"]["benchmarks"]
    summary, u = bench["summary"], bench["summary"]["uncertainty"]
    series, ends, window = samples(bench["records"], bench["slo"])
    for name, values in series.items():
        check_intervals(u[name], values, summary[name], tail=name in ("ttft_ms", "tpot_ms", "e2e_ms"))
    check_rate(u["request_throughput_per_s"], ends, window, summary["request_throughput_per_s"], lambda e: 1)
    check_rate(u["output_token_throughput_per_s"], ends, window, summary["output_token_throughput_per_s"],
               lambda e: e[1])
    check_rate(u["total_token_throughput_per_s"], ends, window, summary["total_token_throughput_per_s"],
               lambda e: e[2])
    assert 0 < summary["goodput"]["good_requests"] < summary["requests"]["completed"]
    check_rate(u["goodput_per_s"], ends, window, summary["goodput"]["requests_per_s"], lambda e: int(e[3]))


def test_the_early_stopping_minimums_are_loadgens():
    # LoadGen: "Need to process at least 662 queries" at p99, c = 0.99, no tolerance.
    assert [h(1, p) + 1 for p in (0.9, 0.99, 0.999)] == [64, 662, 6636]
    assert [min_for_interval(p) for p in (0.5, 0.9, 0.99)] == [50, 200, 2000]


T98 = student_t.ppf(0.99, BATCHES - 1)


@pytest.fixture(scope="module")
def repeated_and_precise(tmp_path_factory):
    """A spec run three times (`--repeat 3`), and one run until mean TTFT is within ±3 %."""
    d = tmp_path_factory.mktemp("repeated")
    with running_sim(d, "--ttft-ms", "4", "--ttft-noise-ms", "4", "--itl-ms", "1", "--seed", "7") as target:
        common = ["--target", target, "--no-sign", "--data", "prompt_tokens=16,output_tokens=6"]
        run = run_runner("run", *common, "--out", str(d / "repeat.json"), "--profile", "concurrent",
                         "--concurrency", "4", "--max-requests", "120", "--repeat", "3", cwd=d)
        assert run.returncode == 0, run.stdout + run.stderr
        run = run_runner("run", *common, "--out", str(d / "precise.json"), "--profile", "concurrent",
                         "--concurrency", "4", "--max-requests", "4000", "--until-precise", "ttft:mean:±3%", cwd=d)
        assert run.returncode == 0, run.stdout + run.stderr
    load = lambda name: json.loads(base64.b64decode(json.loads((d / name).read_text())["payload"]))
    return load("repeat.json"), load("precise.json")


def field(summary, name):
    """`ttft_ms.median` → summary["ttft_ms"]["median"]."""
    value = summary
    for part in name.split("."):
        value = None if value is None else value.get(part)
    return value


def test_run_to_run_intervals_follow_from_the_runs(repeated_and_precise):
    statement, _ = repeated_and_precise
    p = statement["predicate"]
    reps = p["repetitions"]
    assert reps["runs"] == 3
    [repeated] = reps["benchmarks"]
    assert repeated["indices"] == [0, 1, 2]
    assert [p["benchmarks"][i]["repetition"] for i in range(3)] == [1, 2, 3]
    t = student_t.ppf(0.975, 2)
    assert repeated["metrics"], "no metric compared"
    for row in repeated["metrics"]:
        values = np.array([field(p["benchmarks"][i]["summary"], row["metric"]) for i in range(3)], dtype=float)
        mean, sd = values.mean(), values.std(ddof=1)
        assert close(row["mean"], mean) and close(row["sd"], sd), row
        assert close(row["interval"]["low"], mean - t * sd / math.sqrt(3)), row
        assert close(row["next_run"]["high"], mean + t * sd * math.sqrt(1 + 1 / 3)), row


def test_a_run_until_precise_met_its_target_at_the_look_it_names(repeated_and_precise):
    _, statement = repeated_and_precise
    [bench] = statement["predicate"]["benchmarks"]
    stop = bench["precision"]
    assert stop["targets"] == ["ttft:mean:±3%"]
    records = bench["records"]
    at = stop["met_at_us"]
    taken = [i for i in range(len(records["phase"]))
             if records["phase"][i] == "measured" and records["end_us"][i] <= at]
    assert len(taken) == stop["met_at_requests"]
    # The look's TTFT, in schedule order, and its mean's interval at the 98 % critical value.
    taken.sort(key=lambda i: (records["scheduled_us"][i], i))
    ttft = np.array([(records["first_token_us"][i] - records["scheduled_us"][i]) / 1000 for i in taken
                     if records["error"][i] is None])
    n = len(ttft)
    means = [ttft[j * n // BATCHES:(j + 1) * n // BATCHES].mean() for j in range(BATCHES)]
    hw = T98 * np.std(means, ddof=1) / math.sqrt(BATCHES)
    assert hw <= 0.03 * ttft.mean(), (hw, ttft.mean())
    # The summary of every record states its intervals at that critical value too.
    u = bench["summary"]["uncertainty"]
    assert u["critical_value_confidence"] == 0.98
    series, _, _ = samples(records, None)
    v = np.array(series["ttft_ms"])
    n = len(v)
    means = [v[j * n // BATCHES:(j + 1) * n // BATCHES].mean() for j in range(BATCHES)]
    hw = T98 * np.std(means, ddof=1) / math.sqrt(BATCHES)
    assert close(u["ttft_ms"]["mean"]["high"], bench["summary"]["ttft_ms"]["mean"] + hw)
