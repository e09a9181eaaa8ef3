"""A capacity search (`--profile capacity`, `result/v0.9` and later) re-derived with no provebench code: each
step's verdict from its records, and the answer from the steps.

The rules are public (docs/reference/capacity.md; schemas/src/capacity/): a step is judged
on its measured records in schedule order — those that ended by `decided_at_us` when a look
decided it, else all of them. For an objective `METRIC:pP<=B`, the values are the completed
requests' METRIC (TTFT from the scheduled time), k of n above B, q = 1 − P/100. With c = 0.999:
* pass when k < t, t + 1 the smallest x with P(Binomial(n, q) ≤ x) ≥ 1 − c (t ≥ 1), and the
  one-sided c bound of the batch means of "above B" (10 batches, Student t with 9 degrees of
  freedom) is at most q, and the batches' mean values do not rise (the slope of their least
  squares line over its standard error at most the one-sided 99 % t with 8 degrees of freedom,
  or the rise it fits from the first batch to the last at most a tenth of B);
* fail when P(Binomial(n, q) ≥ k) < 1 − c and the lower batch bound is above q;
* otherwise undecided; nothing is decided with fewer than 50 values.
From `result/v0.19` a step stopped by a pass names the look before it (`earlier_pass_at_us`),
and the records that had ended by then must pass too: a pass needs two looks in a row.
The answer is the highest load that passed, the lowest above it that failed, and the lowest
above it left undecided. This file recomputes both with numpy and scipy from a real search
against `runner sim`, and shows that an edited verdict is caught.
"""

import base64
import copy
import json
import re

import numpy as np
import pytest
from scipy.stats import binom
from scipy.stats import t as student_t

from conftest import PREDICATE_TYPE, run_runner
from test_telemetry import running_sim
from test_uncertainty import largest_t as loadgen_largest_t

C = 0.999
BATCHES = 10


def parse(objective):
    m = re.fullmatch(r"(\w+):p([\d.]+)<=([\d.]+)ms", objective)
    if m:
        return m.group(1), float(m.group(2)), float(m.group(3))
    m = re.fullmatch(r"error_rate<=([\d.]+)%", objective)
    assert m, objective
    return "error_rate", None, float(m.group(1))


