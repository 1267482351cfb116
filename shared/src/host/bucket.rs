//! `native.bucket.<Name>`: the tenant's folder in each data bucket of `buckets.map`.

use bytes::Bytes;
use mlua::{Lua, Table};

use super::{check_key, invocation, raise};
use crate::config::Deployment;
use crate::ports::PutMode;

const MB: u64 = 1024 * 1024;

/// The `native.bucket` table: one table of functions per logical bucket name.
pub fn module(lua: &Lua, deployment: &Deployment) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    for logical in deployment.buckets.map.keys() {
        t.set(logical.as_str(), bucket(lua, logical)?)?;
    }
    // An unknown name is an error that lists the known ones, not a nil to index later.
    let names: Vec<String> = deployment.buckets.map.keys().cloned().collect();
    let meta = lua.create_table()?;
    meta.set(
        "__index",
        super::function(
            lua,
            ("native.bucket", &["self", "name"]),
            move |lua, (_t, name): (mlua::Value, String)| -> mlua::Result<()> {
                Err(raise(
                    lua,
                    format!(
                        "unknown bucket {name:?}: buckets.map of deployment.json has {}",
                        if names.is_empty() {
                            "no buckets".into()
                        } else {
                            names.join(", ")
                        }
                    ),
                ))
            },
        )?,
    )?;
    // Shared by every invocation of the VM: nobody may read or change it.
    meta.set("__metatable", "locked")?;
    meta.set_readonly(true);
    t.set_metatable(Some(meta))?;
    Ok(t)
}

