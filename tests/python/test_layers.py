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


def test_only_wire_speaks_http_through_reqwest():
    """Every HTTP call of the product is made through `wire` (tests may drive a server with a
    reqwest client of their own: dev-dependencies are not counted)."""
    graph = metadata()
    members = set(graph["workspace_members"])
    direct = sorted(p["name"] for p in graph["packages"] if p["id"] in members
                    and any(d["name"] == "reqwest" and d["kind"] is None for d in p["dependencies"]))
    assert direct == ["wire"], direct


def test_records_build_without_the_instrument():
    """Whatever only reads or makes records (export/'s tests, with polars beside them) links
    `records`: no client, no runtime, no tokenizer, so none of them is compiled again there."""
    linked = closure(metadata(), "records")
    assert not linked & {"loadgen", "spec", "tokio", "reqwest", "hyper", "tokenizers", "url"}, linked


def test_the_spec_is_pure_data():
    linked = closure(metadata(), "spec")
    assert not linked & {"loadgen", "tokio", "reqwest", "hyper", "tokenizers"}, linked


# Inside a crate: which top-level modules each module imports (`crate::name`), test code and
# comments left out.

def _code(path):
    """A source file's code: comment lines dropped, and an inline `#[cfg(test)] mod` cut off."""
    text = "\n".join(l for l in path.read_text().splitlines() if not l.lstrip().startswith("//"))
    cut = text.find("#[cfg(test)]\nmod ")
    return text if cut < 0 else text[:cut]


def _imports(crate):
    """Top-level module name -> the crate's other top-level modules its code names."""
    import re
    src = ROOT / crate / "src"
    modules = {p.stem for p in src.glob("*.rs") if p.stem not in ("lib", "main")}
    modules |= {p.name for p in src.iterdir() if p.is_dir()}
    graph = {}
    for m in modules:
        files = [src / f"{m}.rs"] if (src / f"{m}.rs").exists() else []
        if (src / m).is_dir():
            files += [p for p in (src / m).rglob("*.rs") if p.name != "tests.rs" and "tests" not in p.parts]
        named = set()
        for f in files:
            code = _code(f)
            named |= set(re.findall(r"crate::(\w+)", code))
            for group in re.findall(r"crate::\{([^}]*)\}", code, re.S):
                named |= set(re.findall(r"(\w+)", group))
        graph[m] = (named & modules) - {m}
    return graph


def _circles(graph):
    """The modules that reach themselves through others' imports."""
    def reach(start):
        seen, todo = set(), list(graph[start])
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo.extend(graph[m])
        return seen
    return sorted(m for m in graph if m in reach(m))


def test_no_module_circle_in_any_crate():
    crates = [p.parent.name for p in ROOT.glob("*/Cargo.toml") if (p.parent / "src").is_dir()]
    assert len(crates) > 10, crates
    for crate in crates:
        assert not _circles(_imports(crate)), (crate, _circles(_imports(crate)))


def test_schemas_modules_import_only_modules_declared_above_them():
    """schemas/src/lib.rs declares its modules in floors (stored types, what derives them,
    verification, wording); each imports only what is declared before it."""
    import re
    order = re.findall(r"^pub mod (\w+);", (ROOT / "schemas/src/lib.rs").read_text(), re.M)
    position = {m: i for i, m in enumerate(order)}
    graph = _imports("schemas")
    assert set(graph) == set(order), set(graph) ^ set(order)
    later = {m: sorted(d for d in graph[m] if position[d] > position[m]) for m in order}
    assert not any(later.values()), {m: d for m, d in later.items() if d}
