"""Host telemetry (`result/v0.3`) re-derived with no provebench code.

A document's `summary.host` is what the runner says the GPUs and the engine did. A reader
should not have to take that on trust: the raw columns are in the document, and the
definitions are public (schemas/src/telemetry.rs, module doc). This file decodes the
columns from the published format alone (first value then neighbour differences, zigzag,
LEB128 varints, zlib, base64) and recomputes every field of `summary.host.gpu` and
`summary.host.server` in exact rational arithmetic, then compares: integer-valued results
must match exactly, the others to a relative 1e-12.

The document comes from the real runner against `runner sim` on a fake NVML library
(testkit/fixtures/fake_nvml.c) playing a scripted timeline: two GPUs at different
constant power, one of them thermally throttled for a while. The sim resets some streams
and the run has warm-up requests, so "output tokens of ALL completed requests" differs
from both "measured only" and "every request". Independently of the runner's arithmetic,
the energy counter must agree with the scripted power x the sampled span.
"""

import base64
import json
import math
import socket
import subprocess
import time
import zlib
from contextlib import contextmanager
from fractions import Fraction

import pytest

from conftest import PREDICATE_TYPE, RUNNER, run_runner, validator

SLOWDOWN = 0x8 | 0x20 | 0x40 | 0x80  # HwSlowdown, SwThermal, HwThermal, HwPowerBrake
POWER_CAP = 0x4  # SwPowerCap
POWER_W = (300, 150)
# GPU 0: power-capped throughout, plus GpuIdle (0x1), which counts as neither.
# GPU 1: power-capped, and from 300 ms to 800 ms also SwThermalSlowdown (0x20).
SCRIPT = f"""\
gpus 2
energy_start_mj 9000000000
at_ms 0   gpu 0 power_mw {POWER_W[0]}000 sm 90 mem 40 mem_used_mib 70000 sm_clock 1980 temp 60 throttle 0x5
at_ms 0   gpu 1 power_mw {POWER_W[1]}000 sm 50 mem 20 mem_used_mib 30000 sm_clock 1500 temp 55 throttle 0x4
at_ms 300 gpu 1 sm 77 temp 83 throttle 0x24
at_ms 800 gpu 1 mem_used_mib 75000 temp 70 throttle 0x4
"""


def decode(text):
    """A column: base64, zlib, LEB128 varints of zigzagged neighbour differences."""
    data = zlib.decompress(base64.b64decode(text, validate=True))
    values, value, delta, shift = [], 0, 0, 0
    for byte in data:
        delta |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            value += (delta >> 1) ^ -(delta & 1)
            values.append(value)
            delta, shift = 0, 0
    assert shift == 0, "column ends inside a varint"
    return values


def gaps(t):
    return max((b - a for a, b in zip(t, t[1:])), default=0)


def gpu_summary(g, output_tokens):
    t = decode(g["t_us"])
    n, span = len(t), (t[-1] - t[0] if t else 0)
    gpus = [{k: decode(v) for k, v in gpu.items() if k not in ("index", "uuid") and v is not None}
            for gpu in g["gpus"]]
    energy = (sum(c["energy_j"][-1] - c["energy_j"][0] for c in gpus)
              if n and gpus and all("energy_j" in c for c in gpus) else None)
    power = [c["power_w"] for c in gpus if "power_w" in c]
    util = [u for c in gpus for u in c.get("sm_util_pct", [])]
    reasons = list(zip(*(c["throttle_reasons"] for c in gpus if "throttle_reasons" in c)))

    def most(key):
        return max((v for c in gpus for v in c.get(key, [])), default=None)

    return {
        "samples": n,
        "span_us": span,
        "max_gap_us": gaps(t),
        "energy_j": energy,
        "mean_power_w": Fraction(energy) / Fraction(span, 10**6) if energy is not None and span else None,
        "max_power_w": max(map(sum, zip(*power))) if power and n else None,
        "output_tokens_per_j": Fraction(output_tokens, energy) if energy else None,
        "j_per_output_token": Fraction(energy, output_tokens) if energy is not None and output_tokens else None,
        "mean_sm_util_pct": Fraction(sum(util), len(util)) if util else None,
        "max_mem_used_mib": most("mem_used_mib"),
        "max_temperature_c": most("temperature_c"),
        "throttled_samples": sum(any(r & SLOWDOWN for r in sample) for sample in reasons),
        "power_capped_samples": sum(any(r & POWER_CAP for r in sample) for sample in reasons),
    }


