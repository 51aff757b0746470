//! A run's events on their way to SSE clients: framed once, handed to
//! every subscriber through a queue bounded in events and bytes, and kept
//! for a replay when the run is resumable (API.md 7.1 and 7.6).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::body::Bytes;
use tokio::sync::mpsc;

/// An event id: milliseconds, then a sequence within the millisecond,
/// strictly increasing within a run and compared as numbers (not as the
/// official in-memory runtime's strings, which repeat and misorder).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct EventId {
    ms: u64,
    seq: u64,
}

impl EventId {
    /// The id after `last` at `now_ms`.
    fn next(last: Option<Self>, now_ms: u64) -> Self {
        match last {
            Some(last) if now_ms <= last.ms => Self {
                ms: last.ms,
                seq: last.seq + 1,
            },
            _ => Self { ms: now_ms, seq: 0 },
        }
    }

    /// `"<ms>-<seq>"`, as a `Last-Event-ID` header gives it.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let (ms, seq) = text.trim().split_once('-')?;
        Some(Self {
            ms: ms.parse().ok()?,
            seq: seq.parse().ok()?,
        })
    }
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// One framed event: `event: <name>\r\ndata: <json>\r\n[id: <id>\r\n]\r\n`.
#[derive(Clone, Debug)]
struct Logged {
    id: EventId,
    frame: Bytes,
}

/// Where a joining client starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StartAt {
    /// The live tail only (no `Last-Event-ID`).
    Now,
    /// Every stored event, then the tail (`Last-Event-ID: -1`).
    Start,
    /// The stored events after this one, then the tail.
    After(EventId),
}

impl StartAt {
    /// From a `Last-Event-ID` header: `-1` (or an id that does not parse,
    /// so nothing is skipped) replays everything.
    pub(crate) fn header(value: Option<&str>) -> Self {
        match value {
            None => Self::Now,
            Some(text) => EventId::parse(text).map_or(Self::Start, Self::After),
        }
    }
}

/// A subscriber's view: the stored events to send first, then the live
/// ones (`None` once the run has ended).
pub(crate) struct Subscription {
    pub(crate) replay: Vec<Bytes>,
    pub(crate) live: Option<Live>,
}

/// What one subscriber has been sent and not yet read, shared by the
/// publisher (which adds) and the reader (which takes).
#[derive(Debug, Default)]
struct Backlog {
    events: AtomicUsize,
    bytes: AtomicUsize,
    /// Set when the subscriber fell too far behind and was dropped.
    lagged: AtomicBool,
}

/// A subscriber's live events.
#[derive(Debug)]
pub(crate) struct Live {
    receiver: mpsc::UnboundedReceiver<Bytes>,
    backlog: Arc<Backlog>,
}

impl Live {
    /// The next event; `None` at the end: the run ended, or this reader
    /// fell too far behind ([`Live::lagged`]).
    pub(crate) async fn recv(&mut self) -> Option<Bytes> {
        let frame = self.receiver.recv().await?;
        self.backlog.events.fetch_sub(1, Ordering::SeqCst);
        self.backlog.bytes.fetch_sub(frame.len(), Ordering::SeqCst);
        Some(frame)
    }

    /// Whether its events ended because it fell behind (not because the
    /// run ended): its response must end as an error, so the client
    /// reconnects (with `Last-Event-ID`) rather than take the stream as
    /// whole.
    pub(crate) fn lagged(&self) -> bool {
        self.backlog.lagged.load(Ordering::SeqCst)
    }

    /// The next event without waiting (tests).
    #[cfg(test)]
    fn try_recv(&mut self) -> Option<Bytes> {
        let frame = self.receiver.try_recv().ok()?;
        self.backlog.events.fetch_sub(1, Ordering::SeqCst);
        self.backlog.bytes.fetch_sub(frame.len(), Ordering::SeqCst);
        Some(frame)
    }
}

/// The publisher's end of one subscriber.
#[derive(Debug)]
struct Subscriber {
    sender: mpsc::UnboundedSender<Bytes>,
    backlog: Arc<Backlog>,
}

/// The events of one run.
#[derive(Debug)]
pub(crate) struct RunChannel {
    resumable: bool,
    /// How many events, and how many bytes, a subscriber may fall behind.
    buffer: usize,
    buffer_bytes: usize,
    max_log_bytes: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    log: std::collections::VecDeque<Logged>,
    log_bytes: usize,
    last_id: Option<EventId>,
    subscribers: Vec<Subscriber>,
    closed: bool,
    /// Whether the log has dropped an event (said once).
    dropped_any: bool,
}

