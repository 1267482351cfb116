//! The queue port over two SQS standard queues (events, work), each with a dead-letter queue.
//! Messages are sent with their tenant as `MessageGroupId` (SQS fair queues on standard
//! queues, [`crate::ports::fair`]).
//!
//! The move to the dead-letter queue after [`crate::ports::MAX_RECEIVES`] receives is SQS's own
//! redrive policy (`maxReceiveCount` 5), set where the queues are made (the SAM template, the
//! tests); this backend only reads the dead-letter queue. Its URL comes from the configuration,
//! or else from the queue's `RedrivePolicy` attribute, looked up once.

use std::collections::HashSet;

use async_trait::async_trait;
use aws_sdk_sqs::error::ProvideErrorMetadata;
use aws_sdk_sqs::types::{
    DeleteMessageBatchRequestEntry, MessageSystemAttributeName, QueueAttributeName,
};
use tokio::sync::OnceCell;

use super::{sdk_err, LazyClient};
use crate::ports::{DeadLetter, Keep, Message, Queue, QueueKind, QueueStats, MAX_DELAY_S};
use crate::{Error, Result};

/// The queue URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueUrls {
    /// The events queue.
    pub events: String,
    /// The work queue.
    pub work: String,
    /// The events queue's dead-letter queue; read from its redrive policy when `None`.
    pub events_dlq: Option<String>,
    /// The work queue's dead-letter queue; read from its redrive policy when `None`.
    pub work_dlq: Option<String>,
}

/// The events and work queues in SQS.
#[derive(Debug)]
pub struct SqsQueues {
    client: LazyClient<aws_sdk_sqs::Client>,
    urls: QueueUrls,
    events_dlq: OnceCell<String>,
    work_dlq: OnceCell<String>,
}

/// The message attribute that holds why a message was dead-lettered at once.
pub const ERROR_ATTRIBUTE: &str = "native_error";
/// The longest error kept in it, in bytes (a message and its attributes hold 256 KB at most).
const MAX_ERROR_ATTRIBUTE_BYTES: usize = 8 * 1024;

/// Rounds of receives that [`Queue::dead_letters`] makes at most.
const PEEK_ROUNDS: usize = 10;
/// How long [`Queue::redrive`] hides a dead letter it is moving.
const MOVING_S: u32 = 30;

fn receipt_error<E: ProvideErrorMetadata>(e: &aws_sdk_sqs::error::SdkError<E>) -> bool {
    e.as_service_error()
        .and_then(|se| se.code())
        .is_some_and(is_receipt_code)
}

/// Whether SQS's error `code` says the receipt is no longer valid.
fn is_receipt_code(code: &str) -> bool {
    matches!(
        code,
        "ReceiptHandleIsInvalid"
            | "InvalidParameterValue"
            | "MessageNotInflight"
            | "AWS.SimpleQueueService.MessageNotInflight"
    )
}

fn bad_receipt(receipt: &str) -> Error {
    Error::Precondition {
        what: format!(
            "receipt {receipt:?} is no longer valid (the message was received again or deleted)"
        ),
    }
}

impl SqsQueues {
    /// The port over the queues at `urls`.
    pub fn new(client: aws_sdk_sqs::Client, urls: QueueUrls) -> Self {
        Self::over(LazyClient::ready(client), urls)
    }

    /// The port over the queues at `urls` with the client that `make` makes when it is first
    /// used ([`LazyClient`]).
    pub fn on_first_use(
        make: impl FnOnce() -> aws_sdk_sqs::Client + Send + 'static,
        urls: QueueUrls,
    ) -> Self {
        Self::over(LazyClient::on_first_use(make), urls)
    }

    fn over(client: LazyClient<aws_sdk_sqs::Client>, urls: QueueUrls) -> Self {
        let events_dlq = OnceCell::new_with(urls.events_dlq.clone());
        let work_dlq = OnceCell::new_with(urls.work_dlq.clone());
        SqsQueues {
            client,
            urls,
            events_dlq,
            work_dlq,
        }
    }

    /// One ReceiveMessage call with the receive count attribute; `what` says what failed.
    async fn receive_from(
        &self,
        url: &str,
        max: usize,
        visibility_s: u32,
        what: String,
    ) -> Result<Vec<aws_sdk_sqs::types::Message>> {
        let out = self
            .client
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(max.clamp(1, 10) as i32)
            .visibility_timeout(visibility_s.min(43_200) as i32)
            .wait_time_seconds(0)
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .message_attribute_names(ERROR_ATTRIBUTE)
            .send()
            .await
            .map_err(|e| sdk_err("sqs", what, e))?;
        Ok(out.messages.unwrap_or_default())
    }

