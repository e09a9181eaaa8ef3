//! A run's accuracy phase (`--accuracy`): what was asked and how it was graded, each rule's
//! score with its 95 % interval, then every item — the end of its prompt (what was asked, after
//! any few-shot examples), its gold answer, the answer the server gave and each rule's mark —
//! so a reader can check any grade by eye. The scores are the
//! document's own (`schemas::accuracy`, which verification regrades); the marks are graded
//! here from the stored answers by the same rules. Absent when the run had no phase.
//!
//! ```text
//! Accuracy of builtin:arithmetic (50 of its 200 items, graded `exact`, before the benchmarks; at least 90.0 % required):
//!
//! | Rule | Correct | Accuracy | 95 % interval | Wrong | Unparsed | Failed |
//! | :--- | ---: | ---: | ---: | ---: | ---: | ---: |
//! | exact | 36 of 50 | 72.0 % | 58.3–82.5 % | 14 | 0 | 0 |
//! ```

use crate::escape::md_escape;
use crate::format;
use schemas::accuracy::grader::Mark;
use schemas::accuracy::texts;
use schemas::document::accuracy::{Accuracy, Placement};
use schemas::document::Predicate;

/// Longest answer or gold answer shown in the items table, in characters.
const SHOWN_CHARS: usize = 80;

fn pct(v: f64) -> String {
    format!("{} %", format::fixed(v * 100.0, 1))
}

/// Whether the result carries the (verified) `accuracy_below_threshold` flag.
pub fn below_threshold(p: &Predicate) -> bool {
    p.validity
        .iter()
        .any(|f| f.code == schemas::flag::FlagCode::AccuracyBelowThreshold)
}

/// The phase's headline in a few words, `72.0 % exact` (with `✖ under 90.0 %` when under its
/// threshold), where a result is one line among others (compare, a campaign's matrix);
/// `None` without a phase.
pub fn headline(p: &Predicate) -> Option<String> {
    let a = p.accuracy.as_ref()?;
    let s = a.headline()?;
    let mut text = format!("{} {}", pct(s.accuracy.get()), s.rule);
    if let (true, Some(min)) = (below_threshold(p), a.suite.min) {
        text.push_str(&format!(" ✖ under {}", pct(min.get())));
    }
    Some(text)
}

/// The section (empty without a phase).
pub fn section(p: &Predicate) -> String {
    let Some(a) = &p.accuracy else {
        return String::new();
    };
    let s = &a.suite;
    let asked = match s.sampled {
        Some(n) => format!("{n} of its {} items", s.rows),
        None => format!("all {} items", s.rows),
    };
    let when = match a.placement {
        Placement::Before => "before the benchmarks",
        Placement::After => "after the benchmarks",
    };
    let min = s.min.map_or(String::new(), |m| {
        format!("; at least {} required", pct(m.get()))
    });
    let mut out = format!(
        "Accuracy of {} ({asked}, graded `{}`, {when}{min}):\n\n\
         | Rule | Correct | Accuracy | 95 % interval | Wrong | Unparsed | Failed |\n\
         | :--- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
        md_escape(&s.name),
        s.grader.as_str(),
    );
    for r in &a.grade.rules {
        out.push_str(&format!(
            "| {} | {} of {} | {} | {}–{} | {} | {} | {} |\n",
            md_escape(&r.rule),
            r.correct,
            r.total,
            pct(r.accuracy.get()),
            format::fixed(r.interval.low.get() * 100.0, 1),
            pct(r.interval.high.get()),
            r.wrong,
            r.unparsed,
            r.failed
        ));
    }
    out.push('\n');
    if let Some(u) = &a.under_load {
        let grades: Vec<String> = u
            .grade
            .rules
            .iter()
            .map(|r| {
                format!(
                    "{} {} of {} correct",
                    md_escape(&r.rule),
                    r.correct,
                    r.total
                )
            })
            .collect();
        out.push_str(&format!(
            "Asked again under load ({} of each benchmark's requests): {} answers compared with \
             the phase's, {} changed; {}.\n\n",
            pct(u.share.get()),
            u.compared,
            u.changed,
            grades.join(", ")
        ));
    }
    out.push_str(&items(a));
    out
}

/// What an item asked: a prompt's text, or a chat item's last message.
fn asked(prompt: &str, messages: bool) -> String {
    if !messages {
        return prompt.to_string();
    }
    serde_json::from_str::<serde_json::Value>(prompt)
        .ok()
        .and_then(|m| {
            m.as_array()?
                .last()?
                .get("content")?
                .as_str()
                .map(str::to_string)
        })
        .unwrap_or_default()
}

