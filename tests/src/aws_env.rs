//! AWS resources in the emulator (moto) for tests: buckets, queues with dead-letter queues, the
//! table and S3 → SQS notifications as `template.yaml` makes them, and [`stack`], which builds a
//! whole deployment's worth of them and the [`Backends`] over it.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use native_core::aws::sdk::{dynamodb, s3, sqs};
use native_core::aws::{AwsConfig, Clients};
use native_core::config::Deployment;
use native_core::ports::{Backends, Item, ItemPage, KvStore, NewItem, PutMode, TxOp, TxPlan};
use native_core::Result;
use serde_json::json;

/// A message received from SQS as Lambda's event source mapping hands it to a function: its
/// id, receipt, body and system attributes (the receive count among them).
pub fn lambda_record(m: &sqs::types::Message) -> native_core::aws::lambda::SqsMessage {
    let mut r = native_core::aws::lambda::SqsMessage::default();
    r.message_id = m.message_id().map(str::to_string);
    r.receipt_handle = m.receipt_handle().map(str::to_string);
    r.body = m.body().map(str::to_string);
    r.attributes = m
        .attributes()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str().to_string(), v.clone()))
        .collect();
    r.event_source = Some("aws:sqs".into());
    r
}

/// A name unique to this run, valid for buckets, queues and tables.
pub fn unique(what: &str) -> String {
    format!("nt-{what}-{:08x}", rand_u32())
}

fn rand_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    h.finish() as u32
}

/// SDK clients for the emulator at `endpoint`.
pub async fn clients(endpoint: &str) -> Clients {
    Clients::new(&native_core::aws::emulator_sdk_config(endpoint).await)
}

/// Makes a bucket.
pub async fn make_bucket(c: &Clients, name: &str) {
    c.s3.create_bucket().bucket(name).send().await.unwrap();
}

/// A queue with a dead-letter queue after 5 receives, as the SAM template makes them.
/// Returns (url, arn, dlq url).
pub async fn make_queue(c: &Clients, name: &str) -> (String, String, String) {
    let arn_of = |url: String| async move {
        let out = c
            .sqs
            .get_queue_attributes()
            .queue_url(&url)
            .attribute_names(sqs::types::QueueAttributeName::QueueArn)
            .send()
            .await
            .unwrap();
        out.attributes().unwrap()[&sqs::types::QueueAttributeName::QueueArn].clone()
    };
    let dlq = c
        .sqs
        .create_queue()
        .queue_name(format!("{name}-dlq"))
        .send()
        .await
        .unwrap()
        .queue_url()
        .unwrap()
        .to_string();
    let dlq_arn = arn_of(dlq.clone()).await;
    let url = c
        .sqs
        .create_queue()
        .queue_name(name)
        .attributes(
            sqs::types::QueueAttributeName::RedrivePolicy,
            json!({ "deadLetterTargetArn": dlq_arn, "maxReceiveCount": 5 }).to_string(),
        )
        .attributes(sqs::types::QueueAttributeName::VisibilityTimeout, "30")
        .send()
        .await
        .unwrap()
        .queue_url()
        .unwrap()
        .to_string();
    let arn = arn_of(url.clone()).await;
    (url, arn, dlq)
}

/// The table as the SAM template makes it: `pk`/`sk` strings, TTL on `ttl`.
pub async fn make_table(c: &Clients, name: &str) {
    use dynamodb::types::*;
    c.dynamodb
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("pk")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("sk")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("pk")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("sk")
                .key_type(KeyType::Range)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    c.dynamodb
        .update_time_to_live()
        .table_name(name)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .attribute_name("ttl")
                .enabled(true)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
}

