//! One way to register host functions, so that a wrong argument names the function, the
//! parameter and the script line: `s.luau:4: native.db.put: parameter "key" must be a string,
//! not a table`, where mlua alone says `bad argument #2: error converting Lua table to String`.
//!
//! [`function`] (for the functions of the `native` table) and [`method`] / [`method_mut`] (for
//! the methods of userdata such as a batch job) take the arguments as they come, convert them
//! to the typed tuple the body wants, and turn a failed conversion into that message. A
//! conversion that fails inside the body (an option read from a table) is named as well.

use std::sync::Arc;

use mlua::{
    AnyUserData, Error, FromLuaMulti, Function, IntoLuaMulti, Lua, MaybeSend, MultiValue, Value,
};

use super::raise;

/// The name of a host function as scripts write it (`native.db.put`, `job:rows`) and the names
/// of its parameters in order (self left out); a trailing `?` marks an optional one.
pub type Signature = (&'static str, &'static [&'static str]);

/// A host function whose body takes typed arguments; `(name, params)` as in [`Signature`], the
/// name may be built at run time (`native.bucket.In.get`).
pub fn function<A, R, F>(
    lua: &Lua,
    (name, params): (impl Into<String>, &'static [&'static str]),
    f: F,
) -> mlua::Result<Function>
where
    A: FromLuaMulti,
    R: IntoLuaMulti,
    F: Fn(&Lua, A) -> mlua::Result<R> + MaybeSend + 'static,
{
    let name: Arc<str> = name.into().into();
    lua.create_function(move |lua, args: MultiValue| {
        let args = convert::<A>(lua, &name, params, args)?;
        f(lua, args).map_err(|e| in_body(lua, &name, e))
    })
}

/// A method of a userdata `T`, named as scripts call it (`job:rows`).
pub fn method<T, A, R, F>(
    (name, params): Signature,
    f: F,
) -> impl Fn(&Lua, &T, MultiValue) -> mlua::Result<R> + MaybeSend + 'static
where
    A: FromLuaMulti,
    R: IntoLuaMulti,
    F: Fn(&Lua, &T, A) -> mlua::Result<R> + MaybeSend + 'static,
{
    move |lua, this, args| {
        let args = convert::<A>(lua, name, params, args)?;
        f(lua, this, args).map_err(|e| in_body(lua, name, e))
    }
}

/// [`method`] for a method that changes its userdata.
pub fn method_mut<T, A, R, F>(
    (name, params): Signature,
    mut f: F,
) -> impl FnMut(&Lua, &mut T, MultiValue) -> mlua::Result<R> + MaybeSend + 'static
where
    A: FromLuaMulti,
    R: IntoLuaMulti,
    F: FnMut(&Lua, &mut T, A) -> mlua::Result<R> + MaybeSend + 'static,
{
    move |lua, this, args| {
        let args = convert::<A>(lua, name, params, args)?;
        f(lua, this, args).map_err(|e| in_body(lua, name, e))
    }
}

/// Converts the arguments, naming the parameter whose conversion failed.
fn convert<A: FromLuaMulti>(
    lua: &Lua,
    name: &str,
    params: &[&str],
    args: MultiValue,
) -> mlua::Result<A> {
    // `from_lua_args` is what mlua's own create_function uses: it reports the position of a
    // failed argument as Error::BadArgument, which is all this needs.
    A::from_lua_args(args, 1, None, lua).map_err(|e| match e {
        Error::BadArgument { pos, cause, .. } => {
            let param = match params.get(pos.wrapping_sub(1)) {
                Some(p) => format!("parameter {:?}", p.trim_end_matches('?')),
                None => format!("argument #{pos}"),
            };
            raise(lua, format!("{name}: {param} {}", expected(&cause)))
        }
        other => raise(lua, format!("{name}: {}", super::message_of(&other))),
    })
}

/// A field of a table argument, typed: a wrong type names the function and the field
/// (`native.batch.route: key must be a string, not a table`).
pub fn field<T: mlua::FromLua>(
    lua: &Lua,
    t: &mlua::Table,
    func: &str,
    name: &str,
) -> mlua::Result<T> {
    t.get::<T>(name).map_err(|e| match &e {
        Error::FromLuaConversionError { .. } => {
            raise(lua, format!("{func}: {name} {}", expected(&e)))
        }
        _ => e,
    })
}

/// An error of the body: a failed conversion there (an option read from a table argument) gets
/// the function's name and the script line; everything else is already worded and passes.
fn in_body(lua: &Lua, name: &str, e: Error) -> Error {
    match &e {
        Error::FromLuaConversionError { .. } => raise(
            lua,
            format!("{name}: a field of a table argument {}", expected(&e)),
        ),
        _ => e,
    }
}

/// `must be a string, not a table` for a failed conversion.
fn expected(cause: &Error) -> String {
    match cause {
        Error::FromLuaConversionError { from, to, .. } => {
            let want = lua_type(to);
            if want == "a whole number" && (*from == "number" || *from == "integer") {
                // A number, but with a fraction or out of range for the Rust type.
                return match int_range(to) {
                    Some((lo, hi)) => format!("must be a whole number from {lo} to {hi}"),
                    None => "must be a whole number in range".to_string(),
                };
            }
            let got = match *from {
                "nil" => "nil".to_string(),
                "integer" => "a number".to_string(),
                f => format!("{} {f}", article(f)),
            };
            format!("must be {want}, not {got}")
        }
        Error::UserDataTypeMismatch => "is not the kind of userdata expected".to_string(),
        Error::BadArgument { cause, .. } => expected(cause),
        Error::CallbackError { cause, .. } => expected(cause),
        other => format!("is wrong: {other}"),
    }
}

/// The range of an integer type, as far as a Luau number (a double) holds it exactly.
fn int_range(rust: &str) -> Option<(i64, i64)> {
    const SAFE: i64 = (1 << 53) - 1;
    Some(match rust.rsplit("::").next().unwrap_or(rust) {
        "i8" => (i8::MIN.into(), i8::MAX.into()),
        "i16" => (i16::MIN.into(), i16::MAX.into()),
        "i32" => (i32::MIN.into(), i32::MAX.into()),
        "u8" => (0, u8::MAX.into()),
        "u16" => (0, u16::MAX.into()),
        "u32" => (0, u32::MAX.into()),
        "i64" | "isize" | "i128" => (-SAFE, SAFE),
        "u64" | "usize" | "u128" => (0, SAFE),
        _ => return None,
    })
}

/// The Luau type a script must pass for a Rust type name from mlua.
fn lua_type(rust: &str) -> String {
    let last = rust.rsplit("::").next().unwrap_or(rust);
    let last = last.split('<').next().unwrap_or(last);
    match last {
        "String" | "str" | "string" | "BString" | "LuaString" | "OsString" | "PathBuf" => {
            "a string".into()
        }
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64" | "u128"
        | "usize" => "a whole number".into(),
        "f32" | "f64" | "Number" => "a number".into(),
        "bool" => "a boolean".into(),
        "table" | "Table" | "Vec" | "HashMap" | "BTreeMap" => "a table".into(),
        "function" | "Function" => "a function".into(),
        "userdata" => "a userdata".into(),
        other => format!("{} {other}", article(other)),
    }
}

/// A value's type as errors say it: `a table`, `a boolean`, `nil`.
pub(crate) fn a_type(v: &Value) -> String {
    match v.type_name() {
        "nil" => "nil".into(),
        "integer" => "a number".into(),
        t => format!("{} {t}", article(t)),
    }
}

fn article(word: &str) -> &'static str {
    // "a userdata": the u is said as "you".
    if word.starts_with(['a', 'e', 'i', 'o']) {
        "an"
    } else {
        "a"
    }
}

