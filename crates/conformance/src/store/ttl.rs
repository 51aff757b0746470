//! ST-TTL: expiry (capability `ttl`), on a [`ManualClock`]: TTLs are in
//! minutes (fractions allowed), a put's deadline is its time plus its TTL,
//! reads with `refresh_ttl` extend live items when `refresh_on_read` allows,
//! expired items are deleted by a sweep and, with `omit_expired`, hidden
//! before it.
//!
//! ST-TTL-01 is what a store built without a TTL configuration does; every
//! backend runs it (in the `unconfigured` group). ST-TTL-04 (a sweeper
//! task) is checked through the harness's sweep: how a backend schedules
//! sweeps is its own business, tested with the backend. ST-TTL-16 (a
//! million expired rows) is a load test, not part of the kit.

use serde_json::json;
use stategraph_store::{
    GetOp, IndexFields, ListNamespacesOp, Op, OpResult, PutOp, SearchOp, Store, StoreError, Ttl,
    TtlConfig,
};

use super::fixtures::{
    batch, expect_err, fresh, get, keys, list, n, namespaces, obj, peek, put, put_with, search,
};
use super::{ManualClock, StoreHarness, StoreOptions};

/// A store with `config`, on `clock`.
async fn ttl_store<H: StoreHarness>(h: &H, clock: &ManualClock, config: TtlConfig) -> H::Store {
    h.store(StoreOptions::new().with_ttl(config).with_clock(clock))
        .await
}

/// Puts with an explicit TTL.
async fn put_ttl<S: Store>(store: &S, key: &str, ttl: Ttl) {
    put_with(
        store,
        &["ttl"],
        key,
        json!({ "key": key }),
        IndexFields::Default,
        ttl,
    )
    .await;
}

/// Whether `key` is stored, read without refreshing it.
async fn present<S: Store>(store: &S, key: &str) -> bool {
    peek(store, &["ttl"], key).await.is_some()
}

/// A sweep that must delete `expected` items.
async fn sweep<H: StoreHarness>(id: &str, h: &H, store: &H::Store, expected: usize, when: &str) {
    let swept = h.sweep(store).await;
    assert_eq!(swept, expected, "{id}: the sweep {when} deletes {expected}");
}

/// ST-TTL-01: a store built without a TTL configuration claims no TTL and
/// refuses a put with a TTL (`StoreError::Unsupported`, through `put_with`
/// and a raw batch), storing nothing; `Ttl::Never` and `Ttl::Default` are
/// accepted.
pub async fn st_ttl_01_ttl_without_support_is_unsupported(h: &impl StoreHarness) {
    let store = fresh(h).await;
    assert!(
        !store.capabilities().ttl,
        "ST-TTL-01: a store built without TtlConfig claims no TTL"
    );
    let err = expect_err(
        store
            .put_with(
                &["ttl"],
                "k",
                json!({"v": 1}),
                IndexFields::Default,
                Ttl::Minutes(5.0),
            )
            .await,
        "ST-TTL-01",
    );
    assert!(
        matches!(err, StoreError::Unsupported { .. }),
        "ST-TTL-01: expected Unsupported, got {err:?}"
    );
    let op = PutOp::put(n(&["ttl"]), "k", obj(json!({"v": 1}))).with_ttl(Ttl::Minutes(0.5));
    let err = expect_err(store.batch(vec![Op::Put(op)]).await, "ST-TTL-01 (batch)");
    assert!(
        matches!(err, StoreError::Unsupported { .. }),
        "ST-TTL-01: expected Unsupported, got {err:?}"
    );
    assert!(
        get(&store, &["ttl"], "k").await.is_none(),
        "ST-TTL-01: nothing stored"
    );
    put_ttl(&store, "never", Ttl::Never).await;
    put_ttl(&store, "default", Ttl::Default).await;
    assert!(present(&store, "never").await, "ST-TTL-01: Ttl::Never");
    assert!(present(&store, "default").await, "ST-TTL-01: Ttl::Default");
}

