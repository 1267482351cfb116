//! Rendezvous barriers (seed 003): every rule of the contract (docs/rendezvous.md), on the
//! embedded backend and on DynamoDB in the emulator; and a seeded simulation of interleaved
//! arrivals with a fault at every store call.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use native_core::ports::WorkMessage;
use native_core::ports::{now_ms, Queue, QueueKind};
use native_core::rendezvous::{
    Barrier, CreateBarrier, Metadata, Rendezvous, Unlimited, UpdateBarrier, WaitOutcome,
};
use native_core::Error;
use native_tests::faults::{Fault, Faulty, Plan};
use native_tests::{Backend, TestBackends};
use serde_json::{json, Value};

native_tests::on_both_backends!(
    create_starts_at_generation_one_and_a_second_create_is_already_exists,
    every_limit_is_accepted_at_its_boundary_and_refused_one_past_it,
    the_arrival_that_completes_the_count_trips_the_barrier,
    a_generation_mismatch_is_a_failed_precondition_that_changes_nothing,
    repeated_arrivals_are_noops_in_the_generation_and_after_its_trip,
    waits_answer_older_generations_at_once_and_time_out_on_current_and_future_ones,
    a_trip_releases_every_waiter_together_and_a_delete_ends_waits_with_not_found,
    update_raises_lowers_to_the_count_to_trip_and_refuses_below_it,
    update_needs_the_version_and_replaces_metadata_whole,
    a_deleted_barrier_is_gone_and_its_name_starts_again_at_generation_one,
    participants_are_listed_per_generation_in_process_order_page_by_page,
    every_list_pages_forwards_and_backwards_and_skips_what_is_gone,
    namespaces_hold_barriers_and_never_meet_between_tenants,
    an_inactive_barrier_is_gone_when_its_window_ends_and_arrivals_move_it,
    each_trip_sends_one_continuation_and_a_retry_finishes_a_lost_one,
    scripts_arrive_and_their_continuation_runs_once_per_trip,
    a_trip_s_continuation_delivered_twice_runs_once,
    script_errors_name_the_function_the_field_and_the_line,
    rendezvous_rows_are_out_of_reach_of_native_db_and_other_tenants,
    the_router_serves_every_method_of_the_contract,
    the_guide_s_scripts_run_three_phases_with_one_continuation_each,
    store_calls_per_arrival_are_as_documented,
    racing_arrivals_succeed_at_their_first_attempt,
    a_barrier_stored_before_the_counts_counts_on_and_trips,
);

/// Fresh storage and a clock the test moves.
struct Env {
    t: TestBackends,
    offset: Arc<AtomicI64>,
    clock: Box<dyn Fn() -> i64 + Send + Sync>,
}

impl Env {
    async fn new(backend: Backend) -> Self {
        let offset = Arc::new(AtomicI64::new(0));
        let o = offset.clone();
        Env {
            t: TestBackends::new(backend).await,
            offset,
            clock: Box::new(move || now_ms() + o.load(Ordering::SeqCst)),
        }
    }

