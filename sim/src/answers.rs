//! The answering mode: a prompt that ends in an arithmetic question of the builtin accuracy
//! suite's form (`What is 37 + 58?`, the last one in the prompt when few-shot examples come
//! first) is answered with the number — wrongly, off by one, for a seeded fraction of the
//! questions (`--wrong-answers`) — so that an accuracy check has a known answer. Only the
//! OpenAI APIs answer (the ones an accuracy check reads text from); every other prompt gets
//! the usual generated words. With `wrong_answers_when_busy` every question that arrives while
//! the server is that busy is answered wrongly: a batching bug for `--accuracy-during-load`.

use super::faults::mix;

/// The last question of the form in a prompt: which question, and its right answer. Found
/// where the request is parsed, without copying the prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Question {
    /// FNV-1a of the question's text (`What is A op B?`): what picks a wrong answer.
    hash: u64,
    right: i64,
}

impl Question {
    /// The last question of the form in `prompt`, or `None` when it holds none.
    pub fn find(prompt: &str) -> Option<Question> {
        let at = prompt.rfind("What is ")?;
        let rest = &prompt[at + "What is ".len()..];
        let end = rest.find('?')?;
        let mut parts = rest[..end].split(' ');
        let (a, op, b) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let (a, b): (i64, i64) = (a.parse().ok()?, b.parse().ok()?);
        let right = match op {
            "+" => a.checked_add(b)?,
            "-" => a.checked_sub(b)?,
            "*" => a.checked_mul(b)?,
            _ => return None,
        };
        let asked = &prompt[at..at + "What is ".len() + end + 1];
        Some(Question {
            hash: fnv1a(asked),
            right,
        })
    }

    /// The answer given: right, or off by one when `(seed, question)` falls in the
    /// `wrong_fraction`. The same question gets the same answer on every request and run.
    pub fn answer(self, seed: u64, wrong_fraction: f64) -> String {
        let wrong = wrongly(seed, self.hash, wrong_fraction);
        (if wrong { self.right + 1 } else { self.right }).to_string()
    }
}

/// The answer to the last question of the form in `prompt`, or `None` when it holds none.
pub fn answer(prompt: &str, seed: u64, wrong_fraction: f64) -> Option<String> {
    Some(Question::find(prompt)?.answer(seed, wrong_fraction))
}

/// Whether the simulator answers `question` (`What is A op B?`) wrongly.
pub fn answers_wrong(seed: u64, question: &str, wrong_fraction: f64) -> bool {
    wrongly(seed, fnv1a(question), wrong_fraction)
}

fn wrongly(seed: u64, hash: u64, wrong_fraction: f64) -> bool {
    let unit = (mix(seed ^ hash) >> 11) as f64 / (1u64 << 53) as f64;
    unit < wrong_fraction
}

fn fnv1a(text: &str) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_the_last_question_and_a_seeded_fraction_wrongly() {
        let p = "Question: What is 2 + 3?\nAnswer: 5\n\nQuestion: What is 7 * 6?\nAnswer:";
        assert_eq!(answer(p, 1, 0.0).as_deref(), Some("42"));
        assert_eq!(answer(p, 1, 1.0).as_deref(), Some("43"));
        assert_eq!(answer("What is 10 - 12?", 1, 0.0).as_deref(), Some("-2"));
        assert_eq!(answer("What is love?", 1, 0.0), None);
        assert_eq!(answer("tok tok tok", 1, 0.0), None);
        let wrong = (0..1000)
            .filter(|i| answers_wrong(7, &format!("What is {i} + 1?"), 0.2))
            .count();
        assert!((150..250).contains(&wrong), "{wrong} of 1000 wrong at 0.2");
    }
}
