"""The build cache outside the checkout never makes a check pass that would fail without it.

scripts/check-wasm-reproducible.sh skips its second, clean build of the wasm module only when a
proof kept in the cache (PROVEBENCH_CACHE/wasm-proofs/KEY/SHA256SUMS) names both the key of the
module's inputs (build/wasm/report_wasm.inputs.sha256) and the very bytes in build/wasm. A
proof truncated, naming other bytes (stale), or kept under another key is not believed: the
script goes on to prove it again (the test stops it there, rather than wait minutes for the
build it has shown it would do).
"""

import hashlib
import os
import shutil
import signal
import subprocess

import pytest

from conftest import ROOT

SCRIPT = ROOT / "scripts" / "check-wasm-reproducible.sh"
WASM = ROOT / "build" / "wasm"

pytestmark = pytest.mark.skipif(
    not (WASM / "report_wasm.inputs.sha256").exists(),
    reason="needs build/wasm from scripts/build-wasm.sh (make test builds it first)",
)


def here():
    """SHA256SUMS of build/wasm, as the script writes it."""
    return "".join(f"{hashlib.sha256((WASM / f).read_bytes()).hexdigest()}  {f}\n"
                   for f in ("report_wasm_bg.wasm", "report_wasm.js"))


def key():
    return (WASM / "report_wasm.inputs.sha256").read_text().strip()


def check(cache):
    """Runs the script against `cache` until it skips (returns its log and exit code) or
    starts the second build (stopped there; returns its log and None)."""
    p = subprocess.Popen(["bash", str(SCRIPT)], cwd=ROOT, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PROVEBENCH_CACHE": str(cache)}, start_new_session=True)
    log = []
    try:
        for line in p.stderr:
            log.append(line)
            if "proving it: a clean build" in line:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=30)
                return "".join(log), None
        return "".join(log), p.wait(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def proof(cache, k, text):
    d = cache / "wasm-proofs" / k
    d.mkdir(parents=True, exist_ok=True)
    (d / "SHA256SUMS").write_text(text)


def test_a_proof_of_these_inputs_and_these_bytes_skips_the_second_build(tmp_path):
    proof(tmp_path, key(), here())
    log, code = check(tmp_path)
    assert code == 0, log
    assert f"skipping the second build: inputs {key()}" in log, log


@pytest.mark.parametrize("damage", ["truncated", "other bytes", "another key", "missing"])
def test_a_damaged_stale_or_foreign_proof_is_proven_again(tmp_path, damage):
    right = here()
    if damage == "truncated":
        proof(tmp_path, key(), right[: len(right) // 2])
    elif damage == "other bytes":
        flipped = ("0" if right[0] != "0" else "1") + right[1:]
        proof(tmp_path, key(), flipped)
    elif damage == "another key":
        proof(tmp_path, hashlib.sha256(b"other inputs").hexdigest(), right)
    log, code = check(tmp_path)
    assert code is None, f"the script finished ({code}) without proving again:\n{log}"
    assert "skipping the second build" not in log, log
    if damage in ("truncated", "other bytes"):
        assert "names other bytes (a damaged or stale cache): proving again" in log, log


CRATE = """[package]
name = "uses-the-cache"
version = "0.1.0"
edition = "2021"

[dependencies]
itoa = "1"
"""


def cargo_build(project, cache):
    """scripts/cache.sh build around a real, offline cargo build of `project`."""
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "cache.sh"), "build", "cargo", "build", "--offline", "-q"],
        cwd=project, capture_output=True, text=True,
        env={**os.environ, "CARGO_BUILD_BUILD_DIR": str(cache), "CARGO_TARGET_DIR": str(project / "target"),
             "CARGO_INCREMENTAL": "0"})


def test_a_damaged_compiled_crate_in_the_cache_is_rebuilt_and_a_real_error_is_not_hidden(tmp_path):
    """A registry crate's metadata or library truncated in the shared build directory is built
    again (cargo trusts its fingerprints, so without this the build would fail); a compile
    error of the project's own still fails."""
    project, cache = tmp_path / "p", tmp_path / "cache"
    (project / "src").mkdir(parents=True)
    (project / "Cargo.toml").write_text(CRATE)
    main = project / "src" / "main.rs"
    main.write_text('fn main() { println!("{}", itoa::Buffer::new().format(7)); }\n')
    first = cargo_build(project, cache)
    assert first.returncode == 0, first.stdout + first.stderr
    # rustc reads a crate's metadata from its rlib when there is one: the rlib truncated alone,
    # then both.
    for damaged in (["rlib"], ["rmeta", "rlib"]):
        for ext in damaged:
            [library] = (cache / "debug" / "deps").glob(f"libitoa-*.{ext}")
            library.write_bytes(library.read_bytes()[:100])
        main.touch()
        again = cargo_build(project, cache)
        log = again.stdout + again.stderr
        assert again.returncode == 0, log
        assert "damaged compiled unit(s)" in log and "building again" in log, log
        run = subprocess.run([str(project / "target" / "debug" / "uses-the-cache")], capture_output=True, text=True)
        assert run.stdout == "7\n"
    main.write_text('fn main() { let x: u8 = "seven"; }\n')
    broken = cargo_build(project, cache)
    log = broken.stdout + broken.stderr
    assert broken.returncode != 0 and "E0308" in log, log
    assert "building again" not in log, log


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


def claim_and_build(checkout, cache):
    """make's steps: scripts/cache.sh claim, then the build; the log and what the program prints."""
    env = {**os.environ, "CARGO_BUILD_BUILD_DIR": str(cache), "CARGO_INCREMENTAL": "0"}
    claim = subprocess.run(["bash", str(ROOT / "scripts" / "cache.sh"), "claim"], cwd=checkout,
                           capture_output=True, text=True, env=env)
    assert claim.returncode == 0, claim.stderr
    build = subprocess.run(["cargo", "build", "--offline"], cwd=checkout, capture_output=True, text=True, env=env)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(checkout / "target" / "debug" / "uses-the-cache")], capture_output=True, text=True)
    return claim.stderr + build.stderr, run.stdout


