"""A published site checked by independent tools: securesystemslib verifies the signatures of
its manifest and of the module's SLSA provenance, and Python's hashlib re-derives what both
claim (every file's size and sha256; the module's and glue's digests)."""

import base64
import copy
import hashlib
import json
import pathlib

import pytest
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import SSlibKey

from conftest import run_runner


@pytest.fixture(scope="module")
def site(signed):
    d = signed[0]
    out = run_runner("publish", "r.json", "--key", "lab.key", "--out", "site", cwd=d)
    assert out.returncode == 0, out.stderr
    key = SSlibKey.from_crypto(load_pem_public_key((d / "lab.pub").read_bytes()))
    return d / "site", key


def statement(envelope):
    return json.loads(base64.b64decode(envelope["payload"]))


def test_securesystemslib_verifies_the_module_provenance(site):
    root, key = site
    envelope = json.loads((root / "wasm" / "report_wasm.provenance.json").read_text())
    assert key.keyid in Envelope.from_dict(copy.deepcopy(envelope)).verify([key], 1)
    s = statement(envelope)
    assert s["_type"] == "https://in-toto.io/Statement/v1"
    assert s["predicateType"] == "https://slsa.dev/provenance/v1"
    digests = {x["name"]: x["digest"]["sha256"] for x in s["subject"]}
    for name in ("report_wasm_bg.wasm", "report_wasm.js"):
        assert digests[name] == hashlib.sha256((root / "wasm" / name).read_bytes()).hexdigest()
    build = s["predicate"]["buildDefinition"]
    toolchain = build["internalParameters"]["toolchain"]
    pin = (pathlib.Path(__file__).resolve().parents[2] / "report-wasm" / "toolchain.toml").read_text()
    assert f'rustc = "{toolchain["rustc"].split()[1]}"' in pin
    assert toolchain["pinned"] is True
    commit = build["externalParameters"]["source"]["digest"].get("gitCommit")
    assert commit is None or len(commit) == 40
    # A changed payload does not verify.
    bad = copy.deepcopy(envelope)
    payload = bytearray(base64.b64decode(bad["payload"]))
    payload[-3] ^= 1
    bad["payload"] = base64.b64encode(bytes(payload)).decode()
    with pytest.raises(VerificationError):
        Envelope.from_dict(bad).verify([key], 1)


def test_the_manifest_verifies_and_lists_exactly_the_files_of_the_site(site):
    root, key = site
    envelope = json.loads((root / "site-manifest.json").read_text())
    assert key.keyid in Envelope.from_dict(copy.deepcopy(envelope)).verify([key], 1)
    s = statement(envelope)
    assert s["predicateType"] == "https://provebench.dev/site-manifest/v1"
    listed = {x["name"]: (x["annotations"]["size"], x["digest"]["sha256"]) for x in s["subject"]}
    present = {}
    for f in root.rglob("*"):
        if f.is_file() and f.name != "site-manifest.json":
            b = f.read_bytes()
            present[f.relative_to(root).as_posix()] = (len(b), hashlib.sha256(b).hexdigest())
    assert listed == present
    assert "results/r.json" in listed and "wasm/report_wasm.provenance.json" in listed
