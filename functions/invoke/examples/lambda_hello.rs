//! The baseline of the cold-start bench (`tests/benches/coldstart.py`): a bare
//! `lambda_runtime` function that answers every event with "hello", built with the same profile
//! and dependencies as the functions, so that their init can be read as a ratio to it.

use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::run(service_fn(|_: LambdaEvent<serde_json::Value>| async {
        Ok::<_, Error>(serde_json::json!("hello"))
    }))
    .await
}
