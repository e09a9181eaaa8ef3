"""Independent tools accept what the runner writes: securesystemslib and OpenSSL verify
the signature, OpenSSL reads the PKCS#8 v1 key, and Python's jsonschema validates the
documents against the checked-in JSON Schema files."""

import base64
import copy
import hashlib
import json
import subprocess

import blake3
import pytest
from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_pem_public_key
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.formats import encode_canonical
from securesystemslib.signer import SSlibKey

from conftest import validator


def pae(payload_type: str, payload: bytes) -> bytes:
    t = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def sslib_key(d):
    return SSlibKey.from_crypto(load_pem_public_key((d / "lab.pub").read_bytes()))


def test_securesystemslib_verifies_and_agrees_on_the_keyid(signed):
    d, keyid, envelope, _ = signed
    key = sslib_key(d)
    assert key.keyid == keyid
    meta = {"keytype": "ed25519", "scheme": "ed25519", "keyval": {"public": key.keyval["public"]}}
    assert hashlib.sha256(encode_canonical(meta).encode()).hexdigest() == keyid
    accepted = Envelope.from_dict(copy.deepcopy(envelope)).verify([key], 1)
    assert keyid in accepted


def test_securesystemslib_rejects_a_changed_payload(signed):
    d, _, envelope, _ = signed
    key = sslib_key(d)
    bad = copy.deepcopy(envelope)
    payload = bytearray(base64.b64decode(bad["payload"]))
    payload[-2] ^= 1
    bad["payload"] = base64.b64encode(bytes(payload)).decode()
    with pytest.raises(VerificationError):
        Envelope.from_dict(bad).verify([key], 1)


def test_openssl_verifies_the_signature_over_the_pae(signed, tmp_path):
    d, _, envelope, _ = signed
    (tmp_path / "pae.bin").write_bytes(pae(envelope["payloadType"], base64.b64decode(envelope["payload"])))
    (tmp_path / "sig.bin").write_bytes(base64.b64decode(envelope["signatures"][0]["sig"]))
    ok = subprocess.run(["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", str(d / "lab.pub"), "-rawin",
                         "-in", str(tmp_path / "pae.bin"), "-sigfile", str(tmp_path / "sig.bin")],
                        capture_output=True, text=True)
    assert ok.returncode == 0 and "Signature Verified Successfully" in ok.stdout, ok.stdout + ok.stderr


def test_openssl_reads_the_private_key_as_pkcs8_v1(signed):
    d, _, _, _ = signed
    pub = subprocess.run(["openssl", "pkey", "-in", str(d / "lab.key"), "-pubout"], capture_output=True, text=True)
    assert pub.returncode == 0, pub.stderr
    assert pub.stdout.strip() == (d / "lab.pub").read_text().strip()
    asn1 = subprocess.run(["openssl", "asn1parse", "-in", str(d / "lab.key")], capture_output=True, text=True)
    first_int = next(line for line in asn1.stdout.splitlines() if "INTEGER" in line)
    assert first_int.rstrip().endswith(":00"), asn1.stdout  # version 0 = PKCS#8 v1 (RFC 5208)


def test_pyca_cryptography_reads_the_private_key(signed):
    d, _, _, _ = signed
    key = load_pem_private_key((d / "lab.key").read_bytes(), password=None)
    assert key.public_key().public_bytes_raw() == load_pem_public_key((d / "lab.pub").read_bytes()).public_bytes_raw()


def test_documents_validate_against_the_checked_in_schemas(signed):
    _, _, envelope, statement = signed
    validator("envelope.schema.json").validate(envelope)
    validator("statement.schema.json").validate(statement)
    records = statement["predicate"]["benchmarks"][0]["records"]
    assert records["phase"], "the document holds raw records"
    # One array per field, one entry per request in each.
    assert len({len(column) for column in records.values()}) == 1, records.keys()


def test_the_schema_rejects_what_the_contract_forbids(signed):
    _, _, _, statement = signed
    v = validator("statement.schema.json")
    extra = copy.deepcopy(statement)
    extra["predicate"]["run"]["surprise"] = 1
    assert not v.is_valid(extra)
    unsafe = copy.deepcopy(statement)
    unsafe["predicate"]["run"]["seed"] = 2**53  # must be written as a string
    assert not v.is_valid(unsafe)
    as_string = copy.deepcopy(statement)
    as_string["predicate"]["run"]["seed"] = str(2**64 - 1)
    assert v.is_valid(as_string)
    no_records = copy.deepcopy(statement)
    del no_records["predicate"]["benchmarks"][0]["records"]
    assert not v.is_valid(no_records)


def test_trusted_keys_file_schema(signed):
    d, keyid, _, _ = signed
    keys = {"keys": [{"name": "lab", "keyid": keyid, "public_key_pem": (d / "lab.pub").read_text(),
                      "valid_from": None, "valid_until": None, "revoked": False}]}
    validator("trusted-keys.schema.json").validate(keys)
    (d / "keys.json").write_text(json.dumps(keys))
    from conftest import run_runner
    out = run_runner("verify", "r.json", "--keys", "keys.json", cwd=d)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_raw_records_subject_is_the_blake3_of_their_compact_json(signed):
    """Anyone can recompute the subject from the reference's definition (docs/reference/document.md), with no provebench code:
    BLAKE3 (hex) of the compact JSON `[records per benchmark]`, each as written."""
    _, _, _, statement = signed
    records = [b["records"] for b in statement["predicate"]["benchmarks"]]
    compact = json.dumps(records, separators=(",", ":"), ensure_ascii=False).encode()
    [subject] = statement["subject"]
    assert subject["name"] == "raw-records"
    assert subject["digest"] == {"blake3": blake3.blake3(compact).hexdigest()}