    /// The barriers of a tenant (with a queue).
    fn rdv(&self, tenant: &'static str) -> Rendezvous<'_, Unlimited> {
        let mut r = Rendezvous::new(
            &*self.t.backends.kv,
            &*self.t.backends.queue,
            tenant,
            &Unlimited,
        );
        r.queue_enabled = true;
        r.clock = &*self.clock;
        r
    }

    fn advance_s(&self, s: i64) {
        self.offset.fetch_add(s * 1000, Ordering::SeqCst);
    }
}

fn spec(name: &str, n: u64) -> CreateBarrier {
    CreateBarrier {
        namespace: "default".into(),
        name: name.into(),
        description: "End of map phase".into(),
        expected_processes: n,
        delete_inactive_after_seconds: 3600,
        ..CreateBarrier::default()
    }
}

fn update_of(b: &Barrier) -> UpdateBarrier {
    UpdateBarrier {
        namespace: "default".into(),
        name: b.name.clone(),
        description: b.description.clone(),
        expected_processes: b.expected_processes,
        metadata: b.metadata.clone(),
        expected_version: b.version,
        delete_inactive_after_seconds: b.delete_inactive_after_seconds,
    }
}

fn meta(pairs: &[(&str, &str)]) -> Metadata {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[track_caller]
fn invalid<T: std::fmt::Debug>(r: native_core::Result<T>, want: &str) {
    match r {
        Err(Error::InvalidInput(m)) => assert!(m.contains(want), "{m:?} lacks {want:?}"),
        other => panic!("expected invalid_argument {want:?}, got {other:?}"),
    }
}

#[track_caller]
fn precondition<T: std::fmt::Debug>(r: native_core::Result<T>, want: &str) {
    match r {
        Err(Error::Precondition { what }) => {
            assert!(what.contains(want), "{what:?} lacks {want:?}")
        }
        other => panic!("expected failed_precondition {want:?}, got {other:?}"),
    }
}

#[track_caller]
fn not_found<T: std::fmt::Debug>(r: native_core::Result<T>, want: &str) {
    match r {
        Err(e @ Error::NotFound { .. }) => {
            assert_eq!(e.to_string(), format!("{want} not found"))
        }
        other => panic!("expected not_found, got {other:?}"),
    }
}

async fn create_starts_at_generation_one_and_a_second_create_is_already_exists(backend: Backend) {
    let e = Env::new(backend).await;
    let r = e.rdv("acme");
    // GIVEN no barrier WHEN one is created
    let b = r.create(spec("phase_1_complete", 4)).await.unwrap();
    // THEN it starts at generation 1, version 1, nobody arrived, all three times equal
    assert_eq!(
        (
            b.generation,
            b.version,
            b.arrived_processes,
            b.expected_processes
        ),
        (1, 1, 0, 4)
    );
    assert!(b.created_at > 0 && b.created_at == b.updated_at && b.updated_at == b.last_activity_at);
    assert_eq!(b.description, "End of map phase");
    assert_eq!(r.get("default", "phase_1_complete").await.unwrap(), b);
    // AND a second create of the name is already_exists
    assert!(matches!(
        r.create(spec("phase_1_complete", 2)).await,
        Err(Error::AlreadyExists { .. })
    ));
    // AND a missing barrier, or a missing namespace, is not_found
    not_found(r.get("default", "nope").await, "barrier");
    let mut s = spec("x", 1);
    s.namespace = "pipelines".into();
    not_found(r.create(s).await, "namespace");
    not_found(r.get("pipelines", "x").await, "namespace");
}

async fn every_limit_is_accepted_at_its_boundary_and_refused_one_past_it(backend: Backend) {
    let e = Env::new(backend).await;
    let mut r = e.rdv("acme");
    let name128 = "n".repeat(128);
    // names: 128 bytes of [-_0-9a-zA-Z] accepted, 129 or another character refused
    r.create(spec(&name128, 1)).await.unwrap();
    invalid(
        r.create(spec(&"n".repeat(129), 1)).await,
        "barrier_name must be at most 128 bytes, not 129",
    );
    invalid(
        r.create(spec("a.b", 1)).await,
        "barrier_name must use only letters, digits, '-' and '_'",
    );
    invalid(
        r.create(spec("", 1)).await,
        "barrier_name must not be empty",
    );
    invalid(
        r.create_namespace(&"n".repeat(129), "", Metadata::new())
            .await,
        "name must be at most 128 bytes",
    );
    r.create_namespace(&name128, "", Metadata::new())
        .await
        .unwrap();
    // description: 1024 bytes accepted, 1025 refused
    let mut s = spec("d1", 1);
    s.description = "d".repeat(1024);
    r.create(s.clone()).await.unwrap();
    s.name = "d2".into();
    s.description.push('d');
    invalid(
        r.create(s).await,
        "description must be at most 1024 bytes, not 1025",
    );
    // metadata: 32 entries, 128-byte keys and 256-byte values accepted; one past each refused
    let full: Metadata = (0..32)
        .map(|i| (format!("{i:0>128}"), "v".repeat(256)))
        .collect();
    let mut s = spec("m1", 1);
    s.metadata = full.clone();
    r.create(s.clone()).await.unwrap();
    s.name = "m2".into();
    let mut more = full.clone();
    more.insert("k".into(), "v".into());
    s.metadata = more;
    invalid(
        r.create(s.clone()).await,
        "metadata must have at most 32 entries, not 33",
    );
    s.metadata = meta(&[(&"k".repeat(129), "v")]);
    invalid(
        r.create(s.clone()).await,
        "metadata key must be 1 to 128 bytes, not 129",
    );
    s.metadata = meta(&[("", "v")]);
    invalid(
        r.create(s.clone()).await,
        "metadata key must be 1 to 128 bytes, not 0",
    );
    s.metadata = meta(&[("k", &"v".repeat(257))]);
    invalid(r.create(s).await, "must be at most 256 bytes, not 257");
    // expected_processes: 1 and 1 000 000 accepted, 0 and 1 000 001 refused
    r.create(spec("e1", 1)).await.unwrap();
    r.create(spec("e2", 1_000_000)).await.unwrap();
    invalid(
        r.create(spec("e3", 0)).await,
        "expected_processes must be greater than 0",
    );
    invalid(
        r.create(spec("e3", 1_000_001)).await,
        "expected_processes must be at most 1000000, not 1000001",
    );
    // delete_inactive_after_seconds: 60 accepted, 59 refused
    let mut s = spec("i1", 1);
    s.delete_inactive_after_seconds = 60;
    r.create(s.clone()).await.unwrap();
    s.name = "i2".into();
    s.delete_inactive_after_seconds = 59;
    invalid(
        r.create(s).await,
        "delete_inactive_after_seconds must be at least 60, not 59",
    );
    // expected_generation and expected_version: greater than 0
    invalid(
        r.arrive("default", "e2", "p", 0, Metadata::new()).await,
        "expected_generation must be greater than 0",
    );
    invalid(
        r.wait("default", "e2", 0, Duration::ZERO).await,
        "expected_generation must be greater than 0",
    );
    let mut u = update_of(&r.get("default", "e2").await.unwrap());
    u.expected_version = 0;
    invalid(r.update(u).await, "expected_version must be greater than 0");
    // process_id: a name
    r.arrive("default", "e2", &name128, 1, Metadata::new())
        .await
        .unwrap();
    invalid(
        r.arrive("default", "e2", &"p".repeat(129), 1, Metadata::new())
            .await,
        "process_id must be at most 128 bytes",
    );
    // timeout_seconds: 300 accepted (a tripped generation answers at once), 301 refused
    r.arrive("default", "e1", "p", 1, Metadata::new())
        .await
        .unwrap();
    let (_, out) = r
        .wait("default", "e1", 1, Duration::from_secs(300))
        .await
        .unwrap();
    assert_eq!(out, WaitOutcome::Tripped);
    invalid(
        r.wait("default", "e1", 1, Duration::from_secs(301)).await,
        "timeout_seconds must be 0 to 300, not 301",
    );
    // limit: 250 accepted, 251 refused; a token over 1024 characters refused
    r.list("default", "", 250).await.unwrap();
    invalid(
        r.list("default", "", 251).await,
        "limit must be 0 to 250, not 251",
    );
    invalid(
        r.list_namespaces("", 251).await,
        "limit must be 0 to 250, not 251",
    );
    invalid(
        r.participants("default", "e2", 0, "", 251).await,
        "limit must be 0 to 250, not 251",
    );
    invalid(
        r.list("default", &"t".repeat(1025), 1).await,
        "pagination_token must be at most 1024 characters",
    );
    invalid(
        r.list("default", "not/ours", 1).await,
        "pagination_token is not one this API handed out",
    );
    // barriers per namespace: the limit (here 7, as set) accepted, one past refused, and a
    // delete makes room again
    r.max_barriers = 7;
    r.create(spec("full", 1)).await.unwrap();
    assert_eq!(r.list("default", "", 0).await.unwrap().items.len(), 7);
    match r.create(spec("over", 1)).await {
        Err(e @ Error::LimitExceeded { .. }) => assert!(
            e.to_string().starts_with(
                "limit barriers_per_namespace exceeded: namespace \"default\" holds 7 barriers"
            ),
            "{e}"
        ),
        other => panic!("{other:?}"),
    }
    r.delete("default", "full").await.unwrap();
    r.create(spec("over", 1)).await.unwrap();
}

async fn the_arrival_that_completes_the_count_trips_the_barrier(backend: Backend) {
    let e = Env::new(backend).await;
    let r = e.rdv("acme");
    // GIVEN a barrier for three
    let b0 = r.create(spec("b", 3)).await.unwrap();
    e.advance_s(5);
    // WHEN two arrive
    let a = r
        .arrive("default", "b", "shard-0", 1, Metadata::new())
        .await
        .unwrap();
    // THEN each counts, moves last_activity_at, and changes neither version nor updated_at
    assert!(!a.all_arrived);
    assert_eq!((a.barrier.arrived_processes, a.barrier.generation), (1, 1));
    assert!(a.barrier.last_activity_at >= b0.last_activity_at + 5_000_000_000);
    assert_eq!(
        (a.barrier.version, a.barrier.updated_at),
        (1, b0.updated_at)
    );
    let a = r
        .arrive("default", "b", "shard-1", 1, Metadata::new())
        .await
        .unwrap();
    assert_eq!((a.barrier.arrived_processes, a.all_arrived), (2, false));
    // WHEN the third arrives THEN it trips: the next generation, nobody arrived in it
    let a = r
        .arrive("default", "b", "shard-2", 1, Metadata::new())
        .await
        .unwrap();
    assert!(a.all_arrived);
    assert_eq!((a.barrier.arrived_processes, a.barrier.generation), (0, 2));
    assert_eq!(r.get("default", "b").await.unwrap(), a.barrier);
    // AND the next generation counts again from 0
    let a = r
        .arrive("default", "b", "shard-0", 2, Metadata::new())
        .await
        .unwrap();
    assert_eq!(
        (
            a.barrier.arrived_processes,
            a.barrier.generation,
            a.all_arrived
        ),
        (1, 2, false)
    );
}

async fn a_generation_mismatch_is_a_failed_precondition_that_changes_nothing(backend: Backend) {
    let e = Env::new(backend).await;
    let r = e.rdv("acme");
    // GIVEN a barrier at generation 1 with one arrival
    r.create(spec("b", 2)).await.unwrap();
    r.arrive("default", "b", "p0", 1, Metadata::new())
        .await
        .unwrap();
    let before = r.get("default", "b").await.unwrap();
    // WHEN a process arrives for generation 2 THEN failed_precondition naming both
    precondition(
        r.arrive("default", "b", "p1", 2, Metadata::new()).await,
        "expected_generation 2 does not match the barrier's current generation 1",
    );
    // AND nothing changed, and that process was not recorded
    assert_eq!(r.get("default", "b").await.unwrap(), before);
    assert_eq!(
        r.participants("default", "b", 1, "", 0)
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    // AND after a trip, a process that did not arrive in generation 1 cannot arrive there
    r.arrive("default", "b", "p1", 1, Metadata::new())
        .await
        .unwrap();
    precondition(
        r.arrive("default", "b", "late", 1, Metadata::new()).await,
        "expected_generation 1 does not match the barrier's current generation 2",
    );
}

async fn repeated_arrivals_are_noops_in_the_generation_and_after_its_trip(backend: Backend) {
    let e = Env::new(backend).await;
    let r = e.rdv("acme");
    r.create(spec("b", 2)).await.unwrap();
    // GIVEN p0 arrived with metadata
    let first = r
        .arrive("default", "b", "p0", 1, meta(&[("host", "a")]))
        .await
        .unwrap();
    e.advance_s(10);
    // WHEN it arrives again, with other metadata
    let again = r
        .arrive("default", "b", "p0", 1, meta(&[("host", "b")]))
        .await
        .unwrap();
    // THEN nothing changes: the count, last_activity_at, its metadata
    assert_eq!(again.barrier, first.barrier);
    assert!(!again.all_arrived);
    let ps = r
        .participants("default", "b", 1, "", 0)
        .await
        .unwrap()
        .items;
    assert_eq!(ps.len(), 1);
    assert_eq!(ps[0].metadata, meta(&[("host", "a")]));
    // WHEN p1 trips it and both repeat their generation-1 arrival
    r.arrive("default", "b", "p1", 1, Metadata::new())
        .await
        .unwrap();
    for p in ["p0", "p1"] {
        let a = r
            .arrive("default", "b", p, 1, Metadata::new())
            .await
            .unwrap();
        // THEN each is a no-op that says the generation tripped
        assert!(a.all_arrived, "{p}");
        assert_eq!((a.barrier.generation, a.barrier.arrived_processes), (2, 0));
    }
    assert_eq!(
        r.participants("default", "b", 2, "", 0)
            .await
            .unwrap()
            .items
            .len(),
        0
    );
}

async fn waits_answer_older_generations_at_once_and_time_out_on_current_and_future_ones(
    backend: Backend,
) {
    let e = Env::new(backend).await;
    let r = e.rdv("acme");
    r.create(spec("b", 1)).await.unwrap();
    r.arrive("default", "b", "p", 1, Metadata::new())
        .await
        .unwrap();
    r.arrive("default", "b", "p", 2, Metadata::new())
        .await
        .unwrap();
    // GIVEN a barrier at generation 3
    let now = r.get("default", "b").await.unwrap();
    assert_eq!(now.generation, 3);
    // WHEN waiting on older generations THEN TRIPPED at once, even with a long timeout
    for g in [1, 2] {
        let t = Instant::now();
        let (b, out) = r
            .wait("default", "b", g, Duration::from_secs(300))
            .await
            .unwrap();
        assert_eq!((out, b.generation), (WaitOutcome::Tripped, 3));
        assert!(t.elapsed() < Duration::from_secs(5));
    }
    // WHEN waiting on the current or a future generation THEN TIMED_OUT, barrier unchanged
    for g in [3, 4, 99] {
        let (b, out) = r.wait("default", "b", g, Duration::ZERO).await.unwrap();
        assert_eq!((out, &b), (WaitOutcome::TimedOut, &now));
    }
    let t = Instant::now();
    let (_, out) = r
        .wait("default", "b", 3, Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(out, WaitOutcome::TimedOut);
    assert!(t.elapsed() >= Duration::from_secs(1));
    // AND waiting does not count as activity
    assert_eq!(r.get("default", "b").await.unwrap(), now);
    not_found(
        r.wait("default", "none", 1, Duration::ZERO).await,
        "barrier",
    );
    // AND a tenant parks at most max_rendezvous_waits waits at once (a tenant of its own:
    // waits are counted per tenant in the process)
    let mut capped = e.rdv(if matches!(backend, Backend::Embedded) {
        "waits-e"
    } else {
        "waits-a"
    });
    capped.max_waits = 1;
    capped.create(spec("b", 2)).await.unwrap();
    let parked = capped.wait("default", "b", 1, Duration::from_secs(2));
    let second = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        capped.wait("default", "b", 1, Duration::from_secs(2)).await
    };
    let (first, second) = tokio::join!(parked, second);
    assert_eq!(first.unwrap().1, WaitOutcome::TimedOut);
    let e = second.unwrap_err().to_string();
    assert!(
        e.contains("limit max_rendezvous_waits exceeded") && e.contains("may have 1"),
        "{e}"
    );
    // THEN once the first has ended, a wait parks again
    let (_, out) = capped
        .wait("default", "b", 1, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(out, WaitOutcome::TimedOut);
}

async fn a_trip_releases_every_waiter_together_and_a_delete_ends_waits_with_not_found(
    backend: Backend,
) {
    let e = Env::new(backend).await;
    let e = Arc::new(e);
    // A name of its own: the waiters' registry is per process, shared by parallel tests.
    let name: &'static str = match backend {
        Backend::Embedded => "waited_embedded",
        Backend::Aws => "waited_aws",
    };
    e.rdv("acme").create(spec(name, 2)).await.unwrap();
    // GIVEN five waiters of generation 1
    let mut waiters = Vec::new();
    for _ in 0..5 {
        let e = e.clone();
        waiters.push(tokio::spawn(async move {
            let r = e.rdv("acme");
            let out = r.wait("default", name, 1, Duration::from_secs(30)).await;
            (out, Instant::now())
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = e.rdv("acme");
    r.arrive("default", name, "p0", 1, Metadata::new())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        waiters.iter().all(|w| !w.is_finished()),
        "released before the trip"
    );
    // WHEN the last arrives
    let tripped_at = Instant::now();
    r.arrive("default", name, "p1", 1, Metadata::new())
        .await
        .unwrap();
    // THEN all are released, with the new generation, within moments of the trip
    for w in waiters {
        let (out, at) = w.await.unwrap();
        let (b, outcome) = out.unwrap();
        assert_eq!((outcome, b.generation), (WaitOutcome::Tripped, 2));
        assert!(at.duration_since(tripped_at) < Duration::from_millis(500));
    }
    // GIVEN a waiter of generation 2 WHEN the barrier is deleted THEN it ends with not_found
    let w = {
        let e = e.clone();
        tokio::spawn(async move {
            e.rdv("acme")
                .wait("default", name, 2, Duration::from_secs(30))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    r.delete("default", name).await.unwrap();
    let out = tokio::time::timeout(Duration::from_secs(5), w)
        .await
        .unwrap()
        .unwrap();
    not_found(out, "barrier");
    assert!(
        !native_core::rendezvous::notify::has_waiters("acme", "default", name),
        "waiters' channels left behind"
    );
}

async fn update_raises_lowers_to_the_count_to_trip_and_refuses_below_it(backend: Backend) {
    let e = Env::new(backend).await;
    let r = e.rdv("acme");
    r.create(spec("b", 3)).await.unwrap();
    r.arrive("default", "b", "p0", 1, Metadata::new())
        .await
        .unwrap();
    let b = r
        .arrive("default", "b", "p1", 1, Metadata::new())
        .await
        .unwrap()
        .barrier;
    e.advance_s(3);
    // WHEN raising to 5 THEN version + 1, updated_at moves, last_activity_at does not
    let mut u = update_of(&b);
    u.expected_processes = 5;
    let up = r.update(u).await.unwrap();
    assert_eq!(
        (
            up.expected_processes,
            up.version,
            up.generation,
            up.arrived_processes
        ),
        (5, 2, 1, 2)
    );
    assert!(up.updated_at > b.updated_at);
    assert_eq!(up.last_activity_at, b.last_activity_at);
    // WHEN lowering below the arrived count THEN invalid_argument, nothing changes
    let mut u = update_of(&up);
    u.expected_processes = 1;
    invalid(
        r.update(u).await,
        "expected_processes 1 is below arrived_processes 2",
    );
    assert_eq!(r.get("default", "b").await.unwrap(), up);
    // WHEN lowering to the arrived count THEN it trips at once
    let mut u = update_of(&up);
    u.expected_processes = 2;
    let t = r.update(u).await.unwrap();
    assert_eq!(
        (
            t.generation,
            t.arrived_processes,
            t.version,
            t.expected_processes
        ),
        (2, 0, 3, 2)
    );
    let (_, out) = r.wait("default", "b", 1, Duration::ZERO).await.unwrap();
    assert_eq!(out, WaitOutcome::Tripped);
    // AND an update with nobody arrived does not trip (the count must stay above 0)
    let mut u = update_of(&t);
    u.expected_processes = 1;
    assert_eq!(r.update(u).await.unwrap().generation, 2);
}

async fn update_needs_the_version_and_replaces_metadata_whole(backend: Backend) {
    let e = Env::new(backend).await;
    let r = e.rdv("acme");
    let mut s = spec("b", 2);
    s.metadata = meta(&[("a", "1"), ("b", "2")]);
    let b = r.create(s).await.unwrap();
    // WHEN updating with another version THEN failed_precondition naming both
    let mut u = update_of(&b);
    u.expected_version = 7;
    precondition(
        r.update(u).await,
        "expected_version 7 does not match the barrier's version 1",
    );
    // WHEN updating with new metadata THEN it replaces the old whole
    let mut u = update_of(&b);
    u.metadata = meta(&[("c", "3")]);
    u.description = "new".into();
    u.delete_inactive_after_seconds = 60;
    let b2 = r.update(u).await.unwrap();
    assert_eq!(
        (b2.metadata.clone(), b2.description.as_str()),
        (meta(&[("c", "3")]), "new")
    );
    assert_eq!(b2.delete_inactive_after_seconds, 60);
    // AND omitted metadata clears it
    let mut u = update_of(&b2);
    u.metadata = Metadata::new();
    assert!(r.update(u).await.unwrap().metadata.is_empty());
    // AND the version just used is stale now
    precondition(
        r.update(update_of(&b2)).await,
        "expected_version 2 does not match the barrier's version 3",
    );
    // AND arrivals never change the version
    let a = r
        .arrive("default", "b", "p", 1, Metadata::new())
        .await
        .unwrap();
    assert_eq!(a.barrier.version, 3);
}

async fn a_deleted_barrier_is_gone_and_its_name_starts_again_at_generation_one(backend: Backend) {
    let e = Env::new(backend).await;
    let r = e.rdv("acme");
    // GIVEN a barrier at generation 2 with p0 arrived in it
    r.create(spec("b", 1)).await.unwrap();
    r.arrive("default", "b", "p0", 1, Metadata::new())
        .await
        .unwrap();
    r.arrive("default", "b", "p1", 2, Metadata::new())
        .await
        .unwrap();
    // WHEN deleted THEN reads say not_found, and deleting again is a no-op
    r.delete("default", "b").await.unwrap();
    not_found(r.get("default", "b").await, "barrier");
    not_found(
        r.arrive("default", "b", "p0", 1, Metadata::new()).await,
        "barrier",
    );
    not_found(r.participants("default", "b", 1, "", 0).await, "barrier");
    r.delete("default", "b").await.unwrap();
    r.delete("default", "never").await.unwrap();
    // WHEN created again THEN it starts at generation 1 with no participants of the old one
    let b = r.create(spec("b", 2)).await.unwrap();
    assert_eq!((b.generation, b.arrived_processes, b.version), (1, 0, 1));
    assert!(r
        .participants("default", "b", 1, "", 0)
        .await
        .unwrap()
        .items
        .is_empty());
    let a = r
        .arrive("default", "b", "p0", 1, Metadata::new())
        .await
        .unwrap();
    assert_eq!((a.barrier.arrived_processes, a.all_arrived), (1, false));
}

async fn participants_are_listed_per_generation_in_process_order_page_by_page(backend: Backend) {
    let e = Env::new(backend).await;
    let r = e.rdv("acme");
    r.create(spec("b", 5)).await.unwrap();
    // GIVEN five arrivals in generation 1 (out of order) and two in generation 2
    for p in ["p3", "p0", "p4", "p1", "p2"] {
        r.arrive("default", "b", p, 1, meta(&[("who", p)]))
            .await
            .unwrap();
    }
    for p in ["q1", "q0"] {
        r.arrive("default", "b", p, 2, Metadata::new())
            .await
            .unwrap();
    }
    // WHEN listing generation 1 two at a time THEN three pages in process_id order
    let mut seen = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let page = r.participants("default", "b", 1, &token, 2).await.unwrap();
        let (ps, next) = (page.items, page.next);
        pages += 1;
        for p in &ps {
            assert_eq!(p.generation, 1);
            assert_eq!(p.metadata, meta(&[("who", &p.process_id)]));
            assert!(p.arrived_at > 0);
            seen.push(p.process_id.clone());
        }
        match next {
            Some(t) => token = t,
            None => break,
        }
    }
    assert_eq!(seen, ["p0", "p1", "p2", "p3", "p4"]);
    assert_eq!(pages, 3);
    // AND generation 0 means the current one
    let page = r.participants("default", "b", 0, "", 0).await.unwrap();
    let (ps, next) = (page.items, page.next);
    let ids: Vec<_> = ps.iter().map(|p| p.process_id.as_str()).collect();
    assert_eq!((ids, next), (vec!["q0", "q1"], None));
    // AND a generation nobody reached is empty
    assert!(r
        .participants("default", "b", 9, "", 0)
        .await
        .unwrap()
        .items
        .is_empty());
}

/// Pages forwards from the first page to the end, then backwards with the previous tokens to
/// the first page again: the names of each page, and which tokens each page has.
async fn walk<F, Fut>(list: F) -> Vec<(Vec<String>, bool, bool)>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = native_core::rendezvous::Page<String>>,
{
    let mut out = Vec::new();
    let mut p = list(String::new()).await;
    loop {
        out.push((p.items.clone(), p.previous.is_some(), p.next.is_some()));
        match p.next.clone() {
            Some(n) => p = list(n).await,
            None => break,
        }
    }
    while let Some(prev) = p.previous.clone() {
        p = list(prev).await;
        out.push((p.items.clone(), p.previous.is_some(), p.next.is_some()));
    }
    out
}

fn names_of(range: std::ops::Range<usize>, prefix: &str) -> Vec<String> {
    range.map(|i| format!("{prefix}_{i:03}")).collect()
}

async fn every_list_pages_forwards_and_backwards_and_skips_what_is_gone(backend: Backend) {
    let e = Env::new(backend).await;
    let r = &e.rdv("acme");
    // GIVEN 25 barriers (Grackle's pagination case), 25 arrivals and 24 namespaces + default
    r.create_namespace("pages", "", Metadata::new())
        .await
        .unwrap();
    for n in names_of(1..26, "barrier") {
        let mut s = spec(&n, 25);
        s.namespace = "pages".into();
        r.create(s).await.unwrap();
    }
    for p in names_of(1..26, "process") {
        r.arrive("pages", "barrier_001", &p, 1, Metadata::new())
            .await
            .unwrap();
    }
    for n in names_of(1..24, "namespace") {
        r.create_namespace(&n, "", Metadata::new()).await.unwrap();
    }
    // WHEN each list is walked 10 at a time forwards and back
    // THEN pages of 10, 10, 5 forwards and 10, 10 back, with the tokens Grackle's tests expect
    let expect = |all: Vec<String>| {
        vec![
            (all[0..10].to_vec(), false, true),
            (all[10..20].to_vec(), true, true),
            (all[20..25].to_vec(), true, false),
            (all[10..20].to_vec(), true, true),
            (all[0..10].to_vec(), false, true),
        ]
    };
    let barriers = walk(|t| async move {
        let p = r.list("pages", &t, 10).await.unwrap();
        native_core::rendezvous::Page {
            items: p.items.into_iter().map(|b| b.name).collect(),
            next: p.next,
            previous: p.previous,
        }
    })
    .await;
    assert_eq!(barriers, expect(names_of(1..26, "barrier")));
    let participants = walk(|t| async move {
        let p = r
            .participants("pages", "barrier_001", 1, &t, 10)
            .await
            .unwrap();
        native_core::rendezvous::Page {
            items: p.items.into_iter().map(|x| x.process_id).collect(),
            next: p.next,
            previous: p.previous,
        }
    })
    .await;
    assert_eq!(participants, expect(names_of(1..26, "process")));
    // (namespaces: default, then namespace_001 ..., pages)
    let mut all_ns = vec!["default".to_string()];
    all_ns.extend(names_of(1..24, "namespace"));
    all_ns.push("pages".into());
    let namespaces = walk(|t| async move {
        let p = r.list_namespaces(&t, 10).await.unwrap();
        native_core::rendezvous::Page {
            items: p.items.into_iter().map(|n| n.name).collect(),
            next: p.next,
            previous: p.previous,
        }
    })
    .await;
    assert_eq!(namespaces, expect(all_ns));
    // AND the previous page of a page past the end is the last page
    let last = r.list("pages", "", 250).await.unwrap();
    assert_eq!((last.items.len(), last.next), (25, None));
    // AND barriers gone for inactivity are skipped both ways: only 001 and 013 had activity
    e.advance_s(3000);
    r.arrive("pages", "barrier_001", "late", 2, Metadata::new())
        .await
        .unwrap();
    r.arrive("pages", "barrier_013", "late", 1, Metadata::new())
        .await
        .unwrap();
    e.advance_s(700);
    let live = walk(|t| async move {
        let p = r.list("pages", &t, 1).await.unwrap();
        native_core::rendezvous::Page {
            items: p.items.into_iter().map(|b| b.name).collect(),
            next: p.next,
            previous: p.previous,
        }
    })
    .await;
    let one = |n: &str| vec![n.to_string()];
    assert_eq!(
        live,
        vec![
            (one("barrier_001"), false, true),
            (one("barrier_013"), true, false),
            (one("barrier_001"), false, true),
        ]
    );
}

async fn namespaces_hold_barriers_and_never_meet_between_tenants(backend: Backend) {
    let e = Env::new(backend).await;
    let acme = e.rdv("acme");
    let other = e.rdv("other");
    // GIVEN a namespace of acme
    let ns = acme
        .create_namespace("pipelines", "ETL", meta(&[("team", "data")]))
        .await
        .unwrap();
    assert_eq!(
        (ns.name.as_str(), ns.description.as_str()),
        ("pipelines", "ETL")
    );
    assert!(ns.created_at > 0 && ns.created_at == ns.updated_at);
    assert!(matches!(
        acme.create_namespace("pipelines", "", Metadata::new())
            .await,
        Err(Error::AlreadyExists { .. })
    ));
    assert_eq!(acme.get_namespace("pipelines").await.unwrap(), ns);
    assert_eq!(acme.get_namespace("default").await.unwrap().name, "default");
    let mut s = spec("b", 2);
    s.namespace = "pipelines".into();
    acme.create(s.clone()).await.unwrap();
    acme.arrive("pipelines", "b", "p", 1, Metadata::new())
        .await
        .unwrap();
    // THEN the other tenant sees neither the namespace nor its barrier
    not_found(other.get_namespace("pipelines").await, "namespace");
    not_found(other.get("pipelines", "b").await, "namespace");
    let names = |l: Vec<native_core::rendezvous::Namespace>| -> Vec<String> {
        l.into_iter().map(|n| n.name).collect()
    };
    assert_eq!(
        names(other.list_namespaces("", 0).await.unwrap().items),
        ["default"]
    );
    // AND names are its own: it can create the same namespace and barrier apart
    other
        .create_namespace("pipelines", "", Metadata::new())
        .await
        .unwrap();
    other.create(s.clone()).await.unwrap();
    assert_eq!(
        other.get("pipelines", "b").await.unwrap().arrived_processes,
        0
    );
    assert_eq!(
        acme.get("pipelines", "b").await.unwrap().arrived_processes,
        1
    );
    // AND a barrier of the same name in another namespace is another barrier
    acme.create(spec("b", 2)).await.unwrap();
    assert_eq!(acme.get("default", "b").await.unwrap().arrived_processes, 0);
    // WHEN namespaces are listed a page at a time THEN in name order
    acme.create_namespace("alpha", "", Metadata::new())
        .await
        .unwrap();
    let one = |token: String| {
        let acme = &acme;
        async move {
            let p = acme.list_namespaces(&token, 1).await.unwrap();
            assert_eq!(p.items.len(), 1, "{p:?}");
            (p.items[0].name.clone(), p.next, p.previous)
        }
    };
    let (first, next, previous) = one(String::new()).await;
    assert_eq!((first.as_str(), previous), ("alpha", None));
    // (default is listed with the rest, with the time it was first used as created_at)
    let (second, next, back) = one(next.unwrap()).await;
    assert_eq!(second, "default");
    let d = acme.get_namespace("default").await.unwrap();
    assert!(d.created_at > 0 && d.created_at == d.updated_at, "{d:?}");
    let (third, last, _) = one(next.unwrap()).await;
    assert_eq!((third.as_str(), last), ("pipelines", None));
    // AND the previous token of a page gives the page before it
    assert_eq!(one(back.unwrap()).await.0, "alpha");
    let page = acme.list_namespaces("", 0).await.unwrap();
    assert_eq!(names(page.items), ["alpha", "default", "pipelines"]);
    // WHEN updated THEN description and metadata are replaced
    let up = acme
        .update_namespace("pipelines", "new", Metadata::new())
        .await
        .unwrap();
    assert_eq!(
        (up.description.as_str(), up.metadata.len(), up.created_at),
        ("new", 0, ns.created_at)
    );
    assert!(up.updated_at >= ns.updated_at);
    // WHEN deleted THEN its barriers go with it, even when created again
    acme.delete_namespace("pipelines").await.unwrap();
    not_found(acme.get("pipelines", "b").await, "namespace");
    acme.create_namespace("pipelines", "", Metadata::new())
        .await
        .unwrap();
    not_found(acme.get("pipelines", "b").await, "barrier");
    assert!(acme
        .list("pipelines", "", 0)
        .await
        .unwrap()
        .items
        .is_empty());
    // AND the other tenant's are untouched
    assert_eq!(other.get("pipelines", "b").await.unwrap().generation, 1);
    not_found(acme.delete_namespace("nope").await, "namespace");
    invalid(
        acme.delete_namespace("default").await,
        "the default namespace cannot be deleted",
    );
}

async fn an_inactive_barrier_is_gone_when_its_window_ends_and_arrivals_move_it(backend: Backend) {
    let e = Env::new(backend).await;
    let r = e.rdv("acme");
    let mut s = spec("b", 3);
    s.delete_inactive_after_seconds = 60;
    r.create(s.clone()).await.unwrap();
    // GIVEN 50 s pass, and a process arrives
    e.advance_s(50);
    r.arrive("default", "b", "p0", 1, Metadata::new())
        .await
        .unwrap();
    // WHEN 50 s more pass (100 since create) THEN it lives: the arrival moved its window
    e.advance_s(50);
    r.get("default", "b").await.unwrap();
    // AND reads, waits, repeats and updates are not activity
    let b = r.get("default", "b").await.unwrap();
    r.wait("default", "b", 1, Duration::ZERO).await.unwrap();
    r.arrive("default", "b", "p0", 1, Metadata::new())
        .await
        .unwrap();
    r.update(update_of(&b)).await.unwrap();
    // WHEN 11 s more pass (61 since the arrival) THEN it is gone for every call
    e.advance_s(11);
    not_found(r.get("default", "b").await, "barrier");
    not_found(
        r.arrive("default", "b", "p1", 1, Metadata::new()).await,
        "barrier",
    );
    not_found(r.wait("default", "b", 1, Duration::ZERO).await, "barrier");
    not_found(r.participants("default", "b", 1, "", 0).await, "barrier");
    assert!(r.list("default", "", 0).await.unwrap().items.is_empty());
    // AND the name can be created again, from nothing
    let b = r.create(s).await.unwrap();
    assert_eq!((b.generation, b.arrived_processes), (1, 0));
    assert!(r
        .participants("default", "b", 1, "", 0)
        .await
        .unwrap()
        .items
        .is_empty());
}

/// The continuations sent so far, as (script, event), received and deleted.
async fn continuations(q: &dyn Queue) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut empty = 0;
    loop {
        let msgs = q.receive(QueueKind::Work, 10, 30).await.unwrap();
        if msgs.is_empty() {
            let st = q.stats(QueueKind::Work).await.unwrap();
            if st.visible + st.waiting == 0 {
                return out;
            }
            empty += 1;
            assert!(empty < 100, "the work queue does not empty: {st:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        for m in msgs {
            let w: WorkMessage = serde_json::from_str(&m.body).unwrap();
            out.push((w.script, w.event));
            q.delete(QueueKind::Work, &m.receipt).await.unwrap();
        }
    }
}

async fn each_trip_sends_one_continuation_and_a_retry_finishes_a_lost_one(backend: Backend) {
    let e = Env::new(backend).await;
    let r = e.rdv("acme");
    let mut s = spec("b", 2);
    s.continue_with = Some("next".into());
    r.create(s.clone()).await.unwrap();
    // GIVEN two generations trip, with repeated arrivals besides
    for g in 1..=2 {
        for p in ["p0", "p1", "p0", "p1"] {
            r.arrive("default", "b", p, g, Metadata::new())
                .await
                .unwrap();
        }
    }
    // THEN exactly one continuation per generation, naming it
    let sent = continuations(&*e.t.backends.queue).await;
    let want: Vec<(String, Value)> = (1..=2)
        .map(|g| {
            let ev =
                json!({ "rendezvous": { "namespace": "default", "name": "b", "generation": g } });
            ("next".to_string(), ev)
        })
        .collect();
    assert_eq!(sent, want);
    // GIVEN the send of the tripping call fails (the queue does not answer)
    let plan = Arc::new(Plan::default());
    let f = Faulty {
        kv: e.t.backends.kv.clone(),
        queue: e.t.backends.queue.clone(),
        plan: plan.clone(),
    };
    let mut rf = Rendezvous::new(&f, &f, "acme", &Unlimited);
    rf.queue_enabled = true;
    rf.clock = &*e.clock;
    rf.arrive("default", "b", "p0", 3, Metadata::new())
        .await
        .unwrap();
    // arrival: get barrier, transact (the namespace was read by the arrival before); then
    // queue.send is call 3
    plan.arm(3, Fault::Fail);
    let err = rf
        .arrive("default", "b", "p1", 3, Metadata::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("injected fault in queue.send"),
        "{err}"
    );
    plan.disarm();
    // WHEN it retries at once THEN it is told to retry once the lease lapses
    let err = r
        .arrive("default", "b", "p1", 3, Metadata::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("being sent by another call; retry within 60 s"),
        "{err}"
    );
    assert!(continuations(&*e.t.backends.queue).await.is_empty());
    // WHEN it retries after the lease THEN the continuation is sent, once
    e.advance_s(61);
    let a = r
        .arrive("default", "b", "p1", 3, Metadata::new())
        .await
        .unwrap();
    assert!(a.all_arrived);
    r.arrive("default", "b", "p1", 3, Metadata::new())
        .await
        .unwrap();
    let sent = continuations(&*e.t.backends.queue).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].1["rendezvous"]["generation"], 3);
    // AND without a queue, continue_with is refused
    let mut noq = e.rdv("acme");
    noq.queue_enabled = false;
    s.name = "c".into();
    invalid(noq.create(s).await, "continue_with needs a queue");
}

// ---- through scripts: native.rendezvous ----

const PEER: &str = r#"function on_invoke(ctx, ev)
  local r = native.rendezvous
  if ev.op == "create" then
    return r.create{ name = "b", expected_processes = 2, delete_inactive_after_seconds = 3600,
                     continue_with = "next", metadata = { phase = "map" } }
  elseif ev.op == "arrive" then
    return r.arrive{ name = "b", process_id = ev.p, expected_generation = ev.g }
  elseif ev.op == "get" then
    return r.get{ name = ev.name or "b" }
  elseif ev.op == "participants" then
    return r.participants{ name = "b", generation = ev.g, limit = 1, cursor = ev.cursor }
  elseif ev.op == "update" then
    local b = r.get{ name = "b" }
    return r.update{ name = "b", expected_processes = ev.n, expected_version = b.version,
                     delete_inactive_after_seconds = 3600 }
  elseif ev.op == "list" then
    return r.list()
  elseif ev.op == "delete" then
    return r.delete{ name = "b" }
  end
end"#;

const NEXT: &str = r#"
function on_queue(ctx, ev)
  native.db.put("runs", ctx.request_id, { rendezvous = ev.rendezvous, depth = ctx.depth })
end
function on_invoke(ctx, ev)
  local out = {}
  for _, it in native.db.query("runs").items do table.insert(out, it.value) end
  return out
end"#;

async fn scripts_arrive_and_their_continuation_runs_once_per_trip(backend: Backend) {
    let p = native_tests::TestProject::on(
        backend,
        native_tests::DEPLOYMENT,
        &[(
            "acme",
            r#"{ "queue": true }"#,
            &[("peer", PEER), ("next", NEXT)],
        )],
    )
    .await;
    let call = |ev: Value| p.invoke("acme", "peer", ev);
    // GIVEN a barrier for two made by a script, with a continuation
    let b = call(json!({ "op": "create" })).await.unwrap();
    assert_eq!(
        (b["generation"].clone(), b["version"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(b["metadata"], json!({ "phase": "map" }));
    assert_eq!(b["continue_with"], "next");
    // WHEN both peers arrive (one twice)
    let a = call(json!({ "op": "arrive", "p": "p0", "g": 1 }))
        .await
        .unwrap();
    assert_eq!(
        (
            a["all_arrived"].clone(),
            a["barrier"]["arrived_processes"].clone()
        ),
        (json!(false), json!(1))
    );
    let a = call(json!({ "op": "arrive", "p": "p1", "g": 1 }))
        .await
        .unwrap();
    assert_eq!(
        (a["all_arrived"].clone(), a["barrier"]["generation"].clone()),
        (json!(true), json!(2))
    );
    let again = call(json!({ "op": "arrive", "p": "p1", "g": 1 }))
        .await
        .unwrap();
    assert_eq!(again["all_arrived"], true);
    // THEN the continuation runs once, told which generation tripped, one level deeper
    assert!(p.drain().await.failures.is_empty());
    let runs = p.invoke("acme", "next", json!({})).await.unwrap();
    assert_eq!(
        runs,
        json!([{ "rendezvous": { "namespace": "default", "name": "b", "generation": 1 }, "depth": 1 }])
    );
    // AND participants page one at a time, in order
    let pg = call(json!({ "op": "participants", "g": 1 })).await.unwrap();
    assert_eq!(pg["items"][0]["process_id"], "p0");
    let cursor = pg["cursor"].as_str().unwrap().to_string();
    let pg = call(json!({ "op": "participants", "g": 1, "cursor": cursor }))
        .await
        .unwrap();
    assert_eq!(pg["items"][0]["process_id"], "p1");
    // AND update lowering to the count trips again, and sends the next continuation
    call(json!({ "op": "arrive", "p": "p0", "g": 2 }))
        .await
        .unwrap();
    let u = call(json!({ "op": "update", "n": 1 })).await.unwrap();
    assert_eq!(
        (u["generation"].clone(), u["version"].clone()),
        (json!(3), json!(2))
    );
    assert!(p.drain().await.failures.is_empty());
    let runs = p.invoke("acme", "next", json!({})).await.unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 2, "{runs}");
    // AND list shows it; delete removes it; get of a missing barrier is nil
    let l = call(json!({ "op": "list" })).await.unwrap();
    assert_eq!(l["items"][0]["name"], "b");
    call(json!({ "op": "delete" })).await.unwrap();
    assert_eq!(call(json!({ "op": "get" })).await.unwrap(), Value::Null);
}

async fn a_trip_s_continuation_delivered_twice_runs_once(backend: Backend) {
    // GIVEN a trip's continuation message, delivered twice (a SendMessage whose answer was
    // lost is sent again by the SDK; SQS delivers at least once)
    let p = native_tests::TestProject::on(
        backend,
        native_tests::DEPLOYMENT,
        &[(
            "acme",
            r#"{ "queue": true }"#,
            &[("peer", PEER), ("next", NEXT)],
        )],
    )
    .await;
    let call = |ev: Value| p.invoke("acme", "peer", ev);
    call(json!({ "op": "create" })).await.unwrap();
    for peer in ["p0", "p1"] {
        call(json!({ "op": "arrive", "p": peer, "g": 1 }))
            .await
            .unwrap();
    }
    let q = &p.rt.services.backends.queue;
    let sent = q.receive(QueueKind::Work, 10, 30).await.unwrap();
    assert_eq!(sent.len(), 1, "{sent:?}");
    // WHEN the queue function handles both deliveries
    for _ in 0..2 {
        p.rt.handle_work_message(&sent[0].body, 1).await.unwrap();
    }
    // THEN the continuation ran once
    let runs = p.invoke("acme", "next", json!({})).await.unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
}

async fn script_errors_name_the_function_the_field_and_the_line(backend: Backend) {
    let bad = r#"function on_invoke(ctx, ev)
  local r = native.rendezvous
  if ev.case == 1 then return r.arrive{ name = {}, process_id = "p", expected_generation = 1 } end
  if ev.case == 2 then return r.arrive{ name = "b", process_id = "p", expected_generation = 0 } end
  if ev.case == 3 then return r.arrive{ name = "b", process_id = "p", expected_generation = 5 } end
  if ev.case == 4 then return r.create{ name = "c", expected_processes = 1, delete_inactive_after_seconds = 59 } end
  if ev.case == 5 then return r.create{ name = "c", expected_processes = 1, delete_inactive_after_seconds = 60, continue_with = "nope" } end
  if ev.case == 6 then return r.arrive{ name = "zz", process_id = "p", expected_generation = 1 } end
  if ev.case == 7 then return r.create{ name = "c", expected_processes = 1, delete_inactive_after_seconds = 60, metadata = { k = 1 } } end
  if ev.case == 8 then return r.get{ name = "b", namespace = "nope" } end
  return r.create{ name = "b", expected_processes = 2, delete_inactive_after_seconds = 60 }
end"#;
    let p = native_tests::TestProject::on(
        backend,
        native_tests::DEPLOYMENT,
        &[("acme", "{}", &[("bad", bad)])],
    )
    .await;
    p.invoke("acme", "bad", json!({})).await.unwrap();
    for (case, line, want) in [
        (1, 3, "native.rendezvous.arrive: parameter \"name\" must be a string, not a table"),
        (2, 4, "native.rendezvous.arrive: expected_generation must be 1 to 9007199254740992, not 0"),
        (3, 5, "native.rendezvous.arrive: expected_generation 5 does not match the barrier's current generation 1"),
        (4, 6, "native.rendezvous.create: delete_inactive_after_seconds must be 60 to 315360000, not 59"),
        (5, 7, "native.rendezvous.create: continue_with: script \"nope\" of tenant \"acme\" not found"),
        (6, 8, "native.rendezvous.arrive: barrier not found"),
        (7, 9, "native.rendezvous.create: metadata must map strings to strings, not a string to a number"),
        (8, 10, "native.rendezvous.get: namespace not found"),
    ] {
        let e = p.invoke("acme", "bad", json!({ "case": case })).await.unwrap_err().to_string();
        assert!(e.contains(&format!("bad.luau:{line}: {want}")), "case {case}: {e}");
    }
}

async fn rendezvous_rows_are_out_of_reach_of_native_db_and_other_tenants(backend: Backend) {
    let probe = r##"function on_invoke(ctx, ev)
  local seen = {}
  for _, part in { "R#acme", "r#acme#default#0", "#acme#default#0", "acme#default#0", "default" } do
    if #native.db.query(part).items > 0 then table.insert(seen, part) end
    if native.db.get(part, "b#b") ~= nil then table.insert(seen, part .. ":b#b") end
  end
  -- a forged row where the barrier's would be changes nothing
  native.db.put("r#acme#default#0", "b#b", { barrier = { generation = 99 } })
  return seen
end"##;
    let get = r#"function on_invoke(ctx, ev) return native.rendezvous.get{ name = "b" } end"#;
    let p = native_tests::TestProject::on(
        backend,
        native_tests::DEPLOYMENT,
        &[
            (
                "acme",
                "{}",
                &[
                    ("peer", PEER),
                    ("probe", probe),
                    ("get", get),
                    ("next", NEXT),
                ],
            ),
            ("other", "{}", &[("get", get)]),
        ],
    )
    .await;
    // (a continuation needs the tenant's queue)
    let e = p
        .invoke("acme", "peer", json!({ "op": "create" }))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("peer.luau:4: native.rendezvous.create: continue_with needs a queue"),
        "{e}"
    );
    // GIVEN acme's barrier b, made over the core API (the tenant has no queue)
    let mut r = Rendezvous::new(
        &*p.rt.services.backends.kv,
        &*p.rt.services.backends.queue,
        "acme",
        &Unlimited,
    );
    r.queue_enabled = false;
    r.create(spec("b", 2)).await.unwrap();
    // THEN native.db sees none of its rows, and a forged one changes nothing
    assert_eq!(
        p.invoke("acme", "probe", json!({})).await.unwrap(),
        json!({})
    );
    assert_eq!(
        p.invoke("acme", "get", json!({})).await.unwrap()["generation"],
        1
    );
    // AND another tenant does not see it
    assert_eq!(
        p.invoke("other", "get", json!({})).await.unwrap(),
        Value::Null
    );
}

/// The scripts of docs/rendezvous.md, as the guide shows them: each ```lua block after a
/// ``File `tenants/hello/scripts/<name>.luau`:`` line.
fn guide_scripts() -> Vec<(String, String)> {
    let doc = include_str!("../../docs/rendezvous.md");
    let mut out = Vec::new();
    let mut rest = doc;
    while let Some(at) = rest.find("File `tenants/hello/scripts/") {
        rest = &rest[at + "File `tenants/hello/scripts/".len()..];
        let name = &rest[..rest.find(".luau`:\n```lua\n").unwrap()];
        let start = rest.find("```lua\n").unwrap() + "```lua\n".len();
        let end = start + rest[start..].find("```").unwrap();
        out.push((name.to_string(), rest[start..end].to_string()));
        rest = &rest[end..];
    }
    out
}

async fn the_guide_s_scripts_run_three_phases_with_one_continuation_each(backend: Backend) {
    let scripts = guide_scripts();
    let names: Vec<&str> = scripts.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["coordinator", "shard", "next_phase"]);
    let refs: Vec<(&str, &str)> = scripts
        .iter()
        .map(|(n, s)| (n.as_str(), s.as_str()))
        .collect();
    let p = native_tests::TestProject::on(
        backend,
        native_tests::DEPLOYMENT,
        &[("acme", r#"{ "queue": true }"#, &refs)],
    )
    .await;
    // WHEN the coordinator starts and the queues run until idle
    p.invoke("acme", "coordinator", json!({})).await.unwrap();
    let r = p.drain().await;
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    // THEN three phases tripped, each continued once, and the last said so
    let mut rd = Rendezvous::new(
        &*p.rt.services.backends.kv,
        &*p.rt.services.backends.queue,
        "acme",
        &Unlimited,
    );
    rd.queue_enabled = true;
    let b = rd.get("default", "phase").await.unwrap();
    assert_eq!((b.generation, b.arrived_processes), (4, 0));
    for g in 1..=3 {
        assert_eq!(
            rd.participants("default", "phase", g, "", 0)
                .await
                .unwrap()
                .items
                .len(),
            4
        );
    }
    // (12 shard messages and 3 continuations: a second continuation of a phase would have
    // sent its four shard messages again)
    assert_eq!(r.handled, 15);
    let logs = p.log.0.lock().unwrap();
    let done = logs
        .iter()
        .filter(|r| r["msg"] == "all phases done")
        .count();
    assert_eq!(done, 1, "{logs:?}");
}

/// A budget that counts store calls.
#[derive(Default)]
struct Calls(std::cell::Cell<u32>);

impl native_core::budget::Budget for Calls {
    fn spend(&self, calls: u32) -> native_core::Result<()> {
        self.0.set(self.0.get() + calls);
        Ok(())
    }
    fn left(&self) -> u32 {
        u32::MAX
    }
}

async fn store_calls_per_arrival_are_as_documented(backend: Backend) {
    let e = Env::new(backend).await;
    let c = Calls::default();
    let mut r = Rendezvous::new(&*e.t.backends.kv, &*e.t.backends.queue, "acme", &c);
    r.queue_enabled = true;
    // The namespace read once (by the create) for the whole test, however slow the machine.
    r.ns_cache = Duration::from_secs(600);
    r.create(spec("a", 2)).await.unwrap();
    let mut s = spec("k", 2);
    s.continue_with = Some("next".into());
    r.create(s).await.unwrap();
    let count = |name: &'static str, p: &'static str| {
        c.0.set(0);
        let r = &r;
        let c = &c;
        async move {
            r.arrive("default", name, p, 1, Metadata::new())
                .await
                .unwrap();
            c.0.get()
        }
    };
    // THEN the figures of BENCHMARKS.md, Rendezvous: the barrier and one transaction per
    // arrival (the namespace's incarnation is cached in the process)
    assert_eq!(count("a", "p0").await, 2, "an arrival");
    assert_eq!(
        count("a", "p0").await,
        3,
        "a repeat (and the barrier read again)"
    );
    assert_eq!(count("a", "p1").await, 2, "the tripping arrival");
    assert_eq!(
        count("a", "p1").await,
        2,
        "a repeat after the trip (and its participant row)"
    );
    count("k", "p0").await;
    assert_eq!(
        count("k", "p1").await,
        4,
        "tripping, with a continuation (sent and marked sent)"
    );
    assert_eq!(
        count("k", "p1").await,
        3,
        "a repeat after it (and the claim)"
    );
}

/// An arrival adds to the barrier's count (commutative) and only the one that completes it
/// rewrites the barrier: 64 peers racing for one barrier, their store calls interleaved at
/// random, each make one read and one transaction; at most one of them, whose add found the
/// count at its last place, reads again and trips (4 calls). On each backend (moto: its calls
/// made atomic, as DynamoDB's are).
async fn racing_arrivals_succeed_at_their_first_attempt(backend: Backend) {
    let e = Env::new(backend).await;
    e.rdv("acme").create(spec("race", 64)).await.unwrap();
    let kv = match backend {
        Backend::Embedded => e.t.backends.kv.clone(),
        Backend::Aws => {
            let [b] = native_tests::aws_env::one_kv_call_at_a_time([e.t.backends.clone()]);
            b.kv
        }
    };
    let f = Faulty {
        kv,
        queue: e.t.backends.queue.clone(),
        plan: Arc::new(Plan::jittering(7)),
    };
    // The namespace read once by this process, before the race.
    let warm = |c| {
        let mut r = Rendezvous::new(&f, &f, "acme", c);
        r.ns_cache = Duration::from_secs(600);
        r
    };
    let plan = f.plan.clone();
    warm(&Calls::default())
        .get("default", "race")
        .await
        .unwrap();
    // Counting the calls that reach the store from here (a fault past any call never fires).
    plan.arm(u32::MAX, Fault::Fail);
    let local = tokio::task::LocalSet::new();
    let calls = local
        .run_until(async {
            let mut tasks = Vec::new();
            for p in 0..64 {
                let f = f.clone();
                tasks.push(tokio::task::spawn_local(async move {
                    let c = Calls::default();
                    let mut r = Rendezvous::new(&f, &f, "acme", &c);
                    r.ns_cache = Duration::from_secs(600);
                    let a = r
                        .arrive("default", "race", &format!("p{p}"), 1, Metadata::new())
                        .await
                        .unwrap();
                    (c.0.get(), a.all_arrived)
                }));
            }
            let mut out = Vec::new();
            for t in tasks {
                out.push(t.await.unwrap());
            }
            out
        })
        .await;
    // THEN every arrival but at most one took its two calls, that one four; on average at
    // most 5 (issue 53's goal), here at most 2.04
    let over: Vec<_> = calls.iter().filter(|(c, _)| *c != 2).collect();
    assert!(
        over.len() <= 1 && over.iter().all(|(c, _)| *c == 4),
        "{calls:?}"
    );
    let total: u32 = calls.iter().map(|(c, _)| c).sum();
    assert!(total <= 64 * 2 + 2, "{total} calls for 64 arrivals");
    // AND those are the calls that reached the store (counted by the wrapper around it)
    assert_eq!(plan.calls(), total);
    // AND one of them tripped the barrier, with every peer counted once
    assert_eq!(calls.iter().filter(|(_, t)| *t).count(), 1);
    let b = e.rdv("acme").get("default", "race").await.unwrap();
    assert_eq!((b.generation, b.arrived_processes), (2, 0));
    let ps = e
        .rdv("acme")
        .participants("default", "race", 1, "", 100)
        .await
        .unwrap();
    assert_eq!(ps.items.len(), 64);
}

/// A barrier row written before the counts (in flight during an upgrade: its JSON holds the
/// arrivals so far, and it has no counts) stays usable: arrivals count on from its JSON, the
/// one that completes it trips it, and a repeat of an arrival made before is still a no-op.
async fn a_barrier_stored_before_the_counts_counts_on_and_trips(backend: Backend) {
    use native_core::ports::{NewItem, PutMode};
    let e = Env::new(backend).await;
    let r = e.rdv("up");
    r.create(spec("old", 3)).await.unwrap();
    r.arrive("default", "old", "p0", 1, Metadata::new())
        .await
        .unwrap();
    // GIVEN the row as the code before the counts wrote it after p0's arrival: the JSON with
    // arrived_processes 1, and no counts (a put replaces the item whole)
    let kv = &*e.t.backends.kv;
    let (pk, sk) = ("r#up#default#0", "b#old");
    let item = kv.get(pk, sk).await.unwrap().unwrap();
    assert!(
        !item.counts.is_empty(),
        "the arrival counted beside the JSON"
    );
    let mut row: Value = serde_json::from_str(&item.value).unwrap();
    row["barrier"]["arrived_processes"] = json!(1);
    kv.put(
        NewItem {
            pk: pk.into(),
            sk: sk.into(),
            value: row.to_string(),
            expires_at_s: item.expires_at_s,
        },
        PutMode::Overwrite,
    )
    .await
    .unwrap();
    assert!(kv.get(pk, sk).await.unwrap().unwrap().counts.is_empty());
    // WHEN the next arrivals come
    let a = r
        .arrive("default", "old", "p1", 1, Metadata::new())
        .await
        .unwrap();
    assert_eq!((a.barrier.arrived_processes, a.all_arrived), (2, false));
    assert_eq!(r.get("default", "old").await.unwrap().arrived_processes, 2);
    // AND a repeat of the arrival made before
    let again = r
        .arrive("default", "old", "p0", 1, Metadata::new())
        .await
        .unwrap();
    assert_eq!(
        (again.barrier.arrived_processes, again.all_arrived),
        (2, false)
    );
    // THEN the third trips it
    let t = r
        .arrive("default", "old", "p2", 1, Metadata::new())
        .await
        .unwrap();
    assert!(t.all_arrived);
    let b = r.get("default", "old").await.unwrap();
    assert_eq!((b.generation, b.arrived_processes), (2, 0));
    let ps = r.participants("default", "old", 1, "", 0).await.unwrap();
    assert_eq!(ps.items.len(), 3);
}

/// The waiters of one barrier in one process share their polls: 64 of them waiting 1.5 s for a
/// trip that does not come read the store about once per 100 ms between them, not each every
/// 100 ms doubling (before: 64 × 5 polls of 2 reads). Counted by the wrapper around the store.
#[tokio::test]
async fn waiters_of_one_barrier_in_one_process_share_their_polls() {
    let e = Env::new(Backend::Embedded).await;
    e.rdv("polls").create(spec("w", 2)).await.unwrap();
    // One store shared by the waiters, as a process's are.
    let f = Arc::new(Faulty {
        kv: e.t.backends.kv.clone(),
        queue: e.t.backends.queue.clone(),
        plan: Arc::new(Plan::default()),
    });
    // The namespace read before (cached), then counting from here.
    Rendezvous::new(&*f, &*f, "polls", &Unlimited)
        .get("default", "w")
        .await
        .unwrap();
    f.plan.arm(u32::MAX, Fault::Fail);
    let start = Instant::now();
    let mut all = tokio::task::JoinSet::new();
    for _ in 0..64 {
        let f = f.clone();
        all.spawn(async move {
            let r = Rendezvous::new(&*f, &*f, "polls", &Unlimited);
            r.wait("default", "w", 1, Duration::from_millis(1500))
                .await
                .unwrap()
                .1
        });
    }
    let outs = all.join_all().await;
    assert!(outs.iter().all(|o| *o == WaitOutcome::TimedOut));
    // THEN at most one read per 100 ms of the run (and one more for its start)
    let ticks = start.elapsed().as_millis() as u32 / 100 + 2;
    let calls = f.plan.calls();
    assert!(
        calls <= ticks,
        "{calls} reads for 64 waiters in {ticks} ticks"
    );
}

/// A wake-up handing over a barrier of another incarnation (a barrier of the same name deleted
/// and made again, or another store in the same process) is not taken for this one's trip.
#[tokio::test]
async fn a_waiter_takes_a_handed_barrier_only_of_its_own_incarnation() {
    let e = Arc::new(Env::new(Backend::Embedded).await);
    let b = e.rdv("solo").create(spec("x", 2)).await.unwrap();
    // GIVEN a waiter on generation 1
    let w = {
        let e = e.clone();
        tokio::spawn(async move {
            e.rdv("solo")
                .wait("default", "x", 1, Duration::from_secs(1))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    // WHEN a wake-up hands over a barrier of that name at generation 99 of another incarnation
    let mut other = b.clone();
    other.generation = 99;
    native_core::rendezvous::notify::wake("solo", "default", "x", Some(("elsewhere", &other)));
    // THEN the waiter reads its own barrier and times out
    let (got, out) = w.await.unwrap().unwrap();
    assert_eq!((out, got.generation), (WaitOutcome::TimedOut, 1));
}

// ---- the HTTP router on each backend ----

async fn the_router_serves_every_method_of_the_contract(backend: Backend) {
    use axum::body::Body;
    use axum::http::{header, Request};
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    let p = native_tests::TestProject::on(
        backend,
        native_tests::DEPLOYMENT,
        &[("acme", r#"{ "queue": true }"#, &[("next", NEXT)])],
    )
    .await;
    let key = native_core::api_keys::create(&*p.rt.services.backends.kv, "acme", "t")
        .await
        .unwrap()
        .key;
    let s = &p.rt.services;
    let rt = Arc::new(
        native_core::runtime::Runtime::new(
            s.deployment.clone(),
            s.backends.clone(),
            p.rt.tenants.clone(),
        )
        .with_log(s.log.clone()),
    );
    let call = |method: &str, body: Value| {
        let req = Request::post(format!("/com.evrblk.grackle.v1beta.GrackleApi/{method}"))
            .header(header::AUTHORIZATION, format!("Bearer {key}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
        let router = native_core::inbound::router(rt.clone());
        async move {
            let r = router.oneshot(req).await.unwrap();
            let status = r.status().as_u16();
            let bytes = r.into_body().collect().await.unwrap().to_bytes();
            (status, serde_json::from_slice::<Value>(&bytes).unwrap())
        }
    };
    let ok = |(s, v): (u16, Value)| {
        assert_eq!(s, 200, "{v}");
        v
    };
    let b = json!({ "namespace_name": "ns", "barrier_name": "b" });
    let with = |extra: Value| {
        let mut v = b.clone();
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    // GIVEN a namespace WHEN every method is called in turn THEN each answers as the contract says
    ok(call(
        "CreateNamespace",
        json!({ "name": "ns", "description": "d" }),
    )
    .await);
    // (GetNamespace, UpdateNamespace and DeleteNamespace take namespace_name, or name)
    assert_eq!(
        ok(call("GetNamespace", json!({ "namespace_name": "ns" })).await)["namespace"]
            ["description"],
        "d"
    );
    assert_eq!(
        ok(call("GetNamespace", json!({ "name": "ns" })).await)["namespace"]["description"],
        "d"
    );
    let l = ok(call("ListNamespaces", json!({ "limit": 1 })).await);
    assert_eq!(l["namespaces"][0]["name"], "default");
    assert_eq!(l["previous_pagination_token"], "");
    let l = ok(call(
        "ListNamespaces",
        json!({ "limit": 1, "pagination_token": l["next_pagination_token"] }),
    )
    .await);
    assert_eq!(l["namespaces"][0]["name"], "ns");
    assert_eq!(l["next_pagination_token"], "");
    let back = ok(call(
        "ListNamespaces",
        json!({ "limit": 1, "pagination_token": l["previous_pagination_token"] }),
    )
    .await);
    assert_eq!(back["namespaces"][0]["name"], "default");
    ok(call(
        "UpdateNamespace",
        json!({ "namespaceName": "ns", "description": "e" }),
    )
    .await);
    let c = ok(call(
        "CreateBarrier",
        with(json!({ "expected_processes": 2,
        "delete_inactive_after_seconds": 60, "continue_with": "next" })),
    )
    .await);
    assert_eq!(c["barrier"]["continue_with"], "next");
    assert_eq!(
        ok(call("GetBarrier", b.clone()).await)["barrier"]["generation"],
        1
    );
    let l = ok(call("ListBarriers", json!({ "namespace_name": "ns" })).await);
    assert_eq!(
        (
            l["barriers"].as_array().unwrap().len(),
            l["next_pagination_token"].clone()
        ),
        (1, json!(""))
    );
    let u = ok(call(
        "UpdateBarrier",
        with(json!({ "expected_processes": 3, "expected_version": 1,
        "delete_inactive_after_seconds": 60 })),
    )
    .await);
    assert_eq!(u["barrier"]["version"], 2);
    for p in ["a", "b"] {
        ok(call(
            "ArriveAtBarrier",
            with(json!({ "process_id": p, "expected_generation": 1 })),
        )
        .await);
    }
    let w = ok(call(
        "WaitAtBarrier",
        with(json!({ "expected_generation": 1, "timeout_seconds": 0 })),
    )
    .await);
    assert_eq!(w["outcome"], "BARRIER_WAIT_OUTCOME_TIMED_OUT");
    let a = ok(call(
        "ArriveAtBarrier",
        with(json!({ "process_id": "c", "expected_generation": "1" })),
    )
    .await);
    assert_eq!(a["all_arrived"], true);
    let w = ok(call("WaitAtBarrier", with(json!({ "expected_generation": 1 }))).await);
    assert_eq!(w["outcome"], "BARRIER_WAIT_OUTCOME_TRIPPED");
    let l = ok(call(
        "ListBarrierParticipants",
        with(json!({ "generation": 1, "limit": 2 })),
    )
    .await);
    assert_eq!(l["participants"].as_array().unwrap().len(), 2);
    assert_eq!(l["participants"][1]["process_id"], "b");
    assert_ne!(l["next_pagination_token"], "");
    assert_eq!(ok(call("DeleteBarrier", b.clone()).await), json!({}));
    assert_eq!(call("GetBarrier", b.clone()).await.0, 404);
    assert_eq!(
        ok(call("DeleteNamespace", json!({ "namespace_name": "ns" })).await),
        json!({})
    );
    assert_eq!(call("GetNamespace", json!({ "name": "ns" })).await.0, 404);
    // AND the trip sent its continuation, which runs once
    assert!(p.drain().await.failures.is_empty());
    let runs = p.invoke("acme", "next", json!({})).await.unwrap();
    assert_eq!(
        runs[0]["rendezvous"],
        json!({ "namespace": "ns", "name": "b", "generation": 1 })
    );
    assert_eq!(runs.as_array().unwrap().len(), 1);
}

/// The wire forms on the router itself: gRPC's framing and trailers, gRPC-Web's trailer frame,
/// Connect binary, 415 and unimplemented, and the caller's deadline ending a wait on the server
/// side (the clients' tests cannot tell a server deadline from their own).
#[tokio::test]
async fn the_router_answers_each_form_and_ends_calls_at_the_caller_s_deadline() {
    use axum::body::Body;
    use axum::http::{header, Request};
    use http_body_util::BodyExt;
    use native_core::inbound::rendezvous::pb;
    use prost::Message;
    use tower::ServiceExt;

    let p = native_tests::TestProject::on(
        Backend::Embedded,
        native_tests::DEPLOYMENT,
        &[("acme", "{}", &[])],
    )
    .await;
    let key = native_core::api_keys::create(&*p.rt.services.backends.kv, "acme", "t")
        .await
        .unwrap()
        .key;
    let s = &p.rt.services;
    let rt = Arc::new(
        native_core::runtime::Runtime::new(
            s.deployment.clone(),
            s.backends.clone(),
            p.rt.tenants.clone(),
        )
        .with_log(s.log.clone()),
    );
    let send = |method: &str, headers: &[(&str, &str)], body: Vec<u8>| {
        let mut req = Request::post(format!("/com.evrblk.grackle.v1beta.GrackleApi/{method}"))
            .header(header::AUTHORIZATION, format!("Bearer {key}"));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let router = native_core::inbound::router(rt.clone());
        let req = req.body(Body::from(body)).unwrap();
        async move {
            let r = router.oneshot(req).await.unwrap();
            let (parts, body) = r.into_parts();
            let collected = body.collect().await.unwrap();
            let trailers = collected.trailers().cloned();
            (parts, collected.to_bytes().to_vec(), trailers)
        }
    };
    let framed = |m: &dyn Fn() -> Vec<u8>| {
        let msg = m();
        let mut out = vec![0];
        out.extend((msg.len() as u32).to_be_bytes());
        out.extend(msg);
        out
    };
    // gRPC: one framed message, the answer framed with grpc-status 0 in the trailers
    let create = pb::CreateBarrierRequest {
        namespace_name: "default".into(),
        barrier_name: "b".into(),
        expected_processes: 2,
        delete_inactive_after_seconds: 60,
        ..Default::default()
    };
    let (parts, body, trailers) = send(
        "CreateBarrier",
        &[("content-type", "application/grpc")],
        framed(&|| create.encode_to_vec()),
    )
    .await;
    assert_eq!(parts.headers["content-type"], "application/grpc");
    assert_eq!(trailers.unwrap()["grpc-status"], "0");
    let b = pb::CreateBarrierResponse::decode(&body[5..])
        .unwrap()
        .barrier
        .unwrap();
    assert_eq!((b.name.as_str(), b.generation), ("b", 1));
    // AND an error is trailers-only, with the Connect form's code as its gRPC number
    let (parts, _, _) = send(
        "CreateBarrier",
        &[("content-type", "application/grpc")],
        framed(&|| create.encode_to_vec()),
    )
    .await;
    assert_eq!(
        (
            parts.status.as_u16(),
            &parts.headers["grpc-status"],
            &parts.headers["grpc-message"]
        ),
        (
            200,
            &"6".parse().unwrap(),
            &"barrier already exists".parse().unwrap()
        )
    );
    // gRPC-Web: the message, then the trailers as a frame flagged 0x80
    let get = pb::GetBarrierRequest {
        namespace_name: "default".into(),
        barrier_name: "b".into(),
    };
    let (_, body, _) = send(
        "GetBarrier",
        &[("content-type", "application/grpc-web+proto")],
        framed(&|| get.encode_to_vec()),
    )
    .await;
    let len = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
    assert_eq!(
        pb::GetBarrierResponse::decode(&body[5..5 + len])
            .unwrap()
            .barrier
            .unwrap()
            .name,
        "b"
    );
    let trailer = &body[5 + len..];
    assert_eq!(trailer[0], 0x80);
    assert_eq!(String::from_utf8_lossy(&trailer[5..]), "grpc-status:0\r\n");
    // Connect binary: the message itself
    let (parts, body, _) = send(
        "GetBarrier",
        &[("content-type", "application/proto")],
        get.encode_to_vec(),
    )
    .await;
    assert_eq!(
        (parts.status.as_u16(), &parts.headers["content-type"]),
        (200, &"application/proto".parse().unwrap())
    );
    assert_eq!(
        pb::GetBarrierResponse::decode(&body[..])
            .unwrap()
            .barrier
            .unwrap()
            .generation,
        1
    );
    // A form not served is 415 naming those that are; an unknown method is unimplemented (404)
    let (parts, body, _) = send("GetBarrier", &[("content-type", "text/plain")], vec![]).await;
    assert_eq!(parts.status.as_u16(), 415);
    assert!(parts.headers["accept-post"]
        .to_str()
        .unwrap()
        .contains("application/grpc"));
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["code"],
        "unimplemented"
    );
    // AND without a key, a form not served is 401 first: who asks before what they sent
    let no_key = Request::post("/com.evrblk.grackle.v1beta.GrackleApi/GetBarrier")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from("a=1"))
        .unwrap();
    let r = native_core::inbound::router(rt.clone())
        .oneshot(no_key)
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let (parts, body, _) = send(
        "Nope",
        &[("content-type", "application/json")],
        b"{}".to_vec(),
    )
    .await;
    assert_eq!(parts.status.as_u16(), 404);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["code"],
        "unimplemented"
    );
    // The caller's deadline ends a 30 s wait: Connect-Timeout-Ms, and grpc-timeout
    let wait = json!({ "namespace_name": "default", "barrier_name": "b", "expected_generation": 1, "timeout_seconds": 30 });
    let t0 = Instant::now();
    let (parts, body, _) = send(
        "WaitAtBarrier",
        &[
            ("content-type", "application/json"),
            ("connect-timeout-ms", "300"),
        ],
        wait.to_string().into_bytes(),
    )
    .await;
    assert_eq!(parts.status.as_u16(), 504);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["code"],
        "deadline_exceeded"
    );
    let w = pb::WaitAtBarrierRequest {
        namespace_name: "default".into(),
        barrier_name: "b".into(),
        expected_generation: 1,
        timeout_seconds: 30,
    };
    let (parts, _, _) = send(
        "WaitAtBarrier",
        &[
            ("content-type", "application/grpc"),
            ("grpc-timeout", "300m"),
        ],
        framed(&|| w.encode_to_vec()),
    )
    .await;
    assert_eq!(parts.headers["grpc-status"], "4");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    // AND Connect clients get int64 as strings; plain callers numbers
    let (_, body, _) = send(
        "GetBarrier",
        &[
            ("content-type", "application/json"),
            ("connect-protocol-version", "1"),
        ],
        b"{\"namespace_name\":\"default\",\"barrier_name\":\"b\"}".to_vec(),
    )
    .await;
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["barrier"]["generation"],
        "1"
    );
    let (_, body, _) = send(
        "GetBarrier",
        &[],
        b"{\"namespace_name\":\"default\",\"barrier_name\":\"b\"}".to_vec(),
    )
    .await;
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["barrier"]["generation"],
        1
    );
}

// ---- a seeded simulation of interleavings with faults ----

/// 30 seeds × every store call of the round: four peers arrive at a barrier with a
/// continuation, concurrently in a seeded order, retrying on any error as clients do; one store
/// call fails (before reaching the store, or after, losing its reply). Every run trips the
/// generation exactly once with every peer counted once, and sends its continuation at least
/// once, and exactly once when the fault was not a lost reply of the send itself.
#[test]
fn seeded_interleavings_with_a_fault_at_every_call_trip_once_and_continue() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut hit = 0;
    for seed in 0..30u64 {
        // 4 × 2 calls plus the continuation's: a fault at every one of them.
        for k in 1..=CALLS {
            let fault = if (seed + u64::from(k)) % 2 == 0 {
                Fault::Fail
            } else {
                Fault::LoseReply
            };
            let local = tokio::task::LocalSet::new();
            hit += usize::from(local.block_on(&rt, simulate(seed, k, fault)));
        }
    }
    // Most runs make at least CALLS calls: the faults did land, not only in a few runs.
    let runs = 30 * CALLS as usize;
    eprintln!("faults hit in {hit} of {runs} runs");
    assert!(hit > runs * 7 / 8, "faults hit in {hit} of {runs} runs");
}

/// Store calls of a run without faults: each peer reads the barrier and makes one transaction
/// (the namespace is cached in the process); the tripping one then sends the continuation and
/// marks it sent.
const CALLS: u32 = 10;

/// One run; returns whether the fault hit a call (the run had that many).
async fn simulate(seed: u64, k: u32, fault: Fault) -> bool {
    let e = Env::new(Backend::Embedded).await;
    e.rdv("acme")
        .create({
            let mut s = spec("b", 4);
            s.continue_with = Some("next".into());
            s
        })
        .await
        .unwrap();
    let plan = Arc::new(Plan::jittering(seed));
    let f = Faulty {
        kv: e.t.backends.kv.clone(),
        queue: e.t.backends.queue.clone(),
        plan: plan.clone(),
    };
    plan.arm(k, fault);
    let e = Arc::new(e);
    // How many peers are inside a call now (they share this thread).
    let calling = std::rc::Rc::new(std::cell::Cell::new(0usize));
    let mut tasks = Vec::new();
    for p in 0..4 {
        let (f, e, calling) = (f.clone(), e.clone(), calling.clone());
        tasks.push(tokio::task::spawn_local(async move {
            let mut r = Rendezvous::new(&f, &f, "acme", &Unlimited);
            r.queue_enabled = true;
            r.clock = &*e.clock;
            // The namespace as the create read it, however slow the machine: the calls of a
            // run are the same in every run.
            r.ns_cache = Duration::from_secs(600);
            for _ in 0..100 {
                calling.set(calling.get() + 1);
                let arrived = r
                    .arrive("default", "b", &format!("p{p}"), 1, Metadata::new())
                    .await;
                calling.set(calling.get() - 1);
                match arrived {
                    Ok(a) => return a,
                    Err(err) if err.to_string().contains("being sent by another call") => {
                        // The holder is a live call between its send and its mark while
                        // another peer is inside a call (the embedded backend's writes take
                        // real time on their writing thread, more on a busy machine): give it
                        // a moment. With no other call running, the holder died: wait its
                        // lease out, as a client would (a jump of the shared clock while a
                        // holder lives would end its lease too, and two calls would send).
                        if calling.get() > 0 {
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        } else {
                            e.advance_s(61);
                        }
                    }
                    Err(err) if err.to_string().contains("injected fault") => {}
                    Err(err) => panic!("seed {seed} k {k}: {err}"),
                }
                tokio::task::yield_now().await;
            }
            panic!("seed {seed} k {k}: an arrival never got through");
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    // A fault between the send and the mark that says it was sent repeats the send.
    let between = match plan.hit() {
        Some("queue.send") => fault == Fault::LoseReply,
        Some("kv.put") => fault == Fault::Fail,
        _ => false,
    };
    // THEN the barrier tripped once, with each peer counted once
    let r = e.rdv("acme");
    let b = r.get("default", "b").await.unwrap();
    assert_eq!(
        (b.generation, b.arrived_processes),
        (2, 0),
        "seed {seed} k {k} {fault:?}"
    );
    let ps = r
        .participants("default", "b", 1, "", 0)
        .await
        .unwrap()
        .items;
    assert_eq!(ps.len(), 4, "seed {seed} k {k}");
    // AND the continuation went out once (a lost reply of the send itself may repeat it)
    let sent = continuations(&*e.t.backends.queue).await;
    if between {
        assert!((1..=2).contains(&sent.len()), "seed {seed} k {k}: {sent:?}");
    } else {
        assert_eq!(
            sent.len(),
            1,
            "seed {seed} k {k} {fault:?} at {:?}: {sent:?}",
            plan.hit()
        );
    }
    plan.hit().is_some()
}
