//! The string formats a form may name: `email`, `uri`, `date` and
//! `date-time`, checked without a regular expression.

/// An address `local@domain`: an unquoted local part without spaces,
/// specials or stray dots (or a quoted one), and a domain of letter, digit
/// and hyphen labels (or an address literal in brackets).
pub(super) fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else {
        return false;
    };
    let local_ok = if local.len() >= 2 && local.starts_with('"') && local.ends_with('"') {
        !local.chars().any(char::is_control)
    } else {
        !local.is_empty()
            && !local.starts_with('.')
            && !local.ends_with('.')
            && !local.contains("..")
            && local
                .chars()
                .all(|c| !c.is_whitespace() && !c.is_control() && !"()<>[]:;@\\,\"".contains(c))
    };
    let domain_ok = match domain.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
        Some(literal) => {
            !literal.is_empty()
                && literal
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == ':')
        }
        None => {
            !domain.is_empty()
                && domain.len() <= 253
                && domain.split('.').all(|label| {
                    !label.is_empty()
                        && label.len() <= 63
                        && !label.starts_with('-')
                        && !label.ends_with('-')
                        && label.chars().all(|c| c.is_alphanumeric() || c == '-')
                })
        }
    };
    local.len() <= 64 && local_ok && domain_ok
}

/// An absolute URI (RFC 3986): a scheme, `:`, then only URI characters,
/// `%` followed by two hex digits.
pub(super) fn is_uri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut scheme = scheme.bytes();
    if !scheme.next().is_some_and(|c| c.is_ascii_alphabetic())
        || !scheme.all(|c| c.is_ascii_alphanumeric() || b"+-.".contains(&c))
    {
        return false;
    }
    let rest = rest.as_bytes();
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            b'%' => {
                let hex = |at: usize| rest.get(at).is_some_and(u8::is_ascii_hexdigit);
                if !(hex(i + 1) && hex(i + 2)) {
                    return false;
                }
                i += 3;
            }
            c if c.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=".contains(&c) => i += 1,
            _ => return false,
        }
    }
    true
}

/// The value of a run of ASCII digits (at most four here).
fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
}

/// `YYYY-MM-DD`, a day that exists.
pub(super) fn is_date(b: &[u8]) -> bool {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (digits(&b[..4]), digits(&b[5..7]), digits(&b[8..]))
    else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// `hh:mm`, hours 00–23 and minutes 00–59.
fn is_hours_minutes(b: &[u8]) -> bool {
    b.len() == 5
        && b[2] == b':'
        && digits(&b[..2]).is_some_and(|h| h <= 23)
        && digits(&b[3..]).is_some_and(|m| m <= 59)
}

/// RFC 3339 `date-time`: a date, `T`, `hh:mm:ss` (a leap second 60
/// allowed), an optional fraction, then `Z` or `±hh:mm` (`t` and `z` may
/// be lower case).
pub(super) fn is_date_time(b: &[u8]) -> bool {
    if b.len() < 20 || !is_date(&b[..10]) || !matches!(b[10], b'T' | b't') {
        return false;
    }
    let (time, mut rest) = b[11..].split_at(8);
    let clock = is_hours_minutes(&time[..5])
        && time[5] == b':'
        && digits(&time[6..]).is_some_and(|s| s <= 60);
    if !clock {
        return false;
    }
    if let [b'.', fraction @ ..] = rest {
        let n = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return false;
        }
        rest = &fraction[n..];
    }
    match rest {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', offset @ ..] => is_hours_minutes(offset),
        _ => false,
    }
}
