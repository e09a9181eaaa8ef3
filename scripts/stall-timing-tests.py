#!/usr/bin/env python3
"""Stops each timing test once, for a moment, and says how it took it.

A host can stop a virtual machine for tens of milliseconds without counting it as steal
(docs/PERFORMANCE.md). This runs every timing test (those .config/nextest.toml runs alone:
loadgen's known answers, workloads, speculative and LoRA tests and its library, the
simulator's, the clock's, and the runner's) that took at least MIN_SECONDS in the last nextest
run (target/nextest/default/junit.xml), or with --all every test, one at a time; at a random
moment within it, it stops the test's process group, every process the test started included
(SIGSTOP), for STOP_MS and lets it go on (SIGCONT), as a host that stops the machine would. A
test that fails so is a test that a host's stop can fail; one that reports the stop
(`testkit::timing::disturbed`, as `testkit::timing::Stall` reads it from an open loop) and
passes again was retried. Not a test (it judges nothing by itself): a committed measurement.

Usage: scripts/stall-timing-tests.py [--stop-ms 25] [--seed 1] [--min-seconds 0.4] [--all] [--only NAME]
       [--junit FILE] [--pytest]
--pytest stops the Python timing tests instead (the Makefile's PYTHON_TIMING_TESTS, each alone),
each within its first 8 s.
(after `make test`, whose whole nextest run leaves the junit file; a later partial run replaces
it, and the tests it did not run are then skipped).
"""

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
FILTER = (
    "(package(loadgen) & (kind(lib) | test(/^(known_answers|workloads|speculative|lora)::/)))"
    " | (package(sim) & kind(lib)) | (package(clock) & kind(lib))"
    " | (package(runner) & test(/^(sharding|uncertainty|precision|reproduce|gate::the_gate"
    "|capacity::|llama_server::a_capacity|experiment::)/))"
)


def tests(every):
    """(binary, its crate directory, test name) of every test the filter names (`every`: all)."""
    listed = subprocess.run(
        ["cargo", "nextest", "list", "--workspace", "-E", "all()" if every else FILTER,
         "--message-format", "json"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    )
    for suite in json.loads(listed.stdout)["rust-suites"].values():
        for name, case in suite["testcases"].items():
            # The listing holds every test of the binaries, each saying whether it matched.
            if case["filter-match"]["status"] == "matches":
                yield suite["binary-path"], suite["cwd"], name


def durations(junit):
    """Each test's seconds in the last run, by name."""
    seconds = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        seconds[case.get("name")] = float(case.get("time"))
    return seconds


def python_timing_tests():
    """The node ids of the Python tests `make test` runs alone (the Makefile's
    PYTHON_TIMING_TESTS), as pytest collects them."""
    with open(os.path.join(ROOT, "Makefile")) as f:
        line = next(l for l in f if l.startswith("PYTHON_TIMING_TESTS :="))
    files = line.split(":=", 1)[1].split()
    collected = subprocess.run(
        [PYTHON, "-m", "pytest", "--collect-only", "-q", *files],
        cwd=ROOT, check=True, capture_output=True, text=True,
    )
    return [t for t in collected.stdout.split() if "::" in t]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stop-ms", type=float, default=25.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--min-seconds", type=float, default=0.4)
    ap.add_argument("--all", action="store_true", help="every test, not the timing tests alone")
    ap.add_argument("--only", default="", help="only the tests whose name contains this")
    ap.add_argument("--junit", default=os.path.join(ROOT, "target/nextest/default/junit.xml"))
    ap.add_argument("--pytest", action="store_true",
                    help="the Python timing tests instead, each stopped within its first 8 s")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    # (what to run, where, its environment, its name, how long it takes)
    jobs = []
    if args.pytest:
        env = {**os.environ, "RUNNER_BIN": os.environ.get(
            "RUNNER_BIN", os.path.join(ROOT, "target", "debug", "runner"))}
        for node in python_timing_tests():
            jobs.append(([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", node],
                         ROOT, env, node, 8.0))
        listed, timed, junit = jobs, len(jobs), "(none: the first 8 s of each)"
    else:
        junit = args.junit
        if not os.path.exists(junit):
            sys.exit(f"{junit}: no nextest run to take the tests' durations from (run make test)")
        seconds = durations(junit)
        listed = list(tests(args.all))
        timed = sum(name in seconds for _, _, name in listed)
        for binary, cwd, name in listed:
            took = seconds.get(name, 0.0)
            if took >= args.min_seconds:
                jobs.append(([binary, "--exact", name, "--nocapture", "--test-threads", "1"],
                             cwd, {**os.environ, "CARGO_MANIFEST_DIR": cwd}, name, took))
    failed = 0
    for argv, cwd, env, name, took in jobs:
        if args.only not in name:
            continue
        at = rng.uniform(0.15, 0.85) * took
        started = time.monotonic()
        test = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        while time.monotonic() - started < at and test.poll() is None:
            time.sleep(0.01)
        stopped = test.poll() is None
        if stopped:
            os.killpg(test.pid, signal.SIGSTOP)
            time.sleep(args.stop_ms / 1000)
            os.killpg(test.pid, signal.SIGCONT)
        out = test.communicate()[0].decode(errors="replace")
        verdict = "passed" if test.returncode == 0 else "FAILED"
        failed += test.returncode != 0
        notes = []
        if re.search(r"timing attempt \d+ reported ", out):
            notes.append("reported the stop")
        if (n := out.count("; again")) > 0:
            notes.append(f"retried {n}×")
        if "INCONCLUSIVE" in out:
            notes.append("inconclusive")
        when = (f"stopped {args.stop_ms:.0f} ms at {at:.2f} s" if stopped
                else f"not stopped (done before {at:.2f} s)")
        print(f"{verdict:6} {when}, in {time.monotonic() - started:.1f} s  {name}"
              + (f"  ({', '.join(notes)})" if notes else ""), flush=True)
        if test.returncode != 0:
            safe = "".join(c if c.isalnum() else "_" for c in name)
            log = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"stalled-{safe}.log")
            with open(log, "w") as f:
                f.write(out)
            print(f"       its output: {log}", flush=True)
            lines = out.splitlines()
            panic = next((i for i, l in reversed(list(enumerate(lines)))
                          if "panicked at" in l or l.startswith("E ")), None)
            if panic is not None:
                print("       " + " | ".join(lines[panic:panic + 2]), flush=True)
    print(f"{failed} failed; {timed} of the {len(listed)} tests had a duration in {junit}")


if __name__ == "__main__":
    main()
