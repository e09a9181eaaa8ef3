"""The crates' layers, as ARCHITECTURE.md draws them: a campaign expands a plan into specs and
never links the load generator, and the spec is pure data (no HTTP client, no async runtime).
Read from cargo's own resolution of the workspace (`cargo metadata`), normal dependencies only.
"""

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def closure(graph, package):
    """Every package `package` links, by name (normal dependencies, not dev or build)."""
    ids = {node["id"]: node for node in graph["resolve"]["nodes"]}
    names = {p["id"]: p["name"] for p in graph["packages"]}
    start = next(i for i, n in names.items() if n == package and i in ids)
    seen, todo = set(), [start]
    while todo:
        node = ids[todo.pop()]
        for dep in node["deps"]:
            if any(k["kind"] is None for k in dep["dep_kinds"]) and dep["pkg"] not in seen:
                seen.add(dep["pkg"])
                todo.append(dep["pkg"])
    return {names[i] for i in seen}


def metadata():
    """The workspace resolved for this machine's target: the crates a build here has fetched."""
    host = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    target = next(line.split(": ", 1)[1] for line in host.splitlines() if line.startswith("host: "))
    out = subprocess.run(["cargo", "metadata", "--format-version", "1", "--offline", "--locked",
                          "--filter-platform", target], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_a_campaign_does_not_link_the_load_generator():
    assert "loadgen" not in closure(metadata(), "campaign")


def test_the_spec_is_pure_data():
    linked = closure(metadata(), "spec")
    assert not linked & {"loadgen", "tokio", "reqwest", "hyper", "tokenizers"}, linked
