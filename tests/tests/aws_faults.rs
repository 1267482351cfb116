//! The AWS backend behind a fault-injecting proxy (`fault_proxy`): throttling in each service's
//! format, server errors, connections reset before and after the request reached the emulator,
//! stalls. What must hold whatever the network does: a write whose answer was lost is still the
//! caller's own (a claim never answers "taken" for itself), and a barrier whose create met a
//! fault is still listed.
//!
//! Run with `tests/moto.sh` (or the test command), which starts moto and sets
//! `NATIVE_TEST_AWS_ENDPOINT`; without it every test here returns at once.

#[cfg(feature = "aws")]
mod fault_proxy;

#[cfg(feature = "aws")]
mod with_aws {
    use native_core::aws::{
        emulator_sdk_config, Clients, DynamoKv, QueueUrls, SdkConfig, SqsQueues,
    };
    use native_core::barrier::{CreateSpec, Filter, Outcome};
    use native_core::ports::{KvStore, NewItem, PutMode};
    use native_core::Error;
    use native_tests::aws_endpoint as endpoint;
    use native_tests::aws_env::{clients, make_queue, make_table, unique};
    use native_tests::barriers::{barriers, Count};

    use super::fault_proxy::{Call, Fault, Faults, Proxy};

    /// Resets after forwarding, on the share `rate` of the calls that `pick` takes, at most
    /// once each (the SDK's retry goes through).
    fn answers_lost(seed: u64, rate: f64, pick: fn(&Call) -> bool) -> Faults {
        Faults {
            seed,
            rate,
            kinds: vec![Fault::ResetAfter],
            stall: std::time::Duration::ZERO,
            pick: Some(Box::new(pick)),
            once: true,
        }
    }

    /// The SDK's configuration for the emulator behind `endpoint`, whose retries wait 10 ms
    /// at first rather than up to a second (the test's run time).
    async fn quick_retries(endpoint: &str) -> SdkConfig {
        use native_core::aws::sdk::dynamodb::config::retry::RetryConfig;
        emulator_sdk_config(endpoint)
            .await
            .to_builder()
            .retry_config(
                RetryConfig::standard().with_initial_backoff(std::time::Duration::from_millis(10)),
            )
            .build()
    }

