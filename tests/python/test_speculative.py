"""Speculative decoding and the server's own clock (`result/v0.12`), re-derived with no
provebench code.

The definitions are public (docs/reference/metrics.md): a record's `event_tokens` holds the
output tokens of each token event (LEB128 varints in base64, as `token_gaps`); ITL is per token,
an event of k tokens after a gap of g µs giving k gaps of g // k µs, one µs more for the first
g % k, an event of no tokens passing its gap on, the first event's extra tokens giving none;
`events` counts the tokens of each event and keeps the gaps between events; `server_clock` sets
the server's own time to first token (queue + prefill, from `server_timing`) beside the client's
TTFT from send; the engine's speculative-decoding counters give the acceptance over the benchmark;
and where a request said its verification steps by the drafts they accepted
(`server_timing.steps_by_accepted`, SGLang's histogram: entry n counts the steps that accepted
exactly n drafts), position i's acceptance is the steps that accepted over i drafts / the steps,
over those requests, with a batch-means interval of the ratio (`result/v0.22`).

The real runner measures `runner sim --speculative 3 --acceptance 0.8,0.6,0.4`, which decodes
speculatively, counts its drafts as vLLM does on /metrics and reports each request's own timing
as llama.cpp does (OpenAI APIs) and as SGLang does (its native API: the drafts and the request's
timestamps in the finishing event's `meta_info`); this file recomputes every new number with
numpy and checks it, and checks the counters against the requests' own counts.
"""

from fractions import Fraction

import numpy as np
import pytest

from conftest import check_current_and_valid, run_runner, statement_of
from test_telemetry import decode, running_sim
from test_uncertainty import BATCHES, check_intervals, close, decode_gaps, half_width

ACCEPTANCE = [0.8, 0.6, 0.4]
CLOCKS_ALLOWANCE_US = 1000


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """{name: statement}: seeded random prompts and the shipped real text, one simulator."""
    d = tmp_path_factory.mktemp("speculative")
    runs = {
        "synthetic": ["--backend", "openai-completions", "--data", "prompt_tokens=16,output_tokens=32",
                      "--reference-acceptance", "3.5"],
        "real": ["--backend", "openai-chat", "--data", "real-text", "--data-output-tokens", "32"],
        "sglang": ["--backend", "sglang", "--data", "real-text", "--data-output-tokens", "32",
                   "--reference-acceptance", "3.5"],
    }
    out = {}
    with running_sim(d, "--ttft-ms", "3", "--itl-ms", "2", "--seed", "5", "--speculative", "3",
                     "--acceptance", ",".join(map(str, ACCEPTANCE))) as target:
        for name, flags in runs.items():
            run = run_runner("run", "--target", target, "--no-sign", "--out", str(d / f"{name}.json"),
                             "--profile", "concurrent", "--concurrency", "4", "--max-requests", "80",
                             "--warmup-requests", "4", "--seed", "11", *flags, cwd=d)
            assert run.returncode == 0, name + ": " + run.stdout + run.stderr
            out[name] = statement_of(d / f"{name}.json")
    return out


def completed_in_schedule_order(records):
    n = len(records["phase"])
    order = [i for i in range(n) if records["phase"][i] == "measured" and records["error"][i] is None]
    return sorted(order, key=lambda i: (records["scheduled_us"][i], i))


