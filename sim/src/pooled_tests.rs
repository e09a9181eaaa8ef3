//! Embeddings, rerank and images in chat against a plain HTTP client: the answers' shapes,
//! counts and determinism, the refusals, the short-batch fault, and what the truth records.

// The timing test holds `timing_test_lock` across awaits on purpose: it only keeps timing
// tests from running beside each other.
#![allow(clippy::await_holding_lock)]

use super::*;
use serde_json::{json, Value};
use std::time::Duration;

fn instant_cfg() -> SimConfig {
    SimConfig {
        ttft_ms: 0.0,
        prefill_us_per_token: 0.0,
        itl_ms: 0.0,
        ..SimConfig::default()
    }
}

async fn post(server: &SimServer, path: &str, body: Value) -> (u16, Value) {
    let resp = wire::client()
        .build()
        .unwrap()
        .post(format!("{}{path}", server.base_url()))
        .json(&body)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeddings_answer_a_normalised_vector_an_input_and_count_every_token() {
    let server = SimServer::start(SimConfig {
        embedding_dim: 8,
        ..instant_cfg()
    })
    .await
    .unwrap();
    let body = json!({"model": "m", "input": ["one two three", "four five", [7, 8, 9, 10]], "encoding_format": "float"});
    let (status, a) = post(&server, "/v1/embeddings", body.clone()).await;
    assert_eq!(status, 200, "{a}");
    assert_eq!(a["object"], "list");
    assert_eq!(a["usage"]["prompt_tokens"], 9);
    let data = a["data"].as_array().unwrap();
    assert_eq!(data.len(), 3);
    for (i, d) in data.iter().enumerate() {
        assert_eq!(d["index"], i);
        let v: Vec<f32> = serde_json::from_value(d["embedding"].clone()).unwrap();
        assert_eq!(v.len(), 8);
        let norm: f32 = v.iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-5, "{norm}");
    }
    // Deterministic: the same input, the same bits, on the other route too.
    let (_, b) = post(&server, "/embeddings", body).await;
    assert_eq!(a["data"], b["data"]);
    let (_, one) = post(&server, "/v1/embeddings", json!({"input": "four five"})).await;
    assert_eq!(one["data"][0]["embedding"], a["data"][1]["embedding"]);
    for (bad, why) in [
        (
            json!({"input": ["a"], "encoding_format": "base64"}),
            "float",
        ),
        (json!({"input": []}), "input must be"),
        (json!({}), "input must be"),
    ] {
        let (status, e) = post(&server, "/v1/embeddings", bad).await;
        assert_eq!(status, 400);
        assert!(e["error"]["message"].as_str().unwrap().contains(why), "{e}");
    }
    let truth = server.truth();
    assert_eq!(truth.len(), 3, "refusals are not requests");
    assert!(truth
        .iter()
        .all(|t| t.route == "embeddings" && t.token_written.is_empty()));
    assert_eq!(
        (truth[0].inputs, truth[0].prompt_tokens, truth[2].inputs),
        (3, 9, 1)
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerank_scores_alike_in_both_dialects_highest_first() {
    let server = SimServer::start(instant_cfg()).await.unwrap();
    let docs = ["a b", "c d e", "f"];
    let (status, v) = post(
        &server,
        "/v1/rerank",
        json!({"model": "m", "query": "q r", "documents": docs}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    // The query read with each document: 3 × 2 + 2 + 3 + 1.
    assert_eq!(v["usage"]["total_tokens"], 12);
    let scores: Vec<f64> = results
        .iter()
        .map(|r| r["relevance_score"].as_f64().unwrap())
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]) && scores.iter().all(|s| (0.0..1.0).contains(s))
    );
    let (status, tei) = post(&server, "/rerank", json!({"query": "q r", "texts": docs})).await;
    assert_eq!(status, 200);
    let tei = tei.as_array().unwrap();
    for (r, t) in results.iter().zip(tei) {
        assert_eq!(
            (&r["index"], &r["relevance_score"]),
            (&t["index"], &t["score"])
        );
        assert_eq!(
            r["document"]["text"],
            docs[r["index"].as_u64().unwrap() as usize]
        );
    }
    let (_, top) = post(
        &server,
        "/v2/rerank",
        json!({"query": "q r", "documents": docs, "top_n": 1}),
    )
    .await;
    assert_eq!(top["results"].as_array().unwrap().len(), 1);
    let (status, _) = post(
        &server,
        "/v1/rerank",
        json!({"query": "q", "documents": []}),
    )
    .await;
    assert_eq!(status, 400);
    assert!(server
        .truth()
        .iter()
        .all(|t| t.route == "rerank" && t.inputs == 3));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_batch_answers_one_vector_fewer() {
    let server = SimServer::start(SimConfig {
        faults: Faults {
            short_batch_fraction: 1.0,
            ..Faults::default()
        },
        ..instant_cfg()
    })
    .await
    .unwrap();
    let (_, v) = post(&server, "/v1/embeddings", json!({"input": ["a", "b", "c"]})).await;
    assert_eq!(v["data"].as_array().unwrap().len(), 2);
    let (_, v) = post(
        &server,
        "/v1/rerank",
        json!({"query": "q", "documents": ["a", "b"]}),
    )
    .await;
    assert_eq!(v["results"].as_array().unwrap().len(), 1);
    assert!(server
        .truth()
        .iter()
        .all(|t| t.fault == Some("short_batch")));
    server.shutdown().await;
}

/// An embeddings answer is due `ttft_ms + prefill × tokens` after admission.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embeddings_answer_waits_for_its_prefill() {
    let _timing = testkit::timing::timing_test_lock();
    let server = SimServer::start(SimConfig {
        ttft_ms: 20.0,
        prefill_us_per_token: 100.0,
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let words = vec!["w"; 100].join(" ");
    post(
        &server,
        "/v1/embeddings",
        json!({"input": [words.clone(), words]}),
    )
    .await;
    let t = &server.truth()[0];
    let took = (t.end - t.admitted).as_secs_f64() * 1e3;
    // 20 ms + 200 tokens × 0.1 ms, plus a timer's lateness.
    assert!((40.0..45.0).contains(&took), "{took}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_images_are_decoded_counted_and_recorded() {
    use base64::Engine as _;
    let server = SimServer::start(instant_cfg()).await.unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    png.extend(100u32.to_be_bytes());
    png.extend(60u32.to_be_bytes());
    png.extend([8, 2, 0, 0, 0, 0, 0, 0, 0]);
    let url = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&png)
    );
    let body = json!({"model": "m", "max_tokens": 2, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is this"},
        {"type": "image_url", "image_url": {"url": url}},
        {"type": "image_url", "image_url": url},
    ]}]});
    let (status, v) = post(&server, "/v1/chat/completions", body).await;
    assert_eq!(status, 200, "{v}");
    // 3 words + 2 × ⌈100/28⌉ × ⌈60/28⌉ = 3 + 2 × 12.
    assert_eq!(v["usage"]["prompt_tokens"], 27);
    let t = &server.truth()[0];
    assert_eq!(t.images.len(), 2);
    let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&png));
    assert_eq!(
        t.images[0],
        ImageTruth {
            sha256: sha,
            bytes: png.len() as u64,
            width: 100,
            height: 60,
            tokens: 12
        }
    );
    let bad = json!({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}}]}]});
    let (status, e) = post(&server, "/v1/chat/completions", bad).await;
    assert_eq!(status, 400);
    let message = e["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("messages[0].content[0]") && message.contains("not a PNG"),
        "{message}"
    );
    server.shutdown().await;
}
