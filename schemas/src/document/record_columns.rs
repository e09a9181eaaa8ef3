//! How a benchmark's raw records are written: one JSON array per field (columns, as
//! `vllm bench serve --save-detailed` writes its per-request numbers), not one object per
//! record.
//!
//! Why: in the row layout every request repeats thirteen field names, a third of a
//! 10,000-request result's bytes, and every byte is base64-decoded, hashed twice (the
//! Ed25519 signature and the `raw-records` subject digest) and parsed each time a result
//! is verified or rendered. In memory the records stay rows (`Vec<RawRecord>`); only the
//! JSON changes. `pandas.DataFrame(benchmark["records"])` reads either layout.
//!
//! Readers accept both layouts: documents of `result/v0.1` wrote rows. Which layout a
//! document's `raw-records` digest was computed over follows from its `predicateType`
//! ([`Layout::of_predicate_type`]).

use crate::document::{Phase, RawRecord, RequestError};
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, SerializeStruct};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[cfg(feature = "json-schema")]
use schemars::JsonSchema;

/// The JSON layout of a benchmark's records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One array per field: what this version writes.
    Columns,
    /// One object per record: `result/v0.1`.
    Rows,
}

impl Layout {
    /// The layout a document of this `predicateType` was written in.
    pub fn of_predicate_type(predicate_type: &str) -> Layout {
        if predicate_type == crate::PREDICATE_TYPE_V0_1 {
            Layout::Rows
        } else {
            Layout::Columns
        }
    }
}

/// A benchmark's records: every array has one entry per request, in the order requests
/// were scheduled; entry `i` of each array belongs to request `i`. Times are µs from the
/// benchmark's `started_at`.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RecordColumns {
    /// `measured`, `warmup` or `cooldown`: only `measured` requests count.
    pub phase: Vec<Phase>,
    /// When the profile meant to send it (µs): latency counts from here.
    pub scheduled_us: Vec<u64>,
    /// When the request actually left (µs).
    pub sent_us: Vec<u64>,
    /// First streamed token event (µs); null when none came.
    pub first_token_us: Vec<Option<u64>>,
    /// Gaps between consecutive token events after the first (see `token_times`).
    pub token_gaps: Vec<String>,
    /// When the stream ended or failed (µs).
    pub end_us: Vec<u64>,
    pub output_tokens_requested: Vec<Option<u32>>,
    /// Prompt length the client built or counted.
    pub input_tokens_client: Vec<Option<u32>>,
    /// `usage.prompt_tokens`, when the server reported usage.
    pub input_tokens_server: Vec<Option<u32>>,
    /// Token events the client counted (content-bearing stream events).
    pub output_tokens_client: Vec<u32>,
    /// `usage.completion_tokens`, when the server reported usage.
    pub output_tokens_server: Vec<Option<u32>>,
    pub finish_reason: Vec<Option<String>>,
    /// Null for a request that completed.
    pub error: Vec<Option<RequestError>>,
    // Columns of `result/v0.4`, written only when some request has a value.
    /// Multi-turn workloads: each request's conversation (0-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<Vec<Option<u32>>>,
    /// Multi-turn workloads: each request's turn (1 for the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<Vec<Option<u32>>>,
    /// Shared-prefix workloads: each request's prefix group (0-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_group: Option<Vec<Option<u32>>>,
    /// Reasoning token events the client counted; null where none came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens_client: Option<Vec<Option<u32>>>,
    /// `usage.completion_tokens_details.reasoning_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens_server: Option<Vec<Option<u32>>>,
    /// First answer token after reasoning (µs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_answer_token_us: Option<Vec<Option<u64>>>,
    // Columns of `result/v0.11`, written only when some request has a value.
    /// Embeddings: the inputs each request carried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Vec<Option<u32>>>,
    /// Rerank: the documents each request scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documents: Option<Vec<Option<u32>>>,
    /// Embeddings: the dimension of the vectors returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_dim: Option<Vec<Option<u32>>>,
    /// Embeddings and rerank: sha256 of the vectors or scores returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_sha256: Option<Vec<Option<String>>>,
    /// Chat with images: the images each request sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Vec<Option<Vec<crate::document::SentImage>>>>,
    // Columns of `result/v0.12`, written only when some request has a value.
    /// Output tokens of each token event (varints in base64, as `token_gaps`), from the
    /// server's running count; null where the stream gave none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_tokens: Option<Vec<Option<String>>>,
    /// The id each request carried (`X-Request-Id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<Vec<Option<String>>>,
    /// What the server said of its own time and work for each request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_timing: Option<Vec<Option<crate::document::ServerTiming>>>,
    /// Dataset workloads: each prompt's category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<Vec<Option<String>>>,
    /// The client's phases of each request up to its response head.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_phases: Option<Vec<Option<crate::document::ClientPhases>>>,
    // Columns of `result/v0.14`, written only when some request has a value.
    /// Agentic sessions: each request's agent and depth in its session's tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<Vec<Option<crate::document::AgentStep>>>,
    /// Prompt tokens a perfect prefix cache would serve, and those the server said it served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<Vec<Option<crate::document::CachedTokens>>>,
    /// Structured output: each answer's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_text: Option<Vec<Option<String>>>,
    /// Tool calls: the calls each answer made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<Option<Vec<crate::document::tools::ToolCall>>>>,
    /// LoRA adapters: the adapter each request asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<Vec<Option<String>>>,
}

