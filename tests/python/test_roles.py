"""Prefill and decode roles (`result/v0.17`) recomputed with no provebench code.

The definitions are public (docs/reference/roles.md): the telemetry's `roles` declare each
side's GPUs and hold its servers' scraped metrics; the summary's `host.roles` gives each role's
tokens per second per GPU, its servers' count beside the client's, its GPUs' energy and joules
per token, and the KV transfers and their mean time; `uncertainty.by_role` their batch-means
intervals.

Two `runner sim` processes serve one deployment apart (the decode side prefills each request
on the prefill side, then takes a stated KV-transfer time), each logging what it did
(`--truth-log`); the real runner measures the decode side with the roles declared and the fake
NVML playing three GPUs at known power. Every number is recomputed here from the document,
and the throughput per GPU and the transfer time are held to the simulators' logs.
"""

import json
from fractions import Fraction

import pytest

from conftest import check_current_and_valid, run_runner, statement_of
from test_telemetry import decode, running_sim
from test_uncertainty import BATCHES, close, half_width, samples

KV_TRANSFER_MS = 9
SCRIPT = """\
gpus 3
at_ms 0 gpu 0 power_mw 350000
at_ms 0 gpu 1 power_mw 250000
at_ms 0 gpu 2 power_mw 150000
"""


@pytest.fixture(scope="module")
def result(tmp_path_factory, fake_nvml):
    d = tmp_path_factory.mktemp("roles")
    (d / "p").mkdir()
    (d / "d").mkdir()
    (d / "nvml.script").write_text(SCRIPT)
    with running_sim(d / "p", "--ttft-ms", "3", "--prefill-us-per-token", "120",
                     "--truth-log", str(d / "prefill.jsonl")) as prefill:
        with running_sim(d / "d", "--ttft-ms", "2", "--itl-ms", "2", "--itl-noise-ms", "0.5",
                         "--prefill-url", prefill, "--kv-transfer-ms", str(KV_TRANSFER_MS),
                         "--truth-log", str(d / "decode.jsonl")) as decode_side:
            run = run_runner("run", "--target", decode_side, "--no-sign", "--out", str(d / "r.json"),
                             "--profile", "concurrent", "--concurrency", "4", "--max-requests", "150",
                             "--warmup-requests", "6", "--data", "prompt_tokens=160,output_tokens=10",
                             "--gpu-sample-ms", "30", "--metrics-sample-ms", "30",
                             "--prefill-gpus", "0", "--decode-gpus", "1,2",
                             "--prefill-metrics-url", f"{prefill}/metrics",
                             "--decode-metrics-url", f"{decode_side}/metrics",
                             cwd=d, env={"PROVEBENCH_NVML_LIB": str(fake_nvml),
                                         "FAKE_NVML_SCRIPT": str(d / "nvml.script")})
            assert run.returncode == 0, run.stdout + run.stderr
    logs = {side: [json.loads(line) for line in (d / f"{side}.jsonl").read_text().splitlines()]
            for side in ("prefill", "decode")}
    return statement_of(d / "r.json"), logs


def increase(column):
    """Prometheus' increase: a fall is a restart from zero."""
    return sum((b - a if b >= a else b for a, b in zip(column, column[1:])), Fraction(0))


def metric_columns(server, role):
    values = {s["name"]: [Fraction(v, 10 ** s["decimals"]) for v in decode(s["values"])]
              for s in server["series"]}
    return [values[name] for name in server["roles"].get(role, []) if name in values]


def role_increase(server, role, within=None):
    cols = metric_columns(server, role)
    if not cols:
        return None
    if within is None:
        return sum((increase(c) for c in cols), Fraction(0))
    return sum((increase(c[within.start:within.stop + 1]) for c in cols), Fraction(0))


