//! The width of a chain of work: a budget per root, carried in each work message (`width`)
//! and shown to scripts as `ctx.width`, so that the tree of work one root starts is bounded in
//! breadth as `max_chain_depth` bounds it in depth: a fork bomb (an `on_queue` that sends
//! itself twice) ends by itself with `limit max_chain_width exceeded`.
//!
//! A root (a direct invocation, a message or object event from outside) gets the tenant's
//! `max_chain_width`. An invocation splits its width among the work it creates, so that the
//! widths of its children never add up to more than its own:
//!
//! - `native.queue.send` messages wait in the invocation's outbox and are sent when it ends
//!   successfully, each with an even share of the width left (a lone continuation keeps all of
//!   it, a fan-out of n gives each 1/n). A failed invocation sends none of them, so its retry
//!   cannot send them twice over. Each message needs a width of at least 1: a send past the
//!   width left is the breach.
//! - Work the host creates at once (a timer, a barrier's or rendezvous trip's continuation, a
//!   job's stale timer) takes half of the width left beside the messages waiting and one for
//!   each send the invocation may still make, at least 1.
//!
//! A tree therefore holds at most `max_chain_width` leaves, and so at most `max_chain_width x
//! (max_chain_depth + 1)` messages.

use std::sync::Arc;

use mlua::Lua;

use super::Invocation;
use crate::config::CEILINGS;
use crate::ports::WorkMessage;
use crate::ports::{Queue, QueueKind};
use crate::Error;

/// Bytes a message's `"width":N` may add to its body after its size was checked.
pub const WIDTH_FIELD_BYTES: usize = 24;

/// A message waiting for its invocation to succeed.
#[derive(Debug)]
pub struct Pending {
    /// The message, its width still to be set.
    pub message: WorkMessage,
    /// Its delay.
    pub delay_s: u32,
}

impl Invocation {
    /// Puts `message` in the outbox, to be sent when the invocation succeeds; past the width
    /// left, records the breach and raises it.
    pub(crate) fn defer_send(
        &self,
        lua: &Lua,
        what: &str,
        message: WorkMessage,
        delay_s: u32,
    ) -> mlua::Result<()> {
        let waiting = self.outbox.borrow().len() as u32;
        if waiting >= self.width_left.get() {
            return Err(self.breach(lua, "max_chain_width", self.width_detail(what, waiting + 1)));
        }
        self.outbox.borrow_mut().push(Pending { message, delay_s });
        Ok(())
    }

    /// The width of work the host creates now (a timer, a continuation): half of what is left
    /// beside the messages waiting in the outbox and one for each send the invocation may
    /// still make (so that `max_sends` timers always fit in a width of at least `max_sends`),
    /// at least 1. Past the width, the breach is recorded and its message returned.
    pub fn take_width(&self, what: &str) -> crate::Result<u32> {
        let left = self.width_left.get();
        let waiting = self.outbox.borrow().len() as u32;
        let free = left.saturating_sub(waiting);
        if free == 0 {
            let detail = self.width_detail(what, waiting + 1);
            self.record_breach("max_chain_width", &detail);
            return Err(Error::LimitExceeded {
                limit: "max_chain_width",
                detail,
            });
        }
        let later = self
            .tenant
            .config
            .limits
            .max_sends
            .saturating_sub(self.sends.get());
        let share = (free.saturating_sub(later) / 2).max(1);
        self.width_left.set(left - share);
        Ok(share)
    }

    /// The bodies of the messages waiting, each with its share of the width left, in the order
    /// they were sent; the outbox is left empty.
    pub fn take_outbox(&self) -> Vec<(String, u32)> {
        let pending = std::mem::take(&mut *self.outbox.borrow_mut());
        let n = pending.len() as u32;
        if n == 0 {
            return Vec::new();
        }
        let left = self.width_left.get().max(n);
        self.width_left.set(0);
        let (each, extra) = (left / n, left % n);
        pending
            .into_iter()
            .enumerate()
            .filter_map(|(i, mut p)| {
                p.message.width = Some(each + u32::from((i as u32) < extra));
                // Serializing a value that already serialized once cannot fail.
                serde_json::to_string(&p.message)
                    .ok()
                    .map(|body| (body, p.delay_s))
            })
            .collect()
    }

