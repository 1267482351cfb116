//! WaitAtBarrier: a wait woken at once by a trip in this process, polling the store otherwise.

use std::time::Duration;

use super::{
    check_name, model, notify, Barrier, Rendezvous, WaitOutcome, FIRST_READ, POLL_FIRST, POLL_MAX,
};
use crate::budget::Budget;
use crate::{Error, Result};

impl<B: Budget + ?Sized> Rendezvous<'_, B> {
    /// Waits until the barrier's generation passes `expected_generation` (TRIPPED) or
    /// `timeout` passes (TIMED_OUT). Woken at once by a trip in this process; polls the store
    /// otherwise, every 100 ms doubling to 1 s.
    pub async fn wait(
        &self,
        ns: &str,
        name: &str,
        expected_generation: u64,
        timeout: Duration,
    ) -> Result<(Barrier, WaitOutcome)> {
        check_name("namespace_name", ns)?;
        check_name("barrier_name", name)?;
        model::check_positive("expected_generation", expected_generation)?;
        model::check_timeout(timeout.as_secs())?;
        let start = tokio::time::Instant::now();
        let until = start + timeout;
        let _parked = notify::park(self.tenant, self.max_waits)?;
        // Registered before the first read, so a trip between the read and the wait is seen.
        let mut sub = notify::subscribe(self.tenant, ns, name);
        let mut pause = POLL_FIRST;
        // The barrier a trip in this process handed over: no read needed, if it is of the
        // incarnation this wait read (not a barrier of the name deleted and made again).
        let mut handed: Option<(String, Barrier)> = None;
        let mut incarnation = String::new();
        // The barrier as last read: what a poll that the store holds past the timeout answers.
        let mut last: Option<Barrier> = None;
        loop {
            let b = match handed.take() {
                Some((i, b)) if i == incarnation => b,
                _ => {
                    // A held store never keeps a wait past its timeout (issue 50: a
                    // 3 s wait took 60 s); the first read has at least FIRST_READ.
                    let by = match last {
                        Some(_) => until,
                        None => until.max(start + FIRST_READ),
                    };
                    let found = match tokio::time::timeout_at(by, self.need(ns, name)).await {
                        Ok(found) => found?,
                        Err(_) => match last.take() {
                            Some(b) => return Ok((b, WaitOutcome::TimedOut)),
                            None => {
                                return Err(Error::Backend {
                                    backend: "kv",
                                    message: format!(
                                        "the rendezvous barrier {name:?} of namespace {ns:?} could not be read within {} s; the store is slow or unavailable: retry",
                                        (by - start).as_secs()
                                    ),
                                    source: None,
                                })
                            }
                        },
                    };
                    incarnation = found.row.incarnation;
                    found.row.barrier
                }
            };
            last = Some(b.clone());
            if b.generation > expected_generation {
                return Ok((b, WaitOutcome::Tripped));
            }
            let now = tokio::time::Instant::now();
            if now >= until {
                return Ok((b, WaitOutcome::TimedOut));
            }
            let nap = pause.min(until - now);
            let woken = async {
                match sub.as_mut() {
                    Some(s) => s.woken().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                h = woken => handed = h,
                () = tokio::time::sleep(nap) => pause = (pause * 2).min(POLL_MAX),
                // The process is stopping: answer now rather than hold its shutdown.
                () = notify::stopping() => return Ok((b, WaitOutcome::TimedOut)),
            }
        }
    }
}
