//! The limits on a payload's shape, checked in one streaming pass over its JSON before it
//! is parsed into a [`crate::Statement`]: how many benchmarks it holds and how long its
//! strings are. The pass allocates nothing but the path it is at, so a payload built to
//! hurt (a million benchmarks, a 100 MB model name that every table would repeat) is
//! refused, by the JSON path it breaks the limit at, before the parse that would build it.
//!
//! Bytes that are not JSON pass here untouched: the parse after says what is wrong with
//! them, in the words it always has.

use crate::limits::{bytes, COLUMN_FIELDS, MAX_BENCHMARKS, MAX_STRING_BYTES};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt::{self, Write as _};

/// Why `payload` breaks a limit, if it does: the JSON path and the limit, e.g.
/// `predicate.model.id: a string of 9.5 MiB, longer than the 64 KiB a string may be`.
pub fn check(payload: &[u8]) -> Result<(), String> {
    let mut walk = Walk::default();
    let mut de = serde_json::Deserializer::from_slice(payload);
    // A JSON error ends the walk; only a breach it recorded is this check's to report.
    let _ = Node(&mut walk).deserialize(&mut de);
    walk.breach.map_or(Ok(()), Err)
}

/// Cuts every string of `value` (object keys too) that is longer than a document's strings
/// may be, marking the cut, so that what a server said about itself (llama.cpp's `/props`
/// carries the whole chat template) never makes a result that no reader takes.
pub fn clip(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => clip_string(s),
        Value::Array(items) => items.iter_mut().for_each(clip),
        Value::Object(map) => {
            if map.keys().any(|k| k.len() > MAX_STRING_BYTES) {
                *map = std::mem::take(map)
                    .into_iter()
                    .map(|(mut k, v)| {
                        clip_string(&mut k);
                        (k, v)
                    })
                    .collect();
            }
            map.values_mut().for_each(clip);
        }
        _ => {}
    }
}

/// `s` cut to at most [`MAX_STRING_BYTES`], on a character boundary, ending with a note of
/// its whole length; unchanged when it fits.
fn clip_string(s: &mut String) {
    if s.len() <= MAX_STRING_BYTES {
        return;
    }
    let note = format!("… [clipped: {} in all]", bytes(s.len() as u64));
    let mut cut = MAX_STRING_BYTES - note.len();
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    s.push_str(&note);
}

enum Step<'de> {
    Key(Cow<'de, str>),
    Index(usize),
}

#[derive(Default)]
struct Walk<'de> {
    path: Vec<Step<'de>>,
    breach: Option<String>,
}

impl Walk<'_> {
    fn path(&self) -> String {
        let mut out = String::new();
        for step in &self.path {
            match step {
                Step::Key(k) if out.is_empty() => out.push_str(k),
                Step::Key(k) => write!(out, ".{k}").unwrap(),
                Step::Index(i) => write!(out, "[{i}]").unwrap(),
            }
        }
        out
    }

    fn at(&self, keys: &[&str]) -> bool {
        self.path.len() == keys.len()
            && self
                .path
                .iter()
                .zip(keys)
                .all(|(step, key)| matches!(step, Step::Key(k) if k == key))
    }

    /// Records why the walk stops, and the error that stops it.
    fn breach<E: serde::de::Error>(&mut self, why: String) -> E {
        self.breach = Some(format!("{}: {why}", self.path()));
        E::custom("limit")
    }

    fn string<E: serde::de::Error>(&mut self, s: &str) -> Result<(), E> {
        if s.len() > MAX_STRING_BYTES {
            return Err(self.breach(format!(
                "a string of {}, longer than the {} a string may be",
                bytes(s.len() as u64),
                bytes(MAX_STRING_BYTES as u64)
            )));
        }
        Ok(())
    }
}

/// One JSON value, walked.
struct Node<'w, 'de>(&'w mut Walk<'de>);

