//! [`ChunkQueue`]: the chunks a run's stream has not handed out yet.
//!
//! Chunks come from the run's loop, its tasks, subgraph runs and stream
//! writers, on any thread, so the queue is a `Mutex`.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::chunk::StreamChunk;
use std::pin::Pin;
use std::task::Context;
use std::task::Poll;

/// The chunks a run's stream has not handed out yet, in the order they
/// were sent (by the loop, its tasks, subgraph runs, stream writers).
#[derive(Default)]
pub(crate) struct ChunkQueue {
    chunks: Mutex<VecDeque<StreamChunk>>,
    // How many chunks wait, kept beside the lock so that the loop's check
    // after every step is a plain load. Written under the lock only.
    waiting: AtomicUsize,
    // Set by the run's loop when it returns `Pending` only to let the
    // stream hand out chunks (`run::YieldToStream`), taken by the stream.
    yielded: AtomicBool,
}

impl ChunkQueue {
    pub(crate) fn push(&self, chunk: StreamChunk) {
        let mut chunks = self
            .chunks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        chunks.push_back(chunk);
        self.waiting.store(chunks.len(), Ordering::Relaxed);
    }

    /// Whether chunks wait. A push made on another thread without a
    /// synchronisation since may not be seen yet (the chunk is then taken a
    /// little later); one that happened before this call always is.
    pub(crate) fn has_pending(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) != 0
    }

    /// Marks that the run's loop yields to its stream without waking it.
    pub(crate) fn mark_yield(&self) {
        self.yielded.store(true, Ordering::Relaxed);
    }

    /// Whether the run's loop last returned `Pending` to yield (it is then
    /// ready to go on at once); clears the mark.
    pub(crate) fn take_yield(&self) -> bool {
        // A load first: the usual answer needs no write.
        self.yielded.load(Ordering::Relaxed) && {
            self.yielded.store(false, Ordering::Relaxed);
            true
        }
    }

    /// Moves every chunk waiting in the locked queue to the end of `into`.
    pub(crate) fn take_into(&self, into: &mut VecDeque<StreamChunk>) {
        if self.waiting.load(Ordering::Relaxed) == 0 {
            // Nothing seen waiting: a push not seen yet is taken next time,
            // as it would be had it come a moment later.
            return;
        }
        let mut chunks = self
            .chunks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if into.is_empty() {
            std::mem::swap(&mut *chunks, into);
        } else {
            into.append(&mut chunks);
        }
        self.waiting.store(0, Ordering::Relaxed);
    }
}

/// Returns `Pending` once, without waking anyone: only for the run's own
/// loop, after it marked the yield on its queue (`ChunkQueue::mark_yield`).
/// The run's stream, its only poller, then hands out the waiting chunks
/// and polls the loop again when asked for the next one; if its own queue
/// has none (they went to a parent's queue), it wakes its task itself.
/// Waking through the runtime's waker at every step would cost more.
pub(crate) struct YieldToStream(pub(crate) bool);

impl Future for YieldToStream {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use stategraph_core::Value;

    use super::*;
    use crate::{Namespace, StreamMode};

    fn chunk(n: i64) -> StreamChunk {
        StreamChunk {
            namespace: Namespace::ROOT,
            mode: StreamMode::Custom,
            data: Value::new(n),
        }
    }

    fn numbers(chunks: &VecDeque<StreamChunk>) -> Vec<i64> {
        chunks
            .iter()
            .filter_map(|c| c.data.downcast_ref::<i64>().copied())
            .collect()
    }

    #[test]
    fn chunks_are_taken_in_the_order_they_were_sent() {
        let queue = Arc::new(ChunkQueue::default());
        let mut taken = VecDeque::from([chunk(0)]);
        queue.push(chunk(1));
        let other = queue.clone();
        std::thread::spawn(move || other.push(chunk(2)))
            .join()
            .unwrap();
        assert!(queue.has_pending());
        queue.take_into(&mut taken);
        assert_eq!(numbers(&taken), [0, 1, 2]);
        assert!(!queue.has_pending());
    }
}
