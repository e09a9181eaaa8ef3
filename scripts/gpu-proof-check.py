#!/usr/bin/env python3
"""The GPU proof's two Python halves (scripts/gpu-proof.sh runs both).

  gpu-proof-check.py energy-log FILE
      Reads every GPU's energy counter (`nvmlDeviceGetTotalEnergyConsumption`, mJ) through
      nvidia-ml-py, in a process of its own, every 20 ms until SIGTERM, one line each:
      `unix_ns mJ_gpu0 mJ_gpu1 ...`. The first lines say the driver version and each GPU's UUID.
      It is the driver's own counter read by someone other than the runner: the benchmark's energy
      is checked against it. PROVEBENCH_NVML_LIB, when set, names the library (the fake NVML of the
      tests), as it does for the runner.

  gpu-proof-check.py slo-bound RESULT [--times 3 --floor-ms 30]
      Prints the capacity search's TTFT bound in whole ms: that many times the TTFT p90 of
      RESULT's synchronous benchmark (one request at a time), at least the floor.

  gpu-proof-check.py check --result R --idle I --energy-log E --engine-log L --bench B
                           --smi S --seconds N --out DIR [--model-bytes N --devices F] [--cpu]
                           [--agentic A --speculative S --capacity C --site-verdict V --ceiling T]
                           [--model-name NAME --model-sha256 HEX]
      Checks what the proof asks and writes DIR/summary.json and DIR/summary.md; exit status 1
      when a check fails. Every check is computed from the signed results' records and columns
      (decoded here independently of the runner), the energy log, the engine's log, the
      runner benchmark's output and `nvidia-smi --query-gpu=uuid,driver_version,name`.
"""
import argparse
import base64
import bisect
import json
import math
import os
import re
import signal
import sys
import time
import zlib

ENERGY_TOLERANCE = 0.02   # benchmark energy vs the driver's counter read independently
POWER_TOLERANCE = 0.05    # benchmark energy vs power integrated over the samples
ENERGY_FLOOR_J = 3.0      # the runner keeps whole joules at each end of the counter
SAMPLE_OFFSET_MS = 100.0  # a sample's time vs when the counter read by another process reached it
COLUMNS = ["power_w", "energy_j", "sm_util_pct", "mem_used_mib", "sm_clock_mhz",
           "temperature_c", "throttle_reasons"]


# --- the independent energy reader -------------------------------------------------------------

def reasons(pynvml, handle) -> int:
    """NVML's clock event (throttle) reasons, under the name the driver's version has."""
    get = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
    try:
        return get(handle)
    except pynvml.NVMLError:
        return -1


def energy_log(path: str) -> None:
    import ctypes
    import pynvml
    lib = os.environ.get("PROVEBENCH_NVML_LIB")
    if lib:  # nvidia-ml-py loads libnvidia-ml.so.1 unless its handle is already set
        pynvml.nvmlLib = ctypes.CDLL(lib)
    pynvml.nvmlInit()
    handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with open(path, "w") as f:
        f.write(f"# driver {pynvml.nvmlSystemGetDriverVersion()}\n")
        for i, h in enumerate(handles):
            f.write(f"# gpu {i} {pynvml.nvmlDeviceGetUUID(h)}\n")
        n = 0
        while not stop:
            t = time.time_ns()
            mj = [pynvml.nvmlDeviceGetTotalEnergyConsumption(h) for h in handles]
            f.write(f"{t} {' '.join(map(str, mj))}\n")
            if n % 25 == 0:  # the throttle reasons too, twice a second, to set beside the runner's
                f.write(f"# reasons {t} {' '.join(hex(reasons(pynvml, h)) for h in handles)}\n")
            n += 1
            f.flush()
            time.sleep(0.02)
    pynvml.nvmlShutdown()


# --- reading a signed result --------------------------------------------------------------------

def statement(path: str) -> dict:
    with open(path) as f:
        envelope = json.load(f)
    return json.loads(base64.b64decode(envelope["payload"]))


def decode(text: str) -> list:
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
    if shift:
        raise ValueError("column ends inside a varint")
    return values