def server_summary(m, records=None):
    """The summary's `host.server` from the scraped columns; with the benchmark's `records`, its
    `ttft` too (the engine's TTFT histogram beside the client's TTFT from send)."""
    t = decode(m["t_us"])
    values = {s["name"]: [Fraction(v, 10 ** s["decimals"]) for v in decode(s["values"])] for s in m["series"]}

    def columns(role):
        return [values[name] for name in m["roles"].get(role, []) if name in values]

    def per_sample(role):  # a gauge: the sum of the role's metrics at each sample
        cols = columns(role)
        return [sum(s) for s in zip(*cols)] if cols and t else None

    def increase(role):  # a counter: Prometheus' increase, a decrease being a restart from 0
        cols = columns(role)
        return sum((b - a if b >= a else b for c in cols for a, b in zip(c, c[1:])), Fraction(0)) if cols else None

    out = {"samples": len(t), "max_gap_us": gaps(t)}
    for gauge in ("running", "waiting"):
        v = per_sample(gauge)
        out[f"{gauge}_mean"] = Fraction(sum(v), len(v)) if v else None
        out[f"{gauge}_max"] = max(v) if v else None
    kv = per_sample("kv_cache_usage")
    out["kv_cache_usage_max"] = max(kv) if kv else None
    for counter in ("prefix_cache_queries", "prefix_cache_hits", "preemptions", "requests_finished",
                    "prompt_tokens", "generation_tokens"):
        out[counter] = increase(counter)
    hits, queries = out["prefix_cache_hits"], out["prefix_cache_queries"]
    out["prefix_cache_hit_rate"] = hits / queries if hits is not None and queries else None
    seconds, timed = increase("time_to_first_token_seconds"), increase("time_to_first_token_requests")
    if records is not None and seconds is not None and timed:
        # Every request with a first token, warm-up included: the engine timed them all.
        client = [f - s for f, s in zip(records["first_token_us"], records["sent_us"]) if f is not None]
        if client:
            mean, client_mean = seconds / timed * 1000, Fraction(sum(client), len(client) * 1000)
            out["ttft"] = {"requests": timed, "mean_ms": mean, "client_requests": len(client),
                           "client_mean_ms": client_mean, "client_overhead_ms": client_mean - mean}
    return out


