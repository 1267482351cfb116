//! `native.db`: JSON items addressed by a partition and a key, in the tenant's own space of the
//! key-value table. Every item expires after a week unless told sooner.

use mlua::{Lua, Table, Value};

use super::Signature;
use super::{invocation, raise, to_json_text, to_lua, Invocation};
use crate::ports::{now_ms, NewItem, PutMode};
use crate::Error;

/// How long items live at most: a week.
pub const MAX_TTL_S: i64 = 7 * 24 * 3600;

/// The largest encoded value (DynamoDB items are at most 400 KB with their keys).
pub const MAX_VALUE_BYTES: usize = 350 * 1024;

/// The partition key of a tenant's `native.db` partition. Other rows of a tenant (barriers)
/// use other leading letters, so no `native.db` call can address them.
pub fn db_pk(tenant: &str, partition: &str) -> String {
    format!("d#{tenant}#{partition}")
}

fn check_part(lua: &Lua, what: &str, s: &str) -> mlua::Result<()> {
    if s.is_empty() || s.len() > 512 || s.chars().any(char::is_control) {
        return Err(raise(
            lua,
            format!("native.db: {what} {s:?} must be 1 to 512 bytes without control characters"),
        ));
    }
    Ok(())
}

fn ttl(lua: &Lua, func: &str, opts: &Option<Table>) -> mlua::Result<i64> {
    let ttl =
        super::opt_whole(lua, opts.as_ref(), func, "ttl_s", 1..=MAX_TTL_S)?.unwrap_or(MAX_TTL_S);
    Ok(now_ms() / 1000 + ttl)
}

fn item(
    lua: &Lua,
    func: &str,
    (partition, key, value, opts): (String, String, Value, Option<Table>),
) -> mlua::Result<NewItem> {
    check_part(lua, "partition", &partition)?;
    check_part(lua, "key", &key)?;
    let text = to_json_text(lua, value, false, &format_args!("{func}: the value"))?;
    let text = String::from_utf8(text).map_err(|e| raise(lua, e))?;
    if text.len() > MAX_VALUE_BYTES {
        return Err(raise(
            lua,
            format!("{func}: the value for {partition:?}/{key:?} is {} bytes encoded; the limit is {MAX_VALUE_BYTES}; put large data in a bucket", text.len()),
        ));
    }
    let inv = invocation(lua)?;
    Ok(NewItem {
        pk: db_pk(&inv.tenant.name, &partition),
        sk: key,
        value: text,
        expires_at_s: ttl(lua, func, &opts)?,
    })
}

/// Checks a partition and key, counts the call, and gives the invocation and the item's
/// partition key: the start of every single-item call.
fn address<'a>(
    lua: &'a Lua,
    partition: &str,
    key: &str,
) -> mlua::Result<(mlua::AppDataRef<'a, Invocation>, String)> {
    check_part(lua, "partition", partition)?;
    check_part(lua, "key", key)?;
    let inv = invocation(lua)?;
    inv.charge(lua, 1)?;
    let pk = db_pk(&inv.tenant.name, partition);
    Ok((inv, pk))
}

/// The `native.db` table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    const GET: Signature = ("native.db.get", &["partition", "key"]);
    const PUT: Signature = ("native.db.put", &["partition", "key", "value", "opts?"]);
    const PUT_IF_ABSENT: Signature = (
        "native.db.put_if_absent",
        &["partition", "key", "value", "opts?"],
    );
    const DELETE: Signature = ("native.db.delete", &["partition", "key"]);
    const QUERY: Signature = ("native.db.query", &["partition", "opts?"]);
    /// The arguments of put and put_if_absent.
    type PutArgs = (String, String, Value, Option<Table>);
    /// The arguments of query.
    type QueryArgs = (String, Option<Table>);
    let t = lua.create_table()?;
    t.set(
        "get",
        super::function(lua, GET, |lua, (partition, key): (String, String)| {
            let (inv, pk) = address(lua, &partition, &key)?;
            match inv.block_on(lua, inv.services.backends.kv.get(&pk, &key))? {
                Some(item) => decode(lua, &item.value),
                None => Ok(Value::Nil),
            }
        })?,
    )?;
    t.set(
        "put",
        super::function(lua, PUT, |lua, args: PutArgs| {
            let item = item(lua, PUT.0, args)?;
            let inv = invocation(lua)?;
            inv.charge(lua, 1)?;
            inv.block_on(lua, inv.services.backends.kv.put(item, PutMode::Overwrite))?;
            Ok(())
        })?,
    )?;
    t.set(
        "put_if_absent",
        super::function(lua, PUT_IF_ABSENT, |lua, args: PutArgs| {
            let item = item(lua, PUT_IF_ABSENT.0, args)?;
            let inv = invocation(lua)?;
            inv.charge(lua, 1)?;
            let kv = inv.services.backends.kv.clone();
            let wrote = inv.block_on(lua, async move {
                match kv.put(item, PutMode::Create).await {
                    Ok(_) => Ok(true),
                    Err(Error::AlreadyExists { .. }) => Ok(false),
                    Err(e) => Err(e),
                }
            })?;
            Ok(wrote)
        })?,
    )?;
    t.set(
        "delete",
        super::function(lua, DELETE, |lua, (partition, key): (String, String)| {
            let (inv, pk) = address(lua, &partition, &key)?;
            inv.block_on(lua, inv.services.backends.kv.delete(&pk, &key, None))
        })?,
    )?;
    t.set(
        "query",
        super::function(lua, QUERY, |lua, (partition, opts): QueryArgs| {
            check_part(lua, "partition", &partition)?;
            let (prefix, cursor) = match &opts {
                Some(o) => (
                    o.get::<Option<String>>("prefix")?.unwrap_or_default(),
                    o.get::<Option<String>>("cursor")?,
                ),
                None => (String::new(), None),
            };
            let limit = super::opt_whole(lua, opts.as_ref(), "native.db.query", "limit", 1..=1000)?
                .unwrap_or(100) as usize;
            let inv = invocation(lua)?;
            inv.charge(lua, 1)?;
            let pk = db_pk(&inv.tenant.name, &partition);
            let page = inv.block_on(
                lua,
                inv.services
                    .backends
                    .kv
                    .query(&pk, &prefix, cursor.as_deref(), limit),
            )?;
            let items = lua.create_table()?;
            for (i, it) in page.items.iter().enumerate() {
                let row = lua.create_table()?;
                row.set("key", it.sk.as_str())?;
                row.set("value", decode(lua, &it.value)?)?;
                items.raw_seti(i + 1, row)?;
            }
            let out = lua.create_table()?;
            out.set("items", items)?;
            out.set("cursor", page.next)?;
            Ok(out)
        })?,
    )?;
    Ok(t)
}

fn decode(lua: &Lua, text: &str) -> mlua::Result<Value> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| raise(lua, format!("native.db: stored value is not JSON: {e}")))?;
    to_lua(lua, &v)
}
