//! The members of a barrier, packed into tallies ([`crate::ports::TallyOp`]): what makes an
//! ack one conditional write to a small item, with no item that every ack writes.
//!
//! | partition | sort key | what |
//! | --- | --- | --- |
//! | `b#<tenant>#<id>` | `r#<generation>` | the root: a slot `s<k>` per shard, open until shard `k` has no open slot (then its failed count); a slot `m<member>` per member added after create, and per member when there is one shard only (then the root is the shard) |
//! | `b#<tenant>#<id>#<generation>#<k>` | `s` | shard `k`: a slot `m<member>` per member whose hash (keyed by the generation) falls in it |
//! | `b#<tenant>#<id>` | `v#<member>#<nonce>` | an outcome too large for its slot, which then names the row |
//!
//! Shards are separate partitions, a member's shard is its hash (no read to find it), and a
//! shard holds ~28 members and ~450 bytes of names on average (a shard no hash fell in is not
//! written): a create of 1 000 members writes ~37 tallies in 2 `BatchWriteItem` calls. An ack is: read `meta` (its expiry and shard
//! count); fill the member's slot in its shard, which answers the shard after the write; if
//! that left the shard with nothing open, fill the shard's slot in the root, which answers the
//! root; if that left the root with nothing open, the barrier is complete and the ack goes on
//! to the dispatch (`dispatch`). Each fill is idempotent: a retried ack finds its slot taken,
//! and the answer (the tally as it stands) lets it finish the steps after it, so a crash
//! between any two calls loses nothing. The first ack of a member wins: the fill's condition
//! is that the slot is open. A slot's value carries a nonce, so an ack that finds the very
//! value it wrote (the SDK's retry of a fill whose answer was lost) is not a duplicate.

use serde_json::{json, Value};

use super::{list, pk, Barriers, Meta, ACK_MARGIN_S, TTL_S};
use crate::ports::{
    now_ms, NewItem, NewTally, PutMode, Tallies, Tally, TallyAnswer, TallyOp, MAX_BATCH_ITEMS,
};
use crate::{Error, Result};

/// Members a shard takes on average.
pub const PER_SHARD: usize = 28;
/// Bytes of member names a shard takes on average.
const NAME_BYTES_PER_SHARD: usize = 448;
/// When the root has at most this many slots open after a shard's, the ack looks at those
/// shards (see [`Barriers::fill`]): one read at most, so that an ack stays within 4 calls.
const LOOK_AT_LAST: u64 = 1;
/// The longest stored outcome kept in its slot; longer ones get a row of their own.
pub const INLINE_BYTES: usize = 64;

/// How many shards a barrier of `members` with `name_bytes` of names in all gets.
pub fn shard_count(members: usize, name_bytes: usize) -> u32 {
    members
        .div_ceil(PER_SHARD)
        .max(name_bytes.div_ceil(NAME_BYTES_PER_SHARD))
        .max(1) as u32
}

/// The shard of `member` in a barrier of `shards` created by `generation`: FNV-1a of both, so
/// that no one can choose names that crowd one shard without knowing the random generation.
pub fn shard_of(generation: &str, member: &str, shards: u32) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in generation.bytes().chain([0]).chain(member.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % u64::from(shards.max(1))) as u32
}

/// Tallies a create writes: the root, then the shards (none apart when there is one).
pub fn tally_count(shards: u32) -> usize {
    if shards <= 1 {
        1
    } else {
        shards as usize + 1
    }
}

/// The most members a barrier's root may hold beside its shards: those added after create
/// (and a one-shard barrier's own).
pub const MAX_ROOT_MEMBERS: usize = 1000;

/// The most bytes of member names a barrier's root may hold (their slots' names).
pub const MAX_ROOT_BYTES: usize = 128 * 1024;

fn slot(member: &str) -> String {
    format!("m{member}")
}

/// Where an ack's fill lands.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    Root,
    Shard(u32),
}

/// What an ack's fills found: whether it was a duplicate and whether the barrier is complete.
pub(super) struct Filled {
    pub duplicate: bool,
    pub complete: bool,
}

