//! Shell words: how a command line a document records (an engine's argv, its environment)
//! or a command the reader should run is printed, so that pasting it runs exactly that
//! argv. The report, the campaign's batch scripts and the site (the module's `verifyCommand`)
//! quote through this.

/// Characters a shell word may hold unquoted.
fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c)
}

/// `s` as one shell word: unchanged when plain, else single-quoted, else (with control
/// characters) `$'…'`.
pub fn quote(s: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(quote("--max-model-len=8192"), "--max-model-len=8192");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("a\nb'c"), r"$'a\nb\'c'");
        assert_eq!(quote("\u{1b}[0m"), r"$'\U0000001b[0m'");
    }
}
