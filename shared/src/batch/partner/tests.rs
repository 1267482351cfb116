//! Tests of the partner side: pending requests, answers from commands and fixtures, parts,
//! and the JSON Schemas of request.json and done.json.

use serde_json::{json, Value};

use super::*;
use crate::batch::manifest::tests::{BAD_PART_KEYS, GOOD_PART_KEYS};
use crate::embedded::Embedded;
use crate::ports::{ListPage, ObjectMeta};

const DEPLOYMENT: &str = r#"{ "batch": { "bucket": "partner-batch", "prefix": "tenants/" } }"#;
const BUCKET: &str = "partner-batch";

/// The embedded store, listing at most two objects a page so that paging is exercised.
#[derive(Debug)]
struct SmallPages(Embedded);

#[async_trait::async_trait]
impl ObjectStore for SmallPages {
    async fn put_in_chain(
        &self,
        b: &str,
        k: &str,
        d: Bytes,
        m: PutMode,
        depth: u32,
        trace: Option<&str>,
    ) -> Result<ObjectMeta> {
        self.0.put_in_chain(b, k, d, m, depth, trace).await
    }
    async fn get(&self, b: &str, k: &str) -> Result<Option<(ObjectMeta, Bytes)>> {
        self.0.get(b, k).await
    }
    async fn head(&self, b: &str, k: &str) -> Result<Option<ObjectMeta>> {
        self.0.head(b, k).await
    }
    async fn delete(&self, b: &str, k: &str) -> Result<()> {
        self.0.delete(b, k).await
    }
    async fn list(
        &self,
        b: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<ListPage> {
        self.0.list(b, prefix, after, limit.min(2)).await
    }
    async fn flush(&self) -> Result<()> {
        ObjectStore::flush(&self.0).await
    }
}

struct Env {
    _dir: tempfile::TempDir,
    store: SmallPages,
    dep: Deployment,
}

impl Env {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = SmallPages(Embedded::open(dir.path(), vec![]).unwrap());
        let dep = Deployment::from_json("deployment.json", DEPLOYMENT).unwrap();
        Env {
            _dir: dir,
            store,
            dep,
        }
    }

    /// The full key of a key relative to acme's folder.
    fn full(&self, key: &str) -> String {
        self.dep.full_key("$batch", "acme", key)
    }

    async fn put(&self, key: &str, data: impl Into<Bytes>) {
        self.store
            .put(BUCKET, &self.full(key), data.into(), PutMode::Overwrite)
            .await
            .unwrap();
    }

    async fn get(&self, key: &str) -> Option<Bytes> {
        self.store
            .get(BUCKET, &self.full(key))
            .await
            .unwrap()
            .map(|(_, b)| b)
    }

    /// Keys under a relative prefix, relative to acme's folder.
    async fn keys(&self, prefix: &str) -> Vec<String> {
        let folder = self.full("");
        let page = self
            .store
            .0
            .list(BUCKET, &self.full(prefix), None, 1000)
            .await
            .unwrap();
        page.objects
            .iter()
            .map(|o| o.key[folder.len()..].to_string())
            .collect()
    }

    /// Writes `jobs/<job>/request.json` with these (name, query) pairs.
    async fn request(&self, job: &str, queries: &[(&str, &str)]) -> Request {
        let r: Request = serde_json::from_value(json!({
            "v": 1, "job": job, "created_ms": 1, "inputs": {},
            "queries": queries.iter().map(|(n, q)| json!({ "name": n, "query": q, "params": { "n": 1 } })).collect::<Vec<_>>(),
        }))
        .unwrap();
        self.put_request(&r).await;
        r
    }

    async fn put_request(&self, r: &Request) {
        let key = format!("jobs/{}/request.json", r.job);
        self.put(&key, serde_json::to_vec(r).unwrap()).await;
    }

    async fn answer(&self, r: &Request, opts: &Options) -> Answer {
        answer(&self.store, &self.dep, "acme", r, opts)
            .await
            .unwrap()
    }

