//! The AWS backend: the ports over S3 ([`S3Objects`]), DynamoDB ([`DynamoKv`]), SQS
//! ([`SqsQueues`]) and Secrets Manager ([`SecretsVault`]), tenants from the scripts bucket ([`S3Tenants`]), the typed configuration of
//! a function ([`AwsConfig`]) and the Lambda handlers ([`lambda`]).
//!
//! Built behind the `aws` cargo feature. The SDK is used with lean features: one HTTP client
//! (hyper with rustls on ring, built here), no aws-lc. Endpoints, region and credentials come
//! from the usual `AWS_*` variables, so `AWS_ENDPOINT_URL` points every client at an emulator.

mod config;
pub mod deployed;
mod dynamodb;
mod dynamodb_tally;
pub mod lambda;
mod lazy;
mod s3;
mod scripts;
pub mod signed;
mod sqs;
mod tenant_scope;
mod vault;

use std::sync::Arc;
use std::time::Duration;

pub use config::{AwsConfig, ENV_FILE};
pub use dynamodb::DynamoKv;
pub use lazy::LazyClient;
pub use s3::S3Objects;
pub use scripts::{upload_tenant, S3Tenants, RECHECK_EVERY};
pub use sqs::{QueueUrls, SqsQueues};
pub use tenant_scope::{StsTenantScope, REFRESH_MARGIN, SESSION_SECONDS};
pub use vault::{SecretsVault, CACHE_FOR};

pub use aws_config::SdkConfig;

use aws_config::BehaviorVersion;
use aws_smithy_http_client::tls;
use aws_smithy_runtime_api::client::connector_metadata::ConnectorMetadata;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnectorSettings, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;

use crate::ports::Backends;
use crate::Error;

/// Gives the loader the SDK's HTTP client: hyper with rustls on ring, the only TLS stack in
/// the build, made on first use ([`LazyHttps`]), and the timeouts of every call ([`timeouts`]).
fn with_http_client(loader: aws_config::ConfigLoader) -> aws_config::ConfigLoader {
    loader
        .http_client(SharedHttpClient::new(LazyHttps::default()))
        .timeout_config(timeouts())
}

/// How long a connection may take to open ([`timeouts`]).
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(3100);
/// How long a connection may stay silent while an answer is awaited or read.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one attempt of a call may take, its answer read.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(6);
/// How long a call may take with its retries: under a function's 25 s, so that a held backend
/// fails the call (a retryable error) while the function can still answer.
pub const OPERATION_TIMEOUT: Duration = Duration::from_secs(15);

/// Every SDK call's deadlines (issue 50: without them a held request waited 60 s and more,
/// past the invocation's deadline and the function's). The invocation's own deadline bounds a
/// script's calls sooner ([`crate::host::Invocation::block_on`]); these bound every other wait
/// (the tenant's load, STS, an API key's lookup, the tick).
pub fn timeouts() -> aws_config::timeout::TimeoutConfig {
    aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(READ_TIMEOUT)
        .operation_attempt_timeout(ATTEMPT_TIMEOUT)
        .operation_timeout(OPERATION_TIMEOUT)
        .build()
}

/// The SDK's HTTPS client, made when the first request needs a connection rather than when
/// each SDK client is built.
///
/// The SDK's own client loads the system's root certificates and builds a TLS configuration
/// from them in `validate_base_client_config`, which every SDK client calls as it is made:
/// five times before a function's first poll for an event (S3, DynamoDB, SQS, Secrets Manager,
/// STS), each parsing every certificate again. That was most of a cold start (BENCHMARKS.md,
/// Lambda binaries and cold start). Made here once, on the first request, and shared by every
/// client built from the same configuration; the first event pays one build, no client pays
/// more.
#[derive(Debug, Default)]
struct LazyHttps {
    inner: std::sync::OnceLock<SharedHttpClient>,
}

impl HttpClient for LazyHttps {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        self.inner
            .get_or_init(|| {
                aws_smithy_http_client::Builder::new()
                    .tls_provider(tls::Provider::Rustls(
                        tls::rustls_provider::CryptoMode::Ring,
                    ))
                    .build_https()
            })
            .http_connector(settings, components)
    }

    fn connector_metadata(&self) -> Option<ConnectorMetadata> {
        // What the SDK's client says of itself, for the user agent.
        Some(ConnectorMetadata::new("hyper", Some("1.x".into())))
    }
}

