//! How the engine was started, for documents whose runner launched it from a recipe
//! (`engine.launch`): the recipe's name and sha256, the container image and the digest it
//! resolved to, the time to readiness, the engine's log file and its sha256, and the exact
//! argv as a shell command a reader can paste (with the environment the recipe set).
//!
//! The report and the diff write it under their document lines, which stay as they were;
//! documents of engines started by hand get nothing here.
//!
//! argv goes into a fenced code block, where markdown does not apply: each argument is
//! quoted for a POSIX shell (bash's `$'…'` for control characters, so that nothing the
//! engine was given can break a line or hide in the page), and the fence is longer than
//! any run of backticks inside, so no argument can close it.
//!
//! A result split across clients (`result/v0.5`) says so here too: a shard (`runner run
//! --shard i/N`) in one line (its index, the schedule's origin T, its host, its clock as the
//! kernel reported it and how late it reached T), a merged result (`runner merge`) in a line
//! and a table of its shards. Documents without `shard` or `shards` get nothing.
//!
//! And what stamped the token events' arrival (`result/v0.6`): how many the kernel stamped as
//! their bytes reached the client's socket, how many the client's reads, and how many shared
//! a read with a later event (their stamp an upper bound). Older documents get nothing.

use crate::escape::md_escape;
use crate::format;
use schemas::document::{
    Launch, MergedShard, Predicate, Shard, ShardClock, ShardHost, TokenTimestamps,
};

use schemas::shell::quote as shell_quote;

/// A fenced code block of `lines` (shell), fenced so that nothing inside closes it.
fn code_block(lines: &[String]) -> String {
    let longest = lines
        .iter()
        .flat_map(|l| l.split(|c| c != '`'))
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}sh\n{}\n{fence}\n", lines.join("\n"))
}

/// `NAME=value` as a shell assignment.
fn assignment(name: &str, value: &str) -> String {
    let is_name = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if is_name {
        format!("{name}={}", shell_quote(value))
    } else {
        shell_quote(&format!("{name}={value}"))
    }
}

/// The launch of the engine of document `name` (`Document`, `A`): a sentence, the
/// environment the recipe set (when any) and the command, as markdown blocks.
pub fn launch_block(name: &str, l: &Launch) -> String {
    let image = match (&l.image, &l.image_digest) {
        (Some(i), Some(d)) => format!(", image **{}** (digest {})", md_escape(i), md_escape(d)),
        (Some(i), None) => format!(", image **{}** (no digest resolved)", md_escape(i)),
        (None, _) => String::new(),
    };
    let mut out = format!(
        "Engine of **{name}**: started by the runner from recipe **{}** (sha256 {}){image}, \
         ready after {} s; its log **{}** ({} bytes, sha256 {}).\n",
        md_escape(&l.recipe),
        md_escape(&l.recipe_sha256),
        format::fixed(l.ready_ms as f64 / 1e3, 2),
        md_escape(&l.log.file),
        l.log.bytes,
        md_escape(&l.log.sha256),
    );
    if !l.env.is_empty() {
        out.push_str("\nEnvironment the recipe set:\n\n");
        let env: Vec<String> = l.env.iter().map(|(k, v)| assignment(k, v)).collect();
        out.push_str(&code_block(&env));
    }
    out.push_str("\nCommand:\n\n");
    let argv: Vec<String> = l.argv.iter().map(|a| shell_quote(a)).collect();
    out.push_str(&code_block(&[argv.join(" ")]));
    out
}

/// A shard's host: its hostname, else [`format::MISSING`].
fn host_name(h: &ShardHost) -> String {
    h.hostname
        .as_deref()
        .map_or_else(|| format::MISSING.to_string(), md_escape)
}

/// A shard's clock as the kernel reported it: `synchronised, estimated error 300 µs`, or
/// why it could not be read.
fn clock(c: &ShardClock) -> String {
    let state = match c.synchronized {
        Some(true) => "synchronised",
        Some(false) => "unsynchronised",
        None => {
            return match &c.null_reason {
                Some(why) => format!("unknown ({})", md_escape(why)),
                None => "unknown".to_string(),
            }
        }
    };
    let error = c
        .est_error_us
        .map_or_else(|| "unknown".to_string(), format::micros);
    format!("{state}, estimated error {error}")
}

/// The origin T of a merged document's schedule: its benchmark's start (every shard's T,
/// which `runner merge` checked is one).
fn merged_origin(p: &Predicate) -> String {
    p.benchmarks
        .first()
        .map_or_else(|| format::MISSING.to_string(), |b| md_escape(&b.started_at))
}

/// The line saying document `name` is one client's part of a split schedule.
fn shard_line(name: &str, s: &Shard) -> String {
    format!(
        "**{name}**: shard {i} of {n} (`runner run --shard {i}/{n}`), one client's part of one \
         schedule starting {}; host **{}**; clock {}; lateness {}. `runner merge` combines the \
         {n} shards into one result.\n",
        md_escape(&s.start_at),
        host_name(&s.host),
        clock(&s.clock),
        format::micros(s.origin_lateness_us),
        i = s.index,
        n = s.count,
    )
}