/// ST-TTL-02: with a default TTL of 1 minute an item is present at once and
/// gone after 2 minutes and a sweep.
pub async fn st_ttl_02_default_ttl_expires(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let config = TtlConfig::default().with_default_ttl(1.0);
    let store = ttl_store(h, &clock, config).await;
    assert!(store.capabilities().ttl, "ST-TTL-02: claims TTL");
    put(&store, &["ttl"], "k", json!({"v": 1})).await;
    assert!(
        get(&store, &["ttl"], "k").await.is_some(),
        "ST-TTL-02: present at once"
    );
    clock.advance_minutes(2.0);
    sweep("ST-TTL-02", h, &store, 1, "after 2 minutes").await;
    assert!(
        get(&store, &["ttl"], "k").await.is_none(),
        "ST-TTL-02: gone after the sweep"
    );
}

/// ST-TTL-03: with `refresh_on_read`, reads extend the deadline: TTL 1
/// minute, read at 30 s and 60 s, still there at 115 s, gone at 165 s.
pub async fn st_ttl_03_reads_extend_deadline(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let config = TtlConfig::default()
        .with_default_ttl(1.0)
        .with_refresh_on_read(true);
    let store = ttl_store(h, &clock, config).await;
    put(&store, &["ttl"], "k", json!({"v": 1})).await;
    clock.advance_seconds(30.0);
    sweep("ST-TTL-03", h, &store, 0, "at 30 s").await;
    assert!(
        get(&store, &["ttl"], "k").await.is_some(),
        "ST-TTL-03: read at 30 s"
    );
    clock.advance_seconds(30.0);
    sweep("ST-TTL-03", h, &store, 0, "at 60 s (deadline now 90 s)").await;
    assert!(
        get(&store, &["ttl"], "k").await.is_some(),
        "ST-TTL-03: read at 60 s"
    );
    clock.advance_seconds(55.0);
    sweep("ST-TTL-03", h, &store, 0, "at 115 s (deadline now 120 s)").await;
    clock.advance_seconds(50.0);
    sweep("ST-TTL-03", h, &store, 1, "at 165 s").await;
    assert!(!present(&store, "k").await, "ST-TTL-03: gone");
}

/// ST-TTL-04: a sweep deletes every expired item without any read touching
/// them, and a second sweep finds nothing left.
pub async fn st_ttl_04_sweep_deletes_without_reads(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let config = TtlConfig::default()
        .with_default_ttl(1.0)
        .with_sweep_interval(0.5);
    let store = ttl_store(h, &clock, config).await;
    for key in ["a", "b", "c"] {
        put(&store, &["ttl", key], key, json!({})).await;
    }
    put_ttl(&store, "kept", Ttl::Never).await;
    clock.advance_minutes(1.5);
    sweep("ST-TTL-04", h, &store, 3, "after the TTL").await;
    sweep("ST-TTL-04", h, &store, 0, "run again").await;
    assert_eq!(
        list(&store, ListNamespacesOp::new()).await,
        [n(&["ttl"])],
        "ST-TTL-04: only the permanent item's namespace is left"
    );
}

/// ST-TTL-05: per-item TTLs of 1 and 3 minutes without a default: after 2
/// minutes only the 3-minute item survives, after 6 neither; an item
/// without TTL stays.
pub async fn st_ttl_05_per_item_ttls(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let store = ttl_store(h, &clock, TtlConfig::default()).await;
    put_ttl(&store, "one", Ttl::Minutes(1.0)).await;
    put_ttl(&store, "three", Ttl::Minutes(3.0)).await;
    put_ttl(&store, "none", Ttl::Default).await;
    clock.advance_minutes(2.0);
    sweep("ST-TTL-05", h, &store, 1, "at 2 minutes").await;
    assert!(!present(&store, "one").await, "ST-TTL-05: one is gone");
    assert!(present(&store, "three").await, "ST-TTL-05: three survives");
    clock.advance_minutes(4.0);
    sweep("ST-TTL-05", h, &store, 1, "at 6 minutes").await;
    assert!(!present(&store, "three").await, "ST-TTL-05: three is gone");
    assert!(
        present(&store, "none").await,
        "ST-TTL-05: no TTL, no expiry"
    );
}

