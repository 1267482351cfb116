//! Tallies ([`crate::ports::TallyOp`]) in the DynamoDB table: one item each, its slots a map
//! attribute `slots` (name -> value, empty while open), its counts the numbers `open` and
//! `marked`, its close reason `x`, its expiry `ttl` as every item's. A fill is one `UpdateItem`
//! whose condition is the slot's being open (and the item's living long enough), which sets
//! the slot and `ADD`s to the counts and returns the item after the write (`ALL_NEW`), or as it
//! stood when the condition failed (`ALL_OLD`): one write of the item's size, no read before.

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, PutRequest, ReturnValue, ReturnValuesOnConditionCheckFailure, WriteRequest,
};

use super::dynamodb::{conditional_failed, key, n, now_s, s, Attrs, DynamoKv};
use super::sdk_err;
use crate::ports::{apply_tally, check_tally_op, Tally, TallyAnswer, TallyOp};
use crate::Result;

/// Attempts of an `Open` whose names were partly there (each drops the names found).
const OPEN_ATTEMPTS: usize = 4;

fn num(a: &Attrs, k: &str) -> Option<i64> {
    a.get(k)?.as_n().ok()?.parse().ok()
}

/// The tally an item holds, or `None` when it is expired or is no tally.
fn tally_of(a: &Attrs, now: i64) -> Option<Tally> {
    let ttl = num(a, "ttl")?;
    if ttl <= now {
        return None;
    }
    let text = |k: &str| a.get(k).and_then(|v| v.as_s().ok()).cloned();
    let slots = a
        .get("slots")?
        .as_m()
        .ok()?
        .iter()
        .map(|(k, v)| Some((k.clone(), v.as_s().ok()?.clone())))
        .collect::<Option<_>>()?;
    Some(Tally {
        pk: text("pk")?,
        sk: text("sk")?,
        slots,
        open: num(a, "open")?.max(0) as u64,
        marked: num(a, "marked").unwrap_or(0).max(0) as u64,
        closed: text("x"),
        expires_at_s: ttl,
    })
}

/// The item as it stood when an update's condition failed (`ALL_OLD`).
fn old_of(e: &aws_sdk_dynamodb::error::SdkError<UpdateItemError>) -> Option<&Attrs> {
    match e.as_service_error()? {
        UpdateItemError::ConditionalCheckFailedException(c) => c.item(),
        _ => None,
    }
}

