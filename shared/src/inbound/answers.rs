//! What a connection's answers hold in memory, and whether its client reads them: the bounds
//! that keep a caller who never reads (an HTTP/2 receive window of 0 with its PINGs answered,
//! an HTTP/1 socket never read) from holding the server's memory.
//!
//! - Every answer's body is [`Tracked`]: handed to hyper in pieces of at most [`CHUNK`] bytes,
//!   so that what hyper and h2 hold beyond what the client has read is a piece or two a stream,
//!   and timed from each piece handed until hyper asks for the next (the client's side of the
//!   wait; the server's own wait for data, a long poll, is not counted).
//! - A connection's [`Held`] counts the bytes of its answers not yet written to its socket,
//!   and when its writes have been blocked since. [`Held::stalled_since`] is the older of its
//!   oldest answer waiting on the client and its blocked writes: past the send timeout the
//!   listener closes the connection; past the total bound the listener closes the connections
//!   stalled longest first.
//! - A [`Ledger`] sums every connection's held bytes for the listener.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};

/// The largest piece of an answer handed to hyper at once (HTTP/2's default frame size).
pub const CHUNK: usize = 16 * 1024;

/// "Not waiting": the server is producing the answer, or nothing is blocked.
const NONE: u64 = u64::MAX;

/// Milliseconds since the first call in this process (a monotonic clock held in an atomic).
pub(super) fn now_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// The answer bytes every connection of a listener holds.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    total: AtomicU64,
}

impl Ledger {
    /// The bytes held now.
    pub(super) fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }
}

/// One answer's wait on its client.
#[derive(Debug)]
struct Answer {
    /// When the last piece was handed to hyper and not yet followed by a request for the next
    /// ([`NONE`] while the server produces).
    waiting_since: AtomicU64,
}

/// One connection's answers.
#[derive(Debug)]
pub(super) struct Held {
    ledger: Arc<Ledger>,
    /// Answer bytes produced and not yet written to the socket.
    bytes: AtomicU64,
    /// The answers alive (at most one on HTTP/1, [`super::listener::H2_MAX_STREAMS`] on HTTP/2).
    answers: Mutex<Vec<Arc<Answer>>>,
    /// Since when a write to the socket has waited, [`NONE`] when none waits.
    blocked_since: AtomicU64,
}

impl Held {
    /// Nothing held, counted in `ledger`.
    pub(super) fn new(ledger: Arc<Ledger>) -> Self {
        Held {
            ledger,
            bytes: AtomicU64::new(0),
            answers: Mutex::new(Vec::new()),
            blocked_since: AtomicU64::new(NONE),
        }
    }

    /// Answer bytes produced and not yet written to the socket.
    pub(super) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    fn add(&self, n: u64) {
        if n > 0 {
            self.bytes.fetch_add(n, Ordering::Relaxed);
            self.ledger.total.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Takes up to `n` bytes off the count (never below 0: what is written includes headers
    /// and frames that were never counted).
    fn sub(&self, n: u64) {
        if n == 0 {
            return;
        }
        let before = self
            .bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                (b > 0).then(|| b.saturating_sub(n))
            })
            .unwrap_or(0);
        let taken = before.min(n);
        if taken > 0 {
            self.ledger.total.fetch_sub(taken, Ordering::Relaxed);
        }
    }

    /// `n` bytes went to the socket.
    pub(super) fn wrote(&self, n: usize) {
        if self.blocked_since.load(Ordering::Relaxed) != NONE {
            self.blocked_since.store(NONE, Ordering::Relaxed);
        }
        self.sub(n as u64);
    }

    /// A write to the socket has to wait.
    pub(super) fn blocked(&self) {
        if self.blocked_since.load(Ordering::Relaxed) == NONE {
            self.blocked_since.store(now_ms(), Ordering::Relaxed);
        }
    }

    /// Since when (in [`now_ms`]) the connection has waited on its client longest: its oldest
    /// answer waiting for the client to take the last piece, or its blocked writes.
    pub(super) fn stalled_since(&self) -> Option<u64> {
        let answers = self.answers.lock().unwrap_or_else(|p| p.into_inner());
        let oldest = answers
            .iter()
            .map(|a| a.waiting_since.load(Ordering::Relaxed))
            .chain(std::iter::once(self.blocked_since.load(Ordering::Relaxed)))
            .min()
            .unwrap_or(NONE);
        (oldest != NONE).then_some(oldest)
    }

    /// Forgets every byte (the connection is closed).
    pub(super) fn release(&self) {
        let n = self.bytes.swap(0, Ordering::Relaxed);
        self.ledger.total.fetch_sub(n, Ordering::Relaxed);
    }

    /// Counts an answer of `size` bytes, unless the connection holds some already and would
    /// hold more than `cap` with it (one answer alone may be larger).
    pub(super) fn admit(&self, size: u64, cap: u64) -> bool {
        let admitted = self
            .bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
                (now == 0 || now.saturating_add(size) <= cap).then(|| now.saturating_add(size))
            })
            .is_ok();
        if admitted {
            self.ledger.total.fetch_add(size, Ordering::Relaxed);
        }
        admitted
    }

    /// Tracks `body` as one of this connection's answers, `counted` of its bytes counted
    /// already ([`Held::admit`]; the rest are counted as hyper takes them), holding `guard`
    /// until hyper is done with it.
    pub(super) fn track<B, G>(self: &Arc<Self>, body: B, counted: u64, guard: G) -> Tracked<B, G>
    where
        B: HttpBody<Data = Bytes>,
    {
        let size = counted;
        let answer = Arc::new(Answer {
            waiting_since: AtomicU64::new(now_ms()),
        });
        self.answers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(answer.clone());
        Tracked {
            inner: body,
            rest: Bytes::new(),
            left: size,
            held: self.clone(),
            answer,
            _guard: guard,
        }
    }
}

