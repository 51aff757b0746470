//! The store's operations as blocking functions on one connection.
//!
//! SQL only selects candidate rows (by namespace range and expiry) and
//! writes; filters, scores, ranking, paging and namespace listings are
//! computed in Rust with the helpers of `stategraph-store`, so every store
//! gives the same answers. The one exception is the `sqlite-vec` feature:
//! then SQLite computes the similarity of each vector to a search's query
//! (sqlite-vec's `vec_distance_cosine`), and Rust still takes each item's
//! best vector, filters, ranks and pages.

use std::collections::BTreeMap;

use rusqlite::{Connection, OptionalExtension, ToSql, params};
use stategraph_store::query::{has_prefix, list_namespaces, rank_and_page};
use stategraph_store::{Item, Namespace, OpResult, Result, SearchItem, StoreError, best_score};

use super::NAME;
use stategraph_store::sql::{
    Plan, PrefixRange, Step, StoredRow as Row, Write, expired, join, split,
};

/// How many expired items [`sweep_some`] deletes per transaction.
pub(crate) const SWEEP_BATCH: usize = 500;

/// The columns `read_row` reads, in its order; qualified, so a join with
/// `store_vectors` can select them too.
const ITEM_COLUMNS: &str = "store_items.namespace, store_items.key, store_items.value, \
     store_items.created_at, store_items.updated_at, store_items.ttl_minutes, \
     store_items.expires_at";

const SELECT_ITEM: &str = "SELECT namespace, key, value, created_at, updated_at, ttl_minutes, \
     expires_at FROM store_items WHERE namespace = ?1 AND key = ?2";

const SET_EXPIRY: &str = "UPDATE store_items SET expires_at = ?3 WHERE namespace = ?1 AND key = ?2";

/// Inserts an item or replaces its value, keeping `created_at`.
const UPSERT_ITEM: &str = "INSERT INTO store_items \
        (namespace, key, value, created_at, updated_at, ttl_minutes, expires_at) \
    VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6) \
    ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, \
        updated_at = excluded.updated_at, ttl_minutes = excluded.ttl_minutes, \
        expires_at = excluded.expires_at";

const DELETE_ITEM: &str = "DELETE FROM store_items WHERE namespace = ?1 AND key = ?2";

const DELETE_VECTORS: &str = "DELETE FROM store_vectors WHERE namespace = ?1 AND key = ?2";

const INSERT_VECTOR: &str =
    "INSERT INTO store_vectors (namespace, key, idx, embedding) VALUES (?1, ?2, ?3, ?4)";

const SELECT_VECTORS: &str =
    "SELECT embedding FROM store_vectors WHERE namespace = ?1 AND key = ?2 ORDER BY idx";

const SELECT_EXPIRED: &str = "SELECT namespace, key FROM store_items \
    WHERE expires_at <= ?1 ORDER BY expires_at LIMIT ?2";

/// A `rusqlite` failure as the store's error.
pub(crate) fn db(err: rusqlite::Error) -> StoreError {
    StoreError::backend(NAME, err)
}

/// Reads one `store_items` row.
fn read_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
        namespace: row.get(0)?,
        key: row.get(1)?,
        value: row.get(2)?,
        created_at: row.get(3)?,
        updated_at: row.get(4)?,
        ttl_minutes: row.get(5)?,
        expires_at: row.get(6)?,
    })
}

/// Runs a batch that may write in one `BEGIN IMMEDIATE` transaction.
pub(crate) fn write_batch(conn: &mut Connection, plan: &Plan) -> Result<Vec<OpResult>> {
    // A savepoint: the writer runs it inside its batch's transaction.
    let tx = conn.savepoint().map_err(db)?;
    let results = run(&tx, plan)?;
    tx.commit().map_err(db)?;
    Ok(results)
}

/// Runs a read-only batch in one read transaction (one snapshot).
pub(crate) fn read_batch(conn: &Connection, plan: &Plan) -> Result<Vec<OpResult>> {
    let tx = conn.unchecked_transaction().map_err(db)?;
    let results = run(&tx, plan)?;
    tx.commit().map_err(db)?;
    Ok(results)
}

