//! The Lambda runtime's and the AWS SDK's own log events (they log through `tracing`), written
//! as JSON lines beside the platform's and the scripts' ([`super::LambdaLog`]), with the request
//! id when there is one.
//!
//! The level comes from the environment as Lambda's advanced logging controls set it:
//! `AWS_LAMBDA_LOG_LEVEL` (the function's `ApplicationLogLevel`) for every target, then
//! `RUST_LOG` directives (`info`, `aws_smithy_runtime=debug,warn`) for the targets they name;
//! `info` when neither is set. Spans are not recorded: the request id comes from the request's
//! context instead.
//!
//! This replaces `tracing-subscriber`'s formatter and `EnvFilter`: their regex engine and
//! vtables made every start of a function relocate and fault in pages for a filter that only
//! ever compares a target's prefix with a level (BENCHMARKS.md, Lambda
//! binaries and cold start).

use std::sync::Arc;

use serde_json::{Map, Value};
use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::subscriber::Interest;
use tracing_core::{Event, LevelFilter, Metadata, Subscriber};

use super::LogSink;

/// The longest text of one field of an event, in bytes; longer ones are cut with a note of their
/// length (an SDK error can carry a service's whole response).
pub const MAX_FIELD_BYTES: usize = 4096;

/// The most `RUST_LOG` directives read; the rest are ignored with a warning.
pub const MAX_DIRECTIVES: usize = 64;

/// Which events are written: a level for every target, and levels for targets by prefix
/// (`aws_smithy_runtime` covers `aws_smithy_runtime::client::orchestrator`).
#[derive(Debug, Clone, PartialEq)]
pub struct LevelRules {
    default: LevelFilter,
    /// `(target prefix, level)`, longest prefix first.
    targets: Vec<(String, LevelFilter)>,
}

impl LevelRules {
    /// The rules of the environment (`AWS_LAMBDA_LOG_LEVEL`, `RUST_LOG`), and a warning for
    /// each part of them that was not understood.
    pub fn from_env() -> (Self, Vec<String>) {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Self::parse(
            var("AWS_LAMBDA_LOG_LEVEL").as_deref(),
            var("RUST_LOG").as_deref(),
        )
    }

    /// The rules of `lambda_level` (one level) and `rust_log` (comma-separated `level` or
    /// `target=level` directives), and a warning for each part that was not understood.
    pub fn parse(lambda_level: Option<&str>, rust_log: Option<&str>) -> (Self, Vec<String>) {
        let mut warnings = Vec::new();
        let mut default = None;
        let mut targets = Vec::new();
        for (i, d) in rust_log.unwrap_or("").split(',').map(str::trim).enumerate() {
            if d.is_empty() {
                continue;
            }
            if i >= MAX_DIRECTIVES {
                warnings.push(format!(
                    "RUST_LOG has more than {MAX_DIRECTIVES} directives; the rest are ignored"
                ));
                break;
            }
            let (target, level) = match d.split_once('=') {
                Some((t, l)) => (Some(t.trim()), l),
                None => (None, d),
            };
            match (target, level_filter(level)) {
                (None, Some(l)) => default = Some(l),
                (Some(t), Some(l)) if is_target(t) => targets.push((t.to_string(), l)),
                _ => warnings.push(format!(
                    "RUST_LOG directive `{}` ignored: expected `LEVEL` or `TARGET=LEVEL`, with a \
                     level of trace, debug, info, warn, error or off and a target of letters, \
                     digits, `_` and `::` (span filters are not supported)",
                    cut(d, 200)
                )),
            }
        }
        if let Some(l) = lambda_level {
            match level_filter(l) {
                Some(l) => default = Some(l),
                None => warnings.push(format!(
                    "AWS_LAMBDA_LOG_LEVEL `{}` not understood (expected TRACE, DEBUG, INFO, WARN, \
                     ERROR or FATAL); logging at the level of RUST_LOG or INFO",
                    cut(l, 200)
                )),
            }
        }
        targets.sort_by_key(|(t, _)| std::cmp::Reverse(t.len()));
        let default = default.unwrap_or(LevelFilter::INFO);
        (Self { default, targets }, warnings)
    }

    /// Whether an event of this target and level is written.
    pub fn enabled(&self, meta: &Metadata<'_>) -> bool {
        self.level_of(meta.target()) >= *meta.level()
    }

