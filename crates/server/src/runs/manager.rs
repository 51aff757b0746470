//! One run per thread: each thread's gate (the run executing and the runs
//! queued behind it), the runs alive in this process, and the limit on
//! runs executing at once.

use std::collections::{HashMap, VecDeque};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use serde_json::{Map, Value};
use tokio::sync::{OwnedMutexGuard, Semaphore, watch};
use tokio_util::sync::CancellationToken;

use super::events::{RunChannel, StartAt, Subscription};
use super::request::{IfNotExists, RunCreate, RunRequest};
use super::{MultitaskStrategy, Run, RunStatus};
use crate::api::ApiError;
use crate::server::Core;
use crate::threads::{Thread, ThreadPatch, ThreadStatus};

/// What a thread's gate guards: the run executing on the thread and the
/// runs queued behind it, in order.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    pub(crate) running: Option<String>,
    pub(crate) pending: VecDeque<String>,
}

impl Gate {
    /// A run is executing or queued.
    pub(crate) fn busy(&self) -> bool {
        self.running.is_some() || !self.pending.is_empty()
    }
}

/// The runs of this process.
#[derive(Debug)]
pub(crate) struct RunManager {
    // A gate per thread with runs; a gate is dropped from the map once idle
    // and held by no one (see `GateGuard::drop`). Clones of a gate are made
    // only under this lock.
    gates: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Gate>>>>,
    live: Mutex<HashMap<String, Arc<LiveRun>>>,
    permits: Arc<Semaphore>,
    /// The streams of threads someone follows (`GET /threads/{id}/stream`),
    /// by thread; a stream is kept `retention` after its last follower left,
    /// so a reconnect with `Last-Event-ID` replays what it missed.
    threads: Mutex<ThreadFeeds>,
    /// How many threads are followed (`threads.len()`), read without the
    /// lock: runs publish each event here, and usually no one follows.
    followed: std::sync::atomic::AtomicUsize,
    /// Runs executing now (`exec::execute` holds one [`Executing`] each).
    executing: std::sync::atomic::AtomicUsize,
    /// Told whenever a run stops executing.
    stopped: tokio::sync::Notify,
    /// Set on shutdown: no queued run starts any more.
    closing: AtomicBool,
    /// Fired on shutdown: open streams end.
    pub(crate) shutdown: CancellationToken,
    retention: Duration,
}

/// One thread's stream: its events (kept, with ids, up to the run log's
/// limit) and when someone last followed it.
#[derive(Debug)]
struct ThreadFeed {
    channel: Arc<RunChannel>,
    followed_at: std::time::Instant,
}

impl ThreadFeed {
    /// Whether it is still wanted: followed, or left less than `retention`
    /// ago.
    fn wanted(&mut self, retention: Duration) -> bool {
        if self.channel.has_subscribers() {
            self.followed_at = std::time::Instant::now();
            return true;
        }
        self.followed_at.elapsed() < retention
    }
}

/// The thread streams, by thread, and when the unwanted ones last went.
#[derive(Debug)]
struct ThreadFeeds {
    feeds: HashMap<String, ThreadFeed>,
    pruned_at: std::time::Instant,
}

impl ThreadFeeds {
    /// Forgets the streams no longer wanted (see [`ThreadFeed::wanted`]).
    fn prune(&mut self, retention: Duration) {
        self.feeds.retain(|_, feed| feed.wanted(retention));
        self.pruned_at = std::time::Instant::now();
    }
}

/// A run alive in this process: pending, executing, or ended less than the
/// retention time ago.
#[derive(Debug)]
pub(crate) struct LiveRun {
    pub(crate) thread_id: String,
    /// When it may start (`after_seconds` after it was asked for).
    pub(crate) starts_at: chrono::DateTime<chrono::Utc>,
    /// Fired to cancel the run.
    pub(crate) cancel: CancellationToken,
    /// Its events, for SSE clients.
    pub(crate) events: RunChannel,
    /// Set with `cancel` when the run is to be rolled back: deleted with
    /// its checkpoints rather than kept `interrupted`.
    pub(crate) rollback: AtomicBool,
    /// Set with `cancel` when the server stops before the run ends: its
    /// records are left as they are (`running`), for the next server.
    pub(crate) abandoned: AtomicBool,
    // The body `wait` and `join` answer, set once when the run ends.
    outcome: watch::Sender<Option<Bytes>>,
}