    /// Checks an answer against the store: done.json is what `answer` returned and valid
    /// under the schema, and every part has the promised bytes and sha256 and the rows.
    /// Returns the NDJSON of each result, decompressed.
    async fn check(&self, a: &Answer) -> BTreeMap<String, String> {
        let stored = self
            .get(&format!("jobs/{}/done.json", a.job))
            .await
            .expect("done.json is written");
        let value: Value = serde_json::from_slice(&stored).unwrap();
        validate(&schema(DONE_SCHEMA), &value).unwrap();
        assert_eq!(serde_json::from_value::<Done>(value).unwrap(), a.done);
        let mut out = BTreeMap::new();
        for (name, result) in &a.done.results {
            let mut text = Vec::new();
            for part in &result.parts {
                check_part_key(&part.key).unwrap();
                let stored = self.get(&format!("jobs/{}/{}", a.job, part.key)).await;
                let data = match &part.data {
                    // Inline: in done.json, and no object.
                    Some(text) => {
                        assert!(stored.is_none(), "inline part {} is also stored", part.key);
                        Bytes::from(text.clone().into_bytes())
                    }
                    None => stored.unwrap_or_else(|| panic!("part {} is missing", part.key)),
                };
                verify(part, &data).unwrap();
                assert!(part.bytes.is_some() && part.sha256.is_some());
                text.extend(gunzip_if_gzip(&data).unwrap());
            }
            let text = String::from_utf8(text).unwrap();
            let rows = text.lines().filter(|l| !l.trim().is_empty()).count() as u64;
            assert_eq!(result.rows, Some(rows), "rows of {name}");
            out.insert(name.clone(), text);
        }
        out
    }
}

