//! Backend protocols against real and hand-written streams, through the SSE parser as the load
//! generator uses them.

use super::*;
use crate::sse::SseParser;

/// What a whole stream added up to.
#[derive(Debug, Default)]
struct Outcome {
    tokens: u32,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
    server_errors: Vec<String>,
    event_errors: Vec<EventError>,
    /// Events seen after `[DONE]` (there should be none).
    after_done: usize,
}

fn run(api: Api, stream: &[u8]) -> Outcome {
    run_chunks(api, &[stream])
}

/// The stream fed in `chunks`, every event read by `api`'s stream state.
fn run_chunks<C: AsRef<[u8]>>(api: Api, chunks: &[C]) -> Outcome {
    let (events, left) = crate::sse::data_events(chunks);
    assert!(left.is_clean(), "stream ended mid-event");
    let mut state = api.new_stream();
    let mut out = Outcome::default();
    for data in events {
        if out.done {
            out.after_done += 1;
        }
        match state.on_data(&data) {
            Ok(e) => {
                out.tokens += e.tokens;
                if e.finish_reason.is_some() {
                    out.finish_reason = e.finish_reason;
                }
                if e.usage.is_some() {
                    out.usage = e.usage;
                }
                out.done |= e.done;
                out.server_errors.extend(e.server_error);
            }
            Err(e) => out.event_errors.push(e),
        }
    }
    out
}

fn on(api: Api, payload: &str) -> Result<Event, EventError> {
    api.new_stream().on_data(payload.as_bytes())
}

fn body(api: Api, r: &GenerationRequest) -> Value {
    serde_json::from_slice(&api.request_body(r)).unwrap()
}

fn request<'a>(extra: Option<&'a Map<String, Value>>) -> GenerationRequest<'a> {
    GenerationRequest {
        model: "m",
        prompt: "Hello \"world\"\n",
        history: &[],
        previous_response_id: None,
        max_tokens: 128,
        ignore_eos: true,
        temperature: 0.0,
        extra,
        ..Default::default()
    }
}

const ALL: [Api; 5] = [
    Api::OpenaiCompletions,
    Api::OpenaiChat,
    Api::Tgi,
    Api::Sglang,
    Api::OpenaiResponses,
];

#[test]
fn names_and_paths() {
    assert_eq!(Api::ALL[..5], ALL);
    assert!(ALL.iter().all(|a| a.streams()));
    for api in Api::ALL {
        // The command line (clap's derived names) and documents spell an API the same way.
        use clap::ValueEnum;
        let clap_name = api.to_possible_value().unwrap().get_name().to_owned();
        assert_eq!(api.as_str(), clap_name);
        assert_eq!(Api::from_name(api.as_str()), Some(api));
    }
    assert_eq!(Api::from_name("openai"), None);
    let names: Vec<_> = Api::ALL.iter().map(|a| a.as_str()).collect();
    assert_eq!(
        names,
        [
            "openai-completions",
            "openai-chat",
            "tgi",
            "sglang",
            "openai-responses",
            "openai-embeddings",
            "rerank",
            "tei-rerank"
        ]
    );
    let paths: Vec<_> = Api::ALL.iter().map(|a| a.path()).collect();
    assert_eq!(
        paths,
        [
            "/v1/completions",
            "/v1/chat/completions",
            "/generate_stream",
            "/generate",
            "/v1/responses",
            "/v1/embeddings",
            "/v1/rerank",
            "/rerank"
        ]
    );
}

// ---- request bodies ----

#[test]
fn openai_completions_body() {
    let b = body(Api::OpenaiCompletions, &request(None));
    assert_eq!(
        b,
        serde_json::json!({
            "model": "m", "prompt": "Hello \"world\"\n", "max_tokens": 128, "stream": true,
            "stream_options": {"include_usage": true, "continuous_usage_stats": true}, "temperature": 0.0, "ignore_eos": true,
        })
    );
    // ignore_eos is an extension OpenAI itself rejects: only sent when asked for.
    let b = body(
        Api::OpenaiCompletions,
        &GenerationRequest {
            ignore_eos: false,
            ..request(None)
        },
    );
    assert!(b.get("ignore_eos").is_none());
}

#[test]
fn openai_chat_body() {
    let b = body(
        Api::OpenaiChat,
        &GenerationRequest {
            temperature: 0.7,
            ..request(None)
        },
    );
    assert_eq!(
        b,
        serde_json::json!({
            "model": "m", "messages": [{"role": "user", "content": "Hello \"world\"\n"}],
            "max_tokens": 128, "max_completion_tokens": 128, "stream": true,
            "stream_options": {"include_usage": true, "continuous_usage_stats": true}, "temperature": 0.7, "ignore_eos": true,
        })
    );
}

#[test]
fn tgi_body() {
    let b = body(Api::Tgi, &request(None));
    assert_eq!(
        b,
        serde_json::json!({
            "inputs": "Hello \"world\"\n",
            "parameters": {"max_new_tokens": 128, "details": true, "do_sample": false},
        }),
        "greedy: no temperature (TGI refuses 0), no ignore-EOS setting (TGI has none)"
    );
    let b = body(
        Api::Tgi,
        &GenerationRequest {
            temperature: 1.0,
            ..request(None)
        },
    );
    assert_eq!(b["parameters"]["do_sample"], true);
    assert_eq!(b["parameters"]["temperature"], 1.0);
    let b = body(
        Api::Tgi,
        &GenerationRequest {
            temperature: f64::NAN,
            ..request(None)
        },
    );
    assert_eq!(b["parameters"]["do_sample"], false);
    assert!(b["parameters"].get("temperature").is_none());
}

#[test]
fn sglang_body() {
    let b = body(
        Api::Sglang,
        &GenerationRequest {
            ignore_eos: false,
            ..request(None)
        },
    );
    assert_eq!(
        b,
        serde_json::json!({
            "text": "Hello \"world\"\n",
            "sampling_params": {"max_new_tokens": 128, "ignore_eos": false, "temperature": 0.0},
            "stream": true,
        })
    );
}