def disagreements(stated, exact):
    """Fields where the document differs from the exact value (integers: exactly; else 1e-12)."""
    assert stated.keys() == exact.keys(), stated.keys() ^ exact.keys()
    wrong = {}
    for key, want in exact.items():
        got = stated[key]
        if want is None or got is None:
            ok = got is want
        elif Fraction(want).denominator == 1:
            ok = got == want
        else:
            ok = math.isclose(got, float(want), rel_tol=1e-12)
        if not ok:
            wrong[key] = (got, float(want) if want is not None else None)
    return wrong


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_accepting(port, proc, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"runner sim exited with {proc.returncode}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"runner sim did not accept connections on {port} within {seconds} s")


@contextmanager
def running_sim(directory, *flags):
    """`runner sim FLAGS` on a free loopback port, its output in DIRECTORY/sim.log; yields the
    target URL once it accepts connections, and stops it on the way out."""
    port = free_port()
    with open(directory / "sim.log", "w") as log:
        sim = subprocess.Popen([RUNNER, "sim", "--port", str(port), *flags], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until_accepting(port, sim)
        yield f"http://127.0.0.1:{port}"
    finally:
        sim.terminate()
        sim.wait(timeout=10)


@pytest.fixture(scope="module")
def statement(tmp_path_factory, fake_nvml):
    """An unsigned result measured with fake NVML against `runner sim`."""
    d = tmp_path_factory.mktemp("telemetry")
    lib = fake_nvml
    (d / "nvml.script").write_text(SCRIPT)
    with running_sim(d, "--reset-fraction", "0.1") as target:
        run = run_runner("run", "--target", target, "--no-sign", "--out", str(d / "t.json"),
                         "--profile", "concurrent", "--concurrency", "4", "--max-requests", "40",
                         "--warmup-requests", "4", "--data", "prompt_tokens=64,output_tokens=16",
                         cwd=d, env={"PROVEBENCH_NVML_LIB": str(lib), "FAKE_NVML_SCRIPT": str(d / "nvml.script")})
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(base64.b64decode(json.loads((d / "t.json").read_text())["payload"]))


@pytest.fixture(scope="module")
def benchmark(statement):
    [bench] = statement["predicate"]["benchmarks"]
    return bench


def test_the_document_validates_against_the_checked_in_schema(statement):
    assert statement["predicateType"] == PREDICATE_TYPE
    validator("statement.schema.json").validate(statement)


def completed_output_tokens(records):
    """Output tokens of every completed request, all phases: server usage, else the client's count."""
    return sum(client if server is None else server
               for error, server, client in zip(records["error"], records["output_tokens_server"],
                                                records["output_tokens_client"])
               if error is None)


def test_every_column_has_one_entry_per_sample(benchmark):
    gpu, server = benchmark["telemetry"]["gpu"], benchmark["telemetry"]["server"]
    for part, columns in (("gpu", [c for g in gpu["gpus"] for k, c in g.items() if k not in ("index", "uuid")]),
                          ("server", [s["values"] for s in server["series"]])):
        t = decode(benchmark["telemetry"][part]["t_us"])
        assert len(t) >= 2 and t == sorted(t), part
        assert all(c is not None for c in columns), part  # fake NVML reports every reading
        assert {len(decode(c)) for c in columns} == {len(t)}, part


def test_the_gpu_summary_follows_from_the_columns(benchmark):
    tokens = completed_output_tokens(benchmark["records"])
    exact = gpu_summary(benchmark["telemetry"]["gpu"], tokens)
    assert disagreements(benchmark["summary"]["host"]["gpu"], exact) == {}
    # The scenario exercises what it should: per sample, not per GPU; the mask, not any bit.
    assert 0 < exact["throttled_samples"] < exact["samples"]
    assert exact["power_capped_samples"] == exact["samples"]
    assert exact["max_power_w"] == sum(POWER_W)
    assert exact["max_mem_used_mib"] == 75000 and exact["max_temperature_c"] == 83


def test_output_tokens_per_joule_counts_every_completed_request(benchmark):
    records = benchmark["records"]
    tokens = completed_output_tokens(records)
    assert "warmup" in records["phase"], "no warm-up request: measured-only would pass too"
    assert any(e is not None and c > 0 for e, c in zip(records["error"], records["output_tokens_client"])), \
        "no failed request with tokens: counting every request would pass too"
    energy = benchmark["summary"]["host"]["gpu"]["energy_j"]
    assert math.isclose(benchmark["summary"]["host"]["gpu"]["output_tokens_per_j"], tokens / energy, rel_tol=1e-12)


def test_the_server_summary_follows_from_the_columns(benchmark):
    exact = server_summary(benchmark["telemetry"]["server"], benchmark["records"])
    stated = dict(benchmark["summary"]["host"]["server"])
    # The engine's own TTFT (the simulator's histogram, as vLLM's) beside the client's.
    ttft = exact.pop("ttft")
    assert disagreements(stated.pop("ttft"), ttft) == {}
    assert disagreements(stated, exact) == {}
    assert exact["requests_finished"] > 0 and exact["generation_tokens"] > 0
    assert ttft["requests"] == ttft["client_requests"] == len(benchmark["records"]["sent_us"])
    assert 0 <= ttft["client_overhead_ms"] < 5, ttft


def test_the_energy_counter_agrees_with_the_scripted_power(benchmark):
    gpu = benchmark["summary"]["host"]["gpu"]
    expected = sum(POWER_W) * gpu["span_us"] / 1e6
    assert expected > 100, "too short a benchmark to compare"
    assert abs(gpu["energy_j"] - expected) <= 0.02 * expected, (gpu["energy_j"], expected)
