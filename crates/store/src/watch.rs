//! Watch streams: the receiving side handed to callers and the live fan-out
//! the writer feeds after each commit.

use crate::{Event, Selector};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// A live stream of events after a version, in order, without gaps.
pub struct Watch {
    /// Events; closed when the store is dropped.
    pub events: UnboundedReceiver<Event>,
}

impl Watch {
    /// The next event; `None` once the store is dropped or closed.
    pub async fn next(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    /// The next event if one is already waiting.
    pub fn try_next(&mut self) -> Option<Event> {
        self.events.try_recv().ok()
    }

    /// Blocks the calling thread (not for use on an async runtime thread)
    /// until an event arrives, the stream closes or `timeout` passes.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<Event, RecvTimeoutError> {
        // Polling with a waker that unparks this thread gives a timed blocking
        // receive without needing a tokio runtime.
        struct Unpark(std::thread::Thread);
        impl Wake for Unpark {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
            fn wake_by_ref(self: &Arc<Self>) {
                self.0.unpark();
            }
        }
        let deadline = Instant::now().checked_add(timeout);
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        loop {
            match self.events.poll_recv(&mut cx) {
                Poll::Ready(Some(event)) => return Ok(event),
                Poll::Ready(None) => return Err(RecvTimeoutError::Disconnected),
                Poll::Pending => {}
            }
            match deadline {
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(RecvTimeoutError::Timeout);
                    }
                    std::thread::park_timeout(deadline - now);
                }
                None => std::thread::park(),
            }
        }
    }
}

/// One registered live stream.
pub(crate) struct Watcher {
    pub selector: Selector,
    /// Events at or below this were already sent from history (or not asked for).
    pub after: u64,
    pub sender: UnboundedSender<Event>,
}

/// Every live stream of a store.
#[derive(Default)]
pub(crate) struct Watchers {
    list: Vec<Watcher>,
}

impl Watchers {
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn add(&mut self, watcher: Watcher) {
        self.list.retain(|w| !w.sender.is_closed());
        self.list.push(watcher);
    }

    pub fn clear(&mut self) {
        self.list.clear();
    }

    /// Sends committed events, in order, to every stream that covers them,
    /// forgetting streams whose receiver is gone.
    pub fn publish(&mut self, events: &[Event]) {
        if events.is_empty() {
            return;
        }
        self.list.retain(|w| {
            for event in events {
                if event.object.resource_version > w.after
                    && w.selector.matches(&event.object.key)
                    && w.sender.send(event.clone()).is_err()
                {
                    return false;
                }
            }
            !w.sender.is_closed()
        });
    }
}