/// Registers [`method`] on `m` under the name after the `:` of the signature (`job:rows`). The
/// receiver is checked here too, so that `job.rows("x")` (a dot for a colon) says so instead of
/// mlua's `bad argument #1: error converting Lua string to userdata`.
pub fn add_method<T, M, A, R, F>(m: &mut M, sig: Signature, f: F)
where
    T: mlua::UserData + 'static,
    M: mlua::UserDataMethods<T>,
    A: FromLuaMulti,
    R: IntoLuaMulti,
    F: Fn(&Lua, &T, A) -> mlua::Result<R> + MaybeSend + 'static,
{
    #[cfg(test)]
    registered(sig);
    let call = method(sig, f);
    m.add_function(method_name(sig), move |lua, mut args: MultiValue| {
        let this = receiver(lua, sig, args.pop_front())?;
        let this = this
            .borrow::<T>()
            .map_err(|e| raise(lua, format!("{}: {}", sig.0, wrong_receiver(&e))))?;
        call(lua, &this, args)
    });
}

/// [`add_method`] for a method that changes its userdata.
pub fn add_method_mut<T, M, A, R, F>(m: &mut M, sig: Signature, f: F)
where
    T: mlua::UserData + 'static,
    M: mlua::UserDataMethods<T>,
    A: FromLuaMulti,
    R: IntoLuaMulti,
    F: FnMut(&Lua, &mut T, A) -> mlua::Result<R> + MaybeSend + 'static,
{
    #[cfg(test)]
    registered(sig);
    let mut call = method_mut(sig, f);
    m.add_function_mut(method_name(sig), move |lua, mut args: MultiValue| {
        let this = receiver(lua, sig, args.pop_front())?;
        let mut this = this
            .borrow_mut::<T>()
            .map_err(|e| raise(lua, format!("{}: {}", sig.0, wrong_receiver(&e))))?;
        call(lua, &mut this, args)
    });
}

