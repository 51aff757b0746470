//! [`ChunkQueue`]: the chunks a run's stream has not handed out yet.
//!
//! Chunks come from the run's loop, its tasks, subgraph runs and stream
//! writers, on any thread, so the queue is a `Mutex`. But nearly all of them
//! are sent on the thread that is polling the run, from inside that poll: the
//! loop's own chunks (every step's `updates`, `values`, ...), and those of the
//! nodes it awaits. For each poll of the run, its stream lends its own list
//! of taken chunks to a thread-local slot; such a chunk is appended there,
//! and the stream takes the list back when the poll returns: no lock, no
//! atomic read-modify-write, and no allocation that outlives the stream.
//!
//! Order is kept: a chunk takes the local path only while the locked queue is
//! empty, and the stream hands out the local chunks of a poll before what the
//! locked queue holds after it. A chunk sent to the queue by another thread
//! before a local one (as far as that thread's synchronisation with the
//! loop's says) is seen in the queue, so the local one follows it there.

use std::cell::{Cell, RefCell};
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

thread_local! {
    /// The queue whose stream this thread is polling the run of (null when
    /// none). Compared, never dereferenced.
    static OWNER: Cell<*const ChunkQueue> = const { Cell::new(std::ptr::null()) };
    /// That stream's taken chunks, lent for the poll, and the chunks sent
    /// to its queue meanwhile.
    static LOCAL: RefCell<VecDeque<StreamChunk>> = const { RefCell::new(VecDeque::new()) };
}

impl ChunkQueue {
    pub(crate) fn push(&self, chunk: StreamChunk) {
        let Some(chunk) = self.push_local(chunk) else {
            return;
        };
        let mut chunks = self
            .chunks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        chunks.push_back(chunk);
        self.waiting.store(chunks.len(), Ordering::Relaxed);
    }

    /// Sends `chunk` through this thread's local buffer when this thread
    /// is polling this queue's run and nothing waits in the locked queue;
    /// otherwise hands it back.
    fn push_local(&self, chunk: StreamChunk) -> Option<StreamChunk> {
        if self.waiting.load(Ordering::Relaxed) != 0 || !self.is_polled_here() {
            return Some(chunk);
        }
        let mut chunk = Some(chunk);
        // A buffer in use or gone (the thread is ending) means the locked
        // path.
        let _ = LOCAL.try_with(|local| {
            if let Ok(mut local) = local.try_borrow_mut()
                && let Some(chunk) = chunk.take()
            {
                local.push_back(chunk);
            }
        });
        chunk
    }

    /// Whether this thread is polling the run that feeds this queue.
    fn is_polled_here(&self) -> bool {
        OWNER
            .try_with(|owner| std::ptr::eq(owner.get(), self))
            .unwrap_or(false)
    }

    /// Runs `poll`, a poll of the run that feeds this queue, with this
    /// thread's local buffer taking the chunks sent to the queue meanwhile;
    /// they are appended to `into` (the stream's taken chunks), even if
    /// `poll` panics. An outer poll (a parent run's stream polling this one
    /// inside its own poll) has the buffer back afterwards.
    pub(crate) fn polling<R>(
        &self,
        into: &mut VecDeque<StreamChunk>,
        poll: impl FnOnce() -> R,
    ) -> R {
        let _restore = Restore::install(self, into);
        poll()
    }

    /// Whether chunks wait (in the locked queue, or in this thread's slot
    /// while its stream polls the run). A push made on another thread
    /// without a synchronisation since may not be seen yet (the chunk is
    /// then taken a little later); one that happened before this call
    /// always is.
    pub(crate) fn has_pending(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) != 0 || self.has_local()
    }

    /// Whether chunks wait in this thread's local buffer while it is this
    /// queue's: the stream's taken ones lent to it and those sent since.
    fn has_local(&self) -> bool {
        self.is_polled_here()
            && LOCAL
                .try_with(|local| local.try_borrow().is_ok_and(|local| !local.is_empty()))
                .unwrap_or(false)
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

/// Lends a stream's taken chunks to this thread's local buffer for one
/// poll of its run, and takes them back, with the chunks sent meanwhile,
/// when dropped (see [`ChunkQueue::polling`]). The buffer is always a
/// stream's own, so no allocation outlives the stream.
struct Restore<'a> {
    // While the poll runs: what the buffer held before (an outer poll's
    // chunks); the stream's chunks are in the buffer.
    into: &'a mut VecDeque<StreamChunk>,
    // The buffer's owner before this poll; `None` when the buffer could not
    // be lent (every chunk then takes the locked path).
    outer: Option<*const ChunkQueue>,
}