/// Runs the reads of `plan` in order, each seeing the store as it was
/// before the batch (and the TTLs the reads before it refreshed), then its
/// puts in order, as `InMemoryStore` does.
fn run(conn: &Connection, plan: &Plan) -> Result<Vec<OpResult>> {
    let mut results = Vec::with_capacity(plan.steps.len());
    for step in &plan.steps {
        results.push(match step {
            Step::Get {
                namespace,
                joined,
                key,
                refresh,
            } => OpResult::Item(get(conn, plan, namespace, joined, key, *refresh)?),
            Step::Put { .. } => OpResult::Done,
            Step::Search {
                prefix,
                range,
                filter,
                query,
                limit,
                offset,
                refresh,
            } => {
                let mut candidates = Vec::new();
                let mut deadlines = BTreeMap::new();
                let query = query.as_deref();
                for (row, scored) in search_rows(conn, range.as_ref(), plan, query)? {
                    let namespace = split(&row.namespace);
                    if !has_prefix(&namespace, prefix) {
                        continue;
                    }
                    let value = row.value(NAME)?;
                    if !filter.matches(&value) {
                        continue;
                    }
                    let score = match (query, scored) {
                        (None, _) => None,
                        #[cfg(feature = "sqlite-vec")]
                        (Some(_), Scored::InSql(score)) => score,
                        (Some(query), Scored::InRust) => best_score(query, &vectors(conn, &row)?),
                    };
                    if *refresh && let Some(at) = row.refreshed(plan) {
                        deadlines.insert((row.namespace.clone(), row.key.clone()), at);
                    }
                    candidates.push(SearchItem::new(row.item(namespace, value), score));
                }
                let page = rank_and_page(candidates, *limit, *offset);
                for found in &page {
                    let address = (join(&found.item.namespace), found.item.key.clone());
                    if let Some(at) = deadlines.get(&address) {
                        set_expiry(conn, &address.0, &address.1, *at)?;
                    }
                }
                OpResult::Items(page)
            }
            Step::List { op, range } => {
                let joined = select(conn, "DISTINCT namespace", range.as_ref(), plan, |row| {
                    row.get::<_, String>(0)
                })?;
                let namespaces: Vec<Namespace> = joined.iter().map(|ns| split(ns)).collect();
                OpResult::Namespaces(list_namespaces(&namespaces, op))
            }
        });
    }
    for step in &plan.steps {
        if let Step::Put { joined, key, write } = step {
            put(conn, plan, joined, key, write.as_ref())?;
        }
    }
    Ok(results)
}

fn get(
    conn: &Connection,
    plan: &Plan,
    namespace: &Namespace,
    joined: &str,
    key: &str,
    refresh: bool,
) -> Result<Option<Item>> {
    let row = conn
        .prepare_cached(SELECT_ITEM)
        .and_then(|mut stmt| stmt.query_row(params![joined, key], read_row).optional())
        .map_err(db)?;
    let Some(row) = row else {
        return Ok(None);
    };
    if plan.omit_expired && expired(row.expires_at, plan.now_nanos) {
        return Ok(None);
    }
    if refresh && let Some(at) = row.refreshed(plan) {
        set_expiry(conn, joined, key, at)?;
    }
    let value = row.value(NAME)?;
    Ok(Some(row.item(namespace.clone(), value)))
}

fn put(
    conn: &Connection,
    plan: &Plan,
    joined: &str,
    key: &str,
    write: Option<&Write>,
) -> Result<()> {
    let execute = |sql: &str, params: &[&dyn ToSql]| {
        conn.prepare_cached(sql)
            .and_then(|mut stmt| stmt.execute(params))
            .map_err(db)
    };
    execute(DELETE_VECTORS, params![joined, key])?;
    let Some(write) = write else {
        execute(DELETE_ITEM, params![joined, key])?;
        return Ok(());
    };
    execute(
        UPSERT_ITEM,
        params![
            joined,
            key,
            write.value,
            plan.now_nanos,
            write.ttl_minutes,
            write.expires_at
        ],
    )?;
    for (idx, vector) in write.vectors.iter().enumerate() {
        let idx = i64::try_from(idx).unwrap_or(i64::MAX);
        execute(INSERT_VECTOR, params![joined, key, idx, vector])?;
    }
    Ok(())
}