impl LiveRun {
    /// The body `wait` and `join` answer, once the run has ended.
    pub(crate) async fn outcome(&self) -> Bytes {
        let mut receiver = self.outcome.subscribe();
        match receiver.wait_for(Option::is_some).await {
            Ok(body) => body.clone().unwrap_or_default(),
            // The sender lives as long as `self`.
            Err(_) => Bytes::from_static(b"{}"),
        }
    }

    /// Whether the run has ended.
    pub(crate) fn ended(&self) -> bool {
        self.outcome.borrow().is_some()
    }

    pub(super) fn finish(&self, body: Bytes) {
        self.outcome.send_replace(Some(body));
    }
}

/// A run accepted: its record, its live handle, and (when asked for) a
/// subscription to its events taken before it could start.
pub(crate) struct Submitted {
    pub(crate) run: Run,
    pub(crate) live: Arc<LiveRun>,
    pub(crate) events: Option<Subscription>,
}

/// A thread's gate, locked; when dropped idle, the gate leaves the map.
pub(crate) struct GateGuard<'a> {
    manager: &'a RunManager,
    thread_id: String,
    guard: OwnedMutexGuard<Gate>,
}

impl Deref for GateGuard<'_> {
    type Target = Gate;
    fn deref(&self) -> &Gate {
        &self.guard
    }
}

impl DerefMut for GateGuard<'_> {
    fn deref_mut(&mut self) -> &mut Gate {
        &mut self.guard
    }
}

impl Drop for GateGuard<'_> {
    fn drop(&mut self) {
        if self.guard.busy() {
            return;
        }
        let mut gates = lock(&self.manager.gates);
        let ours = OwnedMutexGuard::mutex(&self.guard);
        // Held by the map and this guard alone: no one waits for it, and
        // no one can get it without the map's lock, held here.
        if gates
            .get(&self.thread_id)
            .is_some_and(|gate| Arc::ptr_eq(gate, ours) && Arc::strong_count(gate) == 2)
        {
            gates.remove(&self.thread_id);
        }
    }
}

/// A run executing; dropping it says the run stopped.
pub(super) struct Executing(Arc<RunManager>);

impl Drop for Executing {
    fn drop(&mut self) {
        self.0.executing.fetch_sub(1, Ordering::SeqCst);
        self.0.stopped.notify_waiters();
    }
}