/// Loads the SDK configuration from the environment (`AWS_REGION`, credentials,
/// `AWS_ENDPOINT_URL`, ...), as Lambda sets it.
///
/// Where the environment holds keys and a region (a Lambda function's always does), they are
/// given to the loader as they are: the SDK's default chains would pick them first anyway, but
/// building those chains cost a start more than an SDK client does (BENCHMARKS.md, Lambda
/// binaries and cold start): the web identity link makes an STS client of its own, the instance
/// metadata links an HTTP client each. Elsewhere (a container's credentials endpoint, profiles)
/// the default chains run as usual.
pub async fn load_sdk_config() -> SdkConfig {
    let set = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let mut loader = with_http_client(aws_config::defaults(BehaviorVersion::latest()));
    if set("AWS_ACCESS_KEY_ID").is_some() && set("AWS_SECRET_ACCESS_KEY").is_some() {
        loader = loader.credentials_provider(
            aws_config::environment::EnvironmentVariableCredentialsProvider::new(),
        );
    }
    if let Some(region) = set("AWS_REGION") {
        loader = loader.region(aws_config::Region::new(region));
    }
    loader.load().await
}

/// An SDK configuration for an emulator at `endpoint` (moto, LocalStack): static test keys,
/// `us-east-1`, nothing read from the environment or instance metadata.
pub async fn emulator_sdk_config(endpoint: &str) -> SdkConfig {
    let creds = aws_sdk_s3::config::Credentials::new("testing", "testing", None, None, "static");
    with_http_client(aws_config::defaults(BehaviorVersion::latest()))
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(creds)
        .endpoint_url(endpoint)
        .load()
        .await
}

/// The three SDK clients, built once per process and shared.
#[derive(Debug, Clone)]
pub struct Clients {
    /// S3.
    pub s3: aws_sdk_s3::Client,
    /// DynamoDB.
    pub dynamodb: aws_sdk_dynamodb::Client,
    /// SQS.
    pub sqs: aws_sdk_sqs::Client,
    /// Secrets Manager (the vault).
    pub secrets: aws_sdk_secretsmanager::Client,
}

impl Clients {
    /// Clients from an SDK configuration, made now (tools and tests; functions make theirs on
    /// first use, [`backends_on_first_use`]). S3 as [`s3_client`] makes it.
    pub fn new(sdk: &SdkConfig) -> Self {
        Clients {
            s3: s3_client(sdk),
            dynamodb: aws_sdk_dynamodb::Client::new(sdk),
            sqs: aws_sdk_sqs::Client::new(sdk),
            secrets: aws_sdk_secretsmanager::Client::new(sdk),
        }
    }

    /// The ports over these clients, as `config` names the table, queues and vault prefix.
    pub fn backends(&self, config: &AwsConfig) -> Backends {
        Backends {
            objects: Arc::new(S3Objects::new(self.s3.clone())),
            kv: Arc::new(DynamoKv::new(self.dynamodb.clone(), &config.table)),
            queue: Arc::new(SqsQueues::new(self.sqs.clone(), queue_urls(config))),
            vault: Arc::new(SecretsVault::new(
                self.secrets.clone(),
                &config.vault_prefix,
            )),
        }
    }
}

/// The ports as a function holds them: each over a client made from `sdk` when first used
/// ([`LazyClient`]), so a start makes none and a process makes only those its events use.
pub fn backends_on_first_use(sdk: &SdkConfig, config: &AwsConfig) -> Backends {
    let (s3, dynamodb, sqs, secrets) = (sdk.clone(), sdk.clone(), sdk.clone(), sdk.clone());
    Backends {
        objects: Arc::new(S3Objects::on_first_use(move || s3_client(&s3))),
        kv: Arc::new(DynamoKv::on_first_use(
            move || aws_sdk_dynamodb::Client::new(&dynamodb),
            &config.table,
        )),
        queue: Arc::new(SqsQueues::on_first_use(
            move || aws_sdk_sqs::Client::new(&sqs),
            queue_urls(config),
        )),
        vault: Arc::new(SecretsVault::on_first_use(
            move || aws_sdk_secretsmanager::Client::new(&secrets),
            &config.vault_prefix,
        )),
    }
}

/// An S3 client of `sdk`; with an endpoint override (an emulator), path-style addressing,
/// which emulators serve without wildcard DNS.
fn s3_client(sdk: &SdkConfig) -> aws_sdk_s3::Client {
    let config = aws_sdk_s3::config::Builder::from(sdk)
        .force_path_style(sdk.endpoint_url().is_some())
        .build();
    aws_sdk_s3::Client::from_conf(config)
}

/// The queues `config` names.
fn queue_urls(config: &AwsConfig) -> QueueUrls {
    QueueUrls {
        events: config.events_queue_url.clone(),
        work: config.work_queue_url.clone(),
        events_dlq: config.events_dlq_url.clone(),
        work_dlq: config.work_dlq_url.clone(),
    }
}

