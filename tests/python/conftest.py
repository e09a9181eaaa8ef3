"""Fixtures: a key pair and signed results written by the real runner binary."""

import base64
import json
import os
import pathlib
import subprocess

import jsonschema
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUNNER = str(pathlib.Path(os.environ.get("RUNNER_BIN", ROOT / "target" / "debug" / "runner")).resolve())
SCHEMAS = ROOT / "schemas" / "json"


def _current_predicate_type():
    """The `predicateType` this version writes: the published statement schema's `$id` is
    `PREDICATE_TYPE/statement.schema.json`."""
    schema_id = json.loads((SCHEMAS / "statement.schema.json").read_text())["$id"]
    return schema_id.removesuffix("/statement.schema.json")


PREDICATE_TYPE = _current_predicate_type()


def statement_of(path):
    """The Statement a result file holds (its envelope's payload)."""
    return json.loads(base64.b64decode(json.loads(path.read_text())["payload"]))


def check_current_and_valid(statements):
    """Each statement of {name: statement} is of the version this runner writes and valid against
    the published statement schema."""
    check = validator("statement.schema.json")
    for name, st in statements.items():
        assert st["predicateType"] == PREDICATE_TYPE, name
        errors = list(check.iter_errors(st))
        assert not errors, (name, [e.message for e in errors[:3]])


def run_runner(*args, cwd, env=None):
    return subprocess.run([RUNNER, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "RUST_LOG": "warn", **(env or {})})


def validator(name):
    """A Draft 2020-12 validator (formats checked) of a checked-in schema in schemas/json."""
    schema = json.loads((SCHEMAS / name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


@pytest.fixture(scope="session")
def fake_nvml(tmp_path_factory):
    """The NVML library the tests build (testkit/fixtures/fake_nvml.c), played by FAKE_NVML_SCRIPT."""
    lib = tmp_path_factory.mktemp("nvml") / "libfake_nvml.so"
    cc = subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(lib),
                         str(ROOT / "testkit" / "fixtures" / "fake_nvml.c")], capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    return lib


@pytest.fixture(scope="session")
def signed(tmp_path_factory):
    """(directory, keyid, envelope dict, statement dict) of a signed synthetic result."""
    d = tmp_path_factory.mktemp("signed")
    keygen = run_runner("keygen", "lab", cwd=d)
    assert keygen.returncode == 0, keygen.stderr
    synth = run_runner("synth", "--key", "lab.key", "--out", "r.json", "--requests", "3", "--output-tokens", "16", cwd=d)
    assert synth.returncode == 0, synth.stderr
    envelope = json.loads((d / "r.json").read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    return d, keygen.stdout.strip(), envelope, statement
