"""An accuracy phase (`--accuracy`, `result/v0.10`) regraded with no provebench code.

The rules are public (docs/reference/accuracy.md; schemas/src/accuracy/): `gsm8k` is lm-eval's
GSM8K task (version 3) — `strict-match` takes the first `#### (\\-?[0-9\\.\\,]+)`,
`flexible-extract` the last match of `(-?[$0-9.,]{2,})|(-?[0-9]+)`, and both compare with the
gold answer after `re.sub` of `,`, `\\$`, `(?s).*#### ` and `\\.$`, ignoring case; `exact`
compares lower-cased, whitespace-collapsed, trimmed texts without a final `.`; `choice` reads
the last `(X)` or a leading letter; `number` the last number within a tolerance. A failed
request is no answer; correct / total carries a 95 % Wilson interval. This file implements
those rules with `re`, holds them to the hand-written GSM8K cases the Rust grader's test
reads, and regrades results written by the real runner against `runner sim`'s answering mode
and against llama-server with SmolLM2-135M.
"""

import base64
import json
import math
import os
import pathlib
import re
import subprocess
import time
import zlib

import pytest

from conftest import PREDICATE_TYPE, ROOT, run_runner
from test_telemetry import free_port, running_sim

CASES = ROOT / "tests" / "fixtures" / "accuracy" / "gsm8k-cases.jsonl"
Z95 = 1.959963984540054

STRICT = re.compile(r"#### (\-?[0-9\.\,]+)")
FLEXIBLE = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")


def regex_filter(rx, text, select):
    """lm-eval's RegexFilter: findall, the selected match, its first non-empty group."""
    found = rx.findall(text)
    if not found:
        return None
    m = found[select]
    if isinstance(m, tuple):
        m = next((g for g in m if g), None)
        if m is None:
            return None
    return m.strip()


def gsm8k_norm(s):
    for ignored in [",", r"\$", r"(?s).*#### ", r"\.$"]:
        s = re.sub(ignored, "", s)
    return s.lower()


def exact_norm(s):
    s = " ".join(s.split()).lower()
    return s[:-1] if s.endswith(".") else s


def last_number(s):
    found = re.findall(r"(-?)\$?(\d(?:\d|,(?=\d))*(?:\.\d+)?)", s)
    if not found:
        return None
    sign, digits = found[-1]
    return float(("-" if sign else "") + digits.replace(",", ""))


def choice_letter(answer, choices):
    letters = min(choices or 26, 26)
    valid = [chr(ord("A") + k) for k in range(letters)]
    marked = [m for m in re.findall(r"\(([A-Z])\)", answer) if m in valid]
    if marked:
        return marked[-1]
    m = re.match(r"\s*([A-Za-z])(?:$|[.):\s])", answer)
    return m.group(1).upper() if m and m.group(1).upper() in valid else None


def marks(grader, answer, gold, choices=None, tolerance=0.0):
    def mark(found, same):
        return "unparsed" if found is None else ("correct" if same(found) else "wrong")
    if grader == "gsm8k":
        ref = gsm8k_norm(gold)
        return [mark(regex_filter(STRICT, answer, 0), lambda f: gsm8k_norm(f) == ref),
                mark(regex_filter(FLEXIBLE, answer, -1), lambda f: gsm8k_norm(f) == ref)]
    if grader == "exact":
        a = exact_norm(answer)
        return [mark(a or None, lambda f: f == exact_norm(gold))]
    if grader == "choice":
        return [mark(choice_letter(answer, choices), lambda f: f == gold.strip().upper())]
    if grader == "number":
        g = last_number(gold)
        return [mark(last_number(answer), lambda f: g is not None and abs(f - g) <= tolerance)]
    if grader == "tool_call":
        return [ast_mark(answer, gold)]
    raise AssertionError(grader)


RULES = {"gsm8k": ["strict-match", "flexible-extract"], "exact": ["exact"], "choice": ["choice"],
         "number": ["number"], "tool_call": ["ast"]}


# ---- BFCL's AST checker, applied to JSON (docs/reference/accuracy.md) ----

def bfcl_standardize(s):
    return re.sub(r"[ ,./\-_*^]", "", s).lower().replace("'", '"')


def bfcl_equal(v, gold):
    # Python's json gives int and float as BFCL's checker sees them; bool is not a number.
    if isinstance(gold, bool) or isinstance(v, bool):
        return type(v) is type(gold) and v == gold
    if isinstance(gold, str):
        return isinstance(v, str) and bfcl_standardize(v) == bfcl_standardize(gold)
    if isinstance(gold, float):
        return isinstance(v, (int, float)) and float(v) == gold
    if isinstance(gold, int):
        return type(v) is int and v == gold
    if gold is None:
        return v is None
    if isinstance(gold, list):
        return isinstance(v, list) and len(v) == len(gold) and all(map(bfcl_equal, v, gold))
    if isinstance(gold, dict):
        return (isinstance(v, dict) and v.keys() == gold.keys()
                and all(bfcl_equal(v[k], gold[k]) for k in gold))
    raise AssertionError(gold)


