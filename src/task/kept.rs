//! What a task keeps of its settings for as long as its handle lives.
//!
//! A pending task's handle lives as long as the task, and a client may
//! hold a hundred thousand of them: what each keeps is packed. The
//! lifetime (`with_ttl`) becomes a moment when the task is created and the
//! progress callback goes to the call, so neither is kept; durations are
//! kept as nanoseconds (saturating at about 584 years).

use std::time::Duration;

use super::schedule::Rules;
use super::settings::{InputMode, Settings};
use crate::Client;

/// A duration in nanoseconds, saturating; `u64::MAX` is reserved for
/// "none" (see [`Kept::request_timeout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Nanos(u64);

impl Nanos {
    const NONE: Nanos = Nanos(u64::MAX);

    fn of(d: Duration) -> Nanos {
        Nanos(u64::try_from(d.as_nanos()).map_or(u64::MAX - 1, |n| n.min(u64::MAX - 1)))
    }

    fn of_option(d: Option<Duration>) -> Nanos {
        d.map_or(Nanos::NONE, Nanos::of)
    }

    fn get(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    fn option(self) -> Option<Duration> {
        (self != Nanos::NONE).then(|| self.get())
    }
}

/// A task's settings, as its handle keeps them.
pub(crate) struct Kept {
    pub(crate) client: Client,
    poll_interval: Nanos,
    min_poll_interval: Nanos,
    max_poll_interval: Nanos,
    timeout: Nanos,
    request_timeout: Nanos,
    pub(crate) listen: bool,
    pub(crate) input: InputMode,
    pub(crate) cancel_on_drop: bool,
}

impl From<Settings> for Kept {
    fn from(s: Settings) -> Kept {
        Kept {
            client: s.client,
            poll_interval: Nanos::of(s.poll_interval),
            min_poll_interval: Nanos::of(s.min_poll_interval),
            max_poll_interval: Nanos::of(s.max_poll_interval),
            timeout: Nanos::of(s.timeout),
            request_timeout: Nanos::of_option(s.request_timeout),
            listen: s.listen,
            input: s.input,
            cancel_on_drop: s.cancel_on_drop,
        }
    }
}

impl Kept {
    /// The rules of the task's schedule.
    pub(crate) fn rules(&self) -> Rules {
        Rules {
            default: self.poll_interval.get(),
            floor: self.min_poll_interval.get(),
            ceiling: self.max_poll_interval.get(),
        }
    }

    /// The bound on each wait.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout.get()
    }

    /// The bound on each request: the task's own, else the client's.
    pub(crate) fn request_timeout(&self) -> Duration {
        self.request_timeout
            .option()
            .unwrap_or_else(|| self.client.request_timeout())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_come_back_as_set_and_saturate_beyond_u64_nanoseconds() {
        for d in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_millis(50),
            Duration::from_secs(86_400 * 365),
        ] {
            assert_eq!(Nanos::of(d).get(), d);
            assert_eq!(Nanos::of_option(Some(d)).option(), Some(d));
        }
        // Duration::MAX is more than u64 nanoseconds hold: it saturates,
        // and is still a duration, not "none".
        let far = Nanos::of(Duration::MAX).get();
        assert!(far > Duration::from_secs(500 * 365 * 86_400), "{far:?}");
        assert_eq!(Nanos::of_option(Some(Duration::MAX)).option(), Some(far));
        assert_eq!(Nanos::of_option(None).option(), None);
    }

    #[test]
    fn a_kept_task_is_smaller_than_its_settings() {
        assert!(size_of::<Kept>() <= 64, "{}", size_of::<Kept>());
        assert!(size_of::<Kept>() < size_of::<Settings>());
    }
}
