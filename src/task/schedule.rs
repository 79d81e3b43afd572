//! The rules of waiting, as pure functions of a task's last state.
//!
//! Two drivers wait on tasks: the in-process wait (`finish`, `next`,
//! `updates`), which sleeps between reads, and the store's tracker, which
//! writes the next due time into a database and sleeps on one timer for
//! all its tasks. Both ask this module how long after the last event the
//! next read comes, so they keep the same rules by construction:
//!
//! - after a read, one interval: the server's suggestion (else the
//!   default), never above the ceiling nor under the floor;
//! - after a write the server acknowledged (an answer, a cancel), the
//!   floor, so that its effect shows soon;
//! - after a failed read, a backoff: from 100 ms, doubling, up to the
//!   interval; after a refusal by an overloaded server, its `Retry-After`
//!   (never sooner than one interval), else the interval doubling to 30 s
//!   (or the interval, when longer) less a jitter of up to a quarter,
//!   drawn from the task id and the attempt so that a schedule is the same
//!   on every run and tasks refused together do not come back together.

use std::time::Duration;

/// The first retry of a failed read comes this long after it.
pub(crate) const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest pause between reads of an overloaded server that gave no
/// `Retry-After`, unless the task's interval is longer.
pub(crate) const MAX_OVERLOAD_BACKOFF: Duration = Duration::from_secs(30);

/// The spacing a task's reads keep: the builder's `poll_interval`,
/// `min_poll_interval` and `max_poll_interval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rules {
    /// The interval when the server suggests none.
    pub(crate) default: Duration,
    /// The floor on any spacing.
    pub(crate) floor: Duration,
    /// The ceiling on any interval, the server's included.
    pub(crate) ceiling: Duration,
}

/// The spacing settings a builder was given: each `None` when left to
/// the default. The in-process wait lays them over the crate's defaults;
/// the tracker keeps them in the task's record and lays them over its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Chosen {
    /// `poll_interval`.
    pub(crate) interval: Option<Duration>,
    /// `min_poll_interval`.
    pub(crate) floor: Option<Duration>,
    /// `max_poll_interval`.
    pub(crate) ceiling: Option<Duration>,
}

impl Chosen {
    /// These settings, and `base`'s where none was chosen.
    pub(crate) fn over(self, base: Rules) -> Rules {
        Rules {
            default: self.interval.unwrap_or(base.default),
            floor: self.floor.unwrap_or(base.floor),
            ceiling: self.ceiling.unwrap_or(base.ceiling),
        }
    }
}

/// Whether a failed read is worth another one: a timeout, a failed
/// transport or an overloaded server's refusal. Both drivers ask this; any
/// other failure ends the in-process wait at once (the caller keeps the
/// handle), and ends a tracked task after a few in a row (see the store's
/// tracker: a worker has no caller to hand a failure to).
pub(crate) fn retryable(e: &crate::Error) -> bool {
    e.is_timeout() || e.is_transport() || e.is_overloaded()
}

/// What happened last to a task, from which the next read is timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum After {
    /// A read (or a pushed snapshot) succeeded.
    Read,
    /// The server acknowledged an answer or a cancel.
    Write,
    /// The `attempt`-th read in a row (from 1) failed.
    Failure {
        /// Failed reads in a row, this one included.
        attempt: u32,
        /// The server refused for overload (HTTP 429 or 503).
        overloaded: bool,
        /// The pause the server asked for, if it asked.
        retry_after: Option<Duration>,
    },
}

impl Rules {
    /// The spacing of reads for a server's suggestion: the suggestion (or
    /// the default), never above the ceiling nor under the floor.
    pub(crate) fn interval(&self, suggested_ms: Option<u64>) -> Duration {
        suggested_ms
            .map_or(self.default, Duration::from_millis)
            .min(self.ceiling)
            .max(self.floor)
    }

    /// How long after `after` the next read of a task comes, given the
    /// server's suggested interval and the task's jitter seed
    /// ([`seed_of`] its id).
    pub(crate) fn delay(&self, suggested_ms: Option<u64>, after: After, seed: u64) -> Duration {
        let interval = self.interval(suggested_ms);
        match after {
            After::Read => interval,
            After::Write => self.floor,
            After::Failure {
                retry_after: Some(wait),
                ..
            } => wait.max(interval),
            After::Failure {
                attempt,
                overloaded: true,
                retry_after: None,
            } => overload_backoff(interval, attempt, seed),
            After::Failure { attempt, .. } => backoff(interval, attempt),
        }
    }
}

/// The pause after the `attempt`-th failed read in a row that was not a
/// refusal: 100 ms, doubling, up to the interval (or 100 ms, when the
/// interval is shorter).
fn backoff(interval: Duration, attempt: u32) -> Duration {
    let doublings = attempt.saturating_sub(1).min(24);
    FIRST_BACKOFF
        .saturating_mul(1 << doublings)
        .min(interval.max(FIRST_BACKOFF))
}

