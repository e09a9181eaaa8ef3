"""Attempt logs (`result/v0.13`), checked with no provebench code: pyca/cryptography for Ed25519,
hashlib for SHA-256, and the public specifications (RFC 9162 §2.1 for the Merkle tree and its
proofs, c2sp.org/signed-note, tlog-checkpoint and tlog-tiles; docs/reference/attempt-log.md).

The real runner makes three attempts against `runner sim` — two good, one whose every request
fails — registering each in its key's log; a site publishes one. This file verifies each
result's place in the log (the checkpoint's note signature under the log's key id, the
inclusion proof, the registration naming the run), reads the published log from its tiles
alone (bundles → leaves → the checkpoint's root; every hash tile), pairs the attempts, and
finds the site's `attempts.json` true.
"""

import base64
import hashlib
import json

import pytest
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from conftest import check_current_and_valid, run_runner, statement_of
from test_telemetry import running_sim


def sha256(b):
    return hashlib.sha256(b).digest()


def leaf(entry):
    return sha256(b"\x00" + entry)


def node(left, right):
    return sha256(b"\x01" + left + right)


def mth(leaves):
    """RFC 9162 §2.1.1: the tree hash of a list of leaf hashes."""
    if not leaves:
        return sha256(b"")
    if len(leaves) == 1:
        return leaves[0]
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return node(mth(leaves[:k]), mth(leaves[k:]))