    /// The URL of a queue.
    pub fn url(&self, queue: QueueKind) -> &str {
        match queue {
            QueueKind::Events => &self.urls.events,
            QueueKind::Work => &self.urls.work,
        }
    }

    /// The URL of a queue's dead-letter queue, from the configuration or its redrive policy.
    pub async fn dlq_url(&self, queue: QueueKind) -> Result<&str> {
        let cell = match queue {
            QueueKind::Events => &self.events_dlq,
            QueueKind::Work => &self.work_dlq,
        };
        cell.get_or_try_init(|| self.lookup_dlq(queue))
            .await
            .map(String::as_str)
    }

    async fn lookup_dlq(&self, queue: QueueKind) -> Result<String> {
        let url = self.url(queue);
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::RedrivePolicy)
            .send()
            .await
            .map_err(|e| sdk_err("sqs", format!("cannot read the redrive policy of {url}"), e))?;
        let no_policy = || {
            Error::Config {
            file: super::ENV_FILE.into(),
            field: format!("NATIVE_{}_DLQ_URL", queue.name().to_uppercase()),
            why: format!(
                "is not set and the {} queue {url} has no redrive policy with a deadLetterTargetArn; give the queue a dead-letter queue with maxReceiveCount 5 (the SAM template does)",
                queue.name()
            ),
        }
        };
        let policy = out
            .attributes()
            .and_then(|a| a.get(&QueueAttributeName::RedrivePolicy))
            .ok_or_else(no_policy)?;
        let arn = serde_json::from_str::<serde_json::Value>(policy)
            .ok()
            .and_then(|v| v["deadLetterTargetArn"].as_str().map(str::to_string))
            .ok_or_else(no_policy)?;
        // arn:aws:sqs:<region>:<account>:<name>
        let parts: Vec<&str> = arn.split(':').collect();
        let [.., account, name] = parts.as_slice() else {
            return Err(no_policy());
        };
        let out = self
            .client
            .get_queue_url()
            .queue_name(*name)
            .queue_owner_aws_account_id(*account)
            .send()
            .await
            .map_err(|e| sdk_err("sqs", format!("cannot find the dead-letter queue {arn}"), e))?;
        out.queue_url().map(str::to_string).ok_or_else(no_policy)
    }

    /// Visible, waiting (delayed or not visible) and not visible (received) messages.
    async fn counts(&self, url: &str) -> Result<(u64, u64, u64)> {
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesDelayed)
            .send()
            .await
            .map_err(|e| sdk_err("sqs", format!("cannot read the attributes of {url}"), e))?;
        let get = |n: QueueAttributeName| -> u64 {
            out.attributes()
                .and_then(|a| a.get(&n))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        let received = get(QueueAttributeName::ApproximateNumberOfMessagesNotVisible);
        Ok((
            get(QueueAttributeName::ApproximateNumberOfMessages),
            received + get(QueueAttributeName::ApproximateNumberOfMessagesDelayed),
            received,
        ))
    }
}

