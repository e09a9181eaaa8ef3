//! SGLang's native API: `POST /generate`.
//!
//! Request: `{"text": prompt, "sampling_params": {"max_new_tokens", "ignore_eos",
//! "temperature"}, "stream": true}`.
//!
//! Events: `{"text", "output_ids", "meta_info": {"id", "prompt_tokens", "completion_tokens",
//! "cached_tokens", "finish_reason", …}}`, then `[DONE]`. `text` and the counts are cumulative
//! (the whole output so far), so whether an event carries a new token is a comparison with the
//! previous event: it is a token event when `completion_tokens` grew or the text grew. Counts
//! catch a token whose text SGLang holds back (an unfinished UTF-8 character); text catches a
//! server that omits counts. With `--incremental-streaming-output` SGLang sends text deltas
//! instead, and the growing count still tells tokens apart. One event may carry several tokens
//! (`--stream-interval`): it counts once, and `meta_info` has the real count. Under
//! speculative decoding `meta_info` also counts the request's verification steps
//! (`spec_verify_ct`), its draft tokens and those accepted, under the names of its version
//! (0.5.12 on: `spec_num_proposed_drafts`, `spec_num_correct_drafts`; 0.5.11:
//! `spec_proposed_drafts`, `spec_accepted_drafts`, which later versions still write beside
//! the new ones; up to 0.5.10: `spec_draft_token_num`, `spec_accept_token_num`; the newest
//! name present is read) and how many steps accepted 0, 1, 2, … drafts
//! (`spec_correct_drafts_histogram`, earlier `spec_accept_histogram`), and with
//! `--enable-metrics` the finishing event says when the
//! server received the request and sent its first token (`request_received_ts`,
//! `prefill_finished_ts`, seconds on its wall clock): their difference is the server's own
//! time to the first token, its queue included. The last event that has them is the
//! request's (older versions count the steps on every event, newer ones once at the end).
//!
//! `finish_reason` is `null` until the last event, then `{"type": "length", "length": n}`,
//! `{"type": "stop", "matched": …}` or `{"type": "abort", "message": …}` (older versions: a
//! plain string); the type is the finish reason, and an abort is also a server error. A failure
//! inside the stream is `{"error": {"message": …}}`.

use super::{error_message, parse, Event, EventError, GenerationRequest, StrLen, Usage};
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::fmt;

pub(super) fn body(r: &GenerationRequest) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("text".into(), json!(r.prompt));
    body.insert(
        "sampling_params".into(),
        json!({
            "max_new_tokens": r.max_tokens,
            "ignore_eos": r.ignore_eos,
            "temperature": r.temperature,
        }),
    );
    body.insert("stream".into(), json!(true));
    body
}

/// What the previous event of this request had.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Progress {
    text_len: usize,
    completion_tokens: u32,
}

