//! Where the time of a report goes, natively: reading and checking the document (parse,
//! signature, recomputation of every summary) versus rendering its tables and charts.
//!   cargo run --release -p report --example render_timing -- RESULT.json [RUNS]
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .expect("usage: render_timing RESULT.json [RUNS]");
    let runs: usize = args
        .next()
        .map_or(5, |r| r.parse().expect("RUNS is a number"));
    let bytes = std::fs::read(&path).expect("readable file");
    for _ in 0..runs {
        let t = Instant::now();
        let loaded = report::load(&bytes, "input 1", &[]).expect("a result document");
        let load = t.elapsed();
        let t = Instant::now();
        let r = report::render(&[loaded]).expect("renders");
        let render = t.elapsed();
        let size: usize = r.files.iter().map(|f| f.1.len()).sum();
        println!(
            "load+verify {:.1} ms, render (tables, html, charts) {:.1} ms, {} files, {size} bytes",
            load.as_secs_f64() * 1e3,
            render.as_secs_f64() * 1e3,
            r.files.len()
        );
    }
}
