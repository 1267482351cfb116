//! The project's recent runs ([`crate::observe::recent::RunStore`]) in the table `runs`: one
//! row per finished run, written by the verbs that run scripts (each run in a write of its
//! own) and by `native serve` when it stops (its runs in one write); the next server copies
//! them into its console's memory, in `seq` order ([`RunStore::since`]).
//!
//! `seq` is SQLite's `AUTOINCREMENT` id: larger than every one before, whichever process
//! wrote it, never reused once its row is gone. A write inserts its runs and deletes their
//! tenants' runs older than the newest `keep`, in one transaction: two processes that write
//! at once keep `keep` all the same (SQLite takes one write at a time). The write is
//! best-effort ([`durability::best_effort`]): it is committed at once without waiting for a
//! sync, so a power cut may lose the last runs' summaries, never a run's effects; a verb's
//! invocation pays the insert, not a sync.
//!
//! The steps of chains ([`Step`]) are kept the same way in the table `steps`, the newest
//! `keep` of each tenant. A chain's timeline reads its steps through an index on (tenant,
//! chain, time, rank, seq), a page at a time ([`Place::bounds`]).

use rusqlite::{params, OptionalExtension};

use super::{db_err, execute, query_row, Embedded};
use crate::observe::recent::{from_stored, rest_of, Place, Run, RunStore, Step};
use crate::ports::durability;
use crate::Result;

fn run_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<Run> {
    Ok(from_stored(
        r.get::<_, i64>(0)? as u64,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        &r.get::<_, String>(5)?,
    ))
}

/// Of each of `tenants`' rows in `table` (`runs`, `steps`), only the newest `keep` stay: the
/// oldest of them bounds what goes (a walk of at most `keep` entries of the tenant's index).
fn keep_newest(c: &rusqlite::Connection, table: &str, tenants: &[&str], keep: i64) -> Result<()> {
    for tenant in tenants {
        let oldest_kept: Option<i64> = query_row(
            c,
            &format!(
                "SELECT seq FROM {table} WHERE tenant = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2"
            ),
            params![tenant, keep - 1],
            |r| r.get(0),
        )
        .optional()
        .map_err(db_err)?;
        if let Some(seq) = oldest_kept {
            execute(
                c,
                &format!("DELETE FROM {table} WHERE tenant = ?1 AND seq < ?2"),
                params![tenant, seq],
            )
            .map_err(db_err)?;
        }
    }
    Ok(())
}

const COLUMNS: &str = "seq, tenant, script, chain, started_ms, rest";