/// A lock's data even after a panic elsewhere (each critical section here
/// is a single insert or removal).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl RunManager {
    /// At most `max_concurrent` runs execute at once; an ended run stays
    /// joinable for `retention`.
    pub(crate) fn new(max_concurrent: usize, retention: Duration) -> Self {
        Self {
            gates: Mutex::default(),
            live: Mutex::default(),
            permits: Arc::new(Semaphore::new(max_concurrent.max(1))),
            threads: Mutex::new(ThreadFeeds {
                feeds: HashMap::new(),
                pruned_at: std::time::Instant::now(),
            }),
            followed: std::sync::atomic::AtomicUsize::new(0),
            executing: std::sync::atomic::AtomicUsize::new(0),
            stopped: tokio::sync::Notify::new(),
            closing: AtomicBool::new(false),
            shutdown: CancellationToken::new(),
            retention,
        }
    }

    /// Locks a thread's gate (waits for whoever holds it).
    pub(crate) async fn gate(&self, thread_id: &str) -> GateGuard<'_> {
        let gate = lock(&self.gates)
            .entry(thread_id.to_owned())
            .or_default()
            .clone();
        GateGuard {
            manager: self,
            thread_id: thread_id.to_owned(),
            guard: gate.lock_owned().await,
        }
    }

    /// Follows a thread's stream: the events of every run on it (and its
    /// `state_update`s), each with an id, from `from` (the live tail, or
    /// after a `Last-Event-ID` the stream kept since its last follower
    /// left). Streams no longer wanted are forgotten here.
    pub(crate) fn follow_thread(
        &self,
        thread_id: &str,
        bounds: (usize, usize),
        max_log_bytes: usize,
        from: StartAt,
    ) -> Subscription {
        let mut threads = lock(&self.threads);
        threads.prune(self.retention);
        let feed = threads
            .feeds
            .entry(thread_id.to_owned())
            .or_insert_with(|| ThreadFeed {
                channel: Arc::new(RunChannel::new(true, bounds, max_log_bytes)),
                followed_at: std::time::Instant::now(),
            });
        feed.followed_at = std::time::Instant::now();
        let subscription = feed.channel.subscribe(from);
        self.followed.store(threads.feeds.len(), Ordering::SeqCst);
        subscription
    }

    /// Whether someone follows the thread's stream (or may come back to it).
    pub(crate) fn thread_followed(&self, thread_id: &str) -> bool {
        lock(&self.threads).feeds.contains_key(thread_id)
    }

    /// Sends an event to the thread's stream, if it has one; forgets the
    /// stream once it is no longer wanted.
    pub(crate) fn publish_to_thread(&self, thread_id: &str, name: &str, data: &[u8]) {
        if self.followed.load(Ordering::SeqCst) == 0 {
            return;
        }
        let mut threads = lock(&self.threads);
        // Now and then, the streams left longer than the retention ago go
        // (a quiet thread's stream would otherwise wait for a follower);
        // this thread's is checked now.
        if threads.pruned_at.elapsed() >= Duration::from_secs(1) {
            threads.prune(self.retention);
            self.followed.store(threads.feeds.len(), Ordering::SeqCst);
        }
        let Some(feed) = threads.feeds.get_mut(thread_id) else {
            return;
        };
        if feed.wanted(self.retention) {
            feed.channel.publish(name, data);
        } else {
            threads.feeds.remove(thread_id);
        }
        self.followed.store(threads.feeds.len(), Ordering::SeqCst);
    }

    /// Ends the thread's stream (the thread is being deleted).
    fn close_thread(&self, thread_id: &str) {
        let mut threads = lock(&self.threads);
        if let Some(feed) = threads.feeds.remove(thread_id) {
            feed.channel.close();
        }
        self.followed.store(threads.feeds.len(), Ordering::SeqCst);
    }

    /// Counts a run as executing until the guard is dropped.
    pub(super) fn executing(self: &Arc<Self>) -> Executing {
        self.executing.fetch_add(1, Ordering::SeqCst);
        Executing(Arc::clone(self))
    }

    /// Shutdown: open streams end, queued runs stay queued (in the
    /// records, for the next server), and the runs executing get up to
    /// `grace` to finish. Whether they all did.
    pub(crate) async fn drain(&self, grace: Duration) -> bool {
        self.closing.store(true, Ordering::SeqCst);
        self.shutdown.cancel();
        if tokio::time::timeout(grace, self.idle()).await.is_ok() {
            return true;
        }
        // The rest stop here without a word in their records, which still
        // say `running`: the next server on the database takes them over.
        for run in lock(&self.live).values() {
            run.abandoned.store(true, Ordering::SeqCst);
            run.cancel.cancel();
        }
        // Cancelling ends a run at its next step or await.
        let _ = tokio::time::timeout(Duration::from_secs(5), self.idle()).await;
        false
    }

    /// Returns once no run executes.
    async fn idle(&self) {
        loop {
            let notified = self.stopped.notified();
            if self.executing.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }

    /// The live run with this id.
    pub(crate) fn live(&self, run_id: &str) -> Option<Arc<LiveRun>> {
        lock(&self.live).get(run_id).cloned()
    }

    /// A permit to execute (waits while `max_concurrent` runs execute).
    pub(super) async fn permit(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.permits.clone().acquire_owned().await.ok()
    }

    /// Forgets an ended run: at once, or after the retention time when its
    /// events are kept for a replay.
    pub(super) fn retire(self: &Arc<Self>, run_id: String, resumable: bool) {
        if !resumable {
            // Nothing to replay: a later join reads the records, as the
            // official server's does, and memory stays bounded by the runs
            // in flight.
            lock(&self.live).remove(&run_id);
            return;
        }
        let manager = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(manager.retention).await;
            lock(&manager.live).remove(&run_id);
        });
    }

    /// Cancels every run of a thread (it is being deleted): queued ones
    /// leave the queue, the executing one is told to stop.
    pub(crate) async fn cancel_thread(&self, thread_id: &str) {
        self.close_thread(thread_id);
        let mut gate = self.gate(thread_id).await;
        let queued: Vec<String> = gate.pending.drain(..).collect();
        let running = gate.running.clone();
        drop(gate);
        self.drop_queued(&queued);
        if let Some(run) = running.and_then(|id| self.live(&id)) {
            run.cancel.cancel();
        }
    }

    /// Tells the executing run `run_id` to stop, rolled back or not.
    fn stop(&self, run_id: &str, action: CancelAction) {
        if let Some(run) = self.live(run_id) {
            if action == CancelAction::Rollback {
                run.rollback.store(true, Ordering::SeqCst);
            }
            run.cancel.cancel();
        }
    }
    /// Forgets runs taken out of their queue before they started; whoever
    /// waits for them gets an empty answer.
    fn drop_queued(&self, run_ids: &[String]) {
        let mut live = lock(&self.live);
        for run_id in run_ids {
            if let Some(run) = live.remove(run_id) {
                run.cancel.cancel();
                run.events.close();
                run.finish(Bytes::from_static(b"{}"));
            }
        }
    }
}