    /// A table in moto, and the key-value port over it through a proxy that loses the answers
    /// `faults` says.
    async fn kv_behind(ep: &str, faults: Faults) -> (Proxy, DynamoKv) {
        let table = unique("faults");
        make_table(&clients(ep).await, &table).await;
        let proxy = Proxy::start(ep, faults).await;
        let c = Clients::new(&quick_retries(&proxy.endpoint).await);
        (proxy, DynamoKv::new(c.dynamodb, &table))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_claim_whose_answer_was_lost_is_still_the_claimers_own() {
        let Some(ep) = endpoint() else { return };
        // GIVEN DynamoDB behind a proxy that applies 30 % of the conditional puts and then
        // cuts the connection before their answer (the SDK retries them)
        let (proxy, kv) = kv_behind(
            &ep,
            answers_lost(50, 0.3, |c| c.service == "dynamodb" && c.op == "PutItem"),
        )
        .await;
        // WHEN 150 claims are made, each of a key nobody else writes (put_if_absent's put)
        let mut taken = Vec::new();
        for i in 0..150 {
            let item = NewItem {
                pk: "claims".into(),
                sk: format!("work-{i}"),
                value: format!("\"request-{i}\""),
                expires_at_s: i64::MAX / 2,
            };
            match kv.put(item, PutMode::Create).await {
                Ok(_) => {}
                Err(Error::AlreadyExists { .. }) => taken.push(i),
                Err(e) => panic!("claim {i}: {e}"),
            }
        }
        // THEN every claim answers as made, though answers were lost
        let lost = proxy.seen().count(Fault::ResetAfter);
        assert!(
            lost >= 20,
            "only {lost} answers were lost: the test tests nothing"
        );
        assert!(
            taken.is_empty(),
            "{} of 150 claims answered \"taken\" for their own write ({lost} answers lost): {taken:?}",
            taken.len()
        );
        // AND another writer's claim of one of them is refused
        let again = NewItem {
            pk: "claims".into(),
            sk: "work-0".into(),
            value: "\"another\"".into(),
            expires_at_s: i64::MAX / 2,
        };
        proxy.set_rate(0.0);
        let err = kv.put(again, PutMode::Create).await.unwrap_err();
        assert!(matches!(err, Error::AlreadyExists { .. }), "{err:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_barrier_created_through_lost_answers_is_listed_and_its_acks_are_not_duplicates() {
        let Some(ep) = endpoint() else { return };
        // GIVEN DynamoDB behind a proxy that loses the answers of 30 % of the puts and
        // transactions (creates, claims, list rows and acks)
        let (proxy, kv) = kv_behind(
            &ep,
            answers_lost(7, 0.3, |c| {
                c.service == "dynamodb" && matches!(c.op.as_str(), "PutItem" | "TransactWriteItems")
            }),
        )
        .await;
        let queue = queue_port(&ep).await;
        let count = Count::default();
        let b = barriers(&kv, &queue, &count);
        // WHEN 30 barriers of 3 members, each with a continuation, are created and every
        // member acked once
        let mut ids = Vec::new();
        let mut duplicates = Vec::new();
        let mut undispatched = Vec::new();
        for i in 0..30 {
            let id = b
                .create(CreateSpec {
                    id: Some(format!("b{i:02}")),
                    members: vec!["m1".into(), "m2".into(), "m3".into()],
                    continue_with: Some("finalize".into()),
                    ..CreateSpec::default()
                })
                .await
                .unwrap_or_else(|e| panic!("create b{i:02}: {e}"));
            let ok = Outcome {
                ok: true,
                error: None,
                result: None,
            };
            let mut dispatched = false;
            for m in ["m1", "m2", "m3"] {
                let r = b
                    .ack(&id, m, ok.clone())
                    .await
                    .unwrap_or_else(|e| panic!("ack {id}/{m}: {e}"));
                if r.duplicate {
                    duplicates.push(format!("{id}/{m}"));
                }
                dispatched |= r.dispatched;
            }
            if !dispatched {
                undispatched.push(id.clone());
            }
            ids.push(id);
        }
        let lost = proxy.seen().count(Fault::ResetAfter);
        assert!(
            lost >= 20,
            "only {lost} answers were lost: the test tests nothing"
        );
        // THEN every barrier is in the tenant's list, complete, and no first ack was taken
        // for a duplicate
        proxy.set_rate(0.0);
        let page = b.list(Filter::All, None, 1000).await.unwrap();
        let mut listed: Vec<_> = page.barriers.iter().map(|l| l.id.clone()).collect();
        listed.sort();
        assert_eq!(listed, ids, "{lost} answers lost");
        let open: Vec<_> = page
            .barriers
            .iter()
            .filter(|l| l.done_ms.is_none())
            .collect();
        assert!(open.is_empty(), "listed as open: {open:?}");
        assert!(
            duplicates.is_empty(),
            "first acks taken for duplicates: {duplicates:?}"
        );
        // AND each continuation was claimed and sent by the last ack
        assert!(
            undispatched.is_empty(),
            "never dispatched: {undispatched:?}"
        );
    }

    /// The queue port over queues of its own (the barriers' continuations go to its work queue).
    async fn queue_port(ep: &str) -> SqsQueues {
        let c = clients(ep).await;
        let (work, _, work_dlq) = make_queue(&c, &unique("work")).await;
        let (events, _, events_dlq) = make_queue(&c, &unique("events")).await;
        SqsQueues::new(
            c.sqs.clone(),
            QueueUrls {
                events,
                work,
                events_dlq: Some(events_dlq),
                work_dlq: Some(work_dlq),
            },
        )
    }
}
