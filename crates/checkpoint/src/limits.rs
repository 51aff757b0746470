//! The limit table of [`stategraph_core::limits`] applied to saver
//! operations. Every saver calls the check of an operation first, before
//! it touches its storage, so every backend refuses the same input with
//! the same [`Error::Limit`] and no raw database error leaks.
//!
//! - Thread ids, checkpoint namespaces, checkpoint ids (the config's, the
//!   checkpoint's, a listing's `before`), task ids, channel names, node
//!   names and the checkpoint's `ts`: at most
//!   [`MAX_ID_BYTES`](stategraph_core::limits::MAX_ID_BYTES), no NUL.
//! - Task paths: no NUL (they are stored but never indexed).
//! - Metadata: at most [`MAX_DEPTH`](stategraph_core::limits::MAX_DEPTH)
//!   levels deep and [`MAX_VALUE_BYTES`](stategraph_core::limits::MAX_VALUE_BYTES) as JSON; NUL characters are
//!   stripped from its strings and keys ([`CheckpointMetadata::sanitized`]),
//!   as LangGraph does, rather than refused.
//! - Channel values and writes: limited by the serializer that stores them
//!   ([`JsonSerializer`](crate::serde::JsonSerializer) refuses more than
//!   [`MAX_DEPTH`](stategraph_core::limits::MAX_DEPTH) levels or
//!   [`MAX_VALUE_BYTES`](stategraph_core::limits::MAX_VALUE_BYTES) bytes). An [`InMemorySaver`](crate::InMemorySaver)
//!   without a serializer keeps live values and never reads them back, so
//!   it has no value limits.

use std::borrow::Cow;

use stategraph_core::Value;
use stategraph_core::limits::{self, LimitError};

use crate::{ChannelVersions, Checkpoint, CheckpointConfig, CheckpointMetadata, Error, ListQuery};

/// Checks the ids of a config: thread, namespace and checkpoint id.
///
/// # Errors
/// [`Error::Limit`] of `operation`.
pub fn check_config(operation: &'static str, config: &CheckpointConfig) -> crate::Result<()> {
    config_ids(config).map_err(|limit| Error::Limit { operation, limit })
}

/// Checks thread ids (of `delete_thread`, `copy_thread`, `prune`).
///
/// # Errors
/// [`Error::Limit`] of `operation` for the first bad one.
pub fn check_thread_ids<'a>(
    operation: &'static str,
    thread_ids: impl IntoIterator<Item = &'a str>,
) -> crate::Result<()> {
    thread_ids
        .into_iter()
        .try_for_each(|id| limits::check_id("thread_id", id))
        .map_err(|limit| Error::Limit { operation, limit })
}

/// Checks a `put` (or `put_if_head`): the config's ids, the checkpoint's id
/// and `ts`, every channel and node name it holds, and the metadata's depth
/// and size.
///
/// # Errors
/// [`Error::Limit`] of `operation` for the first limit broken.
pub fn check_put(
    operation: &'static str,
    config: &CheckpointConfig,
    checkpoint: &Checkpoint,
    metadata: &CheckpointMetadata,
    new_versions: &ChannelVersions,
) -> crate::Result<()> {
    put_parts(config, checkpoint, metadata, new_versions)
        .map_err(|limit| Error::Limit { operation, limit })
}

/// Checks a `put_writes`: the config's ids, the task id, every channel
/// name, and the task path (no NUL).
///
/// # Errors
/// [`Error::Limit`] of `put_writes` for the first limit broken.
pub fn check_writes(
    config: &CheckpointConfig,
    writes: &[(String, Value)],
    task_id: &str,
    task_path: &str,
) -> crate::Result<()> {
    let check = || {
        config_ids(config)?;
        limits::check_id("task_id", task_id)?;
        for (channel, _) in writes {
            limits::check_id("channel name", channel)?;
        }
        limits::check_text("task_path", task_path, usize::MAX)
    };
    check().map_err(|limit| Error::Limit {
        operation: "put_writes",
        limit,
    })
}

/// Checks the ids a listing names: thread, namespace, checkpoint id and
/// `before`.
///
/// # Errors
/// [`Error::Limit`] of `list`.
pub fn check_query(query: &ListQuery) -> crate::Result<()> {
    let check = || {
        if let Some(thread_id) = &query.thread_id {
            limits::check_id("thread_id", thread_id)?;
        }
        if let Some(ns) = &query.checkpoint_ns {
            limits::check_id("checkpoint_ns", ns)?;
        }
        if let Some(id) = &query.checkpoint_id {
            limits::check_id("checkpoint_id", id.as_str())?;
        }
        if let Some(before) = &query.before {
            limits::check_id("before", before.as_str())?;
        }
        Ok(())
    };
    check().map_err(|limit| Error::Limit {
        operation: "list",
        limit,
    })
}

/// The run ids `delete_for_runs` matches: without NUL characters, as the
/// `run_id` of stored metadata is (see [`CheckpointMetadata::sanitized`]),
/// so a run id given with a NUL finds the checkpoints `put` stored for it.
pub fn stored_run_ids(run_ids: &[String]) -> Cow<'_, [String]> {
    if run_ids.iter().all(|id| !id.contains('\0')) {
        return Cow::Borrowed(run_ids);
    }
    Cow::Owned(run_ids.iter().map(|id| id.replace('\0', "")).collect())
}

fn config_ids(config: &CheckpointConfig) -> Result<(), LimitError> {
    limits::check_id("thread_id", &config.thread_id)?;
    limits::check_id("checkpoint_ns", &config.checkpoint_ns)?;
    if let Some(id) = &config.checkpoint_id {
        limits::check_id("checkpoint_id", id.as_str())?;
    }
    Ok(())
}

