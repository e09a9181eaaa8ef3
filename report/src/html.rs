//! Markdown → HTML with comrak, and the page around it.
//!
//! comrak runs with its default, safe rendering options (raw HTML is dropped, not passed
//! through; `javascript:` and other dangerous link targets are emptied) plus the GFM table
//! extension the seed formats need. Document strings reach the markdown through
//! [`crate::md_escape`] already, so a model named `<script>` arrives as text twice over.
//!
//! Two additions to comrak's default output. A table right after a chart (a paragraph
//! that is one image) is that chart's points: it is wrapped in `<details
//! class="chart-data">` with a `<summary>` naming the chart, one click away from it.
//! And a table cell holding only a diff marker
//! (`▲ +3.1% better`, `▼ +5.0% worse`, `▲ +0.4% within noise`, `= 0.0% same`) has its text
//! wrapped in `<span class="verdict-better">` (`verdict-worse`, and `verdict-same` for every
//! other verdict), so that a site can colour it. The class is the verdict's
//! (`schemas::outcome::ChangeVerdict::class`), never copied from the text.

use crate::escape::html_escape;
use comrak::nodes::NodeValue;
use comrak::{create_formatter, parse_document, Arena, Options};
use schemas::outcome::ChangeVerdict;
use std::fmt::Write as _;

/// The class of a diff marker text (`▲ +3.1% better` → `verdict-better`); `None` for other
/// text. The marker's words and the class are the verdict's own
/// (`schemas::outcome::ChangeVerdict`), read from that one declaration.
pub(crate) fn marker_class(text: &str) -> Option<&'static str> {
    let rest = text
        .strip_prefix("▲ ")
        .or_else(|| text.strip_prefix("▼ "))
        .or_else(|| text.strip_prefix("= "))?;
    ChangeVerdict::ALL
        .iter()
        .find(|v| {
            rest.strip_suffix(v.words())
                .is_some_and(|change| change.ends_with(' '))
        })
        .map(|v| v.class())
}

/// The alt text of the chart a table belongs to: the table comes right after a paragraph
/// that is one image (`![title](chart.svg)`, then its points' table).
fn chart_caption<'a>(table: &'a comrak::nodes::AstNode<'a>) -> Option<String> {
    let para = table.previous_sibling()?;
    if !matches!(para.data().value, NodeValue::Paragraph) {
        return None;
    }
    let image = para.first_child()?;
    if !image.same_node(para.last_child()?) || !matches!(image.data().value, NodeValue::Image(_)) {
        return None;
    }
    let mut alt = String::new();
    for d in image.descendants() {
        if let NodeValue::Text(ref t) = d.data().value {
            alt.push_str(t);
        }
    }
    Some(alt)
}

create_formatter!(ReportFormatter, {
    NodeValue::Table(_) => |context, node, entering| {
        let caption = chart_caption(node);
        if entering {
            if let Some(caption) = &caption {
                context.write_str("<details class=\"chart-data\">\n<summary>Table: ")?;
                context.escape(caption)?;
                context.write_str("</summary>\n")?;
            }
        }
        let children = comrak::html::format_node_default(context, node, entering)?;
        if !entering && caption.is_some() {
            context.write_str("</details>\n")?;
        }
        return Ok(children);
    },
    NodeValue::Text(ref literal) => |context, node, entering| {
        if entering {
            let in_cell = node.parent().is_some_and(|p| {
                matches!(p.data().value, NodeValue::TableCell)
                    && p.first_child().is_some_and(|c| c.same_node(node))
                    && p.last_child().is_some_and(|c| c.same_node(node))
            });
            match marker_class(literal).filter(|_| in_cell) {
                Some(class) => {
                    context.write_str("<span class=\"")?;
                    context.write_str(class)?;
                    context.write_str("\">")?;
                    context.escape(literal)?;
                    context.write_str("</span>")?;
                }
                None => context.escape(literal)?,
            }
        }
    },
});

