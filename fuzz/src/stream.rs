//! Targets for what a measured server sends: response framing, server-sent events, the
//! engines' JSON chunks and Prometheus text, and the trace and dataset files a run reads.

use crate::split::pieces;
use loadgen::backend::{Api, Codec};
use loadgen::sse::{Leftover, SseError, SseParser};
use wire::http1::{self as framing, Decoded, Framing, MAX_CHUNK_SIZE_LINE, MAX_HEAD_BYTES};

/// The largest event the fuzzed parser accepts: small, so that the limit is reached.
const MAX_EVENT_BYTES: usize = 1024;

/// Server-sent events: the events (and the error, and what is left at the end) must not
/// depend on how the stream was split into reads. The first byte picks the split.
pub fn sse_events(data: &[u8]) {
    let Some((&seed, stream)) = data.split_first() else {
        return;
    };
    let whole = sse(&[stream]);
    let split = sse(&pieces(seed, stream));
    assert_eq!(
        whole, split,
        "the events depend on where the stream was split"
    );
}

type SseOutcome = (Vec<Vec<u8>>, Result<Leftover, SseError>);

fn sse(reads: &[&[u8]]) -> SseOutcome {
    let mut parser = SseParser::new(MAX_EVENT_BYTES);
    let mut events = Vec::new();
    for read in reads {
        if let Err(e) = parser.push(read, |data| events.push(data.to_vec())) {
            return (events, Err(e));
        }
    }
    (events, Ok(parser.finish()))
}

/// An HTTP/1.1 response as the lean client reads it (head, then the body by its framing):
/// the status, body and verdict must not depend on how it was split into reads, below the
/// length limits (which are checked per read by design). The first byte picks the split.
pub fn http1_response(data: &[u8]) {
    let Some((&seed, stream)) = data.split_first() else {
        return;
    };
    let whole = response(&[stream]);
    let split = response(&pieces(seed, stream));
    if stream.len() < MAX_CHUNK_SIZE_LINE.min(MAX_HEAD_BYTES) {
        assert_eq!(whole, split, "the response depends on where it was split");
    }
}

/// Status, body, and whether the head allows keep-alive; or the error's text. (Whether
/// bytes past the body had already arrived, which also rules out reuse, depends on the
/// reads by nature, so it is not part of the outcome.)
type Http1Outcome = Result<(u16, Vec<u8>, bool), String>;

fn response(reads: &[&[u8]]) -> Http1Outcome {
    let mut reads = reads.iter();
    let mut buf = Vec::new();
    let mut start = 0;
    let mut fill = |buf: &mut Vec<u8>| reads.next().map(|r| buf.extend_from_slice(r)).is_some();
    let head = loop {
        match framing::parse_head(&buf[start..]).map_err(|e| e.to_string())? {
            Some((used, head)) => {
                start += used;
                if !head.is_interim() {
                    break head;
                }
                continue;
            }
            None if buf.len() - start > MAX_HEAD_BYTES => return Err("head too long".into()),
            None => {}
        }
        if !fill(&mut buf) {
            return Err("closed inside the head".into());
        }
    };
    let mut framing = head.framing;
    let mut body = Vec::new();
    loop {
        match framing::decode(&buf, &mut start, buf.len(), &mut framing) {
            Ok(Decoded::Piece(range)) => {
                assert!(!range.is_empty(), "an empty body piece");
                body.extend_from_slice(&buf[range]);
                continue;
            }
            Ok(Decoded::End) => break,
            Ok(Decoded::More) => {}
            Err(e) => return Err(e.to_string()),
        }
        if !fill(&mut buf) {
            framing::at_close(&mut framing).map_err(|e| e.to_string())?;
            break;
        }
    }
    assert_eq!(framing, Framing::Done);
    Ok((head.status, body, head.keep_alive))
}

/// One stream of payloads (one a line) through `api`'s parser.
fn chunks(api: Api, data: &[u8]) {
    let mut stream = api.new_stream();
    let mut calls = Vec::new();
    for payload in data.split(|&b| b == b'\n') {
        // Tool-call pieces joined as a request that offered tools joins them: never more
        // calls than one answer is read for.
        stream.tool_call_pieces(payload, &mut calls);
        assert!(calls.len() <= 128, "{} calls", calls.len());
        if let Ok(event) = stream.on_data(payload) {
            // One payload is at most one timed token event, however many tokens it carries.
            assert!(
                event.tokens <= 1,
                "a payload counted {} token events",
                event.tokens
            );
        }
        let _ = stream.answer_text(payload);
    }
}

