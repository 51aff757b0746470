//! ST-LN: `list_namespaces` — prefix and suffix conditions of whole labels
//! with `*` matching exactly one label, `max_depth` (truncate, then
//! de-duplicate), and pages over the namespaces in label order.
//!
//! ST-LN-16 (a million items, p99 latency) is a load test, not part of the
//! kit.

use serde_json::json;
use stategraph_store::{ListNamespacesOp, Store};

use super::StoreHarness;
use super::fixtures::{fresh, list, n, namespaces, put};

/// Fixture A of the checklist.
const FIXTURE_A: [&[&str]; 9] = [
    &["a", "b", "c"],
    &["a", "b", "d", "e"],
    &["a", "b", "d", "i"],
    &["a", "b", "f"],
    &["a", "c", "f"],
    &["b", "a", "f"],
    &["users", "123"],
    &["users", "456", "settings"],
    &["admin", "users", "789"],
];

/// Fixture B: the wildcard cases' namespaces.
const FIXTURE_B: [&[&str]; 5] = [
    &["users", "123"],
    &["users", "456"],
    &["users", "789", "settings"],
    &["admin", "users", "789"],
    &["guests", "456", "preferences"],
];

async fn store_with<H: StoreHarness>(h: &H, all: &[&[&str]]) -> H::Store {
    let store = fresh(h).await;
    for namespace in all {
        put(&store, namespace, "k", json!({"at": namespace})).await;
    }
    store
}

fn prefix(labels: &[&str]) -> ListNamespacesOp {
    ListNamespacesOp::new().with_prefix(n(labels))
}

fn suffix(labels: &[&str]) -> ListNamespacesOp {
    ListNamespacesOp::new().with_suffix(n(labels))
}

async fn check<S: Store>(id: &str, store: &S, op: ListNamespacesOp, expected: &[&[&str]]) {
    let shown = format!("{op:?}");
    assert_eq!(list(store, op).await, namespaces(expected), "{id}: {shown}");
}

/// ST-LN-01: prefix `(a, b)` lists the four namespaces under it.
pub async fn st_ln_01_prefix(h: &impl StoreHarness) {
    let store = store_with(h, &FIXTURE_A).await;
    check(
        "ST-LN-01",
        &store,
        prefix(&["a", "b"]),
        &[
            &["a", "b", "c"],
            &["a", "b", "d", "e"],
            &["a", "b", "d", "i"],
            &["a", "b", "f"],
        ],
    )
    .await;
}

/// ST-LN-02: suffix `(f,)` lists the three namespaces ending in `f`.
pub async fn st_ln_02_suffix(h: &impl StoreHarness) {
    let store = store_with(h, &FIXTURE_A).await;
    check(
        "ST-LN-02",
        &store,
        suffix(&["f"]),
        &[&["a", "b", "f"], &["a", "c", "f"], &["b", "a", "f"]],
    )
    .await;
}

/// ST-LN-03: prefix `(a,)` and suffix `(f,)` both hold (AND).
pub async fn st_ln_03_prefix_and_suffix(h: &impl StoreHarness) {
    let store = store_with(h, &FIXTURE_A).await;
    check(
        "ST-LN-03",
        &store,
        prefix(&["a"]).with_suffix(n(&["f"])),
        &[&["a", "b", "f"], &["a", "c", "f"]],
    )
    .await;
}

/// ST-LN-04: prefix `(a, b)` with `max_depth` 3 truncates, then
/// de-duplicates: `(a,b,c) (a,b,d) (a,b,f)`.
pub async fn st_ln_04_max_depth_truncates_and_dedupes(h: &impl StoreHarness) {
    let store = store_with(h, &FIXTURE_A).await;
    check(
        "ST-LN-04",
        &store,
        prefix(&["a", "b"]).with_max_depth(3),
        &[&["a", "b", "c"], &["a", "b", "d"], &["a", "b", "f"]],
    )
    .await;
}

