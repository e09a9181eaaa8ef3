//! The Prometheus text exposition format (0.0.4, and OpenMetrics' subset engines emit),
//! read for the few metrics a summary needs.
//!
//! Our own reader rather than a parser crate: a vLLM `/metrics` page is tens of KB of
//! histogram buckets, scraped every 100 ms, and we want a handful of counters and gauges
//! from it. This scans each line's name first and skips every other metric before its
//! labels are parsed, without allocating (`benches`/the test below measure it), and its
//! fuzz-style test feeds it arbitrary bytes.

/// One sample line: `name{labels} value [timestamp]`. Labels are not parsed beyond what
/// finding their end needs: every label set of a metric is summed by [`sum_wanted`].
#[derive(Debug, PartialEq)]
pub struct Sample<'a> {
    pub name: &'a str,
    pub labels: &'a str,
    pub value: f64,
}

/// Parses one line; `None` for comments, blank lines and lines that are not a sample.
pub fn parse_line(line: &str) -> Option<Sample<'_>> {
    let line = line.trim_start();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(line.len());
    let name = &line[..name_end];
    if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    let rest = &line[name_end..];
    let (labels, rest) = if let Some(body) = rest.strip_prefix('{') {
        let end = labels_end(body)?;
        (&body[..end], &body[end + 1..])
    } else {
        ("", rest)
    };
    let value = rest.split_ascii_whitespace().next()?;
    Some(Sample {
        name,
        labels,
        value: parse_value(value)?,
    })
}

/// Index of the `}` that closes a label set, skipping quoted values (which may hold `}`,
/// `\"` and `\\`).
fn labels_end(body: &str) -> Option<usize> {
    let bytes = body.as_bytes();
    let (mut i, mut quoted) = (0, false);
    while i < bytes.len() {
        match (bytes[i], quoted) {
            (b'\\', true) => i += 1,
            (b'"', _) => quoted = !quoted,
            (b'}', false) => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

fn parse_value(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => text.parse().ok(),
    }
}

/// For each name of `wanted`, the sum of its samples over every label set in `text`
/// (`None` when the page has no sample of that name). Non-finite values are skipped. A wanted
/// name may end in one label pair, `name{position="0"}`: then only the samples with that
/// label count.
pub fn sum_wanted(text: &str, wanted: &[String], out: &mut Vec<Option<f64>>) {
    out.clear();
    out.resize(wanted.len(), None);
    let split: Vec<(&str, Option<&str>)> = wanted.iter().map(|w| split_selector(w)).collect();
    for line in text.lines() {
        // Cheap rejection: most lines are other metrics (histogram buckets above all).
        let start = line.trim_start();
        if start.starts_with('#') || !split.iter().any(|(name, _)| start.starts_with(name)) {
            continue;
        }
        let Some(sample) = parse_line(start) else {
            continue;
        };
        if !sample.value.is_finite() {
            continue;
        }
        for (i, (name, selector)) in split.iter().enumerate() {
            if *name == sample.name && selector.is_none_or(|s| has_label(sample.labels, s)) {
                *out[i].get_or_insert(0.0) += sample.value;
            }
        }
    }
}

/// The label set of the sample of `name` with the largest value in `text`, as pairs: an info
/// gauge whose label sets say a state and whose value is when each was set (vLLM's
/// `vllm:lora_requests_info`: every set once exported stays exported, the newest is the
/// state now). `None` when the page has no finite sample of `name`.
pub fn newest_label_set(text: &str, name: &str) -> Option<Vec<(String, String)>> {
    let mut newest: Option<(f64, &str)> = None;
    for line in text.lines() {
        let start = line.trim_start();
        if !start.starts_with(name) {
            continue;
        }
        let Some(sample) = parse_line(start) else {
            continue;
        };
        if sample.name != name || !sample.value.is_finite() {
            continue;
        }
        if newest.is_none_or(|(value, _)| sample.value > value) {
            newest = Some((sample.value, sample.labels));
        }
    }
    newest.map(|(_, labels)| label_pairs(labels))
}

/// A label set (`a="x",b="y \"q\""`) as its pairs, values unescaped (`\\`, `\"`, `\n`);
/// a malformed pair ends the list.
pub fn label_pairs(labels: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut rest = labels.trim_start();
    while let Some((key, after)) = rest.split_once('=') {
        let key = key.trim().trim_start_matches(',').trim();
        let Some(body) = after.trim_start().strip_prefix('"') else {
            break;
        };
        let mut value = String::new();
        let mut chars = body.char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, other)) => value.push(other),
                    None => break,
                },
                '"' => {
                    end = Some(i + 1);
                    break;
                }
                c => value.push(c),
            }
        }
        let Some(end) = end else { break };
        pairs.push((key.to_string(), value));
        rest = body[end..].trim_start();
    }
    pairs
}

/// `name{label="value"}` as the name and `label="value"`; a plain name has no selector.
fn split_selector(wanted: &str) -> (&str, Option<&str>) {
    match wanted.split_once('{') {
        Some((name, rest)) => (name, Some(rest.trim_end_matches('}'))),
        None => (wanted, None),
    }
}

