//! The graders: how an answer's text is judged against the gold answer. They live here, once,
//! so that the runner, `runner verify` and the wasm module grade alike; the Python verifier
//! implements the same rules its own way (with `re`), and a test holds the two to each other
//! item by item.
//!
//! Each grader reports one or more *rules* (lm-eval's "filters"): `gsm8k` reports
//! `strict-match` and `flexible-extract`, the others one rule named as the grader. A rule's
//! verdict on an answer is [`Mark::Correct`], [`Mark::Wrong`] or [`Mark::Unparsed`] (no answer
//! could be read out of the text: counted apart, and not correct).

use crate::document::accuracy::Grader;

pub mod tool_call;

/// Bumped whenever a rule's verdict on some text could change: a stored grade names the
/// version it was computed with, and a verifier of another version says so rather than
/// disagree.
pub const GRADER_VERSION: u32 = 1;

/// One rule's verdict on one answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    Correct,
    Wrong,
    /// Nothing the rule reads as an answer.
    Unparsed,
}

/// What a grader needs of an item besides the answer's text.
#[derive(Clone, Copy, Debug)]
pub struct Gold<'a> {
    pub answer: &'a str,
    /// Multiple choice: how many choices the item offers (letters A…).
    pub choices: Option<u32>,
    /// `number`: the largest absolute difference still correct.
    pub tolerance: f64,
}

/// The marks of each of `grader`'s rules (in [`Grader::rules`] order) on `answer`.
pub fn grade(grader: Grader, answer: &str, gold: &Gold) -> Vec<Mark> {
    match grader {
        Grader::Gsm8k => {
            let reference = gsm8k_normalise(gold.answer);
            [gsm8k_strict(answer), gsm8k_flexible(answer)]
                .into_iter()
                .map(|found| match found {
                    None => Mark::Unparsed,
                    Some(f) if gsm8k_normalise(&f) == reference => Mark::Correct,
                    Some(_) => Mark::Wrong,
                })
                .collect()
        }
        Grader::Exact => vec![match normalise(answer) {
            a if a.is_empty() => Mark::Unparsed,
            a if a == normalise(gold.answer) => Mark::Correct,
            _ => Mark::Wrong,
        }],
        Grader::Choice => vec![match choice_letter(answer, gold.choices) {
            None => Mark::Unparsed,
            Some(l) if gold.answer.trim().eq_ignore_ascii_case(&l.to_string()) => Mark::Correct,
            Some(_) => Mark::Wrong,
        }],
        Grader::Number => vec![match (last_number(answer), last_number(gold.answer)) {
            (None, _) => Mark::Unparsed,
            (Some(a), Some(g)) if (a - g).abs() <= gold.tolerance => Mark::Correct,
            _ => Mark::Wrong,
        }],
        Grader::ToolCall => vec![tool_call::grade(answer, gold.answer)],
    }
}

/// Whether `gold` is an answer `grader` can ever mark correct (checked when a suite is read).
pub fn check_gold(grader: Grader, gold: &Gold) -> Result<(), String> {
    match grader {
        Grader::Gsm8k if gsm8k_normalise(gold.answer).trim().is_empty() => {
            Err("a GSM8K answer must end in `#### NUMBER` or be a number".into())
        }
        Grader::Exact if normalise(gold.answer).is_empty() => Err("the answer is empty".into()),
        Grader::Choice => {
            let letters = gold.choices.unwrap_or(26).min(26);
            let a = gold.answer.trim().as_bytes();
            match a {
                [c] if c.is_ascii_alphabetic()
                    && u32::from(c.to_ascii_uppercase() - b'A') < letters =>
                {
                    Ok(())
                }
                _ => Err(format!(
                    "a multiple-choice answer must be one letter A–{}, got {:?}",
                    char::from(b'A' + letters as u8 - 1),
                    gold.answer
                )),
            }
        }
        Grader::Number if last_number(gold.answer).is_none() => {
            Err(format!("the answer {:?} holds no number", gold.answer))
        }
        Grader::ToolCall => tool_call::check_gold(gold.answer),
        _ => Ok(()),
    }
}

