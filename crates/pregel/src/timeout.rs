//! Node timeouts (LangGraph's `TimeoutPolicy`): a hard cap on one attempt's
//! run time, and a cap on the time it may go without showing progress.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

// Tokio's clock (the real one outside tests), so paused-time tests work.
use tokio::time::Instant;

use crate::error::NodeError;

/// The error class of a timed-out attempt (LangGraph's `NodeTimeoutError`).
/// The default retry policy retries it.
pub const NODE_TIMEOUT_ERROR: &str = "NodeTimeoutError";

/// What counts as progress for an idle timeout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefreshOn {
    /// Heartbeats and the node's `custom` stream writes (LangGraph's
    /// `"auto"`).
    #[default]
    Auto,
    /// Only [`TaskContext::heartbeat`](crate::TaskContext::heartbeat).
    Heartbeat,
}

/// How long one attempt of a node may take (LangGraph's `TimeoutPolicy`).
/// A timed-out attempt is cancelled (its future is dropped) and fails with
/// a [`NODE_TIMEOUT_ERROR`], which retry policies see like any failure.
///
/// A [`Duration`] converts into a run timeout.
///
/// ```
/// use std::time::Duration;
/// use stategraph_pregel::{RefreshOn, TimeoutPolicy};
///
/// let hard = TimeoutPolicy::from(Duration::from_secs(30));
/// assert_eq!(hard.run_timeout, Some(Duration::from_secs(30)));
/// let idle = TimeoutPolicy::idle(Duration::from_secs(5)).with_refresh_on(RefreshOn::Heartbeat);
/// assert_eq!(idle.idle_timeout, Some(Duration::from_secs(5)));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TimeoutPolicy {
    /// The most one attempt may take, progress or not.
    pub run_timeout: Option<Duration>,
    /// The most one attempt may go without progress.
    pub idle_timeout: Option<Duration>,
    /// What refreshes the idle timeout.
    pub refresh_on: RefreshOn,
}

impl TimeoutPolicy {
    /// A hard cap on each attempt.
    pub fn run(limit: Duration) -> Self {
        Self {
            run_timeout: Some(limit),
            ..Self::default()
        }
    }

    /// A cap on the time an attempt may go without progress.
    pub fn idle(limit: Duration) -> Self {
        Self {
            idle_timeout: Some(limit),
            ..Self::default()
        }
    }

    /// Adds a hard cap on each attempt.
    #[must_use]
    pub fn with_run_timeout(mut self, limit: Duration) -> Self {
        self.run_timeout = Some(limit);
        self
    }

    /// Adds a cap on the time without progress.
    #[must_use]
    pub fn with_idle_timeout(mut self, limit: Duration) -> Self {
        self.idle_timeout = Some(limit);
        self
    }

    /// Sets what refreshes the idle timeout.
    #[must_use]
    pub fn with_refresh_on(mut self, refresh_on: RefreshOn) -> Self {
        self.refresh_on = refresh_on;
        self
    }

    /// Why the policy cannot be used, if it cannot: a zero timeout (LangGraph
    /// asks for positive seconds).
    pub fn problem(&self) -> Option<&'static str> {
        if self.run_timeout.is_some_and(|d| d.is_zero()) {
            Some("run_timeout must be positive")
        } else if self.idle_timeout.is_some_and(|d| d.is_zero()) {
            Some("idle_timeout must be positive")
        } else {
            None
        }
    }
}

impl From<Duration> for TimeoutPolicy {
    fn from(limit: Duration) -> Self {
        Self::run(limit)
    }
}

/// The last sign of progress of an attempt with an idle timeout.
#[derive(Debug)]
pub(crate) struct Progress {
    started: Instant,
    // Nanoseconds after `started`.
    last: AtomicU64,
    pub(crate) refresh_on: RefreshOn,
}

impl Progress {
    fn new(refresh_on: RefreshOn) -> Self {
        Self {
            started: Instant::now(),
            last: AtomicU64::new(0),
            refresh_on,
        }
    }

