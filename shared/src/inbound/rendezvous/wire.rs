//! The wire forms of the rendezvous API, told apart by Content-Type: the Connect protocol's
//! unary JSON (`application/json`, and what `curl` sends) and binary (`application/proto`),
//! gRPC (`application/grpc`, HTTP/2) and gRPC-Web (`application/grpc-web`, binary or
//! `-text`). This module reads a request's message out of its body and frames an answer or an
//! error the way the caller's form expects; the handlers never see the form.
//!
//! - Connect: the body is the message (gzip if `Content-Encoding` says so); answers are the
//!   message with 200, errors JSON `{ code, message }` with the Connect HTTP status.
//! - gRPC: the body is one length-prefixed message (flag byte, 4-byte length); the answer is
//!   one such message and the trailers `grpc-status: 0`; an error is `grpc-status` and
//!   `grpc-message` in the headers of an empty answer (trailers-only), always HTTP 200.
//! - gRPC-Web: as gRPC, with the trailers as a last frame of the body (flag 0x80), and the
//!   whole body base64 for the `-text` form.
//!
//! Deadlines come from `grpc-timeout` (gRPC, gRPC-Web) or `Connect-Timeout-Ms` (Connect).

use std::convert::Infallible;
use std::io::Read;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Frame;
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};

use crate::inbound::{ApiError, Code};

/// The largest request body of the rendezvous routes, as sent (before any decompression) and
/// as decompressed: the largest valid request (1 KB of description, 32 metadata entries of
/// 128 + 256 bytes, names of 128) is under 16 KB, so 1 MB leaves room and bounds what a caller
/// can make the server hold.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The forms served, as `Accept-Post` lists them on a 415.
const SERVED: &str = "application/json, application/proto, application/grpc, application/grpc+proto, application/grpc-web, application/grpc-web+proto, application/grpc-web-text, application/grpc-web-text+proto";

/// How a request came, and so how it is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Connect unary (and plain JSON): `proto` for `application/proto`; `client` when the
    /// request says `Connect-Protocol-Version` (then int64 is answered as JSON strings and only
    /// the proto's fields are sent).
    Connect {
        /// Binary (`application/proto`) rather than JSON.
        proto: bool,
        /// A Connect client (the header `Connect-Protocol-Version` is present).
        client: bool,
    },
    /// gRPC, over HTTP/2.
    Grpc,
    /// gRPC-Web; `text` for the base64 form.
    GrpcWeb {
        /// `application/grpc-web-text`: request and answer bodies are base64.
        text: bool,
    },
}

impl Form {
    /// The form of a request, from its Content-Type (none is JSON, for `curl -d`), or a 415
    /// that lists the forms served.
    pub fn of(headers: &HeaderMap) -> Result<Form, ApiError> {
        let client = headers.contains_key("connect-protocol-version");
        let Some(ct) = headers.get(header::CONTENT_TYPE) else {
            return Ok(Form::Connect {
                proto: false,
                client,
            });
        };
        let ct = ct.to_str().unwrap_or_default();
        let essence = ct
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "application/json" => Ok(Form::Connect {
                proto: false,
                client,
            }),
            "application/proto" => Ok(Form::Connect {
                proto: true,
                client,
            }),
            "application/grpc" | "application/grpc+proto" => Ok(Form::Grpc),
            "application/grpc-web" | "application/grpc-web+proto" => {
                Ok(Form::GrpcWeb { text: false })
            }
            "application/grpc-web-text" | "application/grpc-web-text+proto" => {
                Ok(Form::GrpcWeb { text: true })
            }
            _ => Err(ApiError::new(
                Code::UnsupportedMediaType,
                format!("Content-Type {ct:?} is not served; send one of: {SERVED}"),
            )),
        }
    }

    /// Whether the message is protobuf (else JSON).
    pub fn is_proto(self) -> bool {
        !matches!(self, Form::Connect { proto: false, .. })
    }

    /// Whether a JSON answer is for a Connect client (int64 as strings, proto fields only).
    pub fn connect_client(self) -> bool {
        matches!(self, Form::Connect { client: true, .. })
    }
}