    fn level_of(&self, target: &str) -> LevelFilter {
        self.targets
            .iter()
            .find(|(t, _)| {
                target
                    .strip_prefix(t.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
            })
            .map_or(self.default, |(_, l)| *l)
    }

    fn most_verbose(&self) -> LevelFilter {
        self.targets
            .iter()
            .map(|(_, l)| *l)
            .fold(self.default, LevelFilter::max)
    }
}

fn level_filter(s: &str) -> Option<LevelFilter> {
    Some(match s.trim().to_ascii_lowercase().as_str() {
        "trace" => LevelFilter::TRACE,
        "debug" => LevelFilter::DEBUG,
        "info" => LevelFilter::INFO,
        "warn" | "warning" => LevelFilter::WARN,
        "error" | "fatal" => LevelFilter::ERROR,
        "off" => LevelFilter::OFF,
        _ => return None,
    })
}

fn is_target(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 200
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':' || b == b'-')
}

fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &s[..end], s.len())
}

/// A `tracing` subscriber that writes each enabled event as one record to a [`LogSink`]:
/// `ts_ms`, `level` (lower case, as the platform's own records), `target`, `msg` and the
/// event's other fields, each cut at [`MAX_FIELD_BYTES`].
#[derive(Debug)]
pub struct RuntimeLog {
    rules: LevelRules,
    sink: Arc<dyn LogSink>,
}

impl RuntimeLog {
    /// Events that `rules` enable, written to `sink`.
    pub fn new(rules: LevelRules, sink: Arc<dyn LogSink>) -> Self {
        Self { rules, sink }
    }
}

/// Makes [`RuntimeLog`] with the environment's rules, writing to [`super::LambdaLog`], the
/// process's `tracing` subscriber, and logs each warning about the rules. Returns false, and
/// changes nothing, when the process already has one.
pub fn init() -> bool {
    let (rules, warnings) = LevelRules::from_env();
    let sink: Arc<dyn LogSink> = Arc::new(super::LambdaLog);
    let set = tracing_core::dispatcher::set_global_default(tracing_core::Dispatch::new(
        RuntimeLog::new(rules, sink.clone()),
    ))
    .is_ok();
    for w in warnings {
        sink.write(&serde_json::json!({
            "ts_ms": crate::ports::now_ms(), "level": "warn", "msg": w,
        }));
    }
    set
}

impl Subscriber for RuntimeLog {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        // Decided once per call site: a disabled event costs one load of a cached interest.
        if self.enabled(meta) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        meta.is_event() && self.rules.enabled(meta)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(self.rules.most_verbose())
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        // Never called for an enabled span (none is); an id is still required.
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let meta = event.metadata();
        let mut fields = Fields(Map::new());
        fields
            .0
            .insert("ts_ms".into(), crate::ports::now_ms().into());
        fields.0.insert(
            "level".into(),
            meta.level().as_str().to_ascii_lowercase().into(),
        );
        fields.0.insert("target".into(), meta.target().into());
        event.record(&mut fields);
        self.sink.write(&Value::Object(fields.0));
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// An event's fields as JSON members; `message` is written as `msg`.
struct Fields(Map<String, Value>);

impl Fields {
    fn put(&mut self, field: &Field, v: Value) {
        let name = match field.name() {
            "message" => "msg",
            // The record's own members are not overwritten by a field of the same name.
            n @ ("ts_ms" | "level" | "target") => return self.put_as(format!("field.{n}"), v),
            n => n,
        };
        self.0.insert(name.to_string(), v);
    }

    fn put_as(&mut self, name: String, v: Value) {
        self.0.insert(name, v);
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        self.put(field, cut(&text, MAX_FIELD_BYTES).into());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, cut(value, MAX_FIELD_BYTES).into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, value.into());
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        // The error and its causes, as `tracing-subscriber` writes them.
        let mut text = value.to_string();
        let mut source = value.source();
        while let Some(s) = source {
            if text.len() > MAX_FIELD_BYTES {
                break;
            }
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        self.put(field, cut(&text, MAX_FIELD_BYTES).into());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Debug, Default)]
    struct Lines(Mutex<Vec<Value>>);

    impl LogSink for Lines {
        fn write(&self, record: &Value) {
            self.0.lock().unwrap().push(record.clone());
        }
    }

    fn rules(lambda: Option<&str>, rust_log: Option<&str>) -> LevelRules {
        let (r, w) = LevelRules::parse(lambda, rust_log);
        assert!(w.is_empty(), "{w:?}");
        r
    }

