//! The time a request has left. A Lambda function that times out fails its whole SQS batch
//! and loses the partial-batch response, so a script's deadline is the smaller of its tenant's
//! `timeout_s` and the function's remaining time less [`MARGIN`]. The handlers set that end
//! with [`within`] around a request's work (a task-local, [`current`]); the router and the
//! handler of one object event share one end ([`crate::runtime::Runtime`]); a wait on a backend
//! ends by it ([`before`]). The periodic tick's time is here too ([`tick_end`]).

use std::future::Future;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::{Error, Result};

/// Time kept back from a Lambda's remaining time: for the deletes after a handler, the batch
/// response, and the runtime's own log lines.
pub const MARGIN: Duration = Duration::from_secs(2);

tokio::task_local! {
    static NOT_AFTER: Instant;
}

/// Runs `f` with work inside it ending by `not_after` (or by an earlier end already set).
pub async fn within<F: Future>(not_after: Instant, f: F) -> F::Output {
    let end = current().map_or(not_after, |outer| outer.min(not_after));
    NOT_AFTER.scope(end, f).await
}

/// `f`'s answer, or the error `late` makes when `not_after` comes first (no bound without
/// one): a wait that ends at the request's deadline whatever the backend does.
pub async fn before<F: Future>(
    not_after: Option<Instant>,
    f: F,
    late: impl FnOnce() -> Error,
) -> Result<F::Output> {
    match not_after {
        Some(end) => tokio::time::timeout_at(end.into(), f)
            .await
            .map_err(|_| late()),
        None => Ok(f.await),
    }
}

/// The end set for the current task, if any.
pub fn current() -> Option<Instant> {
    NOT_AFTER.try_with(|t| *t).ok()
}

/// Deadlines below this many ms since the epoch (September 2001) are not times but what is left:
/// `cargo lambda watch`, the local runtime API, sends `600000` for ten minutes.
const EPOCH_FLOOR_MS: u64 = 1_000_000_000_000;

/// The end of a Lambda request whose deadline is `deadline_ms` (ms since the epoch, as the
/// runtime API gives it; a value below September 2001 is taken as the ms left, as local
/// emulators mean it), less [`MARGIN`].
pub fn lambda_end(deadline_ms: u64) -> Instant {
    let left = if deadline_ms < EPOCH_FLOOR_MS {
        Duration::from_millis(deadline_ms)
    } else {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        Duration::from_millis(deadline_ms.saturating_sub(now_ms))
    };
    Instant::now() + left.saturating_sub(MARGIN)
}

/// How often the periodic tick runs on AWS (the `tick` function's schedule, template.yaml):
/// also how far ahead a tick hands due work to the queue, with the delay that is left.
pub const TICK_EVERY: Duration = Duration::from_secs(60);

/// The longest a periodic tick on AWS works, schedules and timers together, so that one tick
/// ends well before the next begins.
pub const TICK_TIME: Duration = Duration::from_secs(45);

/// When a periodic tick that starts now stops: [`TICK_TIME`] from now, or the end of its
/// function's request ([`lambda_end`] of `deadline_ms`; the function's timeout may be as short
/// as 10 s) when that comes first. What is left waits for the next tick.
pub fn tick_end(deadline_ms: Option<u64>) -> Instant {
    let most = Instant::now() + TICK_TIME;
    deadline_ms.map_or(most, |d| lambda_end(d).min(most))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tick_ends_by_its_functions_deadline_or_its_time() {
        let now_ms = || {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_millis() as u64
        };
        // GIVEN a tick function with a 10 s timeout THEN its tick stops 2 s before it ends
        let t = Instant::now();
        let end = tick_end(Some(now_ms() + 10_000));
        assert!(
            end <= t + Duration::from_secs(8) + Duration::from_millis(50),
            "{:?}",
            end - t
        );
        // AND with a 15 minute timeout, after TICK_TIME, schedules and timers together
        let t = Instant::now();
        let end = tick_end(Some(now_ms() + 900_000));
        assert!(end >= t + TICK_TIME && end <= Instant::now() + TICK_TIME);
        assert!(tick_end(None) <= Instant::now() + TICK_TIME);
    }

    #[tokio::test]
    async fn within_keeps_the_earlier_end() {
        let soon = Instant::now() + Duration::from_secs(1);
        let later = soon + Duration::from_secs(60);
        assert_eq!(current(), None);
        let inner = within(soon, async { within(later, async { current() }).await }).await;
        assert_eq!(inner, Some(soon));
        let end = lambda_end(0);
        assert!(
            end <= Instant::now(),
            "a deadline in the past leaves no time"
        );
    }

    /// GIVEN the deadline `cargo lambda watch` sends (600000: ten minutes, not a time) WHEN
    /// the end is computed THEN scripts get ten minutes less the margin, not none; a real
    /// deadline (ms since the epoch) an hour ahead gives an hour.
    #[test]
    fn a_local_emulators_deadline_is_the_time_left() {
        let end = lambda_end(600_000);
        let left = end.saturating_duration_since(Instant::now());
        assert!(
            left > Duration::from_secs(590) && left <= Duration::from_secs(598),
            "{left:?}"
        );
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let left = lambda_end(now_ms + 3_600_000).saturating_duration_since(Instant::now());
        assert!(
            left > Duration::from_secs(3590) && left <= Duration::from_secs(3598),
            "{left:?}"
        );
    }
}
