#!/usr/bin/env python3
"""Writes result documents built to hurt a reader, from one small real result.

    scripts/hostile-documents.py BASE.json OUTDIR [--large]

Each is an unsigned envelope (a bare statement for the nesting case), so that the site and
`runner report`, which show unsigned results, parse all of it:

  oversize.json          one byte past the 1 GiB limit (sparse: costs no disk)
  million-benchmarks.json  a million benchmarks
  too-many-benchmarks.json 10,001 real benchmarks (one past the limit)
  long-strings.json      10 MB model id, engine name and benchmark label
  deep-nesting.json      a million nested arrays where the records go
  huge-numbers.json      integers and floats past what the schema's types hold
  --large adds:
  billions-of-gaps.json  a token-gap column of 400 MB of base64: 300 million gaps if decoded
  near-limit.json        1,000,000 requests × 200 tokens: a large but honest result shape

`scripts/bench-hostile.sh` runs `runner verify`/`report` over them with time and memory;
`runner/tests/it/hostile_documents.rs` checks each gets its clear error.
"""

import base64
import copy
import json
import os
import sys

LIMIT = 1 << 30


def envelope(statement):
    payload = json.dumps(statement, separators=(",", ":")).encode()
    return {
        "payloadType": "application/vnd.in-toto+json",
        "payload": base64.b64encode(payload).decode(),
        "signatures": [],
    }


def write(outdir, name, doc):
    with open(os.path.join(outdir, name), "w") as f:
        json.dump(doc, f, separators=(",", ":"))


def main():
    base_path, outdir = sys.argv[1], sys.argv[2]
    large = "--large" in sys.argv[3:]
    os.makedirs(outdir, exist_ok=True)
    base = json.load(open(base_path))
    statement = json.loads(base64.b64decode(base["payload"]))
    bench = statement["predicate"]["benchmarks"][0]

    with open(os.path.join(outdir, "oversize.json"), "wb") as f:
        f.truncate(LIMIT + 1)

    s = copy.deepcopy(statement)
    s["predicate"]["benchmarks"] = [{}] * 1_000_000
    write(outdir, "million-benchmarks.json", envelope(s))

    s = copy.deepcopy(statement)
    s["predicate"]["benchmarks"] = [bench] * 10_001
    write(outdir, "too-many-benchmarks.json", envelope(s))

    s = copy.deepcopy(statement)
    ten_mb = "x" * 10_000_000
    s["predicate"]["model"]["id"] = ten_mb
    s["predicate"]["engine"]["name"] = ten_mb
    s["predicate"]["benchmarks"][0]["label"] = ten_mb
    write(outdir, "long-strings.json", envelope(s))

    depth = 1_000_000
    text = json.dumps(statement, separators=(",", ":"))
    records = json.dumps(bench["records"], separators=(",", ":"))
    nested = "[" * depth + "]" * depth
    with open(os.path.join(outdir, "deep-nesting.json"), "w") as f:
        f.write(text.replace(records, nested, 1))

    s = copy.deepcopy(statement)
    cols = s["predicate"]["benchmarks"][0]["records"]
    cols["scheduled_us"][0] = 10**30
    cols["end_us"][0] = "HUGE"
    text = json.dumps(s, separators=(",", ":")).replace('"HUGE"', "1e400", 1)
    s = envelope(json.loads(text, parse_float=lambda f: f, parse_int=lambda i: i))
    with open(os.path.join(outdir, "huge-numbers.json"), "w") as f:
        payload = base64.b64encode(text.encode()).decode()
        json.dump({**s, "payload": payload}, f, separators=(",", ":"))

    if large:
        s = copy.deepcopy(statement)
        s["predicate"]["benchmarks"][0]["records"]["token_gaps"][0] = "AAAA" * 100_000_000
        write(outdir, "billions-of-gaps.json", envelope(s))

        s = copy.deepcopy(statement)
        b = s["predicate"]["benchmarks"][0]
        n, tokens = 1_000_000, 200
        gaps = base64.b64encode(bytes([0x90, 0x4E]) * (tokens - 1)).decode()  # 10 ms each
        cols = b["records"]
        for key in list(cols):
            cols[key] = [cols[key][0]] * n
        cols["token_gaps"] = [gaps] * n
        write(outdir, "near-limit.json", envelope(s))


if __name__ == "__main__":
    main()