    fn level(r: &LevelRules, target: &str) -> LevelFilter {
        r.level_of(target)
    }

    #[test]
    fn the_lambda_level_is_the_default_and_rust_log_sets_targets_by_prefix() {
        assert_eq!(level(&rules(None, None), "h2"), LevelFilter::INFO);
        let r = rules(
            Some("WARN"),
            Some("aws_smithy_runtime=debug,aws=trace,error"),
        );
        assert_eq!(level(&r, "lambda_runtime"), LevelFilter::WARN);
        assert_eq!(level(&r, "aws_smithy_runtime"), LevelFilter::DEBUG);
        assert_eq!(
            level(&r, "aws_smithy_runtime::client::orchestrator"),
            LevelFilter::DEBUG
        );
        // A prefix covers whole path segments only.
        assert_eq!(level(&r, "aws_smithy_runtime_api"), LevelFilter::WARN);
        assert_eq!(level(&r, "aws::x"), LevelFilter::TRACE);
        assert_eq!(r.most_verbose(), LevelFilter::TRACE);
        assert_eq!(level(&rules(None, Some("debug")), "x"), LevelFilter::DEBUG);
        assert_eq!(level(&rules(Some("FATAL"), None), "x"), LevelFilter::ERROR);
        assert_eq!(level(&rules(Some("off"), None), "x"), LevelFilter::OFF);
    }

    #[test]
    fn directives_not_understood_are_named_and_the_rest_still_apply() {
        let (r, w) = LevelRules::parse(
            Some("LOUD"),
            Some("h2=debug,hyper[span{a=1}]=trace,verbose,=x"),
        );
        assert_eq!(level(&r, "h2::codec"), LevelFilter::DEBUG);
        assert_eq!(level(&r, "hyper"), LevelFilter::INFO);
        assert_eq!(w.len(), 4, "{w:?}");
        assert!(w[0].contains("`hyper[span{a=1}]=trace`"), "{}", w[0]);
        assert!(w[1].contains("`verbose`"), "{}", w[1]);
        assert!(w[3].contains("AWS_LAMBDA_LOG_LEVEL `LOUD`"), "{}", w[3]);
        let many = vec!["a=info"; MAX_DIRECTIVES + 10].join(",");
        let (r, w) = LevelRules::parse(None, Some(&many));
        assert_eq!(r.targets.len(), MAX_DIRECTIVES);
        assert_eq!(w.len(), 1);
        let long = format!("{}=info", "é".repeat(5000));
        let (_, w) = LevelRules::parse(None, Some(&long));
        assert!(w[0].len() < 1000 && w[0].contains("bytes)"), "{}", w[0]);
    }

    #[test]
    fn events_become_records_with_their_fields_and_disabled_ones_are_not_written() {
        let lines = Arc::new(Lines::default());
        let sub = RuntimeLog::new(rules(None, Some("warn,chatty=debug")), lines.clone());
        let long = "x".repeat(MAX_FIELD_BYTES * 3);
        tracing_core::dispatcher::with_default(&tracing_core::Dispatch::new(sub), || {
            tracing::info!("not written");
            tracing::warn!(attempt = 3, ok = false, level = "mine", body = %long, "retrying");
            tracing::debug!(target: "chatty::inner", "written");
            tracing::trace!(target: "chatty", "not written");
            let e = std::io::Error::other("refused");
            tracing::error!(error = &e as &(dyn std::error::Error + 'static), "failed");
            tracing::warn_span!("a span").in_scope(|| tracing::error!("in a span"));
        });
        let got = lines.0.lock().unwrap().clone();
        let msgs: Vec<&str> = got.iter().map(|r| r["msg"].as_str().unwrap()).collect();
        assert_eq!(msgs, ["retrying", "written", "failed", "in a span"]);
        let r = &got[0];
        assert_eq!(r["level"], "warn");
        assert_eq!(r["attempt"], 3);
        assert_eq!(r["ok"], false);
        assert_eq!(r["field.level"], "mine");
        assert!(r["ts_ms"].as_i64().unwrap() > 0);
        let body = r["body"].as_str().unwrap();
        assert!(
            body.len() < MAX_FIELD_BYTES + 100 && body.ends_with("(12288 bytes)"),
            "{body:.40}"
        );
        assert_eq!(got[1]["target"], "chatty::inner");
        assert_eq!(got[1]["level"], "debug");
        assert_eq!(got[2]["error"], "refused");
    }
}