/// Makes `bucket` notify the queue `queue_arn` of created objects, optionally only for keys
/// ending in `suffix`.
pub async fn notify(c: &Clients, bucket: &str, queue_arn: &str, suffix: Option<&str>) {
    use s3::types::*;
    let mut qc = QueueConfiguration::builder()
        .queue_arn(queue_arn)
        .events(Event::S3ObjectCreated);
    if let Some(sfx) = suffix {
        qc = qc.filter(
            NotificationConfigurationFilter::builder()
                .key(
                    S3KeyFilter::builder()
                        .filter_rules(
                            FilterRule::builder()
                                .name(FilterRuleName::Suffix)
                                .value(sfx)
                                .build(),
                        )
                        .build(),
                )
                .build(),
        );
    }
    c.s3.put_bucket_notification_configuration()
        .bucket(bucket)
        .notification_configuration(
            NotificationConfiguration::builder()
                .queue_configurations(qc.build().unwrap())
                .build(),
        )
        .send()
        .await
        .unwrap();
}

/// A deployment made in the emulator by [`stack`].
#[derive(Debug, Clone)]
pub struct Stack {
    /// The emulator's endpoint.
    pub endpoint: String,
    /// The clients the backends use.
    pub clients: Clients,
    /// Table, queue and DLQ URLs, scripts bucket, and the deployment with the real bucket names.
    pub config: AwsConfig,
    /// The three ports over it.
    pub backends: Backends,
}

impl Stack {
    /// The deployment, with the real bucket names made for it.
    pub fn deployment(&self) -> &Deployment {
        &self.config.deployment
    }

    /// Another handle on the same table, queues and buckets, through clients of its own, as a
    /// second Lambda process would have.
    pub async fn another(&self) -> Backends {
        clients(&self.endpoint).await.backends(&self.config)
    }
}