/// A 415 for a request whose Content-Type is not served: JSON, as Connect clients and `curl`
/// read it, with `Accept-Post` naming the forms that are.
pub fn unsupported(e: ApiError) -> Response {
    let mut r = e.into_response();
    r.headers_mut()
        .insert("accept-post", HeaderValue::from_static(SERVED));
    r
}

fn too_large() -> ApiError {
    ApiError::new(
        Code::PayloadTooLarge,
        format!(
            "request body is over {MAX_BODY_BYTES} bytes (1 MB), the most a rendezvous request takes; the largest valid request is under 16 KB"
        ),
    )
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::new(Code::InvalidArgument, msg)
}

/// Reads the whole body, at most [`MAX_BODY_BYTES`]. Every request is read before it is
/// answered, refusals included: an answer sent while the client is still sending reaches an
/// HTTP/1.1 client as a broken pipe or a reset instead (the socket closes with unread data).
pub async fn read_body(headers: &HeaderMap, body: Body) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
        Err(e) => Err(bad(format!("cannot read the request body: {e}"))),
    }
}

/// Inflates a gzip body, at most [`MAX_BODY_BYTES`] of output.
fn gunzip(bytes: &[u8], header: &str) -> Result<Bytes, ApiError> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .take(MAX_BODY_BYTES as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| bad(format!("the body is not valid gzip as {header} says: {e}")))?;
    if out.len() > MAX_BODY_BYTES {
        return Err(too_large());
    }
    Ok(out.into())
}

fn encoding<'h>(headers: &'h HeaderMap, name: &str) -> &'h str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity")
        .trim()
}

fn unsupported_encoding(header: &str, value: &str) -> ApiError {
    ApiError::new(
        Code::Unimplemented,
        format!("{header} {value:?} is not served; send identity or gzip"),
    )
}

/// The request's message: the body of a Connect request (inflated), the one framed message of
/// a gRPC or gRPC-Web request.
pub fn message(form: Form, headers: &HeaderMap, body: Bytes) -> Result<Bytes, ApiError> {
    match form {
        Form::Connect { .. } => match encoding(headers, "content-encoding") {
            "identity" | "" => Ok(body),
            "gzip" => gunzip(&body, "Content-Encoding"),
            other => Err(unsupported_encoding("Content-Encoding", other)),
        },
        Form::Grpc | Form::GrpcWeb { .. } => {
            let body = match form {
                Form::GrpcWeb { text: true } => {
                    let text: Vec<u8> = body
                        .iter()
                        .copied()
                        .filter(|b| !b.is_ascii_whitespace())
                        .collect();
                    STANDARD
                        .decode(text)
                        .map_err(|e| bad(format!("the grpc-web-text body is not base64: {e}")))?
                        .into()
                }
                _ => body,
            };
            if body.len() < 5 {
                return Err(bad(format!(
                    "the body holds no message: a gRPC message is a 5-byte prefix and the message, and the body has {} bytes",
                    body.len()
                )));
            }
            let flag = body[0];
            let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
            if body.len() != 5 + len {
                return Err(bad(format!(
                    "a unary call takes exactly one message: the prefix says {len} bytes and {} follow it",
                    body.len() - 5
                )));
            }
            let msg = body.slice(5..);
            match (flag, encoding(headers, "grpc-encoding")) {
                (0, _) => Ok(msg),
                (1, "gzip") => gunzip(&msg, "grpc-encoding"),
                (1, other) => Err(unsupported_encoding("grpc-encoding", other)),
                (f, _) => Err(bad(format!(
                    "the message's flag byte is {f}; a request message has 0 or 1"
                ))),
            }
        }
    }
}