/// The pause after the `attempt`-th refusal without `Retry-After`: the
/// interval doubled for each refusal before this one, up to
/// [`MAX_OVERLOAD_BACKOFF`] (or the interval, when it is longer), less a
/// jitter of up to a quarter, and never under the interval.
fn overload_backoff(interval: Duration, attempt: u32, seed: u64) -> Duration {
    let cap = MAX_OVERLOAD_BACKOFF.max(interval);
    let doublings = attempt.saturating_sub(1).min(24);
    let full = interval.saturating_mul(1 << doublings).min(cap);
    let jitter = (full / 4).mul_f64(unit(seed, attempt));
    full.saturating_sub(jitter).max(interval)
}

/// A seed for a task's jitter: FNV-1a of its id.
pub(crate) fn seed_of(id: &str) -> u64 {
    crate::protocol::fnv::fnv1a_64(id.as_bytes())
}

/// A number in `[0, 1)` drawn from `seed` and `attempt` (splitmix64).
fn unit(seed: u64, attempt: u32) -> f64 {
    let mut z = seed.wrapping_add(u64::from(attempt).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: Rules = Rules {
        default: Duration::from_secs(1),
        floor: Duration::from_millis(50),
        ceiling: Duration::from_secs(30),
    };

    fn failure(attempt: u32) -> After {
        After::Failure {
            attempt,
            overloaded: false,
            retry_after: None,
        }
    }

    fn refusal(attempt: u32, retry_after: Option<Duration>) -> After {
        After::Failure {
            attempt,
            overloaded: true,
            retry_after,
        }
    }

    #[test]
    fn a_read_waits_one_interval_bounded_by_floor_and_ceiling() {
        assert_eq!(RULES.delay(None, After::Read, 0), Duration::from_secs(1));
        assert_eq!(
            RULES.delay(Some(250), After::Read, 0),
            Duration::from_millis(250)
        );
        assert_eq!(RULES.delay(Some(1), After::Read, 0), RULES.floor);
        assert_eq!(RULES.delay(Some(u64::MAX), After::Read, 0), RULES.ceiling);
    }

    #[test]
    fn a_write_is_followed_by_a_read_at_the_floor() {
        assert_eq!(RULES.delay(Some(5_000), After::Write, 0), RULES.floor);
    }

    #[test]
    fn failed_reads_back_off_from_100_ms_up_to_the_interval() {
        let waits: Vec<u128> = (1..=8)
            .map(|n| RULES.delay(None, failure(n), 0).as_millis())
            .collect();
        assert_eq!(waits, [100, 200, 400, 800, 1000, 1000, 1000, 1000]);
        // A short interval still leaves 100 ms between retries.
        assert_eq!(
            RULES.delay(Some(60), failure(5), 0),
            Duration::from_millis(100)
        );
        assert!(RULES.delay(None, failure(u32::MAX), 0) <= Duration::from_secs(1));
    }

    #[test]
    fn retry_after_is_honoured_but_never_undercuts_the_interval() {
        let secs = Duration::from_secs;
        assert_eq!(RULES.delay(None, refusal(1, Some(secs(7))), 0), secs(7));
        assert_eq!(RULES.delay(None, refusal(1, Some(secs(0))), 0), secs(1));
    }

    #[test]
    fn the_overload_backoff_doubles_to_its_cap_and_never_undercuts_the_interval() {
        let interval = Duration::from_secs(1);
        let seed = seed_of("task-1");
        let pauses: Vec<Duration> = (1..=12)
            .map(|n| overload_backoff(interval, n, seed))
            .collect();
        assert_eq!(pauses[0], interval, "the first retry is one interval later");
        for (n, p) in pauses.iter().enumerate() {
            let full = (interval * (1 << n)).min(MAX_OVERLOAD_BACKOFF);
            assert!(
                *p <= full && *p >= full * 3 / 4 && *p >= interval,
                "{n}: {p:?}"
            );
        }
        // Drawn from the id and the attempt: the same every time, and
        // different for another task.
        assert_eq!(overload_backoff(interval, 7, seed), pauses[6]);
        let other: Vec<Duration> = (1..=12)
            .map(|n| overload_backoff(interval, n, seed_of("task-2")))
            .collect();
        assert_ne!(other, pauses);
        // A long interval is its own cap.
        let long = Duration::from_secs(60);
        assert_eq!(overload_backoff(long, 9, seed), long);
        // Far past any cap, nothing overflows.
        assert!(overload_backoff(interval, u32::MAX, seed) <= MAX_OVERLOAD_BACKOFF);
        assert_eq!(RULES.delay(None, refusal(3, None), seed), pauses[2]);
    }
}
