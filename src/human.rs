//! Quantities as a person writes them in a message: `250 ms`, `1.5 s`,
//! `5 min`, `16 MiB`. Every error and log message that shows a duration or
//! a size goes through here, so that none prints `6.001253582s`.

use std::fmt;
use std::time::Duration;

/// A duration to show in a message; see [`duration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HumanDuration(Duration);

/// `d` as a person writes it, rounded to what matters at its scale:
/// `0 ms`, `750 µs`, `250 ms`, `1.5 s`, `6 s`, `2 min 30 s`, `1 h 5 min`.
pub(crate) fn duration(d: Duration) -> HumanDuration {
    HumanDuration(d)
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        if d.is_zero() {
            return f.write_str("0 ms");
        }
        if d < Duration::from_millis(1) {
            return write!(f, "{} µs", d.as_micros().max(1));
        }
        if d < Duration::from_secs(1) {
            // Rounded to the millisecond; 999.6 ms is still under a second.
            let ms = (d.as_micros() + 500) / 1000;
            return if ms >= 1000 {
                f.write_str("1 s")
            } else {
                write!(f, "{ms} ms")
            };
        }
        // Tenths of a second below a minute, whole seconds above.
        let tenths = (d.as_millis() + 50) / 100;
        if tenths < 600 {
            let (whole, tenth) = (tenths / 10, tenths % 10);
            return if tenth == 0 {
                write!(f, "{whole} s")
            } else {
                write!(f, "{whole}.{tenth} s")
            };
        }
        let secs = (d.as_millis() + 500) / 1000;
        if secs < 3600 {
            let (min, s) = (secs / 60, secs % 60);
            return if s == 0 {
                write!(f, "{min} min")
            } else {
                write!(f, "{min} min {s} s")
            };
        }
        let mins = (secs + 30) / 60;
        let (h, min) = (mins / 60, mins % 60);
        if min == 0 {
            write!(f, "{h} h")
        } else {
            write!(f, "{h} h {min} min")
        }
    }
}

/// A size in bytes to show in a message; see [`bytes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HumanBytes(u64);

/// `n` bytes as a person writes them: `512 bytes`, `64 KiB`, `1.5 MiB`,
/// `16 MiB` (binary units, one decimal when the size is not whole).
pub(crate) fn bytes(n: usize) -> HumanBytes {
    HumanBytes(u64::try_from(n).unwrap_or(u64::MAX))
}

impl fmt::Display for HumanBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
        let n = self.0;
        if n < 1024 {
            return write!(f, "{n} bytes");
        }
        let mut unit = 0;
        let mut scale: u64 = 1024;
        while unit + 1 < UNITS.len() && n / scale >= 1024 {
            unit += 1;
            scale *= 1024;
        }
        // Tenths of the unit, rounded; exact sizes show no decimal.
        let tenths = (u128::from(n) * 10 + u128::from(scale) / 2) / u128::from(scale);
        let (whole, tenth) = (tenths / 10, tenths % 10);
        if tenth == 0 {
            write!(f, "{whole} {}", UNITS[unit])
        } else {
            write!(f, "{whole}.{tenth} {}", UNITS[unit])
        }
    }
}

/// The start of a text the server sent, to quote in a message: on one
/// line (runs of whitespace become one space), at most `max` characters,
/// cut on a character boundary and marked `…` when cut.
#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "used by the HTTP transport")
)]
pub(crate) fn quote(text: &str, max: usize) -> String {
    // The words joined by single spaces, read lazily: a large body is
    // never copied whole.
    let mut collapsed = text
        .split_whitespace()
        .flat_map(|word| std::iter::once(' ').chain(word.chars()))
        .skip(1);
    let mut out: String = collapsed.by_ref().take(max).collect();
    if collapsed.next().is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn d(text: &str) -> String {
        let (n, unit) = text.split_at(text.find(|c: char| c.is_alphabetic()).unwrap());
        let n: f64 = n.parse().unwrap();
        let d = match unit {
            "us" => Duration::from_secs_f64(n / 1e6),
            "ms" => Duration::from_secs_f64(n / 1e3),
            "s" => Duration::from_secs_f64(n),
            _ => unreachable!(),
        };
        duration(d).to_string()
    }

    #[test]
    fn durations_read_as_a_person_writes_them() {
        for (given, shown) in [
            ("0s", "0 ms"),
            ("3us", "3 µs"),
            ("250ms", "250 ms"),
            ("999.4ms", "999 ms"),
            ("999.7ms", "1 s"),
            ("1s", "1 s"),
            ("1.5s", "1.5 s"),
            ("6.001253582s", "6 s"),
            ("59.96s", "1 min"),
            ("90s", "1 min 30 s"),
            ("300s", "5 min"),
            ("3600s", "1 h"),
            ("3900s", "1 h 5 min"),
        ] {
            assert_eq!(d(given), shown, "{given}");
        }
        assert_eq!(
            duration(Duration::MAX).to_string().split(' ').nth(1),
            Some("h")
        );
    }

    #[test]
    fn sizes_read_as_a_person_writes_them() {
        for (n, shown) in [
            (0, "0 bytes"),
            (1023, "1023 bytes"),
            (1024, "1 KiB"),
            (64 * 1024, "64 KiB"),
            (1536 * 1024, "1.5 MiB"),
            (16 << 20, "16 MiB"),
            (3 << 30, "3 GiB"),
        ] {
            assert_eq!(bytes(n).to_string(), shown, "{n}");
        }
    }

    proptest! {
        /// Any duration shows as at most two numbers with units, at most
        /// one decimal digit, and never Rust's `Debug` form.
        #[test]
        fn every_duration_shows_short(nanos in any::<u64>()) {
            let shown = duration(Duration::from_nanos(nanos)).to_string();
            let words: Vec<&str> = shown.split(' ').collect();
            prop_assert!(words.len() == 2 || words.len() == 4, "{}", shown);
            for pair in words.chunks(2) {
                let digits = pair[0].split('.').nth(1).map_or(0, str::len);
                prop_assert!(digits <= 1, "{}", shown);
                prop_assert!(["µs", "ms", "s", "min", "h"].contains(&pair[1]), "{}", shown);
            }
        }

        /// A quote is the start of the text on one line, at most `max`
        /// characters, marked when (and only when) it was cut.
        #[test]
        fn a_quote_is_a_marked_prefix_on_one_line(text in "\\PC{0,300}", ws in "[ \t\n]{0,3}", max in 0usize..200) {
            let text = format!("{ws}{text}");
            let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let quoted = quote(&text, max);
            let cut = collapsed.chars().count() > max;
            prop_assert_eq!(quoted.ends_with('…') && cut, cut);
            let kept = quoted.strip_suffix('…').filter(|_| cut).unwrap_or(&quoted);
            prop_assert!(collapsed.starts_with(kept));
            prop_assert!(kept.chars().count() <= max);
            prop_assert!(!quoted.contains('\n'));
        }

        #[test]
        fn every_size_shows_short(n in any::<usize>()) {
            let shown = bytes(n).to_string();
            let digits = shown.split(' ').next().unwrap().split('.').nth(1).map_or(0, str::len);
            prop_assert!(digits <= 1, "{}", shown);
        }
    }
}
