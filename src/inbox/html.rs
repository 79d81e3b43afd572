//! Writing HTML by hand, safely: every value from a store or a server goes
//! through [`esc`] (text and attribute values alike), and the frame every
//! page shares.

use std::fmt::{self, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Text escaped for HTML, in element content and in quoted attribute
/// values alike: `& < > " '` become references, and control characters
/// other than tab and newline are dropped (they have no meaning on a page,
/// and some are not allowed in HTML at all).
pub(super) struct Esc<'a>(pub(super) &'a str);

impl fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(i) = rest.find(|c: char| {
            matches!(c, '&' | '<' | '>' | '"' | '\'') || (c.is_control() && c != '\n' && c != '\t')
        }) {
            f.write_str(&rest[..i])?;
            let c = rest[i..].chars().next().unwrap_or(' ');
            match c {
                '&' => f.write_str("&amp;")?,
                '<' => f.write_str("&lt;")?,
                '>' => f.write_str("&gt;")?,
                '"' => f.write_str("&quot;")?,
                '\'' => f.write_str("&#39;")?,
                _ => {}
            }
            rest = &rest[i + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

/// `s`, escaped for HTML.
pub(super) fn esc(s: &str) -> Esc<'_> {
    Esc(s)
}

/// `s` cut to at most `max` characters, with an ellipsis when cut.
pub(super) fn cut(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &s[..end]).into(),
        None => s.into(),
    }
}

/// A query string value, percent-encoded (unreserved characters kept).
pub(super) fn query_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A moment as UTC, `2025-01-31 12:00:05Z`.
pub(super) fn utc(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days to a civil date (proleptic Gregorian), after H. Hinnant's
    // public-domain algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// A span of time in one or two units: `45 s`, `3 min`, `2 h 5 min`, `4 d`.
pub(super) fn span(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3_600 => format!("{} min", s / 60),
        3_600..86_400 => format!("{} h {} min", s / 3_600, s % 3_600 / 60),
        _ => format!("{} d {} h", s / 86_400, s % 86_400 / 3_600),
    }
}

/// How long ago `t` was, or how far ahead, in words, with the moment in
/// UTC as the element's title.
pub(super) fn when(t: SystemTime, now: SystemTime) -> String {
    let words = match now.duration_since(t) {
        Ok(ago) => format!("{} ago", span(ago)),
        Err(ahead) => format!("in {}", span(ahead.duration())),
    };
    format!("<time title=\"{}\">{}</time>", utc(t), esc(&words))
}

/// Which page of the navigation is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Nav {
    Tasks,
    Questions,
    None,
}

/// A whole page: the frame, the navigation, and `body` inside a region
/// that `live.js` refreshes from `live_url` (a GET of the same page).
pub(super) fn page(base: &str, title: &str, nav: Nav, live_url: &str, body: &str) -> String {
    let current = |n: Nav| {
        if n == nav {
            " aria-current=\"page\""
        } else {
            ""
        }
    };
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · mcp-tasks inbox</title>\
         <link rel=\"stylesheet\" href=\"{base}/assets/style.css\">\
         <script src=\"{base}/assets/live.js\" defer></script></head>\
         <body><header><nav><strong>mcp-tasks</strong> \
         <a href=\"{base}/tasks\"{t}>Tasks</a> \
         <a href=\"{base}/questions\"{q}>Questions</a></nav></header>\
         <main id=\"live\" data-live=\"{live}\">{body}</main></body></html>\n",
        title = esc(title),
        base = esc(base),
        t = current(Nav::Tasks),
        q = current(Nav::Questions),
        live = esc(live_url),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_controls_are_escaped() {
        let s = esc("<script>alert('x')</script> & \"q\"\u{0}\u{7}\ttab\n").to_string();
        assert_eq!(
            s,
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;\ttab\n"
        );
        assert_eq!(esc("plain é 日本").to_string(), "plain é 日本");
    }

    #[test]
    fn times_are_written_in_utc() {
        assert_eq!(utc(UNIX_EPOCH), "1970-01-01 00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(951_825_600 + 3_723);
        assert_eq!(utc(t), "2000-02-29 13:02:03Z");
        assert_eq!(span(Duration::from_secs(7_500)), "2 h 5 min");
    }

    #[test]
    fn long_text_is_cut_on_a_character() {
        assert_eq!(cut("ééééé", 3), "ééé…");
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(query_value("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