/// The line and table listing the shards document `name` was merged from.
fn merged_block(name: &str, p: &Predicate, shards: &[MergedShard]) -> String {
    let mut out = format!(
        "**{name}**: merged from {} client shards (`runner merge`), one schedule from {}.\n\n\
         | Shard | Host | Same clock | Clock | Start lateness | Offset bound | File sha256 |\n\
         | ---: | :--- | :--- | :--- | ---: | ---: | :--- |\n",
        shards.len(),
        merged_origin(p),
    );
    for s in shards {
        let sha: String = s.sha256.chars().take(12).collect();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            s.index,
            host_name(&s.host),
            if s.same_clock { "yes" } else { "no" },
            clock(&s.clock),
            format::micros(s.origin_lateness_us),
            s.clock_offset_bound_us
                .map_or_else(|| "unknown".to_string(), format::micros),
            md_escape(&sha),
        ));
    }
    out
}

/// How document `name` relates to a schedule split across clients: a shard's line, a
/// merged result's line and table; empty for a document of one client alone.
pub fn shards_block(name: &str, p: &Predicate) -> String {
    let mut out = String::new();
    if let Some(s) = &p.shard {
        out.push_str(&shard_line(name, s));
    }
    if let Some(shards) = &p.shards {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&merged_block(name, p, shards));
    }
    out
}

/// What stamped the token events of document `name`, over all its benchmarks; empty when
/// no benchmark says (imported documents, those written before `result/v0.6`).
pub fn token_clock_line(name: &str, p: &Predicate) -> String {
    let counted: Vec<&TokenTimestamps> = p
        .benchmarks
        .iter()
        .filter_map(|b| b.token_timestamps.as_ref())
        .collect();
    if counted.is_empty() {
        return String::new();
    }
    let t = TokenTimestamps::sum(counted);
    let events = t.events();
    let source = if t.read == 0 && events > 0 {
        "all by the kernel as their bytes reached the client's socket (`SO_TIMESTAMPING`)"
            .to_string()
    } else if t.kernel == 0 {
        "all when the client's read of them returned".to_string()
    } else {
        format!(
            "{} by the kernel as their bytes reached the client's socket (`SO_TIMESTAMPING`), \
             {} when the client's read of them returned",
            t.kernel, t.read
        )
    };
    format!(
        "**{name}**: token arrival times: {events} token events, {source}; {} shared a read \
         with a later event (stamped no earlier than they arrived).\n",
        t.shared
    )
}

/// What every request's body carried beyond provebench's own fields, in document `name`: the
/// fields the engine's recipe adds (`engine.request_fields`) and the spec's `--extra-body`
/// (`run.spec.extra_body`); empty when neither.
pub fn request_fields_line(name: &str, p: &Predicate) -> String {
    let spec = p
        .run
        .spec
        .get("extra_body")
        .filter(|b| b.as_object().is_some_and(|b| !b.is_empty()));
    let mut parts = Vec::new();
    if !p.engine.request_fields.is_empty() {
        let fields = serde_json::Value::Object(p.engine.request_fields.clone());
        parts.push(format!(
            "the engine's recipe's {}",
            md_escape(&fields.to_string())
        ));
    }
    if let Some(body) = spec {
        parts.push(format!("`--extra-body` {}", md_escape(&body.to_string())));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "**{name}**: every request's body also carried {}.\n",
        parts.join(", then ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_argument_closes_the_fence() {
        let block = code_block(&["echo '````'".to_string()]);
        assert!(block.starts_with("`````sh\n"), "{block}");
        assert!(block.ends_with("\n`````\n"), "{block}");
        assert!(code_block(&["x".into()]).starts_with("```sh\n"));
    }

    #[test]
    fn what_stamped_the_tokens_is_said_over_all_benchmarks_and_only_when_recorded() {
        use crate::test_support::{predicate, sweep, Doc};
        let doc = Doc::vllm(None);
        let mut p = predicate(&doc, sweep(32, 8, 1.0), vec![]);
        p.benchmarks.truncate(1);
        assert_eq!(token_clock_line("Document", &p), "");
        let stamped = |kernel, read, shared| {
            Some(TokenTimestamps {
                kernel,
                read,
                shared,
            })
        };
        p.benchmarks[0].token_timestamps = stamped(90, 0, 3);
        let line = token_clock_line("Document", &p);
        assert!(
            line.contains("90 token events, all by the kernel"),
            "{line}"
        );
        assert!(line.contains("3 shared a read"), "{line}");
        let mut second = p.benchmarks[0].clone();
        second.token_timestamps = stamped(0, 10, 0);
        p.benchmarks.push(second);
        let line = token_clock_line("Document", &p);
        assert!(
            line.contains("100 token events, 90 by the kernel") && line.contains("10 when"),
            "{line}"
        );
    }

    #[test]
    fn what_every_request_carried_besides_provebenchs_fields_is_said() {
        use crate::test_support::{predicate, sweep, Doc};
        let doc = Doc::vllm(None);
        let mut p = predicate(&doc, sweep(32, 8, 1.0), vec![]);
        assert_eq!(request_fields_line("Document", &p), "");
        p.engine.request_fields =
            serde_json::from_str(r#"{"return_spec_tokens_details": true}"#).unwrap();
        p.run.spec["extra_body"] = serde_json::json!({"top_p": 0.9, "x": "*a*"});
        let line = request_fields_line("Document", &p);
        assert_eq!(
            line,
            "**Document**: every request's body also carried the engine's recipe's \
             {\"return\\_spec\\_tokens\\_details\":true}, then `--extra-body` \
             {\"top\\_p\":0.9,\"x\":\"\\*a\\*\"}.\n"
        );
    }
}