/// lm-eval's `regexes_to_ignore` for GSM8K, in order — `,`, `\$`, `(?s).*#### `, `\.$` —
/// then `ignore_case`.
fn gsm8k_normalise(s: &str) -> String {
    let mut t: String = s.chars().filter(|&c| c != ',' && c != '$').collect();
    if let Some(at) = t.rfind("#### ") {
        t.drain(..at + 5);
    }
    // `\.$`: a `.` at the end, or before a final newline (Python's `$`).
    if t.ends_with('.') {
        t.pop();
    } else if t.ends_with(".\n") {
        t.remove(t.len() - 2);
    }
    t.to_lowercase()
}

fn number_char(b: u8) -> bool {
    b.is_ascii_digit() || b == b'.' || b == b','
}

/// `#### (\-?[0-9\.\,]+)`, the first match's group.
fn gsm8k_strict(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(at) = text[from..].find("#### ").map(|i| from + i) {
        let mut i = at + 5;
        let start = i;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        let run = b[i..].iter().take_while(|&&c| number_char(c)).count();
        if run > 0 {
            return Some(text[start..i + run].to_string());
        }
        from = at + 1;
    }
    None
}

/// `(-?[$0-9.,]{2,})|(-?[0-9]+)` scanned as Python's `re.findall` does; the last match's
/// non-empty group, stripped.
fn gsm8k_flexible(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let class = |c: u8| number_char(c) || c == b'$';
    let (mut i, mut last) = (0, None);
    while i < b.len() {
        let dash = usize::from(b[i] == b'-');
        let wide = b[i + dash..].iter().take_while(|&&c| class(c)).count();
        let digits = b[i + dash..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let len = if wide >= 2 {
            dash + wide
        } else if digits >= 1 {
            dash + digits
        } else {
            i += 1;
            continue;
        };
        last = Some(&text[i..i + len]);
        i += len;
    }
    last.map(|m| m.trim().to_string())
}

/// `exact`'s normal form.
fn normalise(s: &str) -> String {
    let mut t = s
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    if t.ends_with('.') {
        t.pop();
    }
    t
}

/// The letter a multiple-choice answer gives, upper case.
fn choice_letter(answer: &str, choices: Option<u32>) -> Option<char> {
    let letters = choices.unwrap_or(26).min(26) as u8;
    let valid = |c: u8| c.is_ascii_uppercase() && c - b'A' < letters;
    let b = answer.as_bytes();
    // The last `(X)`, as lm-eval's multiple-choice `(\([A-Z]\))` with group_select -1.
    let parenthesised = (0..b.len().saturating_sub(2))
        .rev()
        .find(|&i| b[i] == b'(' && valid(b[i + 1]) && b[i + 2] == b')')
        .map(|i| char::from(b[i + 1]));
    parenthesised.or_else(|| {
        let t = answer.trim_start().as_bytes();
        match t {
            [c] | [c, b'.' | b')' | b':' | b' ' | b'\n', ..] if valid(c.to_ascii_uppercase()) => {
                Some(char::from(c.to_ascii_uppercase()))
            }
            _ => None,
        }
    })
}

/// The last number in `s`: `-?[0-9][0-9,]*(\.[0-9]+)?` with `$` and `,` ignored.
fn last_number(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let (mut i, mut last) = (0, None);
    while i < b.len() {
        if !b[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let negative = i > 0 && b[i - 1] == b'-' || i > 1 && b[i - 1] == b'$' && b[i - 2] == b'-';
        let start = i;
        while i < b.len()
            && (b[i].is_ascii_digit()
                || b[i] == b',' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            i += 1;
        }
        if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
        let digits: String = s[start..i].chars().filter(|&c| c != ',').collect();
        last = digits
            .parse::<f64>()
            .ok()
            .map(|v| if negative { -v } else { v });
    }
    last
}

#[cfg(test)]
mod tests;