#[async_trait::async_trait]
impl RunStore for Embedded {
    async fn append(&self, runs: Vec<Run>, keep: usize) -> Result<()> {
        let keep = keep.max(1) as i64;
        durability::best_effort(self.write(move |c| {
            let mut tenants: Vec<&str> = Vec::new();
            for run in &runs {
                execute(
                    c,
                    "INSERT INTO runs (tenant, script, chain, started_ms, failed, rest) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![
                        run.tenant,
                        run.script,
                        run.chain,
                        run.started_ms,
                        run.error.is_some(),
                        rest_of(run)
                    ],
                )
                .map_err(db_err)?;
                if !tenants.contains(&run.tenant.as_str()) {
                    tenants.push(&run.tenant);
                }
            }
            keep_newest(c, "runs", &tenants, keep)
        }))
        .await
    }

    fn since(&self, after: u64, limit: usize) -> Result<Vec<Run>> {
        let after = after.min(i64::MAX as u64) as i64;
        self.read(|c| {
            let mut s = c
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM runs WHERE seq > ?1 ORDER BY seq LIMIT ?2"
                ))
                .map_err(db_err)?;
            let runs = s
                .query_map(params![after, limit as i64], run_of)
                .map_err(db_err)?
                .collect::<rusqlite::Result<Vec<Run>>>()
                .map_err(db_err);
            runs
        })
    }

    async fn append_steps(&self, steps: Vec<Step>, keep: usize) -> Result<()> {
        let keep = keep.max(1) as i64;
        durability::best_effort(self.write(move |c| {
            let mut tenants: Vec<&str> = Vec::new();
            for step in &steps {
                execute(
                    c,
                    "INSERT INTO steps (tenant, chain, at_ms, rank, record) \
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![
                        step.tenant,
                        step.chain,
                        step.at_ms,
                        step.place().rank,
                        step.record
                    ],
                )
                .map_err(db_err)?;
                if !tenants.contains(&step.tenant.as_str()) {
                    tenants.push(&step.tenant);
                }
            }
            keep_newest(c, "steps", &tenants, keep)
        }))
        .await
    }

    fn chain_steps(
        &self,
        tenant: &str,
        chain: &str,
        after: Option<&Place>,
        limit: usize,
    ) -> Result<Vec<Step>> {
        let (at, rank, seq) = Place::bounds(after);
        self.read(|c| {
            let mut s = c
                .prepare_cached(
                    "SELECT seq, tenant, chain, at_ms, rank, record FROM steps \
                     WHERE tenant = ?1 AND chain = ?2 \
                     AND (at_ms > ?3 OR (at_ms = ?3 AND (rank > ?4 OR (rank = ?4 AND seq > ?5)))) \
                     ORDER BY at_ms, rank, seq LIMIT ?6",
                )
                .map_err(db_err)?;
            let steps = s
                .query_map(params![tenant, chain, at, rank, seq, limit as i64], |r| {
                    Ok(Step {
                        seq: r.get::<_, i64>(0)? as u64,
                        tenant: r.get(1)?,
                        chain: r.get(2)?,
                        at_ms: r.get(3)?,
                        inside: r.get::<_, i64>(4)? == i64::from(Place::INSIDE),
                        record: r.get(5)?,
                    })
                })
                .map_err(db_err)?
                .collect::<rusqlite::Result<Vec<Step>>>()
                .map_err(db_err);
            steps
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::recent::{Recent, RunFilter};
    use std::sync::Arc;

    /// The scripts of `tenant`'s runs in `store`, newest first.
    fn in_store(store: &Embedded, tenant: &str) -> Vec<String> {
        let mut all: Vec<String> = store
            .since(0, 100_000)
            .unwrap()
            .into_iter()
            .filter(|r| r.tenant == tenant)
            .map(|r| r.script)
            .collect();
        all.reverse();
        all
    }

    /// What a server's console on `store` shows when it starts: the store's runs, copied.
    async fn console_of(store: &Embedded) -> Recent {
        let r = Recent::served(Arc::new(store.clone()));
        r.flush().await.unwrap();
        r
    }

    fn run(tenant: &str, script: &str, error: Option<&str>) -> Run {
        Run {
            seq: 0,
            tenant: tenant.into(),
            script: script.into(),
            trigger: "queue",
            chain: "c1".into(),
            depth: 1,
            attempt: 2,
            started_ms: 3_600_000,
            duration_ms: 1.5,
            data_ops: 3,
            error: error.map(str::to_string),
            logs: vec![r#"{"msg":"hi"}"#.into()],
            logs_dropped: 4,
        }
    }

    #[tokio::test]
    async fn two_opens_of_a_project_share_its_runs_newest_first_and_bounded() {
        // GIVEN a project opened twice, as `native serve` and `native invoke` open it
        let dir = tempfile::tempdir().unwrap();
        let serve = Embedded::open(dir.path(), vec![]).unwrap();
        let verb = Embedded::open(dir.path(), vec![]).unwrap();
        let other = Recent::stored(Arc::new(serve.clone()));
        let cli = Recent::stored(Arc::new(verb.clone()));
        // WHEN each keeps runs, the verb's last
        other.keep(run("acme", "a", None)).await.unwrap();
        cli.keep(run("acme", "b", Some("boom"))).await.unwrap();
        cli.keep(run("globex", "c", None)).await.unwrap();
        // THEN the server's console sees both of acme's, newest first, every field kept
        let served = console_of(&serve).await;
        let (page, next) = served
            .runs("acme", &RunFilter::default(), None, 10)
            .unwrap();
        assert_eq!(next, None);
        let scripts: Vec<&str> = page.iter().map(|r| r.script.as_str()).collect();
        assert_eq!(scripts, ["b", "a"]);
        let mut want = run("acme", "b", Some("boom"));
        want.seq = page[0].seq;
        assert_eq!(*page[0], want);
        assert!(page[0].seq > page[1].seq);
        assert_eq!(served.last_hour("acme", 3_600_000).unwrap(), (2, 1));
        assert_eq!(served.last_hour("acme", 7_200_001).unwrap(), (0, 0));
        let failed = RunFilter {
            failed: true,
            ..Default::default()
        };
        assert_eq!(served.runs("acme", &failed, None, 10).unwrap().0.len(), 1);
        assert_eq!(
            served.run("acme", page[1].seq).unwrap().unwrap().script,
            "a"
        );
        assert!(served.run("globex", page[1].seq).unwrap().is_none());
        // AND past the bound, each tenant keeps only its newest runs, whoever wrote them
        for i in 0..(crate::observe::recent::PER_TENANT + 5) {
            let r = Recent::stored(Arc::new(if i % 2 == 0 {
                serve.clone()
            } else {
                verb.clone()
            }));
            r.keep(run("acme", &format!("s{i}"), None)).await.unwrap();
        }
        let kept = in_store(&serve, "acme");
        assert_eq!(kept.len(), crate::observe::recent::PER_TENANT);
        assert_eq!(
            kept[0],
            format!("s{}", crate::observe::recent::PER_TENANT + 4)
        );
        assert_eq!(in_store(&serve, "globex").len(), 1);
        let served = console_of(&serve).await;
        let (all, _) = served
            .runs("acme", &RunFilter::default(), None, 10_000)
            .unwrap();
        assert_eq!(all.len(), crate::observe::recent::PER_TENANT);
        assert_eq!(
            all[0].script,
            format!("s{}", crate::observe::recent::PER_TENANT + 4)
        );
        assert_eq!(
            served
                .runs("globex", &RunFilter::default(), None, 10)
                .unwrap()
                .0
                .len(),
            1
        );
        // AND pages go on by `next`
        let (first, next) = served
            .runs("acme", &RunFilter::default(), None, 300)
            .unwrap();
        let (second, end) = served
            .runs("acme", &RunFilter::default(), next, 300)
            .unwrap();
        assert_eq!(
            first.len() + second.len(),
            crate::observe::recent::PER_TENANT
        );
        assert_eq!(end, None);
        assert!(first.last().unwrap().seq > second[0].seq);
    }

    #[tokio::test]
    async fn a_server_keeps_its_runs_in_memory_copies_the_verbs_and_saves_its_own_at_the_stop() {
        // GIVEN a project with a run kept by an earlier process, opened by a server and a verb
        let dir = tempfile::tempdir().unwrap();
        let serve = Embedded::open(dir.path(), vec![]).unwrap();
        let verb = Embedded::open(dir.path(), vec![]).unwrap();
        let cli = Arc::new(Recent::stored(Arc::new(verb.clone())));
        cli.keep(run("acme", "earlier", None)).await.unwrap();
        let served = Arc::new(Recent::served(Arc::new(serve.clone())));
        let all = RunFilter::default();
        let scripts = |r: &Recent| -> Vec<String> {
            let (page, _) = r.runs("acme", &all, None, 10_000).unwrap();
            page.iter().map(|r| r.script.clone()).collect()
        };
        // WHEN the server flushes before it serves THEN its console shows the earlier run
        served.flush().await.unwrap();
        assert_eq!(scripts(&served), ["earlier"]);
        // WHEN the server keeps runs THEN its console shows them at once, and the store has
        // none of them (a run pays a push, not a write)
        for s in ["a", "b", "c"] {
            served.keep(run("acme", s, None)).await.unwrap();
        }
        assert_eq!(scripts(&served), ["c", "b", "a", "earlier"]);
        assert_eq!(in_store(&verb, "acme"), ["earlier"]);
        // AND a verb's run reaches the server's console at its next flush, once
        cli.keep(run("acme", "verb", Some("boom"))).await.unwrap();
        assert_eq!(scripts(&served).len(), 4);
        served.flush().await.unwrap();
        served.flush().await.unwrap();
        assert_eq!(scripts(&served), ["verb", "c", "b", "a", "earlier"]);
        assert_eq!(served.last_hour("acme", 3_600_000).unwrap(), (5, 1));
        let newest = served.runs("acme", &all, None, 1).unwrap().0;
        assert_eq!(newest[0].error.as_deref(), Some("boom"));
        assert_eq!(
            served.run("acme", newest[0].seq).unwrap().unwrap().script,
            "verb"
        );
        // WHEN the server stops THEN its own runs are in the store for the next one, after the
        // verb's that came before its stop, and saving again writes nothing twice
        served.save().await.unwrap();
        served.save().await.unwrap();
        assert_eq!(in_store(&verb, "acme"), ["c", "b", "a", "verb", "earlier"]);
        let next = Recent::served(Arc::new(serve.clone()));
        next.flush().await.unwrap();
        assert_eq!(scripts(&next), in_store(&verb, "acme"));
        // AND past the bound, a server saves only each tenant's newest, and the store keeps
        // its bound whoever wrote
        let busy = Recent::served(Arc::new(serve.clone()));
        let n = crate::observe::recent::PER_TENANT;
        for i in 0..n + 20 {
            busy.keep(run("acme", &format!("s{i}"), None))
                .await
                .unwrap();
        }
        busy.keep(run("globex", "g", None)).await.unwrap();
        busy.save().await.unwrap();
        let kept = in_store(&verb, "acme");
        assert_eq!(kept.len(), n);
        assert_eq!(kept[0], format!("s{}", n + 19));
        assert_eq!(kept[n - 1], "s20");
        assert_eq!(in_store(&verb, "globex").len(), 1);
    }

    #[tokio::test]
    async fn a_servers_runs_waiting_for_its_stop_stay_within_the_memory_bound() {
        use crate::observe::recent::MAX_BYTES;
        // GIVEN a server whose tenants' runs log a megabyte each, more than the bound in all
        let dir = tempfile::tempdir().unwrap();
        let store = Embedded::open(dir.path(), vec![]).unwrap();
        let served = Recent::served(Arc::new(store.clone()));
        let n = MAX_BYTES / (1 << 20) + 8;
        // WHEN it keeps them
        for i in 0..n {
            let mut r = run(&format!("t{i}"), "big", None);
            r.logs = vec!["x".repeat(1 << 20)];
            served.keep(r).await.unwrap();
        }
        // THEN what waits for its stop holds at most the bound, the oldest dropped and counted,
        // and the stop writes the newest
        assert!(
            served.unsaved_bytes() <= MAX_BYTES,
            "{}",
            served.unsaved_bytes()
        );
        assert!(served.dropped() >= 8, "{}", served.dropped());
        served.save().await.unwrap();
        let last = console_of(&store).await;
        let newest = format!("t{}", n - 1);
        assert_eq!(
            last.runs(&newest, &RunFilter::default(), None, 10)
                .unwrap()
                .0
                .len(),
            1
        );
        assert!(last
            .runs("t0", &RunFilter::default(), None, 10)
            .unwrap()
            .0
            .is_empty());
    }

    #[tokio::test]
    async fn a_chain_of_100_000_steps_reads_a_page_at_a_time_in_order_and_only_its_tenants() {
        use crate::observe::recent::{Entry, Place, Step, STEPS_PER_TENANT};
        // GIVEN a project whose chain c has a run, 100 000 steps and a run after them, one
        // step of another chain, and a chain of the same id in another tenant
        let dir = tempfile::tempdir().unwrap();
        let store = Embedded::open(dir.path(), vec![]).unwrap();
        let recent = Recent::served(Arc::new(store.clone()));
        let c = "c".repeat(32);
        let mut first = run("acme", "order", None);
        (first.chain, first.started_ms) = (c.clone(), 1_000);
        recent.keep(first).await.unwrap();
        for (tenant, chain) in [("acme", "d".repeat(32)), ("globex", c.clone())] {
            recent.keep_step(Step {
                seq: 0,
                tenant: tenant.into(),
                chain,
                at_ms: 2_500,
                inside: false,
                record: r#"{"msg":"other"}"#.into(),
            });
        }
        recent.flush().await.unwrap();
        let n = 100_000;
        let steps: Vec<Step> = (0..n)
            .map(|i| Step {
                seq: 0,
                tenant: "acme".into(),
                chain: c.clone(),
                // Ten steps a millisecond: the order within one is the seq's.
                at_ms: 2_000 + i / 10,
                inside: false,
                record: format!(r#"{{"msg":"ack","i":{i}}}"#),
            })
            .collect();
        store
            .append_steps(steps, STEPS_PER_TENANT + 1)
            .await
            .unwrap();
        let mut last = run("acme", "fulfil", None);
        (last.chain, last.started_ms) = (c.clone(), 2_000 + n / 10 - 1);
        recent.keep(last).await.unwrap();
        // WHEN the chain is read a page of 1 000 at a time
        let mut after: Option<Place> = None;
        let (mut runs, mut steps, mut pages) = (Vec::new(), 0i64, 0);
        loop {
            let (page, next) = recent.chain("acme", &c, after.as_ref(), 1_000).unwrap();
            assert!(page.len() <= 1_000);
            pages += 1;
            for e in &page {
                match e {
                    Entry::Run(r) => runs.push((r.script.clone(), steps)),
                    Entry::Step(s) => {
                        // THEN every step comes once, in order
                        let v: serde_json::Value = serde_json::from_str(&s.record).unwrap();
                        assert_eq!(v["i"], steps, "{v}");
                        steps += 1;
                    }
                }
            }
            match next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        assert_eq!(steps, n);
        assert_eq!(pages, (n as usize + 2).div_ceil(1_000));
        // AND the runs stand where they started: the continuation after the steps of its
        // millisecond (what released it)
        assert_eq!(runs, [("order".to_string(), 0), ("fulfil".to_string(), n)]);
        // AND the other tenant's chain of the same id is its own
        let (theirs, _) = recent.chain("globex", &c, None, 10).unwrap();
        assert_eq!(theirs.len(), 1);
        // AND past the bound, the tenant keeps only its newest steps
        let more: Vec<Step> = (0..10)
            .map(|i| Step {
                seq: 0,
                tenant: "acme".into(),
                chain: c.clone(),
                at_ms: 9_000_000 + i,
                inside: false,
                record: "{}".into(),
            })
            .collect();
        store.append_steps(more, n as usize).await.unwrap();
        let kept: i64 = store
            .read(|c| {
                query_row(
                    c,
                    "SELECT count(*) FROM steps WHERE tenant = 'acme'",
                    [],
                    |r| r.get(0),
                )
                .map_err(db_err)
            })
            .unwrap();
        assert_eq!(kept, n);
    }
}
