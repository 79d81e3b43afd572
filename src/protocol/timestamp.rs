//! ISO 8601 timestamps in UTC, as tasks carry them (`createdAt`,
//! `lastUpdatedAt`), from a count of milliseconds since the Unix epoch.

/// `unix_ms` as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub(crate) fn iso8601_utc(unix_ms: u64) -> String {
    let (secs, milli) = (unix_ms / 1000, unix_ms % 1000);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Year, month and day of a count of days since 1970-01-01 (proleptic Gregorian).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_days_and_times() {
        assert_eq!(iso8601_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(iso8601_utc(1_764_064_800_123), "2025-11-25T10:00:00.123Z");
    }
}
