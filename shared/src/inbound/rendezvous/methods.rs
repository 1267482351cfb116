//! The methods of `GrackleApi`: each reads its request message (from JSON or protobuf, as the
//! caller sent it), calls [`crate::rendezvous`] as the caller's tenant and answers core values
//! ([`Answer`]), which [`super::wire`] writes in the caller's form.

use std::time::Duration;

use axum::body::Bytes;
use prost::Message;
use serde_json::{json, Value};

use super::json::{FromJson, Req, Style};
use super::pb;
use crate::inbound::{ApiError, Code};
use crate::rendezvous::{
    Arrival, Barrier, CreateBarrier, Namespace, Page, Participant, Rendezvous, Unlimited,
    UpdateBarrier, WaitOutcome,
};
use crate::runtime::Runtime;
use crate::Error;

/// What a method answers, before it is written in the caller's form.
#[derive(Debug)]
pub enum Answer {
    /// CreateNamespace, GetNamespace, UpdateNamespace: `{ namespace }`.
    Namespace(Namespace),
    /// ListNamespaces.
    Namespaces(Page<Namespace>),
    /// CreateBarrier, GetBarrier, UpdateBarrier: `{ barrier }`.
    Barrier(Barrier),
    /// ListBarriers.
    Barriers(Page<Barrier>),
    /// ArriveAtBarrier.
    Arrival(Arrival),
    /// WaitAtBarrier.
    Wait(Barrier, WaitOutcome),
    /// ListBarrierParticipants.
    Participants(Page<Participant>),
    /// DeleteBarrier, DeleteNamespace: `{}`.
    Empty,
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::new(Code::InvalidArgument, msg)
}

/// A core error as the contract answers it.
pub fn api(e: Error) -> ApiError {
    match e {
        Error::NotFound { what, .. } => ApiError::new(Code::NotFound, format!("{what} not found")),
        Error::AlreadyExists { what } => {
            ApiError::new(Code::AlreadyExists, format!("{what} already exists"))
        }
        Error::Precondition { what } => ApiError::new(Code::FailedPrecondition, what),
        Error::InvalidInput(m) => ApiError::new(Code::InvalidArgument, m),
        other => other.into(),
    }
}

/// A count or a time the core takes unsigned: a negative one is refused by name.
fn whole(field: &str, v: i64) -> Result<u64, ApiError> {
    u64::try_from(v).map_err(|_| bad(format!("{field} must not be negative, not {v}")))
}

fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn token(t: &Option<String>) -> String {
    t.clone().unwrap_or_default()
}

/// The request as read: JSON (with native's extra fields) or protobuf.
pub struct Request {
    json: Option<Req>,
    bytes: Bytes,
}

impl Request {
    /// A request in the codec the caller used.
    pub fn new(proto: bool, bytes: Bytes) -> Result<Request, ApiError> {
        let json = if proto {
            None
        } else {
            Some(Req::parse(&bytes)?)
        };
        Ok(Request { json, bytes })
    }

    fn message<M: Message + Default + FromJson>(&self, name: &str) -> Result<M, ApiError> {
        match &self.json {
            Some(r) => M::from_json(r),
            None => M::decode(&self.bytes[..]).map_err(|e| {
                bad(format!(
                    "the body is not a com.evrblk.grackle.v1beta.{name} message: {e}"
                ))
            }),
        }
    }

    /// A native-only JSON field (none in protobuf, whose messages are Grackle's).
    fn extra(&self, name: &str) -> Result<Option<String>, ApiError> {
        match &self.json {
            Some(r) => r.opt_str(name),
            None => Ok(None),
        }
    }
}

