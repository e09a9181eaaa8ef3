"""Embeddings, rerank and images in chat, re-derived with no provebench code (`result/v0.11`).

The real runner measures `runner sim` through `--backend openai-embeddings`, `rerank`,
`tei-rerank` and `openai-chat --data images=…`; this file reads the signed-off record columns and
recomputes what the summary says of them (docs/reference/metrics.md): the items served and their rate
over the window, its 95 % interval (ten equal slices of the window), the latency distribution,
and the images' share of the prompt tokens. It checks the document against the published JSON
schema too, and that one seed gives the same answers' digests whichever rerank dialect asked.
"""


import numpy as np
import pytest

from conftest import check_current_and_valid, run_runner, statement_of
from test_telemetry import running_sim
from test_uncertainty import check_rate, close

REQUESTS = 60


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """{name: statement} of one run per backend against one simulator."""
    d = tmp_path_factory.mktemp("pooling")
    runs = {
        "embeddings": ["--backend", "openai-embeddings", "--data", "prompt_tokens=12,inputs_per_request=4"],
        "rerank": ["--backend", "rerank", "--data", "prompt_tokens=8,documents=5,document_tokens=10"],
        "tei": ["--backend", "tei-rerank", "--data", "prompt_tokens=8,documents=5,document_tokens=10"],
        "images": ["--backend", "openai-chat", "--data",
                   "prompt_tokens=16,output_tokens=4,images=2,image_size=96x64,image_format=png"],
    }
    out = {}
    with running_sim(d, "--ttft-ms", "2", "--itl-ms", "1", "--seed", "5") as target:
        for name, flags in runs.items():
            run = run_runner("run", "--target", target, "--no-sign", "--out", str(d / f"{name}.json"),
                             "--profile", "poisson", "--rate", "200", "--max-requests", str(REQUESTS),
                             "--seed", "11", *flags, cwd=d)
            assert run.returncode == 0, name + ": " + run.stdout + run.stderr
            out[name] = statement_of(d / f"{name}.json")
    return out


def completed(records):
    n = len(records["phase"])
    return [i for i in range(n) if records["phase"][i] == "measured" and records["error"][i] is None]


def test_each_document_is_of_this_version_and_valid_against_the_schema(results):
    check_current_and_valid(results)


@pytest.mark.parametrize("name,column,kind", [
    ("embeddings", "inputs", "embeddings"), ("rerank", "documents", "rerank"), ("tei", "documents", "rerank")])
def test_items_their_rate_and_its_interval_follow_from_the_records(results, name, column, kind):
    [bench] = results[name]["predicate"]["benchmarks"]
    records, summary = bench["records"], bench["summary"]
    done = completed(records)
    assert len(done) == REQUESTS
    # Nothing streamed: no first token, no gaps, no output tokens asked for.
    assert all(t is None for t in records["first_token_us"])
    assert summary["ttft_ms"] is None and summary["itl_ms"] is None and summary["tpot_ms"] is None
    items = sum(records[column][i] for i in done)
    measured = [i for i in range(len(records["phase"])) if records["phase"][i] == "measured"]
    window = (min(records["scheduled_us"][i] for i in measured), max(records["end_us"][i] for i in measured))
    span_s = (window[1] - window[0]) / 1e6
    pooled = summary["pooled"]
    assert pooled["kind"] == kind and pooled["items"] == items
    assert close(pooled["items_per_s"], items / span_s)
    inputs = sum(records["input_tokens_server"][i] or records["input_tokens_client"][i] or 0 for i in done)
    assert close(summary["total_token_throughput_per_s"], inputs / span_s)
    e2e = np.array([(records["end_us"][i] - records["scheduled_us"][i]) / 1000 for i in done])
    assert close(summary["e2e_ms"]["mean"], float(np.sum(e2e) / len(e2e)))
    assert close(summary["e2e_ms"]["p90"], float(np.percentile(e2e, 90)))
    order = sorted(done, key=lambda i: (records["scheduled_us"][i], i))
    ends = [(records["end_us"][i], records[column][i]) for i in order]
    check_rate(summary["uncertainty"]["items_per_s"], ends, window, pooled["items_per_s"], lambda e: e[1])
    # Every answer digested; embeddings say their dimension.
    assert all(len(records["output_sha256"][i]) == 64 for i in done)
    if kind == "embeddings":
        assert {records["embedding_dim"][i] for i in done} == {384}
        assert len({records["output_sha256"][i] for i in done}) == len(done), "distinct inputs, distinct vectors"


def test_both_rerank_dialects_carry_the_same_scores(results):
    digests = [results[name]["predicate"]["benchmarks"][0]["records"]["output_sha256"] for name in ("rerank", "tei")]
    assert digests[0] == digests[1]


def test_the_images_share_of_the_prompt_follows_from_the_records(results):
    [bench] = results["images"]["predicate"]["benchmarks"]
    records, summary = bench["records"], bench["summary"]
    done = completed(records)
    images = [img for i in done for img in records["images"][i]]
    assert all((img["width"], img["height"]) == (96, 64) for img in images)
    stated = summary["images"]
    assert stated["images"] == len(images) == 2 * len(done)
    assert stated["bytes"] == sum(img["bytes"] for img in images)
    both = [i for i in done if records["input_tokens_client"][i] is not None and records["input_tokens_server"][i] is not None]
    assert stated["text_tokens"] == sum(records["input_tokens_client"][i] for i in both)
    assert stated["image_tokens"] == sum(records["input_tokens_server"][i] - records["input_tokens_client"][i] for i in both)
    # The simulator's rule, Qwen2-VL's: ceil(w/28) × ceil(h/28) tokens an image.
    assert stated["image_tokens"] == len(both) * 2 * (4 * 3)
    assert bench["workload"]["images"] == {"per_request": 2, "width": 96, "height": 64, "format": "png"}
