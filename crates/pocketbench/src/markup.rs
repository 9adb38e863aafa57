//! Text helpers the HTML report and the gate's outputs share: escaping for
//! HTML, XML and Markdown tables, and the one-decimal table cell. A leaf:
//! it knows no pocketbench type.

/// Escape text for HTML and SVG (element content and quoted attributes).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
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

/// Escape text for an XML attribute or element: HTML's escapes, which are
/// XML's too, after the control characters XML 1.0 forbids even escaped.
pub fn xml(s: &str) -> String {
    let clean: String =
        s.chars().map(|c| if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') { ' ' } else { c }).collect();
    escape(&clean)
}

/// Text for one cell of a Markdown table: no pipe ends it, no newline
/// breaks the row.
pub fn md(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A median or ratio cell: one decimal, `-` without a figure.
pub fn cell(m: Option<f64>) -> String {
    m.map_or_else(|| "-".into(), |x| format!("{x:.1}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_complete() {
        assert_eq!(escape(r#"<a href="x">&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
        assert_eq!(xml("a\u{1}b"), "a b");
        assert_eq!(md("a|b\nc"), "a\\|b c");
        assert_eq!(cell(None), "-");
        assert_eq!(cell(Some(1.25)), "1.2");
    }
}