/// Runs `method` for `tenant`.
pub async fn call(
    rt: &Runtime,
    tenant: &str,
    method: &str,
    req: &Request,
) -> Result<Answer, ApiError> {
    // The tenant's own backends: on AWS its calls run under the tenant role.
    let services = rt.services_for(tenant).await.map_err(api)?;
    let b = &services.backends;
    let mut r = Rendezvous::new(&*b.kv, &*b.queue, tenant, &Unlimited);
    // The tenant's caps on namespaces and barriers.
    r.limit_to(&rt.tenants.load(tenant).await.map_err(api)?.config.limits);
    // Calls that may trip a barrier send its continuation when the tenant has a queue.
    let queue_switch = async {
        rt.tenants
            .load(tenant)
            .await
            .map(|t| t.config.queue)
            .map_err(api)
    };
    Ok(match method {
        "CreateNamespace" => {
            let m: pb::CreateNamespaceRequest = req.message("CreateNamespaceRequest")?;
            Answer::Namespace(
                r.create_namespace(&m.name, &m.description, m.metadata)
                    .await
                    .map_err(api)?,
            )
        }
        "GetNamespace" => {
            let m: pb::GetNamespaceRequest = req.message("GetNamespaceRequest")?;
            Answer::Namespace(r.get_namespace(&m.namespace_name).await.map_err(api)?)
        }
        "ListNamespaces" => {
            let m: pb::ListNamespacesRequest = req.message("ListNamespacesRequest")?;
            let limit = whole("limit", m.limit.into())?;
            Answer::Namespaces(
                r.list_namespaces(&m.pagination_token, limit)
                    .await
                    .map_err(api)?,
            )
        }
        "UpdateNamespace" => {
            // expected_version is not checked: the contract's namespaces have no versions.
            let m: pb::UpdateNamespaceRequest = req.message("UpdateNamespaceRequest")?;
            Answer::Namespace(
                r.update_namespace(&m.namespace_name, &m.description, m.metadata)
                    .await
                    .map_err(api)?,
            )
        }
        "DeleteNamespace" => {
            let m: pb::DeleteNamespaceRequest = req.message("DeleteNamespaceRequest")?;
            r.delete_namespace(&m.namespace_name).await.map_err(api)?;
            Answer::Empty
        }
        "CreateBarrier" => {
            let m: pb::CreateBarrierRequest = req.message("CreateBarrierRequest")?;
            let continue_with = req.extra("continue_with")?;
            let spec = CreateBarrier {
                namespace: m.namespace_name,
                name: m.barrier_name,
                description: m.description,
                expected_processes: whole("expected_processes", m.expected_processes)?,
                delete_inactive_after_seconds: whole(
                    "delete_inactive_after_seconds",
                    m.delete_inactive_after_seconds,
                )?,
                metadata: m.metadata,
                continue_with,
            };
            spec.validate().map_err(api)?;
            if let Some(script) = &spec.continue_with {
                let t = rt.tenants.load(tenant).await.map_err(api)?;
                r.queue_enabled = t.config.queue;
                t.script(script)
                    .map_err(|e| bad(format!("continue_with: {e}")))?;
            }
            Answer::Barrier(r.create(spec).await.map_err(api)?)
        }
        "GetBarrier" => {
            let m: pb::GetBarrierRequest = req.message("GetBarrierRequest")?;
            Answer::Barrier(
                r.get(&m.namespace_name, &m.barrier_name)
                    .await
                    .map_err(api)?,
            )
        }
        "ListBarriers" => {
            let m: pb::ListBarriersRequest = req.message("ListBarriersRequest")?;
            let limit = whole("limit", m.limit.into())?;
            Answer::Barriers(
                r.list(&m.namespace_name, &m.pagination_token, limit)
                    .await
                    .map_err(api)?,
            )
        }
        "UpdateBarrier" => {
            let m: pb::UpdateBarrierRequest = req.message("UpdateBarrierRequest")?;
            let spec = UpdateBarrier {
                namespace: m.namespace_name,
                name: m.barrier_name,
                description: m.description,
                expected_processes: whole("expected_processes", m.expected_processes)?,
                metadata: m.metadata,
                expected_version: whole("expected_version", m.expected_version)?,
                delete_inactive_after_seconds: whole(
                    "delete_inactive_after_seconds",
                    m.delete_inactive_after_seconds,
                )?,
            };
            spec.validate().map_err(api)?;
            // Lowering the count may trip the barrier.
            r.queue_enabled = queue_switch.await?;
            Answer::Barrier(r.update(spec).await.map_err(api)?)
        }
        "DeleteBarrier" => {
            let m: pb::DeleteBarrierRequest = req.message("DeleteBarrierRequest")?;
            r.delete(&m.namespace_name, &m.barrier_name)
                .await
                .map_err(api)?;
            Answer::Empty
        }
        "ArriveAtBarrier" => {
            let m: pb::ArriveAtBarrierRequest = req.message("ArriveAtBarrierRequest")?;
            let generation = whole("expected_generation", m.expected_generation)?;
            r.queue_enabled = queue_switch.await?;
            Answer::Arrival(
                r.arrive(
                    &m.namespace_name,
                    &m.barrier_name,
                    &m.process_id,
                    generation,
                    m.metadata,
                )
                .await
                .map_err(api)?,
            )
        }
        "WaitAtBarrier" => {
            let m: pb::WaitAtBarrierRequest = req.message("WaitAtBarrierRequest")?;
            let generation = whole("expected_generation", m.expected_generation)?;
            let timeout = u64::try_from(m.timeout_seconds).map_err(|_| {
                bad(format!(
                    "timeout_seconds must be 0 to {}, not {}",
                    crate::rendezvous::MAX_WAIT_S,
                    m.timeout_seconds
                ))
            })?;
            crate::rendezvous::check_timeout(timeout).map_err(api)?;
            let (b, outcome) = r
                .wait(
                    &m.namespace_name,
                    &m.barrier_name,
                    generation,
                    Duration::from_secs(timeout),
                )
                .await
                .map_err(api)?;
            Answer::Wait(b, outcome)
        }
        "ListBarrierParticipants" => {
            let m: pb::ListBarrierParticipantsRequest =
                req.message("ListBarrierParticipantsRequest")?;
            let generation = whole("generation", m.generation)?;
            let limit = whole("limit", m.limit.into())?;
            Answer::Participants(
                r.participants(
                    &m.namespace_name,
                    &m.barrier_name,
                    generation,
                    &m.pagination_token,
                    limit,
                )
                .await
                .map_err(api)?,
            )
        }
        other => {
            return Err(ApiError::new(
                Code::Unimplemented,
                format!("no method {:?}", crate::text::echo(other)),
            ))
        }
    })
}