def bfcl_call_matches(args, params):
    if any(k not in params for k in args):
        return False
    for p, allowed in params.items():
        if p not in args:
            if "" not in allowed:
                return False
        elif not any(a != "" and bfcl_equal(args[p], a) for a in allowed):
            return False
    return True


def ast_mark(answer, gold):
    gold = json.loads(gold)
    try:
        calls = json.loads(answer)
        assert isinstance(calls, list)
        calls = [(c["name"], c["arguments"]) for c in calls]
        assert all(isinstance(n, str) and isinstance(a, str) for n, a in calls)
    except (ValueError, AssertionError, TypeError, KeyError):
        calls = None
    if not gold:
        # BFCL's irrelevance: no offered function fits, so calling none is right.
        return "wrong" if calls else "correct"
    if calls is None:
        return "unparsed"
    parsed = []
    for name, arguments in calls:
        try:
            args = json.loads(arguments)
        except ValueError:
            return "wrong"
        if not isinstance(args, dict):
            return "wrong"
        parsed.append((name, args))
    if len(parsed) != len(gold):
        return "wrong"
    used = [False] * len(parsed)
    for g in gold:
        [(function, params)] = g.items()
        k = next((k for k, (n, a) in enumerate(parsed)
                  if not used[k] and n == function and bfcl_call_matches(a, params)), None)
        if k is None:
            return "wrong"
        used[k] = True
    return "correct"


def wilson(k, n):
    if n == 0:
        return 0.0, 1.0
    p, z2 = k / n, Z95 * Z95
    d = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / d
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / d
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return low, high


def texts(column):
    return json.loads(zlib.decompress(base64.b64decode(column)))


def regrade(accuracy, which=None):
    """Each rule's score, from the stored answers and gold answers (`which`: the items each of
    `answers` and `errors` belong to, for answers asked again under load)."""
    suite, items = accuracy["suite"], accuracy["items"]
    n_items = len(items["id"])
    which = which or {"item": list(range(n_items)), "answers": texts(accuracy["answers"]),
                      "errors": accuracy["records"]["error"]}
    choices = items.get("choices") or [None] * n_items
    tolerance = suite.get("tolerance") or 0.0
    rules = RULES[suite["grader"]]
    tally = [{"correct": 0, "wrong": 0, "unparsed": 0, "failed": 0} for _ in rules]
    for i, answer, error in zip(which["item"], which["answers"], which["errors"]):
        got = ["failed"] * len(rules) if error else marks(suite["grader"], answer, items["gold"][i], choices[i], tolerance)
        for t, m in zip(tally, got):
            t[m] += 1
    n = len(which["item"])
    return [{"rule": r, "total": n, **t, "accuracy": t["correct"] / n if n else 0.0,
             "interval": dict(zip(["low", "high"], wilson(t["correct"], n)))}
            for r, t in zip(rules, tally)]


def same_grade(fresh, stored):
    assert len(fresh) == len(stored)
    for f, s in zip(fresh, stored):
        for key in ["rule", "total", "correct", "wrong", "unparsed", "failed"]:
            assert f[key] == s[key], (key, f, s)
        assert math.isclose(f["accuracy"], s["accuracy"], rel_tol=0, abs_tol=1e-12)
        for end in ["low", "high"]:
            assert math.isclose(f["interval"][end], s["interval"][end], rel_tol=0, abs_tol=1e-12), (f, s)


def check(statement):
    """Regrades the phase and, when items were asked again under load, compares each of those
    answers (trimmed) with the phase's answer to its item: more changed than 5 % of those
    compared (at least one) must be flagged `answers_change_under_load`."""
    accuracy = statement["predicate"]["accuracy"]
    fresh = regrade(accuracy)
    same_grade(fresh, accuracy["grade"]["rules"])
    under = accuracy.get("under_load")
    if under is not None:
        phase, again = texts(accuracy["answers"]), texts(under["answers"])
        failed = accuracy["records"]["error"]
        pairs = [(phase[i], a) for i, a, e in zip(under["item"], again, under["records"]["error"])
                 if e is None and failed[i] is None]
        changed = sum(p.strip() != a.strip() for p, a in pairs)
        assert (under["compared"], under["changed"]) == (len(pairs), changed), under
        same_grade(regrade(accuracy, {"item": under["item"], "answers": again,
                                      "errors": under["records"]["error"]}), under["grade"]["rules"])
        flagged = any(f["code"] == "answers_change_under_load" for f in statement["predicate"]["validity"])
        assert flagged == (changed > max(1, math.floor(len(pairs) * 0.05))), (changed, len(pairs))
    return fresh


def statement_of(path):
    return json.loads(base64.b64decode(json.loads(path.read_text())["payload"]))


def test_gsm8k_cases_are_graded_as_lm_eval_and_the_rust_grader_grade_them():
    cases = [json.loads(line) for line in CASES.read_text().splitlines()]
    assert len(cases) == 20
    for c in cases:
        assert marks("gsm8k", c["output"], c["answer"]) == [c["strict-match"], c["flexible-extract"]], c["id"]
    # Every branch is hit: each rule marks some case correct, some wrong, some unparsed.
    for k, rule in enumerate(["strict-match", "flexible-extract"]):
        assert {c[rule] for c in cases} == {"correct", "wrong", "unparsed"}, rule