/// comrak's default options plus GFM tables.
fn options() -> Options<'static> {
    let mut o = Options::default();
    o.extension.table = true;
    o
}

/// Renders report markdown as an HTML fragment.
pub fn markdown_to_html(md: &str) -> String {
    let arena = Arena::new();
    let options = options();
    let root = parse_document(&arena, md, &options);
    let mut out = String::new();
    ReportFormatter::format_document(root, &options, &mut out)
        .expect("formatting into a String cannot fail");
    out
}

/// Colours of the diff classes and a readable table style; the site may override both.
const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:.25em .6em}\
th{background:#f4f4f4}img{max-width:100%}.verdict-better{color:#1a7f37}.verdict-worse{color:#cf222e}.verdict-same{color:#666}";

/// A complete HTML page: `title` (plain text) and the rendered `md`.
pub fn page(title: &str, md: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main class=\"provebench-report\">\n{}</main>\n</body>\n</html>\n",
        html_escape(title),
        markdown_to_html(md)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::md_escape;

    #[test]
    fn raw_html_and_javascript_links_do_not_survive() {
        let hostile = "<script>alert(1)</script><img src=x onerror=alert(1)> [x](javascript:alert(1)) `c` a|b\nsecond";
        let md = format!(
            "# {}\n\n| a | b |\n| --- | --- |\n| {} | x |\n",
            md_escape(hostile),
            md_escape(hostile)
        );
        let html = markdown_to_html(&md);
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("href"), "{html}");
        assert!(!html.contains("<code>"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        // One table of one data row: the `|` in the name did not split the cell.
        assert_eq!(html.matches("<tr>").count(), 2, "{html}");
        assert_eq!(html.matches("<td>").count(), 2, "{html}");
        // Unescaped, comrak still drops raw HTML and empties javascript: links.
        let raw = markdown_to_html("<script>alert(1)</script>\n\n[x](javascript:alert(1))\n");
        assert!(!raw.contains("<script"), "{raw}");
        assert!(!raw.contains("javascript:"), "{raw}");
    }

    #[test]
    fn diff_markers_get_a_class() {
        let html = markdown_to_html(
            "| m | c |\n| --- | --- |\n| ttft | ▲ +3.1% worse |\n| tput | ▲ +2.0% better |\n| x | = 0.0% same |\n| ▲ +1% better label | y |\n| y | ▼ -0.4% not judged |\n",
        );
        assert!(
            html.contains("<span class=\"verdict-worse\">▲ +3.1% worse</span>"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"verdict-better\">▲ +2.0% better</span>"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"verdict-same\">= 0.0% same</span>"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"verdict-same\">▼ -0.4% not judged</span>"),
            "{html}"
        );
        assert_eq!(marker_class("plain"), None);
        assert_eq!(marker_class("▲ +1% unbetter"), None);
        // Every verdict's marker gets its class.
        for v in ChangeVerdict::ALL {
            let m = crate::diff::marker(1.0, Some(0.1), v);
            assert_eq!(marker_class(&m), Some(v.class()), "{m}");
        }
    }

    #[test]
    fn a_chart_s_table_is_one_click_away() {
        let html = markdown_to_html(
            "![Pareto <1>](p.svg)\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n\ntext\n\n| c |\n| --- |\n| 3 |\n",
        );
        assert!(
            html.contains("<details class=\"chart-data\">\n<summary>Table: Pareto &lt;1&gt;</summary>\n<table>"),
            "{html}"
        );
        assert!(
            html.contains("</tbody>\n</table>\n</details>\n<p>text</p>"),
            "{html}"
        );
        // A table after text stays a plain table.
        assert_eq!(html.matches("<details").count(), 1, "{html}");
    }

    #[test]
    fn page_escapes_title() {
        let p = page("<b>x</b>", "text");
        assert!(p.contains("<title>&lt;b&gt;x&lt;/b&gt;</title>"));
        assert!(p.starts_with("<!DOCTYPE html>"));
    }
}
