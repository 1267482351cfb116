//! `native demo`: the examples, end to end, in a temporary project.

use native_core::local::{drain, DrainOptions, Project};
use serde_json::json;

use super::{Failed, Outcome};
use crate::examples;

fn step(n: u32, what: &str) {
    println!("\n== {n}. {what}");
}

pub async fn run() -> Outcome {
    let dir = tempfile::tempdir()
        .map_err(|e| Failed::usage(format!("cannot make a temporary folder: {e}")))?;
    examples::write(dir.path(), examples::HELLO).map_err(|e| Failed::usage(e.to_string()))?;
    println!(
        "native demo: a temporary project in {}",
        dir.path().display()
    );
    println!("(script logs go to stderr, one JSON object a line)");

    let p = Project::open(dir.path())?;
    let rt = p.runtime();
    step(
        1,
        "native invoke hello start '{\"name\":\"Ada\"}'  (on_invoke writes In/greetings/Ada.json)",
    );
    let out = rt
        .invoke("hello", "start", json!({ "name": "Ada" }))
        .await?;
    println!("returned {out}");

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
    println!(
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
    println!("{}", String::from_utf8_lossy(&text));
    let (real, full) = rt.locate("hello", "In", "greetings/Ada.json")?;
    let gone = rt
        .services
        .backends
        .objects
        .get(&real, &full)
        .await?
        .is_none();
    println!("In/greetings/Ada.json deleted after the continuation succeeded: {gone}");
    println!("\ndone. Make your own project with `native init DIR`.");
    Ok(())
}