#[test]
fn extra_fields_merge_as_a_merge_patch() {
    let extra: Map<String, Value> = serde_json::from_str(
        r#"{"top_p": 0.9, "temperature": 0.5, "max_completion_tokens": null,
            "stream_options": {"continuous_usage_stats": true},
            "parameters": {"top_k": 10}, "sampling_params": {"top_p": 0.8}}"#,
    )
    .unwrap();
    let b = body(Api::OpenaiChat, &request(Some(&extra)));
    assert_eq!(b["top_p"], 0.9, "added");
    assert_eq!(b["temperature"], 0.5, "replaced");
    assert!(b.get("max_completion_tokens").is_none(), "null removes");
    assert_eq!(
        b["stream_options"],
        serde_json::json!({"include_usage": true, "continuous_usage_stats": true})
    );
    // Nested parameter objects are extended, not replaced.
    let b = body(Api::Tgi, &request(Some(&extra)));
    assert_eq!(b["parameters"]["top_k"], 10);
    assert_eq!(b["parameters"]["max_new_tokens"], 128);
    let b = body(Api::Sglang, &request(Some(&extra)));
    assert_eq!(b["sampling_params"]["top_p"], 0.8);
    assert_eq!(b["sampling_params"]["max_new_tokens"], 128);
    // An object patch over a non-object replaces it.
    let extra: Map<String, Value> = serde_json::from_str(r#"{"prompt": {"a": 1}}"#).unwrap();
    assert_eq!(
        body(Api::OpenaiCompletions, &request(Some(&extra)))["prompt"],
        serde_json::json!({"a": 1})
    );
}

/// The engine's fields, then the spec's `--extra-body`, then the request's own: each a merge
/// patch over what came before (a later `null` removes what an earlier one added).
#[test]
fn the_engines_the_specs_and_the_requests_fields_merge_in_that_order() {
    let map = |s: &str| serde_json::from_str::<Map<String, Value>>(s).unwrap();
    let server = map(r#"{"return_spec_tokens_details": true, "top_k": 1, "x": {"a": 1}}"#);
    let spec =
        map(r#"{"top_k": 2, "top_p": 0.5, "x": {"b": 2}, "return_spec_tokens_details": null}"#);
    let own = map(r#"{"top_p": 0.7}"#);
    let r = GenerationRequest {
        server_fields: Some(&server),
        spec_fields: Some(&spec),
        ..request(Some(&own))
    };
    let b = body(Api::OpenaiChat, &r);
    assert_eq!(
        (&b["top_k"], &b["top_p"]),
        (&serde_json::json!(2), &serde_json::json!(0.7))
    );
    assert_eq!(b["x"], serde_json::json!({"a": 1, "b": 2}));
    assert!(b.get("return_spec_tokens_details").is_none(), "{b}");
}

// ---- real llama.cpp transcripts ----

const LLAMA_COMPLETIONS: &str =
    include_str!("../../tests/fixtures/llama-server-sse/completions-stream.txt");
const LLAMA_COMPLETIONS_USAGE: &str =
    include_str!("../../tests/fixtures/llama-server-sse/completions-stream-include-usage.txt");
const LLAMA_CHAT: &str = include_str!("../../tests/fixtures/llama-server-sse/chat-stream.txt");
const LLAMA_CHAT_USAGE: &str =
    include_str!("../../tests/fixtures/llama-server-sse/chat-stream-include-usage.txt");

#[test]
fn llama_cpp_transcripts() {
    let cases = [
        (Api::OpenaiCompletions, LLAMA_COMPLETIONS, 5),
        (Api::OpenaiCompletions, LLAMA_COMPLETIONS_USAGE, 5),
        (Api::OpenaiChat, LLAMA_CHAT, 5),
        (Api::OpenaiChat, LLAMA_CHAT_USAGE, 6),
    ];
    for (api, stream, tokens) in cases {
        let o = run(api, stream.as_bytes());
        assert!(
            o.event_errors.is_empty() && o.server_errors.is_empty(),
            "{o:?}"
        );
        assert_eq!(o.tokens, tokens, "{api:?}");
        let usage = o.usage.expect("llama.cpp reports usage");
        assert_eq!(
            usage.completion_tokens,
            Some(o.tokens),
            "client count = server count"
        );
        assert!(usage.prompt_tokens.is_some_and(|p| p > 0));
        assert_eq!(o.finish_reason.as_deref(), Some("length"));
        assert!(o.done);
        assert_eq!(o.after_done, 0);
    }
}

#[test]
fn llama_cpp_transcripts_in_crlf_and_split_anywhere() {
    // The same stream with CRLF line ends, fed in 7-byte pieces: same result.
    let crlf = LLAMA_CHAT_USAGE.replace('\n', "\r\n");
    let pieces: Vec<&[u8]> = crlf.as_bytes().chunks(7).collect();
    let o = run_chunks(Api::OpenaiChat, &pieces);
    assert!(o.event_errors.is_empty(), "{:?}", o.event_errors);
    assert_eq!((o.tokens, o.done), (6, true));
}

#[test]
fn llama_cpp_events_one_by_one() {
    let lines: Vec<&str> = LLAMA_COMPLETIONS_USAGE
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    let first = on(Api::OpenaiCompletions, lines[0]).unwrap();
    assert_eq!(
        first,
        Event {
            tokens: 1,
            ..Event::default()
        }
    );
    // The finish chunk: empty text, finish reason, usage and llama.cpp's own timing of the
    // request (its `timings`, in µs); not a token.
    let finish = on(Api::OpenaiCompletions, lines[5]).unwrap();
    assert_eq!(
        finish,
        Event {
            tokens: 0,
            finish_reason: Some("length".into()),
            usage: Some(Usage {
                prompt_tokens: Some(4),
                completion_tokens: Some(5),
                prompt_tokens_details: Some(crate::backend::PromptDetails {
                    cached_tokens: Some(3)
                }),
                ..Default::default()
            }),
            // llama.cpp says the prompt tokens it reused in usage (and as `timings.cache_n`).
            cached_tokens: Some(3),
            timing: Some(schemas::document::ServerTiming {
                prefill_us: Some(228_186),
                decode_us: Some(94_774),
                decoded_tokens: Some(5),
                ..Default::default()
            }),
            ..Event::default()
        }
    );
    assert_eq!(
        on(Api::OpenaiCompletions, lines[6]).unwrap(),
        Event {
            done: true,
            ..Event::default()
        }
    );

    let lines: Vec<&str> = LLAMA_CHAT
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    // The opening chunk (role, null content) is not a token.
    assert_eq!(on(Api::OpenaiChat, lines[0]).unwrap().tokens, 0);
    assert_eq!(on(Api::OpenaiChat, lines[1]).unwrap().tokens, 1);
    // The finish chunk with an empty delta is not a token; the usage chunk has no choices.
    let finish = on(Api::OpenaiChat, lines[6]).unwrap();
    assert_eq!(
        (finish.tokens, finish.finish_reason.as_deref()),
        (0, Some("length"))
    );
    let usage = on(Api::OpenaiChat, lines[7]).unwrap();
    assert_eq!(
        usage.usage,
        Some(Usage {
            prompt_tokens: Some(35),
            completion_tokens: Some(5),
            prompt_tokens_details: Some(crate::backend::PromptDetails {
                cached_tokens: Some(0)
            }),
            ..Default::default()
        })
    );
    assert_eq!(usage.cached_tokens, Some(0));
    assert_eq!(usage.tokens, 0);
}

// ---- vLLM (OpenAI server), hand-written from its format ----

/// vLLM `/v1/completions` with `include_usage`: the last token and the finish reason come in
/// one chunk, then a `"choices": []` chunk with usage, then `[DONE]`.
const VLLM_COMPLETIONS: &str = concat!(
    r#"data: {"id":"cmpl-8c5f","object":"text_completion","created":1732233600,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":" The","logprobs":null,"finish_reason":null,"stop_reason":null}]}"#,
    "\n\n",
    r#"data: {"id":"cmpl-8c5f","object":"text_completion","created":1732233600,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":" quick\n","logprobs":null,"finish_reason":null,"stop_reason":null}]}"#,
    "\n\n",
    r#"data: {"id":"cmpl-8c5f","object":"text_completion","created":1732233600,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":"\u00e9","logprobs":null,"finish_reason":null,"stop_reason":null}]}"#,
    "\n\n",
    r#"data: {"id":"cmpl-8c5f","object":"text_completion","created":1732233600,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":" fox","logprobs":null,"finish_reason":"length","stop_reason":null}]}"#,
    "\n\n",
    r#"data: {"id":"cmpl-8c5f","object":"text_completion","created":1732233600,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[],"usage":{"prompt_tokens":12,"total_tokens":16,"completion_tokens":4,"prompt_tokens_details":null}}"#,
    "\n\n",
    "data: [DONE]\n\n",
);

/// vLLM `/v1/chat/completions` for a reasoning model: role chunk with `"content": ""`,
/// reasoning deltas (older vLLM: `reasoning_content`, newer: `reasoning`), answer deltas, a
/// finish chunk with empty content, the usage chunk.
const VLLM_CHAT: &str = concat!(
    r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732233600,"model":"Qwen/QwQ-32B","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732233600,"model":"Qwen/QwQ-32B","choices":[{"index":0,"delta":{"reasoning_content":"Let"},"logprobs":null,"finish_reason":null}]}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732233600,"model":"Qwen/QwQ-32B","choices":[{"index":0,"delta":{"reasoning":" me"},"logprobs":null,"finish_reason":null}]}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732233600,"model":"Qwen/QwQ-32B","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}]}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732233600,"model":"Qwen/QwQ-32B","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop","stop_reason":null}]}"#,
    "\n\n",
    r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732233600,"model":"Qwen/QwQ-32B","choices":[],"usage":{"prompt_tokens":9,"total_tokens":13,"completion_tokens":4}}"#,
    "\n\n",
    "data: [DONE]\n\n",
);

