//! The error model of inbound HTTP: the Connect protocol's codes and statuses, as JSON
//! `{ "code": ..., "message": ... }`, and how each core [`Error`] maps onto one.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::Error;

/// A Connect error code (with the two that plain HTTP needs besides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// 400: the request can never succeed as it is.
    InvalidArgument,
    /// 400 with code `failed_precondition`: the state is not the one the request expects
    /// (a generation or version mismatch).
    FailedPrecondition,
    /// 401: no key, a malformed key, or a key that is not valid.
    Unauthenticated,
    /// 403: the key is valid but may not do this.
    PermissionDenied,
    /// 404: no such script (of the caller's tenant), or no such endpoint.
    NotFound,
    /// 409: a create found the thing already there.
    AlreadyExists,
    /// 429: a tenant limit was breached.
    ResourceExhausted,
    /// 413 with code `resource_exhausted`: the body is over the cap. Not 429, which tells
    /// clients to retry later: the same body never fits.
    PayloadTooLarge,
    /// 405 with code `unimplemented`: the path exists, the method does not.
    MethodNotAllowed,
    /// 404 with code `unimplemented`: no such RPC method (the Connect protocol's status).
    Unimplemented,
    /// 415 with code `unimplemented`: the request's Content-Type is not a form served.
    UnsupportedMediaType,
    /// 507 with code `resource_exhausted`: the server's disk is full.
    InsufficientStorage,
    /// 500: the script failed, or something unexpected.
    Internal,
    /// 503: a backend does not answer; retry later.
    Unavailable,
    /// 504: the deadline passed.
    DeadlineExceeded,
}

impl Code {
    /// The code as Connect spells it.
    pub fn name(self) -> &'static str {
        match self {
            Code::InvalidArgument => "invalid_argument",
            Code::FailedPrecondition => "failed_precondition",
            Code::Unauthenticated => "unauthenticated",
            Code::PermissionDenied => "permission_denied",
            Code::NotFound => "not_found",
            Code::AlreadyExists => "already_exists",
            Code::ResourceExhausted | Code::PayloadTooLarge | Code::InsufficientStorage => {
                "resource_exhausted"
            }
            Code::MethodNotAllowed | Code::Unimplemented | Code::UnsupportedMediaType => {
                "unimplemented"
            }
            Code::Internal => "internal",
            Code::Unavailable => "unavailable",
            Code::DeadlineExceeded => "deadline_exceeded",
        }
    }

    /// The gRPC status code of the same meaning (`grpc-status`).
    pub fn grpc(self) -> u8 {
        match self {
            Code::InvalidArgument => 3,
            Code::DeadlineExceeded => 4,
            Code::NotFound => 5,
            Code::AlreadyExists => 6,
            Code::PermissionDenied => 7,
            Code::ResourceExhausted | Code::PayloadTooLarge | Code::InsufficientStorage => 8,
            Code::FailedPrecondition => 9,
            Code::MethodNotAllowed | Code::Unimplemented | Code::UnsupportedMediaType => 12,
            Code::Internal => 13,
            Code::Unavailable => 14,
            Code::Unauthenticated => 16,
        }
    }

    /// Its HTTP status.
    pub fn status(self) -> StatusCode {
        match self {
            Code::InvalidArgument | Code::FailedPrecondition => StatusCode::BAD_REQUEST,
            Code::Unauthenticated => StatusCode::UNAUTHORIZED,
            Code::PermissionDenied => StatusCode::FORBIDDEN,
            Code::NotFound => StatusCode::NOT_FOUND,
            Code::AlreadyExists => StatusCode::CONFLICT,
            Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
            Code::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Code::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Code::Unimplemented => StatusCode::NOT_FOUND,
            Code::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Code::InsufficientStorage => StatusCode::INSUFFICIENT_STORAGE,
            Code::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        }
    }
}

/// An error answered to an HTTP caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// Its code.
    pub code: Code,
    /// What happened and what to do.
    pub message: String,
    /// Seconds after which the same request may succeed (`Retry-After`), for errors that say
    /// "not now".
    pub retry_after_s: Option<u32>,
}

impl ApiError {
    /// An error with a code and a message.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            retry_after_s: None,
        }
    }

    /// A 401.
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::new(Code::Unauthenticated, message)
    }
}

/// Whether a script's error is a limit breach: `limit <name> exceeded: ...`, possibly after
/// the `<script>.luau:<line>: ` that Luau puts in front.
fn is_limit_breach(message: &str) -> bool {
    crate::error::is_limit_breach(message)
}

/// The seconds of a held dispatch claim's `...; retry in N s` at the end of a script's message
/// (a script that did not catch it fails with its text).
fn held_retry_after(message: &str) -> Option<u32> {
    if !message.contains(HELD) {
        return None;
    }
    message
        .strip_suffix(" s")?
        .rsplit_once("; retry in ")?
        .1
        .parse()
        .ok()
}

/// The `Retry-After` of a backend's failure or delay, in seconds.
const BACKEND_RETRY_AFTER_S: u32 = 2;

