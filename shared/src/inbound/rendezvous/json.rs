//! The JSON codec of the rendezvous API: requests read into the proto's messages, leniently as
//! the contract allows (snake_case or lowerCamelCase names, int64 as numbers or strings), and
//! answers written in the seed's form (snake_case, every field), with int64 as strings and only
//! the proto's fields for Connect clients.

use serde_json::{json, Map, Value};

use super::pb;
use crate::inbound::{ApiError, Code};
use crate::rendezvous::{Barrier, Metadata, Namespace, Participant};

/// native's own JSON fields beside a message's (none in protobuf, whose messages are
/// Grackle's), by message: every other field that is not the message's is refused.
pub const EXTRAS: &[(&str, &[&str])] = &[("CreateBarrierRequest", &["continue_with"])];

/// A request body: one JSON object whose fields are read by snake_case or lowerCamelCase name.
pub struct Req(pub Map<String, Value>);

fn camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut up = false;
    for c in snake.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.push(c.to_ascii_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::new(Code::InvalidArgument, msg)
}

/// What a JSON value is, for messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Req {
    /// Parses a body: empty is `{}`, anything but an object is refused.
    pub fn parse(bytes: &[u8]) -> Result<Req, ApiError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Req(Map::new()));
        }
        match serde_json::from_slice(bytes) {
            Ok(Value::Object(m)) => Ok(Req(m)),
            Ok(other) => Err(bad(format!(
                "the request body must be a JSON object, not {}",
                kind(&other)
            ))),
            Err(e) => Err(bad(format!(
                "request body is not JSON: {e}; send the request message as a JSON object"
            ))),
        }
    }

    /// Refuses a field that `message` does not have, naming it and the fields there are: a
    /// misspelt name would otherwise read as absent and fail later for another reason (or not
    /// at all). `name` stands for `namespace_name` where a message has one.
    fn refuse_unknown(&self, message: &str, fields: &[(&str, &str)]) -> Result<(), ApiError> {
        for key in self.0.keys() {
            let extra = EXTRAS.iter().any(|(m, names)| {
                *m == message && names.iter().any(|n| key == n || *key == camel(n))
            });
            let known = extra
                || fields.iter().any(|(f, read)| {
                    key == f || *key == camel(f) || (key == "name" && *read == "ns_name")
                });
            if !known {
                return Err(bad(format!(
                    "{message} has no field {:?}; its fields are {} (snake_case or lowerCamelCase)",
                    crate::text::cut_text(key.clone(), 80),
                    fields
                        .iter()
                        .map(|(f, _)| *f)
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        Ok(())
    }

    fn field(&self, name: &str) -> Option<&Value> {
        self.0
            .get(name)
            .or_else(|| self.0.get(&camel(name)))
            .filter(|v| !v.is_null())
    }

    /// A string field; absent is "" (proto3's default).
    pub fn str(&self, name: &str) -> Result<String, ApiError> {
        match self.field(name) {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(bad(format!("{name} must be a string, not {}", kind(other)))),
        }
    }

    /// `namespace_name`, or `name` in its place (what earlier versions of the contract took).
    pub fn ns_name(&self, name: &str) -> Result<String, ApiError> {
        match self.str(name)? {
            s if s.is_empty() => self.str("name"),
            s => Ok(s),
        }
    }

    /// An optional string field (absent or "" is none).
    pub fn opt_str(&self, name: &str) -> Result<Option<String>, ApiError> {
        Ok(Some(self.str(name)?).filter(|s| !s.is_empty()))
    }

    /// An integer field within `min..=max`, as a JSON number or a string of digits; absent is 0.
    fn int(&self, name: &str, min: i64, max: i64) -> Result<i64, ApiError> {
        let Some(v) = self.field(name) else {
            return Ok(0);
        };
        let parsed = match v {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.parse::<i64>().ok(),
            _ => None,
        };
        parsed.filter(|n| (min..=max).contains(n)).ok_or_else(|| {
            bad(format!(
                "{name} must be a whole number from {min} to {max} (a JSON number or a string of digits), not {}",
                match v {
                    Value::Number(n) => n.to_string(),
                    Value::String(s) => format!("{s:?}"),
                    o => kind(o).to_string(),
                }
            ))
        })
    }

    /// An int64 field.
    pub fn i64(&self, name: &str) -> Result<i64, ApiError> {
        self.int(name, i64::MIN, i64::MAX)
    }

    /// An int32 field.
    pub fn i32(&self, name: &str) -> Result<i32, ApiError> {
        Ok(self.int(name, i32::MIN.into(), i32::MAX.into())? as i32)
    }

    /// A metadata map of strings; absent is empty.
    pub fn metadata(&self, name: &str) -> Result<Metadata, ApiError> {
        match self.field(name) {
            None => Ok(Metadata::new()),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    other => Err(bad(format!(
                        "{name} values must be strings; {k:?} is {}",
                        kind(other)
                    ))),
                })
                .collect(),
            Some(other) => Err(bad(format!(
                "{name} must be an object of strings, not {}",
                kind(other)
            ))),
        }
    }
}

/// A request message read from JSON.
pub trait FromJson: Sized {
    /// Reads the message's fields from `r`.
    fn from_json(r: &Req) -> Result<Self, ApiError>;
}

/// `FromJson` for a message, each field read by the `Req` reader named beside it (the
/// compiler checks that every field of the message is named).
macro_rules! from_json {
    ($($t:ident { $($f:ident: $read:ident),* $(,)? })*) => {
        $(impl FromJson for pb::$t {
            fn from_json(r: &Req) -> Result<Self, ApiError> {
                r.refuse_unknown(stringify!($t), &[$((stringify!($f), stringify!($read))),*])?;
                Ok(pb::$t { $($f: r.$read(stringify!($f))?,)* })
            }
        })*
    };
}

from_json! {
    CreateNamespaceRequest { name: str, description: str, metadata: metadata }
    GetNamespaceRequest { namespace_name: ns_name }
    ListNamespacesRequest { pagination_token: str, limit: i32 }
    UpdateNamespaceRequest {
        namespace_name: ns_name, description: str, metadata: metadata, expected_version: i64,
    }
    DeleteNamespaceRequest { namespace_name: ns_name }
    CreateBarrierRequest {
        namespace_name: str, barrier_name: str, description: str, expected_processes: i64,
        delete_inactive_after_seconds: i64, metadata: metadata,
    }
    GetBarrierRequest { namespace_name: str, barrier_name: str }
    ListBarriersRequest { namespace_name: str, pagination_token: str, limit: i32 }
    UpdateBarrierRequest {
        namespace_name: str, barrier_name: str, description: str, expected_processes: i64,
        metadata: metadata, expected_version: i64, delete_inactive_after_seconds: i64,
    }
    DeleteBarrierRequest { namespace_name: str, barrier_name: str }
    ArriveAtBarrierRequest {
        namespace_name: str, barrier_name: str, process_id: str, expected_generation: i64,
        metadata: metadata,
    }
    WaitAtBarrierRequest {
        namespace_name: str, barrier_name: str, expected_generation: i64, timeout_seconds: i32,
    }
    ListBarrierParticipantsRequest {
        namespace_name: str, barrier_name: str, generation: i64, pagination_token: str,
        limit: i32,
    }
}

/// How answers are written: for plain callers (numbers, native's extra fields) or for Connect
/// clients (int64 as strings, the proto's fields only).
#[derive(Debug, Clone, Copy)]
pub struct Style {
    /// A Connect client asked.
    pub connect: bool,
}

impl Style {
    fn int(self, v: impl Into<i128>) -> Value {
        let v: i128 = v.into();
        if self.connect {
            json!(v.to_string())
        } else {
            json!(v)
        }
    }

    /// A barrier as the seed shows it (and `continue_with` for plain callers, when set).
    pub fn barrier(self, b: &Barrier) -> Value {
        let mut v = json!({
            "name": b.name,
            "description": b.description,
            "expected_processes": self.int(b.expected_processes),
            "arrived_processes": self.int(b.arrived_processes),
            "generation": self.int(b.generation),
            "version": self.int(b.version),
            "created_at": self.int(b.created_at),
            "updated_at": self.int(b.updated_at),
            "last_activity_at": self.int(b.last_activity_at),
            "delete_inactive_after_seconds": self.int(b.delete_inactive_after_seconds),
            "metadata": b.metadata,
        });
        if let (false, Some(c)) = (self.connect, &b.continue_with) {
            v["continue_with"] = json!(c);
        }
        v
    }

    /// A participant (with its generation for plain callers; the proto has none).
    pub fn participant(self, p: &Participant) -> Value {
        let mut v = json!({
            "process_id": p.process_id,
            "arrived_at": self.int(p.arrived_at),
            "metadata": p.metadata,
        });
        if !self.connect {
            v["generation"] = json!(p.generation);
        }
        v
    }

    /// A namespace.
    pub fn namespace(self, n: &Namespace) -> Value {
        json!({
            "name": n.name,
            "description": n.description,
            "metadata": n.metadata,
            "created_at": self.int(n.created_at),
            "updated_at": self.int(n.updated_at),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_are_refused_by_name_with_the_fields_there_are() {
        let r = Req::parse(br#"{ "namespace": "ns", "barrier_name": "b" }"#).unwrap();
        let e = pb::GetBarrierRequest::from_json(&r).unwrap_err();
        let m = e.message;
        assert!(
            m.contains(r#"GetBarrierRequest has no field "namespace""#),
            "{m}"
        );
        assert!(m.contains("namespace_name, barrier_name"), "{m}");
        // Either case of a known field, and `name` for namespace_name, are known.
        let r = Req::parse(br#"{ "namespaceName": "ns", "barrier_name": "b" }"#).unwrap();
        assert!(pb::GetBarrierRequest::from_json(&r).is_ok());
        let r = Req::parse(br#"{ "name": "ns" }"#).unwrap();
        assert!(pb::GetNamespaceRequest::from_json(&r).is_ok());
    }

    #[test]
    fn requests_take_either_case_and_int64_as_numbers_or_strings() {
        let r = Req::parse(
            br#"{ "namespaceName": "ns", "barrier_name": "b", "expectedProcesses": "3",
                  "delete_inactive_after_seconds": 60 }"#,
        )
        .unwrap();
        let m = pb::CreateBarrierRequest::from_json(&r).unwrap();
        assert_eq!(
            (
                m.namespace_name.as_str(),
                m.barrier_name.as_str(),
                m.expected_processes,
                m.delete_inactive_after_seconds
            ),
            ("ns", "b", 3, 60)
        );
        // namespace_name, or name in its place
        let get = |body: &[u8]| {
            pb::GetNamespaceRequest::from_json(&Req::parse(body).unwrap())
                .unwrap()
                .namespace_name
        };
        assert_eq!(get(br#"{ "namespace_name": "a" }"#), "a");
        assert_eq!(get(br#"{ "name": "b" }"#), "b");
        // a limit past int32 is refused with the field's name
        let e =
            pb::ListBarriersRequest::from_json(&Req::parse(br#"{ "limit": 4294967296 }"#).unwrap())
                .unwrap_err();
        assert!(
            e.message.starts_with("limit must be a whole number"),
            "{}",
            e.message
        );
    }

    #[test]
    fn connect_clients_get_int64_as_strings_and_only_proto_fields() {
        let b = Barrier {
            name: "b".into(),
            description: String::new(),
            expected_processes: 2,
            arrived_processes: 0,
            generation: 1,
            version: 1,
            created_at: 1_718_150_400_000_000_123,
            updated_at: 1,
            last_activity_at: 1,
            delete_inactive_after_seconds: 60,
            metadata: Metadata::new(),
            continue_with: Some("next".into()),
        };
        let c = Style { connect: true }.barrier(&b);
        assert_eq!(c["created_at"], "1718150400000000123");
        assert!(c.get("continue_with").is_none());
        let plain = Style { connect: false }.barrier(&b);
        assert_eq!(plain["created_at"], 1_718_150_400_000_000_123_i64);
        assert_eq!(plain["continue_with"], "next");
    }
}
