//! ST-TTL-04 for the in-memory store's own sweeper task: it deletes expired
//! items on its interval without any manual sweep, and stops when asked.
//! Tokio's paused time and the kit's manual clock move together, so
//! nothing sleeps for real.

use std::time::Duration;

use serde_json::json;
use stategraph_conformance::store::ManualClock;
use stategraph_store::{GetOp, InMemoryStore, Op, OpResult, Store, StoreOptions, TtlConfig, ns};

/// Whether `key` is stored, read without refreshing its TTL.
async fn present(store: &InMemoryStore, key: &str) -> bool {
    let mut op = GetOp::new(ns(["ttl"]), key);
    op.refresh_ttl = false;
    let results = store.batch(vec![Op::Get(op)]).await.expect("get");
    matches!(results.as_slice(), [OpResult::Item(Some(_))])
}

/// Moves the store's clock and tokio's paused time forward together, one
/// second at a time, so the sweeper runs at the times it would.
async fn advance(clock: &ManualClock, seconds: u32) {
    for _ in 0..seconds {
        clock.advance_seconds(1.0);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn st_ttl_04_sweeper_deletes_expired_items_on_its_interval() {
    let clock = ManualClock::new();
    let config = TtlConfig::default()
        .with_default_ttl(1.0)
        .with_sweep_interval(0.5);
    let store =
        InMemoryStore::new().with_options(StoreOptions::new().with_clock(&clock).with_ttl(config));
    store.put(&["ttl"], "short", json!({})).await.unwrap();
    store
        .put_with(
            &["ttl"],
            "long",
            json!({}),
            stategraph_store::IndexFields::Default,
            stategraph_store::Ttl::Minutes(2.0),
        )
        .await
        .unwrap();
    let sweeper = store.start_sweeper();

    advance(&clock, 59).await;
    assert!(present(&store, "short").await, "not expired at 59 s");
    // Expired at 60 s, swept at the sweep of 90 s.
    advance(&clock, 32).await;
    assert!(!present(&store, "short").await, "swept by 91 s");
    assert!(present(&store, "long").await, "the 2-minute item stays");
    advance(&clock, 60).await;
    assert!(!present(&store, "long").await, "swept by 151 s");

    assert!(sweeper.stop(), "stopping a running sweeper returns true");
    store.put(&["ttl"], "after", json!({})).await.unwrap();
    advance(&clock, 120).await;
    assert!(
        present(&store, "after").await,
        "a stopped sweeper deletes nothing"
    );
    assert_eq!(store.sweep_expired(), 1, "a manual sweep still works");
}