fn set_expiry(conn: &Connection, joined: &str, key: &str, at: i64) -> Result<()> {
    conn.prepare_cached(SET_EXPIRY)
        .and_then(|mut stmt| stmt.execute(params![joined, key, at]))
        .map_err(db)?;
    Ok(())
}

fn vectors(conn: &Connection, row: &Row) -> Result<Vec<Vec<f32>>> {
    let blobs = conn
        .prepare_cached(SELECT_VECTORS)
        .and_then(|mut stmt| {
            stmt.query_map(params![row.namespace, row.key], |r| r.get::<_, Vec<u8>>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(db)?;
    blobs.iter().map(|blob| row.vector(NAME, blob)).collect()
}

/// Rows of `store_items` (`columns`, read by `read`) under `range` (all
/// when `None`), without the expired ones when the plan omits them.
fn select<T>(
    conn: &Connection,
    columns: &str,
    range: Option<&PrefixRange>,
    plan: &Plan,
    read: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    let (condition, params) = candidate_condition(range, plan);
    let sql = format!("SELECT {columns} FROM store_items WHERE {condition}");
    conn.prepare_cached(&sql)
        .and_then(|mut stmt| {
            stmt.query_map(params.as_slice(), read)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(db)
}

/// The condition selecting the `store_items` rows under `range` (all when
/// `None`), without the expired ones when the plan omits them, with its
/// parameters (`?1`, `?2`, ...). Columns are qualified with the table's
/// name, so the condition also serves a join.
fn candidate_condition<'a>(
    range: Option<&'a PrefixRange>,
    plan: &'a Plan,
) -> (String, Vec<&'a dyn ToSql>) {
    let mut sql = "TRUE".to_owned();
    let mut params: Vec<&dyn ToSql> = Vec::new();
    if let Some(range) = range {
        sql.push_str(
            " AND (store_items.namespace = ?1 \
             OR (store_items.namespace >= ?2 AND store_items.namespace < ?3))",
        );
        params.extend([&range.exact as &dyn ToSql, &range.low, &range.high]);
    }
    if plan.omit_expired {
        let n = params.len() + 1;
        sql.push_str(&format!(
            " AND (store_items.expires_at IS NULL OR store_items.expires_at > ?{n})"
        ));
        params.push(&plan.now_nanos);
    }
    (sql, params)
}

/// How a search candidate's score is found.
enum Scored {
    /// In Rust, from the item's stored vectors ([`best_score`]).
    InRust,
    /// By SQLite with sqlite-vec: the best similarity of the item's
    /// vectors, `None` for an item without vectors.
    #[cfg(feature = "sqlite-vec")]
    InSql(Option<f64>),
}

/// The candidates of a search (as [`select`] selects them) and how each
/// is scored: with the `sqlite-vec` feature and a query, by SQLite in the
/// same statement ([`scored_in_sql`]); otherwise in Rust, when asked.
///
/// sqlite-vec reads a blob as `f32`s in the machine's byte order and the
/// vectors are stored little-endian, so a big-endian machine scores in
/// Rust. So do a query without components (sqlite-vec refuses empty
/// vectors) and an all-zero query (every score 0, none from SQLite).
fn search_rows(
    conn: &Connection,
    range: Option<&PrefixRange>,
    plan: &Plan,
    query: Option<&[f32]>,
) -> Result<Vec<(Row, Scored)>> {
    #[cfg(feature = "sqlite-vec")]
    if let Some(query) = query.filter(|query| query.iter().any(|x| *x != 0.0))
        && cfg!(target_endian = "little")
    {
        return scored_in_sql(conn, range, plan, query);
    }
    #[cfg(not(feature = "sqlite-vec"))]
    let _ = query;
    let rows = select(conn, ITEM_COLUMNS, range, plan, read_row)?;
    Ok(rows.into_iter().map(|row| (row, Scored::InRust)).collect())
}

/// The candidates of a search with their scores computed by sqlite-vec:
/// one statement joins every candidate with its vectors and computes
/// `vec_distance_cosine` (in `f32`) for each vector; an item's score is
/// `1 - distance` of its best vector, as [`best_score`] ranks.
///
/// An item with a vector that SQLite cannot score as Rust does is left to
/// Rust ([`Scored::InRust`]), so the answers keep their meaning: a length
/// other than the query's (Rust compares the common components;
/// sqlite-vec refuses), an all-zero vector (Rust scores 0; sqlite-vec's
/// `0 / 0` is NaN, which SQLite turns into `NULL`), or a distance that is
/// not finite (components whose squares underflow or overflow `f32`).
#[cfg(feature = "sqlite-vec")]
fn scored_in_sql(
    conn: &Connection,
    range: Option<&PrefixRange>,
    plan: &Plan,
    query: &[f32],
) -> Result<Vec<(Row, Scored)>> {
    /// An item and what its vectors' rows said so far.
    struct Candidate {
        row: Row,
        best: Option<f64>,
        // Whether SQLite scored every vector of the item so far.
        in_sql: bool,
    }

    let (condition, mut params) = candidate_condition(range, plan);
    let blob = stategraph_store::sql::encode_vector(query);
    let bytes = i64::try_from(blob.len()).unwrap_or(i64::MAX);
    let n = params.len() + 1;
    params.extend([&bytes as &dyn ToSql, &blob]);
    // Ordered by the primary key, so the rows of one item are adjacent.
    let sql = format!(
        "SELECT {ITEM_COLUMNS}, store_vectors.idx, \
             CASE WHEN length(store_vectors.embedding) = ?{n} \
                 THEN vec_distance_cosine(store_vectors.embedding, ?{m}) END \
         FROM store_items LEFT JOIN store_vectors \
             ON store_vectors.namespace = store_items.namespace \
             AND store_vectors.key = store_items.key \
         WHERE {condition} \
         ORDER BY store_items.namespace, store_items.key",
        m = n + 1
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(db)?;
    let mut rows = stmt.query(params.as_slice()).map_err(db)?;
    let mut found: Vec<Candidate> = Vec::new();
    while let Some(sql_row) = rows.next().map_err(db)? {
        let namespace: String = sql_row.get(0).map_err(db)?;
        let key: String = sql_row.get(1).map_err(db)?;
        let vector: Option<i64> = sql_row.get(7).map_err(db)?;
        let distance: Option<f64> = sql_row.get(8).map_err(db)?;
        let same_item = found
            .last()
            .is_some_and(|last| last.row.namespace == namespace && last.row.key == key);
        if !same_item {
            found.push(Candidate {
                row: read_row(sql_row).map_err(db)?,
                best: None,
                in_sql: true,
            });
        }
        let Some(candidate) = found.last_mut() else {
            continue;
        };
        if vector.is_none() {
            // The item has no vectors (the join found none).
            continue;
        }
        match distance {
            Some(distance) if distance.is_finite() => {
                let similarity = 1.0 - distance;
                candidate.best = Some(candidate.best.map_or(similarity, |b| b.max(similarity)));
            }
            _ => candidate.in_sql = false,
        }
    }
    Ok(found
        .into_iter()
        .map(|candidate| {
            let scored = if candidate.in_sql {
                Scored::InSql(candidate.best)
            } else {
                Scored::InRust
            };
            (candidate.row, scored)
        })
        .collect())
}

/// Deletes up to [`SWEEP_BATCH`] items expired at `now` (nanoseconds) with
/// their vectors, in one transaction; returns how many.
pub(crate) fn sweep_some(conn: &mut Connection, now: i64) -> Result<usize> {
    let tx = conn.savepoint().map_err(db)?;
    let doomed: Vec<(String, String)> = tx
        .prepare_cached(SELECT_EXPIRED)
        .and_then(|mut stmt| {
            stmt.query_map(
                params![now, i64::try_from(SWEEP_BATCH).unwrap_or(i64::MAX)],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(db)?;
    for (namespace, key) in &doomed {
        for sql in [DELETE_VECTORS, DELETE_ITEM] {
            tx.prepare_cached(sql)
                .and_then(|mut stmt| stmt.execute(params![namespace, key]))
                .map_err(db)?;
        }
    }
    tx.commit().map_err(db)?;
    Ok(doomed.len())
}