def unix_us(rfc3339: str) -> int:
    """`2026-11-27T03:22:50.440051Z` as µs since the epoch."""
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?Z", rfc3339)
    if not m:
        raise ValueError(f"not an RFC 3339 UTC time: {rfc3339}")
    import calendar
    y, mo, d, h, mi, s = (int(x) for x in m.groups()[:6])
    frac = (m.group(7) or "0").ljust(6, "0")[:6]
    return calendar.timegm((y, mo, d, h, mi, s)) * 1_000_000 + int(frac)


def columns(benchmark: dict) -> tuple:
    g = benchmark["telemetry"]["gpu"]
    if g is None:
        return None, []
    t = decode(g["t_us"])
    gpus = [{k: (decode(v) if isinstance(v, str) and k not in ("uuid",) else v)
             for k, v in gpu.items()} for gpu in g["gpus"]]
    return t, gpus


# --- the checks ---------------------------------------------------------------------------------

def read_energy_log(path: str) -> tuple:
    """(meta, times, totals): the driver and UUIDs the reader named, and each reading's time
    (µs since the epoch) with the counter summed over the GPUs (mJ), which only grows."""
    meta, times, totals = {"uuids": []}, [], []
    with open(path) as f:
        for line in f:
            if line.startswith("# driver "):
                meta["driver"] = line.split(None, 2)[2].strip()
            elif line.startswith("# gpu "):
                meta["uuids"].append(line.split()[3])
            elif line.startswith("# reasons "):
                meta.setdefault("reasons", set()).update(line.split()[3:])
            elif line.strip():
                parts = line.split()
                times.append(int(parts[0]) // 1000)
                totals.append(sum(int(x) for x in parts[1:]))
    return meta, times, totals


def counter_at(times: list, totals: list, t_us: int) -> float:
    """The summed counter (mJ) at t_us, linear between the two readings around it."""
    i = bisect.bisect_left(times, t_us)
    if i == 0 or i == len(times):
        raise ValueError("outside the energy log")
    ea, eb = totals[i - 1], totals[i]
    return ea + (eb - ea) * (t_us - times[i - 1]) / (times[i] - times[i - 1])


def reached_at(times: list, totals: list, mj: float):
    """When the summed counter reached mj (µs since the epoch): the first rise through it,
    linear between the two readings; None when the log never reached it."""
    i = bisect.bisect_left(totals, mj)  # the first reading at or above mj
    if i == 0 and totals and totals[0] == mj:
        i = bisect.bisect_right(totals, mj)  # the counter sat at mj from the start: where it left
        return times[i - 1] if i < len(totals) else None
    if i == 0 or i == len(totals):
        return None
    ea, eb = totals[i - 1], totals[i]
    return times[i - 1] + (times[i] - times[i - 1]) * (mj - ea) / (eb - ea)


def main_check(a: argparse.Namespace) -> int:
    checks = []

    def check(name: str, ok: bool, detail: str, **figures):
        checks.append({"check": name, "ok": bool(ok), "detail": detail, "figures": figures})

    meta, times, totals = read_energy_log(a.energy_log)
    st = statement(a.result)
    idle_st = statement(a.idle)
    sweep = st["predicate"]["benchmarks"]
    idle = idle_st["predicate"]["benchmarks"]
    # Every benchmark's columns decoded once: (sample times, per-GPU columns).
    sweep_cols = [columns(b) for b in sweep]
    idle_cols = [columns(b) for b in idle]

    # 0. The engine ran on the GPU, all layers offloaded: llama-server's own words where its
    # log has them, and the weights' bytes in the GPU's memory in any case.
    log = open(a.engine_log, errors="replace").read()
    offload = re.search(r"offloaded (\d+)/(\d+) layers to GPU", log)
    listed = open(a.devices, errors="replace").read() if os.path.exists(a.devices) else ""
    device = re.search(r"Vulkan\d+: ([^\n(]+)", listed) or re.search(r"ggml_vulkan: \d+ = ([^\n]+)", log)
    no_gpu = "no usable GPU found" in log
    if a.cpu:
        check("engine on the GPU", True, "skipped: --cpu (a CPU llama-server, the fake NVML)")
    else:
        used = [max(g.get("mem_used_mib") or [0]) for g in sweep_cols[0][1]] if sweep else []
        idle_used = [min(g.get("mem_used_mib") or [0]) for g in idle_cols[0][1]] if idle else []
        grew = (sum(used) - sum(idle_used)) if used and idle_used else 0
        model_mib = a.model_bytes / 2**20
        ok = not no_gpu and bool(device) and grew >= 0.9 * model_mib and \
            (not offload or offload.group(1) == offload.group(2))
        check("engine on the GPU", ok,
              f"GPU memory {grew} MiB above idle under load, the model {model_mib:.0f} MiB; "
              f"{offload.group(0) if offload else 'no offload line in the log'}; "
              f"{'llama-server found no GPU; ' if no_gpu else ''}"
              f"llama-server --list-devices: {device.group(1).strip() if device else 'no GPU'}",
              gpu_mem_above_idle_mib=grew, model_mib=model_mib)

    # 1. NVML columns present, and different under load from idle.
    per_bench = [gpus for _, gpus in sweep_cols + idle_cols]
    missing = sorted({c for gpus in per_bench for g in gpus for c in COLUMNS if g.get(c) is None}
                     | ({"(no GPU telemetry)"} if any(not g for g in per_bench) else set()))
    changing = {}
    for c in COLUMNS:
        values = {v for gpus in per_bench for g in gpus if g.get(c) is not None for v in g[c]}
        changing[c] = len(values)
    # Throttle reasons must be there; whether they change is the GPU's business (an H100 can
    # report the same mask throughout), so their values are reported beside what nvidia-ml-py saw.
    still = [c for c, n in changing.items() if n < 2 and c != "throttle_reasons"]
    runner_reasons = sorted({hex(v) for gpus in per_bench for g in gpus for v in (g.get("throttle_reasons") or [])})

    def mean(col, benches):
        v = [x for gpus in benches for g in gpus for x in (g.get(col) or [])]
        return sum(v) / len(v) if v else None

    load_p, idle_p = mean("power_w", per_bench[:len(sweep)]), mean("power_w", per_bench[len(sweep):])
    load_u, idle_u = mean("sm_util_pct", per_bench[:len(sweep)]), mean("sm_util_pct", per_bench[len(sweep):])
    ok = not missing and not still and load_p is not None and idle_p is not None and load_p > idle_p \
        and load_u is not None and idle_u is not None and load_u > idle_u
    check("NVML columns real", ok,
          f"missing: {missing or 'none'}; the same value throughout: {still or 'none'}; "
          f"mean power {load_p:.0f} W under load, {idle_p:.0f} W idle; "
          f"mean SM utilisation {load_u:.0f} % under load, {idle_u:.0f} % idle; "
          f"throttle reasons {', '.join(runner_reasons)} (nvidia-ml-py: {', '.join(sorted(meta.get('reasons', []))) or 'none read'})"
          if load_p is not None and idle_p is not None and load_u is not None and idle_u is not None
          else f"missing: {missing}",
          distinct_values=changing, load_power_w=load_p, idle_power_w=idle_p,
          load_sm_util_pct=load_u, idle_sm_util_pct=idle_u, throttle_reasons=runner_reasons,
          throttle_reasons_nvidia_ml_py=sorted(meta.get("reasons", [])))

    # 2. Energy: the driver's counter read by another process, and power integrated.
    energy_rows = []
    for b, (t, gpus) in zip(sweep, sweep_cols):
        stated = b["summary"]["host"]["gpu"]["energy_j"]
        start = unix_us(b["started_at"])
        try:
            independent = (counter_at(times, totals, start + t[-1]) - counter_at(times, totals, start + t[0])) / 1000
        except ValueError:
            independent = None
        # math.fsum: the same bits on every Python (3.12's sum() of floats rounds differently).
        integral = math.fsum((g["power_w"][i] + g["power_w"][i + 1]) / 2 * (t[i + 1] - t[i]) / 1e6
                             for g in gpus for i in range(len(t) - 1))
        # When the driver's counter, read by the other process, reached each value the runner
        # read: the runner's sample times are right when the two agree (a whole joule is a few ms).
        offsets = []
        for i in range(len(t)):
            when = reached_at(times, totals, sum(g["energy_j"][i] for g in gpus) * 1000 + 500)
            if when is not None:
                offsets.append((when - (start + t[i])) / 1000)
        offsets.sort()
        energy_rows.append({
            "benchmark": b["label"], "seconds": (t[-1] - t[0]) / 1e6, "energy_j": stated,
            "sample_offset_ms": offsets[len(offsets) // 2] if offsets else None,
            "driver_counter_j": independent, "power_integral_j": integral,
            "output_tokens": b["summary"]["output_tokens"],
            "output_tokens_per_j": b["summary"]["host"]["gpu"]["output_tokens_per_j"],
            "mean_power_w": b["summary"]["host"]["gpu"]["mean_power_w"],
            "max_power_w": b["summary"]["host"]["gpu"]["max_power_w"],
        })

    def within(x, ref, tol):
        return x is not None and ref is not None and abs(x - ref) <= max(tol * abs(ref), ENERGY_FLOOR_J)

    bad_counter = [r["benchmark"] for r in energy_rows if not within(r["energy_j"], r["driver_counter_j"], ENERGY_TOLERANCE)]
    bad_power = [r["benchmark"] for r in energy_rows if not within(r["energy_j"], r["power_integral_j"], POWER_TOLERANCE)]
    worst_c = max((abs(r["energy_j"] - r["driver_counter_j"]) / r["driver_counter_j"]
                   for r in energy_rows if r["driver_counter_j"]), default=None)
    worst_p = max((abs(r["energy_j"] - r["power_integral_j"]) / r["power_integral_j"]
                   for r in energy_rows if r["power_integral_j"]), default=None)
    late = [r["benchmark"] for r in energy_rows
            if r["sample_offset_ms"] is None or abs(r["sample_offset_ms"]) > SAMPLE_OFFSET_MS]
    worst_o = max((abs(r["sample_offset_ms"]) for r in energy_rows if r["sample_offset_ms"] is not None), default=None)
    check("energy = the driver's counter (2 %)", not bad_counter and not late and energy_rows,
          (f"worst {100 * worst_c:.2f} % over {len(energy_rows)} benchmarks; the runner's samples "
           f"{worst_o:.0f} ms from the counter's times at worst (median of a benchmark)")
          if worst_c is not None and worst_o is not None else "no readings",
          outside=bad_counter, misaligned=late)
    check("energy = power integrated (5 %)", not bad_power and energy_rows,
          f"worst {100 * worst_p:.2f} % over {len(energy_rows)} benchmarks" if worst_p is not None else "no readings",
          outside=bad_power)

    # 3. gpu_idle: silent under load, raised for the simulator while the GPU idles.
    def flagged(s, code):
        return sorted({f["benchmark"] for f in s["predicate"]["validity"] if f["code"] == code and f.get("benchmark") is not None})
    under_load = flagged(st, "gpu_idle")
    while_idle = flagged(idle_st, "gpu_idle")
    check("gpu_idle right", not under_load and while_idle == list(range(len(idle))),
          f"raised under load for benchmarks {under_load or 'none'}; "
          f"for the simulator on the idle GPU: {'yes' if while_idle else 'no'}")

    # 4. The runner's own cost on this host (scripts/bench-runner.sh).
    bench = open(a.bench, errors="replace").read()
    cases, case = [], None
    for line in bench.splitlines():
        if line.startswith("== ") and "runner on CPU" not in line:
            case = line[3:].strip()
        elif "benchmark done" in line:
            row = {"case": case}
            for k, v in re.findall(r"(cpu_us_per_token|pacing_p50_us|pacing_p99_us|steal_share)"
                                   r"=(?:Some\()?\"?([0-9.]+)", line):
                row[k] = float(v)
            cases.append(row)
    pacing = [c for c in cases if "pacing_p99_us" in c]
    check("runner cost measured", len(cases) >= 2 and pacing,
          "; ".join(", ".join(f"{k} {v}" for k, v in c.items() if k != "case") for c in cases)
          or "no benchmark lines", cases=cases)

    # 4b. The client's ceiling on this host (scripts/bench-client-ceiling.sh), when it ran.
    if a.ceiling:
        text = open(a.ceiling, errors="replace").read()
        # Measured is what this checks: a host whose client cannot hold 1 ms at the first rate
        # says so ("below 1000"), which is a figure too.
        top = re.search(r"^ceiling: (below )?([0-9]+) req/s", text, re.M)
        cpu = re.search(r"^closed loop: .* CPU ([0-9.]+) us a request", text, re.M)
        rates = re.findall(r"^rate ([0-9]+) req/s: .* pacing p99 ([0-9?]+) us", text, re.M)
        check("client ceiling measured", bool(top and cpu),
              f"{(top.group(1) or '') + top.group(2) if top else '?'} req/s with send lateness p99 <= 1 ms, "
              f"{cpu.group(1) if cpu else '?'} us of CPU a request; rates tried: "
              + ", ".join(f"{r} (p99 {p} us)" for r, p in rates),
              ceiling_per_s=int(top.group(2)) if top and not top.group(1) else None,
              cpu_us_per_request=float(cpu.group(1)) if cpu else None)

    # 5. Start to finish.
    check("within 8 minutes", a.seconds <= 480, f"{a.seconds} s")

    # 6. The GPU the result names is the one nvidia-smi and the driver name.
    host_gpus = st["predicate"]["host"].get("gpus") or {}
    telemetry = sweep[0]["telemetry"]["gpu"] or {}
    t_uuids = [g.get("uuid") for g in telemetry.get("gpus", [])]
    smi = [l.split(", ") for l in open(a.smi).read().splitlines() if l.count(", ") >= 2]
    detail = [f"NVML in the result: {t_uuids}, driver {telemetry.get('driver_version')}",
              f"nvidia-ml-py: {meta['uuids']}, driver {meta.get('driver')}"]
    ok = t_uuids == meta["uuids"] and telemetry.get("driver_version") == meta.get("driver")
    if smi:
        s_uuids, s_driver = [r[0] for r in smi], smi[0][1]
        host_json = json.dumps(host_gpus)
        ok = ok and t_uuids == s_uuids and telemetry.get("driver_version") == s_driver \
            and all(u in host_json for u in s_uuids) and s_driver in host_json
        detail.append(f"nvidia-smi: {s_uuids}, driver {s_driver}, {smi[0][2]}")
    else:
        detail.append("nvidia-smi: not on this host")
    check("GPU UUID and driver", ok, "; ".join(detail))

    # 10. Agentic sessions on the GPU: every turn's prompt (its agent's whole history) counted by
    # the server as the runner built it, every session completed, and llama.cpp's own count of
    # the prompt tokens it reused beside a perfect cache's: never above it by more than the BOS.
    runs = 2 + sum(bool(x) for x in (a.agentic, a.speculative, a.capacity))
    if a.agentic:
        try:
            ab = statement(a.agentic)["predicate"]["benchmarks"][0]
            rec, s = ab["records"], ab["summary"]
            n = len(rec["phase"])
            exact = sum(rec["input_tokens_client"][i] == rec["input_tokens_server"][i] for i in range(n))
            failed = sum(e is not None for e in rec["error"])
            cached = [c or {} for c in rec.get("cached_tokens", [None] * n)]
            over = sum((c.get("server") or 0) > (c.get("ideal") or 0) + 1 for c in cached)
            x, p = s.get("sessions") or {}, s.get("prefix_cache") or {}
            ideal, server = (p.get("ideal") or {}), (p.get("server") or {})
            ok = n > 0 and failed == 0 and exact == n and over == 0 and x.get("sessions") == x.get("completed") \
                and ideal.get("cached_tokens", 0) > 0 and "cached_tokens" in server
            check("agentic sessions", ok,
                  f"{x.get('completed')} of {x.get('sessions')} sessions completed, {n} requests ({failed} failed), "
                  f"{exact} prompts counted exactly by the server; the server reused {server.get('cached_tokens')} "
                  f"prompt tokens where a perfect cache serves {ideal.get('cached_tokens')} "
                  f"({over} requests above it by more than the BOS)",
                  sessions=x.get("sessions"), ideal_hit_rate=ideal.get("hit_rate"),
                  server_hit_rate=server.get("hit_rate"))
        except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
            check("agentic sessions", False, f"{a.agentic}: {e}")

    # 11. The model named by something a reader can use: its file's name (what the engine served
    # it under) and its sha256, in every result the engine served, never a temporary path.
    served = [(name, path) for name, path in (("sweep", a.result), ("agentic", a.agentic),
                                               ("speculative", a.speculative), ("capacity", a.capacity)) if path]
    if a.model_name:
        named, wrong = [], []
        for name, path in served:
            try:
                m = statement(path)["predicate"]["model"]
            except (OSError, ValueError, KeyError) as e:
                wrong.append(f"{name}: {e}")
                continue
            digest = (m.get("digest") or {}).get("sha256")
            if m.get("id") == a.model_name and "/" not in m["id"] and digest == a.model_sha256:
                named.append(name)
            else:
                wrong.append(f"{name}: {m.get('id')} sha256 {digest}")
        check("model named", not wrong and named,
              f"{a.model_name}, sha256 {a.model_sha256}, in {', '.join(named) or 'no result'}"
              + (f"; otherwise in {'; '.join(wrong)}" if wrong else ""),
              model=a.model_name, sha256=a.model_sha256)

    # 12. Speculative decoding: llama.cpp's per-request draft counts (its `timings`) sum to what its
    # /metrics counted over the benchmark, acceptance is neither nil nor whole, and later draft
    # positions are accepted no more often than earlier ones (position i only after all before it).
    if a.speculative:
        try:
            sb = statement(a.speculative)["predicate"]["benchmarks"][0]
            rec, s = sb["records"], sb["summary"]
            n = len(rec["phase"])
            timing = [t or {} for t in rec.get("server_timing", [None] * n)]
            failed = sum(e is not None for e in rec["error"])
            drafted = sum(t.get("draft_tokens") or 0 for t in timing)
            accepted = sum(t.get("accepted_tokens") or 0 for t in timing)
            counters = ((s.get("host") or {}).get("server") or {}).get("speculative") or {}
            by_position = counters.get("acceptance_by_position") or []
            rate = accepted / drafted if drafted else None
            monotone = all(x >= y - 1e-9 for x, y in zip(by_position, by_position[1:]))
            clock = s.get("server_clock") or {}
            ok = n > 0 and failed == 0 and drafted > 0 and counters.get("draft_tokens") == drafted \
                and counters.get("accepted_tokens") == accepted and rate is not None and 0 < rate < 1 \
                and by_position and monotone and clock.get("clocks_disagree") == 0
            check("speculative decoding", ok,
                  f"{n} requests ({failed} failed); drafted {drafted}, accepted {accepted} by the requests' "
                  f"own counts, {counters.get('draft_tokens')} and {counters.get('accepted_tokens')} by /metrics; "
                  f"acceptance {rate if rate is None else round(rate, 3)}, mean acceptance length "
                  f"{round(counters.get('mean_acceptance_length') or 0, 3)}, by position "
                  f"{[round(x, 3) for x in by_position]}; clocks disagree on {clock.get('clocks_disagree')}; "
                  + (f"{s['events']['mean_tokens_per_event']} tokens an event" if s.get("events")
                     else "the engine streams one token an event and says nothing per event"),
                  acceptance_rate=rate, mean_acceptance_length=counters.get("mean_acceptance_length"),
                  acceptance_by_position=by_position)
        except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
            check("speculative decoding", False, f"{a.speculative}: {e}")

    # 13. Capacity under an SLO, with the runner starting the engine: on a GPU the search brackets
    # an answer (a load that passed and one above it that did not) over two steps or more; on a
    # CPU shared with the other suites it need only have searched: a step run and judged (beside
    # Chromium and three test suites, concurrency 1 alone once left TTFT p90 at the 30 ms bound,
    # undecided, and the search rightly stopped there). Every verdict is judged again by
    # `runner verify`.
    if a.capacity:
        try:
            cp = statement(a.capacity)["predicate"]
            c = cp["capacity"]
            steps = [b["label"] for b in cp["benchmarks"] if b.get("capacity_step") is not None]
            bracket = c.get("passed") is not None and (c.get("failed") or c.get("undecided")) is not None
            ok = (len(steps) >= 2 and bracket) or (a.cpu and len(steps) >= 1)
            check("capacity under an SLO", ok,
                  f"{', '.join(c['slo'])}: passed at {c.get('passed')}, failed at {c.get('failed')}, "
                  f"undecided at {c.get('undecided')} (converged: {c.get('converged')}), goodput "
                  f"{round(c.get('goodput_per_s') or 0, 1)} req/s; {len(steps)} steps: {', '.join(steps)}",
                  passed=c.get("passed"), failed=c.get("failed"), undecided=c.get("undecided"), steps=len(steps))
        except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
            check("capacity under an SLO", False, f"{a.capacity}: {e}")

    # 9. Every run counted: each registered in the proof key's attempt log before its first
    # request and closed as completed, the log published with them and the site verified
    # (`runner verify-site --json`), the log's entries, tiles and checkpoint included.
    if a.site_verdict:
        try:
            v = json.load(open(a.site_verdict))
        except (OSError, ValueError) as e:
            v = {"ok": False, "problems": [{"path": a.site_verdict, "reason": str(e)}]}
        log = (v.get("logs") or [{}])[0]
        t = log.get("tally", {})
        ok = v.get("ok") is True and t.get("registered") == runs and t.get("completed") == runs \
            and log.get("published") == runs
        check("attempt log", ok,
              f"{t.get('registered')} attempts registered, {t.get('completed')} completed, "
              f"{log.get('published')} published, in {log.get('origin')} ({log.get('size')} entries); "
              f"the site {'verifies' if v.get('ok') else 'does NOT verify: ' + '; '.join(p.get('reason', '') for p in v.get('problems', [])[:3])}",
              attempts=t.get("registered"), published=log.get("published"))

    summary = {
        "ok": all(c["ok"] for c in checks),
        "seconds": a.seconds,
        "gpu": (smi[0][2] if smi else "fake NVML"),
        "driver": meta.get("driver"),
        "checks": checks,
        "benchmarks": energy_rows,
    }
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    md = [f"# GPU proof: {summary['gpu']}, driver {summary['driver']}", "",
          f"{'All checks passed' if summary['ok'] else 'Some checks FAILED'} in {a.seconds} s.", "",
          "| Check | Result | Detail |", "| --- | --- | --- |"]
    md += [f"| {c['check']} | {'pass' if c['ok'] else 'FAIL'} | {c['detail']} |" for c in checks]
    md += ["", "| Benchmark | s | Energy (J) | Driver counter (J) | Power integral (J) | Mean W | Max W | Output tokens | Tokens/J |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]

    def f(x, p=1):
        return "–" if x is None else f"{x:.{p}f}"
    md += [f"| {r['benchmark']} | {f(r['seconds'])} | {r['energy_j']} | {f(r['driver_counter_j'])} | "
           f"{f(r['power_integral_j'])} | {f(r['mean_power_w'])} | {r['max_power_w']} | {r['output_tokens']} | "
           f"{f(r['output_tokens_per_j'], 3)} |" for r in energy_rows]
    with open(os.path.join(a.out, "summary.md"), "w") as fh:
        fh.write("\n".join(md) + "\n")
    print("\n".join(md))
    return 0 if summary["ok"] else 1


def slo_bound(a: argparse.Namespace) -> int:
    """The TTFT bound of the capacity search, in whole ms (see the module's doc)."""
    [sync] = [b for b in statement(a.result)["predicate"]["benchmarks"] if b["label"] == "synchronous"]
    p90 = sync["summary"]["ttft_ms"]["p90"]
    return max(math.ceil(a.times * p90), math.ceil(a.floor_ms))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("energy-log")
    e.add_argument("file")
    c = sub.add_parser("check")
    for name in ("result", "idle", "energy-log", "engine-log", "bench", "smi", "out"):
        c.add_argument(f"--{name}", required=True)
    c.add_argument("--seconds", type=int, required=True)
    c.add_argument("--model-bytes", type=int, default=0)
    c.add_argument("--devices", default="/dev/null", help="what `llama-server --list-devices` printed")
    c.add_argument("--cpu", action="store_true")
    c.add_argument("--site-verdict", default=None, help="`runner verify-site --json` of the site the kit published")
    c.add_argument("--agentic", default=None, help="the agentic sessions' result")
    c.add_argument("--ceiling", default=None, help="what scripts/bench-client-ceiling.sh printed")
    c.add_argument("--speculative", default=None, help="the speculative run's result")
    c.add_argument("--capacity", default=None, help="the capacity search's result")
    c.add_argument("--model-name", default=None, help="the model's file name, as the results must name it")
    c.add_argument("--model-sha256", default=None)
    b = sub.add_parser("slo-bound")
    b.add_argument("result")
    b.add_argument("--times", type=float, default=3.0)
    b.add_argument("--floor-ms", type=float, default=30.0)
    a = p.parse_args()
    if a.cmd == "energy-log":
        energy_log(a.file)
    elif a.cmd == "slo-bound":
        print(slo_bound(a))
    else:
        sys.exit(main_check(a))


if __name__ == "__main__":
    main()
