//! SSE run streams: `POST /threads/{id}/runs/stream`, stateless
//! `POST /runs/stream`, and the join `GET /threads/{id}/runs/{run_id}/stream`
//! with `Last-Event-ID` (API.md 7; TRANSCRIPTS.md sections 4, 11, 12, 16).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use axum::routing::{get, post};
use futures::StreamExt;

use super::caller::Caller;
use super::runs::{Accepted, accept, cancel_on_disconnect, locations, run_id};
use super::{ApiError, ApiState, thread_id, with_headers};
use crate::runs::events::{Live, StartAt, Subscription};
use crate::runs::manager::LiveRun;

pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/threads/{thread_id}/runs/stream", post(stream))
        .route(
            "/threads/{thread_id}/runs/{run_id}/stream",
            get(join_stream),
        )
        .route("/runs/stream", post(stream_stateless))
        .route("/threads/{thread_id}/stream", get(thread_stream))
}

/// The SSE comment the official server sends every heartbeat.
const HEARTBEAT: &[u8] = b": heartbeat\r\n\r\n";

/// An SSE response: `events.replay`, then the live events until the run
/// ends, with a heartbeat comment every `heartbeat` (the first one
/// heartbeat after the start, as the official server). `cancel`: the run
/// to cancel if the client goes before it ends. `keep`: which events a
/// thread's stream shows (all when `None`). A reader dropped for falling
/// behind gets its response cut (an error, not a clean end), so the SDKs
/// reconnect with their last event id rather than take the stream as whole.
fn sse(
    shutdown: &tokio_util::sync::CancellationToken,
    events: Subscription,
    heartbeat: Duration,
    cancel: Option<Arc<LiveRun>>,
    keep: Option<ThreadModes>,
    locations: impl IntoIterator<Item = (&'static str, HeaderValue)>,
) -> Response {
    /// The body's state; cancels the run when dropped early, if asked.
    struct Feed {
        replay: std::vec::IntoIter<Bytes>,
        live: Option<Live>,
        ticks: tokio::time::Interval,
        cancel: Option<Arc<LiveRun>>,
        keep: Option<ThreadModes>,
        shutdown: tokio_util::sync::CancellationToken,
    }
    impl Drop for Feed {
        fn drop(&mut self) {
            if let Some(run) = &self.cancel
                && !run.ended()
            {
                run.cancel.cancel();
            }
        }
    }
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // A thread's stream shows the same modes in its replay as live.
    let replay: Vec<Bytes> = events
        .replay
        .into_iter()
        .filter(|frame| keep.is_none_or(|keep| keep.shows(frame)))
        .collect();
    let feed = Feed {
        replay: replay.into_iter(),
        live: events.live,
        ticks,
        cancel,
        keep,
        shutdown: shutdown.clone(),
    };
    let body = futures::stream::unfold(feed, |mut feed| async move {
        if let Some(frame) = feed.replay.next() {
            return Some((Ok::<_, std::io::Error>(frame), feed));
        }
        loop {
            let live = feed.live.as_mut()?;
            tokio::select! {
                biased;
                frame = live.recv() => match frame {
                    Some(frame) if feed.keep.is_none_or(|keep| keep.shows(&frame)) => {
                        return Some((Ok(frame), feed));
                    }
                    Some(_) => {}
                    None if live.lagged() => {
                        // Cut, not ended: the client is to reconnect, so
                        // neither is the run cancelled.
                        feed.live = None;
                        drop(feed.cancel.take());
                        let lagged = std::io::Error::other("the client fell behind the stream");
                        return Some((Err(lagged), feed));
                    }
                    None => return None,
                },
                () = feed.shutdown.cancelled() => {
                    // The server stops: the stream ends, the run does not
                    // (the client reconnects to the next server, which goes
                    // on with it).
                    drop(feed.cancel.take());
                    return None;
                }
                _ = feed.ticks.tick() => return Some((Ok(Bytes::from_static(HEARTBEAT)), feed)),
            }
        }
    });
    let headers = [
        (header::CONTENT_TYPE, "text/event-stream; charset=utf-8"),
        (header::CACHE_CONTROL, "no-store"),
        (header::HeaderName::from_static("x-accel-buffering"), "no"),
    ];
    with_headers((headers, Body::from_stream(body.boxed())), locations)
}

/// `POST /threads/{id}/runs/stream`: a run, streamed as it executes.
async fn stream(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let accepted = accept(&state, &caller, &body, Some(thread_id(&raw_id)?), true).await?;
    let base = format!(
        "/threads/{}/runs/{}",
        accepted.thread_id, accepted.submitted.run.run_id
    );
    Ok(streamed(&state, accepted, &base))
}

/// `POST /runs/stream`: a run on a temporary thread, streamed.
async fn stream_stateless(
    State(state): State<ApiState>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let accepted = accept(&state, &caller, &body, None, true).await?;
    let base = format!("/runs/{}", accepted.submitted.run.run_id);
    Ok(streamed(&state, accepted, &base))
}

/// The SSE answer of a run just accepted, at `base` (its path).
fn streamed(state: &ApiState, accepted: Accepted, base: &str) -> Response {
    let Accepted {
        submitted,
        cancel_on_disconnect,
        ..
    } = accepted;
    let live = submitted.live;
    let events = submitted
        .events
        .unwrap_or_else(|| live.events.subscribe(StartAt::Now));
    let cancel = cancel_on_disconnect.then_some(live);
    sse(
        &state.runs.shutdown,
        events,
        state.settings.streams.heartbeat(),
        cancel,
        None,
        locations(base, "/stream"),
    )
}

/// `GET /threads/{id}/runs/{run_id}/stream`: joins a run's events: with
/// `Last-Event-ID` the stored ones after it first (`-1`: all), else the
/// live tail. A run that ended here gives an empty stream; an unknown run
/// an `error` event, as the official server answers.
async fn join_stream(
    State(state): State<ApiState>,
    caller: Caller,
    Path((raw_thread, raw_run)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (thread_id, run_id) = (thread_id(&raw_thread)?, run_id(&raw_run)?);
    super::threads::guard(&state, &caller, &thread_id, crate::auth::Action::Read).await?;
    let cancel = cancel_on_disconnect(query.as_deref())?;
    let last_event_id = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok());
    let locations = locations(&format!("/threads/{thread_id}/runs/{run_id}"), "/stream");
    let heartbeat = state.settings.streams.heartbeat();
    if let Some(live) = state.runs.live(&run_id)
        && live.thread_id == thread_id
    {
        let events = live.events.subscribe(StartAt::header(last_event_id));
        let cancel = cancel.then_some(live);
        return Ok(sse(
            &state.runs.shutdown,
            events,
            heartbeat,
            cancel,
            None,
            locations,
        ));
    }
    let replay = if state
        .repository
        .get_run(&thread_id, &run_id)
        .await?
        .is_some()
    {
        Vec::new()
    } else {
        let frame = b"event: error\r\ndata: {\"error\":\"HTTPException\",\"message\":\"404: Run not found\"}\r\n\r\n";
        vec![Bytes::from_static(frame)]
    };
    let events = Subscription { replay, live: None };
    Ok(sse(
        &state.runs.shutdown,
        events,
        heartbeat,
        None,
        None,
        locations,
    ))
}

/// What a thread's stream shows (`?stream_modes=a,b`; `run_modes` when
/// not given).
#[derive(Clone, Copy, Debug, Default)]
struct ThreadModes {
    /// Every run's events.
    run_modes: bool,
    /// Each run's start and end `metadata` only.
    lifecycle: bool,
    /// `state_update` events of state updates.
    state_update: bool,
}

impl ThreadModes {
    /// From the query string.
    ///
    /// # Errors
    /// 422 `Invalid stream mode: …` (the official text).
    fn parse(query: Option<&str>) -> Result<Self, ApiError> {
        let pairs = super::runs::query_pairs(query)?;
        let Some((_, given)) = pairs.iter().find(|(key, _)| key == "stream_modes") else {
            return Ok(Self {
                run_modes: true,
                ..Self::default()
            });
        };
        let mut modes = Self::default();
        for mode in given.split(',').map(str::trim) {
            match mode {
                "run_modes" => modes.run_modes = true,
                "lifecycle" => modes.lifecycle = true,
                "state_update" => modes.state_update = true,
                other => return Err(ApiError::invalid(format!("Invalid stream mode: {other}"))),
            }
        }
        Ok(modes)
    }

    /// Whether an event (its frame) is shown, as the official server
    /// filters: runs' events for `run_modes`, updates for `state_update`,
    /// a run's start and `run_done` metadata for `lifecycle`.
    fn shows(self, frame: &[u8]) -> bool {
        let Some((name, data)) = parse_frame(frame) else {
            return false;
        };
        if self.run_modes && name != "state_update" {
            return true;
        }
        if self.state_update && name == "state_update" {
            return true;
        }
        if self.lifecycle && name == "metadata" {
            let data: serde_json::Value = serde_json::from_slice(data).unwrap_or_default();
            return data["status"] == "run_done"
                || (data.get("attempt").is_some() && data.get("run_id").is_some());
        }
        false
    }
}

/// The name and data of an SSE frame this server wrote.
fn parse_frame(frame: &[u8]) -> Option<(&str, &[u8])> {
    let rest = frame.strip_prefix(b"event: ")?;
    let end = rest.iter().position(|b| *b == b'\r')?;
    let name = std::str::from_utf8(&rest[..end]).ok()?;
    let rest = rest[end..].strip_prefix(b"\r\ndata: ")?;
    let end = rest.iter().position(|b| *b == b'\r')?;
    Some((name, &rest[..end]))
}

/// `GET /threads/{id}/stream?stream_modes=`: follows a thread across its
/// runs (API.md 7.8): each run's `metadata` and events, then `metadata
/// {"status": "run_done"}`, and `state_update`s, every event with an id;
/// heartbeats between. The events are kept (up to `streams.run_log_max_bytes`)
/// while the thread is followed and `streams.resumable_ttl_seconds` after
/// its last follower left: a reconnect with `Last-Event-ID` gets the ones
/// after that id first (`-1`: all kept), one without it the live tail. The
/// stream ends when the thread is deleted.
async fn thread_stream(
    State(state): State<ApiState>,
    caller: Caller,
    Path(raw_id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let thread_id = thread_id(&raw_id)?;
    super::threads::find(&state, &caller, &thread_id, crate::auth::Action::Read).await?;
    let modes = ThreadModes::parse(query.as_deref())?;
    let last_event_id = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok());
    let streams = &state.settings.streams;
    let events = state.runs.follow_thread(
        &thread_id,
        streams.subscriber_bounds(),
        streams.run_log_max_bytes,
        StartAt::header(last_event_id),
    );
    Ok(sse(
        &state.runs.shutdown,
        events,
        state.settings.streams.heartbeat(),
        None,
        Some(modes),
        [],
    ))
}