impl Barriers<'_> {
    fn key_of(&self, id: &str, generation: &str, t: Target) -> (String, String) {
        match t {
            Target::Root => (pk(self.tenant, id), format!("r#{generation}")),
            Target::Shard(k) => (
                format!("{}#{generation}#{k}", pk(self.tenant, id)),
                "s".into(),
            ),
        }
    }

    fn root_key(&self, id: &str, meta: &Meta) -> (String, String) {
        self.key_of(id, generation(meta), Target::Root)
    }

    async fn tally(&self, op: TallyOp) -> Result<TallyAnswer> {
        self.budget.spend(1)?;
        self.kv.tally(op).await
    }

    /// A tally of the barrier. A shard that no member's hash fell in was never written (nor
    /// given a slot in the root): it reads as empty.
    async fn read_tally(&self, id: &str, meta: &Meta, t: Target) -> Result<Tally> {
        let (pk, sk) = self.key_of(id, generation(meta), t);
        self.budget.spend(1)?;
        match (self.kv.tally_get(&pk, &sk).await?, t) {
            (Some(found), _) => Ok(found),
            (None, Target::Shard(_)) => Ok(Tally::default()),
            (None, Target::Root) => Err(damaged(id, "its root tally is missing")),
        }
    }

    /// Writes the tallies of a barrier of `members` under `generation`, expiring at
    /// `expires`: `ceil(tallies / 25)` calls.
    pub(super) async fn create_shards(
        &self,
        id: &str,
        members: &[String],
        generation: &str,
        shards: u32,
        expires: i64,
    ) -> Result<()> {
        let (rpk, rsk) = self.key_of(id, generation, Target::Root);
        let mut tallies = Vec::with_capacity(tally_count(shards));
        if shards <= 1 {
            tallies.push(NewTally {
                pk: rpk,
                sk: rsk,
                slots: members.iter().map(|m| slot(m)).collect(),
                expires_at_s: expires,
            });
        } else {
            let mut of: Vec<Vec<String>> = vec![Vec::new(); shards as usize];
            for m in members {
                of[shard_of(generation, m, shards) as usize].push(slot(m));
            }
            // A shard that no member's hash fell in is neither written nor waited for: an
            // open slot for it would never be filled.
            tallies.push(NewTally {
                pk: rpk,
                sk: rsk,
                slots: (0..shards)
                    .filter(|k| !of[*k as usize].is_empty())
                    .map(|k| format!("s{k}"))
                    .collect(),
                expires_at_s: expires,
            });
            for (k, slots) in of.into_iter().enumerate() {
                if slots.is_empty() {
                    continue;
                }
                let (pk, sk) = self.key_of(id, generation, Target::Shard(k as u32));
                tallies.push(NewTally {
                    pk,
                    sk,
                    slots,
                    expires_at_s: expires,
                });
            }
        }
        let mut rest = tallies.into_iter().peekable();
        while rest.peek().is_some() {
            let chunk: Vec<NewTally> = rest.by_ref().take(MAX_BATCH_ITEMS).collect();
            self.budget.spend(1)?;
            self.kv.tally_create(chunk).await?;
        }
        Ok(())
    }

    /// Records `encoded` (the stamped outcome) for `member`: see the module docs. Two calls,
    /// three when the ack empties its shard, one more for an outcome too large for its slot or
    /// for a member added after create.
    pub(super) async fn fill(
        &self,
        id: &str,
        meta: &Meta,
        member: &str,
        ok: bool,
        encoded: &str,
        now_s: i64,
    ) -> Result<Filled> {
        let shards = meta.shards.unwrap_or(1);
        let nonce = format!("{:08x}", crate::random::u64() >> 32);
        let value = self.slot_value(id, member, ok, encoded, &nonce).await?;
        let live = now_s + ACK_MARGIN_S;
        let first = if shards <= 1 {
            Target::Root
        } else {
            Target::Shard(shard_of(generation(meta), member, shards))
        };
        let mut target = first;
        let (duplicate, after) = loop {
            let (pk, sk) = self.key_of(id, generation(meta), target);
            let op = TallyOp::Fill {
                pk,
                sk,
                slot: slot(member),
                value: value.clone(),
                mark: !ok,
                live_until_s: live,
            };
            match self.tally(op).await? {
                TallyAnswer::Filled(t) => break (false, t),
                // Its own earlier attempt's value (a lost answer) is no duplicate.
                TallyAnswer::Taken(t) => break (t.slots[&slot(member)] != value, t),
                TallyAnswer::Missed(Some(t)) if t.expires_at_s <= live => {
                    return Err(super::expired())
                }
                // Not in its shard: a member added after create has its slot in the root.
                TallyAnswer::Missed(Some(_)) if target != Target::Root => target = Target::Root,
                TallyAnswer::Missed(Some(_)) => {
                    return Err(Error::InvalidInput(format!(
                        "unknown member {member:?} of barrier {id:?}"
                    )))
                }
                TallyAnswer::Missed(None) => {
                    return Err(damaged(id, "a shard of its members is missing"))
                }
                other => return Err(other.unexpected("fill")),
            }
        };
        if after.open > 0 {
            return Ok(Filled {
                duplicate,
                complete: false,
            });
        }
        let Target::Shard(k) = target else {
            return Ok(Filled {
                duplicate,
                complete: true,
            });
        };
        // The shard is full: its slot in the root, holding how many of its members failed.
        let (pk, sk) = self.root_key(id, meta);
        let op = TallyOp::Fill {
            pk,
            sk,
            slot: format!("s{k}"),
            value: after.marked.to_string(),
            mark: false,
            live_until_s: now_s,
        };
        let mut root = self.fill_root(op, id).await?;
        // At the end, a shard whose emptying ack died before this step (and is never delivered
        // again: a callback's POST, a direct invocation) would hold the barrier open: when one
        // shard is left open, look at it, and mark it done if it is.
        if root.open > 0 && root.open <= LOOK_AT_LAST {
            let open: Vec<u32> = root
                .slots
                .iter()
                .filter(|(s, v)| v.is_empty() && s.starts_with('s'))
                .filter_map(|(s, _)| s[1..].parse().ok())
                .collect();
            for j in open {
                let t = self.read_tally(id, meta, Target::Shard(j)).await?;
                if t.open == 0 {
                    let (pk, sk) = self.root_key(id, meta);
                    root = self
                        .fill_root(
                            TallyOp::Fill {
                                pk,
                                sk,
                                slot: format!("s{j}"),
                                value: t.marked.to_string(),
                                mark: false,
                                live_until_s: now_s,
                            },
                            id,
                        )
                        .await?;
                }
            }
        }
        Ok(Filled {
            duplicate,
            complete: root.open == 0,
        })
    }

    async fn fill_root(&self, op: TallyOp, id: &str) -> Result<Tally> {
        match self.tally(op).await? {
            TallyAnswer::Filled(t) | TallyAnswer::Taken(t) => Ok(t),
            TallyAnswer::Missed(_) => Err(damaged(id, "its root tally is missing")),
            other => Err(other.unexpected("fill")),
        }
    }

    /// What an ack stores in the member's slot: the stamped outcome with a nonce, or, when
    /// that is longer than [`INLINE_BYTES`], its row's name after the row is written.
    async fn slot_value(
        &self,
        id: &str,
        member: &str,
        ok: bool,
        encoded: &str,
        nonce: &str,
    ) -> Result<String> {
        let mut v: Value = serde_json::from_str(encoded).unwrap_or(Value::Null);
        v["k"] = json!(nonce);
        let inline = v.to_string();
        if inline.len() <= INLINE_BYTES {
            return Ok(inline);
        }
        let at_ms = v["at_ms"].clone();
        // The row first: the slot that names it is the ack's only claim, and the first fill
        // wins whichever rows were written.
        self.budget.spend(1)?;
        self.kv
            .put(
                NewItem {
                    pk: pk(self.tenant, id),
                    sk: format!("v#{member}#{nonce}"),
                    value: encoded.to_string(),
                    expires_at_s: now_ms() / 1000 + TTL_S,
                },
                PutMode::Overwrite,
            )
            .await?;
        Ok(json!({ "ok": ok, "at_ms": at_ms, "k": nonce, "row": true }).to_string())
    }

    /// The outcome a slot's value stands for (its row read when it has one), as stored (with
    /// the ack's time); `None` while the member is pending.
    async fn outcome_of(&self, id: &str, member: &str, value: &str) -> Result<Option<Value>> {
        if value.is_empty() {
            return Ok(None);
        }
        let mut v: Value = serde_json::from_str(value).unwrap_or(Value::Null);
        if v["row"] == json!(true) {
            let nonce = v["k"].as_str().unwrap_or_default().to_string();
            return Ok(Some(
                match self.get(id, &format!("v#{member}#{nonce}")).await? {
                    Some(it) => serde_json::from_str(&it.value).unwrap_or(Value::Null),
                    None => json!({ "ok": v["ok"], "at_ms": v["at_ms"] }),
                },
            ));
        }
        if let Value::Object(m) = &mut v {
            m.remove("k");
        }
        Ok(Some(v))
    }

    /// Counts of a sharded barrier: pending members, failed ones, members added after create.
    /// Reads the root, and the shards not yet full.
    pub(super) async fn shard_counts(&self, id: &str, meta: &Meta) -> Result<(u64, u64, u64)> {
        let (counts, _) = self.shard_counts_upto(id, meta, usize::MAX).await?;
        Ok(counts)
    }

    /// [`Barriers::shard_counts`] reading at most `max_shards` shards not yet full: whether
    /// some were left unread (then pending and failed are lower bounds).
    pub(super) async fn shard_counts_upto(
        &self,
        id: &str,
        meta: &Meta,
        max_shards: usize,
    ) -> Result<((u64, u64, u64), bool)> {
        let mut budget = max_shards;
        let mut short = false;
        let root = self.read_tally(id, meta, Target::Root).await?;
        let shards = meta.shards.unwrap_or(1);
        let members = root.slots.keys().filter(|s| s.starts_with('m')).count() as u64;
        let added = if shards <= 1 {
            members.saturating_sub(meta.members)
        } else {
            members
        };
        let mut pending = root
            .slots
            .iter()
            .filter(|(s, v)| s.starts_with('m') && v.is_empty())
            .count() as u64;
        let mut failed = root.marked;
        for k in 0..shards.max(1) {
            if shards <= 1 {
                break;
            }
            match root.slots.get(&format!("s{k}")).map(String::as_str) {
                Some("") if budget == 0 => short = true,
                Some("") => {
                    budget -= 1;
                    let t = self.read_tally(id, meta, Target::Shard(k)).await?;
                    pending += t.open;
                    failed += t.marked;
                }
                Some(n) => failed += n.parse::<u64>().unwrap_or(0),
                None => {}
            }
        }
        Ok(((pending, failed, added), short))
    }

    /// Whether a sharded barrier has members pending: one read (the root).
    pub(super) async fn shard_pending(&self, id: &str, meta: &Meta) -> Result<bool> {
        Ok(self.read_tally(id, meta, Target::Root).await?.open > 0)
    }

    /// Members of a sharded barrier with their slot values, in shard order and by name within a
    /// shard (the added ones last), from the one after `after`, until `want` says stop (then
    /// the member it stopped at): a shard is read only when the walk reaches it.
    pub(super) async fn walk(
        &self,
        id: &str,
        meta: &Meta,
        after: Option<&str>,
        mut want: impl FnMut(&str, &str) -> bool,
    ) -> Result<Option<String>> {
        let shards = meta.shards.unwrap_or(1);
        let targets: Vec<Target> = if shards <= 1 {
            vec![Target::Root]
        } else {
            (0..shards)
                .map(Target::Shard)
                .chain([Target::Root])
                .collect()
        };
        // Where the cursor's member is: its shard, or the root if it was added.
        let mut from = 0;
        let mut first: Option<Tally> = None;
        if let (Some(a), true) = (after, shards > 1) {
            let k = shard_of(generation(meta), a, shards);
            let t = self.read_tally(id, meta, Target::Shard(k)).await?;
            if t.slots.contains_key(&slot(a)) {
                from = k as usize;
                first = Some(t);
            } else {
                from = shards as usize;
            }
        }
        let mut skip_to = after;
        for target in &targets[from..] {
            let t = match first.take() {
                Some(t) => t,
                None => self.read_tally(id, meta, *target).await?,
            };
            for (s, v) in &t.slots {
                let Some(member) = s.strip_prefix('m') else {
                    continue;
                };
                if skip_to.is_some_and(|a| member <= a) {
                    continue;
                }
                if !want(member, v) {
                    return Ok(Some(member.to_string()));
                }
            }
            skip_to = None;
        }
        Ok(None)
    }

    /// A page of at most `limit` members of a sharded barrier after `after`, those `take`
    /// keeps, with their outcomes (as stored; `None` while pending), and the cursor for the
    /// next page.
    pub(super) async fn shard_page(
        &self,
        id: &str,
        meta: &Meta,
        after: Option<&str>,
        limit: usize,
        take: impl Fn(&str) -> bool,
    ) -> Result<(Vec<(String, Option<Value>)>, Option<String>)> {
        let mut raw: Vec<(String, String)> = Vec::new();
        let stop = self
            .walk(id, meta, after, |m, v| {
                if !take(v) {
                    return true;
                }
                if raw.len() == limit {
                    return false;
                }
                raw.push((m.to_string(), v.to_string()));
                true
            })
            .await?;
        let next = stop.and(raw.last().map(|(m, _)| m.clone()));
        let mut out = Vec::with_capacity(raw.len());
        for (m, v) in raw {
            let o = self.outcome_of(id, &m, &v).await?;
            out.push((m, o));
        }
        Ok((out, next))
    }

    /// Adds `members` to a sharded barrier: those not in it yet become open slots of the root,
    /// in one conditional write per 20, refused once nothing is pending or it is cancelled.
    pub(super) async fn shard_add(&self, id: &str, meta: &Meta, members: &[String]) -> Result<u64> {
        let shards = meta.shards.unwrap_or(1);
        let generation = generation(meta);
        let mut fresh: Vec<&String> = Vec::new();
        // A member of a shard is in the barrier already; each shard read once.
        let mut seen: std::collections::BTreeMap<u32, Tally> = Default::default();
        for m in members {
            if shards > 1 {
                let k = shard_of(generation, m, shards);
                if let std::collections::btree_map::Entry::Vacant(e) = seen.entry(k) {
                    e.insert(self.read_tally(id, meta, Target::Shard(k)).await?);
                }
                if seen[&k].slots.contains_key(&slot(m)) {
                    continue;
                }
            }
            fresh.push(m);
        }
        let mut added = 0;
        let (pk, sk) = self.root_key(id, meta);
        // The root holds every added member in one item, rewritten by each chunk: bounded, so
        // that an add costs the store (and DynamoDB's 400 KB item) a bounded amount.
        let root = self.read_tally(id, meta, Target::Root).await?;
        let in_root = |t: &Tally| {
            t.slots
                .keys()
                .filter(|k| k.starts_with('m'))
                .fold((0, 0), |(n, b), k| (n + 1, b + k.len()))
        };
        let (mut held, mut bytes) = in_root(&root);
        for chunk in fresh.chunks(20) {
            let more: usize = chunk.iter().map(|m| slot(m).len()).sum();
            if held + chunk.len() > MAX_ROOT_MEMBERS || bytes + more > MAX_ROOT_BYTES {
                return Err(Error::InvalidInput(format!(
                    "barrier.add: barrier {id:?} would hold more than {MAX_ROOT_MEMBERS} members added after \
                     its create, or {MAX_ROOT_BYTES} bytes of their names (it holds {held}, {bytes} bytes; \
                     this call added {added} before stopping); list members at create, which takes \
                     any number, or add them to another barrier"
                )));
            }
            let op = TallyOp::Open {
                pk: pk.clone(),
                sk: sk.clone(),
                slots: chunk.iter().map(|m| slot(m)).collect(),
            };
            match self.tally(op).await? {
                TallyAnswer::Opened(new, t) => {
                    added += new.len() as u64;
                    (held, bytes) = in_root(&t);
                }
                TallyAnswer::Refused(Some(t)) if t.closed.is_some() => {
                    return Err(Error::InvalidInput(format!(
                        "barrier {id:?} is cancelled; members cannot be added"
                    )))
                }
                TallyAnswer::Refused(Some(_)) => {
                    return Err(Error::InvalidInput(format!(
                        "barrier {id:?} is complete: its continuation has run or is running; add members before the last ack, or create another barrier"
                    )))
                }
                TallyAnswer::Refused(None) => return Err(damaged(id, "its root tally is missing")),
                other => return Err(other.unexpected("open")),
            }
        }
        Ok(added)
    }

    /// Closes a sharded barrier's root, so that no member can be added after a cancel.
    pub(super) async fn shard_close(&self, id: &str, meta: &Meta, reason: &str) -> Result<()> {
        let (pk, sk) = self.root_key(id, meta);
        match self
            .tally(TallyOp::Close {
                pk,
                sk,
                reason: reason.to_string(),
            })
            .await?
        {
            TallyAnswer::Closed(_) => Ok(()),
            TallyAnswer::Missed(_) => Err(damaged(id, "its root tally is missing")),
            other => Err(other.unexpected("close")),
        }
    }
}

/// The stored outcome as scripts see it.
pub(super) fn for_scripts(v: Value) -> Value {
    list::unstamped(v)
}

fn generation(meta: &Meta) -> &str {
    meta.generation.as_deref().unwrap_or("")
}

fn damaged(id: &str, what: &str) -> Error {
    Error::Backend {
        backend: "barrier",
        message: format!("barrier {id:?} is damaged: {what}"),
        source: None,
    }
}
