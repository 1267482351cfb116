//! The one error type of the core crate. Backend-private errors map into it so that callers can
//! tell a missing object from a failed precondition from a breached limit without parsing text.

use std::error::Error as _;
use std::fmt;

/// Result with the core [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in native's core, by kind.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A thing that was addressed does not exist (a script, a tenant, a bucket name).
    #[error("{what} not found{}", with_hint(hint))]
    NotFound {
        /// What was looked for, e.g. `script "ack" of tenant "acme"`.
        what: String,
        /// What to do about it.
        hint: String,
        /// Which kind of thing it is, where a caller decides on it.
        missing: Missing,
    },
    /// A create-only write found the item or object already there.
    #[error("{what} already exists")]
    AlreadyExists {
        /// What was written.
        what: String,
    },
    /// A conditional write found a different version than the caller expected.
    #[error("precondition failed: {what}")]
    Precondition {
        /// What the condition was about.
        what: String,
    },
    /// A tenant limit was breached.
    #[error("limit {limit} exceeded: {detail}")]
    LimitExceeded {
        /// The name of the limit as written in the tenant config, e.g. `max_data_ops`.
        limit: &'static str,
        /// The figures: what was used and what is allowed.
        detail: String,
    },
    /// Too much is running at once (a tenant's `max_concurrent`, or the process's own cap):
    /// nothing was done; the same request succeeds later.
    #[error("busy: {what}; retry in {retry_after_s} s")]
    Busy {
        /// What is full, with its figures.
        what: String,
        /// When to try again, in seconds.
        retry_after_s: u32,
    },
    /// Input that can never succeed: a bad key, a malformed event, an unknown option.
    #[error("{0}")]
    InvalidInput(String),
    /// A configuration file is wrong; names the file, the field and why.
    #[error("{file}: {}{why}", field_part(field))]
    Config {
        /// The file, relative to the project or the scripts bucket.
        file: String,
        /// The field, as a dotted path (`limits.max_data_ops`), or `-` for the whole file.
        field: String,
        /// What is wrong and what would be right.
        why: String,
    },
    /// A script raised an error, or breached a limit while running.
    #[error("script \"{script}\" of tenant \"{tenant}\" failed: {message}")]
    Script {
        /// The tenant.
        tenant: String,
        /// The script name (without `.luau`).
        script: String,
        /// The message, starting with `<script>.luau:<line>:` where Luau knows the line.
        message: String,
        /// Why it failed, recorded where it happened: what the engine (VM reuse), the runtime
        /// (metrics) and inbound HTTP (the status) decide on. The message is for people only.
        cause: Cause,
    },
    /// The invocation ran past its deadline.
    #[error("timeout: {0}")]
    Timeout(String),
    /// A backend failed in a way the caller cannot fix (I/O, the network, the service).
    #[error("{backend} backend: {message}")]
    Backend {
        /// Which backend: `embedded`, `s3`, `dynamodb`, `sqs`.
        backend: &'static str,
        /// What failed.
        message: String,
        /// The underlying error, kept for its kind.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// Local storage (the embedded backend's folder) failed: the message names the file, the
    /// cause and what to do; `fault` tells the kind (a full disk is not a damaged database).
    #[error("{message}")]
    Storage {
        /// What kind of failure.
        fault: StorageFault,
        /// The file or folder concerned.
        path: String,
        /// The whole message: the file, the cause, what to do.
        message: String,
    },
    /// Another call holds the work for a moment (a barrier's dispatch claim); the same call
    /// succeeds after `retry_after_s`. Not the caller's fault: HTTP 503 with `Retry-After`.
    #[error("{what}; retry in {retry_after_s} s")]
    Held {
        /// What is held and by whom.
        what: String,
        /// Seconds until a retry can succeed.
        retry_after_s: u32,
    },
}

/// What an [`Error::NotFound`] did not find, where callers decide on it (never read from
/// `what`, which is for people).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// A tenant: a queued message for it can never succeed.
    Tenant,
    /// A rendezvous namespace.
    Namespace,
    /// A rendezvous barrier (of a namespace that is there).
    Rendezvous,
    /// Anything else (a script, a bucket, a key, a barrier).
    Other,
}

/// The kinds of [`Error::Storage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageFault {
    /// The file system is full (`ENOSPC`, SQLite's `SQLITE_FULL`): HTTP 507.
    NoSpace,
    /// The folder or a file in it cannot be written (read-only file system, permissions).
    ReadOnly,
    /// The database file is damaged, truncated or not a database.
    Corrupt,
    /// The database is empty although the folder holds a project's state: it was lost.
    Empty,
    /// An object's content does not match its size or digest.
    Damaged,
    /// Any other I/O failure.
    Io,
}