/// A bucket name for a logical name: lowercase letters, digits and `-`.
fn bucket_part(logical: &str) -> String {
    logical
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// Builds in the emulator at `endpoint` what `template.yaml` deploys for `deployment`: a real
/// bucket of a unique name for each logical bucket and for the batch bucket, a scripts bucket,
/// the table (`pk`/`sk`, TTL), the events and work queues with dead-letter queues after 5
/// receives, every data bucket notifying the events queue of created objects and the batch
/// bucket notifying it for keys ending in `done.json` only. The `s3:TestEvent`s that S3 sends
/// when notifications are set are taken off the events queue, so that it starts empty.
pub async fn stack(endpoint: &str, deployment: &Deployment) -> Stack {
    let c = clients(endpoint).await;
    let s = unique("st");
    let table = format!("{s}-table");
    let scripts = format!("{s}-scripts");
    make_table(&c, &table).await;
    make_bucket(&c, &scripts).await;
    let (events_url, events_arn, events_dlq) = make_queue(&c, &format!("{s}-events")).await;
    let (work_url, _, work_dlq) = make_queue(&c, &format!("{s}-work")).await;

    let map: HashMap<&str, String> = deployment
        .buckets
        .map
        .keys()
        .map(|l| (l.as_str(), format!("{s}-d-{}", bucket_part(l))))
        .collect();
    for real in map.values() {
        make_bucket(&c, real).await;
        notify(&c, real, &events_arn, None).await;
    }
    let batch = deployment
        .batch
        .as_ref()
        .map(|b| (format!("{s}-batch"), b.prefix.clone()));
    if let Some((bucket, _)) = &batch {
        make_bucket(&c, bucket).await;
        notify(&c, bucket, &events_arn, Some("/done.json")).await;
    }

    let mut vars: HashMap<&str, String> = HashMap::from([
        ("NATIVE_TABLE", table),
        ("NATIVE_EVENTS_QUEUE_URL", events_url.clone()),
        ("NATIVE_WORK_QUEUE_URL", work_url),
        ("NATIVE_EVENTS_DLQ_URL", events_dlq),
        ("NATIVE_WORK_DLQ_URL", work_dlq),
        ("NATIVE_SCRIPTS_BUCKET", scripts),
        ("NATIVE_BUCKETS", json!(map).to_string()),
    ]);
    if let Some((bucket, prefix)) = batch {
        vars.insert("NATIVE_BATCH_BUCKET", bucket);
        vars.insert("NATIVE_BATCH_PREFIX", prefix);
    }
    let config = AwsConfig::from_vars(|n| vars.get(n).cloned()).unwrap();

    // Take moto's s3:TestEvents (one per notifying bucket) off the events queue.
    loop {
        let out = c
            .sqs
            .receive_message()
            .queue_url(&events_url)
            .max_number_of_messages(10)
            .visibility_timeout(30)
            .send()
            .await
            .unwrap();
        if out.messages().is_empty() {
            break;
        }
        for m in out.messages() {
            assert!(
                m.body().unwrap_or_default().contains("s3:TestEvent"),
                "only test events are expected on a new events queue: {m:?}"
            );
            c.sqs
                .delete_message()
                .queue_url(&events_url)
                .receipt_handle(m.receipt_handle().unwrap())
                .send()
                .await
                .unwrap();
        }
    }
    let backends = c.backends(&config);
    Stack {
        endpoint: endpoint.to_string(),
        clients: c,
        config,
        backends,
    }
}

/// Makes every call to the key-value store of the given handles wait for the previous one, with
/// one lock shared by all of them, so that each call is applied atomically.
///
/// DynamoDB applies each request atomically; moto does not when requests arrive concurrently
/// (its server is threaded and keeps no lock): a conditional put reads the item, evaluates the
/// condition and then writes, so two concurrent `attribute_not_exists` puts can both succeed;
/// and a cancelled `TransactWriteItems` restores a deep copy of the whole table taken when it
/// started, undoing writes that other requests made meanwhile. Tests that race calls against
/// moto wrap their handles in this, so that the calls of different callers still interleave
/// freely but each is atomic, as on AWS.
pub fn one_kv_call_at_a_time<const N: usize>(handles: [Backends; N]) -> [Backends; N] {
    let lock = Arc::new(tokio::sync::Mutex::new(()));
    handles.map(|b| Backends {
        kv: Arc::new(AtomicKv {
            kv: b.kv,
            lock: lock.clone(),
        }),
        ..b
    })
}

/// A key-value store whose calls hold a shared lock; see [`one_kv_call_at_a_time`].
#[derive(Debug)]
struct AtomicKv {
    kv: Arc<dyn KvStore>,
    lock: Arc<tokio::sync::Mutex<()>>,
}

#[async_trait]
impl KvStore for AtomicKv {
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>> {
        let _one = self.lock.lock().await;
        self.kv.get(pk, sk).await
    }
    async fn put_as(&self, item: NewItem, mode: PutMode, token: &str) -> Result<String> {
        let _one = self.lock.lock().await;
        self.kv.put_as(item, mode, token).await
    }
    async fn delete(&self, pk: &str, sk: &str, if_version: Option<&str>) -> Result<bool> {
        let _one = self.lock.lock().await;
        self.kv.delete(pk, sk, if_version).await
    }
    async fn query(
        &self,
        pk: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<ItemPage> {
        let _one = self.lock.lock().await;
        self.kv.query(pk, prefix, after, limit).await
    }
    async fn query_back(
        &self,
        pk: &str,
        prefix: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<ItemPage> {
        let _one = self.lock.lock().await;
        self.kv.query_back(pk, prefix, before, limit).await
    }
    async fn put_batch(&self, items: Vec<NewItem>) -> Result<()> {
        let _one = self.lock.lock().await;
        self.kv.put_batch(items).await
    }
    async fn transact_as(
        &self,
        ops: Vec<TxOp>,
        token: &str,
    ) -> Result<std::result::Result<(), usize>> {
        let _one = self.lock.lock().await;
        self.kv.transact_as(ops, token).await
    }
    async fn transact_on(
        &self,
        seen: Item,
        plan: TxPlan,
    ) -> Result<std::result::Result<(), usize>> {
        let _one = self.lock.lock().await;
        self.kv.transact_on(seen, plan).await
    }
    async fn tally(
        &self,
        op: native_core::ports::TallyOp,
    ) -> Result<native_core::ports::TallyAnswer> {
        let _one = self.lock.lock().await;
        self.kv.tally(op).await
    }
}
