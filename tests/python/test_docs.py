"""The documentation a newcomer reads: the README stays a front door (at most 400 lines), and
every relative link in it, the guide, the reference, ARCHITECTURE.md and CONTRIBUTING.md leads
to a file that exists and, where it names one, to a heading of that file.

Anchors are GitHub's: the heading's text, lower-cased, without backticks and punctuation, its
spaces as hyphens.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = (
    [ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "CONTRIBUTING.md"]
    + sorted((ROOT / "docs").rglob("*.md"))
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def headings(path: Path) -> set[str]:
    anchors, fence = set(), False
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence and re.match(r"^#{1,6} ", line):
            text = line.lstrip("#").strip().lower().replace("`", "")
            text = "".join(c for c in text if c.isalnum() or c in " -_")
            anchors.add(text.replace(" ", "-"))
    return anchors


def links(path: Path):
    fence = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        for target in LINK.findall(line):
            if not re.match(r"^[a-z]+:", target):
                yield number, target


def test_the_readme_is_a_front_door():
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines <= 400, f"README.md has {lines} lines; the guide and the reference hold the rest"


def test_every_relative_link_leads_somewhere():
    broken = []
    for doc in DOCS:
        for number, target in links(doc):
            path, _, anchor = target.partition("#")
            dest = (doc.parent / path).resolve() if path else doc
            where = f"{doc.relative_to(ROOT)}:{number}: {target}"
            if not dest.exists():
                broken.append(f"{where}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in headings(dest):
                broken.append(f"{where}: no heading #{anchor} in {dest.name}")
    assert not broken, "\n".join(broken)


def test_a_link_checker_that_finds_nothing_would_be_noticed():
    # The files are there and hold links: a glob or pattern gone wrong fails here.
    assert len(DOCS) >= 15
    assert sum(1 for doc in DOCS for _ in links(doc)) >= 30


def test_the_validity_reference_lists_every_flag_the_schema_declares():
    """docs/reference/validity.md against the flag codes the published schema declares (the
    types' own): a flag added to the code and not to the reference fails here."""
    import json
    schema = json.loads((ROOT / "schemas/json/statement.schema.json").read_text())
    codes = [v["const"] for v in schema["$defs"]["FlagCode"]["oneOf"]]
    assert len(codes) >= 20, codes
    doc = (ROOT / "docs/reference/validity.md").read_text()
    assert not [c for c in codes if f"| `{c}` |" not in doc]