impl<'de> DeserializeSeed<'de> for Node<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<(), E> {
        self.0.string(s)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let benchmarks = self.0.at(&["predicate", "benchmarks"]);
        for i in 0.. {
            if benchmarks && i == MAX_BENCHMARKS {
                // Counted, not built: the rest are skipped to say how many there are.
                let mut more = 0usize;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    more += 1;
                }
                return Err(self.0.breach(format!(
                    "{} of them, more than the {MAX_BENCHMARKS} benchmarks a document may hold",
                    MAX_BENCHMARKS + more
                )));
            }
            self.0.path.push(Step::Index(i));
            let more = seq.next_element_seed(Node(&mut *self.0))?.is_some();
            self.0.path.pop();
            if !more {
                break;
            }
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key_seed(Key)? {
            if COLUMN_FIELDS.contains(&key.as_ref()) {
                // A column's length follows from the run's, and its decoder bounds it.
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            self.0.string::<A::Error>(&key)?;
            self.0.path.push(Step::Key(key));
            map.next_value_seed(Node(&mut *self.0))?;
            self.0.path.pop();
        }
        Ok(())
    }
}

/// An object's key, borrowed from the payload when it has no escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(s))
    }
    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_string_is_named_by_its_path() {
        let long = "x".repeat(MAX_STRING_BYTES + 1);
        let doc = format!(r#"{{"predicate": {{"benchmarks": [{{}}, {{"label": "{long}"}}]}}}}"#);
        assert_eq!(
            check(doc.as_bytes()).unwrap_err(),
            "predicate.benchmarks[1].label: a string of 64.0 KiB, longer than the 64 KiB a \
             string may be"
        );
        let at_limit = "x".repeat(MAX_STRING_BYTES);
        let doc = format!(r#"{{"a": ["{at_limit}"]}}"#);
        assert_eq!(check(doc.as_bytes()), Ok(()));
    }

    #[test]
    fn a_long_key_is_a_long_string() {
        let long = "k".repeat(MAX_STRING_BYTES + 1);
        let doc = format!(r#"{{"env": {{"{long}": "1"}}}}"#);
        assert!(check(doc.as_bytes())
            .unwrap_err()
            .starts_with("env: a string of"));
    }

    #[test]
    fn columns_may_be_long() {
        let long = "A".repeat(MAX_STRING_BYTES * 4);
        let doc = format!(
            r#"{{"records": {{"token_gaps": ["{long}"]}}, "gpu": {{"t_us": "{long}",
               "power_w": "{long}"}}, "series": [{{"values": "{long}"}}]}}"#
        );
        assert_eq!(check(doc.as_bytes()), Ok(()));
    }

    #[test]
    fn benchmarks_past_the_limit_are_counted_not_built() {
        let many = vec!["{}"; MAX_BENCHMARKS + 5].join(",");
        let doc = format!(r#"{{"predicate": {{"benchmarks": [{many}]}}}}"#);
        assert_eq!(
            check(doc.as_bytes()).unwrap_err(),
            "predicate.benchmarks: 10005 of them, more than the 10000 benchmarks a document may \
             hold"
        );
        // Elsewhere, an array may be as long as it likes.
        let doc = format!(r#"{{"benchmarks": [{many}]}}"#);
        assert_eq!(check(doc.as_bytes()), Ok(()));
    }

    #[test]
    fn clipped_values_pass_and_say_how_long_they_were() {
        let long = "é".repeat(MAX_STRING_BYTES); // 2 bytes each: twice the limit
        let mut v = serde_json::json!({"chat_template": long, "list": [long], long.clone(): 1});
        assert!(check(v.to_string().as_bytes()).is_err());
        clip(&mut v);
        assert_eq!(check(v.to_string().as_bytes()), Ok(()));
        let t = v["chat_template"].as_str().unwrap();
        assert!(
            t.len() <= MAX_STRING_BYTES && t.ends_with("… [clipped: 128 KiB in all]"),
            "{}",
            &t[t.len() - 40..]
        );
        let mut short = "stop".to_string();
        clip_string(&mut short);
        assert_eq!(short, "stop");
    }

    #[test]
    fn bytes_that_are_not_json_are_left_to_the_parse() {
        assert_eq!(check(b"{\"a\": [1, 2"), Ok(()));
        assert_eq!(check(&[b'['; 100_000]), Ok(()));
    }
}