impl<'a> Restore<'a> {
    fn install(queue: &ChunkQueue, into: &'a mut VecDeque<StreamChunk>) -> Self {
        // The owner is set only once the buffer is lent.
        let outer = match OWNER.try_with(Cell::get) {
            Ok(owner) if swap_local(into) => {
                let _ = OWNER.try_with(|cell| cell.set(queue));
                Some(owner)
            }
            _ => None,
        };
        Self { into, outer }
    }
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        if let Some(owner) = self.outer {
            let _ = OWNER.try_with(|cell| cell.set(owner));
            swap_local(self.into);
        }
    }
}

/// Swaps `chunks` with this thread's local buffer; `false` if the buffer
/// cannot be used (in use, or the thread is ending).
fn swap_local(chunks: &mut VecDeque<StreamChunk>) -> bool {
    LOCAL
        .try_with(|local| {
            local
                .try_borrow_mut()
                .map(|mut local| std::mem::swap(&mut *local, chunks))
                .is_ok()
        })
        .unwrap_or(false)
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
    fn chunks_sent_while_polled_here_skip_the_lock_in_order() {
        let queue = ChunkQueue::default();
        let mut taken = VecDeque::from([chunk(0)]);
        queue.polling(&mut taken, || {
            queue.push(chunk(1));
            assert!(queue.has_pending());
            queue.push(chunk(2));
        });
        assert_eq!(numbers(&taken), [0, 1, 2]);
        assert!(!queue.has_pending(), "nothing went to the locked queue");
        // Outside a poll, the locked path.
        queue.push(chunk(3));
        assert!(queue.has_pending());
        queue.take_into(&mut taken);
        assert_eq!(numbers(&taken), [0, 1, 2, 3]);
        assert!(!queue.has_pending());
    }

    #[test]
    fn a_chunk_waiting_in_the_queue_keeps_its_place_before_later_ones() {
        let queue = Arc::new(ChunkQueue::default());
        let mut taken = VecDeque::new();
        queue.polling(&mut taken, || {
            queue.push(chunk(1));
            // Another thread's chunk, sent before the next local one.
            let other = queue.clone();
            std::thread::spawn(move || other.push(chunk(2)))
                .join()
                .unwrap();
            queue.push(chunk(3));
        });
        // 1 was handed over locally; 3 followed 2 into the locked queue.
        assert_eq!(numbers(&taken), [1]);
        queue.take_into(&mut taken);
        assert_eq!(numbers(&taken), [1, 2, 3]);
    }

    #[test]
    fn a_nested_poll_keeps_each_queue_s_chunks_apart() {
        let (outer, inner) = (ChunkQueue::default(), ChunkQueue::default());
        let (mut outer_taken, mut inner_taken) = (VecDeque::new(), VecDeque::new());
        outer.polling(&mut outer_taken, || {
            outer.push(chunk(1));
            inner.polling(&mut inner_taken, || {
                inner.push(chunk(10));
                // The outer run's chunk while the inner one is polled.
                outer.push(chunk(2));
                inner.push(chunk(11));
            });
            outer.push(chunk(3));
        });
        assert_eq!(numbers(&inner_taken), [10, 11]);
        assert_eq!(numbers(&outer_taken), [1]);
        outer.take_into(&mut outer_taken);
        assert_eq!(numbers(&outer_taken), [1, 2, 3]);
    }

    #[test]
    fn chunks_of_a_poll_that_panics_are_kept() {
        let queue = ChunkQueue::default();
        let mut taken = VecDeque::new();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            queue.polling(&mut taken, || {
                queue.push(chunk(1));
                panic!("the run panicked");
            })
        }));
        assert!(panicked.is_err());
        assert_eq!(numbers(&taken), [1]);
        // The thread's buffer is free again.
        queue.polling(&mut taken, || queue.push(chunk(2)));
        assert_eq!(numbers(&taken), [1, 2]);
    }
}