/// ST-TTL-06: default TTL 5 minutes; an item with 1 minute, one with the
/// default, one with an explicit `Ttl::Never`: at 2 minutes the first is
/// gone, at 6 the second, the third never.
pub async fn st_ttl_06_explicit_never_beats_default(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let store = ttl_store(h, &clock, TtlConfig::default().with_default_ttl(5.0)).await;
    put_ttl(&store, "item1", Ttl::Minutes(1.0)).await;
    put_ttl(&store, "item2", Ttl::Default).await;
    put_ttl(&store, "item3", Ttl::Never).await;
    clock.advance_minutes(2.0);
    sweep("ST-TTL-06", h, &store, 1, "at 2 minutes").await;
    assert!(!present(&store, "item1").await, "ST-TTL-06: item1 gone");
    assert!(present(&store, "item2").await, "ST-TTL-06: item2 present");
    assert!(present(&store, "item3").await, "ST-TTL-06: item3 present");
    clock.advance_minutes(4.0);
    sweep("ST-TTL-06", h, &store, 1, "at 6 minutes").await;
    assert!(!present(&store, "item2").await, "ST-TTL-06: item2 gone");
    clock.advance_minutes(10_000.0);
    sweep("ST-TTL-06", h, &store, 0, "much later").await;
    assert!(
        present(&store, "item3").await,
        "ST-TTL-06: item3 is permanent"
    );
}

/// ST-TTL-07: a search finds the item before expiry and nothing after
/// expiry and a sweep.
pub async fn st_ttl_07_search_after_expiry(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let store = ttl_store(h, &clock, TtlConfig::default().with_default_ttl(1.0)).await;
    put(&store, &["ttl"], "k", json!({"v": 1})).await;
    let found = search(&store, SearchOp::new(n(&["ttl"])).with_refresh_ttl(false)).await;
    assert_eq!(keys(&found), ["k"], "ST-TTL-07: before expiry");
    clock.advance_minutes(2.0);
    sweep("ST-TTL-07", h, &store, 1, "after expiry").await;
    let found = search(&store, SearchOp::new(n(&["ttl"]))).await;
    assert!(found.is_empty(), "ST-TTL-07: after expiry and sweep");
}

/// ST-TTL-08: a search with `refresh_ttl` extends only the items it
/// returns: TTL 4 minutes, a filtered search at 3 minutes hits item 1; at 5
/// minutes item 2 is swept and item 1 is not; at 7.5 minutes item 1 is.
pub async fn st_ttl_08_search_refreshes_only_results(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let store = ttl_store(h, &clock, TtlConfig::default().with_default_ttl(4.0)).await;
    put(&store, &["ttl"], "item1", json!({"id": 1})).await;
    put(&store, &["ttl"], "item2", json!({"id": 2})).await;
    clock.advance_minutes(3.0);
    let found = search(
        &store,
        SearchOp::new(n(&["ttl"]))
            .with_filter(obj(json!({"id": 1})))
            .with_refresh_ttl(true),
    )
    .await;
    assert_eq!(keys(&found), ["item1"], "ST-TTL-08: the search hits item1");
    clock.advance_minutes(2.0);
    sweep("ST-TTL-08", h, &store, 1, "at 5 minutes").await;
    assert!(present(&store, "item1").await, "ST-TTL-08: item1 refreshed");
    assert!(!present(&store, "item2").await, "ST-TTL-08: item2 expired");
    clock.advance_minutes(2.5);
    sweep("ST-TTL-08", h, &store, 1, "at 7.5 minutes").await;
    assert!(!present(&store, "item1").await, "ST-TTL-08: item1 expired");
}