/// Whether a label set (`a="x",b="y"`) holds the pair `pair` (`b="y"`) whole.
fn has_label(labels: &str, pair: &str) -> bool {
    labels.match_indices(pair).any(|(at, _)| {
        let before = labels[..at].trim_end();
        let after = labels[at + pair.len()..].trim_start();
        (before.is_empty() || before.ends_with(',')) && (after.is_empty() || after.starts_with(','))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
# TYPE vllm:request_success counter
vllm:request_success_total{engine="0",finished_reason="length",model_name="m"} 10.0
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m \"q}\" \\"} 4.0
vllm:request_success_created{engine="0"} 1.7e9
vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="m"} 14.0
vllm:kv_cache_usage_perc{engine="0"} 0.28 1700000000000
llamacpp:requests_processing 0
odd NaN
"#;

    #[test]
    fn sums_every_label_set_of_the_wanted_names() {
        let wanted: Vec<String> = [
            "vllm:num_requests_running",
            "vllm:request_success_total",
            "vllm:kv_cache_usage_perc",
            "llamacpp:requests_processing",
            "vllm:absent",
            "odd",
        ]
        .map(String::from)
        .to_vec();
        let mut out = vec![];
        sum_wanted(PAGE, &wanted, &mut out);
        assert_eq!(
            out,
            vec![Some(5.0), Some(14.0), Some(0.28), Some(0.0), None, None]
        );
    }

    #[test]
    fn a_wanted_name_with_a_label_counts_only_its_samples() {
        let page = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"} 12\n\
                    llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position=\"1\"} 9\n\
                    vllm:x_total{engine=\"0\",position=\"10\"} 4\n\
                    vllm:x_total{engine=\"0\",position=\"1\"} 5\n";
        let wanted: Vec<String> = [
            "llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position=\"1\"}",
            "llamacpp:spec_decode_num_accepted_tokens_per_pos_total",
            "vllm:x_total{position=\"1\"}",
            "vllm:x_total{position=\"2\"}",
        ]
        .map(String::from)
        .to_vec();
        let mut out = vec![];
        sum_wanted(page, &wanted, &mut out);
        assert_eq!(out, vec![Some(9.0), Some(21.0), Some(5.0), None]);
    }

    #[test]
    fn the_newest_label_set_of_an_info_gauge_is_its_state() {
        // vLLM keeps every label set it ever set; each one's value is when.
        let page = r#"# TYPE vllm:lora_requests_info gauge
vllm:lora_requests_info{max_lora="2",running_lora_adapters="sql",waiting_lora_adapters=""} 1.7000000001e+09
vllm:lora_requests_info{max_lora="2",running_lora_adapters="sql,chat",waiting_lora_adapters="code"} 1.7000000003e+09
vllm:lora_requests_info{max_lora="2",running_lora_adapters="",waiting_lora_adapters=""} 1.7000000002e+09
vllm:lora_requests_info_other{max_lora="9"} 2e9
"#;
        let pairs = newest_label_set(page, "vllm:lora_requests_info").unwrap();
        let get = |k: &str| {
            pairs
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("running_lora_adapters"), Some("sql,chat"));
        assert_eq!(get("waiting_lora_adapters"), Some("code"));
        assert_eq!(get("max_lora"), Some("2"));
        assert_eq!(newest_label_set(page, "vllm:num_requests_running"), None);
    }

    #[test]
    fn label_values_are_unescaped() {
        assert_eq!(
            label_pairs(r#"a="x",b="q \"}\" \\ n\n", c="""#),
            vec![
                ("a".to_string(), "x".to_string()),
                ("b".to_string(), "q \"}\" \\ n\n".to_string()),
                ("c".to_string(), String::new()),
            ]
        );
        // A value left open ends the list.
        assert_eq!(label_pairs(r#"a="x",b="open"#).len(), 1);
    }

    #[test]
    fn parses_the_grammar_edges() {
        let s = parse_line(r#"a:b_c{x="}",y="\"\\"} -Inf"#).unwrap();
        assert_eq!((s.name, s.value), ("a:b_c", f64::NEG_INFINITY));
        assert_eq!(parse_line("m 1e3 123").unwrap().value, 1000.0);
        assert_eq!(parse_line("m{} +Inf").unwrap().value, f64::INFINITY);
        for junk in [
            "",
            "# x",
            "9bad 1",
            "m{unclosed 1",
            "m",
            "m{} ",
            "m abc",
            "{} 1",
        ] {
            assert_eq!(parse_line(junk), None, "{junk:?}");
        }
    }

    /// Arbitrary bytes never panic and never yield a name outside the grammar.
    #[test]
    fn survives_arbitrary_input() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let alphabet = b"ab:_{}\"\\=, \n#0123456789.eE+-InfNa\t\xff";
        let wanted = vec!["ab".to_string(), "a:b".to_string()];
        let mut out = vec![];
        for _ in 0..20_000 {
            let len = (seed % 64) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    alphabet[(seed % alphabet.len() as u64) as usize]
                })
                .collect();
            let text = String::from_utf8_lossy(&bytes);
            for line in text.lines() {
                if let Some(s) = parse_line(line) {
                    assert!(!s.name.is_empty());
                    assert!(s
                        .name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'));
                }
            }
            sum_wanted(&text, &wanted, &mut out);
            assert!(out.iter().flatten().all(|v| v.is_finite()));
            let _ = newest_label_set(&text, "ab");
            for line in text.lines() {
                let _ = label_pairs(line);
            }
        }
    }
}
