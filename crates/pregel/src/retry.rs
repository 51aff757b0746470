//! Retry policies for failing nodes.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error::NodeError;

/// Error classes LangGraph's default policy does not retry: programming
/// errors that a retry cannot fix.
/// Their built-in subclasses are listed too, since classes here are names,
/// not a hierarchy; `ConnectionError` and its subclasses are retried, as
/// LangGraph checks it first.
const NOT_RETRIED: &[&str] = &[
    "ValueError",
    // pydantic's, a `ValueError`: a value that does not fit a typed key.
    "ValidationError",
    "UnicodeError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
    "JSONDecodeError",
    "TypeError",
    "ArithmeticError",
    "ZeroDivisionError",
    "OverflowError",
    "FloatingPointError",
    "ImportError",
    "ModuleNotFoundError",
    "LookupError",
    "KeyError",
    "IndexError",
    "NameError",
    "UnboundLocalError",
    "SyntaxError",
    "IndentationError",
    "RuntimeError",
    "NotImplementedError",
    "RecursionError",
    "ReferenceError",
    "StopIteration",
    "StopAsyncIteration",
    "OSError",
    "BlockingIOError",
    "ChildProcessError",
    "FileExistsError",
    "FileNotFoundError",
    "InterruptedError",
    "IsADirectoryError",
    "NotADirectoryError",
    "PermissionError",
    "ProcessLookupError",
    "TimeoutError",
    "Panic",
];

/// Which errors a policy retries.
#[derive(Clone)]
pub enum RetryOn {
    /// LangGraph's default: everything except programming errors
    /// (`ValueError`, `TypeError`, `KeyError`, … and panics).
    Default,
    /// Errors whose class is one of these.
    Classes(Vec<String>),
    /// Errors for which the predicate returns true.
    Predicate(Arc<dyn Fn(&NodeError) -> bool + Send + Sync>),
}

impl fmt::Debug for RetryOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("Default"),
            Self::Classes(classes) => f.debug_tuple("Classes").field(classes).finish(),
            Self::Predicate(_) => f.write_str("Predicate(..)"),
        }
    }
}

impl RetryOn {
    /// Whether `error` should be retried.
    pub fn matches(&self, error: &NodeError) -> bool {
        match self {
            Self::Default => !NOT_RETRIED.contains(&error.class()),
            Self::Classes(classes) => classes.iter().any(|c| c == error.class()),
            Self::Predicate(predicate) => predicate(error),
        }
    }
}

/// How a failing node is retried (LangGraph's `RetryPolicy`, same defaults).
#[derive(Clone, Debug)]
pub struct RetryPolicy {
    /// Wait before the first retry (default 0.5 s).
    pub initial_interval: Duration,
    /// Multiplier of the wait after each retry (default 2).
    pub backoff_factor: f64,
    /// Longest wait (default 128 s).
    pub max_interval: Duration,
    /// Attempts in all, the first included (default 3).
    pub max_attempts: u32,
    /// Adds a random 0–1 s to each wait (default true).
    pub jitter: bool,
    /// Which errors are retried.
    pub retry_on: RetryOn,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            initial_interval: Duration::from_millis(500),
            backoff_factor: 2.0,
            max_interval: Duration::from_secs(128),
            max_attempts: 3,
            jitter: true,
            retry_on: RetryOn::Default,
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1-based), without jitter.
    pub fn interval(&self, attempt: u32) -> Duration {
        let factor = self
            .backoff_factor
            .powi(attempt.saturating_sub(1).min(64) as i32);
        let secs =
            (self.initial_interval.as_secs_f64() * factor).min(self.max_interval.as_secs_f64());
        Duration::from_secs_f64(secs.max(0.0))
    }

    /// The wait before retry number `attempt`, with jitter when enabled.
    pub(crate) fn wait(&self, attempt: u32) -> Duration {
        let base = self.interval(attempt);
        if self.jitter {
            base + Duration::from_secs_f64(stategraph_core::random_unit())
        } else {
            base
        }
    }
}

/// The first policy whose `retry_on` matches `error`.
/// Runs `attempt` until it succeeds or no policy allows another try; a
/// panic becomes a `Panic` error, an interrupt is never retried.
pub(crate) async fn with_retry<T, Fut>(
    name: &str,
    policies: &[RetryPolicy],
    mut attempt: impl FnMut(u32) -> Fut,
) -> Result<T, NodeError>
where
    Fut: std::future::Future<Output = Result<T, NodeError>>,
{
    let mut attempts = 0;
    loop {
        // Attempts count from 1 (LangGraph's `node_attempt`).
        let error = match guarded(|| attempt(attempts + 1)).await {
            Ok(output) => return Ok(output),
            Err(error) => error,
        };
        if error.interrupts().is_some() {
            return Err(error);
        }
        let Some(policy) = matching(policies, &error) else {
            return Err(error);
        };
        attempts += 1;
        if attempts >= policy.max_attempts {
            return Err(error);
        }
        let wait = policy.wait(attempts);
        tracing::info!(
            node = name,
            attempt = attempts,
            ?wait,
            "retrying after {error}"
        );
        tokio::time::sleep(wait).await;
    }
}

/// Makes an attempt's future and runs it; a panic in either becomes a
/// `Panic` error.
pub(crate) async fn guarded<T, Fut>(make: impl FnOnce() -> Fut) -> Result<T, NodeError>
where
    Fut: std::future::Future<Output = Result<T, NodeError>>,
{
    use futures::FutureExt;
    use std::panic::{AssertUnwindSafe, catch_unwind};

    let outcome = match catch_unwind(AssertUnwindSafe(make)) {
        Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
        Err(panic) => Err(panic),
    };
    outcome.unwrap_or_else(|panic| Err(panicked(panic.as_ref())))
}

/// The error a node's panic becomes, with the panic's message.
fn panicked(panic: &(dyn std::any::Any + Send)) -> NodeError {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "the node panicked".to_owned());
    NodeError::new("Panic", message)
}

pub(crate) fn matching<'a>(
    policies: &'a [RetryPolicy],
    error: &NodeError,
) -> Option<&'a RetryPolicy> {
    policies
        .iter()
        .find(|policy| policy.retry_on.matches(error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_caps() {
        let policy = RetryPolicy {
            initial_interval: Duration::from_secs(1),
            max_interval: Duration::from_secs(5),
            ..RetryPolicy::default()
        };
        assert_eq!(policy.interval(1), Duration::from_secs(1));
        assert_eq!(policy.interval(2), Duration::from_secs(2));
        assert_eq!(policy.interval(3), Duration::from_secs(4));
        assert_eq!(policy.interval(4), Duration::from_secs(5));
    }

    #[test]
    fn default_retry_on_skips_programming_errors() {
        assert!(!RetryOn::Default.matches(&NodeError::new("ValueError", "x")));
        assert!(!RetryOn::Default.matches(&NodeError::new("ValidationError", "x")));
        assert!(!RetryOn::Default.matches(&NodeError::new("KeyError", "x")));
        assert!(RetryOn::Default.matches(&NodeError::new("ConnectionError", "x")));
        assert!(RetryOn::Default.matches(&NodeError::new("ConnectionResetError", "x")));
        assert!(!RetryOn::Default.matches(&NodeError::new("TimeoutError", "x")));
        assert!(!RetryOn::Default.matches(&NodeError::new("FileNotFoundError", "x")));
        let classes = RetryOn::Classes(vec!["ValueError".into()]);
        assert!(classes.matches(&NodeError::new("ValueError", "x")));
    }
}