fn receive_count(m: &aws_sdk_sqs::types::Message) -> u32 {
    m.attributes()
        .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

#[async_trait]
impl Queue for SqsQueues {
    /// Every write is durable when its call returns: a flush has nothing to do.
    fn may_need_flush(&self) -> bool {
        false
    }

    async fn send(&self, queue: QueueKind, body: String, delay_s: u32) -> Result<()> {
        if delay_s > MAX_DELAY_S {
            return Err(Error::InvalidInput(format!(
                "delay of {delay_s} s is above the maximum of {MAX_DELAY_S} s"
            )));
        }
        let url = self.url(queue);
        // SQS fair queues: the tenant as the message group of a standard queue, so that one
        // tenant's backlog does not delay another's messages (crate::ports::fair).
        let group = crate::ports::fair::group_of(queue, &body);
        self.client
            .send_message()
            .queue_url(url)
            .message_body(body)
            .set_message_group_id(group)
            .delay_seconds(delay_s as i32)
            .send()
            .await
            .map_err(|e| {
                sdk_err(
                    "sqs",
                    format!("cannot send to the {} queue", queue.name()),
                    e,
                )
            })?;
        Ok(())
    }

    async fn receive(
        &self,
        queue: QueueKind,
        max: usize,
        visibility_s: u32,
    ) -> Result<Vec<Message>> {
        let what = format!("cannot receive from the {} queue", queue.name());
        let out = self
            .receive_from(self.url(queue), max, visibility_s, what)
            .await?;
        Ok(out
            .iter()
            .map(|m| Message {
                id: m.message_id().unwrap_or_default().to_string(),
                receipt: m.receipt_handle().unwrap_or_default().to_string(),
                body: m.body().unwrap_or_default().to_string(),
                receive_count: receive_count(m),
            })
            .collect())
    }

    async fn delete(&self, queue: QueueKind, receipt: &str) -> Result<()> {
        match self
            .client
            .delete_message()
            .queue_url(self.url(queue))
            .receipt_handle(receipt)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if receipt_error(&e) => Err(bad_receipt(receipt)),
            Err(e) => Err(sdk_err(
                "sqs",
                format!("cannot delete from the {} queue", queue.name()),
                e,
            )),
        }
    }

    /// `DeleteMessageBatch`, ten receipts a request.
    async fn delete_many(&self, queue: QueueKind, receipts: &[String]) -> Vec<Result<()>> {
        let mut out = Vec::with_capacity(receipts.len());
        for chunk in receipts.chunks(10) {
            let entries: Vec<_> = chunk
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    DeleteMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(r)
                        .build()
                })
                .collect::<std::result::Result<_, _>>()
                .unwrap_or_default();
            let sent = self
                .client
                .delete_message_batch()
                .queue_url(self.url(queue))
                .set_entries(Some(entries))
                .send()
                .await;
            let mut each: Vec<Option<Result<()>>> = chunk.iter().map(|_| None).collect();
            match sent {
                Ok(o) => {
                    // Each entry answers for the receipt at the index its id names.
                    let answers = (o.successful().iter().map(|ok| (ok.id(), None)))
                        .chain(o.failed().iter().map(|f| (f.id(), Some(f))));
                    for (id, failed) in answers {
                        let Some(i) = id.parse::<usize>().ok().filter(|i| *i < chunk.len()) else {
                            continue;
                        };
                        each[i] = Some(match failed {
                            None => Ok(()),
                            Some(f) if is_receipt_code(f.code()) => Err(bad_receipt(&chunk[i])),
                            Some(f) => Err(Error::Backend {
                                backend: "sqs",
                                message: format!(
                                    "cannot delete from the {} queue: {} ({})",
                                    queue.name(),
                                    f.message().unwrap_or("no message"),
                                    f.code()
                                ),
                                source: None,
                            }),
                        });
                    }
                }
                // The whole request failed (a malformed receipt among them fails it on some
                // endpoints): each is deleted alone, so that one bad receipt fails only itself.
                Err(_) => {
                    for (slot, r) in each.iter_mut().zip(chunk) {
                        *slot = Some(self.delete(queue, r).await);
                    }
                }
            }
            for (slot, r) in each.into_iter().zip(chunk) {
                out.push(slot.unwrap_or_else(|| {
                    Err(Error::Backend {
                        backend: "sqs",
                        message: format!(
                            "the {} queue did not answer for the delete of receipt {r:?}; it comes back after its visibility timeout",
                            queue.name()
                        ),
                        source: None,
                    })
                }));
            }
        }
        out
    }

    /// SQS keeps no error text with a message: `error` is not recorded (the function logs it).
    async fn retry_later(
        &self,
        queue: QueueKind,
        receipt: &str,
        delay_s: u32,
        _error: &str,
    ) -> Result<()> {
        match self
            .client
            .change_message_visibility()
            .queue_url(self.url(queue))
            .receipt_handle(receipt)
            .visibility_timeout(delay_s.min(43_200) as i32)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if receipt_error(&e) => Err(bad_receipt(receipt)),
            Err(e) => Err(sdk_err(
                "sqs",
                format!(
                    "cannot change a message's visibility in the {} queue",
                    queue.name()
                ),
                e,
            )),
        }
    }

    async fn hold(&self, queue: QueueKind, receipt: &str, visibility_s: u32) -> Result<()> {
        // SQS counts every receive; a visibility of 0 makes the message visible now.
        match self
            .client
            .change_message_visibility()
            .queue_url(self.url(queue))
            .receipt_handle(receipt)
            .visibility_timeout(visibility_s.min(43_200) as i32)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if receipt_error(&e) => Err(bad_receipt(receipt)),
            Err(e) => Err(sdk_err(
                "sqs",
                format!(
                    "cannot change a message's visibility in the {} queue",
                    queue.name()
                ),
                e,
            )),
        }
    }

    async fn stats(&self, queue: QueueKind) -> Result<QueueStats> {
        let (visible, waiting, received) = self.counts(self.url(queue)).await?;
        let dlq = self.dlq_url(queue).await?.to_string();
        let (dead_visible, dead_waiting, _) = self.counts(&dlq).await?;
        Ok(QueueStats {
            visible,
            waiting,
            received,
            dead: dead_visible + dead_waiting,
        })
    }

    /// Peeks at the dead-letter queue: receives with a visibility timeout of 0, so that every
    /// message stays there, until `max` distinct messages are seen or a round brings nothing
    /// new. Like every SQS receive this samples the queue: a large queue may need several calls.
    async fn dead_letters(&self, queue: QueueKind, max: usize) -> Result<Vec<DeadLetter>> {
        let dlq = self.dlq_url(queue).await?.to_string();
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for _ in 0..PEEK_ROUNDS {
            if out.len() >= max {
                break;
            }
            let what = format!("cannot read the {} dead-letter queue {dlq}", queue.name());
            // A visibility timeout of 0 leaves every message in place.
            let got = self.receive_from(&dlq, 10, 0, what).await?;
            let mut new = 0;
            for m in &got {
                let id = m.message_id().unwrap_or_default().to_string();
                if out.len() < max && seen.insert(id.clone()) {
                    new += 1;
                    out.push(DeadLetter {
                        id,
                        body: m.body().unwrap_or_default().to_string(),
                        // Receives in the source queue are not kept; a message lands here
                        // after its fifth.
                        receive_count: crate::ports::MAX_RECEIVES,
                        // Set when the runtime dead-lettered it at once (dead_letter_now).
                        last_error: m
                            .message_attributes()
                            .and_then(|a| a.get(ERROR_ATTRIBUTE))
                            .and_then(|v| v.string_value())
                            .map(str::to_string),
                    });
                }
            }
            if new == 0 {
                break;
            }
        }
        Ok(out)
    }

    async fn dead_letter_now(&self, queue: QueueKind, body: &str, error: &str) -> Result<()> {
        let dlq = self.dlq_url(queue).await?.to_string();
        let mut error = error.to_string();
        if error.len() > MAX_ERROR_ATTRIBUTE_BYTES {
            let mut cut = MAX_ERROR_ATTRIBUTE_BYTES;
            while !error.is_char_boundary(cut) {
                cut -= 1;
            }
            error.truncate(cut);
        }
        // SQS refuses an empty attribute value.
        if error.is_empty() {
            error.push('-');
        }
        let attribute = aws_sdk_sqs::types::MessageAttributeValue::builder()
            .data_type("String")
            .string_value(error)
            .build()
            .map_err(|e| Error::backend("sqs", "cannot build the error attribute", e))?;
        self.client
            .send_message()
            .queue_url(&dlq)
            .message_body(body)
            .message_attributes(ERROR_ATTRIBUTE, attribute)
            .send()
            .await
            .map_err(|e| {
                sdk_err(
                    "sqs",
                    format!(
                        "cannot dead-letter a message of the {} queue to {dlq}",
                        queue.name()
                    ),
                    e,
                )
            })?;
        Ok(())
    }

    /// Receives from the dead-letter queue, sends each message `keep` accepts to the queue and
    /// then deletes it from the dead letters (a crash in between leaves a duplicate, never a
    /// loss); others are made visible again at once. Not SQS's StartMessageMoveTask: that
    /// moves every message of the queue (no tenant filter) and runs in the background, and the
    /// emulator the tests use (moto) does not have it. Like every SQS receive this samples the
    /// queue: when dead letters remain after a run, run it again.
    async fn redrive(&self, queue: QueueKind, keep: &Keep<'_>, max: usize) -> Result<u64> {
        let dlq = self.dlq_url(queue).await?.to_string();
        let mut seen = HashSet::new();
        let mut moved = 0u64;
        // Each round receives up to 10; a round that brings nothing new ends it.
        for _ in 0..max.div_ceil(10).max(1) * 2 + PEEK_ROUNDS {
            if moved as usize >= max {
                break;
            }
            let what = format!("cannot read the {} dead-letter queue {dlq}", queue.name());
            let got = self.receive_from(&dlq, 10, MOVING_S, what).await?;
            let mut new = 0;
            for m in &got {
                let receipt = m.receipt_handle().unwrap_or_default();
                let body = m.body().unwrap_or_default();
                let fresh = seen.insert(m.message_id().unwrap_or_default().to_string());
                new += usize::from(fresh);
                if fresh && (moved as usize) < max && keep(body) {
                    self.send(queue, body.to_string(), 0).await?;
                    self.client
                        .delete_message()
                        .queue_url(&dlq)
                        .receipt_handle(receipt)
                        .send()
                        .await
                        .map_err(|e| {
                            sdk_err(
                                "sqs",
                                format!(
                                    "cannot delete from the {} dead-letter queue",
                                    queue.name()
                                ),
                                e,
                            )
                        })?;
                    moved += 1;
                } else {
                    self.client
                        .change_message_visibility()
                        .queue_url(&dlq)
                        .receipt_handle(receipt)
                        .visibility_timeout(0)
                        .send()
                        .await
                        .map_err(|e| {
                            sdk_err(
                                "sqs",
                                format!(
                                    "cannot release a message of the {} dead-letter queue",
                                    queue.name()
                                ),
                                e,
                            )
                        })?;
                }
            }
            if new == 0 {
                break;
            }
        }
        Ok(moved)
    }
}