    pub(crate) fn beat(&self) {
        let nanos = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last.fetch_max(nanos, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.started + Duration::from_nanos(self.last.load(Ordering::Relaxed))
    }
}

/// Runs one attempt, started with its progress tracker, under `policy`:
/// its output, or a [`NODE_TIMEOUT_ERROR`] once a limit passes (the attempt
/// is dropped).
pub(crate) async fn attempt<T, Fut>(
    node: &str,
    policy: &TimeoutPolicy,
    run: impl FnOnce(Option<Arc<Progress>>) -> Fut,
) -> Result<T, NodeError>
where
    Fut: std::future::Future<Output = Result<T, NodeError>>,
{
    let started = Instant::now();
    let progress = policy
        .idle_timeout
        .map(|_| Arc::new(Progress::new(policy.refresh_on)));
    let mut work = std::pin::pin!(run(progress.clone()));
    let hard_deadline = policy.run_timeout.map(|limit| started + limit);
    loop {
        let idle_deadline = match (&progress, policy.idle_timeout) {
            (Some(progress), Some(limit)) => Some(progress.last() + limit),
            _ => None,
        };
        let deadline = match (hard_deadline, idle_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let Some(deadline) = deadline else {
            return work.await;
        };
        match tokio::time::timeout_at(deadline, work.as_mut()).await {
            Ok(output) => return output,
            Err(_) => {
                let now = Instant::now();
                let elapsed = now - started;
                if hard_deadline.is_some_and(|d| now >= d) {
                    return Err(timed_out(node, "run", policy.run_timeout, elapsed));
                }
                let idle = idle_deadline.is_some_and(|d| now >= d)
                    && progress
                        .as_ref()
                        .zip(policy.idle_timeout)
                        .is_some_and(|(p, limit)| now >= p.last() + limit);
                if idle {
                    return Err(timed_out(node, "idle", policy.idle_timeout, elapsed));
                }
                // Progress moved the idle deadline: wait again.
            }
        }
    }
}

/// LangGraph's `NodeTimeoutError` message.
fn timed_out(node: &str, kind: &str, limit: Option<Duration>, elapsed: Duration) -> NodeError {
    let limit = limit.map_or(0.0, |d| d.as_secs_f64());
    let elapsed = elapsed.as_secs_f64();
    let message = if kind == "idle" {
        format!(
            "Node '{node}' exceeded its idle timeout of {limit:.3}s without making progress (elapsed: {elapsed:.3}s)."
        )
    } else {
        format!("Node '{node}' exceeded its run timeout of {limit:.3}s (elapsed: {elapsed:.3}s).")
    };
    NodeError::new(NODE_TIMEOUT_ERROR, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sleeper(
        ms: u64,
        beats: u32,
    ) -> impl FnOnce(Option<Arc<Progress>>) -> futures::future::BoxFuture<'static, Result<u32, NodeError>>
    {
        move |progress| {
            Box::pin(async move {
                for _ in 0..beats {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    if let Some(progress) = &progress {
                        progress.beat();
                    }
                }
                Ok(beats)
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_run_timeout_cancels_the_attempt() {
        let policy = TimeoutPolicy::run(Duration::from_millis(100));
        let err = attempt("slow", &policy, sleeper(300, 1)).await.unwrap_err();
        assert_eq!(err.class(), NODE_TIMEOUT_ERROR);
        assert!(
            err.to_string()
                .contains("Node 'slow' exceeded its run timeout of 0.100s"),
            "{err}"
        );
        assert_eq!(attempt("fast", &policy, sleeper(10, 1)).await.unwrap(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn progress_keeps_an_idle_attempt_alive() {
        let policy = TimeoutPolicy::idle(Duration::from_millis(100));
        // Ten beats 50 ms apart: 500 ms in all, never 100 ms without progress.
        assert_eq!(attempt("busy", &policy, sleeper(50, 10)).await.unwrap(), 10);
        let err = attempt("stuck", &policy, sleeper(150, 2))
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("idle timeout of 0.100s without making progress"),
            "{err}"
        );
        // A hard cap still applies to a busy attempt.
        let both = policy.with_run_timeout(Duration::from_millis(200));
        let err = attempt("busy", &both, sleeper(50, 10)).await.unwrap_err();
        assert!(err.to_string().contains("run timeout of 0.200s"), "{err}");
    }

    #[test]
    fn zero_timeouts_are_refused() {
        assert!(TimeoutPolicy::run(Duration::ZERO).problem().is_some());
        assert!(TimeoutPolicy::idle(Duration::ZERO).problem().is_some());
        assert!(
            TimeoutPolicy::run(Duration::from_secs(1))
                .problem()
                .is_none()
        );
    }
}