def test_checkouts_share_compiled_crates_only_when_their_sources_are_the_same(tmp_path):
    """cargo names a workspace's own crates alike in every checkout and judges them by time:
    a checkout must never run another's build of different sources, and one of the very same
    commit tree reuses it."""
    origin, cache = tmp_path / "origin", tmp_path / "cache"
    (origin / "src").mkdir(parents=True)
    (origin / "Cargo.toml").write_text(CRATE)
    (origin / ".gitignore").write_text("/target\n")
    main = origin / "src" / "main.rs"
    main.write_text('fn main() { println!("{}", itoa::Buffer::new().format(1)); }\n')
    git("init", "-q", cwd=origin)
    subprocess.run(["cargo", "generate-lockfile", "--offline"], cwd=origin, check=True, capture_output=True)
    git("add", "-A", cwd=origin)
    git("commit", "-qm", "one", cwd=origin)
    a, b = tmp_path / "a", tmp_path / "b"
    git("clone", "-q", str(origin), str(a), cwd=tmp_path)
    git("clone", "-q", str(origin), str(b), cwd=tmp_path)
    log, out = claim_and_build(a, cache)
    assert out == "1\n" and "Compiling uses-the-cache" in log, log
    # The same commit elsewhere: A's build, reused.
    log, out = claim_and_build(b, cache)
    assert out == "1\n", log
    assert "its compiled crates are reused" in log and "Compiling uses-the-cache" not in log, log
    # Another commit, whose files are older than the build above: compiled again, its own.
    main.write_text('fn main() { println!("{}", itoa::Buffer::new().format(2)); }\n')
    git("commit", "-qam", "two", cwd=origin)
    c = tmp_path / "c"
    git("clone", "-q", str(origin), str(c), cwd=tmp_path)
    for f in (c / "src" / "main.rs", c / "Cargo.toml"):
        os.utime(f, (1, 1))
    log, out = claim_and_build(c, cache)
    assert out == "2\n" and "compiled again" in log, log
    # A fresh clone of that commit where C lay, as a CI runner checks out at one path: C's
    # build, reused.
    shutil.rmtree(c)
    git("clone", "-q", str(origin), str(c), cwd=tmp_path)
    log, out = claim_and_build(c, cache)
    assert out == "2\n", log
    assert "its compiled crates are reused" in log and "Compiling uses-the-cache" not in log, log
    # And back in B, changed by hand (not a commit's tree): compiled again, with its change.
    (b / "src" / "main.rs").write_text('fn main() { println!("{}", itoa::Buffer::new().format(3)); }\n')
    os.utime(b / "src" / "main.rs", (1, 1))
    log, out = claim_and_build(b, cache)
    assert out == "3\n" and "compiled again" in log, log


def test_prune_removes_the_units_of_a_checkout_that_is_gone_and_keeps_the_registrys(tmp_path):
    """`make` prunes the shared build directory before it builds: a unit whose crate root lay
    in a checkout since deleted goes (with its fingerprint), a registry crate's stays, and the
    script never fails on what it finds."""
    cache, build = tmp_path / "cache", tmp_path / "cache" / "cargo-build"
    deps, prints = build / "debug" / "deps", build / "debug" / ".fingerprint"
    deps.mkdir(parents=True)
    prints.mkdir(parents=True)
    cargo_home = tmp_path / "cargo-home"
    gone = tmp_path / "deleted-checkout" / "src" / "lib.rs"
    units = {"mine-0123456789abcdef": gone, "itoa-fedcba9876543210": cargo_home / "registry" / "itoa" / "src" / "lib.rs"}
    for unit, root in units.items():
        name = unit.split("-")[0]
        (deps / f"{unit}.d").write_text(f"{deps}/lib{unit}.rlib: {root}\n")
        (deps / f"lib{unit}.rlib").write_bytes(b"!<arch>\n")
        (prints / unit).mkdir()
        (build / "debug" / "incremental").mkdir(exist_ok=True)
        (build / "debug" / "incremental" / f"{name}-1a2b3c").mkdir()
    env = {**os.environ, "PROVEBENCH_CACHE": str(cache), "CARGO_BUILD_BUILD_DIR": str(build),
           "CARGO_HOME": str(cargo_home)}
    pruned = subprocess.run(["bash", str(ROOT / "scripts" / "cache.sh"), "prune"], cwd=tmp_path,
                            capture_output=True, text=True, env=env)
    assert pruned.returncode == 0, pruned.stderr
    assert "removed 1 compiled units" in pruned.stderr, pruned.stderr
    left = sorted(p.name for p in deps.iterdir()) + sorted(p.name for p in prints.iterdir())
    assert left == ["itoa-fedcba9876543210.d", "libitoa-fedcba9876543210.rlib", "itoa-fedcba9876543210"], left


def test_tests_find_their_files_by_the_directory_they_run_in():
    """A clone of the very commit tree last built reuses its test binaries (scripts/cache.sh
    claim), which were compiled in another checkout, since deleted: a path taken at compile
    time (`env!("CARGO_MANIFEST_DIR")`) would point into it. Tests read the variable at run
    time, which cargo and nextest set to this checkout's."""
    baked = subprocess.run(["git", "grep", "-n", 'env!("CARGO_MANIFEST_DIR")', "--", "*.rs"],
                           cwd=ROOT, capture_output=True, text=True)
    assert baked.returncode == 1 and not baked.stdout, baked.stdout
