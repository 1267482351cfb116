//! Wrong argument types to host functions: every error names the function, the parameter, what
//! was expected and what was given, with the script and line, where mlua alone says
//! `bad argument #2: error converting Lua table to String`.

use native_tests::TestProject;
use serde_json::json;

/// Calls each case through pcall on line 4 and returns the error messages by case.
const SCRIPT: &str = r#"local cases = ...
function on_invoke(ctx, ev)
  local out = {}
  local function try(name, f, ...) local ok, e = pcall(f, ...) out[name] = if ok then "no error" else e end
  local In = native.bucket.In
  try("json.encode", native.json.encode, {}, "pretty")
  try("json.decode", native.json.decode, {})
  try("log level", native.log, {}, "m")
  try("log fields", native.log, "info", "m", "f")
  try("bucket get", In.get, {})
  try("bucket put", In.put, "k", {})
  try("bucket put number key", In.put, 1, "x")
  try("bucket put number key and table", In.put, 1, {})
  try("bucket get number key", In.get, 7)
  try("bucket delete", In.delete, true)
  try("bucket head", In.head, nil)
  try("bucket open", In.open, {})
  try("bucket list prefix", In.list, {})
  try("bucket list opts", In.list, "", "x")
  try("bucket name", function() return native.bucket[{}] end)
  try("db get", native.db.get, "p", {})
  try("db put", native.db.put, "p", {}, 1)
  try("db put_if_absent", native.db.put_if_absent, {}, "k", 1)
  try("db delete", native.db.delete, "p", false)
  try("db query", native.db.query, "p", 5)
  try("queue send", native.queue.send, {}, {})
  try("bucket list cursor", In.list, "", { cursor = {} })
  try("barrier create", native.barrier.create, "x")
  try("barrier ack", native.barrier.ack, "b", {}, {})
  try("barrier status", native.barrier.status, {})
  try("batch new", native.batch.new, "x")
  try("batch hydrate", native.batch.hydrate, { job = "j" }, "y")
  local job = native.batch.new()
  try("job input_rows", job.input_rows, job, {}, {})
  try("job query", job.query, job, "q", {})
  try("job continue_with", job.continue_with, job, {})
  try("job http", job.http, job, "r", "x")
  try("job with a dot", job.submit)
  try("job query with a dot", job.query, "q", "select")
  try("collectgarbage", collectgarbage, {})
  return out
end"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_argument_types_name_function_parameter_and_line() {
    // GIVEN a tenant that may use every host area
    let p = TestProject::new(
        "acme",
        r#"{ "queue": true, "batch": true }"#,
        &[("s", SCRIPT)],
    );
    // WHEN a script calls every host function with an argument of the wrong type
    let out = p.invoke("acme", "s", json!({})).await.unwrap();
    // THEN each error names the script and line, the function, the parameter, what it must be
    // and what it was
    let want = [
        (
            "json.encode",
            r#"native.json.encode: parameter "opts" must be a table, not a string"#,
        ),
        (
            "json.decode",
            r#"native.json.decode: parameter "text" must be a string, not a table"#,
        ),
        (
            "log level",
            r#"native.log: parameter "level" must be a string, not a table"#,
        ),
        (
            "log fields",
            r#"native.log: parameter "fields" must be a table, not a string"#,
        ),
        (
            "bucket get",
            r#"native.bucket.In.get: parameter "key" must be a string, not a table"#,
        ),
        (
            "bucket put",
            r#"native.bucket.In.put: parameter "body" must be a string, not a table"#,
        ),
        (
            "bucket put number key",
            r#"native.bucket.In.put: parameter "key" must be a string, not a number"#,
        ),
        (
            "bucket put number key and table",
            r#"native.bucket.In.put: parameter "key" must be a string, not a number"#,
        ),
        (
            "bucket get number key",
            r#"native.bucket.In.get: parameter "key" must be a string, not a number"#,
        ),
        (
            "bucket delete",
            r#"native.bucket.In.delete: parameter "key" must be a string, not a boolean"#,
        ),
        (
            "bucket head",
            r#"native.bucket.In.head: parameter "key" must be a string, not nil"#,
        ),
        (
            "bucket open",
            r#"native.bucket.In.open: parameter "key" must be a string, not a table"#,
        ),
        (
            "bucket list prefix",
            r#"native.bucket.In.list: parameter "prefix" must be a string, not a table"#,
        ),
        (
            "bucket list opts",
            r#"native.bucket.In.list: parameter "opts" must be a table, not a string"#,
        ),
        (
            "bucket name",
            r#"native.bucket: parameter "name" must be a string, not a table"#,
        ),
        (
            "db get",
            r#"native.db.get: parameter "key" must be a string, not a table"#,
        ),
        (
            "db put",
            r#"native.db.put: parameter "key" must be a string, not a table"#,
        ),
        (
            "db put_if_absent",
            r#"native.db.put_if_absent: parameter "partition" must be a string, not a table"#,
        ),
        (
            "db delete",
            r#"native.db.delete: parameter "key" must be a string, not a boolean"#,
        ),
        (
            "db query",
            r#"native.db.query: parameter "opts" must be a table, not a number"#,
        ),
        (
            "queue send",
            r#"native.queue.send: parameter "script" must be a string, not a table"#,
        ),
        (
            "bucket list cursor",
            "native.bucket.In.list: a field of a table argument must be a string, not a table",
        ),
        (
            "barrier create",
            r#"native.barrier.create: parameter "opts" must be a table, not a string"#,
        ),
        (
            "barrier ack",
            r#"native.barrier.ack: parameter "member" must be a string, not a table"#,
        ),
        (
            "barrier status",
            r#"native.barrier.status: parameter "id" must be a string, not a table"#,
        ),
        (
            "batch new",
            r#"native.batch.new: parameter "opts" must be a table, not a string"#,
        ),
        (
            "batch hydrate",
            r#"native.batch.hydrate: parameter "opts" must be a table, not a string"#,
        ),
        (
            "job input_rows",
            r#"job:input_rows: parameter "name" must be a string, not a table"#,
        ),
        (
            "job query",
            r#"job:query: parameter "query" must be a string, not a table"#,
        ),
        (
            "job continue_with",
            r#"job:continue_with: parameter "script" must be a string, not a table"#,
        ),
        (
            "job http",
            r#"job:http: parameter "opts" must be a table, not a string"#,
        ),
        (
            "job with a dot",
            "job:submit: call it with a colon, job:submit(...), not job.submit(...) (it got nothing where the job should be)",
        ),
        (
            "job query with a dot",
            "job:query: call it with a colon, job:query(...), not job.query(...) (it got string where the job should be)",
        ),
        (
            "collectgarbage",
            r#"collectgarbage: parameter "option" must be a string, not a table"#,
        ),
    ];
    let mut wrong = Vec::new();
    for (case, msg) in want {
        let got = out[case].as_str().unwrap_or("(no message)");
        // The line is the script's own: inside try, or where the script indexes native.bucket.
        let line = if case == "bucket name" { 20 } else { 4 };
        if got != format!("s.luau:{line}: {msg}") {
            wrong.push(format!(
                "{case}:\n  want s.luau:{line}: {msg}\n  got  {got}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(out.as_object().map(|o| o.len()), Some(want.len()), "{out}");
}
