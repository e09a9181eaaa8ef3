//! Escaping of document strings on their way into markdown and HTML.
//!
//! Every string a renderer takes from a document (model id, GPU name, labels, flag
//! messages, error classes) is data, not markup: a model called `<script>` or
//! `[x](javascript:…)` must print as those characters. [`md_escape`] makes a string inert
//! in a markdown table cell, heading or bullet (so comrak, which also drops raw HTML,
//! renders it as text), and [`html_escape`] does the same for the few strings written
//! straight into HTML (the page title, chart file names).

/// Escapes `s` for a markdown table cell, heading or list item.
///
/// * Backslash escapes every ASCII character that can open markup inline: `\`, `` ` ``,
///   `*`, `_`, `[`, `]`, `<`, `>`, `!`, `&`, `~`, `#`, and `|` (a cell separator, escaped
///   even inside code spans by GFM's table rule).
/// * Newlines, tabs and other control characters become one space each: a line break
///   would end a table row or a heading.
///
/// Hyphens, dots, `@`, `=`, digits and letters pass unchanged, so `Qwen2-72B-Instruct`
/// and `asynchronous@1.27 req/sec` print exactly as in the seed tables.
pub fn md_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '!' | '&' | '~' | '#' | '|' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Escapes `s` for HTML text or a double-quoted attribute.
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md_escape_neutralises_markup() {
        assert_eq!(md_escape("<script>"), "\\<script\\>");
        assert_eq!(md_escape("a|b"), "a\\|b");
        assert_eq!(
            md_escape("[x](javascript:alert(1))"),
            "\\[x\\](javascript:alert(1))"
        );
        assert_eq!(md_escape("`code`"), "\\`code\\`");
        assert_eq!(md_escape("line1\nline2\r\tx"), "line1 line2  x");
        assert_eq!(md_escape("a\\|b"), "a\\\\\\|b");
        assert_eq!(
            md_escape("**bold** _it_ ~s~"),
            "\\*\\*bold\\*\\* \\_it\\_ \\~s\\~"
        );
        assert_eq!(md_escape("&lt;img&gt;"), "\\&lt;img\\&gt;");
        assert_eq!(md_escape("![i](x.png)"), "\\!\\[i\\](x.png)");
        assert_eq!(md_escape("title #"), "title \\#");
    }

    #[test]
    fn md_escape_keeps_seed_strings() {
        for s in [
            "Qwen2-MoE-57B-A14B-Instruct",
            "A100 80GB",
            "asynchronous@1.27 req/sec",
            "baichuan2-13B",
            "v2.0",
            "张",
        ] {
            assert_eq!(md_escape(s), s);
        }
    }

    #[test]
    fn html_escape_escapes() {
        assert_eq!(
            html_escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }
}