/// Every item: its id, the end of its prompt, gold answer, the answer given and each rule's
/// mark.
fn items(a: &Accuracy) -> String {
    let (Ok(answers), Ok(prompts), Ok(marks)) = (
        texts::decode(&a.answers),
        texts::decode(&a.items.prompts),
        a.marks(),
    ) else {
        return "The answers could not be read.\n\n".into();
    };
    let rules = a.suite.grader.rules();
    let mut out = String::from("Answers:\n\n| Item | Asked | Gold answer | Answer |");
    for r in rules {
        out.push_str(&format!(" {} |", md_escape(r)));
    }
    out.push_str("\n| :--- | :--- | :--- | :--- |");
    out.push_str(&" :--- |".repeat(rules.len()));
    out.push('\n');
    for (i, m) in marks.iter().enumerate() {
        let prompt = prompts
            .get(i)
            .map_or(String::new(), |p| asked(p, a.suite.messages));
        out.push_str(&format!(
            "| {} | {} | {} | {} |",
            md_escape(&a.items.id[i]),
            shown(&prompt),
            shown(&a.items.gold[i]),
            shown(&answers[i])
        ));
        for k in 0..rules.len() {
            let word = match m.as_ref().map(|m| m[k]) {
                Some(Mark::Correct) => "✔ correct",
                Some(Mark::Wrong) => "✖ wrong",
                Some(Mark::Unparsed) => "unparsed",
                None => "failed",
            };
            out.push_str(&format!(" {word} |"));
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

/// A text on one line, at most [`SHOWN_CHARS`] characters (its end kept: answers end in what
/// is graded).
fn shown(s: &str) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let n = flat.chars().count();
    let cut = if n > SHOWN_CHARS {
        format!(
            "…{}",
            flat.chars().skip(n - SHOWN_CHARS).collect::<String>()
        )
    } else {
        flat
    };
    if cut.is_empty() {
        "(empty)".into()
    } else {
        md_escape(&cut)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::{predicate, sealed, Doc};
    use schemas::accuracy::grader::GRADER_VERSION;
    use schemas::accuracy::texts;
    use schemas::document::accuracy::Grader;
    use schemas::document::accuracy::{Accuracy, Grade, Items, Placement, Suite};
    use schemas::document::RawRecord;

    #[test]
    fn the_section_states_the_scores_and_marks_every_answer() {
        let doc = Doc {
            model: "m",
            revision: None,
            engine: "e",
            version: None,
            gpus: None,
        };
        let mut p = predicate(&doc, vec![], vec![]);
        p.accuracy = Some(Accuracy {
            suite: Suite {
                name: "gsm8k|test.jsonl".into(),
                sha256: "0".repeat(64),
                rows: 3,
                sampled: None,
                grader: Grader::Gsm8k,
                grader_version: GRADER_VERSION,
                tolerance: None,
                output_tokens: 64,
                stop: vec![],
                messages: false,
                min: Some(schemas::numbers::Finite::new(0.9).unwrap()),
            },
            placement: Placement::After,
            started_at: "2026-11-28T00:00:00Z".into(),
            items: Items {
                id: vec!["a".into(), "b".into(), "c".into()],
                gold: vec!["#### 72".into(), "#### 5".into(), "#### 9".into()],
                choices: None,
                prompts: texts::encode(&["Q: 1", "Q: 2", "Q: 3"]),
            },
            records: vec![RawRecord::default(); 3],
            answers: texts::encode(&["so\n#### 72", "It is 5.", "no idea"]),
            grade: Grade::default(),
            under_load: None,
        });
        let md = super::section(&sealed(p).predicate);
        assert!(
            md.starts_with("Accuracy of gsm8k\\|test.jsonl (all 3 items, graded `gsm8k`, after the benchmarks; at least 90.0 % required)"),
            "{md}"
        );
        assert!(md.contains("| strict-match | 1 of 3 | 33.3 % |"), "{md}");
        assert!(
            md.contains("| flexible-extract | 2 of 3 | 66.7 % |"),
            "{md}"
        );
        assert!(
            md.contains("| b | Q: 2 | \\#\\#\\#\\# 5 | It is 5. | unparsed | ✔ correct |"),
            "{md}"
        );
        assert!(
            md.contains("| c | Q: 3 | \\#\\#\\#\\# 9 | no idea | unparsed | unparsed |"),
            "{md}"
        );
    }
}