/// The userdata a method was called on, or an error that says to call it with a colon.
fn receiver(lua: &Lua, (name, _): Signature, first: Option<Value>) -> mlua::Result<AnyUserData> {
    match first {
        Some(Value::UserData(ud)) => Ok(ud),
        other => {
            let (owner, method) = name.split_once(':').unwrap_or(("object", name));
            let got = other.as_ref().map_or("nothing", Value::type_name);
            Err(raise(
                lua,
                format!(
                    "{name}: call it with a colon, {owner}:{method}(...), not {owner}.{method}(...) \
                     (it got {got} where the {owner} should be)"
                ),
            ))
        }
    }
}

/// Why a userdata could not be the receiver.
fn wrong_receiver(e: &Error) -> String {
    match e {
        Error::UserDataTypeMismatch => "called on another kind of object".into(),
        Error::UserDataBorrowError | Error::UserDataBorrowMutError => {
            "called while the same object is busy in another call of its methods".into()
        }
        other => other.to_string(),
    }
}

fn method_name((name, _): Signature) -> &'static str {
    name.rsplit(':').next().unwrap_or(name)
}

/// Every method registered through [`add_method`] and [`add_method_mut`] in this process, by
/// the name scripts call it by (`job:rows`): what the type definitions are checked against.
#[cfg(test)]
pub(crate) fn registered_methods() -> std::collections::BTreeSet<&'static str> {
    METHODS.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

#[cfg(test)]
static METHODS: std::sync::Mutex<std::collections::BTreeSet<&'static str>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

#[cfg(test)]
fn registered((name, _): Signature) {
    METHODS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(name);
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlua::FromLua;

    #[test]
    fn conversion_errors_read_as_what_was_expected_and_given() {
        // GIVEN the conversion errors mlua gives for wrong values
        let lua = Lua::new();
        let err = |v: Value, to: &str| -> String {
            let e = match to {
                "string" => String::from_lua(v, &lua).unwrap_err(),
                "u32" => u32::from_lua(v, &lua).unwrap_err(),
                "usize" => usize::from_lua(v, &lua).unwrap_err(),
                "table" => mlua::Table::from_lua(v, &lua).unwrap_err(),
                _ => unreachable!(),
            };
            expected(&e)
        };
        // WHEN each is worded THEN it names the Luau type wanted and the one given
        let t = Value::Table(lua.create_table().unwrap());
        assert_eq!(err(t.clone(), "string"), "must be a string, not a table");
        assert_eq!(err(Value::Nil, "table"), "must be a table, not nil");
        assert_eq!(err(t, "u32"), "must be a whole number, not a table");
        assert_eq!(
            err(Value::Number(1.5), "u32"),
            "must be a whole number from 0 to 4294967295"
        );
        assert_eq!(
            err(Value::Number(-1.0), "usize"),
            "must be a whole number from 0 to 9007199254740991"
        );
        let ud = Value::UserData(lua.create_any_userdata(1u8).unwrap());
        assert_eq!(err(ud, "string"), "must be a string, not a userdata");
    }
}
