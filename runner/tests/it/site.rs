//! A published site against its signed manifest: `runner publish --key` and `runner
//! verify-site` on a directory and over HTTP (`runner serve`), with each way a site can
//! differ from what its publisher signed.

use crate::support::{free_port, run, run_ok, text, wasm_module};
use std::path::Path;

/// Publishes a site of a signed synthetic result and an imported seed table into `dir/site`,
/// signed with `pub.key` (trusted in `keys.json`).
fn publish(dir: &Path) {
    run_ok(dir, &["keygen", "pub"]);
    run_ok(dir, &["keygen", "other"]);
    run_ok(
        dir,
        &[
            "trust",
            "pub.pub",
            "--keys",
            "keys.json",
            "--name",
            "publisher",
        ],
    );
    run_ok(
        dir,
        &[
            "synth",
            "--key",
            "pub.key",
            "--out",
            "r.json",
            "--requests",
            "8",
        ],
    );
    let seed = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").unwrap())
        .join("../tests/seeds/003_44f3a8b9f2336bbb.txt");
    run_ok(
        dir,
        &["import", seed.to_str().unwrap(), "--out", "imported"],
    );
    publish_signed_by(dir, "pub.key", "site");
}

/// The signed result and the imported documents published into `out`, signed with `key`
/// (the site's keys.json trusts `pub` whatever signs it).
fn publish_signed_by(dir: &Path, key: &str, out: &str) {
    let args = [
        "publish",
        "r.json",
        "imported",
        "--keys",
        "keys.json",
        "--key",
        key,
        "--out",
        out,
    ];
    run_ok(dir, &args);
}

/// A temporary directory with [`publish`]'s site in it; `None` (the test skipped) when the
/// module is not built.
fn published() -> Option<tempfile::TempDir> {
    if wasm_module().is_none() {
        eprintln!("SKIPPED: build/wasm/report_wasm_bg.wasm not built (scripts/build-wasm.sh)");
        return None;
    }
    let d = tempfile::tempdir().unwrap();
    publish(d.path());
    Some(d)
}

/// `runner verify-site` on `site` (relative to `dir`): its exit code and what it printed.
fn verify_site(dir: &Path, site: &str) -> (Option<i32>, String) {
    let out = run(dir, &["verify-site", site, "--keys", "keys.json"]);
    (out.status.code(), text(&out))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.path().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn a_published_site_verifies_and_each_change_to_it_is_named() {
    let Some(d) = published() else {
        return;
    };
    let p = d.path();
    let (code, out) = verify_site(p, "site");
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("manifest signed by trusted key \"publisher\""),
        "{out}"
    );
    assert!(out.contains("results: 1 verified"), "{out}");
    assert!(out.contains("2 imported (unsigned"), "{out}");
    assert!(
        out.contains("(the pinned toolchain); provenance signed by \"publisher\""),
        "{out}"
    );
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p.join("site/index.json")).unwrap()).unwrap();
    let build: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            wasm_module()
                .unwrap()
                .with_file_name("report_wasm.build.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(index["module"]["source_commit"], build["source"]["commit"]);
    // The verdict as JSON, the module's commit as its provenance says.
    let out = run_ok(p, &["verify-site", "site", "--keys", "keys.json", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["module"]["commit"], build["source"]["commit"]);
    assert_eq!(
        v["module"]["subjects"]["report_wasm_bg.wasm"],
        build["outputs"]["report_wasm_bg.wasm"]
    );

    // Each change, in a copy of the site: (what, change, the line the verdict must print).
    type Change = fn(&Path);
    let changes: [(&str, Change, &str); 5] = [
        (
            "one byte of a result",
            |s| {
                let f = s.join("results/r.json");
                let mut b = std::fs::read(&f).unwrap();
                let i = b.len() / 2;
                b[i] ^= 1;
                std::fs::write(f, b).unwrap();
            },
            "✖ results/r.json: ",
        ),
        (
            "the module replaced by another",
            |s| {
                // A custom section appended: still a valid module that runs, other bytes.
                let f = s.join("wasm/report_wasm_bg.wasm");
                let mut b = std::fs::read(&f).unwrap();
                b.extend_from_slice(&[0, 6, 5, b'o', b't', b'h', b'e', b'r']);
                std::fs::write(f, b).unwrap();
            },
            "✖ wasm/report_wasm_bg.wasm: ",
        ),
        (
            "a file added",
            |s| std::fs::write(s.join("results/extra.json"), b"{}").unwrap(),
            "✖ results/extra.json: on the site but not in the manifest",
        ),
        (
            "a file removed",
            |s| std::fs::remove_file(s.join("keys.json")).unwrap(),
            "✖ keys.json: listed in the manifest, missing from the site",
        ),
        (
            "the manifest re-signed by an untrusted key",
            |_| {},
            "✖ site-manifest.json: not signed by a trusted key",
        ),
    ];
    for (i, (what, change, expected)) in changes.iter().enumerate() {
        let copy = format!("changed-{i}");
        if what.contains("re-signed") {
            // The same files, published again and signed by a key the reader does not trust.
            publish_signed_by(p, "other.key", &copy);
        } else {
            copy_dir(&p.join("site"), &p.join(&copy));
        }
        change(&p.join(&copy));
        let (code, out) = verify_site(p, &copy);
        assert_eq!(code, Some(1), "{what}: {out}");
        assert!(out.contains(&format!("{copy}: FAILED")), "{what}: {out}");
        assert!(
            out.contains(expected),
            "{what}: expected {expected:?} in\n{out}"
        );
    }
    // One byte of a result: its digest, named before any verification of its contents.
    let (_, out) = verify_site(p, "changed-0");
    assert!(out.contains("the manifest lists"), "{out}");

    // Unsigned: published without --key.
    run_ok(
        p,
        &[
            "publish",
            "r.json",
            "--keys",
            "keys.json",
            "--out",
            "unsigned",
        ],
    );
    let (code, out) = verify_site(p, "unsigned");
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("site-manifest.json: not signed (publish with --key)"),
        "{out}"
    );
    // Bad input: not a directory; a key file that is not one.
    assert_eq!(verify_site(p, "no-such-site").0, Some(3));
    std::fs::write(p.join("bad-keys.json"), b"[]").unwrap();
    assert_eq!(
        run(p, &["verify-site", "site", "--keys", "bad-keys.json"])
            .status
            .code(),
        Some(4)
    );
}

#[test]
fn a_served_site_verifies_over_http_and_a_changed_one_does_not() {
    let Some(d) = published() else {
        return;
    };
    let p = d.path();
    let port = free_port();
    let mut serve = crate::support::command(p, &["serve", "site", "--port", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "runner serve did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (code, out) = verify_site(p, &url);
    // Over HTTP a site cannot be listed: every listed file is fetched and checked.
    let (code2, out2) = {
        std::fs::remove_file(p.join("site/keys.json")).unwrap();
        verify_site(p, &url)
    };
    serve.kill().unwrap();
    let _ = serve.wait();
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("results: 1 verified"), "{out}");
    assert_eq!(code2, Some(1), "{out2}");
    assert!(
        out2.contains("✖ keys.json: listed in the manifest, missing from the site"),
        "{out2}"
    );
}
