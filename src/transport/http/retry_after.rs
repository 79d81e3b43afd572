//! `Retry-After` (RFC 9110 §10.2.3): how long the server asks the client
//! to wait, given as delta-seconds (`120`) or as an HTTP-date
//! (`Sun, 06 Nov 1994 08:49:37 GMT`, and the two obsolete forms a
//! recipient must still accept).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, RETRY_AFTER};

/// The wait a reply's `Retry-After` asks for, measured from `now`; a date
/// already past is no wait. `None` when the header is absent, repeated
/// with different values, or unreadable.
pub(super) fn of(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let mut values = headers.get_all(RETRY_AFTER).iter();
    let first = values.next()?.to_str().ok()?;
    if values.any(|v| v.to_str().ok() != Some(first)) {
        return None;
    }
    parse(first, now)
}

/// Reads one `Retry-After` value.
pub(super) fn parse(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // More digits than a u64 holds still mean "a very long time".
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let at = http_date(value)?;
    let at = UNIX_EPOCH.checked_add(Duration::from_secs(at))?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Seconds since the epoch of an HTTP-date in any of its three forms:
/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850
/// (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
/// (`Sun Nov  6 08:49:37 1994`). The day name is not checked against the
/// date.
fn http_date(value: &str) -> Option<u64> {
    let parts: Vec<&str> = value.split_ascii_whitespace().collect();
    let (day, month, year, time) = match parts.as_slice() {
        [_, day, month, year, time, "GMT"] if value.contains(',') => (
            day.parse().ok()?,
            month_of(month)?,
            year.parse().ok()?,
            *time,
        ),
        [_, date, time, "GMT"] if value.contains(',') => {
            let mut fields = date.split('-');
            let day = fields.next()?.parse().ok()?;
            let month = month_of(fields.next()?)?;
            let short: u64 = fields.next()?.parse().ok()?;
            if fields.next().is_some() || short > 99 {
                return None;
            }
            // RFC 9110: a two-digit year more than 50 years ahead is in the past century.
            let year = if short >= 70 {
                1900 + short
            } else {
                2000 + short
            };
            (day, month, year, *time)
        }
        [_, month, day, time, year] => (
            day.parse().ok()?,
            month_of(month)?,
            year.parse().ok()?,
            *time,
        ),
        _ => return None,
    };
    let mut clock = time.split(':').map(|f| f.parse::<u64>().ok());
    let (Some(Some(h)), Some(Some(m)), Some(Some(s)), None) =
        (clock.next(), clock.next(), clock.next(), clock.next())
    else {
        return None;
    };
    // Years past 9999 are no HTTP-date (and would overflow the count).
    if !(1..=31).contains(&day) || !(1970..=9999).contains(&year) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    Some(days_since_epoch(year, month, day) * 86_400 + h * 3_600 + m * 60 + s)
}

fn month_of(name: &str) -> Option<u64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    MONTHS.iter().position(|m| *m == name).map(|i| i as u64 + 1)
}

/// Days from 1970-01-01 to the given civil date (year ≥ 1970), counting
/// leap years by the Gregorian rule.
fn days_since_epoch(year: u64, month: u64, day: u64) -> u64 {
    const BEFORE: [u64; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let leap = |y: u64| (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400);
    let leaps = |y: u64| y / 4 - y / 100 + y / 400; // leap years in 1..=y
    let mut days = (year - 1970) * 365 + leaps(year - 1) - leaps(1969);
    days += BEFORE[(month - 1) as usize] + day - 1;
    if month > 2 && leap(year) {
        days += 1;
    }
    days
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    /// 1994-11-06 08:49:37 UTC, the example of RFC 9110.
    const EXAMPLE: u64 = 784_111_777;

    #[test]
    fn delta_seconds() {
        let now = at(EXAMPLE);
        assert_eq!(parse("3", now), Some(Duration::from_secs(3)));
        assert_eq!(parse(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(
            parse("99999999999999999999999", now),
            Some(Duration::from_secs(u64::MAX))
        );
        for bad in ["", "-1", "1.5", "3s", "+3", "soon"] {
            assert_eq!(parse(bad, now), None, "{bad:?}");
        }
    }

    #[test]
    fn the_three_date_forms() {
        let now = at(EXAMPLE - 10);
        for form in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(parse(form, now), Some(Duration::from_secs(10)), "{form}");
        }
        // A date already past asks for no wait.
        assert_eq!(
            parse("Sun, 06 Nov 1994 08:49:37 GMT", at(EXAMPLE + 60)),
            Some(Duration::ZERO)
        );
        for bad in [
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun 06 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse(bad, now), None, "{bad}");
        }
    }

    #[test]
    fn a_year_past_9999_is_no_date() {
        assert_eq!(http_date("Sun, 06 Nov 999999999999 08:49:37 GMT"), None);
        assert!(http_date("Fri, 31 Dec 9999 23:59:59 GMT").is_some());
    }

    #[test]
    fn dates_count_leap_years() {
        let date = |y, m, d| days_since_epoch(y, m, d) * 86_400;
        assert_eq!(date(1970, 1, 1), 0);
        assert_eq!(date(2000, 3, 1), 951_868_800);
        assert_eq!(date(2024, 2, 29), 1_709_164_800);
        assert_eq!(date(2100, 3, 1), 4_107_542_400);
        assert_eq!(
            http_date("Fri, 01 Jan 2027 00:00:00 GMT"),
            Some(1_798_761_600)
        );
    }

    #[test]
    fn repeated_headers_must_agree() {
        let mut h = HeaderMap::new();
        assert_eq!(of(&h, at(0)), None);
        h.append(RETRY_AFTER, "5".parse().unwrap());
        assert_eq!(of(&h, at(0)), Some(Duration::from_secs(5)));
        h.append(RETRY_AFTER, "5".parse().unwrap());
        assert_eq!(of(&h, at(0)), Some(Duration::from_secs(5)));
        h.append(RETRY_AFTER, "7".parse().unwrap());
        assert_eq!(of(&h, at(0)), None);
    }
}