fn pb_barrier(b: &Barrier) -> pb::Barrier {
    pb::Barrier {
        name: b.name.clone(),
        description: b.description.clone(),
        expected_processes: i64_of(b.expected_processes),
        arrived_processes: i64_of(b.arrived_processes),
        generation: i64_of(b.generation),
        created_at: b.created_at,
        updated_at: b.updated_at,
        version: i64_of(b.version),
        metadata: b.metadata.clone(),
        last_activity_at: b.last_activity_at,
        delete_inactive_after_seconds: i64_of(b.delete_inactive_after_seconds),
    }
}

fn pb_namespace(n: &Namespace) -> pb::Namespace {
    pb::Namespace {
        name: n.name.clone(),
        description: n.description.clone(),
        created_at: n.created_at,
        updated_at: n.updated_at,
        // The contract's namespaces are not versioned.
        version: 0,
        metadata: n.metadata.clone(),
    }
}

fn pb_participant(p: &Participant) -> pb::BarrierParticipant {
    pb::BarrierParticipant {
        process_id: p.process_id.clone(),
        arrived_at: p.arrived_at,
        metadata: p.metadata.clone(),
    }
}

fn pb_outcome(o: WaitOutcome) -> pb::BarrierWaitOutcome {
    match o {
        WaitOutcome::Tripped => pb::BarrierWaitOutcome::Tripped,
        WaitOutcome::TimedOut => pb::BarrierWaitOutcome::TimedOut,
    }
}