/// Why a script failed ([`Error::Script`]), as data.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The script raised an error or returned something that cannot be used: its own fault,
    /// and HTTP 500.
    Raised,
    /// A tenant limit was breached, named as in the tenant config (`max_data_ops`,
    /// `timeout_s`): HTTP 429, counted as a limit breach, the VM not reused.
    Limit(&'static str),
    /// Another call holds the work for a moment ([`Error::Held`]): HTTP 503, and the same call
    /// succeeds after `retry_after_s`.
    Held {
        /// Seconds until a retry can succeed.
        retry_after_s: u32,
    },
    /// A backend failed or did not answer in time: HTTP 503, retry later.
    Unavailable,
    /// Local storage failed ([`Error::Storage`]); a full disk is HTTP 507.
    Storage(StorageFault),
}

impl Cause {
    /// The cause of a script's failure when `e`, raised by a host function, is what ended it.
    pub fn of(e: &Error) -> Cause {
        match e {
            Error::LimitExceeded { limit, .. } => Cause::Limit(limit),
            Error::Held { retry_after_s, .. } => Cause::Held {
                retry_after_s: *retry_after_s,
            },
            Error::Backend { .. } => Cause::Unavailable,
            Error::Storage { fault, .. } => Cause::Storage(*fault),
            Error::Script { cause, .. } => *cause,
            _ => Cause::Raised,
        }
    }
}

fn with_hint(h: &str) -> String {
    if h.is_empty() {
        String::new()
    } else {
        format!(": {h}")
    }
}

impl Error {
    /// A [`Error::NotFound`] without a hint.
    pub fn not_found(what: impl fmt::Display) -> Self {
        Error::NotFound {
            what: what.to_string(),
            hint: String::new(),
            missing: Missing::Other,
        }
    }

    /// A [`Error::NotFound`] of a kind callers decide on, without a hint.
    pub fn missing(missing: Missing, what: impl fmt::Display) -> Self {
        Error::NotFound {
            what: what.to_string(),
            hint: String::new(),
            missing,
        }
    }

    /// The [`Error::NotFound`] of a tenant that does not exist, with what to do about it.
    pub fn no_tenant(tenant: &str, hint: impl Into<String>) -> Self {
        Error::NotFound {
            what: format!("tenant {tenant:?}"),
            hint: hint.into(),
            missing: Missing::Tenant,
        }
    }

    /// A [`Error::Script`] that the script caused itself ([`Cause::Raised`]).
    pub fn script(
        tenant: impl Into<String>,
        script: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Error::Script {
            tenant: tenant.into(),
            script: script.into(),
            message: message.into(),
            cause: Cause::Raised,
        }
    }

    /// A [`Error::Backend`] from any error.
    pub fn backend(
        backend: &'static str,
        message: impl fmt::Display,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Error::Backend {
            backend,
            message: message.to_string(),
            source: Some(source.into()),
        }
    }

    /// A [`Error::Config`]; `field` `-` stands for the whole file (and is not shown).
    pub fn config(
        file: impl fmt::Display,
        field: impl fmt::Display,
        why: impl fmt::Display,
    ) -> Self {
        Error::Config {
            file: file.to_string(),
            field: field.to_string(),
            why: why.to_string(),
        }
    }

    /// A copy of this error for a second caller (a failed group commit answers every request
    /// of its group): kind and message kept, the source as text.
    pub fn again(&self) -> Error {
        match self {
            Error::Storage {
                fault,
                path,
                message,
            } => Error::Storage {
                fault: *fault,
                path: path.clone(),
                message: message.clone(),
            },
            Error::Held {
                what,
                retry_after_s,
            } => Error::Held {
                what: what.clone(),
                retry_after_s: *retry_after_s,
            },
            Error::Backend {
                backend, message, ..
            } => Error::Backend {
                backend,
                message: match self.source() {
                    Some(s) => format!("{message}: {s}"),
                    None => message.clone(),
                },
                source: None,
            },
            Error::InvalidInput(m) => Error::InvalidInput(m.clone()),
            other => Error::Backend {
                backend: "embedded",
                message: other.to_string(),
                source: None,
            },
        }
    }

    /// Whether retrying the same work later may succeed. Config and input errors never do; a
    /// script error may (it may depend on data that changes), so queues retry it up to the
    /// dead-letter limit.
    pub fn is_retryable(&self) -> bool {
        !matches!(self, Error::InvalidInput(_) | Error::Config { .. })
    }
}

/// How a config error shows its field: `limits.timeout_s: `, or nothing for the whole file.
fn field_part(field: &str) -> String {
    if field == "-" || field.is_empty() {
        String::new()
    } else {
        format!("{field}: ")
    }
}