#[test]
fn vllm_completions_stream() {
    let o = run(Api::OpenaiCompletions, VLLM_COMPLETIONS.as_bytes());
    assert!(o.event_errors.is_empty(), "{:?}", o.event_errors);
    assert_eq!(
        o.tokens, 4,
        "the chunk carrying both the last token and the finish reason is a token"
    );
    assert_eq!(
        o.usage,
        Some(Usage {
            prompt_tokens: Some(12),
            completion_tokens: Some(4),
            ..Default::default()
        })
    );
    assert_eq!(o.finish_reason.as_deref(), Some("length"));
    assert!(o.done);
}

#[test]
fn vllm_chat_stream_with_reasoning() {
    let o = run(Api::OpenaiChat, VLLM_CHAT.as_bytes());
    assert!(o.event_errors.is_empty(), "{:?}", o.event_errors);
    assert_eq!(o.tokens, 3, "two reasoning deltas and one content delta");
    assert_eq!(
        o.usage.unwrap().completion_tokens,
        Some(4),
        "vLLM also counts the EOS token"
    );
    assert_eq!(o.finish_reason.as_deref(), Some("stop"));
    assert!(o.done);
}

#[test]
fn in_stream_errors() {
    // vLLM (current): {"error": {...}}; older vLLM nested one more level.
    let e = on(Api::OpenaiCompletions, r#"{"error":{"object":"error","message":"boom","type":"InternalServerError","param":null,"code":500}}"#).unwrap();
    assert_eq!(e.server_error.as_deref(), Some("InternalServerError: boom"));
    assert_eq!(e.tokens, 0);
    let e = on(
        Api::OpenaiChat,
        r#"{"error":{"error":{"message":"nested","type":"BadRequestError","code":400}}}"#,
    )
    .unwrap();
    assert_eq!(e.server_error.as_deref(), Some("BadRequestError: nested"));
    let e = on(Api::OpenaiChat, r#"{"error":"plain"}"#).unwrap();
    assert_eq!(e.server_error.as_deref(), Some("plain"));
    let e = on(Api::OpenaiChat, r#"{"error":{"code":7}}"#).unwrap();
    assert_eq!(e.server_error.as_deref(), Some(r#"{"code":7}"#));
    // TGI
    let e = on(Api::Tgi, r#"{"error":"Request failed during generation: Server error: CUDA out of memory","error_type":"generation"}"#).unwrap();
    assert_eq!(
        e.server_error.as_deref(),
        Some("generation: Request failed during generation: Server error: CUDA out of memory")
    );
    // SGLang
    let e = on(
        Api::Sglang,
        r#"{"error":{"message":"The input is too long"}}"#,
    )
    .unwrap();
    assert_eq!(e.server_error.as_deref(), Some("The input is too long"));
    // `"error": null` is no error.
    let e = on(
        Api::OpenaiCompletions,
        r#"{"choices":[{"text":"x"}],"error":null}"#,
    )
    .unwrap();
    assert_eq!(
        e,
        Event {
            tokens: 1,
            ..Event::default()
        }
    );
}

// ---- TGI ----

/// TGI 1.x `/generate_stream` stopping at EOS: one event per token, the EOS token itself
/// special, the last event with `generated_text` and `details`.
const TGI_EOS: &str = concat!(
    r#"data:{"index":1,"token":{"id":415,"text":" The","logprob":-0.41,"special":false},"generated_text":null,"details":null}"#,
    "\n\n",
    r#"data:{"index":2,"token":{"id":2936,"text":" fox","logprob":-1.2,"special":false},"generated_text":null,"details":null}"#,
    "\n\n",
    // An unfinished UTF-8 character: empty text, still a generated token.
    r#"data:{"index":3,"token":{"id":240,"text":"","logprob":-2.0,"special":false},"generated_text":null,"details":null}"#,
    "\n\n",
    r#"data:{"index":4,"token":{"id":2,"text":"</s>","logprob":-0.01,"special":true},"generated_text":" The fox","details":{"finish_reason":"eos_token","generated_tokens":4,"seed":null}}"#,
    "\n\n",
);

/// TGI 2.x, stopping at the length limit: `details` also carries `input_length`.
const TGI_LENGTH: &str = concat!(
    r#"data:{"index":1,"token":{"id":415,"text":" The","logprob":-0.41,"special":false},"generated_text":null,"details":null,"top_tokens":null}"#,
    "\n\n",
    r#"data:{"index":2,"token":{"id":2936,"text":" fox","logprob":-1.2,"special":false},"generated_text":" The fox","details":{"finish_reason":"length","generated_tokens":2,"seed":null,"input_length":7},"top_tokens":null}"#,
    "\n\n",
);

#[test]
fn tgi_streams() {
    let o = run(Api::Tgi, TGI_EOS.as_bytes());
    assert!(o.event_errors.is_empty(), "{:?}", o.event_errors);
    assert_eq!(
        o.tokens, 4,
        "the special EOS token counts, as in TGI's generated_tokens"
    );
    assert_eq!(
        o.usage,
        Some(Usage {
            prompt_tokens: None,
            completion_tokens: Some(4),
            ..Default::default()
        })
    );
    assert_eq!(o.finish_reason.as_deref(), Some("eos_token"));
    assert!(!o.done, "TGI sends no [DONE]");

    let o = run(Api::Tgi, TGI_LENGTH.as_bytes());
    assert_eq!(o.tokens, 2);
    assert_eq!(
        o.usage,
        Some(Usage {
            prompt_tokens: Some(7),
            completion_tokens: Some(2),
            ..Default::default()
        })
    );
    assert_eq!(o.finish_reason.as_deref(), Some("length"));
}

// ---- SGLang ----

/// SGLang `/generate` with `stream: true`: cumulative text and counts, then `[DONE]`. The
/// third token's text is held back (unfinished character), the fourth completes it.
const SGLANG: &str = concat!(
    r#"data: {"text":" The","output_ids":[415],"meta_info":{"id":"a1","finish_reason":null,"prompt_tokens":7,"completion_tokens":1,"cached_tokens":0}}"#,
    "\n\n",
    r#"data: {"text":" The fox","output_ids":[415,2936],"meta_info":{"id":"a1","finish_reason":null,"prompt_tokens":7,"completion_tokens":2,"cached_tokens":0}}"#,
    "\n\n",
    r#"data: {"text":" The fox","output_ids":[415,2936,240],"meta_info":{"id":"a1","finish_reason":null,"prompt_tokens":7,"completion_tokens":3,"cached_tokens":0}}"#,
    "\n\n",
    r#"data: {"text":" The fox \u00e9","output_ids":[415,2936,240,169],"meta_info":{"id":"a1","finish_reason":{"type":"length","length":4},"prompt_tokens":7,"completion_tokens":4,"cached_tokens":0,"e2e_latency":0.05}}"#,
    "\n\n",
    "data: [DONE]\n\n",
);

#[test]
fn sglang_stream() {
    let o = run(Api::Sglang, SGLANG.as_bytes());
    assert!(o.event_errors.is_empty(), "{:?}", o.event_errors);
    assert_eq!(o.tokens, 4);
    assert_eq!(
        o.usage,
        Some(Usage {
            prompt_tokens: Some(7),
            completion_tokens: Some(4),
            ..Default::default()
        })
    );
    assert_eq!(o.finish_reason.as_deref(), Some("length"));
    assert!(o.done);
}

#[test]
fn sglang_counting_rules() {
    let mut s = Api::Sglang.new_stream();
    let mut ev = |p: &str| s.on_data(p.as_bytes()).unwrap();
    // Text only (no counts): growth decides.
    assert_eq!(ev(r#"{"text":"a"}"#).tokens, 1);
    assert_eq!(
        ev(r#"{"text":"a"}"#).tokens,
        0,
        "a repeated cumulative text is no new token"
    );
    assert_eq!(ev(r#"{"text":"ab"}"#).tokens, 1);
    // Several tokens in one event (stream interval) still count as one event.
    let e = ev(r#"{"text":"abcd","meta_info":{"completion_tokens":5}}"#);
    assert_eq!((e.tokens, e.usage.unwrap().completion_tokens), (1, Some(5)));
    // A final event repeating everything with the finish reason is not a token.
    let e = ev(
        r#"{"text":"abcd","meta_info":{"completion_tokens":5,"finish_reason":{"type":"stop","matched":2}}}"#,
    );
    assert_eq!((e.tokens, e.finish_reason.as_deref()), (0, Some("stop")));

    // Incremental output mode (text deltas): the count tells tokens apart.
    let mut s = Api::Sglang.new_stream();
    let mut ev = |p: &str| s.on_data(p.as_bytes()).unwrap();
    assert_eq!(
        ev(r#"{"text":"hello","meta_info":{"completion_tokens":1}}"#).tokens,
        1
    );
    assert_eq!(
        ev(r#"{"text":" a","meta_info":{"completion_tokens":2}}"#).tokens,
        1
    );

    // Abort: a finish reason and a server error. Old string finish reasons.
    let e = on(Api::Sglang, r#"{"text":"","meta_info":{"completion_tokens":0,"finish_reason":{"type":"abort","message":"Client disconnected"}}}"#).unwrap();
    assert_eq!(e.finish_reason.as_deref(), Some("abort"));
    assert_eq!(e.server_error.as_deref(), Some("Client disconnected"));
    let e = on(
        Api::Sglang,
        r#"{"text":"x","meta_info":{"finish_reason":"length"}}"#,
    )
    .unwrap();
    assert_eq!((e.tokens, e.finish_reason.as_deref()), (1, Some("length")));
}

/// SGLang's finishing event under speculative decoding with `--enable-metrics`, as its
/// tokenizer manager writes it: the request's drafts, and its receipt and first token on the
/// server's wall clock (the rest of `meta_info` is passed over).
#[test]
fn sglang_speculative_finish_is_the_servers_count_and_clock() {
    let e = on(
        Api::Sglang,
        r#"{"text":"abcdefgh","output_ids":[9],"meta_info":{"id":"r1","finish_reason":{"type":"length","length":8},"prompt_tokens":7,"completion_tokens":8,"cached_tokens":0,"spec_accept_rate":0.5,"spec_accept_length":2.6666666666666665,"spec_verify_ct":3,"spec_accept_token_num":3,"spec_draft_token_num":6,"e2e_latency":0.05,"request_received_ts":1764547200.125,"request_sent_to_scheduler_ts":1764547200.126,"prefill_finished_ts":1764547200.1625,"response_sent_to_client_ts":1764547200.17,"decode_finished_ts":1764547200.175,"inference_time":0.04,"decode_throughput":180.0}}"#,
    )
    .unwrap();
    let t = e.timing.expect("the server's count and clock");
    assert_eq!(
        (
            t.drafts,
            t.draft_tokens,
            t.accepted_tokens,
            t.decoded_tokens
        ),
        (Some(3), Some(6), Some(3), Some(8))
    );
    // 162.5 − 125 ms: the server's own TTFT, its queue included.
    assert_eq!((t.queue_us, t.prefill_us), (None, Some(37_500)));
    assert_eq!(t.first_token_us(), Some(37_500));
    // SGLang 0.5.12 on: the new names, with 0.5.11's still beside them (each read once; the
    // newest wins).
    for meta in [
        r#""spec_verify_ct":43,"spec_num_correct_drafts":63,"spec_num_proposed_drafts":215,"spec_accepted_drafts":63,"spec_proposed_drafts":215"#,
        r#""spec_verify_ct":43,"spec_num_correct_drafts":63,"spec_num_proposed_drafts":215"#,
        r#""spec_verify_ct":43,"spec_accepted_drafts":63,"spec_proposed_drafts":215"#,
    ] {
        let e = on(
            Api::Sglang,
            &format!(
                r#"{{"text":"x","meta_info":{{"completion_tokens":106,"finish_reason":{{"type":"length","length":106}},{meta}}}}}"#
            ),
        )
        .unwrap();
        let t = e.timing.expect("the drafts");
        assert_eq!(
            (t.drafts, t.draft_tokens, t.accepted_tokens),
            (Some(43), Some(215), Some(63)),
            "{meta}"
        );
    }
    // An older SGLang: the steps alone, on every event.
    let e = on(
        Api::Sglang,
        r#"{"text":"ab","meta_info":{"completion_tokens":2,"spec_verify_ct":1}}"#,
    )
    .unwrap();
    let t = e.timing.unwrap();
    assert_eq!(
        (t.drafts, t.draft_tokens, t.prefill_us),
        (Some(1), None, None)
    );
    // How many steps accepted 0, 1, 2, … drafts: the newest name, else 0.5.11's.
    for (meta, name) in [
        (
            r#""spec_correct_drafts_histogram":[1,2,3],"spec_accept_histogram":[9]"#,
            "new",
        ),
        (r#""spec_accept_histogram":[1,2,3]"#, "old"),
    ] {
        let e = on(
            Api::Sglang,
            &format!(r#"{{"text":"x","meta_info":{{"spec_verify_ct":6,{meta}}}}}"#),
        )
        .unwrap();
        assert_eq!(
            e.timing.unwrap().steps_by_accepted,
            Some(vec![1, 2, 3]),
            "{name}"
        );
    }
    // A first token said before the receipt is not a time.
    let e = on(
        Api::Sglang,
        r#"{"text":"ab","meta_info":{"completion_tokens":2,"request_received_ts":10.5,"prefill_finished_ts":10.25}}"#,
    )
    .unwrap();
    assert!(e.timing.is_none());
}

/// SGLang's OpenAI APIs, asked `return_spec_tokens_details`: the request's drafts on a chunk
/// of their own after the finish (an object, or a list of one a choice), read as the native
/// API's `meta_info`; a request that drafted nothing says an empty histogram.
#[test]
fn sglang_openai_streams_say_their_drafts_in_sglext() {
    for api in [Api::OpenaiChat, Api::OpenaiCompletions] {
        for details in [
            r#"{"spec_accept_rate":0.5,"spec_accept_length":2.5,"spec_num_correct_drafts":6,"spec_num_proposed_drafts":12,"spec_verify_ct":4,"spec_correct_drafts_histogram":[1,0,2,1],"spec_cap_lens_histogram":[]}"#,
            r#"[{"spec_num_correct_drafts":6,"spec_num_proposed_drafts":12,"spec_verify_ct":4,"spec_correct_drafts_histogram":[1,0,2,1]}]"#,
        ] {
            let e = on(
                api,
                &format!(
                    r#"{{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"sglext":{{"spec_tokens_details":{details}}}}}"#
                ),
            )
            .unwrap();
            assert_eq!(e.tokens, 0);
            let t = e.timing.expect("the drafts");
            assert_eq!(
                (
                    t.drafts,
                    t.draft_tokens,
                    t.accepted_tokens,
                    t.steps_by_accepted
                ),
                (Some(4), Some(12), Some(6), Some(vec![1, 0, 2, 1])),
                "{api:?} {details}"
            );
        }
        let e = on(
            api,
            r#"{"choices":[],"sglext":{"spec_tokens_details":{"spec_verify_ct":0,"spec_correct_drafts_histogram":[]}}}"#,
        )
        .unwrap();
        assert_eq!(e.timing.unwrap().steps_by_accepted, None);
        // Other extensions alone say nothing of the drafts.
        let e = on(api, r#"{"choices":[],"sglext":{"routed_experts":"AAAA"}}"#).unwrap();
        assert!(e.timing.is_none());
    }
}

// ---- malformed payloads ----

#[test]
fn malformed_payloads_are_event_errors() {
    for api in ALL {
        for bad in [
            "",
            "not json",
            "{\"choices\":[{\"text\":\"x\"}]",
            "{\"text\": \"x",
            "data: {}",
            "[DONE",
        ] {
            match api.new_stream().on_data(bad.as_bytes()) {
                Err(EventError::NotJson(_)) => {}
                other => panic!("{api:?} {bad:?}: {other:?}"),
            }
        }
        for odd in ["{}", "42", "\"x\"", "[]", "null", "{\"foo\":1}"] {
            match api.new_stream().on_data(odd.as_bytes()) {
                Err(EventError::Unexpected(_)) => {}
                other => panic!("{api:?} {odd:?}: {other:?}"),
            }
        }
    }
    let wrong_types = [
        (Api::OpenaiCompletions, r#"{"choices":5}"#),
        (Api::OpenaiCompletions, r#"{"choices":[{"text":5}]}"#),
        (
            Api::OpenaiCompletions,
            r#"{"choices":[],"usage":{"completion_tokens":-1}}"#,
        ),
        (Api::OpenaiChat, r#"{"choices":[{"delta":"x"}]}"#),
        (
            Api::OpenaiChat,
            r#"{"choices":[{"delta":{"content":["x"]}}]}"#,
        ),
        (
            Api::Tgi,
            r#"{"token":{"text":"x"},"details":{"generated_tokens":"4"}}"#,
        ),
        (Api::Sglang, r#"{"text":3}"#),
        (
            Api::Sglang,
            r#"{"text":"x","meta_info":{"finish_reason":7}}"#,
        ),
    ];
    for (api, p) in wrong_types {
        assert!(
            matches!(on(api, p), Err(EventError::Unexpected(_))),
            "{api:?} {p}: {:?}",
            on(api, p)
        );
    }
    // Messages name the payload.
    let Err(EventError::NotJson(m)) = on(Api::Tgi, "<html>502 Bad Gateway</html>") else {
        panic!()
    };
    assert!(m.contains("502 Bad Gateway"), "{m}");
}

#[test]
fn string_edge_cases() {
    let ev = |p: &str| on(Api::OpenaiCompletions, p).unwrap().tokens;
    assert_eq!(
        ev(r#"{"choices":[{"text":"\n"}]}"#),
        1,
        "an escaped newline is text"
    );
    assert_eq!(ev(r#"{"choices":[{"text":"\u0000"}]}"#), 1);
    assert_eq!(ev(r#"{"choices":[{"text":""}]}"#), 0);
    assert_eq!(ev(r#"{"choices":[{"text":null}]}"#), 0);
    assert_eq!(ev(r#"{"choices":[{}]}"#), 0);
    assert_eq!(ev(r#"{"choices":null,"usage":{"prompt_tokens":1}}"#), 0);
    // n > 1 is never requested; only the first choice is read, the rest skipped.
    assert_eq!(ev(r#"{"choices":[{"text":""},{"text":"x"}]}"#), 0);
    assert_eq!(
        ev(r#"{"choices":[{"text":"x"},{"text":""},{"text":"y"}]}"#),
        1
    );
    // Whitespace around [DONE] is tolerated; an empty finish reason is none.
    assert!(on(Api::OpenaiChat, " [DONE] ").unwrap().done);
    let e = on(
        Api::OpenaiChat,
        r#"{"choices":[{"delta":{},"finish_reason":""}]}"#,
    )
    .unwrap();
    assert_eq!(e.finish_reason, None);
}

// ---- micro-benchmark ----

/// ns per streamed event for a realistic vLLM chunk: the SSE parser alone, the JSON alone, and
/// both together, one event per network chunk (the usual case) and events split across chunks.
/// `cargo test -p runner --release backend::tests::bench -- --ignored --nocapture`
#[test]
#[ignore]
fn bench_event_cost() {
    use std::hint::black_box;
    use std::time::Instant;

    let completion = br#"data: {"id":"cmpl-3a0c1e9f5b7d4c2a8e6f0b1d3c5a7e9f","object":"text_completion","created":1732233600,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}]}

"#;
    let chat = br#"data: {"id":"chatcmpl-3a0c1e9f5b7d4c2a8e6f0b1d3c5a7e9f","object":"chat.completion.chunk","created":1732233600,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}

"#;
    /// Best and median of 40 batches of 25,000 events: the best is the figure (a shared
    /// machine only ever adds time), the median shows the noise.
    fn time(label: &str, f: &mut dyn FnMut() -> u32) {
        const BATCH: u32 = 25_000;
        let mut per_event = Vec::new();
        let mut tokens = 0u64;
        for _ in 0..41 {
            let t = Instant::now();
            for _ in 0..BATCH {
                tokens += u64::from(f());
            }
            per_event.push(t.elapsed().as_nanos() as f64 / f64::from(BATCH));
        }
        per_event.remove(0); // warm-up
        per_event.sort_by(f64::total_cmp);
        assert!(tokens >= 41 * u64::from(BATCH));
        println!(
            "{label:<56} {:6.0} ns/event (median {:.0})",
            per_event[0],
            per_event[per_event.len() / 2]
        );
    }

    println!(
        "payload {} bytes (completions), {} bytes (chat)",
        completion.len(),
        chat.len()
    );
    let mut p = SseParser::new(1 << 20);
    time("SSE only, one event per chunk", &mut || {
        let mut n = 0;
        p.push(black_box(completion), |d| n += black_box(d).len() as u32)
            .unwrap();
        n
    });
    let payload = &completion[6..completion.len() - 2];
    let mut s = Api::OpenaiCompletions.new_stream();
    time("JSON only, openai-completions", &mut || {
        s.on_data(black_box(payload)).unwrap().tokens
    });
    let mut s = Api::OpenaiCompletions.new_stream();
    let mut p = SseParser::new(1 << 20);
    time(
        "SSE + JSON, openai-completions, one event per chunk",
        &mut || {
            let mut n = 0;
            p.push(black_box(completion), |d| n += s.on_data(d).unwrap().tokens)
                .unwrap();
            n
        },
    );
    let mut s = Api::OpenaiChat.new_stream();
    let mut p = SseParser::new(1 << 20);
    time("SSE + JSON, openai-chat, one event per chunk", &mut || {
        let mut n = 0;
        p.push(black_box(chat), |d| n += s.on_data(d).unwrap().tokens)
            .unwrap();
        n
    });
    // A token whose text has JSON escapes (serde_json unescapes it into a scratch buffer).
    let escaped = br#"data: {"id":"cmpl-3a0c1e9f5b7d4c2a8e6f0b1d3c5a7e9f","object":"text_completion","created":1732233600,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":"\n\u00e9","logprobs":null,"finish_reason":null,"stop_reason":null}]}

"#;
    let mut s = Api::OpenaiCompletions.new_stream();
    let mut p = SseParser::new(1 << 20);
    time("SSE + JSON, openai-completions, escaped text", &mut || {
        let mut n = 0;
        p.push(black_box(escaped), |d| n += s.on_data(d).unwrap().tokens)
            .unwrap();
        n
    });
    // Each event split in two chunks mid-JSON: the copying path.
    let (a, b) = completion.split_at(100);
    let mut s = Api::OpenaiCompletions.new_stream();
    let mut p = SseParser::new(1 << 20);
    time(
        "SSE + JSON, openai-completions, split in 2 chunks",
        &mut || {
            let mut n = 0;
            p.push(black_box(a), |d| n += s.on_data(d).unwrap().tokens)
                .unwrap();
            p.push(black_box(b), |d| n += s.on_data(d).unwrap().tokens)
                .unwrap();
            n
        },
    );
}

// ---- the Responses API ----

/// A streamed response as OpenAI's Responses API and vLLM write one (ids shortened): lifecycle
/// events, a reasoning delta, three output-text deltas (one empty), the terminal event with
/// usage, and no `[DONE]`.
const RESPONSES: &str = concat!(
    "event: response.created\n",
    r#"data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_abc","object":"response","status":"in_progress","output":[],"usage":null}}"#,
    "\n\n",
    "event: response.in_progress\n",
    r#"data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_abc","status":"in_progress"}}"#,
    "\n\n",
    "event: response.output_item.added\n",
    r#"data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}"#,
    "\n\n",
    "event: response.reasoning_text.delta\n",
    r#"data: {"type":"response.reasoning_text.delta","sequence_number":3,"item_id":"rs_1","output_index":0,"content_index":0,"delta":"Hmm"}"#,
    "\n\n",
    "event: response.output_text.delta\n",
    r#"data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello","logprobs":[]}"#,
    "\n\n",
    "event: response.output_text.delta\n",
    r#"data: {"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"","logprobs":[]}"#,
    "\n\n",
    "event: response.output_text.delta\n",
    r#"data: {"type":"response.output_text.delta","sequence_number":6,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" \"world\"","logprobs":[]}"#,
    "\n\n",
    "event: response.output_text.done\n",
    r#"data: {"type":"response.output_text.done","sequence_number":7,"item_id":"msg_1","output_index":0,"content_index":0,"text":"Hello \"world\""}"#,
    "\n\n",
    "event: response.incomplete\n",
    r#"data: {"type":"response.incomplete","sequence_number":8,"response":{"id":"resp_abc","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":0},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":12}}}"#,
    "\n\n",
);

#[test]
fn openai_responses_body() {
    let b = body(Api::OpenaiResponses, &request(None));
    assert_eq!(
        b,
        serde_json::json!({
            "model": "m", "input": "Hello \"world\"\n", "max_output_tokens": 128, "temperature": 0.0,
            "stream": true, "ignore_eos": true,
        })
    );
    // A conversation resent: its turns as messages; chained: only the new turn, named after
    // the previous response, which the server must store.
    let history = ["hi".to_string(), "hello".to_string()];
    let resent = body(
        Api::OpenaiResponses,
        &GenerationRequest {
            history: &history,
            ignore_eos: false,
            ..request(None)
        },
    );
    assert_eq!(
        resent["input"],
        serde_json::json!([
            {"type": "message", "role": "user", "content": "hi"},
            {"type": "message", "role": "assistant", "content": "hello"},
            {"type": "message", "role": "user", "content": "Hello \"world\"\n"},
        ])
    );
    assert!(resent.get("ignore_eos").is_none() && resent.get("previous_response_id").is_none());
    let chained = body(
        Api::OpenaiResponses,
        &GenerationRequest {
            previous_response_id: Some("resp_abc"),
            ..request(None)
        },
    );
    assert_eq!(chained["input"], "Hello \"world\"\n");
    assert_eq!(chained["previous_response_id"], "resp_abc");
    assert_eq!(chained["store"], true);
}

#[test]
fn openai_responses_stream() {
    let o = run(Api::OpenaiResponses, RESPONSES.as_bytes());
    // The reasoning delta and two non-empty text deltas; the empty one is no token.
    assert_eq!(o.tokens, 3);
    assert!(o.done, "response.incomplete ends the stream");
    assert_eq!(o.finish_reason.as_deref(), Some("max_output_tokens"));
    let u = o.usage.unwrap();
    assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(9), Some(3)));
    assert_eq!(
        u.completion_tokens_details.unwrap().reasoning_tokens,
        Some(1)
    );
    assert!(o.event_errors.is_empty() && o.server_errors.is_empty());
    // Event by event: the id from response.created, reasoning apart, answer text.
    let (events, _) = crate::sse::data_events(&[RESPONSES.as_bytes()]);
    let mut state = Api::OpenaiResponses.new_stream();
    let created = state.on_data(&events[0]).unwrap();
    assert_eq!(created.response_id.as_deref(), Some("resp_abc"));
    assert_eq!(created.tokens, 0);
    let reasoning = state.on_data(&events[3]).unwrap();
    assert!(reasoning.reasoning && reasoning.tokens == 1);
    assert_eq!(state.answer_text(&events[3]), None);
    assert_eq!(state.answer_text(&events[6]).as_deref(), Some(" \"world\""));
    // A completed response: its status is the finish reason.
    let done = on(Api::OpenaiResponses, r#"{"type":"response.completed","response":{"id":"r","status":"completed","usage":{"input_tokens":1,"output_tokens":1}}}"#).unwrap();
    assert!(done.done && done.finish_reason.as_deref() == Some("completed"));
}

#[test]
fn openai_responses_errors_and_unknown_events() {
    let e = on(Api::OpenaiResponses, r#"{"type":"error","code":"server_error","message":"boom","param":null,"sequence_number":3}"#).unwrap();
    assert_eq!(e.server_error.as_deref(), Some("server_error: boom"));
    let f = on(Api::OpenaiResponses, r#"{"type":"response.failed","response":{"id":"r","status":"failed","error":{"code":"server_error","message":"out of memory"}}}"#).unwrap();
    assert!(f.done && f.finish_reason.is_none());
    assert!(f.server_error.unwrap().contains("out of memory"));
    // A type the API does not define: skipped, flagged for counting, never an error.
    let u = on(
        Api::OpenaiResponses,
        r#"{"type":"response.vendor_extension.delta","delta":"x"}"#,
    )
    .unwrap();
    assert!(u.ignored && u.tokens == 0);
    // Known lifecycle events: nothing to count.
    let k = on(
        Api::OpenaiResponses,
        r#"{"type":"response.content_part.added","part":{"type":"output_text","text":""}}"#,
    )
    .unwrap();
    assert!(!k.ignored && k.tokens == 0 && !k.done);
    // Not this API's events at all.
    assert!(matches!(
        on(Api::OpenaiResponses, r#"{"choices":[]}"#),
        Err(EventError::Unexpected(_))
    ));
    assert!(matches!(
        on(
            Api::OpenaiResponses,
            r#"{"type":"response.output_text.delta","delta":"#
        ),
        Err(EventError::NotJson(_))
    ));
}

/// Tool calls as llama.cpp streams them (its real chunks, trimmed: the name with the first
/// argument piece, then pieces) and as vLLM's parsers do (the name alone, then pieces; two
/// parallel calls by `index`): every chunk with a name or some arguments is a token event,
/// the opening and finish chunks are not, and the pieces join into whole calls.
#[test]
fn tool_call_pieces_are_token_events_and_join_into_calls() {
    use schemas::document::tools::ToolCall;
    let llama = [
        r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"object":"chat.completion.chunk"}"#,
        r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"tool_calls":[{"index":0,"id":"1vyc","type":"function","function":{"name":"get_weather","arguments":"{"}}]}}],"object":"chat.completion.chunk"}"#,
        r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"city\": \""}}]}}]}"#,
        r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"Paris\"}"}}]}}]}"#,
        r#"{"choices":[{"finish_reason":"tool_calls","index":0,"delta":{}}]}"#,
    ];
    let vllm = [
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-a","type":"function","index":0,"function":{"name":"add"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\": 1}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-b","type":"function","index":1,"function":{"name":"add","arguments":""}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"a\": 2}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":""}}]},"finish_reason":"tool_calls"}]}"#,
    ];
    let call = |name: &str, arguments: &str| ToolCall {
        name: name.into(),
        arguments: arguments.into(),
    };
    for (chunks, tokens, want) in [
        (
            &llama[..],
            vec![0, 1, 1, 1, 0],
            vec![call("get_weather", r#"{"city": "Paris"}"#)],
        ),
        (
            &vllm[..],
            vec![0, 1, 1, 1, 1, 0],
            vec![call("add", r#"{"a": 1}"#), call("add", r#"{"a": 2}"#)],
        ),
    ] {
        let mut s = Api::OpenaiChat.new_stream();
        let mut calls = Vec::new();
        let mut counted = Vec::new();
        for c in chunks {
            counted.push(s.on_data(c.as_bytes()).unwrap().tokens);
            s.tool_call_pieces(c.as_bytes(), &mut calls);
        }
        assert_eq!(counted, tokens);
        assert_eq!(calls, want);
    }
    // A stray index does not grow the list without bound.
    let mut calls = Vec::new();
    Api::OpenaiChat.new_stream().tool_call_pieces(
        br#"{"choices":[{"delta":{"tool_calls":[{"index":4000000000,"function":{"name":"f"}}]}}]}"#,
        &mut calls,
    );
    assert_eq!(calls.len(), 128);
}

/// A function call on the Responses API, as OpenAI and vLLM stream it: the call's output item
/// (its name) is no token; each non-empty argument delta is one; `…arguments.done` sets the
/// arguments whole. Two calls, by output index.
#[test]
fn responses_function_calls_are_timed_by_their_argument_deltas_and_joined() {
    use schemas::document::tools::ToolCall;
    let events = [
        (
            r#"{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"add"}}"#,
            0,
        ),
        (
            r#"{"type":"response.function_call_arguments.delta","sequence_number":3,"item_id":"fc_1","output_index":0,"delta":"{\"a\":"}"#,
            1,
        ),
        (
            r#"{"type":"response.output_item.added","sequence_number":4,"output_index":1,"item":{"id":"fc_2","type":"function_call","status":"in_progress","arguments":"","call_id":"call_2","name":"add"}}"#,
            0,
        ),
        (
            r#"{"type":"response.function_call_arguments.delta","sequence_number":5,"item_id":"fc_2","output_index":1,"delta":"{\"a\": 2}"}"#,
            1,
        ),
        (
            r#"{"type":"response.function_call_arguments.delta","sequence_number":6,"item_id":"fc_1","output_index":0,"delta":" 1}"}"#,
            1,
        ),
        (
            r#"{"type":"response.function_call_arguments.delta","sequence_number":7,"item_id":"fc_1","output_index":0,"delta":""}"#,
            0,
        ),
        (
            r#"{"type":"response.function_call_arguments.done","sequence_number":8,"item_id":"fc_2","output_index":1,"arguments":"{\"a\": 2}"}"#,
            0,
        ),
    ];
    let mut s = Api::OpenaiResponses.new_stream();
    let mut calls = Vec::new();
    for (e, tokens) in events {
        assert_eq!(s.on_data(e.as_bytes()).unwrap().tokens, tokens, "{e}");
        s.tool_call_pieces(e.as_bytes(), &mut calls);
    }
    let call = |a: &str| ToolCall {
        name: "add".into(),
        arguments: a.into(),
    };
    assert_eq!(calls, vec![call(r#"{"a": 1}"#), call(r#"{"a": 2}"#)]);
}