#[derive(Deserialize)]
struct Chunk {
    text: Option<StrLen>,
    meta_info: Option<Meta>,
    error: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct Meta {
    prompt_tokens: Option<u32>,
    completion_tokens: Option<u32>,
    /// Prompt tokens served from the radix cache.
    cached_tokens: Option<u32>,
    /// Speculative decoding: verification steps so far.
    spec_verify_ct: Option<u32>,
    /// Speculative decoding: draft tokens proposed so far (steps × draft tokens a step),
    /// under each version's name, newest first (separate fields, not aliases: a version that
    /// writes two of them must not read as a duplicate key).
    spec_num_proposed_drafts: Option<u32>,
    spec_proposed_drafts: Option<u32>,
    spec_draft_token_num: Option<u32>,
    /// Speculative decoding: draft tokens accepted so far (the target's own token apart),
    /// under each version's name, newest first.
    spec_num_correct_drafts: Option<u32>,
    spec_accepted_drafts: Option<u32>,
    spec_accept_token_num: Option<u32>,
    /// Speculative decoding: entry n counts the steps that accepted exactly n drafts, under
    /// each version's name, newest first.
    spec_correct_drafts_histogram: Option<Vec<u32>>,
    spec_accept_histogram: Option<Vec<u32>>,
    /// `--enable-metrics`, on the finishing event: when the server received the request and
    /// when its first token went out (the server's wall clock, seconds since the epoch).
    request_received_ts: Option<f64>,
    prefill_finished_ts: Option<f64>,
    finish_reason: Option<Finish>,
}

/// `{"type": …, "message": …}` or, from older versions, a plain string.
struct Finish {
    kind: String,
    message: Option<String>,
}

impl<'de> Deserialize<'de> for Finish {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Finish;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a finish reason object or string")
            }

            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Finish, E> {
                Ok(Finish {
                    kind: s.to_owned(),
                    message: None,
                })
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Finish, A::Error> {
                let (mut kind, mut message) = (None, None);
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match &*key {
                        "type" => kind = map.next_value::<Option<String>>()?,
                        "message" => message = map.next_value::<Option<String>>()?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Finish {
                    kind: kind.unwrap_or_else(|| "unknown".to_owned()),
                    message,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// SGLang's OpenAI APIs, asked with `return_spec_tokens_details`: a request's speculative
/// counts in the stream's `sglext.spec_tokens_details` (one object; a list of one a choice
/// when a request asks for several), under the names its `meta_info` has them.
#[derive(Deserialize)]
pub(super) struct SglExt {
    spec_tokens_details: Option<OneOrFirst<SpecTokensDetails>>,
}

#[derive(Deserialize)]
struct SpecTokensDetails {
    spec_verify_ct: Option<u32>,
    spec_num_proposed_drafts: Option<u32>,
    spec_num_correct_drafts: Option<u32>,
    spec_correct_drafts_histogram: Option<Vec<u32>>,
}

/// An object, or the first of a list of them.
struct OneOrFirst<T>(Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrFirst<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either<T> {
            Many(Vec<T>),
            One(T),
        }
        Ok(OneOrFirst(match Either::deserialize(d)? {
            Either::Many(v) => v.into_iter().next(),
            Either::One(t) => Some(t),
        }))
    }
}

impl SglExt {
    /// What the server said of the request's drafts, when it said anything.
    pub(super) fn timing(self) -> Option<schemas::document::ServerTiming> {
        let d = self.spec_tokens_details?.0?;
        Some(schemas::document::ServerTiming {
            drafts: d.spec_verify_ct,
            draft_tokens: d.spec_num_proposed_drafts,
            accepted_tokens: d.spec_num_correct_drafts,
            // SGLang writes an empty list for a request that drafted nothing.
            steps_by_accepted: d.spec_correct_drafts_histogram.filter(|h| !h.is_empty()),
            ..Default::default()
        })
    }
}

pub(super) fn event(data: &[u8], prev: &mut Progress) -> Result<Event, EventError> {
    if super::is_done(data) {
        return Ok(Event {
            done: true,
            ..Event::default()
        });
    }
    let chunk: Chunk = parse(data)?;
    if chunk.text.is_none() && chunk.meta_info.is_none() && chunk.error.is_none() {
        return Err(EventError::Unexpected(format!(
            "no text, meta_info or error in {}",
            super::preview(data)
        )));
    }
    let mut grew = false;
    if let Some(StrLen(len)) = chunk.text {
        grew |= len > prev.text_len;
        prev.text_len = len;
    }
    let mut event = Event::default();
    if let Some(meta) = chunk.meta_info {
        if let Some(n) = meta.completion_tokens {
            grew |= n > prev.completion_tokens;
            prev.completion_tokens = n;
        }
        event.usage = Some(Usage {
            prompt_tokens: meta.prompt_tokens,
            completion_tokens: meta.completion_tokens,
            ..Default::default()
        });
        event.cached_tokens = meta.cached_tokens;
        // The server's own time to the first token: its receipt to the first token's send.
        let first_token_us = match (meta.request_received_ts, meta.prefill_finished_ts) {
            (Some(received), Some(first)) if first >= received && received > 0.0 => {
                Some(((first - received) * 1e6).round() as u64)
            }
            _ => None,
        };
        if meta.spec_verify_ct.is_some() || first_token_us.is_some() {
            event.timing = Some(schemas::document::ServerTiming {
                prefill_us: first_token_us,
                drafts: meta.spec_verify_ct,
                draft_tokens: meta
                    .spec_num_proposed_drafts
                    .or(meta.spec_proposed_drafts)
                    .or(meta.spec_draft_token_num),
                accepted_tokens: meta
                    .spec_num_correct_drafts
                    .or(meta.spec_accepted_drafts)
                    .or(meta.spec_accept_token_num),
                decoded_tokens: meta.completion_tokens,
                steps_by_accepted: meta
                    .spec_correct_drafts_histogram
                    .or(meta.spec_accept_histogram),
                ..Default::default()
            });
        }
        if let Some(finish) = meta.finish_reason {
            if finish.kind == "abort" {
                event.server_error = Some(
                    finish
                        .message
                        .unwrap_or_else(|| "request aborted by the server".into()),
                );
            }
            event.finish_reason = Some(finish.kind);
        }
    }
    if chunk.error.is_some() {
        event.server_error = Some(error_message(data));
    }
    event.tokens = u32::from(grew);
    Ok(event)
}
