//! `native demo`: the examples, end to end, in temporary projects or kept in `--project`.

use std::path::{Path, PathBuf};

use native_core::local::{drain, DrainOptions, Project};
use serde_json::json;

use super::{Failed, Outcome};
use crate::examples;
use crate::out::outln;

fn step(n: u32, what: &str) {
    outln!("\n== {n}. {what}");
}

/// Where one example of the demo lives: a temporary folder removed at the end, or a folder
/// inside `--project` that is kept for the user to explore.
enum Place {
    Temp(tempfile::TempDir),
    Kept(PathBuf),
}

impl Place {
    /// A new, empty place for the example `name`.
    fn new(keep_in: Option<&Path>, name: &str, files: &[examples::File]) -> Result<Self, Failed> {
        let place = match keep_in {
            None => Place::Temp(
                tempfile::tempdir()
                    .map_err(|e| Failed::usage(format!("cannot make a temporary folder: {e}")))?,
            ),
            Some(dir) => {
                let d = dir.join(name);
                if d.exists() {
                    return Err(Failed::usage(format!(
                        "{} already exists; give `native demo --project` a new folder",
                        d.display()
                    )));
                }
                Place::Kept(d)
            }
        };
        examples::write(place.path(), files).map_err(|e| Failed::usage(e.to_string()))?;
        Ok(place)
    }

    fn path(&self) -> &Path {
        match self {
            Place::Temp(t) => t.path(),
            Place::Kept(p) => p,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Place::Temp(_) => "a temporary project",
            Place::Kept(_) => "a project",
        }
    }
}

pub async fn run(keep_in: Option<&Path>) -> Outcome {
    let dir = Place::new(keep_in, "hello", examples::HELLO)?;
    outln!("native demo: {} in {}", dir.kind(), dir.path().display());
    outln!("(script logs go to stderr, one JSON object a line)");

    let p = Project::open(dir.path())?;
    let rt = crate::show::runtime(&p);
    step(
        1,
        "native invoke hello start '{\"name\":\"Ada\"}'  (on_invoke writes In/greetings/Ada.json)",
    );
    let out = rt
        .invoke("hello", "start", json!({ "name": "Ada" }))
        .await?;
    outln!("returned {out}");

    step(
        2,
        "native drain  (the router sends the bucket event to greet, which queues finish)",
    );
    let r = drain(
        &rt,
        DrainOptions {
            wait: true,
            ..Default::default()
        },
    )
    .await?;
    outln!(
        "{} message(s) handled, {} failed",
        r.handled,
        r.failures.len()
    );
    if !r.failures.is_empty() {
        return Err(Failed::script(format!("the demo failed: {:?}", r.failures)));
    }

    step(3, "native get hello Out results/Ada.txt");
    let (real, full) = rt.locate("hello", "Out", "results/Ada.txt")?;
    let got = rt.services.backends.objects.get(&real, &full).await?;
    let Some((_, text)) = got else {
        return Err(Failed::script("the demo's result is missing"));
    };
    outln!("{}", String::from_utf8_lossy(&text));
    let (real, full) = rt.locate("hello", "In", "greetings/Ada.json")?;
    let gone = rt
        .services
        .backends
        .objects
        .get(&real, &full)
        .await?
        .is_none();
    outln!("In/greetings/Ada.json deleted after the continuation succeeded: {gone}");
    barrier(keep_in).await?;
    batch(keep_in).await?;
    if let Some(d) = keep_in {
        outln!(
            "\nthe three projects are kept in {0}/hello, {0}/barrier and {0}/batch; go on with e.g. \
             `cd {0}/hello && native invoke hello start '{{\"name\":\"Bob\"}}'`",
            d.display()
        );
    }
    outln!("\ndone. Make your own project with `native init DIR`.");
    Ok(())
}

