//! The few OTLP messages a trace export sends (opentelemetry-proto 1.x,
//! `opentelemetry/proto/collector/trace/v1/trace_service.proto` and the messages it uses),
//! written by hand with prost's derive: the fields native sets, with their numbers and types
//! as the `.proto` files give them. Fields native never sets are left out: a decoder reads
//! them as absent, which is what they would be.

/// `ExportTraceServiceRequest`: the body of `POST /v1/traces`.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ExportTraceServiceRequest {
    /// The spans, by resource.
    #[prost(message, repeated, tag = "1")]
    pub resource_spans: Vec<ResourceSpans>,
}

/// `ResourceSpans`: the spans of one resource (this process).
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ResourceSpans {
    /// The resource.
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// The spans, by instrumentation scope.
    #[prost(message, repeated, tag = "2")]
    pub scope_spans: Vec<ScopeSpans>,
}

/// `Resource`: what made the spans.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Resource {
    /// `service.name` and the like.
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

/// `ScopeSpans`: the spans of one instrumentation scope.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ScopeSpans {
    /// The scope.
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    /// The spans.
    #[prost(message, repeated, tag = "2")]
    pub spans: Vec<Span>,
}

/// `InstrumentationScope`.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct InstrumentationScope {
    /// Its name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its version.
    #[prost(string, tag = "2")]
    pub version: String,
}

/// `Span`.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Span {
    /// 16 bytes.
    #[prost(bytes = "vec", tag = "1")]
    pub trace_id: Vec<u8>,
    /// 8 bytes.
    #[prost(bytes = "vec", tag = "2")]
    pub span_id: Vec<u8>,
    /// 8 bytes, or empty for a root.
    #[prost(bytes = "vec", tag = "4")]
    pub parent_span_id: Vec<u8>,
    /// Its name.
    #[prost(string, tag = "5")]
    pub name: String,
    /// `SpanKind`: 1 internal, 2 server, 3 client, 4 producer, 5 consumer.
    #[prost(int32, tag = "6")]
    pub kind: i32,
    /// Start, in ns since the epoch.
    #[prost(fixed64, tag = "7")]
    pub start_time_unix_nano: u64,
    /// End, in ns since the epoch.
    #[prost(fixed64, tag = "8")]
    pub end_time_unix_nano: u64,
    /// Its attributes.
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    /// What happened in it (a run's log lines).
    #[prost(message, repeated, tag = "11")]
    pub events: Vec<Event>,
    /// Events left out (past the cap).
    #[prost(uint32, tag = "12")]
    pub dropped_events_count: u32,
    /// Its links.
    #[prost(message, repeated, tag = "13")]
    pub links: Vec<Link>,
    /// Its outcome.
    #[prost(message, optional, tag = "15")]
    pub status: Option<Status>,
}

/// `Span.Event`: something that happened at a moment of a span.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Event {
    /// When, in ns since the epoch.
    #[prost(fixed64, tag = "1")]
    pub time_unix_nano: u64,
    /// What.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Its attributes.
    #[prost(message, repeated, tag = "3")]
    pub attributes: Vec<KeyValue>,
}

/// `Span.Link`: another span this one is related to, in the same trace or another.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Link {
    /// 16 bytes.
    #[prost(bytes = "vec", tag = "1")]
    pub trace_id: Vec<u8>,
    /// 8 bytes.
    #[prost(bytes = "vec", tag = "2")]
    pub span_id: Vec<u8>,
}

/// `Status`: 0 unset, 1 ok, 2 error.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Status {
    /// Why it failed.
    #[prost(string, tag = "2")]
    pub message: String,
    /// The code.
    #[prost(int32, tag = "3")]
    pub code: i32,
}

/// `KeyValue`.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct KeyValue {
    /// The key.
    #[prost(string, tag = "1")]
    pub key: String,
    /// The value.
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// `AnyValue`, of the kinds native sets.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct AnyValue {
    /// The value.
    #[prost(oneof = "Value", tags = "1, 2, 3, 4")]
    pub value: Option<Value>,
}

/// `AnyValue.value`.
#[derive(Clone, PartialEq, ::prost::Oneof)]
pub enum Value {
    /// `string_value`.
    #[prost(string, tag = "1")]
    String(String),
    /// `bool_value`.
    #[prost(bool, tag = "2")]
    Bool(bool),
    /// `int_value`.
    #[prost(int64, tag = "3")]
    Int(i64),
    /// `double_value`.
    #[prost(double, tag = "4")]
    Double(f64),
}