/// ST-LN-05: prefix `(a, b)` with limit 2 gives the first two in label
/// order, offset 2 the next two, offset 4 nothing.
pub async fn st_ln_05_limit_and_offset(h: &impl StoreHarness) {
    let store = store_with(h, &FIXTURE_A).await;
    check(
        "ST-LN-05",
        &store,
        prefix(&["a", "b"]).with_page(2, 0),
        &[&["a", "b", "c"], &["a", "b", "d", "e"]],
    )
    .await;
    check(
        "ST-LN-05",
        &store,
        prefix(&["a", "b"]).with_page(2, 2),
        &[&["a", "b", "d", "i"], &["a", "b", "f"]],
    )
    .await;
    check("ST-LN-05", &store, prefix(&["a", "b"]).with_page(2, 4), &[]).await;
}

/// ST-LN-06: `*` matches any one label: prefix `(a, *, f)` and suffix
/// `(*, f)`.
pub async fn st_ln_06_wildcards(h: &impl StoreHarness) {
    let store = store_with(h, &FIXTURE_A).await;
    check(
        "ST-LN-06",
        &store,
        prefix(&["a", "*", "f"]),
        &[&["a", "b", "f"], &["a", "c", "f"]],
    )
    .await;
    check(
        "ST-LN-06",
        &store,
        suffix(&["*", "f"]),
        &[&["a", "b", "f"], &["a", "c", "f"], &["b", "a", "f"]],
    )
    .await;
}

/// ST-LN-07: a prefix nothing starts with lists nothing; a prefix equal to
/// a whole namespace lists it.
pub async fn st_ln_07_missing_and_exact_prefix(h: &impl StoreHarness) {
    let store = store_with(h, &FIXTURE_A).await;
    check("ST-LN-07", &store, prefix(&["nonexistent"]), &[]).await;
    check(
        "ST-LN-07",
        &store,
        prefix(&["users", "123"]),
        &[&["users", "123"]],
    )
    .await;
}

/// ST-LN-08: prefix `(users, *)` matches two labels and stays open-ended
/// beyond them.
pub async fn st_ln_08_wildcard_prefix_is_open_ended(h: &impl StoreHarness) {
    let store = store_with(h, &FIXTURE_B).await;
    check(
        "ST-LN-08",
        &store,
        prefix(&["users", "*"]),
        &[
            &["users", "123"],
            &["users", "456"],
            &["users", "789", "settings"],
        ],
    )
    .await;
}

/// ST-LN-09: suffix `(*, preferences)` finds only
/// `(guests, 456, preferences)`; prefix `(*, users)` with suffix
/// `(*, settings)` finds nothing.
pub async fn st_ln_09_wildcard_suffix(h: &impl StoreHarness) {
    let store = store_with(h, &FIXTURE_B).await;
    check(
        "ST-LN-09",
        &store,
        suffix(&["*", "preferences"]),
        &[&["guests", "456", "preferences"]],
    )
    .await;
    check(
        "ST-LN-09",
        &store,
        prefix(&["*", "users"]).with_suffix(n(&["*", "settings"])),
        &[],
    )
    .await;
    check(
        "ST-LN-09",
        &store,
        prefix(&["*", "users"]),
        &[&["admin", "users", "789"]],
    )
    .await;
}

/// ST-LN-10: 20 namespaces `(namespace, sub_00..19)`: limit 5 at offsets
/// 0, 5 and 15 give exactly `sub_00-04`, `sub_05-09` and `sub_15-19`.
pub async fn st_ln_10_pages_follow_sorted_order(h: &impl StoreHarness) {
    let store = fresh(h).await;
    // Stored out of order, so the order comes from the listing.
    for i in (0..20).rev() {
        put(
            &store,
            &["namespace", &format!("sub_{i:02}")],
            "k",
            json!({}),
        )
        .await;
    }
    for (offset, first) in [(0, 0), (5, 5), (15, 15)] {
        let op = prefix(&["namespace"]).with_page(5, offset);
        let expected: Vec<_> = (first..first + 5)
            .map(|i| n(&["namespace", &format!("sub_{i:02}")]))
            .collect();
        assert_eq!(
            list(&store, op).await,
            expected,
            "ST-LN-10: offset {offset}"
        );
    }
}

/// ST-LN-11: `max_depth` 2 over namespaces of depth 2 to 4.
pub async fn st_ln_11_max_depth_two(h: &impl StoreHarness) {
    let store = store_with(
        h,
        &[
            &["a", "b", "c", "d"],
            &["a", "b", "c", "e"],
            &["a", "b", "f"],
            &["a", "g"],
            &["h", "i", "j", "k"],
        ],
    )
    .await;
    check(
        "ST-LN-11",
        &store,
        ListNamespacesOp::new().with_max_depth(2),
        &[&["a", "b"], &["a", "g"], &["h", "i"]],
    )
    .await;
}

