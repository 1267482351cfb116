//! Linked steps of a chain: what moved a chain's work from outside its own runs (issue 55).
//!
//! Work that waits (a barrier, a batch job, a rendezvous barrier, a timer) remembers the chain
//! that created it, and its continuation runs in that chain. What moves it is often of another
//! chain or of none: a partner's object (whose run is a chain of its own), a partner's POST to
//! a callback URL (an HTTP request, its own chain), an operator's action (the CLI, the console),
//! a partner's `done.json`. Each is recorded in the waiting work's chain as one log record, a
//! *step*: `"step": true`, what happened (`msg`), the work's chain (`trace`), where the step
//! came from (`origin`: which script, object, request or operator) and, when that was another
//! chain, `link` (so that `native logs --trace LINK` shows the other side, as a span link does).

use serde_json::{json, Map, Value};

/// Who or what moved a chain's work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin<'a> {
    /// A script's run: `script` of the run's chain `chain`, which `cause` started (for a run
    /// of an object event, the object).
    Script {
        /// The script.
        script: &'a str,
        /// The run's chain.
        chain: &'a str,
        /// What started the run, when known (`object In/acks/o-17/p1.json`).
        cause: Option<&'a str>,
    },
    /// A POST to a callback URL, of the HTTP request's chain.
    Callback {
        /// The request's chain.
        chain: Option<&'a str>,
    },
    /// An operator, through `via` (`cli`, `console`), named `who` where known.
    Operator {
        /// `cli` or `console`.
        via: &'a str,
        /// The operator's name (the CLI's user), where known.
        who: Option<&'a str>,
        /// The chain of the operator's request (the console's HTTP request), if any.
        chain: Option<&'a str>,
    },
    /// An object written from outside (a partner's `done.json`).
    Object {
        /// The logical bucket.
        bucket: &'a str,
        /// The key in the tenant's folder.
        key: &'a str,
    },
}

impl Origin<'_> {
    /// The chain the origin belongs to, when it is one.
    fn chain(&self) -> Option<&str> {
        match self {
            Origin::Script { chain, .. } => Some(chain),
            Origin::Callback { chain } | Origin::Operator { chain, .. } => *chain,
            Origin::Object { .. } => None,
        }
    }

    fn to_value(&self) -> Value {
        match self {
            Origin::Script { script, cause, .. } => {
                let mut o = json!({ "by": "script", "script": script });
                if let Some(c) = cause {
                    o["cause"] = json!(c);
                }
                o
            }
            Origin::Callback { .. } => json!({ "by": "callback" }),
            Origin::Operator { via, who, .. } => {
                let mut o = json!({ "by": "operator", "via": via });
                if let Some(w) = who {
                    o["who"] = json!(w);
                }
                o
            }
            Origin::Object { bucket, key } => {
                json!({ "by": "object", "bucket": bucket, "key": key })
            }
        }
    }
}

/// The record of a step of `chain` (the waiting work's) of `tenant`: `msg` says what happened,
/// `fields` add what it was about (the barrier and member, the job).
pub fn record(chain: &str, tenant: &str, msg: &str, origin: &Origin<'_>, fields: Value) -> Value {
    let mut rec = Map::new();
    rec.insert("ts_ms".into(), json!(crate::ports::now_ms()));
    rec.insert("level".into(), json!("info"));
    rec.insert("msg".into(), json!(msg));
    rec.insert("tenant".into(), json!(tenant));
    rec.insert("trace".into(), json!(chain));
    rec.insert("step".into(), json!(true));
    rec.insert("origin".into(), origin.to_value());
    if let Some(link) = origin.chain().filter(|c| *c != chain) {
        rec.insert("link".into(), json!(link));
    }
    if let Value::Object(f) = fields {
        for (k, v) in f {
            rec.entry(k).or_insert(v);
        }
    }
    Value::Object(rec)
}

/// Where spans are exported, the step `rec` (made by [`record`]) as a span of its chain,
/// linked to `from`, the span it was made in (a run's or a request's), in the chain it links.
pub fn export(exporter: Option<&super::otlp::Exporter>, rec: &Value, from: Option<u64>) {
    use super::otlp::{now_ns, Attr, Kind, SpanData};
    let Some(e) = exporter else {
        return;
    };
    let text = |k: &str| rec.get(k).and_then(Value::as_str).unwrap_or_default();
    let chain = text("trace");
    // A step made inside its own chain links the span of the same trace.
    let linked = rec.get("link").and_then(Value::as_str).unwrap_or(chain);
    let now = now_ns();
    let mut attributes = vec![("native.tenant", Attr::Str(text("tenant").into()))];
    if let Some(Value::Object(o)) = rec.get("origin") {
        for (k, key) in [
            ("by", "native.origin.by"),
            ("via", "native.origin.via"),
            ("script", "native.origin.script"),
            ("cause", "native.origin.cause"),
            ("key", "native.origin.key"),
        ] {
            if let Some(v) = o.get(k).and_then(Value::as_str) {
                attributes.push((key, Attr::Str(v.to_string())));
            }
        }
    }
    for (k, key) in [
        ("barrier", "native.barrier"),
        ("member", "native.member"),
        ("job", "native.job"),
    ] {
        if let Some(v) = rec.get(k).and_then(Value::as_str) {
            attributes.push((key, Attr::Str(v.to_string())));
        }
    }
    e.record(SpanData {
        chain: chain.to_string(),
        span: super::w3c::new_span(),
        parent: None,
        name: text("msg").to_string(),
        kind: Kind::Internal,
        start_ns: now,
        end_ns: now,
        attributes,
        error: None,
        links: from.map(|s| (linked.to_string(), s)).into_iter().collect(),
        events: Vec::new(),
        dropped_events: 0,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_is_of_the_waiting_chain_and_links_the_other() {
        let by = Origin::Script {
            script: "ack",
            chain: "bbbb",
            cause: Some("object Acks/p1.json"),
        };
        let r = record(
            "aaaa",
            "acme",
            "barrier member acked",
            &by,
            json!({ "member": "p1", "trace": "x" }),
        );
        assert_eq!(r["trace"], "aaaa");
        assert_eq!(r["link"], "bbbb");
        assert_eq!(r["step"], true);
        assert_eq!(
            r["origin"],
            json!({ "by": "script", "script": "ack", "cause": "object Acks/p1.json" })
        );
        assert_eq!(r["member"], "p1", "fields are added, never over ours");
        // A step made inside the chain itself links nothing.
        let same = Origin::Script {
            script: "ack",
            chain: "aaaa",
            cause: None,
        };
        assert!(record("aaaa", "acme", "m", &same, json!({}))
            .get("link")
            .is_none());
        let op = Origin::Operator {
            via: "cli",
            who: Some("ana"),
            chain: None,
        };
        let r = record("aaaa", "acme", "m", &op, Value::Null);
        assert_eq!(
            r["origin"],
            json!({ "by": "operator", "via": "cli", "who": "ana" })
        );
        assert!(r.get("link").is_none());
    }
}