def per_token(gaps, counts):
    out, carried = [], 0
    for gap, k in zip(gaps, counts[1:]):
        g = carried + gap
        if k == 0:
            carried = g
            continue
        carried = 0
        out.extend(g // k + (1 if i < g % k else 0) for i in range(k))
    return out


def counts_of(records, i):
    text = records.get("event_tokens", [None] * len(records["phase"]))[i]
    return None if text is None else decode_gaps(text)


def distribution(values):
    a = np.array(values, dtype=float)
    return {"count": len(a), "mean": a.mean(), "median": np.percentile(a, 50), "p90": np.percentile(a, 90),
            "p99": np.percentile(a, 99), "min": a.min(), "max": a.max(), "std": a.std()}


def same_distribution(stated, values):
    want = distribution(values)
    assert stated["count"] == want["count"]
    for key in ("mean", "median", "p90", "p99", "min", "max", "std"):
        assert close(stated[key], want[key]), (key, stated[key], want[key])


def acceptance_by_position(records, order):
    """Each draft position's acceptance from the requests' steps by drafts accepted, and the
    half-width of each one's interval (None below ten batches of five requests)."""
    per = []
    for i in order:
        t = records["server_timing"][i]
        histogram = (t or {}).get("steps_by_accepted")
        if not histogram:
            continue
        k = len(histogram) - 1
        per.append(([sum(histogram[p + 1:]) for p in range(k)], sum(histogram)))
    if not per:
        return [], None
    positions = max(len(at) for at, _ in per)
    steps = sum(n for _, n in per)
    rates = [sum(at[p] if p < len(at) else 0 for at, _ in per) / steps for p in range(positions)]
    if len(per) < BATCHES * 5:
        return rates, None
    n = len(per)
    widths = []
    for p in range(positions):
        batch = [per[j * n // BATCHES:(j + 1) * n // BATCHES] for j in range(BATCHES)]
        widths.append(half_width([sum(at[p] if p < len(at) else 0 for at, _ in b) / sum(s for _, s in b)
                                  for b in batch]))
    return rates, widths


def check_acceptance_by_position(summary, records, order):
    rates, widths = acceptance_by_position(records, order)
    clock = summary["server_clock"]
    # A histogram that does not add up to the request's own counts of steps and accepted drafts.
    disagree = 0
    for i in order:
        t = records["server_timing"][i] or {}
        histogram = t.get("steps_by_accepted")
        if histogram:
            steps, accepted = sum(histogram), sum(n * h for n, h in enumerate(histogram))
            disagree += t.get("drafts", steps) != steps or t.get("accepted_tokens", accepted) != accepted
    assert clock.get("draft_counts_disagree", 0) == disagree == 0, (clock, disagree)
    assert len(clock.get("acceptance_by_position", [])) == len(rates)
    assert all(close(a, b) for a, b in zip(clock.get("acceptance_by_position", []), rates))
    stated = summary["uncertainty"].get("acceptance_by_position")
    if widths is None:
        assert stated is None
        return rates
    assert len(stated) == len(rates)
    for interval, rate, hw in zip(stated, rates, widths):
        assert close(interval["low"], rate - hw) and close(interval["high"], rate + hw), (interval, rate, hw)
    return rates


def test_each_document_is_of_this_version_and_valid_against_the_schema(results):
    check_current_and_valid(results)


def test_itl_is_per_token_and_the_events_follow_from_the_records(results):
    for name, st in results.items():
        [bench] = st["predicate"]["benchmarks"]
        records, summary = bench["records"], bench["summary"]
        order = completed_in_schedule_order(records)
        itl, event_gaps, tokens_per_event, histogram = [], [], [], {}
        for i in sorted(order):  # the summary's ITL pools records in record order
            gaps = decode_gaps(records["token_gaps"][i])
            counts = counts_of(records, i)
            assert counts is not None and len(counts) == len(gaps) + 1, (name, i)
            itl.extend(per_token(gaps, counts))
        for i in order:
            counts = counts_of(records, i)
            event_gaps.extend(decode_gaps(records["token_gaps"][i]))
            tokens_per_event.extend(counts)
            for k in counts:
                histogram[k] = histogram.get(k, 0) + 1
        same_distribution(summary["itl_ms"], [g / 1000 for g in itl])
        events = summary["events"]
        assert events["events"] == len(tokens_per_event) and events["tokens"] == sum(tokens_per_event)
        assert events["tokens_per_event"] == [histogram.get(k, 0) for k in range(max(histogram) + 1)]
        assert close(events["mean_tokens_per_event"], sum(tokens_per_event) / len(tokens_per_event))
        same_distribution(events["event_gap_ms"], [g / 1000 for g in event_gaps])
        u = summary["uncertainty"]
        check_intervals(u["event_gap_ms"], [g / 1000 for g in event_gaps], events["event_gap_ms"], tail=False)
        n = len(tokens_per_event)
        batch_means = [np.mean(tokens_per_event[j * n // BATCHES:(j + 1) * n // BATCHES]) for j in range(BATCHES)]
        hw = half_width(batch_means)
        mean = events["mean_tokens_per_event"]
        assert close(u["tokens_per_event"]["low"], mean - hw) and close(u["tokens_per_event"]["high"], mean + hw)
        # A speculative step yields 1 + accepted tokens: the mean after each request's first event
        # is near the configuration's 1 + Σ acceptance.
        later = [k for i in order for k in counts_of(records, i)[1:]]
        assert abs(np.mean(later) - (1 + sum(ACCEPTANCE))) < 0.25, (name, np.mean(later))


def test_the_servers_clock_and_drafts_follow_from_the_records(results):
    for name, st in results.items():
        [bench] = st["predicate"]["benchmarks"]
        records, summary = bench["records"], bench["summary"]
        order = completed_in_schedule_order(records)
        server, overhead, disagree, ratios = [], [], 0, []
        drafts = drafted = accepted = 0
        for i in order:
            t = records["server_timing"][i]
            assert records["request_id"][i].startswith("pb-")
            drafts += t["drafts"]
            drafted += t["draft_tokens"]
            accepted += t["accepted_tokens"]
            ratios.append((t["accepted_tokens"], t["draft_tokens"]))
            own = t.get("queue_us", 0) + t["prefill_us"]
            client = records["first_token_us"][i] - records["sent_us"][i]
            server.append(own / 1000)
            overhead.append((client - own) / 1000)
            disagree += client + CLOCKS_ALLOWANCE_US < own
        clock = summary["server_clock"]
        assert (clock["requests"], clock["clocks_disagree"]) == (len(order), disagree) == (len(order), 0)
        assert (clock["drafts"], clock["draft_tokens"], clock["accepted_tokens"]) == (drafts, drafted, accepted)
        assert close(clock["acceptance_rate"], accepted / drafted)
        same_distribution(clock["server_ttft_ms"], server)
        same_distribution(clock["client_overhead_ms"], overhead)
        u = summary["uncertainty"]
        check_intervals(u["server_ttft_ms"], server, clock["server_ttft_ms"], tail=False)
        check_intervals(u["client_overhead_ms"], overhead, clock["client_overhead_ms"], tail=False)
        n = len(ratios)
        batch = [ratios[j * n // BATCHES:(j + 1) * n // BATCHES] for j in range(BATCHES)]
        hw = half_width([sum(a for a, _ in b) / sum(d for _, d in b) for b in batch])
        rate = clock["acceptance_rate"]
        assert close(u["acceptance_rate"]["low"], rate - hw) and close(u["acceptance_rate"]["high"], rate + hw)
        # The mean acceptance length from each request's steps and accepted drafts: 1 + their
        # ratio, with 1 + the batch ratios' interval.
        steps = [(t["accepted_tokens"], t["drafts"]) for t in (records["server_timing"][i] for i in order)]
        length = 1 + sum(a for a, _ in steps) / sum(d for _, d in steps)
        assert close(clock["mean_acceptance_length"], length), (name, clock)
        batch = [steps[j * n // BATCHES:(j + 1) * n // BATCHES] for j in range(BATCHES)]
        hw = half_width([sum(a for a, _ in b) / sum(d for _, d in b) for b in batch])
        stated = u["acceptance_length"]
        assert close(stated["low"], length - hw) and close(stated["high"], length + hw), (stated, length, hw)
        assert abs(length - (1 + sum(ACCEPTANCE))) < 0.25, (name, length)
        # SGLang's native API says each request's steps by drafts accepted; a server that says
        # itself vLLM is asked nothing more of its OpenAI API, and says no histogram.
        rates = check_acceptance_by_position(summary, records, order)
        assert bool(rates) == (name == "sglang"), (name, rates)
        for rate, configured in zip(rates, ACCEPTANCE):
            assert abs(rate - configured) < 0.06, (name, rates)
        # The loopback client adds well under a millisecond to the server's own time.
        assert 0 <= np.median(overhead) < 1.0, (name, np.median(overhead))


def test_the_engine_counters_agree_with_the_requests_own_counts(results):
    for name, st in results.items():
        [bench] = st["predicate"]["benchmarks"]
        records = bench["records"]
        m = bench["telemetry"]["server"]
        t = decode(m["t_us"])
        values = {s["name"]: [Fraction(v, 10 ** s["decimals"]) for v in decode(s["values"])] for s in m["series"]}

        def increase(names):
            return sum((b - a if b >= a else b for n in names for a, b in zip(values[n], values[n][1:])),
                       Fraction(0))

        roles = m["roles"]
        got = bench["summary"]["host"]["server"]["speculative"]
        drafts = increase(roles["spec_decode_drafts"])
        draft_tokens = increase(roles["spec_decode_draft_tokens"])
        accepted = increase(roles["spec_decode_accepted_tokens"])
        assert len(t) >= 2
        assert (got["drafts"], got["draft_tokens"], got["accepted_tokens"]) == (drafts, draft_tokens, accepted)
        assert close(got["acceptance_rate"], accepted / draft_tokens)
        assert close(got["mean_acceptance_length"], 1 + accepted / drafts)
        positions = roles["spec_decode_accepted_per_position"]
        assert len(positions) == len(ACCEPTANCE), positions
        by_position = [increase([p]) / drafts for p in positions]
        assert all(close(a, float(b)) for a, b in zip(got["acceptance_by_position"], by_position))
        for rate, configured in zip(by_position, ACCEPTANCE):
            assert abs(float(rate) - configured) < 0.05, (name, by_position)
        # Every request of the benchmark (warm-up included) reported its drafts: their sums are
        # the counters' increase, exactly.
        timing = [x for x in records["server_timing"] if x is not None]
        assert len(timing) == len(records["phase"])
        assert sum(x["draft_tokens"] for x in timing) == draft_tokens
        assert sum(x["accepted_tokens"] for x in timing) == accepted
        assert sum(x["drafts"] for x in timing) == drafts


@pytest.fixture(scope="module")
def sglang_page(tmp_path_factory):
    """A result against the simulator writing SGLang's metrics page (`--metrics-as sglang`),
    read with SGLang's recipe: its counter of verification steps, and no draft tokens."""
    d = tmp_path_factory.mktemp("speculative-sglang")
    out = {}
    with running_sim(d, "--ttft-ms", "3", "--itl-ms", "2", "--seed", "5", "--speculative", "3",
                     "--acceptance", ",".join(map(str, ACCEPTANCE)), "--metrics-as", "sglang") as target:
        for name, backend in (("native", "sglang"), ("openai", "openai-chat")):
            run = run_runner("run", "--target", target, "--no-sign", "--out", str(d / f"{name}.json"),
                             "--profile", "concurrent", "--concurrency", "4", "--max-requests", "60",
                             "--warmup-requests", "4", "--seed", "11", "--backend", backend,
                             "--data", "real-text", "--data-output-tokens", "32", cwd=d)
            assert run.returncode == 0, run.stdout + run.stderr
            out[name] = statement_of(d / f"{name}.json")
    return out


def test_sglangs_verification_steps_are_its_counters_increase_and_the_requests_sum(sglang_page):
    check_current_and_valid(sglang_page)
    [bench] = sglang_page["native"]["predicate"]["benchmarks"]
    m = bench["telemetry"]["server"]
    values = {s["name"]: [Fraction(v, 10 ** s["decimals"]) for v in decode(s["values"])] for s in m["series"]}
    assert m["roles"]["spec_decode_drafts"] == ["sglang:spec_verify_calls_total"]
    assert "spec_decode_draft_tokens" not in m["roles"]
    drafts = sum((b - a if b >= a else b for n in m["roles"]["spec_decode_drafts"]
                  for a, b in zip(values[n], values[n][1:])), Fraction(0))
    got = bench["summary"]["host"]["server"]["speculative"]
    assert got["drafts"] == drafts > 0, got
    for absent in ("draft_tokens", "accepted_tokens", "acceptance_rate", "mean_acceptance_length"):
        assert got[absent] is None, got
    assert got["acceptance_by_position"] == []
    # Every request (warm-up included) said its own steps, drafts and accepted drafts.
    timing = bench["records"]["server_timing"]
    assert all(t is not None for t in timing)
    assert sum(t["drafts"] for t in timing) == drafts
    assert all(t["draft_tokens"] == 3 * t["drafts"] and 0 <= t["accepted_tokens"] <= t["draft_tokens"]
               for t in timing)


def test_synthetic_prompts_carry_the_warning_and_real_text_breaks_down_by_category(results):
    codes = {name: [f["code"] for f in st["predicate"]["validity"]] for name, st in results.items()}
    assert "speculative_on_synthetic_prompts" in codes["synthetic"], codes
    assert "speculative_on_synthetic_prompts" not in codes["real"], codes
    [bench] = results["real"]["predicate"]["benchmarks"]
    assert bench["workload"]["kind"] == "dataset" and bench["workload"]["path"] == "real-text"
    records = bench["records"]
    by = {}
    for i in range(len(records["phase"])):
        if records["phase"][i] != "measured":
            continue
        c = by.setdefault(records["category"][i], {"requests": 0, "completed": 0, "events": 0, "tokens": 0,
                                                    "drafted": 0, "accepted": 0, "gap": 0, "gaps": 0})
        c["requests"] += 1
        if records["error"][i] is not None:
            continue
        c["completed"] += 1
        counts = counts_of(records, i)
        c["events"] += len(counts)
        c["tokens"] += sum(counts)
        t = records["server_timing"][i]
        c["drafted"] += t["draft_tokens"]
        c["accepted"] += t["accepted_tokens"]
        g = per_token(decode_gaps(records["token_gaps"][i]), counts)
        c["gap"] += sum(g)
        c["gaps"] += len(g)
    stated = {c["category"]: c for c in bench["summary"]["by_category"]}
    assert stated.keys() == by.keys() == {"code", "chat", "math", "writing"}
    for name, c in by.items():
        s = stated[name]
        assert (s["requests"], s["completed"]) == (c["requests"], c["completed"])
        assert close(s["mean_tokens_per_event"], c["tokens"] / c["events"])
        assert close(s["acceptance_rate"], c["accepted"] / c["drafted"])
        assert close(s["itl_ms_mean"], c["gap"] / 1000 / c["gaps"])


def test_a_reference_acceptance_flags_a_shortfall_of_over_five_percent(results):
    for name, st in results.items():
        p = st["predicate"]
        reference = p["engine"].get("reference_acceptance")
        [bench] = p["benchmarks"]
        length = bench["summary"]["host"]["server"]["speculative"]["mean_acceptance_length"]
        flagged = [f for f in p["validity"] if f["code"] == "acceptance_below_reference"]
        if reference is None:
            assert name == "real" and not flagged
            continue
        assert reference == {"mean_acceptance_length": 3.5, "source": "--reference-acceptance"}
        assert (length < 3.5 * 0.95) == bool(flagged), (length, flagged)
        assert flagged and f"{length:.2f}" in flagged[0]["message"] and "3.50" in flagged[0]["message"]


def test_each_records_client_phases_are_in_order(results):
    for name, st in results.items():
        [bench] = st["predicate"]["benchmarks"]
        records = bench["records"]
        phases = records["client_phases"]
        for i, c in enumerate(phases):
            assert c is not None, (name, i)
            assert records["sent_us"][i] <= c["written_us"], (name, i, c)
            assert records["sent_us"][i] <= c["head_us"] <= records["end_us"][i], (name, i, c)
        # Kept-alive connections: the warm-up opened them, so a benchmark's requests reuse them.
        assert sum("connect_us" in c for c in phases) <= 4, name


def test_sglangs_openai_api_is_asked_for_each_requests_steps_and_says_them(sglang_page):
    """Through SGLang's OpenAI API the runner asks what its recipe says
    (`return_spec_tokens_details`), the result names it, and each request's steps by drafts
    accepted give the acceptance at each position, as through its native API."""
    for name, st in sglang_page.items():
        fields = st["predicate"]["engine"].get("request_fields", {})
        assert fields == ({"return_spec_tokens_details": True} if name == "openai" else {}), (name, fields)
        [bench] = st["predicate"]["benchmarks"]
        records = bench["records"]
        for t in records["server_timing"]:
            histogram = t["steps_by_accepted"]
            assert len(histogram) == 4 and sum(histogram) == t["drafts"], (name, t)
            assert sum(n * h for n, h in enumerate(histogram)) == t["accepted_tokens"], (name, t)
        rates = check_acceptance_by_position(bench["summary"], records, completed_in_schedule_order(records))
        assert len(rates) == len(ACCEPTANCE), (name, rates)
        for rate, configured in zip(rates, ACCEPTANCE):
            assert abs(rate - configured) < 0.06, (name, rates)