/// An optional column's values, or `n` nulls when it is absent.
fn optional<T>(column: Option<Vec<Option<T>>>, n: usize) -> std::vec::IntoIter<Option<T>> {
    column
        .unwrap_or_else(|| std::iter::repeat_with(|| None).take(n).collect())
        .into_iter()
}

impl RecordColumns {
    /// Zips the columns into records; every column must be as long as `phase`.
    fn into_rows(self) -> Result<Vec<RawRecord>, String> {
        let n = self.phase.len();
        let lengths = [
            ("scheduled_us", self.scheduled_us.len()),
            ("sent_us", self.sent_us.len()),
            ("first_token_us", self.first_token_us.len()),
            ("token_gaps", self.token_gaps.len()),
            ("end_us", self.end_us.len()),
            (
                "output_tokens_requested",
                self.output_tokens_requested.len(),
            ),
            ("input_tokens_client", self.input_tokens_client.len()),
            ("input_tokens_server", self.input_tokens_server.len()),
            ("output_tokens_client", self.output_tokens_client.len()),
            ("output_tokens_server", self.output_tokens_server.len()),
            ("finish_reason", self.finish_reason.len()),
            ("error", self.error.len()),
            ("session", self.session.as_ref().map_or(n, Vec::len)),
            ("turn", self.turn.as_ref().map_or(n, Vec::len)),
            (
                "prefix_group",
                self.prefix_group.as_ref().map_or(n, Vec::len),
            ),
            (
                "reasoning_tokens_client",
                self.reasoning_tokens_client.as_ref().map_or(n, Vec::len),
            ),
            (
                "reasoning_tokens_server",
                self.reasoning_tokens_server.as_ref().map_or(n, Vec::len),
            ),
            (
                "first_answer_token_us",
                self.first_answer_token_us.as_ref().map_or(n, Vec::len),
            ),
            ("inputs", self.inputs.as_ref().map_or(n, Vec::len)),
            ("documents", self.documents.as_ref().map_or(n, Vec::len)),
            (
                "embedding_dim",
                self.embedding_dim.as_ref().map_or(n, Vec::len),
            ),
            (
                "output_sha256",
                self.output_sha256.as_ref().map_or(n, Vec::len),
            ),
            ("images", self.images.as_ref().map_or(n, Vec::len)),
            (
                "event_tokens",
                self.event_tokens.as_ref().map_or(n, Vec::len),
            ),
            ("request_id", self.request_id.as_ref().map_or(n, Vec::len)),
            (
                "server_timing",
                self.server_timing.as_ref().map_or(n, Vec::len),
            ),
            ("category", self.category.as_ref().map_or(n, Vec::len)),
            (
                "client_phases",
                self.client_phases.as_ref().map_or(n, Vec::len),
            ),
            ("agent", self.agent.as_ref().map_or(n, Vec::len)),
            (
                "cached_tokens",
                self.cached_tokens.as_ref().map_or(n, Vec::len),
            ),
            ("output_text", self.output_text.as_ref().map_or(n, Vec::len)),
            ("tool_calls", self.tool_calls.as_ref().map_or(n, Vec::len)),
            ("adapter", self.adapter.as_ref().map_or(n, Vec::len)),
        ];
        if let Some((field, len)) = lengths.iter().find(|(_, len)| *len != n) {
            return Err(format!(
                "records.{field} has {len} entries but records.phase has {n}: every column needs one entry per request"
            ));
        }
        let mut phase = self.phase.into_iter();
        let mut scheduled = self.scheduled_us.into_iter();
        let mut sent = self.sent_us.into_iter();
        let mut first = self.first_token_us.into_iter();
        let mut gaps = self.token_gaps.into_iter();
        let mut end = self.end_us.into_iter();
        let mut requested = self.output_tokens_requested.into_iter();
        let mut in_client = self.input_tokens_client.into_iter();
        let mut in_server = self.input_tokens_server.into_iter();
        let mut out_client = self.output_tokens_client.into_iter();
        let mut out_server = self.output_tokens_server.into_iter();
        let mut finish = self.finish_reason.into_iter();
        let mut error = self.error.into_iter();
        let mut session = optional(self.session, n);
        let mut turn = optional(self.turn, n);
        let mut prefix_group = optional(self.prefix_group, n);
        let mut reasoning_client = optional(self.reasoning_tokens_client, n);
        let mut reasoning_server = optional(self.reasoning_tokens_server, n);
        let mut first_answer = optional(self.first_answer_token_us, n);
        let mut inputs = optional(self.inputs, n);
        let mut documents = optional(self.documents, n);
        let mut embedding_dim = optional(self.embedding_dim, n);
        let mut output_sha256 = optional(self.output_sha256, n);
        let mut images = optional(self.images, n);
        let mut event_tokens = optional(self.event_tokens, n);
        let mut request_id = optional(self.request_id, n);
        let mut server_timing = optional(self.server_timing, n);
        let mut category = optional(self.category, n);
        let mut client_phases = optional(self.client_phases, n);
        let mut agent = optional(self.agent, n);
        let mut cached_tokens = optional(self.cached_tokens, n);
        let mut output_text = optional(self.output_text, n);
        let mut tool_calls = optional(self.tool_calls, n);
        let mut adapter = optional(self.adapter, n);
        // Every column has `n` entries (checked above), so this yields exactly `n` records.
        let mut rows = Vec::with_capacity(n);
        rows.extend(std::iter::from_fn(|| {
            Some(RawRecord {
                phase: phase.next()?,
                scheduled_us: scheduled.next()?,
                sent_us: sent.next()?,
                first_token_us: first.next()?,
                token_gaps: gaps.next()?,
                end_us: end.next()?,
                output_tokens_requested: requested.next()?,
                input_tokens_client: in_client.next()?,
                input_tokens_server: in_server.next()?,
                output_tokens_client: out_client.next()?,
                output_tokens_server: out_server.next()?,
                finish_reason: finish.next()?,
                error: error.next()?,
                session: session.next()?,
                turn: turn.next()?,
                prefix_group: prefix_group.next()?,
                reasoning_tokens_client: reasoning_client.next()?,
                reasoning_tokens_server: reasoning_server.next()?,
                first_answer_token_us: first_answer.next()?,
                inputs: inputs.next()?,
                documents: documents.next()?,
                embedding_dim: embedding_dim.next()?,
                output_sha256: output_sha256.next()?,
                images: images.next()?,
                event_tokens: event_tokens.next()?,
                request_id: request_id.next()?,
                server_timing: server_timing.next()?,
                category: category.next()?,
                client_phases: client_phases.next()?,
                agent: agent.next()?,
                cached_tokens: cached_tokens.next()?,
                output_text: output_text.next()?,
                tool_calls: tool_calls.next()?,
                adapter: adapter.next()?,
            })
        }));
        Ok(rows)
    }
}