    fn width_detail(&self, what: &str, nth: u32) -> String {
        format!(
            "{what} would be work item {nth} of this invocation, \
             whose share of its chain is {} wide (ctx.width; the whole tree of work one root \
             starts may be {} wide); a script that sends itself more than one message grows \
             without end: send fewer, or raise limits.max_chain_width in {} (ceiling {})",
            self.width,
            self.tenant.config.limits.max_chain_width,
            self.config_file(),
            CEILINGS.max_chain_width
        )
    }
}

/// Sends the messages an invocation left in its outbox ([`Invocation::take_outbox`]).
pub async fn send_outbox(queue: &Arc<dyn Queue>, bodies: Vec<(String, u32)>) -> crate::Result<()> {
    for (body, delay_s) in bodies {
        queue.send(QueueKind::Work, body, delay_s).await?;
    }
    Ok(())
}

/// How long the outbox may take to reach the queue: what is left of the invocation's time,
/// and at least a few seconds (a script that returned just before its deadline still has its
/// messages sent), but never past the end of the request it runs in (`not_after`, a Lambda's
/// time less [`crate::deadline::MARGIN`]) by more than half that margin: the rest is the
/// batch response's, which a stalled queue must not cost.
pub fn send_within(
    deadline: std::time::Instant,
    not_after: Option<std::time::Instant>,
) -> std::time::Duration {
    let now = std::time::Instant::now();
    let wanted = deadline
        .saturating_duration_since(now)
        .max(std::time::Duration::from_secs(5));
    match not_after {
        Some(end) => wanted.min((end + crate::deadline::MARGIN / 2).saturating_duration_since(now)),
        None => wanted,
    }
}

/// The width a message runs with: its own, within 1 and the tenant's limit (which the tenant
/// may have lowered since), or the tenant's whole width for a root (no width: from outside).
pub fn width_of(sent: Option<u32>, max: u32) -> u32 {
    sent.map_or(max, |w| w.clamp(1, max.max(1)))
}

/// Whether a failed message can only fail the same way again: it breached its chain's width,
/// which its retry gets again (the messages it sent are never sent: they wait for success).
pub fn breached_width(e: &Error) -> bool {
    matches!(
        e,
        Error::Script {
            cause: crate::error::Cause::Limit("max_chain_width"),
            ..
        }
    )
}

#[cfg(test)]
mod tests {
    use super::width_of;

    #[test]
    fn the_outbox_has_a_few_seconds_but_never_the_requests_last_second() {
        use std::time::{Duration, Instant};
        let now = Instant::now();
        // A script that returned at its deadline: 5 s to send, unless its request ends first.
        let free = super::send_within(now, None);
        assert!(free > Duration::from_millis(4900), "{free:?}");
        let capped = super::send_within(now, Some(now + Duration::from_secs(1)));
        assert!(
            capped <= Duration::from_secs(2) && capped > Duration::from_millis(1900),
            "{capped:?}"
        );
        // Time left is time to send.
        let long = super::send_within(
            now + Duration::from_secs(9),
            Some(now + Duration::from_secs(20)),
        );
        assert!(long > Duration::from_millis(8900), "{long:?}");
    }

    #[test]
    fn a_message_runs_within_its_width_and_the_tenants() {
        assert_eq!(width_of(None, 10), 10);
        assert_eq!(width_of(Some(3), 10), 3);
        assert_eq!(width_of(Some(0), 10), 1);
        assert_eq!(width_of(Some(u32::MAX), 10), 10);
    }
}
