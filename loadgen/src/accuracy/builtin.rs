//! The builtin suites. `builtin:arithmetic`: a suite the runner writes itself from the run's seed, so a result can
//! carry an accuracy check with nothing downloaded. Each item asks for the sum, difference or
//! product of two whole numbers under 100, after three worked examples, and is graded `exact`
//! (the answer up to its first newline must be the number). It is a sanity check — a broken
//! chat template, tokenizer or quantization garbles even this — not a measure of reasoning.
//!
//! The suite is generated as JSONL and read through the same reader as a file; its sha256 is
//! that JSONL's, so anyone can regenerate it from the seed and compare.

use crate::rng::Rng;
use serde_json::json;

pub const NAME: &str = "builtin:arithmetic";

/// `builtin:tool-calls`: 16 single-turn requests that offer one to three functions (OpenAI
/// `tools`) and are graded `tool_call` against BFCL-style possible answers: 14 want one call
/// (most among distractor functions), 2 want two parallel calls. Shipped as JSONL, read like a
/// file; its sha256 is the file's.
pub const TOOL_CALLS: &str = "builtin:tool-calls";
pub const TOOL_CALLS_JSONL: &str = include_str!("suites/tool-calls.jsonl");

/// Items the suite holds (`builtin:arithmetic:N` asks a seeded N of them).
pub const ITEMS: usize = 200;

/// The question of an item; the simulator's answering mode reads this same form.
pub fn question(a: i64, op: char, b: i64) -> String {
    format!("What is {a} {op} {b}?")
}

/// The answer a question of [`question`]'s form has.
pub fn answer(a: i64, op: char, b: i64) -> i64 {
    match op {
        '+' => a + b,
        '-' => a - b,
        _ => a * b,
    }
}

/// The suite's JSONL for `seed`.
pub fn jsonl(seed: u64) -> String {
    let mut rng = Rng::new(seed ^ 0x00a4_174e_71c5_u64);
    let mut draw = || {
        let a = 2 + rng.below(98) as i64;
        let b = 2 + rng.below(98) as i64;
        let op = ['+', '-', '*'][rng.below(3)];
        (a, op, b)
    };
    let fewshot: Vec<_> = (0..3)
        .map(|_| {
            let (a, op, b) = draw();
            json!({ "prompt": question(a, op, b), "answer": answer(a, op, b).to_string() })
        })
        .collect();
    let header = json!({
        "grader": "exact",
        "template": "Question: {prompt}\nAnswer:",
        "fewshot": fewshot,
        "output_tokens": 8,
        "stop": ["\n"],
    });
    let mut out = format!("{header}\n");
    for i in 0..ITEMS {
        let (a, op, b) = draw();
        let line = json!({
            "id": format!("arithmetic-{i}"),
            "prompt": question(a, op, b),
            "answer": answer(a, op, b).to_string(),
        });
        out.push_str(&format!("{line}\n"));
    }
    out
}