def batch_slices(n):
    return [slice(j * n // BATCHES, (j + 1) * n // BATCHES) for j in range(BATCHES)]


def verdict(over, values, p, bound=None):
    n, k = len(over), int(sum(over))
    if n < BATCHES * 5:
        return "undecided"
    q = 1 - p
    shares = np.array([np.mean(over[s]) for s in batch_slices(n)])
    half = student_t.ppf(C, BATCHES - 1) * shares.std(ddof=1) / np.sqrt(BATCHES)
    low, high = shares.mean() - half, shares.mean() + half
    x = 0
    while binom.cdf(x, n, q) < 1 - C:
        x += 1
    t = x - 1 if x >= 2 else None
    if t is not None and k < t and high <= q and not rising(values, bound):
        return "pass"
    if k >= 1 and binom.sf(k - 1, n, q) < 1 - C and low > q:
        return "fail"
    return "undecided"


def rising(values, bound):
    if values is None or len(values) < BATCHES * 5:
        return False
    n = len(values)
    means = np.array([np.mean(values[s]) for s in batch_slices(n)])
    x = np.arange(BATCHES) - (BATCHES - 1) / 2
    slope = (x * (means - means.mean())).sum() / (x * x).sum()
    residual = ((means - means.mean() - slope * x) ** 2).sum()
    se = np.sqrt(residual / (BATCHES - 2) / (x * x).sum())
    return slope > student_t.ppf(0.99, BATCHES - 2) * se and slope * (BATCHES - 1) > 0.1 * bound


def judge_step(objectives, bench, at=...):
    r = bench["records"]
    if at is ...:
        at = bench["capacity_step"]["decided_at_us"]
    taken = [i for i in range(len(r["phase"]))
             if r["phase"][i] == "measured" and (at is None or r["end_us"][i] <= at)]
    outcomes = []
    for text in objectives:
        metric, pct, bound = parse(text)
        if metric == "error_rate":
            judged = [i for i in taken if r["error"][i] is None or r["error"][i]["class"] != "cancelled"]
            over = np.array([r["error"][i] is not None for i in judged])
            outcomes.append((text, len(over), int(over.sum()), verdict(over, None, 1 - bound / 100)))
            continue
        assert metric == "ttft", "this file re-derives TTFT objectives"
        values = np.array([(r["first_token_us"][i] - r["scheduled_us"][i]) / 1000 for i in taken
                           if r["error"][i] is None and r["first_token_us"][i] is not None])
        over = values > bound
        outcomes.append((text, len(values), int(over.sum()), verdict(over, values, pct / 100, bound)))
    if any(o[3] == "fail" for o in outcomes):
        step = "fail"
    elif all(o[3] == "pass" for o in outcomes):
        step = "pass"
    else:
        step = "undecided"
    return step, outcomes


def load(bench):
    p = bench["profile"]
    return p["rate_per_s"] if p["kind"] in ("constant", "poisson") else p["concurrency"]


def answer(capacity, benchmarks):
    steps = [(i, load(b), b["capacity_step"]["verdict"]) for i, b in enumerate(benchmarks) if "capacity_step" in b]
    passing = [s for s in steps if s[2] == "pass"]
    best = max(passing, key=lambda s: s[1]) if passing else None
    passed = best[1] if best else None
    above = lambda v: min((s[1] for s in steps if s[2] == v and (passed is None or s[1] > passed)), default=None)
    goodput = benchmarks[best[0]]["summary"]["goodput"]["requests_per_s"] if best else None
    return {"passed": passed, "failed": above("fail"), "undecided": above("undecided"),
            "passed_benchmark": best[0] if best else None, "goodput_per_s": goodput,
            "undecided_steps": sum(1 for s in steps if s[2] == "undecided")}


def two_looks(statement):
    """Whether the document's steps stop on a pass only after two looks in a row (v0.19 on)."""
    minor = int(statement["predicateType"].rsplit("/v0.", 1)[1])
    return minor >= 19


def check(statement):
    """The disagreements between what a document says of its search and what its records give."""
    p = statement["predicate"]
    capacity, problems = p["capacity"], []
    for i, b in enumerate(p["benchmarks"]):
        if "capacity_step" not in b:
            continue
        step, outcomes = judge_step(capacity["slo"], b)
        stored = b["capacity_step"]
        if step != stored["verdict"]:
            problems.append(f"benchmarks[{i}]: stored {stored['verdict']}, records give {step}")
        earlier = stored.get("earlier_pass_at_us")
        if two_looks(statement) and step == "pass" and stored["decided_at_us"] is not None:
            if earlier is None or earlier >= stored["decided_at_us"]:
                problems.append(f"benchmarks[{i}]: stopped by a pass with no earlier look named before it")
            elif judge_step(capacity["slo"], b, earlier)[0] != "pass":
                problems.append(f"benchmarks[{i}]: the look before, at {earlier}, does not pass")
        for o, s in zip(outcomes, stored["objectives"]):
            if (o[0], o[1], o[2], o[3]) != (s["objective"], s["values"], s["over"], s["verdict"]):
                problems.append(f"benchmarks[{i}] {o[0]}: {s} against {o}")
    for key, value in answer(capacity, p["benchmarks"]).items():
        if capacity[key] != value:
            problems.append(f"capacity.{key}: stored {capacity[key]}, steps give {value}")
    return problems


@pytest.fixture(scope="module")
def statement(tmp_path_factory):
    d = tmp_path_factory.mktemp("capacity")
    with running_sim(d, "--max-batch", "4", "--ttft-ms", "10", "--itl-ms", "2", "--itl-growth", "0",
                     "--prefill-us-per-token", "0") as target:
        run = run_runner("run", "--target", target, "--no-sign", "--out", str(d / "c.json"),
                         "--profile", "capacity", "--search", "concurrency", "--slo", "ttft:p90<=25ms",
                         "--max-requests", "1600", "--max-seconds", "20",
                         "--data", "prompt_tokens=8,output_tokens=16", cwd=d)
        assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(base64.b64decode(json.loads((d / "c.json").read_text())["payload"]))


def test_every_step_and_the_answer_follow_from_the_records(statement):
    assert statement["predicateType"] == PREDICATE_TYPE
    capacity = statement["predicate"]["capacity"]
    # Four slots: four streams never wait (TTFT 10 ms), five always do (about 50 ms). A loaded
    # machine can leave a step undecided, never pass five.
    assert capacity["search"] == "concurrency" and 1 <= capacity["passed"] <= 4
    assert capacity["failed"] is None or capacity["failed"] >= 5
    assert check(statement) == []
    # LoadGen's early-stopping estimate (at its 99 %) is what each step shows beside the verdict.
    for b in statement["predicate"]["benchmarks"]:
        if "capacity_step" not in b:
            continue
        r = b["records"]
        at = b["capacity_step"]["decided_at_us"]
        values = sorted((r["first_token_us"][i] - r["scheduled_us"][i]) / 1000 for i in range(len(r["phase"]))
                        if r["phase"][i] == "measured" and r["error"][i] is None
                        and (at is None or r["end_us"][i] <= at))
        t = loadgen_largest_t(len(values), 0.9)
        stated = b["capacity_step"]["objectives"][0]["estimate"]
        assert stated == (values[len(values) - t] if t else None)


def test_an_edited_verdict_or_answer_is_caught(statement):
    edited = copy.deepcopy(statement)
    step = next(b for b in edited["predicate"]["benchmarks"] if b.get("capacity_step", {}).get("verdict") != "pass")
    step["capacity_step"]["verdict"] = "pass"
    assert any("stored pass" in p for p in check(edited))
    edited = copy.deepcopy(statement)
    edited["predicate"]["capacity"]["passed"] = 8
    assert any("capacity.passed" in p for p in check(edited))
    # A step stopped by a pass without the look before it named.
    edited = copy.deepcopy(statement)
    stopped = [b["capacity_step"] for b in edited["predicate"]["benchmarks"]
               if b.get("capacity_step", {}).get("verdict") == "pass"
               and b["capacity_step"]["decided_at_us"] is not None]
    assert stopped and all(s["earlier_pass_at_us"] < s["decided_at_us"] for s in stopped)
    del stopped[0]["earlier_pass_at_us"]
    assert any("no earlier look" in p for p in check(edited))