/// ST-TTL-09: reads with `refresh_ttl = false` leave the deadline alone,
/// and so do reads with `refresh_ttl` on a store with `refresh_on_read`
/// off.
pub async fn st_ttl_09_reads_without_refresh(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let store = ttl_store(h, &clock, TtlConfig::default().with_default_ttl(1.0)).await;
    put(&store, &["ttl"], "k", json!({"v": 1})).await;
    clock.advance_seconds(40.0);
    assert!(present(&store, "k").await, "ST-TTL-09: get without refresh");
    clock.advance_seconds(10.0);
    let found = search(&store, SearchOp::new(n(&["ttl"])).with_refresh_ttl(false)).await;
    assert_eq!(keys(&found), ["k"], "ST-TTL-09: search without refresh");
    clock.advance_seconds(11.0);
    sweep("ST-TTL-09", h, &store, 1, "at 61 s (deadline unchanged)").await;

    let clock = ManualClock::new();
    let config = TtlConfig::default()
        .with_default_ttl(1.0)
        .with_refresh_on_read(false);
    let store = ttl_store(h, &clock, config).await;
    put(&store, &["ttl"], "k", json!({"v": 1})).await;
    clock.advance_seconds(40.0);
    assert!(
        get(&store, &["ttl"], "k").await.is_some(),
        "ST-TTL-09: get asking for a refresh"
    );
    let found = search(&store, SearchOp::new(n(&["ttl"])).with_refresh_ttl(true)).await;
    assert_eq!(
        keys(&found),
        ["k"],
        "ST-TTL-09: search asking for a refresh"
    );
    clock.advance_seconds(21.0);
    sweep(
        "ST-TTL-09",
        h,
        &store,
        1,
        "at 61 s (refresh_on_read off: deadline unchanged)",
    )
    .await;
}

/// ST-TTL-10: with `omit_expired`, an expired item not yet swept is hidden:
/// get misses it, search skips it, a namespace holding only expired items is
/// not listed; items that never expire are still returned.
pub async fn st_ttl_10_omit_expired_hides_rows(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let config = TtlConfig::default().with_omit_expired(true);
    let store = ttl_store(h, &clock, config).await;
    let short = Ttl::Minutes(1.0);
    put_with(
        &store,
        &["ttl", "gone"],
        "old",
        json!({}),
        IndexFields::Default,
        short,
    )
    .await;
    put_with(
        &store,
        &["ttl", "mixed"],
        "old",
        json!({}),
        IndexFields::Default,
        short,
    )
    .await;
    put(&store, &["ttl", "mixed"], "control", json!({})).await;
    put(&store, &["ttl", "kept"], "control", json!({})).await;
    clock.advance_minutes(2.0);
    assert!(
        get(&store, &["ttl", "gone"], "old").await.is_none(),
        "ST-TTL-10: get misses the expired item"
    );
    assert!(
        peek(&store, &["ttl", "mixed"], "old").await.is_none(),
        "ST-TTL-10: also without refresh"
    );
    let found = search(&store, SearchOp::new(n(&["ttl"]))).await;
    assert_eq!(
        keys(&found),
        ["control", "control"],
        "ST-TTL-10: search skips expired items"
    );
    assert_eq!(
        list(&store, ListNamespacesOp::new()).await,
        namespaces(&[&["ttl", "kept"], &["ttl", "mixed"]]),
        "ST-TTL-10: a namespace of expired items is not listed"
    );
    sweep("ST-TTL-10", h, &store, 2, "of the hidden items").await;
}

