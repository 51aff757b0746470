//! `put_if_head`: compare-and-set on a thread's head (USER-ISSUES U05,
//! CP-EXT-03). Not in LangGraph's suite: LangGraph savers let any writer
//! append a child of any parent, so two runs on one thread fork it silently.
//! With `put_if_head`, exactly one of several concurrent writers extends the
//! head and the others get a typed conflict; plain `put` still forks.

use futures::future::join_all;
use stategraph_checkpoint::{CheckpointConfig, CheckpointSaver, ListQuery};
use stategraph_core::ErrorKind;

use crate::fixtures::{checkpoint, config, loop_metadata, put, thread_id};
use futures::TryStreamExt;

async fn put_if_head<S: CheckpointSaver>(
    saver: &S,
    config: &CheckpointConfig,
) -> stategraph_checkpoint::Result<CheckpointConfig> {
    let checkpoint = checkpoint();
    let versions = checkpoint.channel_versions.clone();
    saver
        .put_if_head(config, checkpoint, loop_metadata(), versions)
        .await
}

async fn latest_id<S: CheckpointSaver>(saver: &S, config: &CheckpointConfig) -> Option<String> {
    let tuple = saver.get_tuple(config).await.unwrap();
    tuple.map(|t| t.config.checkpoint_id.unwrap().to_string())
}

/// CP-HD-01: on an empty thread, a checkpoint without parent becomes the head.
pub async fn cp_hd_01_first_checkpoint_without_parent<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let stored = put_if_head(saver, &config(&tid)).await.unwrap();
    assert_eq!(
        latest_id(saver, &config(&tid)).await,
        stored.checkpoint_id.map(|id| id.to_string())
    );
}

/// CP-HD-02: each child of the current head is accepted and becomes the head.
pub async fn cp_hd_02_children_of_the_head_extend_the_thread<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let mut head = put_if_head(saver, &config(&tid)).await.unwrap();
    for _ in 0..3 {
        head = put_if_head(saver, &head).await.unwrap();
    }
    assert_eq!(
        latest_id(saver, &config(&tid)).await,
        head.checkpoint_id.map(|id| id.to_string())
    );
    let history: Vec<_> = saver
        .list(ListQuery::thread(&tid))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(history.len(), 4);
}

/// CP-HD-03: a child of an older checkpoint is a `Conflict`; nothing is stored.
pub async fn cp_hd_03_stale_parent_is_a_conflict<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let first = put_if_head(saver, &config(&tid)).await.unwrap();
    let second = put_if_head(saver, &first).await.unwrap();
    let err = put_if_head(saver, &first).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert_eq!(
        latest_id(saver, &config(&tid)).await,
        second.checkpoint_id.map(|id| id.to_string())
    );
    let history: Vec<_> = saver
        .list(ListQuery::thread(&tid))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(history.len(), 2, "the rejected checkpoint was not stored");
}

/// CP-HD-04: no parent on a thread that has a head is a `Conflict`.
pub async fn cp_hd_04_missing_parent_on_a_started_thread_conflicts<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    put_if_head(saver, &config(&tid)).await.unwrap();
    let err = put_if_head(saver, &config(&tid)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
}

/// CP-HD-05: of 8 concurrent writers extending the same head, exactly one
/// wins and 7 get a `Conflict`; the winner is the head (USER-ISSUES T2).
pub async fn cp_hd_05_one_of_eight_concurrent_writers_wins<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let mut head = put_if_head(saver, &config(&tid)).await.unwrap();
    for _round in 0..5 {
        let attempts: Vec<_> = (0..8).map(|_| put_if_head(saver, &head)).collect();
        let results = join_all(attempts).await;
        let winners: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(winners.len(), 1, "exactly one writer wins a round");
        for result in &results {
            if let Err(err) = result {
                assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
            }
        }
        head = winners[0].clone();
        assert_eq!(
            latest_id(saver, &config(&tid)).await,
            head.checkpoint_id.clone().map(|id| id.to_string())
        );
    }
}

/// CP-HD-06: namespaces have separate heads.
pub async fn cp_hd_06_namespaces_have_separate_heads<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let root = put_if_head(saver, &config(&tid)).await.unwrap();
    let child = put_if_head(saver, &config(&tid).with_ns("child:1"))
        .await
        .unwrap();
    put_if_head(saver, &root).await.unwrap();
    put_if_head(saver, &child).await.unwrap();
}

/// CP-HD-07: plain `put` still accepts a stale parent (an explicit fork).
pub async fn cp_hd_07_plain_put_still_forks<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let first = put_if_head(saver, &config(&tid)).await.unwrap();
    put_if_head(saver, &first).await.unwrap();
    let fork = put(saver, &first, checkpoint(), loop_metadata()).await;
    let tuple = saver.get_tuple(&fork).await.unwrap().unwrap();
    assert_eq!(
        tuple.parent_config.and_then(|p| p.checkpoint_id),
        first.checkpoint_id
    );
}

/// CP-HD-08: a checkpoint whose id does not sort above its parent's
/// (CP-EXT-11, issue 21 observation 7) is refused by `put` and `put_if_head`
/// alike (`IdBeforeParent`, a conflict) and nothing is stored: ids grow
/// along a thread, and such a child of the head could never be the latest.
pub async fn cp_hd_08_ids_below_the_parent_are_refused<S: CheckpointSaver>(saver: &S) {
    let tid = thread_id();
    let first = put_if_head(saver, &config(&tid)).await.unwrap();
    // The head a process whose clock runs ahead wrote.
    let mut ahead = checkpoint();
    ahead.id = "ffffffff-0000-7000-8000-000000000000".into();
    let ahead = put(saver, &first, ahead, loop_metadata()).await;
    let behind = || {
        let mut behind = checkpoint();
        behind.id = "00000000-0000-7000-8000-000000000000".into();
        behind
    };
    let err = saver
        .put(&ahead, behind(), loop_metadata(), Default::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, stategraph_checkpoint::Error::IdBeforeParent { .. }),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::Conflict);
    let err = saver
        .put_if_head(&ahead, behind(), loop_metadata(), Default::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert_eq!(
        latest_id(saver, &config(&tid)).await,
        ahead.checkpoint_id.as_ref().map(|id| id.to_string())
    );
    let history: Vec<_> = saver
        .list(ListQuery::thread(&tid))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(history.len(), 2, "the refused checkpoint was not stored");
}