fn fixtures(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in files {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    dir
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

#[tokio::test]
async fn pending_lists_requests_without_done_json_across_pages() {
    // GIVEN jobs in every state, in acme's folder and another tenant's
    let env = Env::new();
    env.request("a", &[("x", "q")]).await;
    env.request("b", &[("x", "q")]).await;
    env.put("jobs/b/done.json", r#"{"ok":true,"results":{}}"#)
        .await;
    env.put("jobs/c/inputs/ids.0000.ndjson", "1\n").await;
    env.request("c", &[("x", "q")]).await;
    env.put("jobs/d/inputs/ids.0000.ndjson", "1\n").await;
    env.put("jobs/e/x/request.json", "{}").await;
    env.put("state/a.json", "{}").await;
    env.store
        .put(
            BUCKET,
            "tenants/other/jobs/z/request.json",
            "{}".into(),
            PutMode::Overwrite,
        )
        .await
        .unwrap();
    // WHEN the pending requests are listed, two keys a page
    let jobs: Vec<_> = pending(&env.store, &env.dep, "acme")
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.job)
        .collect();
    // THEN only the requested and unanswered jobs of acme are there, in order
    assert_eq!(jobs, ["a", "c"]);
}

#[tokio::test]
async fn pending_refuses_requests_that_are_not_v1_requests_of_their_folder() {
    let env = Env::new();
    env.put("jobs/a/request.json", "not json").await;
    let e = pending(&env.store, &env.dep, "acme").await.unwrap_err();
    assert!(
        matches!(&e, Error::InvalidInput(m) if m.contains("tenants/acme/jobs/a/request.json")),
        "{e}"
    );
    let env = Env::new();
    env.put(
        "jobs/a/request.json",
        r#"{"v":1,"job":"b","created_ms":1,"inputs":{},"queries":[]}"#,
    )
    .await;
    let e = pending(&env.store, &env.dep, "acme").await.unwrap_err();
    assert!(e.to_string().contains("folder of \"a\""), "{e}");
    // AND a deployment without a batch bucket, or a bad tenant, is refused
    let dep = Deployment::from_json("d", "{}").unwrap();
    assert!(matches!(
        pending(&env.store, &dep, "acme").await,
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        pending(&env.store, &env.dep, "../x").await,
        Err(Error::InvalidInput(_))
    ));
}

#[tokio::test]
async fn fixtures_are_split_into_parts_that_promise_what_was_stored() {
    // GIVEN a fixture by query string (with blank lines and no final newline) and one by name
    let env = Env::new();
    let r = env
        .request(
            "j1",
            &[("customers", "customers_by_id"), ("orders", "open_orders")],
        )
        .await;
    let lines: Vec<String> = (0..10).map(|i| format!("{{\"id\":{i}}}")).collect();
    let body = format!("{}\n\n  \n{}", lines[..5].join("\n"), lines[5..].join("\n"));
    let dir = fixtures(&[
        ("customers_by_id.ndjson", body.as_bytes()),
        ("customers.ndjson", b"{\"wrong\":1}\n"),
        ("orders.ndjson", b"[1,2]\n\"x\"\n"),
    ]);
    // WHEN it is answered with parts of at most 30 bytes
    let opts = Options {
        part_bytes: 30,
        ..Options::new(Source::Fixtures(dir.path().into()))
    };
    let a = env.answer(&r, &opts).await;
    // THEN done.json is ok, and the parts hold every non-blank line, each part whole lines
    assert!(a.written && a.done.ok && a.done.error.is_none(), "{a:?}");
    let text = env.check(&a).await;
    assert_eq!(text["customers"], lines.join("\n") + "\n");
    assert_eq!(text["orders"], "[1,2]\n\"x\"\n");
    assert_eq!(a.rows(), 12);
    let customers = &a.done.results["customers"];
    let keys: Vec<_> = customers.parts.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "customers.0000.ndjson",
            "customers.0001.ndjson",
            "customers.0002.ndjson",
            "customers.0003.ndjson"
        ]
    );
    // (three 9-byte lines fit in 30 bytes, four do not)
    assert!(customers.parts.iter().all(|p| p.bytes <= Some(30)));
    assert_eq!(customers.parts[0].bytes, Some(27));
    // AND the job is no longer pending
    assert!(pending(&env.store, &env.dep, "acme")
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn gzip_parts_are_gzip_streams_and_promise_their_compressed_bytes() {
    // GIVEN a gzipped fixture
    let env = Env::new();
    let r = env.request("j1", &[("rows", "all")]).await;
    let body: String = (0..1000).map(|i| format!("{{\"n\":{i}}}\n")).collect();
    let dir = fixtures(&[("all.ndjson", &gzip(body.as_bytes()))]);
    // WHEN it is answered gzipped, about 4 KiB of NDJSON a part
    let opts = Options {
        gzip: true,
        part_bytes: 4096,
        ..Options::new(Source::Fixtures(dir.path().into()))
    };
    let a = env.answer(&r, &opts).await;
    // THEN the parts are .ndjson.gz, each a gzip stream, and together the rows
    let text = env.check(&a).await;
    assert_eq!(text["rows"], body);
    let parts = &a.done.results["rows"].parts;
    assert!(parts.len() > 2, "{parts:?}");
    for (i, p) in parts.iter().enumerate() {
        assert_eq!(p.key, format!("rows.{i:04}.ndjson.gz"));
        let data = env.get(&format!("jobs/j1/{}", p.key)).await.unwrap();
        assert!(data.starts_with(&[0x1f, 0x8b]));
        assert!(p.bytes.unwrap() < 4096);
    }
}

#[tokio::test]
async fn a_line_longer_than_a_part_gets_a_part_of_its_own_and_empty_results_none() {
    let env = Env::new();
    let r = env.request("j1", &[("big", "big"), ("none", "none")]).await;
    let long = format!("\"{}\"", "x".repeat(100));
    let body = format!("1\n{long}\n2\n");
    let dir = fixtures(&[("big.ndjson", body.as_bytes()), ("none.ndjson", b"\n\n")]);
    let opts = Options {
        part_bytes: 10,
        ..Options::new(Source::Fixtures(dir.path().into()))
    };
    let a = env.answer(&r, &opts).await;
    let text = env.check(&a).await;
    assert_eq!(text["big"], body);
    let sizes: Vec<_> = a.done.results["big"]
        .parts
        .iter()
        .map(|p| p.bytes.unwrap())
        .collect();
    assert_eq!(sizes, [2, 103, 2]);
    assert_eq!(a.done.results["none"].rows, Some(0));
    assert!(a.done.results["none"].parts.is_empty());
}

#[tokio::test]
async fn a_result_of_one_small_part_goes_into_done_json_and_larger_ones_are_objects() {
    // GIVEN a request with a small result, a result of several parts, and one as big as what
    // done.json may hold inline
    let env = Env::new();
    let r = env
        .request(
            "j1",
            &[("small", "small"), ("split", "split"), ("big", "big")],
        )
        .await;
    let split: String = (0..10).map(|i| format!("{{\"n\":{i}}}\n")).collect();
    let big = format!("\"{}\"\n", "x".repeat(MAX_INLINE_BYTES as usize));
    let dir = fixtures(&[
        ("small.ndjson", b"{\"a\":1}\n"),
        ("split.ndjson", split.as_bytes()),
        ("big.ndjson", big.as_bytes()),
    ]);
    // WHEN it is answered with parts of at most 30 bytes
    let opts = Options {
        part_bytes: 30,
        ..Options::new(Source::Fixtures(dir.path().into()))
    };
    let a = env.answer(&r, &opts).await;
    // THEN the small result is inline in done.json, with its bytes and sha256, and no object;
    // the split one and the one over the bound are objects
    let text = env.check(&a).await;
    assert_eq!(text["small"], "{\"a\":1}\n");
    let small = &a.done.results["small"].parts;
    assert_eq!(small.len(), 1);
    assert_eq!(small[0].data.as_deref(), Some("{\"a\":1}\n"));
    assert!(a.done.results["split"].parts.len() > 1);
    assert!(a.done.results["split"].parts.iter().all(|p| p.stored()));
    assert!(a.done.results["big"].parts.iter().all(|p| p.stored()));
    let mut want: Vec<String> = (0..4)
        .map(|i| format!("jobs/j1/split.{i:04}.ndjson"))
        .collect();
    want.extend(
        [
            "jobs/j1/big.0000.ndjson",
            "jobs/j1/done.json",
            "jobs/j1/request.json",
        ]
        .map(String::from),
    );
    want.sort();
    assert_eq!(env.keys("jobs/j1/").await, want);
    // AND an operator's view reads the inline part from done.json, checked as an object is
    let v = crate::batch::inspect::view(&env.store, &env.dep, "acme", "j1", 0, true)
        .await
        .unwrap()
        .unwrap();
    let small = v.parts.iter().find(|p| p.result == "small").unwrap();
    assert_eq!(small.stored, Some(8));
    let c = small.checked.clone().unwrap().unwrap();
    assert_eq!((c.bytes, c.rows, c.gzip), (8, 1, false));
    // AND gzipped answers never go inline
    let r = env.request("j2", &[("small", "small")]).await;
    let opts = Options {
        gzip: true,
        ..Options::new(Source::Fixtures(dir.path().into()))
    };
    let a = env.answer(&r, &opts).await;
    env.check(&a).await;
    assert!(a.done.results["small"].parts.iter().all(|p| p.stored()));
}

#[tokio::test]
async fn a_missing_fixture_fails_the_job_and_removes_its_parts() {
    // GIVEN a fixture for the first query only
    let env = Env::new();
    let r = env
        .request("j1", &[("customers", "c"), ("orders", "o")])
        .await;
    let dir = fixtures(&[("c.ndjson", b"1\n2\n")]);
    // WHEN it is answered
    let a = env
        .answer(&r, &Options::new(Source::Fixtures(dir.path().into())))
        .await;
    // THEN done.json is ok:false naming the query and what was looked for
    assert!(a.written && !a.done.ok, "{a:?}");
    let error = a.done.error.clone().unwrap();
    assert!(
        error.starts_with("query orders: no fixture file") && error.contains("o.ndjson"),
        "{error}"
    );
    env.check(&a).await;
    // AND the first query's parts are gone
    assert_eq!(
        env.keys("jobs/j1/").await,
        ["jobs/j1/done.json", "jobs/j1/request.json"]
    );
}

#[tokio::test]
async fn given_rows_are_stored_and_a_query_without_rows_or_with_a_reason_fails() {
    // GIVEN rows handed over for both queries of a job (as `native test`'s t:partner does)
    let env = Env::new();
    let r = env
        .request("j1", &[("customers", "c"), ("orders", "o")])
        .await;
    let given = |orders: std::result::Result<String, String>| {
        Options::new(Source::Given(
            [
                (
                    "customers".to_string(),
                    Ok("{\"id\":1}\n\n{\"id\":2}\n".to_string()),
                ),
                ("orders".to_string(), orders),
            ]
            .into_iter()
            .collect(),
        ))
    };
    // WHEN it is answered THEN the rows are stored as parts that verify, blank lines dropped
    let a = env.answer(&r, &given(Ok(String::new()))).await;
    assert!(a.written && a.done.ok, "{a:?}");
    let text = env.check(&a).await;
    assert_eq!(text["customers"], "{\"id\":1}\n{\"id\":2}\n");
    assert_eq!(a.rows(), 2);
    // AND a query given a reason fails the job with it
    let r = env
        .request("j2", &[("customers", "c"), ("orders", "o")])
        .await;
    let a = env
        .answer(&r, &given(Err("the warehouse is offline".into())))
        .await;
    assert_eq!(
        a.done.error.as_deref(),
        Some("query orders: the warehouse is offline")
    );
    // AND a query no rows were given for fails, naming the ones given
    let r = env
        .request("j3", &[("customers", "c"), ("refunds", "r")])
        .await;
    let a = env.answer(&r, &given(Ok(String::new()))).await;
    assert_eq!(
        a.done.error.as_deref(),
        Some("query refunds: no rows were given for it (given: customers, orders)")
    );
    // AND rows that are not JSON fail like a fixture's
    let r = env
        .request("j4", &[("customers", "c"), ("orders", "o")])
        .await;
    let a = env.answer(&r, &given(Ok("not json\n".into()))).await;
    assert!(a.done.error.unwrap().starts_with("query orders: "));
}

#[tokio::test]
async fn answering_twice_keeps_the_first_done_json() {
    let env = Env::new();
    let r = env.request("j1", &[("x", "q")]).await;
    let one = fixtures(&[("q.ndjson", b"1\n")]);
    let two = fixtures(&[("q.ndjson", b"2\n3\n")]);
    let first = env
        .answer(&r, &Options::new(Source::Fixtures(one.path().into())))
        .await;
    let before = env.get("jobs/j1/done.json").await.unwrap();
    let second = env
        .answer(&r, &Options::new(Source::Fixtures(two.path().into())))
        .await;
    assert!(first.written && !second.written);
    assert_eq!(second.done, first.done);
    assert_eq!(env.get("jobs/j1/done.json").await.unwrap(), before);
    assert_eq!(env.check(&second).await["x"], "1\n");
}

#[tokio::test]
async fn requests_a_partner_cannot_answer_fail_with_a_reason() {
    let env = Env::new();
    let dir = fixtures(&[("q.ndjson", b"1\n")]);
    let opts = Options::new(Source::Fixtures(dir.path().into()));
    let mut r = env.request("v2", &[("x", "q")]).await;
    r.v = 2;
    let a = env.answer(&r, &opts).await;
    assert!(a.done.error.unwrap().contains("version 2"));
    let r = env.request("dup", &[("x", "q"), ("x", "q")]).await;
    let a = env.answer(&r, &opts).await;
    assert_eq!(a.done.error.as_deref(), Some("query x appears twice"));
    let r = env.request("bad", &[("a/../..", "q")]).await;
    let a = env.answer(&r, &opts).await;
    assert!(a.done.error.unwrap().contains("cannot name result parts"));
}

#[tokio::test]
async fn exec_gets_the_request_on_stdin_and_the_query_in_its_environment() {
    let env = Env::new();
    let r = env.request("j1", &[("customers", "customers_by_id")]).await;
    let cmd = r#"printf '{"tenant":"%s","job":"%s","name":"%s","query":"%s","params":%s,"inputs":"%s"}\n' \
        "$NATIVE_TENANT" "$NATIVE_JOB" "$NATIVE_QUERY_NAME" "$NATIVE_QUERY" "$NATIVE_QUERY_PARAMS" "${NATIVE_INPUTS_DIR-none}"
        cat"#;
    let a = env
        .answer(&r, &Options::new(Source::Exec(cmd.into())))
        .await;
    assert!(a.done.ok, "{a:?}");
    let text = env.check(&a).await;
    let rows: Vec<Value> = text["customers"]
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        rows[0],
        json!({ "tenant": "acme", "job": "j1", "name": "customers", "query": "customers_by_id",
                "params": { "n": 1 }, "inputs": "none" })
    );
    assert_eq!(
        serde_json::from_value::<Request>(rows[1].clone()).unwrap(),
        r
    );
}

#[tokio::test]
async fn a_failing_command_fails_the_job_with_its_exit_code_and_stderr() {
    let env = Env::new();
    let r = env.request("j1", &[("ok", "a"), ("bad", "b")]).await;
    let cmd = r#"echo 1; if [ "$NATIVE_QUERY" = b ]; then echo 'no such table' >&2; exit 3; fi"#;
    let a = env
        .answer(&r, &Options::new(Source::Exec(cmd.into())))
        .await;
    assert_eq!(
        a.done.error.as_deref(),
        Some("query bad: command exited with 3: no such table")
    );
    assert!(a.done.results.is_empty());
    assert_eq!(
        env.keys("jobs/j1/").await,
        ["jobs/j1/done.json", "jobs/j1/request.json"]
    );
    // AND output that is not NDJSON fails it too, naming the line
    let r = env.request("j2", &[("x", "q")]).await;
    let a = env
        .answer(
            &r,
            &Options::new(Source::Exec("echo '{}'; echo nope".into())),
        )
        .await;
    let error = a.done.error.unwrap();
    assert!(
        error.starts_with("query x: line 2 of the command's output is not JSON"),
        "{error}"
    );
}

#[tokio::test]
async fn exec_reads_verified_inputs_from_a_folder() {
    // GIVEN a request with an input in two parts, one gzipped
    let env = Env::new();
    let p0 = b"{\"id\":1}\n".to_vec();
    let p1 = gzip(b"{\"id\":2}\n{\"id\":3}\n");
    env.put("jobs/j1/inputs/ids.0000.ndjson", p0.clone()).await;
    env.put("jobs/j1/inputs/ids.0001.ndjson", p1.clone()).await;
    let part = |key: &str, data: &[u8]| json!({ "key": key, "bytes": data.len(), "sha256": hex::encode(Sha256::digest(data)) });
    let mut request = json!({ "v": 1, "job": "j1", "created_ms": 1,
        "inputs": { "ids": { "rows": 3, "parts": [ part("inputs/ids.0000.ndjson", &p0), part("inputs/ids.0001.ndjson", &p1) ] } },
        "queries": [ { "name": "customers", "query": "by_id", "params": { "input": "ids" } } ] });
    let r: Request = serde_json::from_value(request.clone()).unwrap();
    env.put_request(&r).await;
    // WHEN the command reads the input named in its params
    let cmd = r#"cat "$NATIVE_INPUTS_DIR/ids.ndjson""#;
    let a = env
        .answer(&r, &Options::new(Source::Exec(cmd.into())))
        .await;
    // THEN it sees every row, decompressed
    assert_eq!(
        env.check(&a).await["customers"],
        "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n"
    );
    // AND an input whose sha256 differs from the request fails the job
    request["job"] = json!("j2");
    request["inputs"]["ids"]["parts"][1]["sha256"] = json!("0".repeat(64));
    env.put("jobs/j2/inputs/ids.0000.ndjson", p0.clone()).await;
    env.put("jobs/j2/inputs/ids.0001.ndjson", p1.clone()).await;
    let r: Request = serde_json::from_value(request.clone()).unwrap();
    let a = env
        .answer(&r, &Options::new(Source::Exec(cmd.into())))
        .await;
    let error = a.done.error.unwrap();
    assert!(
        error.starts_with("input ids: part inputs/ids.0001.ndjson has sha256"),
        "{error}"
    );
    // AND so does a row count that differs
    request["job"] = json!("j3");
    request["inputs"]["ids"]["parts"][1]["sha256"] = json!(hex::encode(Sha256::digest(&p1)));
    request["inputs"]["ids"]["rows"] = json!(4);
    env.put("jobs/j3/inputs/ids.0000.ndjson", p0).await;
    env.put("jobs/j3/inputs/ids.0001.ndjson", p1).await;
    let r: Request = serde_json::from_value(request).unwrap();
    let a = env
        .answer(&r, &Options::new(Source::Exec(cmd.into())))
        .await;
    assert!(a.done.error.unwrap().contains("promises 4 rows"));
}

// -----------------------------------------------------------------------------------------
// The JSON Schemas in docs/schemas

const REQUEST_SCHEMA: &str = include_str!("../../../../docs/schemas/request.schema.json");
const DONE_SCHEMA: &str = include_str!("../../../../docs/schemas/done.schema.json");

fn schema(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

fn validate(root: &Value, v: &Value) -> std::result::Result<(), String> {
    check(root, root, v, "$")
}

/// The regular expressions the schemas use, each with what it means; the test fails on any
/// other, so a pattern cannot change without this table (checked against check_part_key
/// below) changing too.
fn pattern(p: &str) -> fn(&str) -> bool {
    match p {
        "^[A-Za-z0-9._-]{1,128}$" => |s: &str| {
            (1..=128).contains(&s.len())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        },
        r"^\.+$" => |s: &str| !s.is_empty() && s.chars().all(|c| c == '.'),
        r"^[ -\[\]-~]+$" => {
            |s: &str| !s.is_empty() && s.chars().all(|c| (' '..='~').contains(&c) && c != '\\')
        }
        "^[A-Za-z0-9_-]{1,64}$" => |s: &str| crate::keys::check_name("x", s).is_ok(),
        "^/" => |s: &str| s.starts_with('/'),
        "//" => |s: &str| s.contains("//"),
        "/$" => |s: &str| s.ends_with('/'),
        r"(^|/)\.\.?(/|$)" => |s: &str| s.split('/').any(|seg| seg == "." || seg == ".."),
        "%(2[eEfF]|5[cC])" => |s: &str| {
            let l = s.to_ascii_lowercase();
            l.contains("%2e") || l.contains("%2f") || l.contains("%5c")
        },
        "^[0-9a-fA-F]{64}$" => |s: &str| s.len() == 64 && s.chars().all(|c| c.is_ascii_hexdigit()),
        "^[0-9a-f]{32}$" => {
            |s: &str| s.len() == 32 && s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
        }
        other => panic!("no meaning known for the pattern {other:?}; add it to the table"),
    }
}

/// A validator for the part of JSON Schema 2020-12 that the schemas use. It panics on any
/// other keyword, so the schemas cannot outgrow what this test checks.
fn check(root: &Value, s: &Value, v: &Value, at: &str) -> std::result::Result<(), String> {
    let fail = |why: String| Err(format!("{at}: {why}"));
    let obj = match s {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return fail("not allowed".into()),
        Value::Object(o) => o,
        _ => panic!("{at}: not a schema: {s}"),
    };
    for (kw, arg) in obj {
        match kw.as_str() {
            "$schema" | "$id" | "title" | "description" | "$defs" | "then" | "else" => {}
            "$ref" => {
                let name = arg.as_str().unwrap().strip_prefix("#/$defs/").unwrap();
                check(root, &root["$defs"][name], v, at)?;
            }
            "type" => {
                let ok = match arg.as_str().unwrap() {
                    "object" => v.is_object(),
                    "array" => v.is_array(),
                    "string" => v.is_string(),
                    "boolean" => v.is_boolean(),
                    // As JSON Schema has it: 3.0 is an integer too.
                    "integer" => {
                        v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0)
                    }
                    t => panic!("type {t}"),
                };
                if !ok {
                    return fail(format!("{v} is not of type {arg}"));
                }
            }
            "const" if v != arg => return fail(format!("{v} is not {arg}")),
            "const" => {}
            "required" => {
                for r in arg.as_array().unwrap() {
                    if v.is_object() && v.get(r.as_str().unwrap()).is_none() {
                        return fail(format!("{r} is required"));
                    }
                }
            }
            "properties" => {
                for (k, sub) in arg.as_object().unwrap() {
                    if let Some(x) = v.get(k).filter(|_| v.is_object()) {
                        check(root, sub, x, &format!("{at}.{k}"))?;
                    }
                }
            }
            "additionalProperties" => {
                let known = obj.get("properties").and_then(Value::as_object);
                for (k, x) in v.as_object().into_iter().flatten() {
                    if !known.is_some_and(|p| p.contains_key(k)) {
                        check(root, arg, x, &format!("{at}.{k}"))?;
                    }
                }
            }
            "items" => {
                for (i, x) in v.as_array().into_iter().flatten().enumerate() {
                    check(root, arg, x, &format!("{at}[{i}]"))?;
                }
            }
            "minimum" => {
                if v.as_f64().is_some_and(|n| n < arg.as_f64().unwrap()) {
                    return fail(format!("{v} is below {arg}"));
                }
            }
            "maximum" => {
                if v.as_f64().is_some_and(|n| n > arg.as_f64().unwrap()) {
                    return fail(format!("{v} is above {arg}"));
                }
            }
            "propertyNames" => {
                for k in v.as_object().into_iter().flatten().map(|(k, _)| k) {
                    check(
                        root,
                        arg,
                        &Value::String(k.clone()),
                        &format!("{at} name {k:?}"),
                    )?;
                }
            }
            "minLength" | "maxLength" => {
                if let Some(n) = v.as_str().map(|s| s.chars().count() as u64) {
                    let lim = arg.as_u64().unwrap();
                    if (kw == "minLength" && n < lim) || (kw == "maxLength" && n > lim) {
                        return fail(format!("{kw} {lim}"));
                    }
                }
            }
            "pattern" => {
                if v.as_str()
                    .is_some_and(|x| !pattern(arg.as_str().unwrap())(x))
                {
                    return fail(format!("{v} does not match {arg}"));
                }
            }
            "not" => {
                if check(root, arg, v, at).is_ok() {
                    return fail(format!("{v} matches {arg}"));
                }
            }
            "allOf" => {
                for sub in arg.as_array().unwrap() {
                    check(root, sub, v, at)?;
                }
            }
            "if" => {
                let branch = if check(root, arg, v, at).is_ok() {
                    "then"
                } else {
                    "else"
                };
                if let Some(sub) = obj.get(branch) {
                    check(root, sub, v, at)?;
                }
            }
            k => panic!("the test's validator does not know the keyword {k}"),
        }
    }
    Ok(())
}

/// The property names a schema object (after `$ref`) lists.
fn listed(root: &Value, s: &Value) -> BTreeSet<String> {
    let s = match s.get("$ref").and_then(Value::as_str) {
        Some(r) => &root["$defs"][r.strip_prefix("#/$defs/").unwrap()],
        None => s,
    };
    s["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

fn fields(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

const SHA: &str = "4f3c7c2a1b0e9d8c7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa";

#[test]
fn the_seed_examples_are_valid_and_parse() {
    let (rs, ds) = (schema(REQUEST_SCHEMA), schema(DONE_SCHEMA));
    let request = json!({ "v": 1, "job": "9f3c", "created_ms": 1761300000000_i64,
      "inputs":  { "ids": { "rows": 3, "parts": [ { "key": "inputs/ids.0000.ndjson", "bytes": 27, "sha256": SHA } ] } },
      "queries": [ { "name": "customers", "query": "customers_by_id", "params": { "input": "ids" } } ] });
    validate(&rs, &request).unwrap();
    serde_json::from_value::<Request>(request).unwrap();
    let done = json!({ "ok": true, "results": {
        "customers": { "rows": 120000, "parts": [
            { "key": "customers.0000.ndjson.gz", "bytes": 9100000, "sha256": SHA },
            { "key": "customers.0001.ndjson.gz" } ] },
        "orders": { "parts": [ { "key": "orders.0000.ndjson.gz" } ] } } });
    let failed = json!({ "ok": false, "error": "partner timeout" });
    let http = json!({ "ok": true, "results": { "charge": { "status": 200, "headers": {},
        "parts": [ { "key": "charge.0000.body" } ] } } });
    for d in [done, failed, http] {
        validate(&ds, &d).unwrap();
        serde_json::from_value::<Done>(d).unwrap();
    }
}

#[test]
fn the_schemas_refuse_what_the_contract_refuses() {
    let (rs, ds) = (schema(REQUEST_SCHEMA), schema(DONE_SCHEMA));
    let request = json!({ "v": 1, "job": "j", "created_ms": 1, "inputs": {}, "queries": [] });
    validate(&rs, &request).unwrap();
    for (field, bad) in [
        ("v", json!(2)),
        ("job", json!("..")),
        ("job", json!("a/b")),
        ("created_ms", json!("1")),
        ("queries", json!([{ "name": "x" }])),
        ("extra", json!(1)),
    ] {
        let mut r = request.clone();
        r[field] = bad;
        assert!(validate(&rs, &r).is_err(), "{r}");
    }
    for bad in [
        json!({ "ok": true }),
        json!({ "ok": "yes", "results": {} }),
        json!({ "ok": true, "results": { "x": { "parts": [ { "key": "a", "sha256": &SHA[1..] } ] } } }),
        json!({ "ok": true, "results": { "x": { "rows": -1, "parts": [] } } }),
        json!({ "ok": true, "results": { "x": { "parts": [ { "key": "a", "size": 1 } ] } } }),
    ] {
        assert!(validate(&ds, &bad).is_err(), "{bad}");
    }
    // AND the schema's part keys are exactly the keys check_part_key accepts
    let key = |k: &str| json!({ "ok": true, "results": { "x": { "parts": [ { "key": k } ] } } });
    for k in BAD_PART_KEYS {
        assert!(check_part_key(k).is_err(), "{k:?}");
        assert!(validate(&ds, &key(k)).is_err(), "{k:?}");
    }
    for k in GOOD_PART_KEYS {
        check_part_key(k).unwrap();
        validate(&ds, &key(k)).unwrap();
    }
}

#[test]
fn request_and_done_serialize_to_exactly_the_fields_the_schemas_list() {
    let (rs, ds) = (schema(REQUEST_SCHEMA), schema(DONE_SCHEMA));
    let part = Part {
        key: "x.0000.ndjson".into(),
        bytes: Some(1),
        sha256: Some(SHA.into()),
        data: None,
    };
    let dataset = Dataset {
        rows: Some(1),
        parts: vec![part],
        extra: BTreeMap::new(),
    };
    let request = Request {
        v: super::super::manifest::REQUEST_VERSION,
        job: "j1".into(),
        created_ms: 1,
        inputs: BTreeMap::from([("ids".to_string(), dataset.clone())]),
        queries: vec![super::super::manifest::Query {
            name: "x".into(),
            query: "q".into(),
            params: json!({ "input": "ids" }),
        }],
        trace: Some("4bf92f3577b34da6a3ce929d0e0e4736".into()),
    };
    let r = serde_json::to_value(&request).unwrap();
    validate(&rs, &r).unwrap();
    assert_eq!(fields(&r), listed(&rs, &rs));
    assert_eq!(fields(&r["queries"][0]), listed(&rs, &rs["$defs"]["query"]));
    let d = &r["inputs"]["ids"];
    assert_eq!(fields(d), listed(&rs, &rs["$defs"]["dataset"]));
    assert_eq!(fields(&d["parts"][0]), listed(&rs, &rs["$defs"]["part"]));
    for field in rs["required"].as_array().unwrap() {
        assert!(r.get(field.as_str().unwrap()).is_some());
    }
    // done.json: every field (a part's inline data only here), and the two shapes
    let mut inline = dataset.clone();
    inline.parts[0].data = Some("1\n".into());
    let full = Done {
        ok: false,
        error: Some("e".into()),
        results: BTreeMap::from([("x".to_string(), inline)]),
    };
    let v = serde_json::to_value(&full).unwrap();
    validate(&ds, &v).unwrap();
    assert_eq!(fields(&v), listed(&ds, &ds));
    assert_eq!(
        fields(&v["results"]["x"]["parts"][0]),
        listed(&ds, &ds["$defs"]["part"])
    );
    for done in [
        Done {
            ok: true,
            error: None,
            results: BTreeMap::from([("x".to_string(), dataset)]),
        },
        Done {
            ok: false,
            error: Some("partner timeout".into()),
            results: BTreeMap::new(),
        },
    ] {
        validate(&ds, &serde_json::to_value(&done).unwrap()).unwrap();
    }
    // AND the definitions the two schemas share are the same, but for done.json's inline data
    for def in ["dataset", "key", "sha256"] {
        assert_eq!(rs["$defs"][def], ds["$defs"][def], "{def}");
    }
    let mut done_part = ds["$defs"]["part"].clone();
    assert!(done_part["properties"]
        .as_object_mut()
        .unwrap()
        .remove("data")
        .is_some());
    assert_eq!(rs["$defs"]["part"], done_part);
    assert_eq!(rs["properties"]["v"]["const"], json!(request.v));
}