def test_each_roles_numbers_follow_from_the_records_and_the_telemetry(result):
    st, _ = result
    check_current_and_valid({"roles": st})
    [bench] = st["predicate"]["benchmarks"]
    records, host = bench["records"], bench["summary"]["host"]
    declared = bench["telemetry"]["roles"]
    stated, intervals = host["roles"], bench["summary"]["uncertainty"]["by_role"]
    assert [r["role"] for r in stated] == ["prefill", "decode"]
    _, ends, window = samples(records, None)
    span_s = (window[1] - window[0]) / 1e6
    n = len(records["phase"])

    def work(kind, i):
        if kind == "prefill":
            v = records["input_tokens_server"][i]
            return (records["input_tokens_client"][i] or 0) if v is None else v
        v = records["output_tokens_server"][i]
        return records["output_tokens_client"][i] if v is None else v

    completed = [i for i in range(n) if records["error"][i] is None]
    gpu = bench["telemetry"]["gpu"]
    t = decode(gpu["t_us"])
    energy_columns = {g["index"]: decode(g["energy_j"]) for g in gpu["gpus"]}
    for role, s, iv in zip(declared, stated, intervals):
        kind, gpus = role["role"], len(role["gpus"])
        assert s["gpus"] == gpus
        measured = [i for i in completed if records["phase"][i] == "measured"]
        tokens = sum(work(kind, i) for i in measured)
        assert s["tokens"] == tokens
        rate = tokens / span_s
        assert close(s["tokens_per_s_per_gpu"], rate / gpus)
        # The interval: the window's ten slice rates, divided by the GPUs.
        start, end = window
        per_slice = [0] * BATCHES
        for i in measured:
            offset = min(max(records["end_us"][i] - start, 0), end - start - 1)
            per_slice[offset * BATCHES // (end - start)] += work(kind, i)
        hw = half_width([c / (span_s / BATCHES) for c in per_slice])
        assert close(iv["tokens_per_s_per_gpu"]["low"], (rate - hw) / gpus)
        assert close(iv["tokens_per_s_per_gpu"]["high"], (rate + hw) / gpus)
        # The servers' count beside the client's.
        bench_tokens = sum(work(kind, i) for i in completed)
        assert s["benchmark_tokens"] == bench_tokens
        counter = "prompt_tokens" if kind == "prefill" else "generation_tokens"
        server = sum(role_increase(m, counter) for m in role["servers"])
        assert s["server_tokens"] == server
        assert s["counts_disagree"] == (abs(server - bench_tokens) > Fraction(1, 100) * bench_tokens)
        # Energy: the role's GPUs' counters.
        energy = sum(energy_columns[g][-1] - energy_columns[g][0] for g in role["gpus"])
        assert s["energy_j"] == energy
        assert close(s["j_per_token"], energy / bench_tokens)
        runs = []
        for j in range(BATCHES):
            lo, hi = j * (len(t) - 1) // BATCHES, (j + 1) * (len(t) - 1) // BATCHES
            runs.append([sum(energy_columns[g][hi] - energy_columns[g][lo] for g in role["gpus"]), 0, 0])
        bounds = [t[(j + 1) * (len(t) - 1) // BATCHES] for j in range(BATCHES)]
        for i in completed:
            j = next((k for k, b in enumerate(bounds) if records["end_us"][i] <= b), BATCHES - 1)
            runs[j][1] += work(kind, i)
            runs[j][2] += 1
        assert all(r[2] >= 5 for r in runs), runs
        point = energy / sum(r[1] for r in runs)
        hw = half_width([r[0] / r[1] for r in runs])
        assert close(iv["j_per_token"]["low"], point - hw) and close(iv["j_per_token"]["high"], point + hw)
        # KV transfers, where the role's servers count them.
        counts = [role_increase(m, "kv_transfers") for m in role["servers"]]
        if all(c is None for c in counts):
            assert s["kv_transfers"] is None and s["kv_transfer_mean_ms"] is None
            assert iv["kv_transfer_mean_ms"] is None
            continue
        [m] = role["servers"]
        seconds = role_increase(m, "kv_transfer_seconds") or 0
        count = role_increase(m, "kv_transfers")
        assert s["kv_transfers"] == count
        mean = seconds * 1000 / count
        assert close(s["kv_transfer_mean_ms"], mean)
        steps = len(decode(m["t_us"])) - 1
        stats = []
        for j in range(BATCHES):
            lo, hi = j * steps // BATCHES, (j + 1) * steps // BATCHES
            within = range(lo, hi)
            c = role_increase(m, "kv_transfers", within)
            assert c >= 5
            stats.append(float(role_increase(m, "kv_transfer_seconds", within) * 1000 / c))
        hw = half_width(stats)
        assert close(iv["kv_transfer_mean_ms"]["low"], mean - hw)
        assert close(iv["kv_transfer_mean_ms"]["high"], mean + hw)


def test_throughput_per_gpu_and_the_transfer_time_are_the_simulators(result):
    st, logs = result
    [bench] = st["predicate"]["benchmarks"]
    prefill, decode_role = bench["summary"]["host"]["roles"]
    # The benchmark's measured requests: the workload's prompts in arrival order, after the
    # warm-up's six (of the 150).
    def measured(log):
        return sorted((t for t in log if t["prompt_tokens"] == 160), key=lambda t: t["index"])[6:]

    mine, prefilled = measured(logs["decode"]), measured(logs["prefill"])
    assert len(mine) == len(prefilled) == 144
    first = min(t["received_us"] for t in mine)
    last = max(t["end_us"] for t in mine)
    span_s = (last - first) / 1e6
    truth_in = sum(t["prompt_tokens"] for t in prefilled) / span_s
    truth_out = sum(t["output_tokens"] for t in mine) / span_s / 2
    assert abs(prefill["tokens_per_s_per_gpu"] - truth_in) <= 0.01 * truth_in
    assert abs(decode_role["tokens_per_s_per_gpu"] - truth_out) <= 0.01 * truth_out
    # The runner's probes before the benchmark crossed over too, outside its scrapes.
    benchmark = [t["kv_transfer_us"] / 1000 for t in logs["decode"] if t["prompt_tokens"] == 160]
    truth_ms = sum(benchmark) / len(benchmark)
    assert abs(decode_role["kv_transfer_mean_ms"] - truth_ms) <= 0.01 * truth_ms
    assert decode_role["kv_transfer_mean_ms"] >= KV_TRANSFER_MS