def verify_inclusion(leaf_hash, index, size, proof, root):
    """RFC 9162 §2.1.3.2, as written there."""
    if index >= size:
        return False
    fn, sn, r = index, size - 1, leaf_hash
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node(p, r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def read_note(text, name, public_raw):
    """c2sp.org/signed-note: the text, then `— name base64(keyid ‖ sig)` lines; the key id is
    SHA-256(name ‖ "\\n" ‖ 0x01 ‖ key)[:4]. Returns the text once this key's signature verifies."""
    body, _, sigs = text.rpartition("\n\n")
    body += "\n"
    key_id = sha256(name.encode() + b"\n" + b"\x01" + public_raw)[:4]
    key = load_pem_public_key_raw(public_raw)
    for line in sigs.splitlines():
        assert line.startswith("\u2014 "), line
        signer, blob = line[2:].split(" ")
        raw = base64.b64decode(blob)
        if signer == name and raw[:4] == key_id:
            key.verify(raw[4:], body.encode())  # raises on a bad signature
            return body
    raise AssertionError(f"no signature by {name}")


def load_pem_public_key_raw(raw):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    return Ed25519PublicKey.from_public_bytes(raw)


def checkpoint(body):
    origin, size, root = body.splitlines()[:3]
    return origin, int(size), base64.b64decode(root)


def keyid(public_raw):
    meta = '{"keytype":"ed25519","keyval":{"public":"%s"},"scheme":"ed25519"}' % public_raw.hex()
    return hashlib.sha256(meta.encode()).hexdigest()


def spec_sha256(spec):
    return hashlib.sha256(json.dumps(spec, sort_keys=True, separators=(",", ":"),
                                     ensure_ascii=False).encode()).hexdigest()


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    d = tmp_path_factory.mktemp("attempts")
    assert run_runner("keygen", "lab", cwd=d).returncode == 0
    public = load_pem_public_key((d / "lab.pub").read_bytes()).public_bytes_raw()
    flags = ["--profile", "constant", "--rate", "50", "--max-requests", "8",
             "--data", "prompt_tokens=16,output_tokens=4", "--key", "lab.key"]
    with running_sim(d, "--ttft-ms", "2", "--itl-ms", "1") as good:
        for name in ["one", "two"]:
            run = run_runner("run", "--target", good, "--out", str(d / f"{name}.json"), *flags, cwd=d)
            assert run.returncode == 0, run.stdout + run.stderr
    with running_sim(d, "--error-fraction", "1") as bad:
        run = run_runner("run", "--target", bad, "--out", str(d / "bad.json"), *flags, cwd=d)
        assert run.returncode == 8, run.stdout + run.stderr
    run = run_runner("publish", "one.json", "--out", str(d / "site"), "--log", "lab.attempts", cwd=d)
    assert run.returncode == 0, run.stderr
    return d, public


def test_each_result_is_proven_in_its_keys_log(made):
    d, public = made
    origin = "provebench.local/attempts/" + keyid(public)[:16]
    statements = {n: statement_of(d / f"{n}.json") for n in ["one", "two", "bad"]}
    check_current_and_valid(statements)
    for i, (name, st) in enumerate(statements.items()):
        place = st["predicate"]["attempt"]
        assert place["origin"] == origin
        # Two entries an attempt: its registration, then its outcome.
        assert place["index"] == 2 * i, name
        origin_, size, root = checkpoint(read_note(place["checkpoint"], origin, public))
        assert origin_ == origin and size == place["index"] + 1
        proof = [bytes.fromhex(h) for h in place["proof"]]
        assert verify_inclusion(leaf(place["entry"].encode()), place["index"], size, proof, root), name
        assert not verify_inclusion(leaf(place["entry"].encode() + b" "), place["index"], size, proof, root)
        entry = json.loads(place["entry"])
        run = st["predicate"]["run"]
        assert entry["kind"] == "registration"
        assert entry["attempt"] == run["id"]
        assert entry["spec_sha256"] == spec_sha256(run["spec"])
        assert str(entry["seed"]) == str(run["seed"])


def bundles_of(log_dir, size):
    """The entries of a log of `size` from its tlog-tiles entry bundles."""
    entries = []
    for n in range((size + 255) // 256):
        width = min(256, size - 256 * n)
        name = f"{n:03d}" if width == 256 else f"{n:03d}.p/{width}"
        data = (log_dir / "tile" / "entries" / name).read_bytes()
        while data:
            length = int.from_bytes(data[:2], "big")
            entries.append(data[2:2 + length])
            data = data[2 + length:]
    assert len(entries) == size
    return entries


def test_the_published_log_gives_its_checkpoint_and_its_summary(made):
    d, public = made
    [log_dir] = list((d / "site" / "logs").iterdir())
    origin = "provebench.local/attempts/" + keyid(public)[:16]
    assert log_dir.name == keyid(public)[:16]
    _, size, root = checkpoint(read_note((log_dir / "checkpoint").read_text(), origin, public))
    assert size == 6
    entries = bundles_of(log_dir, size)
    leaves = [leaf(e) for e in entries]
    assert mth(leaves) == root
    # The level-0 tile is the leaf hashes; a log under 256 entries has no level 1.
    assert (log_dir / "tile" / "0" / f"000.p/{size}").read_bytes() == b"".join(leaves)
    assert not (log_dir / "tile" / "1").exists()

    parsed = [json.loads(e) for e in entries]
    registrations = {i: e for i, e in enumerate(parsed) if e["kind"] == "registration"}
    outcomes = {e["registration"]: e for e in parsed if e["kind"] == "outcome"}
    assert sorted(outcomes) == sorted(registrations)
    statuses = [outcomes[i]["status"] for i in sorted(registrations)]
    assert statuses == ["completed", "completed", "failed"]
    assert outcomes[4]["reason"] == "every request failed" and outcomes[4]["exit_code"] == 8
    for i, name in zip(sorted(registrations), ["one", "two", "bad"]):
        assert outcomes[i]["result_sha256"] == hashlib.sha256((d / f"{name}.json").read_bytes()).hexdigest()

    summary = json.loads((log_dir / "attempts.json").read_text())
    assert summary["origin"] == origin and summary["size"] == size
    assert summary["tally"] == {"registered": 3, "completed": 2, "failed": 1, "killed": 0,
                                "aborted": 0, "open": 0, "plans": 0}
    assert summary["published"] == {"0": "results/one.json"}
    assert [a["index"] for a in summary["not_published"]] == [2, 4]
    assert [a.get("status") for a in summary["not_published"]] == ["completed", "failed"]