/// The caller's deadline, from now: `grpc-timeout` for gRPC forms, `Connect-Timeout-Ms` for
/// Connect; none when absent.
pub fn timeout(form: Form, headers: &HeaderMap) -> Result<Option<Duration>, ApiError> {
    match form {
        Form::Connect { .. } => {
            let Some(v) = headers.get("connect-timeout-ms") else {
                return Ok(None);
            };
            let s = v.to_str().unwrap_or_default();
            if s.is_empty() || s.len() > 10 || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(format!(
                    "Connect-Timeout-Ms must be 1 to 10 digits (milliseconds), not {s:?}"
                )));
            }
            Ok(Some(Duration::from_millis(s.parse().unwrap_or(u64::MAX))))
        }
        Form::Grpc | Form::GrpcWeb { .. } => {
            let Some(v) = headers.get("grpc-timeout") else {
                return Ok(None);
            };
            let s = v.to_str().unwrap_or_default();
            let (digits, unit) = s.split_at(s.len().saturating_sub(1));
            let refused = || {
                bad(format!(
                    "grpc-timeout must be 1 to 8 digits and a unit (H, M, S, m, u, n), not {s:?}"
                ))
            };
            if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit())
            {
                return Err(refused());
            }
            let n: u64 = digits.parse().map_err(|_| refused())?;
            Ok(Some(match unit {
                "H" => Duration::from_secs(n * 3600),
                "M" => Duration::from_secs(n * 60),
                "S" => Duration::from_secs(n),
                "m" => Duration::from_millis(n),
                "u" => Duration::from_micros(n),
                "n" => Duration::from_nanos(n),
                _ => return Err(refused()),
            }))
        }
    }
}

/// A body of one data frame and then trailers (gRPC's answer).
struct Trailed {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl HttpBody for Trailed {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(d) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(d))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.trailers.is_none()
    }
}

/// What `grpc-message` may carry unescaped: printable ASCII except `%`.
const GRPC_MESSAGE: &AsciiSet = &CONTROLS.add(b'%');

fn status_headers(code: u8, message: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        HeaderName::from_static("grpc-status"),
        HeaderValue::from(u16::from(code)),
    );
    if !message.is_empty() {
        let m = utf8_percent_encode(message, GRPC_MESSAGE).to_string();
        if let Ok(v) = HeaderValue::from_str(&m) {
            h.insert(HeaderName::from_static("grpc-message"), v);
        }
    }
    h
}

fn frame(flag: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + payload.len());
    out.push(flag);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// gRPC-Web's last frame: the trailers as HTTP/1 header lines.
fn trailer_frame(trailers: &HeaderMap) -> Vec<u8> {
    let mut text = Vec::new();
    for (k, v) in trailers {
        text.extend_from_slice(k.as_str().as_bytes());
        text.push(b':');
        text.extend_from_slice(v.as_bytes());
        text.extend_from_slice(b"\r\n");
    }
    frame(0x80, &text)
}

fn content_type(form: Form) -> &'static str {
    match form {
        Form::Connect { proto: true, .. } => "application/proto",
        Form::Connect { proto: false, .. } => "application/json",
        Form::Grpc => "application/grpc",
        Form::GrpcWeb { text: false } => "application/grpc-web+proto",
        Form::GrpcWeb { text: true } => "application/grpc-web-text+proto",
    }
}

fn grpc_web_body(text: bool, bytes: Vec<u8>) -> Body {
    if text {
        Body::from(STANDARD.encode(bytes))
    } else {
        Body::from(bytes)
    }
}

/// A successful answer: `json` or `proto` is the message in the caller's codec.
pub fn reply(
    form: Form,
    json: impl FnOnce() -> String,
    proto: impl FnOnce() -> Vec<u8>,
) -> Response {
    let body = match form {
        Form::Connect { proto: false, .. } => Body::from(json()),
        Form::Connect { proto: true, .. } => Body::from(proto()),
        Form::Grpc => Body::new(Trailed {
            data: Some(frame(0, &proto()).into()),
            trailers: Some(status_headers(0, "")),
        }),
        Form::GrpcWeb { text } => {
            let mut bytes = frame(0, &proto());
            bytes.extend(trailer_frame(&status_headers(0, "")));
            grpc_web_body(text, bytes)
        }
    };
    let mut r = (StatusCode::OK, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(form)),
    );
    r
}