/// `records` as columns, for `#[serde(with = "record_columns")]`.
pub fn serialize<S: Serializer>(records: &[RawRecord], s: S) -> Result<S::Ok, S::Error> {
    Columns(records).serialize(s)
}

/// Reads `records` in either layout.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<RawRecord>, D::Error> {
    d.deserialize_any(EitherLayout)
}

/// Borrows records to write them as columns without copying a field.
pub struct Columns<'a>(pub &'a [RawRecord]);

/// One column: the field `F` picks out of every record.
struct Column<'a, F>(&'a [RawRecord], F);

fn column<T: Serialize, F: Fn(&RawRecord) -> &T>(records: &[RawRecord], field: F) -> Column<'_, F> {
    Column(records, field)
}

impl<T: Serialize, F: Fn(&RawRecord) -> &T> Serialize for Column<'_, F> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for r in self.0 {
            seq.serialize_element((self.1)(r))?;
        }
        seq.end()
    }
}

impl Serialize for Columns<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut st = s.serialize_struct("RecordColumns", 13)?;
        st.serialize_field("phase", &column(r, |r| &r.phase))?;
        st.serialize_field("scheduled_us", &column(r, |r| &r.scheduled_us))?;
        st.serialize_field("sent_us", &column(r, |r| &r.sent_us))?;
        st.serialize_field("first_token_us", &column(r, |r| &r.first_token_us))?;
        st.serialize_field("token_gaps", &column(r, |r| &r.token_gaps))?;
        st.serialize_field("end_us", &column(r, |r| &r.end_us))?;
        st.serialize_field(
            "output_tokens_requested",
            &column(r, |r| &r.output_tokens_requested),
        )?;
        st.serialize_field(
            "input_tokens_client",
            &column(r, |r| &r.input_tokens_client),
        )?;
        st.serialize_field(
            "input_tokens_server",
            &column(r, |r| &r.input_tokens_server),
        )?;
        st.serialize_field(
            "output_tokens_client",
            &column(r, |r| &r.output_tokens_client),
        )?;
        st.serialize_field(
            "output_tokens_server",
            &column(r, |r| &r.output_tokens_server),
        )?;
        st.serialize_field("finish_reason", &column(r, |r| &r.finish_reason))?;
        st.serialize_field("error", &column(r, |r| &r.error))?;
        // v0.4's columns only where they say something, so older documents' bytes and
        // their `raw-records` digests stay as they were.
        let any = |f: fn(&RawRecord) -> bool| r.iter().any(f);
        if any(|r| r.session.is_some()) {
            st.serialize_field("session", &column(r, |r| &r.session))?;
        }
        if any(|r| r.turn.is_some()) {
            st.serialize_field("turn", &column(r, |r| &r.turn))?;
        }
        if any(|r| r.prefix_group.is_some()) {
            st.serialize_field("prefix_group", &column(r, |r| &r.prefix_group))?;
        }
        if any(|r| r.reasoning_tokens_client.is_some()) {
            st.serialize_field(
                "reasoning_tokens_client",
                &column(r, |r| &r.reasoning_tokens_client),
            )?;
        }
        if any(|r| r.reasoning_tokens_server.is_some()) {
            st.serialize_field(
                "reasoning_tokens_server",
                &column(r, |r| &r.reasoning_tokens_server),
            )?;
        }
        if any(|r| r.first_answer_token_us.is_some()) {
            st.serialize_field(
                "first_answer_token_us",
                &column(r, |r| &r.first_answer_token_us),
            )?;
        }
        if any(|r| r.inputs.is_some()) {
            st.serialize_field("inputs", &column(r, |r| &r.inputs))?;
        }
        if any(|r| r.documents.is_some()) {
            st.serialize_field("documents", &column(r, |r| &r.documents))?;
        }
        if any(|r| r.embedding_dim.is_some()) {
            st.serialize_field("embedding_dim", &column(r, |r| &r.embedding_dim))?;
        }
        if any(|r| r.output_sha256.is_some()) {
            st.serialize_field("output_sha256", &column(r, |r| &r.output_sha256))?;
        }
        if any(|r| r.event_tokens.is_some()) {
            st.serialize_field("event_tokens", &column(r, |r| &r.event_tokens))?;
        }
        if any(|r| r.request_id.is_some()) {
            st.serialize_field("request_id", &column(r, |r| &r.request_id))?;
        }
        if any(|r| r.server_timing.is_some()) {
            st.serialize_field("server_timing", &column(r, |r| &r.server_timing))?;
        }
        if any(|r| r.category.is_some()) {
            st.serialize_field("category", &column(r, |r| &r.category))?;
        }
        if any(|r| r.client_phases.is_some()) {
            st.serialize_field("client_phases", &column(r, |r| &r.client_phases))?;
        }
        if any(|r| r.images.is_some()) {
            st.serialize_field("images", &column(r, |r| &r.images))?;
        }
        if any(|r| r.agent.is_some()) {
            st.serialize_field("agent", &column(r, |r| &r.agent))?;
        }
        if any(|r| r.cached_tokens.is_some()) {
            st.serialize_field("cached_tokens", &column(r, |r| &r.cached_tokens))?;
        }
        if any(|r| r.output_text.is_some()) {
            st.serialize_field("output_text", &column(r, |r| &r.output_text))?;
        }
        if any(|r| r.tool_calls.is_some()) {
            st.serialize_field("tool_calls", &column(r, |r| &r.tool_calls))?;
        }
        if any(|r| r.adapter.is_some()) {
            st.serialize_field("adapter", &column(r, |r| &r.adapter))?;
        }
        st.end()
    }
}