fn put_parts(
    config: &CheckpointConfig,
    checkpoint: &Checkpoint,
    metadata: &CheckpointMetadata,
    new_versions: &ChannelVersions,
) -> Result<(), LimitError> {
    config_ids(config)?;
    limits::check_id("checkpoint_id", checkpoint.id.as_str())?;
    limits::check_id("checkpoint ts", &checkpoint.ts)?;
    let channels = checkpoint
        .channel_values
        .keys()
        .chain(checkpoint.channel_versions.keys())
        .chain(new_versions.keys())
        .chain(
            checkpoint
                .versions_seen
                .values()
                .flat_map(|seen| seen.keys()),
        )
        .chain(checkpoint.updated_channels.iter().flatten());
    for channel in channels {
        limits::check_id("channel name", channel)?;
    }
    for node in checkpoint.versions_seen.keys() {
        limits::check_id("node name", node)?;
    }
    limits::check_object_depth("metadata", metadata.extra.values())?;
    limits::check_json_size("metadata", metadata)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use stategraph_core::limits::{MAX_DEPTH, MAX_ID_BYTES};

    use super::*;
    use crate::ChannelVersion;

    fn limit_of(err: Error) -> LimitError {
        match err {
            Error::Limit { limit, .. } => limit,
            other => panic!("expected a limit error, got {other}"),
        }
    }

    #[test]
    fn every_name_in_a_put_is_checked() {
        let config = CheckpointConfig::thread("t");
        let metadata = CheckpointMetadata::default();
        let version = ChannelVersion::next(None);
        let long = "c".repeat(MAX_ID_BYTES + 1);
        let check = |checkpoint: &Checkpoint| {
            check_put(
                "put",
                &config,
                checkpoint,
                &metadata,
                &ChannelVersions::new(),
            )
        };
        let at_limit =
            Checkpoint::empty().with_channel("c".repeat(MAX_ID_BYTES), Value::new(1), version);
        assert!(check(&at_limit).is_ok());
        let named = Checkpoint::empty().with_channel(long.clone(), Value::new(1), version);
        assert!(matches!(
            limit_of(check(&named).unwrap_err()),
            LimitError::TooLong {
                what: "channel name",
                ..
            }
        ));
        let mut seen = Checkpoint::empty();
        seen.versions_seen
            .entry("node\0".into())
            .or_default()
            .insert("c".into(), version);
        assert!(matches!(
            limit_of(check(&seen).unwrap_err()),
            LimitError::Nul {
                what: "node name",
                ..
            }
        ));
        let mut updated = Checkpoint::empty();
        updated.updated_channels = Some(vec!["ok".into(), "c\0".into()]);
        assert!(check(&updated).is_err());
        let mut stamped = Checkpoint::empty();
        stamped.ts.push('\0');
        assert!(check(&stamped).is_err());
        let err = check_put(
            "put_if_head",
            &config.clone().with_id("p\0"),
            &Checkpoint::empty(),
            &metadata,
            &ChannelVersions::new(),
        )
        .unwrap_err();
        assert_eq!(err.kind(), stategraph_core::ErrorKind::InvalidInput);
        assert!(
            err.to_string()
                .starts_with("put_if_head failed: checkpoint_id \"p\\0\" contains a NUL"),
            "{err}"
        );
    }

    #[test]
    fn metadata_depth_is_limited() {
        let nested = |depth: usize| (0..depth).fold(json!(1), |inner, _| json!([inner]));
        let put = |metadata: &CheckpointMetadata| {
            check_put(
                "put",
                &CheckpointConfig::thread("t"),
                &Checkpoint::empty(),
                metadata,
                &ChannelVersions::new(),
            )
        };
        assert!(put(&CheckpointMetadata::default().with("d", nested(MAX_DEPTH - 1))).is_ok());
        let deep = CheckpointMetadata::default().with("d", nested(MAX_DEPTH));
        assert!(matches!(
            limit_of(put(&deep).unwrap_err()),
            LimitError::TooDeep {
                what: "metadata",
                ..
            }
        ));
    }

    #[test]
    fn writes_queries_and_thread_ids_are_checked() {
        let config = CheckpointConfig::thread("t").with_id("c");
        let writes = vec![("ch".to_owned(), Value::new(1))];
        assert!(check_writes(&config, &writes, "task", "path").is_ok());
        assert!(check_writes(&config, &writes, "task", "pa\0th").is_err());
        assert!(check_writes(&config, &writes, &"t".repeat(MAX_ID_BYTES + 1), "").is_err());
        let bad_channel = vec![("c\0h".to_owned(), Value::new(1))];
        assert!(check_writes(&config, &bad_channel, "task", "").is_err());
        assert!(check_query(&ListQuery::thread("t").before("b\0")).is_err());
        assert!(check_query(&ListQuery::all().ns("n".repeat(MAX_ID_BYTES + 1))).is_err());
        assert!(check_query(&ListQuery::all()).is_ok());
        assert!(check_thread_ids("prune", ["a", "b\0"]).is_err());
        assert!(check_config("get_tuple", &CheckpointConfig::thread("ok")).is_ok());
    }

    #[test]
    fn run_ids_lose_their_nul_characters_as_metadata_does() {
        let clean = vec!["a".to_owned()];
        assert!(matches!(stored_run_ids(&clean), Cow::Borrowed(_)));
        let with_nul = vec!["r\0un".to_owned(), "b".to_owned()];
        assert_eq!(&*stored_run_ids(&with_nul), ["run", "b"]);
    }
}