/// examples/barrier: a barrier over three documents, acked by a partner played here.
async fn barrier(keep_in: Option<&Path>) -> Outcome {
    let dir = Place::new(keep_in, "barrier", examples::BARRIER)?;
    outln!(
        "\nnative demo, part 2: a barrier (examples/barrier) in {}",
        dir.path().display()
    );
    let p = Project::open(dir.path())?;
    let rt = crate::show::runtime(&p);
    let ev = json!({ "batch": "b1", "ref": "order-7", "docs": { "a.xml": "<a/>", "b.xml": "<b/>", "c.xml": "<c/>" } });
    step(
        4,
        &format!("native invoke acme send '{ev}'  (creates barrier b1, sends three documents)"),
    );
    outln!("returned {}", rt.invoke("acme", "send", ev).await?);
    drain_quiet(&rt).await?;
    let acks = [
        ("a", r#"{"status":"ok"}"#),
        ("b", r#"{"status":"error","error":"schema violation"}"#),
        ("c", r#"{"status":"ok"}"#),
        ("c", r#"{"status":"ok"}"#),
    ];
    for (i, (doc, body)) in acks.iter().enumerate() {
        let note = match i {
            2 => "  (the last member: finalize runs)",
            3 => "  (the partner retries: a duplicate, nothing runs)",
            _ => "",
        };
        step(
            5 + i as u32,
            &format!("native put acme Acks b1/{doc}.json --data '{body}'{note}"),
        );
        rt.put_object(
            "acme",
            "Acks",
            &format!("b1/{doc}.json"),
            body.as_bytes().to_vec().into(),
        )
        .await?;
        drain_quiet(&rt).await?;
    }
    step(9, "native get acme Out summaries/b1.json");
    let (real, full) = rt.locate("acme", "Out", "summaries/b1.json")?;
    match rt.services.backends.objects.get(&real, &full).await? {
        Some((_, text)) => outln!("{}", String::from_utf8_lossy(&text)),
        None => return Err(Failed::script("the barrier demo's summary is missing")),
    }
    Ok(())
}

/// examples/batch: a job for a partner, answered by the CLI partner from fixture files.
async fn batch(keep_in: Option<&Path>) -> Outcome {
    use native_core::batch::partner::{answer, pending, Options, Source};
    let dir = Place::new(keep_in, "batch", examples::BATCH)?;
    outln!(
        "\nnative demo, part 3: a partner job (examples/batch) in {}",
        dir.path().display()
    );
    let p = Project::open(dir.path())?;
    let rt = crate::show::runtime(&p);
    let ev = json!({ "ids": [1, 2, 3], "since": "2026-11-01", "ref": "r-1" });
    step(
        10,
        &format!("native invoke shop request '{ev}'  (input ids, two queries, state, submit)"),
    );
    let job = rt.invoke("shop", "request", ev).await?;
    outln!("returned {job}");
    step(11, "native ls shop '$batch'");
    let page = rt
        .services
        .backends
        .objects
        .list("shop-batch", "tenants/shop/", None, 100)
        .await?;
    for o in &page.objects {
        outln!("{}", o.key.trim_start_matches("tenants/shop/"));
    }
    step(12, "native partner shop --fixtures partner --gzip  (results, then done.json last; its notification runs settle)");
    let opts = Options {
        gzip: true,
        ..Options::new(Source::Fixtures(dir.path().join("partner")))
    };
    let objects = rt.services.backends.objects.clone();
    for request in pending(&*objects, &rt.services.deployment, "shop").await? {
        let a = answer(&*objects, &rt.services.deployment, "shop", &request, &opts).await?;
        outln!(
            "{}: {}, {}: {}",
            a.job,
            crate::show::count(request.queries.len(), "query", "queries"),
            crate::show::count(a.rows() as usize, "row", "rows"),
            if a.done.ok { "ok" } else { "failed" }
        );
    }
    drain_quiet(&rt).await?;
    step(
        13,
        "native get shop Out settlements/r-1.json  (and the job's files are gone)",
    );
    let (real, full) = rt.locate("shop", "Out", "settlements/r-1.json")?;
    match rt.services.backends.objects.get(&real, &full).await? {
        Some((_, text)) => outln!("{}", String::from_utf8_lossy(&text)),
        None => return Err(Failed::script("the batch demo's settlement is missing")),
    }
    let left = rt
        .services
        .backends
        .objects
        .list("shop-batch", "tenants/shop/", None, 100)
        .await?;
    outln!("objects left in the batch bucket: {}", left.objects.len());
    Ok(())
}

async fn drain_quiet(rt: &std::sync::Arc<native_core::runtime::Runtime>) -> Outcome {
    let r = drain(
        rt,
        DrainOptions {
            wait: true,
            ..Default::default()
        },
    )
    .await?;
    if r.failures.is_empty() {
        Ok(())
    } else {
        Err(Failed::script(format!("the demo failed: {:?}", r.failures)))
    }
}