fn bucket(lua: &Lua, logical: &str) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let name = logical.to_string();
    let sig =
        |f: &str, params: &'static [&'static str]| (format!("native.bucket.{name}.{f}"), params);

    let n = name.clone();
    t.set(
        "get",
        super::function(lua, sig("get", &["key"]), move |lua, Key(key): Key| {
            let (inv, real, full) = target(lua, &n, &key)?;
            let got = inv.block_on(lua, inv.services.backends.objects.get(&real, &full))?;
            let Some((meta, data)) = got else {
                return Ok(None);
            };
            let max = u64::from(inv.tenant.config.limits.max_object_mb);
            if meta.size > max * MB {
                return Err(inv.breach(
                    lua,
                    "max_object_mb",
                    format!(
                        "{n}/{key} is {} bytes and the tenant reads \
                         objects of at most {max} MB whole; stream it with native.ndjson.rows",
                        meta.size
                    ),
                ));
            }
            lua.create_string(&data).map(Some)
        })?,
    )?;

    let n = name.clone();
    t.set(
        "put",
        super::function(
            lua,
            sig("put", &["key", "body"]),
            move |lua, (Key(key), body): (Key, mlua::LuaString)| {
                check_key(lua, &key)?;
                let inv = invocation(lua)?;
                let max = u64::from(inv.tenant.config.limits.max_object_mb);
                let len = body.as_bytes().len() as u64;
                if len > max * MB {
                    return Err(inv.breach(
                        lua,
                        "max_object_mb",
                        format!("the body for {n}/{key} is {len} bytes; the limit is {max} MB"),
                    ));
                }
                inv.charge(lua, 1)?;
                let (real, full) = locate(&inv.services.deployment, &n, &inv.tenant.name, &key);
                let data = Bytes::copy_from_slice(&body.as_bytes());
                let meta = inv.block_on(
                    lua,
                    inv.services.backends.objects.put_in_chain(
                        &real,
                        &full,
                        data,
                        PutMode::Overwrite,
                        inv.depth + 1,
                        Some(&inv.trace),
                    ),
                )?;
                Ok(meta.etag)
            },
        )?,
    )?;

    let n = name.clone();
    t.set(
        "delete",
        super::function(lua, sig("delete", &["key"]), move |lua, Key(key): Key| {
            let (inv, real, full) = target(lua, &n, &key)?;
            inv.block_on(lua, inv.services.backends.objects.delete(&real, &full))
        })?,
    )?;

    let n = name.clone();
    t.set(
        "open",
        super::function(lua, sig("open", &["key"]), move |lua, Key(key): Key| {
            check_key(lua, &key)?;
            let inv = invocation(lua)?;
            let (bucket, key_full) = locate(&inv.services.deployment, &n, &inv.tenant.name, &key);
            Ok(super::ndjson::Stream {
                bucket,
                key: key_full,
                label: format!("{n}/{key}"),
            })
        })?,
    )?;

    let n = name.clone();
    t.set(
        "head",
        super::function(lua, sig("head", &["key"]), move |lua, Key(key): Key| {
            let (inv, real, full) = target(lua, &n, &key)?;
            let Some(meta) = inv.block_on(lua, inv.services.backends.objects.head(&real, &full))?
            else {
                return Ok(None);
            };
            let t = lua.create_table()?;
            t.set("key", key)?;
            t.set("size", meta.size)?;
            t.set("etag", meta.etag)?;
            t.set("modified_ms", meta.modified_ms)?;
            Ok(Some(t))
        })?,
    )?;

    let n = name.clone();
    t.set(
        "list",
        super::function(
            lua,
            sig("list", &["prefix?", "opts?"]),
            move |lua, (prefix, opts): (Option<String>, Option<Table>)| {
                let prefix = prefix.unwrap_or_default();
                crate::keys::check_prefix(&prefix).map_err(|why| raise(lua, why))?;
                let after = match &opts {
                    Some(o) => o.get::<Option<String>>("cursor")?,
                    None => None,
                };
                let func = format!("native.bucket.{n}.list");
                let limit = super::opt_whole(lua, opts.as_ref(), &func, "limit", 1..=1000)?
                    .unwrap_or(1000) as usize;
                let inv = invocation(lua)?;
                inv.charge(lua, 1)?;
                let folder = inv.services.deployment.full_key(&n, &inv.tenant.name, "");
                let real = real_bucket(&inv.services.deployment, &n);
                let full_prefix = format!("{folder}{prefix}");
                let full_after = after.map(|a| format!("{folder}{a}"));
                let page = inv.block_on(
                    lua,
                    inv.services.backends.objects.list(
                        &real,
                        &full_prefix,
                        full_after.as_deref(),
                        limit,
                    ),
                )?;
                let keys = lua.create_table()?;
                let objects = lua.create_table()?;
                for (i, o) in page.objects.iter().enumerate() {
                    let rel = &o.key[folder.len()..];
                    keys.raw_seti(i + 1, rel)?;
                    let m = lua.create_table()?;
                    m.set("key", rel)?;
                    m.set("size", o.size)?;
                    m.set("etag", o.etag.as_str())?;
                    m.set("modified_ms", o.modified_ms)?;
                    objects.raw_seti(i + 1, m)?;
                }
                let out = lua.create_table()?;
                out.set("keys", keys)?;
                out.set("objects", objects)?;
                out.set("cursor", page.next.map(|k| k[folder.len()..].to_string()))?;
                Ok(out)
            },
        )?,
    )?;

    let n = name.clone();
    t.set(
        "replay",
        super::function(
            lua,
            sig("replay", &["prefix", "opts?"]),
            move |lua, (prefix, opts): (String, Option<Table>)| {
                crate::keys::check_prefix(&prefix).map_err(|why| raise(lua, why))?;
                let after = match &opts {
                    Some(o) => o.get::<Option<String>>("cursor")?,
                    None => None,
                };
                let inv = invocation(lua)?;
                let replay = crate::replay::Replay {
                    objects: inv.services.backends.objects.as_ref(),
                    queue: inv.services.backends.queue.as_ref(),
                    deployment: &inv.services.deployment,
                    tenant: &inv.tenant.name,
                    budget: &*inv,
                };
                let r = inv.block_on(lua, replay.run(&n, &prefix, after.as_deref()))?;
                let out = lua.create_table()?;
                out.set("replayed", r.replayed)?;
                out.set("cursor", r.cursor)?;
                Ok(out)
            },
        )?,
    )?;
    Ok(t)
}

/// Checks a key, counts the call, and gives the invocation with the object's real bucket and
/// full key: the start of every single-object call.
fn target<'a>(
    lua: &'a Lua,
    logical: &str,
    key: &str,
) -> mlua::Result<(mlua::AppDataRef<'a, super::Invocation>, String, String)> {
    check_key(lua, key)?;
    let inv = invocation(lua)?;
    inv.charge(lua, 1)?;
    let (real, full) = locate(&inv.services.deployment, logical, &inv.tenant.name, key);
    Ok((inv, real, full))
}

fn real_bucket(d: &Deployment, logical: &str) -> String {
    d.real_bucket(logical).unwrap_or_default().to_string()
}

/// The real bucket and full key of a tenant's relative key.
pub(crate) fn locate(d: &Deployment, logical: &str, tenant: &str, key: &str) -> (String, String) {
    (real_bucket(d, logical), d.full_key(logical, tenant, key))
}

/// An object key as a script passes it: a string and nothing else. mlua would turn a number
/// into its text, so that `put(1, "x")` wrote the key "1" and `put(1, {})` blamed the body.
struct Key(String);

impl mlua::FromLua for Key {
    fn from_lua(value: mlua::Value, _lua: &Lua) -> mlua::Result<Self> {
        match value {
            mlua::Value::String(s) => Ok(Key(s.to_str()?.to_string())),
            other => Err(mlua::Error::FromLuaConversionError {
                from: other.type_name(),
                to: "String".into(),
                message: None,
            }),
        }
    }
}