/// What a held dispatch claim's message says (`barrier::dispatch`).
const HELD: &str = "is being dispatched by another call";

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        use crate::error::StorageFault;
        let held = match &e {
            Error::Script { message, .. } => held_retry_after(message),
            _ => None,
        };
        let code = match &e {
            // Not the caller's fault, and retrying succeeds: 503 with Retry-After, for a core
            // call and for a script that raised it alike.
            Error::Held { .. } => Code::Unavailable,
            Error::Script { .. } if held.is_some() => Code::Unavailable,
            Error::Storage {
                fault: StorageFault::NoSpace,
                ..
            } => Code::InsufficientStorage,
            Error::Script { message, .. } if message.contains(crate::error::NO_SPACE) => {
                Code::InsufficientStorage
            }
            Error::Storage {
                fault: StorageFault::ReadOnly,
                ..
            } => Code::Unavailable,
            Error::Storage { .. } => Code::Internal,
            Error::NotFound { .. } => Code::NotFound,
            Error::AlreadyExists { .. } => Code::AlreadyExists,
            Error::Precondition { .. } | Error::InvalidInput(_) => Code::InvalidArgument,
            Error::LimitExceeded { .. } | Error::Busy { .. } => Code::ResourceExhausted,
            Error::Script { message, .. } if crate::error::is_backend_unavailable(message) => {
                Code::Unavailable
            }
            Error::Script { message, .. } if is_limit_breach(message) => Code::ResourceExhausted,
            Error::Timeout(_) => Code::DeadlineExceeded,
            Error::Backend { .. } => Code::Unavailable,
            _ => Code::Internal,
        };
        let retry_after_s = match &e {
            Error::Busy { retry_after_s, .. } | Error::Held { retry_after_s, .. } => {
                Some(*retry_after_s)
            }
            // A backend that failed or did not answer in time: it may well answer a moment later.
            Error::Backend { .. } => Some(BACKEND_RETRY_AFTER_S),
            Error::Script { message, .. } if crate::error::is_backend_unavailable(message) => {
                Some(BACKEND_RETRY_AFTER_S)
            }
            _ => held,
        };
        ApiError {
            retry_after_s,
            ..ApiError::new(code, e.to_string())
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "code": self.code.name(), "message": self.message });
        let mut r = (
            self.code.status(),
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response();
        if let Some(s) = self.retry_after_s {
            r.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from(s));
        }
        r.extensions_mut()
            .insert(super::access_log::ErrorNote(self.message));
        if self.code == Code::Unauthenticated {
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::{is_limit_breach, ApiError, Code};
    use crate::error::{StorageFault, NO_SPACE};
    use crate::Error;

    #[test]
    fn busy_and_full_disks_are_not_the_callers_fault() {
        let busy = ApiError::from(Error::Held {
            what: "barrier completion is being dispatched by another call".into(),
            retry_after_s: 61,
        });
        assert_eq!(
            (busy.code, busy.retry_after_s),
            (Code::Unavailable, Some(61))
        );
        let script = ApiError::from(Error::Script {
            tenant: "acme".into(),
            script: "ack".into(),
            message:
                "ack.luau:1: barrier completion is being dispatched by another call; retry in 7 s"
                    .into(),
        });
        assert_eq!(
            (script.code, script.retry_after_s),
            (Code::Unavailable, Some(7))
        );
        let full = ApiError::from(Error::Storage {
            fault: StorageFault::NoSpace,
            path: "/p/.native/native.db".into(),
            message: format!("cannot write the database /p/.native/native.db: {NO_SPACE}"),
        });
        assert_eq!(full.code.status().as_u16(), 507);
        assert!(
            full.message.contains("/p/.native/native.db"),
            "{}",
            full.message
        );
        let script = ApiError::from(Error::Script {
            tenant: "acme".into(),
            script: "put".into(),
            message: format!("put.luau:1: cannot write object b/k: {NO_SPACE} of /p/.native/tmp/x"),
        });
        assert_eq!(script.code, Code::InsufficientStorage);
    }

    #[test]
    fn a_backend_that_did_not_answer_is_unavailable_not_the_tenants_limit() {
        let stalled = ApiError::from(Error::Script {
            tenant: "acme".into(),
            script: "put".into(),
            message: format!(
                "put.luau:2: {}a backend call had no answer after 4.9 s",
                crate::error::BACKEND_UNAVAILABLE
            ),
        });
        assert_eq!(
            (stalled.code, stalled.retry_after_s),
            (Code::Unavailable, Some(super::BACKEND_RETRY_AFTER_S))
        );
        assert!(!is_limit_breach(&stalled.message));
        let failed = ApiError::from(Error::Backend {
            backend: "dynamodb",
            message: "cannot get an item of table t: ThrottlingException: Rate exceeded".into(),
            source: None,
        });
        assert_eq!(failed.code.status().as_u16(), 503);
        assert_eq!(failed.retry_after_s, Some(super::BACKEND_RETRY_AFTER_S));
    }

    #[test]
    fn limit_breaches_are_told_from_other_script_errors() {
        assert!(is_limit_breach("limit max_data_ops exceeded: 1001 of 1000"));
        assert!(is_limit_breach("a.luau:3: limit timeout_s exceeded: 30 s"));
        assert!(!is_limit_breach("a.luau:3: the limit is 3, exceeded: no"));
        assert!(!is_limit_breach("a.luau:3: boom"));
    }
}
