//! The cron scheduler: every `crons.interval_seconds` it claims the crons
//! that are due (each claim moves the cron's next fire time past now in the
//! same step, so no fire time is taken twice) and submits one run for
//! each, as the official server's `cron_scheduler` does.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Cron, OnRunCompleted};
use crate::runs::manager::{check, submit};
use crate::runs::request::RunCreate;
use crate::server::Core;

/// Looks for due crons until the task is dropped or aborted.
pub(crate) async fn run(core: Arc<Core>) {
    let mut interval = tokio::time::interval(core.settings.crons.interval());
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        if let Err(err) = tick(&core).await {
            tracing::warn!(error = %err, "the cron scheduler could not read the due crons");
        }
    }
}

/// Fires every cron due now; how many.
///
/// # Errors
/// The repository's, when the due crons cannot be claimed (a run that
/// cannot be created is logged, and its cron goes on).
pub(crate) async fn tick(core: &Arc<Core>) -> Result<usize, crate::persist::PersistError> {
    let due = core.repository.claim_due_crons(chrono::Utc::now()).await?;
    let fired = due.len();
    for cron in due {
        if let Err(err) = fire(core, &cron).await {
            tracing::warn!(cron_id = %cron.cron_id, error = ?err, "a cron's run was not created");
        }
    }
    Ok(fired)
}

/// The run request a fire of `cron` makes: its payload, with the cron's
/// metadata under the payload's, and `on_completion: keep` when a
/// stateless cron keeps its threads.
pub(crate) fn run_request(cron: &Cron) -> Map<String, Value> {
    let mut payload = cron.payload.clone();
    if cron.on_run_completed == Some(OnRunCompleted::Keep) {
        payload
            .entry("on_completion")
            .or_insert_with(|| Value::String("keep".into()));
    }
    let mut metadata = cron.metadata.clone();
    if let Some(Value::Object(own)) = payload.get("metadata") {
        metadata.extend(own.clone());
    }
    payload.insert("metadata".into(), Value::Object(metadata));
    // A context given with the cron goes to the run as context; the cron's
    // own id in `configurable` would make the run refuse both.
    let has_context = payload
        .get("context")
        .is_some_and(|context| context.as_object().is_some_and(|c| !c.is_empty()));
    if has_context
        && let Some(Value::Object(config)) = payload.get_mut("config")
        && let Some(Value::Object(configurable)) = config.get_mut("configurable")
    {
        configurable.remove("cron_id");
    }
    payload
}

/// Submits one run of `cron`: on its thread, or on a new thread.
async fn fire(core: &Arc<Core>, cron: &Cron) -> Result<(), crate::api::ApiError> {
    let body: RunCreate = serde_json::from_value(Value::Object(run_request(cron)))
        .map_err(|err| crate::api::ApiError::invalid(format!("a cron's payload: {err}")))?;
    let stateless = cron.thread_id.is_none();
    let request = check(core, body, stateless).await?;
    let thread_id = cron
        .thread_id
        .clone()
        .unwrap_or_else(crate::wire::time_ordered_id);
    submit(core, request, &thread_id, stateless, false).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::persist::{MemoryRepository, Repository};

    fn cron(payload: serde_json::Value, on_run_completed: Option<OnRunCompleted>) -> Cron {
        let body = payload.as_object().cloned().unwrap_or_default();
        let create: super::super::CronCreate = serde_json::from_value(payload).unwrap_or_default();
        let mut cron = create
            .into_cron(body, "a".into(), None, chrono::Utc::now())
            .unwrap_or_else(|err| panic!("{err:?}"));
        cron.on_run_completed = on_run_completed;
        cron
    }

    #[tokio::test]
    async fn a_due_cron_is_claimed_once() {
        let repository = MemoryRepository::default();
        let mut due = cron(json!({"schedule": "* * * * *"}), None);
        let now = chrono::Utc::now();
        due.next_run_date = Some(now - chrono::Duration::seconds(1));
        let mut disabled = due.clone();
        disabled.cron_id = "other".into();
        disabled.enabled = false;
        repository.insert_cron(due.clone()).await.unwrap();
        repository.insert_cron(disabled).await.unwrap();
        let first = repository.claim_due_crons(now).await.unwrap();
        assert_eq!(first.len(), 1, "the disabled one stays");
        assert_eq!(first[0].cron_id, due.cron_id);
        assert!(repository.claim_due_crons(now).await.unwrap().is_empty());
        let moved = repository.get_cron(&due.cron_id).await.unwrap().unwrap();
        assert!(moved.next_run_date.unwrap() > now);
    }

    #[test]
    fn a_fire_carries_the_crons_metadata_and_keeps_its_thread_when_asked() {
        let mut kept = cron(
            json!({"schedule": "* * * * *", "metadata": {"run": 1}, "context": {"x": 1}}),
            Some(OnRunCompleted::Keep),
        );
        kept.metadata.insert("cron".into(), json!(true));
        let request = run_request(&kept);
        assert_eq!(request["on_completion"], "keep");
        assert_eq!(request["metadata"], json!({"cron": true, "run": 1}));
        assert_eq!(
            request["config"]["configurable"],
            json!({}),
            "no cron id beside a context"
        );
    }
}
