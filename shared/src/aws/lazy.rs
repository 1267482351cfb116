//! SDK clients made when first used rather than when the port holding them is made.
//!
//! Making a client is not free: the first client of each service crate parses that crate's
//! copy of the endpoint partitions (a JSON document) and compiles their region patterns, and
//! every client assembles its runtime plugins (BENCHMARKS.md, Lambda binaries and cold
//! start). A Lambda function holds five (S3, DynamoDB, SQS, Secrets Manager, STS) and
//! each tenant scope three more, while most events use two or three: the vault's client, for
//! one, is made by every function and used by few. Made on first use, a process pays for the
//! clients its events use, once, and never for the others.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, Mutex, OnceLock};

type Make<C> = Box<dyn FnOnce() -> C + Send>;

struct Inner<C> {
    client: OnceLock<C>,
    make: Mutex<Option<Make<C>>>,
}

/// A client, or what makes it on first use; shared by its clones.
pub struct LazyClient<C>(Arc<Inner<C>>);

impl<C> LazyClient<C> {
    /// A client that is already made (tests and tools that build their own).
    pub fn ready(client: C) -> Self {
        LazyClient(Arc::new(Inner {
            client: OnceLock::from(client),
            make: Mutex::new(None),
        }))
    }

    /// A client that `make` makes when it is first used.
    pub fn on_first_use(make: impl FnOnce() -> C + Send + 'static) -> Self {
        LazyClient(Arc::new(Inner {
            client: OnceLock::new(),
            make: Mutex::new(Some(Box::new(make))),
        }))
    }

    /// Whether the client has been made.
    pub fn is_made(&self) -> bool {
        self.0.client.get().is_some()
    }
}

impl<C> Clone for LazyClient<C> {
    fn clone(&self) -> Self {
        LazyClient(self.0.clone())
    }
}

impl<C> Deref for LazyClient<C> {
    type Target = C;

    fn deref(&self) -> &C {
        self.0.client.get_or_init(|| {
            // `get_or_init` runs this once; callers racing it wait for its client.
            let make = self.0.make.lock().unwrap_or_else(|p| p.into_inner()).take();
            make.expect("an SDK client whose making panicked cannot be used")()
        })
    }
}

impl<C> fmt::Debug for LazyClient<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = if self.is_made() {
            "made"
        } else {
            "not made yet"
        };
        write!(f, "LazyClient({state})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_client_is_made_once_on_first_use_and_shared_by_clones() {
        static MADE: AtomicUsize = AtomicUsize::new(0);
        let lazy = LazyClient::on_first_use(|| {
            MADE.fetch_add(1, Ordering::SeqCst);
            String::from("client")
        });
        let twin = lazy.clone();
        assert!(!lazy.is_made());
        assert_eq!(MADE.load(Ordering::SeqCst), 0, "nothing made before use");
        assert_eq!(twin.len(), 6);
        assert_eq!(&*lazy, "client");
        assert!(lazy.is_made());
        assert_eq!(MADE.load(Ordering::SeqCst), 1, "made once for both");
        assert_eq!(format!("{lazy:?}"), "LazyClient(made)");
    }
}