/// A run request checked against the assistant it names.
///
/// # Errors
/// 422 for a request without an assistant or that names none; 404 `Thread
/// or assistant not found.` for an unknown one; what [`RunCreate::check`]
/// refuses.
pub(crate) async fn check(
    core: &Core,
    request: RunCreate,
    stateless: bool,
) -> Result<RunRequest, ApiError> {
    let assistant_id = core.resolve_assistant(request.assistant()?)?;
    let Some(assistant) = core.assistant(&assistant_id).await? else {
        return Err(ApiError::not_found("Thread or assistant not found."));
    };
    let request = request.check(assistant, stateless)?;
    if let Some(url) = request.webhook() {
        crate::webhooks::check(url, &core.settings.webhooks).await?;
    }
    Ok(request)
}

/// Accepts a run: on `thread_id` (created first when the request or a
/// stateless route says so), under the thread's gate, so the multitask
/// check and the insert are one step: ten concurrent `reject` runs on an
/// idle thread give one run and nine 409s. `subscribe`: the caller streams
/// the run, so it subscribes to the events before the run can start.
///
/// # Errors
/// 404 `Thread or assistant not found.` for a missing thread; 409 for a
/// busy thread under `reject`; 500 for the repository.
pub(crate) async fn submit(
    core: &Arc<Core>,
    request: RunRequest,
    thread_id: &str,
    stateless: bool,
    subscribe: bool,
) -> Result<Submitted, ApiError> {
    let manager = &core.runs;
    let mut gate = manager.gate(thread_id).await;
    let assistant = &request.assistant;
    let mut owner = Map::new();
    owner.insert("graph_id".into(), Value::String(assistant.graph_id.clone()));
    owner.insert(
        "assistant_id".into(),
        Value::String(assistant.assistant_id.clone()),
    );
    let now = chrono::Utc::now();
    // The thread's metadata and config when it was there before this run.
    let (existing, thread_config) = match core.repository.get_thread(thread_id).await? {
        Some(thread) => {
            let mut metadata = thread.metadata;
            metadata.extend(owner.clone());
            (Some(metadata), Some(thread.config))
        }
        None if stateless || request.if_not_exists == IfNotExists::Create => {
            let mut metadata = owner.clone();
            metadata.extend(request.new_thread_metadata());
            let mut thread = Thread::new(thread_id.to_owned(), metadata, now);
            thread.status = ThreadStatus::Busy;
            thread.ttl = crate::threads::ThreadTtl::default_of(&core.settings.threads, now);
            core.repository.insert_thread(thread).await?;
            (None, None)
        }
        None => return Err(ApiError::not_found("Thread or assistant not found.")),
    };
    match request.multitask_strategy {
        MultitaskStrategy::Reject if gate.busy() => {
            return Err(ApiError::conflict(
                "Thread is already running a task. Wait for it to finish or choose a different multitask strategy.",
            ));
        }
        // The runs in flight give way; the new one queues behind the one
        // still stopping.
        strategy @ (MultitaskStrategy::Interrupt | MultitaskStrategy::Rollback) => {
            let action = if strategy == MultitaskStrategy::Rollback {
                CancelAction::Rollback
            } else {
                CancelAction::Interrupt
            };
            let in_flight: Vec<String> =
                gate.running.iter().chain(&gate.pending).cloned().collect();
            for run_id in in_flight {
                cancel_under_gate(core, &mut gate, thread_id, &run_id, action).await?;
            }
        }
        MultitaskStrategy::Reject | MultitaskStrategy::Enqueue => {}
    }
    let config = request.thread_config(thread_config.as_ref());
    let run = request.into_run(
        crate::wire::time_ordered_id(),
        thread_id,
        existing.as_ref(),
        now,
    );
    core.repository.insert_run(run.clone()).await?;
    let patch = ThreadPatch {
        metadata: Some(owner),
        status: Some(ThreadStatus::Busy),
        config: Some(config),
        ..ThreadPatch::default()
    };
    core.repository.patch_thread(thread_id, patch).await?;
    let live = go_live(core, &run);
    let events = subscribe.then(|| live.events.subscribe(StartAt::Now));
    gate.pending.push_back(run.run_id.clone());
    start_next(core, thread_id, &mut gate);
    Ok(Submitted { run, live, events })
}