/// ST-LN-12: no conditions lists every namespace in label order; an empty
/// store lists nothing.
pub async fn st_ln_12_no_conditions(h: &impl StoreHarness) {
    let empty = fresh(h).await;
    check("ST-LN-12", &empty, ListNamespacesOp::new(), &[]).await;
    let store = store_with(h, &FIXTURE_A).await;
    let mut sorted = FIXTURE_A;
    sorted.sort();
    check("ST-LN-12", &store, ListNamespacesOp::new(), &sorted).await;
}

/// ST-LN-13: conditions match whole labels: prefix `(foo,)` excludes
/// `foobar`, suffix `(alice,)` excludes `malice`, and `*` spans exactly one
/// label (`(uid, *, alice)` matches `(uid, users, alice)`, not
/// `(uid, a, b, alice)`).
pub async fn st_ln_13_segment_boundaries(h: &impl StoreHarness) {
    let store = store_with(
        h,
        &[
            &["foo"],
            &["foo", "x"],
            &["foobar"],
            &["foobar", "x"],
            &["users", "alice"],
            &["users", "malice"],
            &["uid", "users", "alice"],
            &["uid", "a", "b", "alice"],
        ],
    )
    .await;
    check(
        "ST-LN-13",
        &store,
        prefix(&["foo"]),
        &[&["foo"], &["foo", "x"]],
    )
    .await;
    check(
        "ST-LN-13",
        &store,
        suffix(&["alice"]),
        &[
            &["uid", "a", "b", "alice"],
            &["uid", "users", "alice"],
            &["users", "alice"],
        ],
    )
    .await;
    check(
        "ST-LN-13",
        &store,
        prefix(&["uid", "*", "alice"]),
        &[&["uid", "users", "alice"]],
    )
    .await;
    check(
        "ST-LN-13",
        &store,
        suffix(&["uid", "*", "alice"]),
        &[&["uid", "users", "alice"]],
    )
    .await;
}

/// ST-LN-14: labels with `*`, `?`, `[ ]`, `_`, `%`, `+` are literal in a
/// listing prefix: each real label lists only itself and its children,
/// never its decoy.
pub async fn st_ln_14_metacharacter_labels(h: &impl StoreHarness) {
    let pairs = [
        ("star*", "starX"),
        ("q?m", "qXm"),
        ("br[ack]et", "brXackXet"),
        ("user_1", "userX1"),
        ("a%b", "axxb"),
        ("plus+", "plusss"),
    ];
    let store = fresh(h).await;
    for (real, decoy) in pairs {
        for label in [real, decoy] {
            put(&store, &[label], "k", json!({})).await;
            put(&store, &[label, "child"], "k", json!({})).await;
        }
    }
    for (real, _) in pairs {
        check(
            "ST-LN-14",
            &store,
            prefix(&[real]),
            &[&[real], &[real, "child"]],
        )
        .await;
        check("ST-LN-14", &store, suffix(&[real]), &[&[real]]).await;
    }
}

/// ST-LN-15: `max_depth` 4 with the wildcard prefix `(a, *)` over seven
/// deep namespaces gives five distinct truncated namespaces.
pub async fn st_ln_15_wildcard_with_max_depth_dedupes(h: &impl StoreHarness) {
    let store = store_with(
        h,
        &[
            &["a", "b", "c", "d", "e"],
            &["a", "b", "c", "d", "f"],
            &["a", "b", "c", "e", "g"],
            &["a", "q", "r", "s", "t"],
            &["a", "x", "c", "d", "h"],
            &["a", "x", "y", "z", "1"],
            &["a", "x", "y", "z", "2", "3"],
            &["b", "x", "y", "z", "1"],
        ],
    )
    .await;
    check(
        "ST-LN-15",
        &store,
        prefix(&["a", "*"]).with_max_depth(4),
        &[
            &["a", "b", "c", "d"],
            &["a", "b", "c", "e"],
            &["a", "q", "r", "s"],
            &["a", "x", "c", "d"],
            &["a", "x", "y", "z"],
        ],
    )
    .await;
}
