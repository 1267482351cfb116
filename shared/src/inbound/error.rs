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
            Code::ResourceExhausted | Code::PayloadTooLarge => "resource_exhausted",
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
            Code::ResourceExhausted | Code::PayloadTooLarge => 8,
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
    let m = match message.split_once(".luau:") {
        Some((_, rest)) => rest
            .split_once(": ")
            .filter(|(line, _)| line.bytes().all(|b| b.is_ascii_digit()))
            .map_or(message, |(_, m)| m),
        None => message,
    };
    m.starts_with("limit ")
        && m.split(':')
            .next()
            .is_some_and(|head| head.ends_with(" exceeded"))
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        let code = match &e {
            Error::NotFound { .. } => Code::NotFound,
            Error::AlreadyExists { .. } => Code::AlreadyExists,
            Error::Precondition { .. } | Error::InvalidInput(_) => Code::InvalidArgument,
            Error::LimitExceeded { .. } | Error::Busy { .. } => Code::ResourceExhausted,
            Error::Script { message, .. } if is_limit_breach(message) => Code::ResourceExhausted,
            Error::Timeout(_) => Code::DeadlineExceeded,
            Error::Backend { .. } => Code::Unavailable,
            _ => Code::Internal,
        };
        let retry_after_s = match &e {
            Error::Busy { retry_after_s, .. } => Some(*retry_after_s),
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
    use super::is_limit_breach;

    #[test]
    fn limit_breaches_are_told_from_other_script_errors() {
        assert!(is_limit_breach("limit max_data_ops exceeded: 1001 of 1000"));
        assert!(is_limit_breach("a.luau:3: limit timeout_s exceeded: 30 s"));
        assert!(!is_limit_breach("a.luau:3: the limit is 3, exceeded: no"));
        assert!(!is_limit_breach("a.luau:3: boom"));
    }
}
