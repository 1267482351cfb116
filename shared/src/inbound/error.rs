//! The error model of inbound HTTP: the Connect protocol's codes and statuses, as JSON
//! `{ "code": ..., "message": ... }`, and how each core [`Error`] maps onto one.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::{Cause, StorageFault};
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

/// The `Retry-After` of a backend's failure or delay, in seconds.
const BACKEND_RETRY_AFTER_S: u32 = 2;

/// The code of a storage fault, for a core call and a script that it ended alike.
fn storage_code(fault: StorageFault) -> Code {
    match fault {
        StorageFault::NoSpace => Code::InsufficientStorage,
        // Not the caller's fault, and it may pass (a remount, a permission fixed).
        StorageFault::ReadOnly => Code::Unavailable,
        _ => Code::Internal,
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        // A script's failure is told by its cause, recorded where it happened; its message
        // is for people, and no wording of it changes the answer.
        let code = match &e {
            Error::Script { cause, .. } => match cause {
                Cause::Limit(_) => Code::ResourceExhausted,
                Cause::Held { .. } | Cause::Unavailable => Code::Unavailable,
                Cause::Storage(fault) => storage_code(*fault),
                _ => Code::Internal,
            },
            // Not the caller's fault, and retrying succeeds: 503 with Retry-After.
            Error::Held { .. } => Code::Unavailable,
            Error::Storage { fault, .. } => storage_code(*fault),
            Error::NotFound { .. } => Code::NotFound,
            Error::AlreadyExists { .. } => Code::AlreadyExists,
            Error::Precondition { .. } | Error::InvalidInput(_) => Code::InvalidArgument,
            Error::LimitExceeded { .. } | Error::Busy { .. } => Code::ResourceExhausted,
            Error::Timeout(_) => Code::DeadlineExceeded,
            Error::Backend { .. } => Code::Unavailable,
            _ => Code::Internal,
        };
        let retry_after_s = match &e {
            Error::Busy { retry_after_s, .. }
            | Error::Held { retry_after_s, .. }
            | Error::Script {
                cause: Cause::Held { retry_after_s },
                ..
            } => Some(*retry_after_s),
            // A backend that failed or did not answer in time: it may well answer a moment later.
            Error::Backend { .. }
            | Error::Script {
                cause: Cause::Unavailable,
                ..
            } => Some(BACKEND_RETRY_AFTER_S),
            _ => None,
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
    use super::{ApiError, Code, BACKEND_RETRY_AFTER_S};
    use crate::error::{Cause, StorageFault};
    use crate::Error;

    fn script(message: &str, cause: Cause) -> ApiError {
        ApiError::from(Error::Script {
            tenant: "acme".into(),
            script: "ack".into(),
            message: message.into(),
            cause,
        })
    }

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
        let held = script("ack.luau:1: held", Cause::Held { retry_after_s: 7 });
        assert_eq!(
            (held.code, held.retry_after_s),
            (Code::Unavailable, Some(7))
        );
        let full = ApiError::from(Error::Storage {
            fault: StorageFault::NoSpace,
            path: "/p/.native/native.db".into(),
            message: "cannot write the database /p/.native/native.db: full".into(),
        });
        assert_eq!(full.code.status().as_u16(), 507);
        assert!(
            full.message.contains("/p/.native/native.db"),
            "{}",
            full.message
        );
        let put = script("put.luau:1: full", Cause::Storage(StorageFault::NoSpace));
        assert_eq!(put.code.status().as_u16(), 507);
        let read_only = script("put.luau:1: ro", Cause::Storage(StorageFault::ReadOnly));
        assert_eq!(read_only.code.status().as_u16(), 503);
    }

    #[test]
    fn a_backend_that_did_not_answer_is_unavailable_not_the_tenants_limit() {
        let stalled = script("put.luau:2: no answer", Cause::Unavailable);
        assert_eq!(
            (stalled.code, stalled.retry_after_s),
            (Code::Unavailable, Some(BACKEND_RETRY_AFTER_S))
        );
        let failed = ApiError::from(Error::Backend {
            backend: "dynamodb",
            message: "cannot get an item of table t: ThrottlingException: Rate exceeded".into(),
            source: None,
        });
        assert_eq!(failed.code.status().as_u16(), 503);
        assert_eq!(failed.retry_after_s, Some(BACKEND_RETRY_AFTER_S));
        let breach = script("a.luau:3: over", Cause::Limit("max_data_ops"));
        assert_eq!(
            (breach.code.status().as_u16(), breach.retry_after_s),
            (429, None)
        );
    }

    #[test]
    fn a_scripts_own_words_never_choose_the_status() {
        // GIVEN scripts that raised errors of their own in the words the host uses for a held
        // claim, a full disk, a backend's delay and a breached limit
        for words in [
            "ack.luau:1: barrier completion is being dispatched by another call; retry in 7 s",
            "put.luau:1: cannot write object b/k: no space left on the device of /p/x",
            "put.luau:2: backend unavailable: a backend call had no answer after 4.9 s",
            "a.luau:3: limit max_data_ops exceeded: 1001 of 1000",
            "limit timeout_s exceeded: the invocation ran past its deadline of 1 s",
        ] {
            // WHEN each is answered over HTTP
            let e = script(words, Cause::Raised);
            // THEN it is the script's failure, 500 without Retry-After, whatever it says
            assert_eq!((e.code, e.retry_after_s), (Code::Internal, None), "{words}");
        }
    }
}