/// ST-TTL-11: without `omit_expired` (the default), expired items are
/// returned by get, search and listings until swept, and reading them does
/// not bring them back to life.
pub async fn st_ttl_11_expired_rows_show_until_swept(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let config = TtlConfig::default().with_default_ttl(1.0);
    assert!(
        !config.omit_expired,
        "ST-TTL-11: omit_expired is off by default"
    );
    let store = ttl_store(h, &clock, config).await;
    put(&store, &["ttl", "old"], "k", json!({"v": 1})).await;
    clock.advance_minutes(2.0);
    assert!(
        get(&store, &["ttl", "old"], "k").await.is_some(),
        "ST-TTL-11: get returns the expired item"
    );
    let found = search(&store, SearchOp::new(n(&["ttl"]))).await;
    assert_eq!(keys(&found), ["k"], "ST-TTL-11: search returns it");
    assert_eq!(
        list(&store, ListNamespacesOp::new()).await,
        [n(&["ttl", "old"])],
        "ST-TTL-11: listings include it"
    );
    sweep("ST-TTL-11", h, &store, 1, "after refreshing reads").await;
    assert!(
        get(&store, &["ttl", "old"], "k").await.is_none(),
        "ST-TTL-11: gone after the sweep"
    );
}

/// ST-TTL-12: with `omit_expired`, a refreshing read of an expired item
/// does not resurrect it, while live items read in the same batch are
/// extended.
pub async fn st_ttl_12_expired_rows_are_not_resurrected(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let config = TtlConfig::default()
        .with_default_ttl(1.0)
        .with_omit_expired(true);
    let store = ttl_store(h, &clock, config).await;
    put(&store, &["ttl"], "dead", json!({})).await;
    clock.advance_seconds(50.0);
    put(&store, &["ttl"], "live", json!({})).await;
    clock.advance_seconds(20.0);
    let get_op = |key: &str| Op::Get(GetOp::new(n(&["ttl"]), key));
    let results = batch(
        &store,
        vec![
            get_op("dead"),
            get_op("live"),
            Op::Search(SearchOp::new(n(&["ttl"])).with_refresh_ttl(true)),
        ],
    )
    .await;
    assert_eq!(
        results[0],
        OpResult::Item(None),
        "ST-TTL-12: the expired item is hidden"
    );
    assert!(
        matches!(&results[1], OpResult::Item(Some(item)) if item.key == "live"),
        "ST-TTL-12: the live item is read"
    );
    assert!(
        matches!(&results[2], OpResult::Items(items) if keys(items) == ["live"]),
        "ST-TTL-12: search returns the live item only"
    );
    sweep("ST-TTL-12", h, &store, 1, "at 70 s (the dead item)").await;
    clock.advance_seconds(50.0);
    sweep(
        "ST-TTL-12",
        h,
        &store,
        0,
        "at 120 s (live extended to 130 s)",
    )
    .await;
    assert!(present(&store, "live").await, "ST-TTL-12: live extended");
    clock.advance_seconds(11.0);
    sweep("ST-TTL-12", h, &store, 1, "at 131 s").await;
}

/// ST-TTL-13: with `omit_expired`, expiry is applied before limit and
/// offset: items ordered a, expired, b, c give pages `[a, b]` and `[c]`.
pub async fn st_ttl_13_expiry_filters_before_paging(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let store = ttl_store(h, &clock, TtlConfig::default().with_omit_expired(true)).await;
    for (key, ttl) in [
        ("c", Ttl::Never),
        ("b", Ttl::Never),
        ("expired", Ttl::Minutes(1.0)),
        ("a", Ttl::Never),
    ] {
        put_ttl(&store, key, ttl).await;
        clock.advance_seconds(1.0);
    }
    clock.advance_minutes(1.0);
    let page = |offset| {
        SearchOp::new(n(&["ttl"]))
            .with_page(2, offset)
            .with_refresh_ttl(false)
    };
    assert_eq!(
        keys(&search(&store, page(0)).await),
        ["a", "b"],
        "ST-TTL-13: first page"
    );
    assert_eq!(
        keys(&search(&store, page(2)).await),
        ["c"],
        "ST-TTL-13: second page"
    );
}