fn names(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

impl DynamoKv {
    /// Runs one tally operation: one call (an `Open` whose names were partly there, one more
    /// for each such answer, at most [`OPEN_ATTEMPTS`]).
    pub(super) async fn run_tally(&self, op: TallyOp) -> Result<TallyAnswer> {
        check_tally_op(&op)?;
        match &op {
            TallyOp::Create(items) => {
                let writes = items
                    .iter()
                    .map(|t| {
                        let mut a = key(&t.pk, &t.sk);
                        a.insert(
                            "slots".into(),
                            AttributeValue::M(t.slots.iter().map(|m| (m.clone(), s(""))).collect()),
                        );
                        a.insert("open".into(), n(t.slots.len() as i64));
                        a.insert("marked".into(), n(0));
                        a.insert("ttl".into(), n(t.expires_at_s));
                        PutRequest::builder()
                            .set_item(Some(a))
                            .build()
                            .map(|p| WriteRequest::builder().put_request(p).build())
                            .map_err(|e| sdk_err("dynamodb", "cannot build a batch write", e))
                    })
                    .collect::<Result<Vec<_>>>()?;
                self.write_batch(writes).await?;
                Ok(TallyAnswer::Created)
            }
            TallyOp::Get { pk, sk } => {
                let out = self
                    .client
                    .get_item()
                    .table_name(&self.table)
                    .set_key(Some(key(pk, sk)))
                    .consistent_read(true)
                    .send()
                    .await
                    .map_err(|e| sdk_err("dynamodb", self.cannot("read a tally of"), e))?;
                Ok(TallyAnswer::Found(
                    out.item().and_then(|a| tally_of(a, now_s())),
                ))
            }
            TallyOp::Fill {
                pk,
                sk,
                slot,
                value,
                mark,
                live_until_s,
            } => {
                let now = now_s();
                let req = self
                    .client
                    .update_item()
                    .table_name(&self.table)
                    .set_key(Some(key(pk, sk)))
                    .update_expression("SET #sl.#k = :v ADD #open :minus, #marked :mark")
                    .condition_expression("#sl.#k = :e AND #ttl > :live AND #ttl > :now")
                    .set_expression_attribute_names(Some(names(&[
                        ("#sl", "slots"),
                        ("#k", slot),
                        ("#open", "open"),
                        ("#marked", "marked"),
                        ("#ttl", "ttl"),
                    ])))
                    .set_expression_attribute_values(Some(HashMap::from([
                        (":v".into(), s(value)),
                        (":e".into(), s("")),
                        (":minus".into(), n(-1)),
                        (":mark".into(), n(i64::from(*mark))),
                        (":live".into(), n(*live_until_s)),
                        (":now".into(), n(now)),
                    ])))
                    .return_values(ReturnValue::AllNew)
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    );
                match req.send().await {
                    Ok(out) => match out.attributes().and_then(|a| tally_of(a, now)) {
                        Some(t) => Ok(TallyAnswer::Filled(t)),
                        None => Err(self.damaged(pk, sk)),
                    },
                    Err(e) if conditional_failed(&e) => {
                        // The rules decide what the item as it stood says (taken, no slot).
                        let seen = old_of(&e).and_then(|a| tally_of(a, now));
                        Ok(apply_tally(&op, seen, now).1)
                    }
                    Err(e) => Err(sdk_err("dynamodb", self.cannot("fill a tally of"), e)),
                }
            }
            TallyOp::Open { pk, sk, slots } => self.open(pk, sk, slots.clone()).await,
            TallyOp::Close { pk, sk, reason } => {
                let now = now_s();
                let out = self
                    .client
                    .update_item()
                    .table_name(&self.table)
                    .set_key(Some(key(pk, sk)))
                    .update_expression("SET #x = if_not_exists(#x, :r)")
                    .condition_expression("attribute_exists(#sl) AND #ttl > :now")
                    .set_expression_attribute_names(Some(names(&[
                        ("#x", "x"),
                        ("#sl", "slots"),
                        ("#ttl", "ttl"),
                    ])))
                    .set_expression_attribute_values(Some(HashMap::from([
                        (":r".into(), s(reason)),
                        (":now".into(), n(now)),
                    ])))
                    .return_values(ReturnValue::AllNew)
                    .send()
                    .await;
                match out {
                    Ok(out) => match out.attributes().and_then(|a| tally_of(a, now)) {
                        Some(t) => Ok(TallyAnswer::Closed(t)),
                        None => Err(self.damaged(pk, sk)),
                    },
                    Err(e) if conditional_failed(&e) => Ok(TallyAnswer::Missed(None)),
                    Err(e) => Err(sdk_err("dynamodb", self.cannot("close a tally of"), e)),
                }
            }
        }
    }

    /// `Open`: one conditional update that adds the names, none of which may be there; when
    /// some were, the item as it stood says which, and the rest are sent again.
    async fn open(&self, pk: &str, sk: &str, mut slots: Vec<String>) -> Result<TallyAnswer> {
        for _ in 0..OPEN_ATTEMPTS {
            let now = now_s();
            let mut ns = vec![
                ("#sl".to_string(), "slots".to_string()),
                ("#open".to_string(), "open".to_string()),
                ("#x".to_string(), "x".to_string()),
                ("#ttl".to_string(), "ttl".to_string()),
            ];
            let mut sets = Vec::new();
            let mut absent = Vec::new();
            for (i, m) in slots.iter().enumerate() {
                ns.push((format!("#k{i}"), m.clone()));
                sets.push(format!("#sl.#k{i} = :e"));
                absent.push(format!("attribute_not_exists(#sl.#k{i})"));
            }
            let out = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key(pk, sk)))
                .update_expression(format!("SET {} ADD #open :n", sets.join(", ")))
                .condition_expression(format!(
                    "#open > :zero AND attribute_not_exists(#x) AND #ttl > :now AND {}",
                    absent.join(" AND ")
                ))
                .set_expression_attribute_names(Some(ns.into_iter().collect()))
                .set_expression_attribute_values(Some(HashMap::from([
                    (":e".into(), s("")),
                    (":n".into(), n(slots.len() as i64)),
                    (":zero".into(), n(0)),
                    (":now".into(), n(now)),
                ])))
                .return_values(ReturnValue::AllNew)
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .send()
                .await;
            match out {
                Ok(out) => {
                    return match out.attributes().and_then(|a| tally_of(a, now)) {
                        Some(t) => Ok(TallyAnswer::Opened(slots, t)),
                        None => Err(self.damaged(pk, sk)),
                    }
                }
                Err(e) if conditional_failed(&e) => {
                    let Some(t) = old_of(&e).and_then(|a| tally_of(a, now)) else {
                        return Ok(TallyAnswer::Refused(None));
                    };
                    if t.open == 0 || t.closed.is_some() {
                        return Ok(TallyAnswer::Refused(Some(t)));
                    }
                    slots.retain(|m| !t.slots.contains_key(m));
                    if slots.is_empty() {
                        return Ok(TallyAnswer::Opened(Vec::new(), t));
                    }
                }
                Err(e) => {
                    return Err(sdk_err(
                        "dynamodb",
                        self.cannot("open slots of a tally of"),
                        e,
                    ))
                }
            }
        }
        Err(crate::Error::Backend {
            backend: "dynamodb",
            message: format!(
                "slots kept appearing in a tally of table {} while {OPEN_ATTEMPTS} attempts added them; retry",
                self.table
            ),
            source: None,
        })
    }

    fn damaged(&self, pk: &str, sk: &str) -> crate::Error {
        let _ = (pk, sk);
        crate::Error::Backend {
            backend: "dynamodb",
            message: format!(
                "a tally of table {} came back damaged or expired",
                self.table
            ),
            source: None,
        }
    }
}