/// OpenAI completions and chat chunks (the first byte picks which).
pub fn chunk_openai(data: &[u8]) {
    let Some((&pick, payloads)) = data.split_first() else {
        return;
    };
    let api = if pick & 1 == 0 {
        Api::OpenaiCompletions
    } else {
        Api::OpenaiChat
    };
    chunks(api, payloads);
}

/// The Responses API's typed events: one payload a line, through the parser (a token per
/// payload at most; the terminal events and ids read without a panic).
pub fn chunk_responses(data: &[u8]) {
    chunks(Api::OpenaiResponses, data);
}

/// Embeddings and rerank answers, read whole: the first byte picks the API (even:
/// embeddings, odd: rerank), the second the inputs asked for, the rest is the body. An answer
/// accepted holds exactly one vector or score per input, and its digest is a sha256.
pub fn pooled_answer(data: &[u8]) {
    let [pick, expected, body @ ..] = data else {
        return;
    };
    let api = if pick & 1 == 0 {
        Api::OpenaiEmbeddings
    } else {
        Api::Rerank
    };
    if let Ok(answer) = api.pooled_answer(body, u32::from(*expected)) {
        assert_eq!(answer.count, u32::from(*expected));
        assert_eq!(answer.dimension.is_some(), api == Api::OpenaiEmbeddings);
        assert_eq!(answer.sha256.len(), 64);
    }
}

/// TGI's `generate_stream` chunks.
pub fn chunk_tgi(data: &[u8]) {
    chunks(Api::Tgi, data);
}

/// SGLang's native `generate` chunks (cumulative: each event is read against the last).
pub fn chunk_sglang(data: &[u8]) {
    chunks(Api::Sglang, data);
}

/// Prometheus text exposition, as a scrape of an engine's `/metrics` returns it.
pub fn prometheus_text(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        if let Some(sample) = telemetry::prometheus::parse_line(line) {
            assert!(line.contains(sample.name), "a sample's name is in its line");
        }
    }
    let wanted = [
        "vllm:num_requests_running".to_string(),
        "vllm:gpu_cache_usage_perc".to_string(),
        "sglang:num_running_reqs".to_string(),
        "tgi_queue_size".to_string(),
    ];
    let mut out = Vec::new();
    telemetry::prometheus::sum_wanted(&text, &wanted, &mut out);
    assert_eq!(out.len(), wanted.len());
}

/// A request trace (timestamped CSV or JSONL, Mooncake JSONL), detected and as each format.
pub fn trace_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    use loadgen::trace::{parse, TraceFormat};
    for format in [
        None,
        Some(TraceFormat::Timestamped),
        Some(TraceFormat::Mooncake),
    ] {
        if let Ok(trace) = parse(text, "fuzz", format) {
            assert!(!trace.rows.is_empty());
            let _ = trace.duration_s();
            let _ = loadgen::trace::distinct_blocks(&trace.rows);
        }
    }
}

/// A prompt dataset (JSONL, ShareGPT conversations), detected and as each format.
pub fn dataset_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    use loadgen::dataset::{parse, DatasetFormat};
    for format in [
        None,
        Some(DatasetFormat::Jsonl),
        Some(DatasetFormat::Sharegpt),
    ] {
        if let Ok(dataset) = parse(text, "fuzz", format) {
            assert!(!dataset.rows.is_empty());
        }
    }
}

/// An AgentX trace of agentic sessions: parsed, and every session built; each turn's blocks
/// cover its prompt, and every spawn and join names an agent of its session.
pub fn agentx_trace(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(sessions) = loadgen::agentic::agentx::parse(text, "fuzz") else {
        return;
    };
    for (i, s) in sessions.iter().enumerate() {
        let _ = s.largest_tool_result();
        // A prompt's blocks are held while it is replayed: bound what one input may build.
        if s.blocks() > 4 << 20 {
            continue;
        }
        let built = s.build(i as u64, 1, std::time::Duration::from_secs(10));
        // A subagent spawned before its parent's first request is not replayed.
        assert!(built.requests() <= s.requests());
        for agent in &built.agents {
            for t in &agent.turns {
                let ids = t.prompt.ids(built.block_tokens);
                assert!(
                    ids.len() as u64 * u64::from(built.block_tokens) >= u64::from(t.prompt.tokens)
                );
                for j in t.spawns.iter().chain(&t.joins) {
                    assert!((*j as usize) < built.agents.len());
                }
            }
        }
    }
}