/// An error, as the caller's form says errors are.
pub fn error(form: Form, e: ApiError) -> Response {
    match form {
        Form::Connect { .. } => e.into_response(),
        Form::Grpc => {
            let mut r = (StatusCode::OK, Body::empty()).into_response();
            let h = r.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(content_type(form)),
            );
            h.extend(status_headers(e.code.grpc(), &e.message));
            r
        }
        Form::GrpcWeb { text } => {
            let body = trailer_frame(&status_headers(e.code.grpc(), &e.message));
            let mut r = (StatusCode::OK, grpc_web_body(text, body)).into_response();
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(content_type(form)),
            );
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| (HeaderName::from_static(k), HeaderValue::from_static(v)))
            .collect()
    }

    #[test]
    fn forms_are_told_by_content_type_and_others_are_415() {
        let f = |ct: &'static str| Form::of(&headers(&[("content-type", ct)]));
        assert_eq!(
            f("application/json; charset=utf-8").unwrap(),
            Form::Connect {
                proto: false,
                client: false
            }
        );
        assert_eq!(
            Form::of(&headers(&[
                ("content-type", "application/proto"),
                ("connect-protocol-version", "1")
            ]))
            .unwrap(),
            Form::Connect {
                proto: true,
                client: true
            }
        );
        assert_eq!(f("application/grpc+proto").unwrap(), Form::Grpc);
        assert_eq!(
            f("application/grpc-web-text").unwrap(),
            Form::GrpcWeb { text: true }
        );
        let e = f("text/plain").unwrap_err();
        assert_eq!(
            (e.code.status().as_u16(), e.code.name()),
            (415, "unimplemented")
        );
        assert!(e.message.contains("application/proto"), "{}", e.message);
    }

    #[test]
    fn grpc_frames_hold_exactly_one_message() {
        let h = HeaderMap::new();
        let ok = message(Form::Grpc, &h, frame(0, b"abc").into()).unwrap();
        assert_eq!(&ok[..], b"abc");
        let mut two = frame(0, b"a");
        two.extend(frame(0, b"b"));
        assert!(message(Form::Grpc, &h, two.into())
            .unwrap_err()
            .message
            .contains("exactly one message"));
        assert!(message(Form::Grpc, &h, Bytes::from_static(b"\0\0"))
            .unwrap_err()
            .message
            .contains("no message"));
        let text = STANDARD.encode(frame(0, b"xyz"));
        let web = message(Form::GrpcWeb { text: true }, &h, text.into()).unwrap();
        assert_eq!(&web[..], b"xyz");
    }

    #[test]
    fn gzip_is_inflated_within_the_cap() {
        use std::io::Write;
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&vec![b'a'; MAX_BODY_BYTES + 1]).unwrap();
        let bomb = z.finish().unwrap();
        let h = headers(&[("content-encoding", "gzip")]);
        let form = Form::Connect {
            proto: true,
            client: true,
        };
        assert_eq!(
            message(form, &h, bomb.into()).unwrap_err().code,
            Code::PayloadTooLarge
        );
        let h = headers(&[("content-encoding", "br")]);
        assert_eq!(
            message(form, &h, Bytes::new()).unwrap_err().code,
            Code::Unimplemented
        );
    }

    #[test]
    fn deadlines_are_read_from_either_header() {
        let t = |form, k, v| timeout(form, &headers(&[(k, v)]));
        let connect = Form::Connect {
            proto: false,
            client: true,
        };
        assert_eq!(
            t(connect, "connect-timeout-ms", "1500").unwrap(),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            t(Form::Grpc, "grpc-timeout", "2S").unwrap(),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            t(Form::Grpc, "grpc-timeout", "250m").unwrap(),
            Some(Duration::from_millis(250))
        );
        assert!(t(Form::Grpc, "grpc-timeout", "123456789S").is_err());
        assert!(t(Form::Grpc, "grpc-timeout", "5x").is_err());
        assert!(t(connect, "connect-timeout-ms", "-1").is_err());
        assert_eq!(timeout(Form::Grpc, &HeaderMap::new()).unwrap(), None);
    }

    #[test]
    fn grpc_messages_are_percent_encoded() {
        let h = status_headers(3, "name must use only letters, not 'é' (100%)");
        assert_eq!(h["grpc-status"], "3");
        assert_eq!(
            h["grpc-message"],
            "name must use only letters, not '%C3%A9' (100%25)"
        );
    }
}