/// ST-TTL-14: the configuration means the same on every backend:
/// `refresh_on_read` defaults to on (a plain get extends the deadline) and
/// `omit_expired` is honoured.
pub async fn st_ttl_14_config_defaults_are_honoured(h: &impl StoreHarness) {
    let defaults = TtlConfig::default();
    assert!(
        defaults.refresh_on_read,
        "ST-TTL-14: refresh_on_read defaults to on"
    );
    assert!(
        !defaults.omit_expired,
        "ST-TTL-14: omit_expired defaults to off"
    );
    assert_eq!(defaults.default_ttl, None, "ST-TTL-14: no default TTL");
    let clock = ManualClock::new();
    let store = ttl_store(h, &clock, TtlConfig::default().with_default_ttl(1.0)).await;
    put(&store, &["ttl"], "k", json!({})).await;
    clock.advance_seconds(40.0);
    assert!(get(&store, &["ttl"], "k").await.is_some(), "ST-TTL-14: get");
    clock.advance_seconds(30.0);
    sweep("ST-TTL-14", h, &store, 0, "at 70 s (refreshed to 100 s)").await;
    clock.advance_seconds(31.0);
    sweep("ST-TTL-14", h, &store, 1, "at 101 s").await;

    let clock = ManualClock::new();
    let config = TtlConfig::default()
        .with_default_ttl(1.0)
        .with_omit_expired(true);
    let store = ttl_store(h, &clock, config).await;
    put(&store, &["ttl"], "k", json!({})).await;
    clock.advance_minutes(1.5);
    assert!(
        get(&store, &["ttl"], "k").await.is_none(),
        "ST-TTL-14: omit_expired hides the expired item"
    );
}

/// ST-TTL-15: fractional minutes survive: a 0.1-minute (6 s) TTL refreshed
/// at 3 s expires at 9 s (±0.5 s).
pub async fn st_ttl_15_sub_minute_ttl(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let store = ttl_store(h, &clock, TtlConfig::default()).await;
    put_ttl(&store, "k", Ttl::Minutes(0.1)).await;
    clock.advance_seconds(3.0);
    assert!(
        get(&store, &["ttl"], "k").await.is_some(),
        "ST-TTL-15: read at 3 s"
    );
    clock.advance_seconds(5.5);
    sweep("ST-TTL-15", h, &store, 0, "at 8.5 s").await;
    clock.advance_seconds(1.0);
    sweep("ST-TTL-15", h, &store, 1, "at 9.5 s").await;
}

/// ST-TTL-17: a put on an existing item resets its deadline from the put's
/// TTL (or the default): a re-put extends it, `Ttl::Never` makes the item
/// permanent, a TTL makes a permanent item expire.
pub async fn st_ttl_17_put_resets_deadline(h: &impl StoreHarness) {
    let clock = ManualClock::new();
    let store = ttl_store(h, &clock, TtlConfig::default().with_default_ttl(1.0)).await;
    put_ttl(&store, "extended", Ttl::Default).await;
    put_ttl(&store, "made-permanent", Ttl::Default).await;
    put_ttl(&store, "made-mortal", Ttl::Never).await;
    clock.advance_seconds(50.0);
    put_ttl(&store, "extended", Ttl::Default).await;
    put_ttl(&store, "made-permanent", Ttl::Never).await;
    put_ttl(&store, "made-mortal", Ttl::Minutes(2.0)).await;
    clock.advance_seconds(20.0);
    sweep("ST-TTL-17", h, &store, 0, "at 70 s").await;
    assert!(present(&store, "extended").await, "ST-TTL-17: extended");
    clock.advance_seconds(45.0);
    sweep("ST-TTL-17", h, &store, 1, "at 115 s").await;
    assert!(
        !present(&store, "extended").await,
        "ST-TTL-17: expired at 110 s"
    );
    clock.advance_seconds(60.0);
    sweep("ST-TTL-17", h, &store, 1, "at 175 s").await;
    assert!(
        !present(&store, "made-mortal").await,
        "ST-TTL-17: expired at 170 s"
    );
    assert!(
        present(&store, "made-permanent").await,
        "ST-TTL-17: Ttl::Never on a re-put makes it permanent"
    );
}