impl RunChannel {
    /// A channel; `resumable` runs keep their events (at most
    /// `max_log_bytes`, the oldest dropped first) and give them ids. Each
    /// subscriber may fall `buffer` events and `buffer_bytes` bytes behind
    /// before it is dropped.
    pub(crate) fn new(
        resumable: bool,
        (buffer, buffer_bytes): (usize, usize),
        max_log_bytes: usize,
    ) -> Self {
        Self {
            resumable,
            buffer: buffer.max(1),
            buffer_bytes: buffer_bytes.max(1),
            max_log_bytes,
            inner: Mutex::default(),
        }
    }

    /// Whether anyone listens.
    pub(crate) fn has_subscribers(&self) -> bool {
        !self.inner().subscribers.is_empty()
    }

    /// Whether its events are kept for a replay.
    pub(crate) fn resumable(&self) -> bool {
        self.resumable
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        // Each critical section leaves the log and the list whole.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends an event to every subscriber. A subscriber whose backlog is
    /// full is dropped, marked lagged (its response ends as an error; the
    /// official SDKs then reconnect with their last id): the run never
    /// waits for a reader.
    pub(crate) fn publish(&self, name: &str, data: &[u8]) {
        let mut inner = self.inner();
        if inner.closed {
            return;
        }
        let id = self.resumable.then(|| {
            let now = u64::try_from(chrono::Utc::now().timestamp_millis()).unwrap_or(0);
            let id = EventId::next(inner.last_id, now);
            inner.last_id = Some(id);
            id
        });
        let frame = frame(name, data, id);
        let (buffer, buffer_bytes) = (self.buffer, self.buffer_bytes);
        inner.subscribers.retain(|subscriber| {
            let backlog = &subscriber.backlog;
            let events = backlog.events.load(Ordering::SeqCst);
            let bytes = backlog.bytes.load(Ordering::SeqCst);
            if events + 1 > buffer || bytes + frame.len() > buffer_bytes {
                backlog.lagged.store(true, Ordering::SeqCst);
                return false;
            }
            backlog.events.fetch_add(1, Ordering::SeqCst);
            backlog.bytes.fetch_add(frame.len(), Ordering::SeqCst);
            // A reader gone: its response ended already.
            subscriber.sender.send(frame.clone()).is_ok()
        });
        if let Some(id) = id.filter(|_| self.resumable) {
            inner.log_bytes += frame.len();
            inner.log.push_back(Logged { id, frame });
            while inner.log_bytes > self.max_log_bytes {
                let Some(dropped) = inner.log.pop_front() else {
                    break;
                };
                inner.log_bytes -= dropped.frame.len();
                // Once per channel: a thread's long-lived stream drops its
                // oldest events all the time.
                if !inner.dropped_any {
                    inner.dropped_any = true;
                    tracing::warn!(event = %dropped.id, "stored events are over the limit; the oldest are dropped");
                }
            }
        }
    }

    /// A new subscriber, from `from`.
    pub(crate) fn subscribe(&self, from: StartAt) -> Subscription {
        let mut inner = self.inner();
        let replay = match from {
            StartAt::Now => Vec::new(),
            StartAt::Start => inner.log.iter().map(|e| e.frame.clone()).collect(),
            StartAt::After(after) => inner
                .log
                .iter()
                .filter(|e| e.id > after)
                .map(|e| e.frame.clone())
                .collect(),
        };
        let live = (!inner.closed).then(|| {
            let (sender, receiver) = mpsc::unbounded_channel();
            let backlog = Arc::new(Backlog::default());
            inner.subscribers.push(Subscriber {
                sender,
                backlog: Arc::clone(&backlog),
            });
            Live { receiver, backlog }
        });
        Subscription { replay, live }
    }

    /// The run has ended: subscribers' responses end after what they have.
    pub(crate) fn close(&self) {
        let mut inner = self.inner();
        inner.closed = true;
        inner.subscribers.clear();
    }
}

/// An SSE frame (CRLF line ends, as the official server writes them).
fn frame(name: &str, data: &[u8], id: Option<EventId>) -> Bytes {
    let mut out = Vec::with_capacity(name.len() + data.len() + 40);
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\r\ndata: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    if let Some(id) = id {
        out.extend_from_slice(format!("id: {id}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_increase_within_a_millisecond_and_compare_as_numbers() {
        let first = EventId::next(None, 1_000);
        let second = EventId::next(Some(first), 1_000);
        let third = EventId::next(Some(second), 999);
        assert_eq!(
            [first.to_string(), second.to_string(), third.to_string()],
            ["1000-0", "1000-1", "1000-2"]
        );
        let ten = EventId { ms: 5, seq: 10 };
        let two = EventId { ms: 5, seq: 2 };
        assert!(ten > two, "numerically, not as strings");
        assert_eq!(
            EventId::parse("1795313733813-0"),
            Some(EventId {
                ms: 1_795_313_733_813,
                seq: 0
            })
        );
        assert_eq!(StartAt::header(Some("-1")), StartAt::Start);
        assert_eq!(StartAt::header(None), StartAt::Now);
    }

    #[test]
    fn frames_are_the_official_bytes() {
        let id = EventId {
            ms: 1_795_313_733_811,
            seq: 0,
        };
        assert_eq!(
            &frame("metadata", br#"{"run_id":"r","attempt":1}"#, Some(id))[..],
            b"event: metadata\r\ndata: {\"run_id\":\"r\",\"attempt\":1}\r\nid: 1795313733811-0\r\n\r\n"
        );
        assert_eq!(
            &frame("values", b"{}", None)[..],
            b"event: values\r\ndata: {}\r\n\r\n"
        );
    }

    #[tokio::test]
    async fn a_join_replays_what_it_missed_then_follows() {
        let channel = RunChannel::new(true, (8, 1 << 20), 1 << 20);
        channel.publish("a", b"1");
        channel.publish("b", b"2");
        let all = channel.subscribe(StartAt::Start);
        assert_eq!(all.replay.len(), 2);
        let first_id = {
            let text = String::from_utf8(all.replay[0].to_vec()).unwrap_or_default();
            let id = text
                .split("id: ")
                .nth(1)
                .unwrap_or_default()
                .trim()
                .to_owned();
            EventId::parse(&id)
        };
        let after = channel.subscribe(StartAt::After(
            first_id.unwrap_or(EventId { ms: 0, seq: 0 }),
        ));
        assert_eq!(after.replay.len(), 1);
        let mut tail = channel.subscribe(StartAt::Now);
        assert!(tail.replay.is_empty());
        channel.publish("c", b"3");
        channel.close();
        let live = tail.live.as_mut().map(Live::try_recv);
        assert!(matches!(live, Some(Some(frame)) if frame.starts_with(b"event: c")));
        assert!(
            channel.subscribe(StartAt::Start).live.is_none(),
            "closed: replay only"
        );
    }

    #[test]
    fn a_reader_that_falls_behind_is_dropped_and_the_run_goes_on() {
        let channel = RunChannel::new(false, (2, 1 << 20), 0);
        let slow = channel.subscribe(StartAt::Now);
        for _ in 0..5 {
            channel.publish("values", b"{}");
        }
        assert!(channel.inner().subscribers.is_empty());
        let mut live = slow.live.unwrap();
        let mut got = 0;
        while live.try_recv().is_some() {
            got += 1;
        }
        assert_eq!(got, 2, "what fit in its queue, then the end");
        assert!(live.lagged(), "dropped for falling behind, not at the end");

        // The byte bound: a big event counts for its size (a 40-byte event
        // is a 65-byte frame).
        let channel = RunChannel::new(false, (100, 100), 0);
        let mut reader = channel.subscribe(StartAt::Now).live.unwrap();
        channel.publish("values", &[b'x'; 40]);
        assert!(!reader.lagged());
        channel.publish("values", &[b'x'; 40]);
        assert!(reader.lagged(), "over 100 bytes behind");
        assert!(reader.try_recv().is_some());

        // A reader that keeps up is never dropped, whatever the total.
        let channel = RunChannel::new(false, (2, 1 << 20), 0);
        let mut keeping_up = channel.subscribe(StartAt::Now).live.unwrap();
        for _ in 0..10 {
            channel.publish("values", b"{}");
            assert!(keeping_up.try_recv().is_some());
        }
        channel.close();
        assert!(!keeping_up.lagged(), "ended with the run");
    }
}
