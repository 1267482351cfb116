//! `POST /v1/callback/{token}`: a partner's ack through a signed callback URL
//! ([`crate::callback`]). The body is the outcome (`{ ok, error?, result? }`; empty for ok);
//! the answer is `{ duplicate, complete, dispatched }`. No API key: the signature is the
//! credential, and it names the one member it may ack.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::{ApiError, Code};
use crate::barrier::{Barriers, Outcome};
use crate::budget::Budget;
use crate::callback::Refused;
use crate::observe::step;
use crate::runtime::Runtime;

/// The largest outcome body.
const MAX_OUTCOME_BODY: usize = 16 * 1024;

/// An ack has a fixed number of calls: no data-ops limit here.
struct Unmetered;

impl Budget for Unmetered {
    fn spend(&self, _: u32) -> crate::Result<()> {
        Ok(())
    }
    fn left(&self) -> u32 {
        u32::MAX
    }
}

/// The handler.
pub(super) async fn callback(
    State(rt): State<Arc<Runtime>>,
    Path(token): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let Some(signer) = rt.services.callback.clone() else {
        return Err(ApiError::new(
            Code::Unavailable,
            "this deployment has no callback secret",
        ));
    };
    let target = match signer.check(&token, crate::ports::now_ms() / 1000) {
        Ok(t) => t,
        Err(Refused::BadSignature) => {
            return Err(ApiError::unauthenticated(
                "this callback URL is not one this deployment signed (altered or made up); ask for a new one",
            ))
        }
        Err(Refused::Expired) => {
            return Ok((
                StatusCode::GONE,
                [(header::CONTENT_TYPE, "application/json")],
                json!({ "code": "failed_precondition", "message": "this callback URL has expired; ask for a new one" }).to_string(),
            )
                .into_response())
        }
    };
    let outcome = read_outcome(&headers, body).await?;
    let ok = outcome.ok;
    super::access_log::note_tenant(&target.tenant);
    // A POST that names no chain of its own is of the chain that made the URL (signed, so
    // no caller chose it): its record and its answer name the order's chain.
    let named = headers
        .get("traceparent")
        .and_then(|v| crate::observe::w3c::parse(v.as_bytes()))
        .is_some();
    let request = match (&target.chain, named) {
        (Some(chain), false) if crate::observe::w3c::trace_id(chain).is_some() => {
            super::access_log::note_chain(chain);
            Some(chain.clone())
        }
        _ => crate::observe::chain(),
    };
    let tenant = rt.tenants.load(&target.tenant).await?;
    let tenant_name = tenant.name.clone();
    // A barrier call holds a `&dyn Budget`, which is not Send: it runs on a thread of its own,
    // as scripts' calls do.
    let handle = tokio::runtime::Handle::current();
    let runtime = rt.clone();
    let (barrier, member) = (target.barrier.clone(), target.member.clone());
    let r = tokio::task::spawn_blocking(move || {
        handle.block_on(async {
            let b = Barriers {
                kv: rt.services.backends.kv.as_ref(),
                queue: rt.services.backends.queue.as_ref(),
                tenant: &tenant.name,
                queue_enabled: tenant.config.queue,
                budget: &Unmetered,
            };
            b.ack(&target.barrier, &target.member, outcome).await
        })
    })
    .await
    .map_err(|e| ApiError::new(Code::Internal, format!("the ack failed: {e}")))??;
    // The ack is a step of the barrier's chain, linked to this request's.
    if let (Some(chain), false) = (&r.chain, r.duplicate) {
        let by = step::Origin::Callback {
            chain: request.as_deref(),
        };
        let rec = step::record(
            chain,
            &tenant_name,
            "barrier member acked",
            &by,
            json!({ "barrier": barrier, "member": member, "ok": ok, "complete": r.complete }),
        );
        runtime.services.log.write(&rec);
        let exporter = runtime.services.exporter.as_deref();
        step::export(exporter, &rec, exporter.and(crate::observe::context().span));
    }
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        json!({ "duplicate": r.duplicate, "complete": r.complete, "dispatched": r.dispatched })
            .to_string(),
    )
        .into_response())
}

async fn read_outcome(headers: &HeaderMap, body: Body) -> Result<Outcome, ApiError> {
    let bad = |why: String| ApiError::new(Code::InvalidArgument, why);
    if headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|n| n > MAX_OUTCOME_BODY as u64)
    {
        return Err(bad(format!(
            "the outcome is over {MAX_OUTCOME_BODY} bytes; put large results in a bucket and send their key"
        )));
    }
    let bytes = axum::body::to_bytes(body, MAX_OUTCOME_BODY)
        .await
        .map_err(|e| {
            bad(format!(
                "cannot read the outcome (at most {MAX_OUTCOME_BODY} bytes): {e}"
            ))
        })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Outcome {
            ok: true,
            error: None,
            result: None,
        });
    }
    let given: Given = serde_json::from_slice(&bytes).map_err(|e| {
        bad(format!(
            "the outcome is not {{ \"ok\"?: true|false, \"error\"?: text, \"result\"?: any }}: {e}"
        ))
    })?;
    Ok(Outcome {
        ok: given.ok,
        error: given.error,
        result: given.result,
    })
}

/// An outcome as a partner sends it: `ok` may be left out and is then true, as in
/// `native.barrier.ack` and for an empty body.
#[derive(serde::Deserialize)]
struct Given {
    #[serde(default = "yes")]
    ok: bool,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    result: Option<serde_json::Value>,
}

fn yes() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read(body: &'static str) -> Result<Outcome, ApiError> {
        read_outcome(&HeaderMap::new(), Body::from(body)).await
    }

    #[tokio::test]
    async fn ok_may_be_left_out_and_is_then_true_as_in_native_barrier_ack() {
        let o = read(r#"{"result":{"pages":3}}"#).await.unwrap();
        assert!(o.ok);
        assert_eq!(o.result, Some(serde_json::json!({ "pages": 3 })));
        assert!(read("").await.unwrap().ok);
        let o = read(r#"{"ok":false,"error":"no pages"}"#).await.unwrap();
        assert_eq!((o.ok, o.error.as_deref()), (false, Some("no pages")));
        // A body that is no outcome is still refused, saying what one is.
        let e = read("[1,2]").await.unwrap_err();
        assert!(
            format!("{e:?}").contains("\\\"ok\\\"?: true|false"),
            "{e:?}"
        );
    }
}
