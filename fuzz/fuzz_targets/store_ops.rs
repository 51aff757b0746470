//! Long-term memory operations as a tool or an HTTP client could send
//! them: namespaces, keys, values, index fields, TTLs, filters and pages.
//!
//! Input: JSON text, a list of operations (anything else is skipped):
//!
//! - `["put", NAMESPACE, KEY, VALUE, INDEX?, TTL?]`: `VALUE` `null`
//!   deletes; `INDEX` `false` is not indexed, a list names field paths;
//!   `TTL` `null` is forever, a number is minutes;
//! - `["get", NAMESPACE, KEY]`;
//! - `["search", PREFIX, FILTER?, LIMIT?, OFFSET?, QUERY?]`;
//! - `["list", [["prefix" | "suffix", LABELS], ...], MAX_DEPTH?, LIMIT?,
//!   OFFSET?]`.
//!
//! Labels that are not strings are their JSON text. Each operation runs
//! on a fresh `InMemoryStore` and a fresh in-memory `SqliteStore`, both
//! with a hash embedder, expiry and the same frozen clock. Both must
//! answer the same: the same items, scores and namespaces, or both an
//! error of the same kind ("filters mean the same on every backend").
#![no_main]

use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use libfuzzer_sys::fuzz_target;
use serde_json::Value as Json;
use stategraph_checkpoint_sqlite::SqliteStore;
use stategraph_llm::HashEmbeddings;
use stategraph_store::{
    Clock, InMemoryStore, IndexConfig, IndexFields, ListNamespacesOp, Namespace, PutOp, SearchOp,
    Store, StoreError, StoreOptions, Ttl, TtlConfig,
};

/// One operation of the input.
#[derive(Debug)]
enum Op {
    Put(PutOp),
    /// A put of a value that is not an object (refused before any store).
    PutOther(Namespace, String, Json),
    Get(Namespace, String),
    Search(SearchOp),
    List(ListNamespacesOp),
}

fn label(value: &Json) -> String {
    match value {
        Json::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn labels(value: Option<&Json>) -> Namespace {
    match value {
        Some(Json::Array(items)) => items.iter().map(label).collect(),
        Some(other) => vec![label(other)],
        None => Vec::new(),
    }
}

fn count(value: Option<&Json>, default: usize) -> usize {
    value
        .and_then(Json::as_u64)
        .map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX))
}

fn read(op: &Json) -> Option<Op> {
    let items = op.as_array()?;
    let arg = |i: usize| items.get(i);
    Some(match items.first()?.as_str()? {
        "put" => {
            let namespace = labels(arg(1));
            let key = arg(2).map(label).unwrap_or_default();
            let mut put = match arg(3) {
                Some(Json::Object(value)) => PutOp::put(namespace, key, value.clone()),
                None | Some(Json::Null) => PutOp::delete(namespace, key),
                Some(other) => return Some(Op::PutOther(namespace, key, other.clone())),
            };
            put = match arg(4) {
                None | Some(Json::Null) => put,
                Some(Json::Bool(false)) => put.with_index(IndexFields::No),
                Some(fields) => put.with_index(IndexFields::Fields(labels(Some(fields)))),
            };
            Op::Put(match arg(5) {
                None => put,
                Some(Json::Null) => put.with_ttl(Ttl::Never),
                Some(minutes) => put.with_ttl(Ttl::Minutes(minutes.as_f64().unwrap_or(f64::NAN))),
            })
        }
        "get" => Op::Get(labels(arg(1)), arg(2).map(label).unwrap_or_default()),
        "search" => {
            let mut search = SearchOp::new(labels(arg(1)));
            if let Some(Json::Object(filter)) = arg(2) {
                search = search.with_filter(filter.clone());
            }
            search = search.with_page(count(arg(3), 10), count(arg(4), 0));
            if let Some(query) = arg(5) {
                search = search.with_query(label(query));
            }
            Op::Search(search)
        }
        "list" => {
            let mut list = ListNamespacesOp::new();
            if let Some(Json::Array(conditions)) = arg(1) {
                for condition in conditions {
                    let side = condition.get(0).and_then(Json::as_str);
                    let path = labels(condition.get(1));
                    list = match side {
                        Some("suffix") => list.with_suffix(path),
                        _ => list.with_prefix(path),
                    };
                }
            }
            if let Some(depth) = arg(2).and_then(Json::as_u64) {
                list = list.with_max_depth(usize::try_from(depth).unwrap_or(usize::MAX));
            }
            Op::List(list.with_page(count(arg(3), 100), count(arg(4), 0)))
        }
        _ => return None,
    })
}

/// What an operation answered, comparable across stores.
#[derive(Debug, PartialEq)]
enum Answer {
    Done,
    Item(Option<stategraph_store::Item>),
    Items(Vec<stategraph_store::SearchItem>),
    Namespaces(Vec<Namespace>),
    Failed(stategraph_core::ErrorKind),
}

impl<T: Into<Answer>> From<Result<T, StoreError>> for Answer {
    fn from(result: Result<T, StoreError>) -> Self {
        match result {
            Ok(answer) => answer.into(),
            Err(err) => Answer::Failed(err.kind()),
        }
    }
}

impl From<()> for Answer {
    fn from((): ()) -> Self {
        Answer::Done
    }
}

impl From<Option<stategraph_store::Item>> for Answer {
    fn from(item: Option<stategraph_store::Item>) -> Self {
        Answer::Item(item)
    }
}

impl From<Vec<stategraph_store::SearchItem>> for Answer {
    fn from(items: Vec<stategraph_store::SearchItem>) -> Self {
        Answer::Items(items)
    }
}

impl From<Vec<Namespace>> for Answer {
    fn from(namespaces: Vec<Namespace>) -> Self {
        Answer::Namespaces(namespaces)
    }
}

async fn run(store: &impl Store, op: &Op) -> Answer {
    match op {
        Op::Put(put) => store.put_op(put.clone()).await.into(),
        Op::PutOther(namespace, key, value) => {
            let namespace: Vec<&str> = namespace.iter().map(String::as_str).collect();
            store.put(&namespace, key, value.clone()).await.into()
        }
        Op::Get(namespace, key) => {
            let namespace: Vec<&str> = namespace.iter().map(String::as_str).collect();
            store.get(&namespace, key).await.into()
        }
        Op::Search(search) => store.search(search.clone()).await.into(),
        Op::List(list) => store.list_namespaces(list.clone()).await.into(),
    }
}

fn frozen() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
        .single()
        .expect("a valid date")
}

fuzz_target!(|input: &[u8]| {
    let Ok(Json::Array(ops)) = serde_json::from_slice::<Json>(input) else {
        return;
    };
    let ops: Vec<Op> = ops.iter().filter_map(read).collect();
    let clock: Clock = Arc::new(frozen);
    let index =
        IndexConfig::new(8, HashEmbeddings::new(8)).with_fields(["text", "tags[*]", "doc.title"]);
    let options = StoreOptions::new()
        .with_index(index)
        .with_ttl(TtlConfig::default().with_omit_expired(true))
        .with_clock(clock);
    stategraph_fuzz::runtime().block_on(async {
        let memory = InMemoryStore::new().with_options(options.clone());
        let sqlite = SqliteStore::in_memory()
            .await
            .expect("an in-memory SQLite store opens")
            .with_options(options);
        for op in &ops {
            let expected = run(&memory, op).await;
            let found = run(&sqlite, op).await;
            assert_eq!(
                found, expected,
                "SqliteStore and InMemoryStore answer {op:?} differently"
            );
        }
    });
});
