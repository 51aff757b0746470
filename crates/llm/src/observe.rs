//! How chat models called inside a graph node report what they produce to
//! the runtime, for the `messages` stream mode (LangChain's streaming
//! callback handler).
//!
//! The runtime wraps a node's future with [`observe`]; while that future is
//! polled, [`ChatModel::invoke`](crate::ChatModel::invoke) and
//! [`ChatModel::stream`](crate::ChatModel::stream) find the observer and
//! report every chunk (or, for a model that does not stream, the whole
//! answer). A call tagged [`NOSTREAM_TAG`](crate::NOSTREAM_TAG) reports
//! nothing. Work moved to another task (`tokio::spawn`) is not observed.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;

use crate::chunk::AiMessageChunk;
use crate::message::{AiMessage, Message};
use crate::model::CallOptions;

/// What an observer learns about the model call that produced a chunk.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct ModelCall<'a> {
    /// [`ChatModel::model_name`](crate::ChatModel::model_name).
    pub model_name: &'a str,
    /// [`ChatModel::provider_name`](crate::ChatModel::provider_name).
    pub provider: &'a str,
    /// The call's tags (bound and per call).
    pub tags: &'a [String],
}

/// Receives the output of chat models called inside an observed future.
pub trait ModelObserver: Send + Sync {
    /// A chunk of a streamed answer, as the model yields it. Every chunk of
    /// one answer carries the same id.
    fn on_chunk(&self, call: &ModelCall<'_>, chunk: &AiMessageChunk);

    /// The whole answer of a model that does not stream.
    fn on_message(&self, call: &ModelCall<'_>, message: &AiMessage);

    /// A message the observed code pushed itself (LangGraph's
    /// `push_message`); nothing by default.
    fn on_pushed(&self, message: &Message) {
        let _ = message;
    }
}

/// An observer slot: `Some` reports to that observer, `None` reports to
/// nobody (a scope that hides an outer observer).
pub type SharedObserver = Option<Arc<dyn ModelObserver>>;

thread_local! {
    static CURRENT: RefCell<SharedObserver> = const { RefCell::new(None) };
}

/// Runs `future` with `observer` as the observer of the chat model calls it
/// makes: each poll installs it for the current thread and restores the
/// previous one after, so scopes nest (a subgraph's tasks inside a node).
/// `None` hides any outer observer from `future`.
pub fn observe<'a, T: 'a>(
    observer: SharedObserver,
    future: BoxFuture<'a, T>,
) -> impl Future<Output = T> + Send + 'a {
    Observed { observer, future }
}

/// Whether an observer is installed for the current poll.
pub fn is_observed() -> bool {
    CURRENT.with(|current| current.borrow().is_some())
}

/// Reports a message the running code pushed (LangGraph's `push_message`)
/// to the observer of the current poll, if any.
pub fn report_pushed(message: &Message) {
    let observer = CURRENT.with(|current| current.borrow().clone());
    if let Some(observer) = observer {
        observer.on_pushed(message);
    }
}

/// The observer of the current poll, if any, unless `options` carry the
/// `nostream` tag.
pub(crate) fn current(options: &CallOptions) -> SharedObserver {
    if options.is_nostream() {
        return None;
    }
    CURRENT.with(|current| current.borrow().clone())
}

struct Observed<'a, T> {
    observer: SharedObserver,
    future: BoxFuture<'a, T>,
}

impl<T> Future for Observed<'_, T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = self.get_mut();
        // Swap ours in; the guard swaps it back out even if the poll panics.
        let outer = CURRENT.with(|current| current.replace(this.observer.take()));
        let restore = Restore {
            slot: &mut this.observer,
            outer: Some(outer),
        };
        let poll = this.future.as_mut().poll(cx);
        drop(restore);
        poll
    }
}

/// Puts the outer observer back and ours into its slot.
struct Restore<'s> {
    slot: &'s mut SharedObserver,
    outer: Option<SharedObserver>,
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        let outer = self.outer.take().flatten();
        *self.slot = CURRENT.with(|current| current.replace(outer));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use futures::FutureExt;

    use super::*;

    fn block_on<F: Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[derive(Default)]
    struct Record(Mutex<Vec<String>>);

    impl ModelObserver for Record {
        fn on_chunk(&self, _: &ModelCall<'_>, chunk: &AiMessageChunk) {
            self.0
                .lock()
                .unwrap()
                .push(chunk.content.text().into_owned());
        }
        fn on_message(&self, _: &ModelCall<'_>, message: &AiMessage) {
            self.0.lock().unwrap().push(message.text().into_owned());
        }
    }

    fn report(text: &str) {
        if let Some(observer) = current(&CallOptions::default()) {
            let call = ModelCall {
                model_name: "m",
                provider: "p",
                tags: &[],
            };
            observer.on_message(&call, &AiMessage::new(text));
        }
    }

    #[test]
    fn scopes_nest_and_restore() {
        let outer = Arc::new(Record::default());
        let inner = Arc::new(Record::default());
        let inner_dyn: Arc<dyn ModelObserver> = inner.clone();
        let work = async move {
            report("outer-1");
            observe(Some(inner_dyn), async { report("inner") }.boxed()).await;
            observe(None, async { report("hidden") }.boxed()).await;
            report("outer-2");
        };
        block_on(observe(Some(outer.clone()), work.boxed()));
        assert!(!is_observed());
        assert_eq!(*outer.0.lock().unwrap(), ["outer-1", "outer-2"]);
        assert_eq!(*inner.0.lock().unwrap(), ["inner"]);
    }

    #[test]
    fn nostream_calls_see_no_observer() {
        let record: Arc<dyn ModelObserver> = Arc::new(Record::default());
        let seen = block_on(observe(
            Some(record),
            async {
                let tagged = CallOptions::default().with_tags([crate::NOSTREAM_TAG]);
                (
                    current(&CallOptions::default()).is_some(),
                    current(&tagged).is_some(),
                )
            }
            .boxed(),
        ));
        assert_eq!(seen, (true, false));
    }

    #[test]
    fn a_panicking_poll_restores_the_outer_observer() {
        let record: Arc<dyn ModelObserver> = Arc::new(Record::default());
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            block_on(observe(
                Some(record),
                async { panic!("node failed") }.boxed(),
            ))
        }));
        assert!(caught.is_err());
        assert!(!is_observed());
    }
}
