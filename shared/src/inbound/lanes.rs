//! The threads that serve connections: one tokio runtime of one worker per core (a *lane*),
//! each connection served whole on the lane that has the fewest open, as Node.js serves every
//! connection on its one thread and actix-web on one thread per core.
//!
//! Why not the process's own work-stealing runtime: under a stream of short requests its
//! workers keep waking each other to steal what the other has just received (a worker that
//! finds two tasks wakes a sleeping one, which steals one, finds nothing more, and sleeps).
//! Measured on 2 cores with `wrk -c16` on no-op invokes, that is many times the context
//! switches of one worker a request, and half as much CPU again (BENCHMARKS.md, Figures
//! behind the code). A lane has no peer to steal from or wake, and the lanes
//! together use every core.
//!
//! What stealing gave, a lane keeps another way: a script that waits or runs long leaves its
//! lane's other connections to a new thread (`crate::blocking`: `block_in_place` hands the
//! lane's worker on), so one tenant's script holds up another's request on its lane for at
//! most [`crate::blocking::SLICE`].
//!
//! `NATIVE_HTTP_THREADS` ([`super::Hygiene`]) sets the number of lanes (default: the cores the
//! process may use; 0 serves connections on the caller's runtime, as before lanes). The first
//! listener of a process starts them, and they live as long as the process: a server that
//! stops leaves them idle for the next.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use tokio::runtime::{Handle, RuntimeFlavor};

/// One lane: its runtime's handle and the connections open on it.
struct Lane {
    handle: Handle,
    open: AtomicUsize,
}

/// The lanes of the process, made on first use; an error (a thread that could not be started)
/// is kept, and connections are then served on the caller's runtime.
static LANES: OnceLock<Result<Vec<Arc<Lane>>, String>> = OnceLock::new();

fn make(n: usize) -> Result<Vec<Arc<Lane>>, String> {
    (0..n)
        .map(|i| {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name(format!("native-http-{i}"))
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start HTTP thread {i} of {n}: {e}"))?;
            let lane = Arc::new(Lane {
                handle: rt.handle().clone(),
                open: AtomicUsize::new(0),
            });
            // The runtime lives as long as the process: its worker idles when nothing is open.
            std::mem::forget(rt);
            Ok(lane)
        })
        .collect()
}

/// Where connections are served: the lanes, or the caller's runtime.
#[derive(Clone)]
pub(super) struct Lanes(Option<&'static [Arc<Lane>]>);

impl Lanes {
    /// The process's lanes, `n` of them started on first use (later calls get those). A caller
    /// on a current-thread runtime (a test, a program that asked for one thread) is served on
    /// its own runtime, as is every caller when `n` is 0 or the lanes cannot start (the reason
    /// is printed once).
    pub(super) fn get(n: usize) -> Lanes {
        if n == 0 || Handle::current().runtime_flavor() == RuntimeFlavor::CurrentThread {
            return Lanes(None);
        }
        let lanes = LANES.get_or_init(|| {
            let made = make(n);
            if let Err(e) = &made {
                eprintln!("native: {e}; serving connections on the main runtime instead");
            }
            made
        });
        Lanes(lanes.as_ref().ok().map(Vec::as_slice))
    }

    /// Spawns `serve` (one connection, from its `std` socket) on the lane with the fewest open
    /// connections, or on the caller's runtime, into `tasks`.
    pub(super) fn spawn<F, Fut>(
        &self,
        tasks: &mut tokio::task::JoinSet<()>,
        stream: tokio::net::TcpStream,
        serve: F,
    ) where
        F: FnOnce(tokio::net::TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let Some(lanes) = self.0 else {
            tasks.spawn(serve(stream));
            return;
        };
        // The socket leaves this runtime's I/O driver and joins the lane's.
        let std = match stream.into_std() {
            Ok(s) => s,
            Err(_) => return, // deregistering failed: the connection is dropped (closed)
        };
        let lane = lanes
            .iter()
            .min_by_key(|l| l.open.load(Ordering::Relaxed))
            .expect("at least one lane")
            .clone();
        lane.open.fetch_add(1, Ordering::Relaxed);
        let handle = lane.handle.clone();
        tasks.spawn_on(
            async move {
                struct Open(Arc<Lane>);
                impl Drop for Open {
                    fn drop(&mut self) {
                        self.0.open.fetch_sub(1, Ordering::Relaxed);
                    }
                }
                let _open = Open(lane);
                if let Ok(stream) = tokio::net::TcpStream::from_std(std) {
                    serve(stream).await;
                }
            },
            &handle,
        );
    }
}