def test_the_other_graders_follow_their_rules():
    assert marks("exact", "  Paris.\n", "paris") == ["correct"]
    assert marks("exact", "", "paris") == ["unparsed"]
    assert marks("choice", "(A) or rather (C)", "C", 4) == ["correct"]
    assert marks("choice", "(E)", "C", 4) == ["unparsed"]
    assert marks("number", "about $1,234.505 in all", "1234.5", None, 0.01) == ["correct"]
    assert marks("number", "3", "-3") == ["wrong"]
    low, high = wilson(8, 10)
    assert abs(low - 0.4902) < 1e-4 and abs(high - 0.9433) < 1e-4


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    d = tmp_path_factory.mktemp("accuracy")
    assert run_runner("keygen", "lab", cwd=d).returncode == 0
    with running_sim(d, "--wrong-answers", "0.25", "--seed", "9", "--ttft-ms", "1", "--itl-ms", "1") as target:
        run = run_runner("run", "--target", target, "--key", "lab.key", "--out", str(d / "a.json"),
                         "--profile", "concurrent", "--concurrency", "4", "--max-requests", "200",
                         "--data", "prompt_tokens=16,output_tokens=4",
                         "--accuracy", "builtin:arithmetic:60", "--accuracy-min", "0.5",
                         "--accuracy-during-load", "10%", cwd=d)
    assert run.returncode == 0, run.stdout + run.stderr
    verify = run_runner("verify", "a.json", "--key", "lab.pub", "--fail-on", "never", cwd=d)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    return statement_of(d / "a.json")


def test_a_simulated_phase_regrades_to_its_stored_grade(simulated):
    assert simulated["predicateType"] == PREDICATE_TYPE
    (score,) = check(simulated)
    assert score["total"] == 60 and 0 < score["wrong"] < 60 and score["unparsed"] == 0
    # Asked again under load: the simulator's answers do not depend on its load.
    under = simulated["predicate"]["accuracy"]["under_load"]
    assert under["compared"] >= 10 and under["changed"] == 0, under
    assert not any(f["code"] == "accuracy_below_threshold" for f in simulated["predicate"]["validity"])


def test_an_edited_answer_or_grade_is_caught(simulated):
    edited = json.loads(json.dumps(simulated))
    a = edited["predicate"]["accuracy"]
    answers = texts(a["answers"])
    right = next(i for i, (x, g) in enumerate(zip(answers, a["items"]["gold"])) if x.strip() == g)
    answers[right] = " 100000"
    a["answers"] = base64.b64encode(zlib.compress(json.dumps(answers).encode())).decode()
    with pytest.raises(AssertionError):
        check(edited)
    edited = json.loads(json.dumps(simulated))
    edited["predicate"]["accuracy"]["grade"]["rules"][0]["correct"] += 1
    with pytest.raises(AssertionError):
        check(edited)


def llama_server():
    env = ROOT / "build" / "llama-server.env"
    found = dict(line.split("=", 1) for line in env.read_text().splitlines() if "=" in line) if env.exists() else {}
    binary, model = os.environ.get("LLAMA_SERVER_BIN", found.get("LLAMA_SERVER_BIN")), \
        os.environ.get("LLAMA_MODEL", found.get("LLAMA_MODEL"))
    if not (binary and model):
        assert "CI" not in os.environ, "llama-server is not installed: run scripts/install-llama-server.sh"
        pytest.skip("llama-server not installed")
    return binary, model


def test_smollm2_behind_llama_server_is_graded_and_regraded(tmp_path):
    binary, model = llama_server()
    port = free_port()
    server = subprocess.Popen([binary, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-t", "1",
                               "-np", "4", "-c", "4096", "--no-webui", "-a", "smollm2-135m"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={**os.environ, "LD_LIBRARY_PATH": str(pathlib.Path(binary).parent)})
    try:
        target = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert server.poll() is None, "llama-server exited"
            try:
                import urllib.request
                if urllib.request.urlopen(f"{target}/health", timeout=1).status == 200:
                    break
            except OSError:
                time.sleep(0.2)
        run = run_runner("keygen", "lab", cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        run = run_runner("run", "--target", target, "--key", "lab.key", "--out", "s.json",
                         "--profile", "synchronous", "--max-requests", "2",
                         "--data", "prompt_tokens=16,output_tokens=8",
                         "--accuracy", "builtin:arithmetic:50", cwd=tmp_path)
        assert run.returncode == 0, run.stdout + run.stderr
    finally:
        server.terminate()
        server.wait(timeout=10)
    st = statement_of(tmp_path / "s.json")
    (score,) = check(st)
    assert score["total"] == 50 and score["failed"] == 0
    finish = st["predicate"]["accuracy"]["records"]["finish_reason"]
    assert set(finish) <= {"stop", "length"}, finish
    verify = run_runner("verify", "s.json", "--key", "lab.pub", "--fail-on", "never", cwd=tmp_path)
    assert verify.returncode == 0, verify.stdout + verify.stderr
