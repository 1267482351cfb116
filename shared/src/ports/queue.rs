//! The queue port: at-least-once messages with delay, visibility timeout, receive count and a
//! dead-letter place, as SQS has them.

use async_trait::async_trait;

use crate::Result;

/// The longest delay a message can have, in seconds (SQS's limit).
pub const MAX_DELAY_S: u32 = 900;

/// Seconds before a message that failed is received again: the visibility timeout of the
/// deployment's queues (`VisibilityTimeout` in `template.yaml`), which the embedded backend
/// follows on the project clock so that local retries come as they would on AWS.
pub const VISIBILITY_TIMEOUT_S: u32 = 360;

/// Receives after which a message that is still not deleted moves to the dead-letter place.
pub const MAX_RECEIVES: u32 = 5;

/// Which of the two queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueKind {
    /// S3-style object notifications, for the router.
    Events,
    /// Script messages: continuations and `native.queue.send`.
    Work,
}

impl QueueKind {
    /// The queue's name as shown to people.
    pub fn name(self) -> &'static str {
        match self {
            QueueKind::Events => "events",
            QueueKind::Work => "work",
        }
    }
}

/// A received message.
#[derive(Debug, Clone)]
pub struct Message {
    /// Stable id of the message.
    pub id: String,
    /// Handle for [`Queue::delete`] and [`Queue::retry_later`] of this receive.
    pub receipt: String,
    /// The body as sent.
    pub body: String,
    /// How many times it has been received, this time included (1 on first delivery).
    pub receive_count: u32,
}

/// A message that was received [`MAX_RECEIVES`] times without being deleted.
#[derive(Debug, Clone)]
pub struct DeadLetter {
    /// Stable id of the message.
    pub id: String,
    /// The body as sent.
    pub body: String,
    /// How many times it was received.
    pub receive_count: u32,
    /// The last error recorded with [`Queue::retry_later`], where the backend keeps it.
    pub last_error: Option<String>,
}

/// What a queue holds, for draining and for people.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Messages that can be received now.
    pub visible: u64,
    /// Messages delayed or in flight (received, not yet deleted or visible again).
    pub waiting: u64,
    /// Of `waiting`, those received before: in flight, or failed and waiting for their retry a
    /// visibility timeout later. The rest were sent with a delay.
    pub received: u64,
    /// Messages in the dead-letter place.
    pub dead: u64,
}

/// Two at-least-once queues.
#[async_trait]
pub trait Queue: std::fmt::Debug + Send + Sync {
    /// Sends a message, visible after `delay_s` (at most [`MAX_DELAY_S`]).
    async fn send(&self, queue: QueueKind, body: String, delay_s: u32) -> Result<()>;

    /// Receives up to `max` (1 to 10) visible messages and hides them for `visibility_s`.
    async fn receive(
        &self,
        queue: QueueKind,
        max: usize,
        visibility_s: u32,
    ) -> Result<Vec<Message>>;

    /// Deletes a received message: it was handled.
    async fn delete(&self, queue: QueueKind, receipt: &str) -> Result<()>;

    /// Deletes received messages handled together (a drain pass's): one result per receipt,
    /// in their order, each as [`Queue::delete`] would answer it. A backend that can deletes
    /// them in one request or one commit; by default each is deleted in turn.
    async fn delete_many(&self, queue: QueueKind, receipts: &[String]) -> Vec<Result<()>> {
        let mut out = Vec::with_capacity(receipts.len());
        for r in receipts {
            out.push(self.delete(queue, r).await);
        }
        out
    }

    /// Makes a received message visible again after `delay_s`, recording why it failed where the
    /// backend can keep that.
    async fn retry_later(
        &self,
        queue: QueueKind,
        receipt: &str,
        delay_s: u32,
        error: &str,
    ) -> Result<()>;

    /// Keeps a received message hidden for `visibility_s` from now: its receiver is still at
    /// it and extends its lease. With 0 the receiver gives it back unhandled: visible now, and
    /// where the backend can, this receive does not count toward the dead-letter limit.
    async fn hold(&self, queue: QueueKind, receipt: &str, visibility_s: u32) -> Result<()>;

    /// Counts what the queue holds.
    async fn stats(&self, queue: QueueKind) -> Result<QueueStats>;

    /// Lists up to `max` dead letters of the queue without removing them.
    async fn dead_letters(&self, queue: QueueKind, max: usize) -> Result<Vec<DeadLetter>>;

    /// Puts a message that can never succeed (malformed, for an unknown tenant, past the
    /// chain depth) straight into `queue`'s dead-letter place with `error` beside it, so that
    /// it is not received again; the caller then lets the original go. A backend that cannot
    /// returns an error, and the message takes the ordinary retries.
    async fn dead_letter_now(&self, queue: QueueKind, body: &str, error: &str) -> Result<()> {
        let _ = (body, error);
        Err(crate::Error::InvalidInput(format!(
            "this backend cannot dead-letter a message of the {} queue directly",
            queue.name()
        )))
    }

    /// Moves up to `max` dead letters whose body `keep` accepts back to the queue, visible now
    /// and with a fresh receive count (their cause is fixed: they get five attempts again).
    /// At least once: a message is sent back before it leaves the dead letters. Returns how many
    /// moved; the rest stay where they are.
    async fn redrive(&self, queue: QueueKind, keep: &Keep<'_>, max: usize) -> Result<u64>;

    /// Makes the writes that this backend answered before syncing them (inside
    /// [`super::durability::deferring`]) durable. The default: every write is durable when it
    /// returns.
    async fn flush(&self) -> Result<()> {
        Ok(())
    }

    /// Whether [`Self::flush`] may have anything to do: false lets a caller skip it and the
    /// boxed future every call of it costs (three a request served). The default, true, is
    /// right for any backend; one that never defers a write, or knows that nothing is
    /// pending, says false.
    fn may_need_flush(&self) -> bool {
        true
    }
}

/// Which dead letters [`Queue::redrive`] moves, by body.
pub type Keep<'a> = dyn Fn(&str) -> bool + Send + Sync + 'a;

#[cfg(test)]
mod tests {
    /// The local retry delay is the deployment's: every queue of the template has this
    /// visibility timeout.
    #[test]
    fn the_visibility_timeout_is_the_templates() {
        let template = include_str!("../../../template.yaml");
        let timeouts: Vec<&str> = template
            .lines()
            .filter_map(|l| l.trim().strip_prefix("VisibilityTimeout:"))
            .map(str::trim)
            .collect();
        assert!(
            !timeouts.is_empty(),
            "template.yaml sets no VisibilityTimeout"
        );
        for t in timeouts {
            assert_eq!(t, super::VISIBILITY_TIMEOUT_S.to_string());
        }
    }
}
