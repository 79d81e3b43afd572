//! `mcp-tasks prune --older-than AGE`: removes the ended tasks of the task
//! list last seen more than AGE ago. Tasks that have not ended stay.

use std::time::{Duration, SystemTime};

use clap::Args;

use crate::exit;
use crate::records::Records;

/// The arguments of `prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Remove the ended tasks last seen more than AGE ago: a whole number
    /// and a unit, s, m, h or d (`30m`, `12h`, `7d`).
    #[arg(long, value_name = "AGE", value_parser = parse_age)]
    older_than: Duration,
}

/// `mcp-tasks prune`.
pub async fn run(args: PruneArgs) -> anyhow::Result<u8> {
    let age = show(args.older_than);
    let Some(records) = Records::open_existing().await? else {
        eprintln!("no tasks: nothing to prune");
        return Ok(exit::OK);
    };
    // An age beyond the epoch takes nothing.
    let removed = match SystemTime::now().checked_sub(args.older_than) {
        Some(cutoff) => records.prune(cutoff).await?,
        None => 0,
    };
    let left = records.list().await?.len();
    let tasks = |n: usize| if n == 1 { "task" } else { "tasks" };
    eprintln!(
        "pruned {removed} ended {} last seen more than {age} ago; {left} {} left",
        tasks(removed),
        tasks(left)
    );
    Ok(exit::OK)
}

/// An age as typed: a whole number and one of `s`, `m`, `h`, `d`.
fn parse_age(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not an age like 30m, 12h or 7d (units: s, m, h, d)");
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().map_err(|_| bad())?;
    let unit = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    n.checked_mul(unit)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{text:?} is too long an age"))
}

/// An age in the largest unit that divides it.
fn show(age: Duration) -> String {
    let secs = age.as_secs();
    for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60)] {
        if secs >= size && secs.is_multiple_of(size) {
            return format!("{}{unit}", secs / size);
        }
    }
    format!("{secs}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_a_number_and_a_unit() {
        assert_eq!(parse_age("30m"), Ok(Duration::from_secs(1_800)));
        assert_eq!(parse_age("12h"), Ok(Duration::from_secs(43_200)));
        assert_eq!(parse_age("7d"), Ok(Duration::from_secs(604_800)));
        assert_eq!(parse_age("0s"), Ok(Duration::ZERO));
        for bad in [
            "7",
            "d",
            "7w",
            "-1d",
            "1.5h",
            "7 d",
            "",
            "99999999999999999999d",
        ] {
            assert!(parse_age(bad).is_err(), "{bad:?}");
        }
        assert!(
            parse_age("999999999999999d")
                .unwrap_err()
                .contains("too long")
        );
        assert_eq!(show(Duration::from_secs(604_800)), "7d");
        assert_eq!(show(Duration::from_secs(5_400)), "90m");
        assert_eq!(show(Duration::from_secs(59)), "59s");
    }
}
