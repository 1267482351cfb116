//! A blank VM made ahead, so that a tenant's first invoke on a server does not wait for one.
//!
//! Making a VM is nearly all of a tenant's first invoke (the standard library, the host's helpers,
//! the `native` table; giving it to the tenant is a small part of it: BENCHMARKS.md, First invoke
//! and memory per tenant). A server ([`crate::runtime::Runtime::with_spare_vm`]) keeps one
//! [`Blank`] ready: the first invoke of a tenant with no VM takes it, and the next one is made by a
//! thread of its own at the idle priority (`SCHED_IDLE`: it runs only on a core nothing else wants,
//! so it never takes a request's CPU; under load no blank is made and first invokes make their VM
//! as without one). A blank is the same for every tenant of a deployment and holds nothing of any
//! tenant until it is given to one; a blank made for another deployment than the caller's is
//! dropped, never used.
//!
//! Lambda functions do not keep one: a function's process serves a few tenants, and a blank
//! made after its invoke would take its CPU from the next.

use std::sync::{Arc, Condvar, Mutex};

use super::sandbox::Blank;
use crate::config::Deployment;

/// The blank VM kept ready, if any, and the thread that makes them.
#[derive(Default)]
pub struct Spare {
    slot: Mutex<Slot>,
    wake: Condvar,
}

#[derive(Default)]
struct Slot {
    ready: Option<(Deployment, Blank)>,
    /// The deployment to make the next blank for, once `ready` was taken.
    wanted: Option<Deployment>,
    /// Whether the making thread runs.
    thread: bool,
    /// The engine is gone: the thread ends.
    closed: bool,
    /// How many blanks were taken and made (for tests).
    taken: u64,
    made: u64,
}

impl Spare {
    /// Takes the blank made for `deployment`, if one is ready, and asks for the next.
    pub fn take(self: &Arc<Self>, deployment: &Deployment) -> Option<Blank> {
        let ready = self.lock().ready.take();
        // One made for a deployment since replaced is dropped here, outside the lock.
        let taken = match ready {
            Some((made_for, blank)) if made_for == *deployment => Some(blank),
            _ => None,
        };
        let mut slot = self.lock();
        slot.taken += u64::from(taken.is_some());
        slot.wanted = Some(deployment.clone());
        if !slot.thread {
            let me = self.clone();
            // No thread (the process at its limit): first invokes make their VMs themselves.
            slot.thread = std::thread::Builder::new()
                .name("native-vm-spare".into())
                .spawn(move || me.run())
                .is_ok();
        }
        drop(slot);
        self.wake.notify_one();
        taken
    }

    fn run(&self) {
        idle_priority();
        loop {
            let deployment = {
                let mut slot = self.lock();
                loop {
                    if slot.closed {
                        return;
                    }
                    if slot.ready.is_none() {
                        if let Some(d) = slot.wanted.take() {
                            break d;
                        }
                    }
                    slot = self.wake.wait(slot).unwrap_or_else(|p| p.into_inner());
                }
            };
            // A blank that cannot be made (the process out of memory) is not kept: the next
            // first invoke makes its VM itself and says why it could not.
            let blank = Blank::new(&deployment).ok();
            let mut slot = self.lock();
            if let Some(blank) = blank {
                slot.made += 1;
                slot.ready = Some((deployment, blank));
            }
        }
    }

    /// Ends the making thread (the engine is dropped).
    pub fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_all();
    }

    /// How many blanks were taken by first invokes, and how many were made.
    pub fn counts(&self) -> (u64, u64) {
        let slot = self.lock();
        (slot.taken, slot.made)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Puts the calling thread at Linux's idle scheduling policy (elsewhere: nothing).
fn idle_priority() {
    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    // SAFETY: sched_setscheduler reads the parameter it is given; pid 0 is this thread. A
    // failure leaves the thread at the normal policy, which is still correct.
    unsafe {
        let param = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn made(spare: &Spare, n: u64) {
        let t = std::time::Instant::now();
        while spare.counts().1 < n {
            assert!(t.elapsed().as_secs() < 5, "no blank made in 5 s");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    #[test]
    fn a_blank_made_for_another_deployment_is_dropped_not_given() {
        let spare = Arc::new(Spare::default());
        let one = Deployment::default();
        let mut other = Deployment::default();
        other.http.allow_private_networks = true;
        assert!(spare.take(&one).is_none(), "none made yet");
        made(&spare, 1);
        // The deployment changed (a reload): the blank made for the old one is not given.
        assert!(spare.take(&other).is_none());
        made(&spare, 2);
        assert!(spare.take(&other).is_some());
        assert_eq!(spare.counts().0, 1);
        // Closed, the thread ends and lets its reference go.
        made(&spare, 3);
        spare.close();
        let t = std::time::Instant::now();
        while Arc::strong_count(&spare) > 1 {
            assert!(t.elapsed().as_secs() < 5, "the making thread did not end");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}