/// Turns an SDK error into a [`Error::Backend`] whose message reads: what failed, then the
/// service's error code and message (`NoSuchBucket: The specified bucket does not exist`), or
/// the chain of causes of a failure on the way (`dispatch failure: ...: connection closed
/// before message completed`, `request has timed out: ...`). No `Debug` dump of the SDK's
/// error (request ids, headers): that stays in the error's source, for the log.
pub(crate) fn sdk_err<E>(backend: &'static str, what: impl std::fmt::Display, e: E) -> Error
where
    E: std::error::Error + Send + Sync + 'static,
{
    let detail = describe(&e);
    Error::backend(backend, format!("{what}: {detail}"), e)
}

/// The readable text of an SDK error: see [`sdk_err`].
fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    use aws_sdk_s3::error::ErrorMetadata;
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(meta) = err.downcast_ref::<ErrorMetadata>() {
            // The service's own answer: its code and message say it all.
            let said = match (meta.code(), meta.message()) {
                (Some(c), Some(m)) => format!("{c}: {m}"),
                (Some(c), None) => c.to_string(),
                (None, Some(m)) => m.to_string(),
                (None, None) => "the service answered with an error and no code".into(),
            };
            parts.retain(|p| !p.starts_with("unhandled error") && p != "service error");
            parts.push(said);
            break;
        }
        let text = err.to_string();
        // A modeled error's text (`Code: message`) is whole: the wrapper's "service error"
        // adds nothing.
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = err.source();
    }
    if parts.len() > 1 && parts[0] == "service error" {
        parts.remove(0);
    }
    crate::text::cut_text(parts.join(": "), 600)
}

/// A random version token.
pub(crate) fn token() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// The SDK crates this backend is built on, for callers that manage resources themselves
/// (bucket notifications, queue and table setup in tests, uploads in the CLI).
pub mod sdk {
    pub use aws_sdk_dynamodb as dynamodb;
    pub use aws_sdk_s3 as s3;
    pub use aws_sdk_secretsmanager as secretsmanager;
    pub use aws_sdk_sqs as sqs;
    pub use aws_sdk_sts as sts;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// An HTTP client that counts the SDK clients built over it (each calls
    /// `validate_base_client_config` once as it is made) and connects nowhere.
    #[derive(Debug, Default)]
    struct Counting(Arc<AtomicUsize>);

    impl HttpClient for Counting {
        fn http_connector(
            &self,
            settings: &HttpConnectorSettings,
            components: &RuntimeComponents,
        ) -> SharedHttpConnector {
            LazyHttps::default().http_connector(settings, components)
        }

        fn validate_base_client_config(
            &self,
            _: &aws_sdk_s3::config::RuntimeComponentsBuilder,
            _: &aws_sdk_s3::config::ConfigBag,
        ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    fn counted_sdk() -> (SdkConfig, Arc<AtomicUsize>) {
        let made = Arc::new(AtomicUsize::new(0));
        let sdk = SdkConfig::builder()
            .http_client(SharedHttpClient::new(Counting(made.clone())))
            .behavior_version(BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(
                aws_credential_types::provider::SharedCredentialsProvider::new(
                    aws_sdk_s3::config::Credentials::new("k", "s", None, None, "test"),
                ),
            )
            .build();
        (sdk, made)
    }

    fn config() -> AwsConfig {
        config::tests::vars(&[]).unwrap()
    }

    #[test]
    fn a_function_start_makes_no_sdk_client() {
        let (sdk, made) = counted_sdk();
        let config = config();
        let backends = backends_on_first_use(&sdk, &config);
        let scope = StsTenantScope::new(&sdk, "arn:aws:iam::123456789012:role/t", &config);
        assert_eq!(made.load(Ordering::SeqCst), 0, "no client made at start");
        // What an eager start made, for comparison: one per service.
        let _ = Clients::new(&sdk);
        assert_eq!(made.load(Ordering::SeqCst), 4);
        drop((backends, scope));
    }

    #[test]
    fn a_port_makes_its_client_on_first_use_once() {
        let (sdk, made) = counted_sdk();
        let objects = S3Objects::on_first_use(move || s3_client(&sdk));
        assert_eq!(made.load(Ordering::SeqCst), 0);
        let again = objects.clone();
        let _ = objects.client();
        let _ = again.client();
        let _ = objects.client().config();
        assert_eq!(
            made.load(Ordering::SeqCst),
            1,
            "made once, shared by clones"
        );
    }
}