/// An answer's body as hyper takes it: in pieces of at most [`CHUNK`] bytes, its bytes counted
/// in its connection's [`Held`] until written, its wait on the client timed.
pub(super) struct Tracked<B, G> {
    inner: B,
    /// What is left of the inner body's last data frame.
    rest: Bytes,
    /// Bytes counted when the answer was made and not yet handed to hyper.
    left: u64,
    held: Arc<Held>,
    answer: Arc<Answer>,
    _guard: G,
}

impl<B, G> Tracked<B, G> {
    /// A piece of `n` bytes is handed to hyper: counted if the answer's size did not include it.
    fn hand(&mut self, n: usize) {
        let n = n as u64;
        if self.left >= n {
            self.left -= n;
        } else {
            self.held.add(n - self.left);
            self.left = 0;
        }
        self.answer.waiting_since.store(now_ms(), Ordering::Relaxed);
    }

    /// The next piece of `rest`.
    fn piece(&mut self) -> Bytes {
        if self.rest.len() <= CHUNK {
            std::mem::take(&mut self.rest)
        } else {
            self.rest.split_to(CHUNK)
        }
    }
}

impl<B, G> Drop for Tracked<B, G> {
    fn drop(&mut self) {
        // What was never handed to hyper will not be written.
        self.held.sub(self.left);
        let mut answers = self.held.answers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = answers.iter().position(|a| Arc::ptr_eq(a, &self.answer)) {
            answers.swap_remove(i);
        }
    }
}

impl<B, G> HttpBody for Tracked<B, G>
where
    B: HttpBody<Data = Bytes> + Unpin,
    G: Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = &mut *self;
        // Asked again: the client's side took the last piece.
        this.answer.waiting_since.store(NONE, Ordering::Relaxed);
        if !this.rest.is_empty() {
            let piece = this.piece();
            this.hand(piece.len());
            return Poll::Ready(Some(Ok(Frame::data(piece))));
        }
        match std::pin::Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) => {
                    this.rest = data;
                    let piece = this.piece();
                    this.hand(piece.len());
                    Poll::Ready(Some(Ok(Frame::data(piece))))
                }
                Err(frame) => {
                    this.hand(0);
                    Poll::Ready(Some(Ok(frame)))
                }
            },
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let inner = self.inner.size_hint();
        let rest = self.rest.len() as u64;
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + rest);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + rest);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, Full};

    fn held() -> (Arc<Ledger>, Arc<Held>) {
        let ledger = Arc::new(Ledger::default());
        (ledger.clone(), Arc::new(Held::new(ledger)))
    }

    #[tokio::test]
    async fn an_answer_is_handed_in_pieces_and_counted_until_written() {
        // GIVEN an answer of 40 000 bytes
        let (ledger, held) = held();
        let body = Full::new(Bytes::from(vec![7u8; 40_000]));
        assert!(held.admit(40_000, 1));
        let mut t = held.track(body, 40_000, ());
        assert_eq!((held.bytes(), ledger.total()), (40_000, 40_000));
        assert!(held.stalled_since().is_some(), "waits on hyper at once");
        // WHEN hyper takes it: pieces of at most CHUNK, all of it, nothing counted off yet
        let mut sizes = Vec::new();
        while let Some(f) = t.frame().await {
            sizes.push(f.unwrap().into_data().unwrap().len());
        }
        assert_eq!(sizes, [CHUNK, CHUNK, 40_000 - 2 * CHUNK]);
        assert_eq!(held.bytes(), 40_000);
        // THEN what the socket takes comes off, never below zero (headers were not counted)
        held.wrote(30_000);
        assert_eq!((held.bytes(), ledger.total()), (10_000, 10_000));
        held.wrote(20_000);
        assert_eq!((held.bytes(), ledger.total()), (0, 0));
        drop(t);
        assert_eq!(held.stalled_since(), None);
        // An answer of unknown size is counted as hyper takes it.
        let mut t = held.track(Full::new(Bytes::from(vec![7u8; 100])), 0, ());
        let _ = t.frame().await;
        assert_eq!(held.bytes(), 100);
    }

    #[tokio::test]
    async fn an_answer_dropped_unsent_is_counted_off_and_a_guard_lives_as_long_as_it() {
        let (ledger, held) = held();
        let guard = Arc::new(());
        assert!(held.admit(50_000, 0), "one answer alone may pass the cap");
        assert!(!held.admit(1, 50_000), "not a second one");
        let mut t = held.track(
            Full::new(Bytes::from(vec![1u8; 50_000])),
            50_000,
            guard.clone(),
        );
        let _first = t.frame().await;
        assert_eq!(Arc::strong_count(&guard), 2);
        drop(t);
        // The first piece was handed to hyper (it may still hold it); the rest never will be.
        assert_eq!(held.bytes(), CHUNK as u64);
        assert_eq!(ledger.total(), CHUNK as u64);
        assert_eq!(Arc::strong_count(&guard), 1);
        held.release();
        assert_eq!(ledger.total(), 0);
    }

    #[test]
    fn blocked_writes_stall_the_connection_until_a_write_goes_through() {
        let (_, held) = held();
        assert_eq!(held.stalled_since(), None);
        held.blocked();
        let since = held.stalled_since().expect("blocked");
        held.blocked();
        assert_eq!(held.stalled_since(), Some(since), "the first wait counts");
        held.wrote(1);
        assert_eq!(held.stalled_since(), None);
    }
}
