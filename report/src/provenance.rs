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

use crate::escape::md_escape;
use crate::format;
use schemas::document::Launch;

/// Characters a shell word may hold unquoted.
fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c)
}

/// `s` as one shell word: unchanged when plain, else single-quoted, else (with control
/// characters) `$'…'`.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(plain) {
        return s.to_string();
    }
    if !s.chars().any(char::is_control) {
        return format!("'{}'", s.replace('\'', r"'\''"));
    }
    let mut out = String::from("$'");
    for c in s.chars() {
        match c {
            '\n' => out.push_str(r"\n"),
            '\t' => out.push_str(r"\t"),
            '\r' => out.push_str(r"\r"),
            '\\' => out.push_str(r"\\"),
            '\'' => out.push_str(r"\'"),
            c if c.is_control() => {
                // bash's \u escape takes up to 4 hex digits, \U up to 8.
                out.push_str(&format!(r"\U{:08x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_quote("--max-model-len=8192"), "--max-model-len=8192");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("a\nb'c"), r"$'a\nb\'c'");
        assert_eq!(shell_quote("\u{1b}[0m"), r"$'\U0000001b[0m'");
    }

    #[test]
    fn no_argument_closes_the_fence() {
        let block = code_block(&["echo '````'".to_string()]);
        assert!(block.starts_with("`````sh\n"), "{block}");
        assert!(block.ends_with("\n`````\n"), "{block}");
        assert!(code_block(&["x".into()]).starts_with("```sh\n"));
    }
}