/// A benchmark's `records` JSON as one object per record, for code that reads documents
/// as untyped JSON (either layout; `None` when it is neither).
pub fn rows_of_json(records: &serde_json::Value) -> Option<Vec<serde_json::Value>> {
    if let Some(rows) = records.as_array() {
        return Some(rows.clone());
    }
    let columns = records.as_object()?;
    let n = columns.get("phase")?.as_array()?.len();
    (0..n)
        .map(|i| {
            columns
                .iter()
                .map(|(field, column)| Some((field.clone(), column.as_array()?.get(i)?.clone())))
                .collect()
        })
        .collect()
}

/// An object of columns, or (a `result/v0.1` document) an array of record objects.
struct EitherLayout;

impl<'de> Visitor<'de> for EitherLayout {
    type Value = Vec<RawRecord>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object of record columns (or, in result/v0.1, an array of records)")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let columns = RecordColumns::deserialize(de::value::MapAccessDeserializer::new(map))?;
        columns.into_rows().map_err(de::Error::custom)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut rows = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(record) = seq.next_element()? {
            rows.push(record);
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(i: u64, error: bool) -> RawRecord {
        RawRecord {
            phase: if i == 0 {
                Phase::Warmup
            } else {
                Phase::Measured
            },
            scheduled_us: i * 1_000,
            sent_us: i * 1_000 + 3,
            first_token_us: (!error).then_some(i * 1_000 + 900),
            token_gaps: if error { String::new() } else { "0A==".into() },
            end_us: i * 1_000 + 950,
            output_tokens_requested: Some(2),
            input_tokens_client: Some(7),
            input_tokens_server: None,
            output_tokens_client: if error { 0 } else { 2 },
            output_tokens_server: (!error).then_some(2),
            finish_reason: (!error).then(|| "length".into()),
            error: error.then(|| RequestError {
                class: crate::document::ErrorClass::Reset,
                message: "reset".into(),
            }),
            ..Default::default()
        }
    }

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Holder {
        #[serde(with = "super")]
        records: Vec<RawRecord>,
    }

    #[test]
    fn columns_round_trip_and_name_each_field_once() {
        let h = Holder {
            records: vec![record(0, false), record(1, true), record(2, false)],
        };
        let json = serde_json::to_string(&h).unwrap();
        assert_eq!(json.matches("\"sent_us\"").count(), 1, "{json}");
        assert!(json.contains(r#""sent_us":[3,1003,2003]"#), "{json}");
        assert!(
            json.contains(r#""phase":["warmup","measured","measured"]"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Holder>(&json).unwrap(), h);
        let empty = Holder { records: vec![] };
        let json = serde_json::to_string(&empty).unwrap();
        assert_eq!(serde_json::from_str::<Holder>(&json).unwrap(), empty);
    }

    #[test]
    fn the_row_layout_of_v0_1_still_reads() {
        let records = vec![record(1, false), record(2, true)];
        let rows = serde_json::json!({ "records": records }).to_string();
        assert!(rows.starts_with(r#"{"records":[{"#), "{rows}");
        assert_eq!(
            serde_json::from_str::<Holder>(&rows).unwrap().records,
            records
        );
    }

    #[test]
    fn columns_of_different_lengths_are_an_error_that_names_them() {
        let h = Holder {
            records: vec![record(1, false), record(2, false)],
        };
        let mut v = serde_json::to_value(&h).unwrap();
        v["records"]["end_us"].as_array_mut().unwrap().pop();
        let err = serde_json::from_value::<Holder>(v).unwrap_err().to_string();
        assert!(
            err.contains("records.end_us has 1 entries but records.phase has 2"),
            "{err}"
        );
        let mut v = serde_json::to_value(&h).unwrap();
        v["records"]["latency"] = serde_json::json!([1, 2]);
        let err = serde_json::from_value::<Holder>(v).unwrap_err().to_string();
        assert!(err.contains("unknown field `latency`"), "{err}");
    }

    #[test]
    fn json_columns_read_back_as_rows() {
        let records = vec![record(1, false), record(2, true)];
        let columns = serde_json::to_value(Columns(&records)).unwrap();
        let rows = serde_json::to_value(&records).unwrap();
        assert_eq!(
            rows_of_json(&columns).unwrap(),
            rows.as_array().unwrap().clone()
        );
        assert_eq!(
            rows_of_json(&rows).unwrap(),
            rows.as_array().unwrap().clone()
        );
        assert_eq!(rows_of_json(&serde_json::json!({"phase": 1})), None);
    }

    #[test]
    fn a_missing_column_is_an_error() {
        let h = Holder {
            records: vec![record(1, false)],
        };
        let mut v = serde_json::to_value(&h).unwrap();
        v["records"].as_object_mut().unwrap().remove("token_gaps");
        let err = serde_json::from_value::<Holder>(v).unwrap_err().to_string();
        assert!(err.contains("missing field `token_gaps`"), "{err}");
    }
}