/// How a cancelled run ends (API.md 5.1, `action`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CancelAction {
    /// `interrupted`, its progress kept (the default).
    #[default]
    Interrupt,
    /// Deleted, with the checkpoints it saved.
    Rollback,
}

/// Cancels a run of `thread_id`: one still queued leaves the queue (its
/// record `interrupted`, or deleted for a rollback); the executing one is
/// told to stop and ends so in `exec`. Whether the run was in flight here.
///
/// # Errors
/// The repository's.
pub(crate) async fn cancel(
    core: &Core,
    thread_id: &str,
    run_id: &str,
    action: CancelAction,
) -> Result<bool, ApiError> {
    let mut gate = core.runs.gate(thread_id).await;
    cancel_under_gate(core, &mut gate, thread_id, run_id, action).await
}

/// Cancels (`interrupt`) every run of the assistant in flight: what
/// deleting an assistant does first.
///
/// # Errors
/// The repository's.
pub(crate) async fn cancel_assistant_runs(core: &Core, assistant_id: &str) -> Result<(), ApiError> {
    for run in core.repository.in_flight_runs().await? {
        if run.assistant_id == assistant_id {
            cancel(core, &run.thread_id, &run.run_id, CancelAction::Interrupt).await?;
        }
    }
    Ok(())
}

/// [`cancel`] with the thread's gate already held.
async fn cancel_under_gate(
    core: &Core,
    gate: &mut Gate,
    thread_id: &str,
    run_id: &str,
    action: CancelAction,
) -> Result<bool, ApiError> {
    if gate.running.as_deref() == Some(run_id) {
        core.runs.stop(run_id, action);
        return Ok(true);
    }
    let Some(index) = gate.pending.iter().position(|id| id == run_id) else {
        return Ok(false);
    };
    gate.pending.remove(index);
    match action {
        CancelAction::Rollback => {
            core.repository.delete_run(thread_id, run_id).await?;
        }
        CancelAction::Interrupt => {
            if let Some(mut run) = core.repository.get_run(thread_id, run_id).await? {
                run.status = RunStatus::Interrupted;
                run.updated_at = chrono::Utc::now();
                core.repository.replace_run(run).await?;
            }
        }
    }
    core.runs.drop_queued(&[run_id.to_owned()]);
    Ok(true)
}

/// Registers `run` as live in this process: cancellable, streamed, awaited.
fn go_live(core: &Core, run: &Run) -> Arc<LiveRun> {
    let streams = &core.settings.streams;
    let live = Arc::new(LiveRun {
        thread_id: run.thread_id.clone(),
        starts_at: run.created_at,
        cancel: CancellationToken::new(),
        events: RunChannel::new(
            run.kwargs.resumable,
            streams.subscriber_bounds(),
            streams.run_log_max_bytes,
        ),
        outcome: watch::Sender::new(None),
        rollback: AtomicBool::new(false),
        abandoned: AtomicBool::new(false),
    });
    lock(&core.runs.live).insert(run.run_id.clone(), Arc::clone(&live));
    live
}

/// Takes over the runs a server left in flight on this database when it
/// stopped: each queues again on its thread, in the order it was created.
/// A run that was running starts its next attempt, from the last
/// checkpoint it saved (`exec`); one that was pending starts as if nothing
/// happened. Returns how many it took over.
///
/// # Errors
/// The repository's.
pub(crate) async fn recover(core: &Arc<Core>) -> Result<usize, crate::persist::PersistError> {
    let runs = core.repository.in_flight_runs().await?;
    for mut run in runs.iter().cloned() {
        let mut gate = core.runs.gate(&run.thread_id).await;
        if run.status == RunStatus::Running {
            run.status = RunStatus::Pending;
            run.updated_at = chrono::Utc::now();
            core.repository.replace_run(run.clone()).await?;
        }
        go_live(core, &run);
        tracing::info!(run_id = %run.run_id, thread_id = %run.thread_id, "a run left in flight is queued again");
        gate.pending.push_back(run.run_id.clone());
        let thread_id = run.thread_id.clone();
        start_next(core, &thread_id, &mut gate);
    }
    Ok(runs.len())
}

/// Starts the thread's next queued run, unless one is executing.
pub(super) fn start_next(core: &Arc<Core>, thread_id: &str, gate: &mut Gate) {
    if gate.running.is_some() || core.runs.closing.load(Ordering::SeqCst) {
        return;
    }
    if let Some(run_id) = gate.pending.pop_front() {
        gate.running = Some(run_id.clone());
        tokio::spawn(super::exec::execute(
            Arc::clone(core),
            thread_id.to_owned(),
            run_id,
        ));
    }
}