impl Answer {
    /// The answer as JSON, in `style`.
    pub fn json(&self, s: Style) -> Value {
        let page =
            |items: Vec<Value>, key: &str, p_next: &Option<String>, p_prev: &Option<String>| {
                let mut v = json!({
                    "next_pagination_token": token(p_next),
                    "previous_pagination_token": token(p_prev),
                });
                v[key] = Value::Array(items);
                v
            };
        match self {
            Answer::Namespace(n) => json!({ "namespace": s.namespace(n) }),
            Answer::Namespaces(p) => page(
                p.items.iter().map(|n| s.namespace(n)).collect(),
                "namespaces",
                &p.next,
                &p.previous,
            ),
            Answer::Barrier(b) => json!({ "barrier": s.barrier(b) }),
            Answer::Barriers(p) => page(
                p.items.iter().map(|b| s.barrier(b)).collect(),
                "barriers",
                &p.next,
                &p.previous,
            ),
            Answer::Arrival(a) => {
                json!({ "barrier": s.barrier(&a.barrier), "all_arrived": a.all_arrived })
            }
            Answer::Wait(b, o) => json!({ "barrier": s.barrier(b), "outcome": o.name() }),
            Answer::Participants(p) => page(
                p.items.iter().map(|x| s.participant(x)).collect(),
                "participants",
                &p.next,
                &p.previous,
            ),
            Answer::Empty => json!({}),
        }
    }

    /// The answer as its protobuf response message. Create, Get and Update of a namespace (or
    /// a barrier) answer messages of one shape, `{ namespace = 1 }` (`{ barrier = 1 }`), so one
    /// of them stands for all three; both deletes answer the empty message.
    pub fn proto(&self) -> Vec<u8> {
        match self {
            Answer::Namespace(n) => pb::GetNamespaceResponse {
                namespace: Some(pb_namespace(n)),
            }
            .encode_to_vec(),
            Answer::Namespaces(p) => pb::ListNamespacesResponse {
                namespaces: p.items.iter().map(pb_namespace).collect(),
                next_pagination_token: token(&p.next),
                previous_pagination_token: token(&p.previous),
            }
            .encode_to_vec(),
            Answer::Barrier(b) => pb::GetBarrierResponse {
                barrier: Some(pb_barrier(b)),
            }
            .encode_to_vec(),
            Answer::Barriers(p) => pb::ListBarriersResponse {
                barriers: p.items.iter().map(pb_barrier).collect(),
                next_pagination_token: token(&p.next),
                previous_pagination_token: token(&p.previous),
            }
            .encode_to_vec(),
            Answer::Arrival(a) => pb::ArriveAtBarrierResponse {
                barrier: Some(pb_barrier(&a.barrier)),
                all_arrived: a.all_arrived,
            }
            .encode_to_vec(),
            Answer::Wait(b, o) => pb::WaitAtBarrierResponse {
                barrier: Some(pb_barrier(b)),
                outcome: pb_outcome(*o).into(),
            }
            .encode_to_vec(),
            Answer::Participants(p) => pb::ListBarrierParticipantsResponse {
                participants: p.items.iter().map(pb_participant).collect(),
                next_pagination_token: token(&p.next),
                previous_pagination_token: token(&p.previous),
            }
            .encode_to_vec(),
            Answer::Empty => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn the_shared_response_shapes_encode_alike() {
        // Answer::proto writes Get*Response for Create* and Update* too: same fields, same tags.
        let n = pb::Namespace {
            name: "n".into(),
            created_at: 5,
            metadata: BTreeMap::from([("k".into(), "v".into())]),
            ..Default::default()
        };
        let get = pb::GetNamespaceResponse {
            namespace: Some(n.clone()),
        }
        .encode_to_vec();
        let create = pb::CreateNamespaceResponse {
            namespace: Some(n.clone()),
        }
        .encode_to_vec();
        let update = pb::UpdateNamespaceResponse { namespace: Some(n) }.encode_to_vec();
        assert_eq!((&get, &get), (&create, &update));
        let b = pb::Barrier {
            name: "b".into(),
            generation: 2,
            ..Default::default()
        };
        let get = pb::GetBarrierResponse {
            barrier: Some(b.clone()),
        }
        .encode_to_vec();
        let create = pb::CreateBarrierResponse {
            barrier: Some(b.clone()),
        }
        .encode_to_vec();
        let update = pb::UpdateBarrierResponse { barrier: Some(b) }.encode_to_vec();
        assert_eq!((&get, &get), (&create, &update));
    }

    #[test]
    fn negative_counts_are_refused_by_name() {
        assert_eq!(
            whole("expected_processes", -1).unwrap_err().message,
            "expected_processes must not be negative, not -1"
        );
        assert_eq!(whole("limit", 7).unwrap(), 7);
    }
}
