//! The store's statements and how one batch runs on one transaction.
//!
//! SQL only selects candidate rows (by namespace range and expiry) and
//! writes; filters, scores, ranking, paging and namespace listings are
//! computed in Rust with the helpers of `stategraph-store`, so every store
//! gives the same answers. Every statement names its tables unqualified
//! (they resolve through the connection's `search_path`), splices only
//! fixed fragments, and binds every value.

use std::collections::HashMap;

use sqlx::postgres::{PgArguments, PgRow};
use sqlx::{Arguments, AssertSqlSafe, PgConnection, Postgres, Row as _};
use stategraph_store::query::{has_prefix, list_namespaces, rank_and_page};
use stategraph_store::{Item, Namespace, OpResult, SearchItem, best_score};

use super::{Attempt, Failure, NAME};
use stategraph_store::sql::{
    Plan, PrefixRange, Step, StoredRow as Row, Write, expired, join, split,
};

/// How many expired items one sweep statement deletes at most.
pub(crate) const SWEEP_BATCH: i64 = 1_000;

const ITEMS: &str = "SELECT namespace, key, value, created_at, updated_at, ttl_minutes, \
    expires_at FROM stategraph_store_items WHERE TRUE";

const NAMESPACES: &str = "SELECT DISTINCT namespace FROM stategraph_store_items WHERE TRUE";

const SELECT_ITEM: &str = "SELECT namespace, key, value, created_at, updated_at, ttl_minutes, \
    expires_at FROM stategraph_store_items WHERE namespace = $1 AND key = $2";

/// Extends an item's TTL unless its deadline changed since it was read
/// (a concurrent put set a new one; write batches run in `READ COMMITTED`,
/// where the condition is checked again on the newest row).
const SET_EXPIRY: &str = "UPDATE stategraph_store_items SET expires_at = $3 \
    WHERE namespace = $1 AND key = $2 AND expires_at = $4";

/// [`SET_EXPIRY`] for many items.
const SET_EXPIRIES: &str = "UPDATE stategraph_store_items i SET expires_at = u.expires_at \
    FROM UNNEST($1::bytea[], $2::bytea[], $3::bigint[], $4::bigint[]) \
        AS u(namespace, key, expires_at, was) \
    WHERE i.namespace = u.namespace AND i.key = u.key AND i.expires_at = u.was";

/// Writes an item (keeping `created_at` when it exists) and replaces its
/// vectors, in one statement: vectors past the new count are deleted, the
/// others upserted (the two sets never overlap, so the order in which
/// PostgreSQL runs the parts does not matter; the foreign key is checked
/// at the end of the statement, after the item is written).
const PUT: &str = "WITH item AS ( \
        INSERT INTO stategraph_store_items \
            (namespace, key, value, created_at, updated_at, ttl_minutes, expires_at) \
        VALUES ($1, $2, $3, $4, $4, $5, $6) \
        ON CONFLICT (namespace, key) DO UPDATE SET value = EXCLUDED.value, \
            updated_at = EXCLUDED.updated_at, ttl_minutes = EXCLUDED.ttl_minutes, \
            expires_at = EXCLUDED.expires_at \
    ), stale AS ( \
        DELETE FROM stategraph_store_vectors \
        WHERE namespace = $1 AND key = $2 AND idx >= cardinality($7::bytea[]) \
    ) \
    INSERT INTO stategraph_store_vectors (namespace, key, idx, embedding) \
    SELECT $1, $2, (v.n - 1)::integer, v.embedding \
    FROM UNNEST($7::bytea[]) WITH ORDINALITY AS v(embedding, n) \
    ON CONFLICT (namespace, key, idx) DO UPDATE SET embedding = EXCLUDED.embedding";

/// Deletes an item; its vectors go with it (`ON DELETE CASCADE`).
const DELETE: &str = "DELETE FROM stategraph_store_items WHERE namespace = $1 AND key = $2";

/// [`DELETE`] for many items.
const DELETE_MANY: &str = "DELETE FROM stategraph_store_items i \
    USING UNNEST($1::bytea[], $2::bytea[]) AS u(namespace, key) \
    WHERE i.namespace = u.namespace AND i.key = u.key";

/// The item part of [`PUT`] for many distinct items.
const PUT_MANY: &str = "INSERT INTO stategraph_store_items \
        (namespace, key, value, created_at, updated_at, ttl_minutes, expires_at) \
    SELECT u.namespace, u.key, u.value, $4, $4, u.ttl_minutes, u.expires_at \
    FROM UNNEST($1::bytea[], $2::bytea[], $3::text[], $5::float8[], $6::bigint[]) \
        AS u(namespace, key, value, ttl_minutes, expires_at) \
    ON CONFLICT (namespace, key) DO UPDATE SET value = EXCLUDED.value, \
        updated_at = EXCLUDED.updated_at, ttl_minutes = EXCLUDED.ttl_minutes, \
        expires_at = EXCLUDED.expires_at";

/// Deletes the vectors of many items past their new counts.
const TRIM_VECTORS: &str = "DELETE FROM stategraph_store_vectors v \
    USING UNNEST($1::bytea[], $2::bytea[], $3::integer[]) AS u(namespace, key, count) \
    WHERE v.namespace = u.namespace AND v.key = u.key AND v.idx >= u.count";

/// Upserts the vectors of many items.
const PUT_VECTORS: &str = "INSERT INTO stategraph_store_vectors (namespace, key, idx, embedding) \
    SELECT * FROM UNNEST($1::bytea[], $2::bytea[], $3::integer[], $4::bytea[]) \
    ON CONFLICT (namespace, key, idx) DO UPDATE SET embedding = EXCLUDED.embedding";

/// The columns of [`PUT_MANY`].
#[derive(Default)]
struct ItemColumns {
    namespaces: Vec<Vec<u8>>,
    keys: Vec<Vec<u8>>,
    values: Vec<String>,
    ttl_minutes: Vec<Option<f64>>,
    expires_at: Vec<Option<i64>>,
}

impl ItemColumns {
    fn push(&mut self, namespace: Vec<u8>, key: Vec<u8>, write: &Write) {
        self.namespaces.push(namespace);
        self.keys.push(key);
        self.values.push(write.value.clone());
        self.ttl_minutes.push(write.ttl_minutes);
        self.expires_at.push(write.expires_at);
    }
}

/// The columns of [`TRIM_VECTORS`] (`owners`, `counts`) and
/// [`PUT_VECTORS`] (the others).
#[derive(Default)]
struct VectorColumns {
    owners: (Vec<Vec<u8>>, Vec<Vec<u8>>),
    counts: Vec<i32>,
    namespaces: Vec<Vec<u8>>,
    keys: Vec<Vec<u8>>,
    indexes: Vec<i32>,
    embeddings: Vec<Vec<u8>>,
}

impl VectorColumns {
    fn push(&mut self, namespace: &[u8], key: &[u8], vectors: &[Vec<u8>]) {
        self.owners.0.push(namespace.to_vec());
        self.owners.1.push(key.to_vec());
        self.counts
            .push(i32::try_from(vectors.len()).unwrap_or(i32::MAX));
        for (index, embedding) in vectors.iter().enumerate() {
            self.namespaces.push(namespace.to_vec());
            self.keys.push(key.to_vec());
            self.indexes.push(i32::try_from(index).unwrap_or(i32::MAX));
            self.embeddings.push(embedding.clone());
        }
    }
}

const VECTORS: &str = "SELECT namespace, key, embedding FROM stategraph_store_vectors \
    WHERE (namespace, key) IN ( \
        SELECT u.namespace, u.key FROM UNNEST($1::bytea[], $2::bytea[]) AS u(namespace, key)) \
    ORDER BY namespace, key, idx";

/// Deletes up to `$2` items expired at `$1`, skipping rows another
/// transaction holds, with their vectors.
pub(crate) const SWEEP: &str = "WITH doomed AS ( \
        SELECT namespace, key FROM stategraph_store_items \
        WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED \
    ) \
    DELETE FROM stategraph_store_items i USING doomed d \
    WHERE i.namespace = d.namespace AND i.key = d.key";

/// A stored row that does not read back (byte labels shown as text).
fn corrupt(
    namespace: &[u8],
    key: &[u8],
    what: &str,
    source: impl std::error::Error + Send + Sync + 'static,
) -> Failure {
    let (namespace, key) = (
        String::from_utf8_lossy(namespace),
        String::from_utf8_lossy(key),
    );
    Failure::Final(stategraph_store::sql::corrupt(
        NAME, &namespace, &key, what, source,
    ))
}

/// Reads one `stategraph_store_items` row.
fn read_row(row: &PgRow) -> Attempt<Row> {
    let namespace: Vec<u8> = row.try_get(0)?;
    let key: Vec<u8> = row.try_get(1)?;
    let text = |bytes: Vec<u8>, what| {
        String::from_utf8(bytes).map_err(|err| {
            let bytes = err.as_bytes().to_vec();
            corrupt(&bytes, &[], what, err.utf8_error())
        })
    };
    Ok(Row {
        namespace: text(namespace, "namespace")?,
        key: text(key, "key")?,
        value: row.try_get(2)?,
        created_at: row.try_get(3)?,
        updated_at: row.try_get(4)?,
        ttl_minutes: row.try_get(5)?,
        expires_at: row.try_get(6)?,
    })
}

/// The deadline a read of `plan` extends a row's TTL to, and the one it
/// replaces (a refresh applies only if the deadline is still that one).
fn refresh_window(row: &Row, plan: &Plan) -> Option<(i64, i64)> {
    let was = row.expires_at?;
    row.refreshed(plan).map(|deadline| (deadline, was))
}

/// Statements of one batch on one transaction's connection.
pub(crate) struct Batch<'c> {
    pub(crate) conn: &'c mut PgConnection,
    /// Whether statements are named and cached.
    pub(crate) prepared: bool,
}

impl Batch<'_> {
    fn query(&self, sql: &'static str) -> sqlx::query::Query<'static, Postgres, PgArguments> {
        sqlx::query(sql).persistent(self.prepared)
    }

    /// Runs the reads of `plan` in order, each seeing the store as it was
    /// before the batch (and the TTLs the reads before it refreshed), then
    /// its puts in order, as `InMemoryStore` does.
    pub(crate) async fn run(&mut self, plan: &Plan) -> Attempt<Vec<OpResult>> {
        let mut results = Vec::with_capacity(plan.steps.len());
        for step in &plan.steps {
            results.push(match step {
                Step::Get {
                    namespace,
                    joined,
                    key,
                    refresh,
                } => OpResult::Item(self.get(plan, namespace, joined, key, *refresh).await?),
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
                    let mut passed = Vec::new();
                    for row in self.select(ITEMS, range.as_ref(), plan).await? {
                        let row = read_row(&row)?;
                        let namespace = split(&row.namespace);
                        if !has_prefix(&namespace, prefix) {
                            continue;
                        }
                        let value = row.value(NAME).map_err(Failure::Final)?;
                        if filter.matches(&value) {
                            passed.push((row, namespace, value));
                        }
                    }
                    let vectors = match query {
                        Some(_) => self.vectors(passed.iter().map(|(row, ..)| row)).await?,
                        None => HashMap::new(),
                    };
                    let mut deadlines = HashMap::new();
                    let mut candidates = Vec::with_capacity(passed.len());
                    for (row, namespace, value) in passed {
                        let address = (row.namespace.clone(), row.key.clone());
                        let score = query.as_ref().and_then(|query| {
                            best_score(query, vectors.get(&address).map_or(&[], Vec::as_slice))
                        });
                        if *refresh && let Some(deadline) = refresh_window(&row, plan) {
                            deadlines.insert(address, deadline);
                        }
                        candidates.push(SearchItem::new(row.item(namespace, value), score));
                    }
                    let page = rank_and_page(candidates, *limit, *offset);
                    self.refresh(&page, &deadlines).await?;
                    OpResult::Items(page)
                }
                Step::List { op, range } => {
                    let mut namespaces = Vec::new();
                    for row in self.select(NAMESPACES, range.as_ref(), plan).await? {
                        let joined: Vec<u8> = row.try_get(0)?;
                        let joined = String::from_utf8(joined).map_err(|err| {
                            let bytes = err.as_bytes().to_vec();
                            corrupt(&bytes, &[], "namespace", err.utf8_error())
                        })?;
                        namespaces.push(split(&joined));
                    }
                    OpResult::Namespaces(list_namespaces(&namespaces, op))
                }
            });
        }
        self.puts(plan).await?;
        Ok(results)
    }

    /// Applies the puts of `plan`: one statement for a single put; for
    /// more, the deletes, the item writes and the vector writes each take
    /// one statement, whatever the batch's size. Puts apply in order, so
    /// only the last put of an item counts, except that a delete before it
    /// makes it a new item (its `created_at` is now): such an item is
    /// deleted, then written.
    async fn puts(&mut self, plan: &Plan) -> Attempt<()> {
        let mut last: HashMap<(&str, &str), (Option<&Write>, bool)> = HashMap::new();
        let mut order: Vec<(&str, &str)> = Vec::new();
        for step in &plan.steps {
            if let Step::Put { joined, key, write } = step {
                let address = (joined.as_str(), key.as_str());
                let deleted_before = last.get(&address).is_some_and(|(_, deleted)| *deleted);
                let deleted = deleted_before || write.is_none();
                if last.insert(address, (write.as_ref(), deleted)).is_none() {
                    order.push(address);
                }
            }
        }
        if let [(joined, key)] = order[..]
            && let Some((write, deleted)) = last.get(&(joined, key)).copied()
            && (write.is_none() || !deleted)
        {
            return self.put(plan, joined, key, write).await;
        }
        let mut deletes = (Vec::new(), Vec::new());
        let mut items = ItemColumns::default();
        let mut vectors = VectorColumns::default();
        for address in order {
            let (joined, key) = (address.0.as_bytes().to_vec(), address.1.as_bytes().to_vec());
            let Some((write, deleted)) = last.get(&address).copied() else {
                continue;
            };
            if deleted {
                deletes.0.push(joined.clone());
                deletes.1.push(key.clone());
            }
            if let Some(write) = write {
                vectors.push(&joined, &key, &write.vectors);
                items.push(joined, key, write);
            }
        }
        if !deletes.0.is_empty() {
            self.query(DELETE_MANY)
                .bind(deletes.0)
                .bind(deletes.1)
                .execute(&mut *self.conn)
                .await?;
        }
        if !items.namespaces.is_empty() {
            self.query(PUT_MANY)
                .bind(items.namespaces)
                .bind(items.keys)
                .bind(items.values)
                .bind(plan.now_nanos)
                .bind(items.ttl_minutes)
                .bind(items.expires_at)
                .execute(&mut *self.conn)
                .await?;
            self.query(TRIM_VECTORS)
                .bind(vectors.owners.0)
                .bind(vectors.owners.1)
                .bind(vectors.counts)
                .execute(&mut *self.conn)
                .await?;
        }
        if !vectors.embeddings.is_empty() {
            self.query(PUT_VECTORS)
                .bind(vectors.namespaces)
                .bind(vectors.keys)
                .bind(vectors.indexes)
                .bind(vectors.embeddings)
                .execute(&mut *self.conn)
                .await?;
        }
        Ok(())
    }

    async fn get(
        &mut self,
        plan: &Plan,
        namespace: &Namespace,
        joined: &str,
        key: &str,
        refresh: bool,
    ) -> Attempt<Option<Item>> {
        let row = self
            .query(SELECT_ITEM)
            .bind(joined.as_bytes())
            .bind(key.as_bytes())
            .fetch_optional(&mut *self.conn)
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let row = read_row(&row)?;
        if plan.omit_expired && expired(row.expires_at, plan.now_nanos) {
            return Ok(None);
        }
        if refresh && let Some((at, was)) = refresh_window(&row, plan) {
            self.query(SET_EXPIRY)
                .bind(joined.as_bytes())
                .bind(key.as_bytes())
                .bind(at)
                .bind(was)
                .execute(&mut *self.conn)
                .await?;
        }
        let value = row.value(NAME).map_err(Failure::Final)?;
        Ok(Some(row.item(namespace.clone(), value)))
    }

    async fn put(
        &mut self,
        plan: &Plan,
        joined: &str,
        key: &str,
        write: Option<&Write>,
    ) -> Attempt<()> {
        let query = match write {
            None => self
                .query(DELETE)
                .bind(joined.as_bytes())
                .bind(key.as_bytes()),
            Some(write) => self
                .query(PUT)
                .bind(joined.as_bytes())
                .bind(key.as_bytes())
                .bind(write.value.as_str())
                .bind(plan.now_nanos)
                .bind(write.ttl_minutes)
                .bind(write.expires_at)
                .bind(write.vectors.as_slice()),
        };
        query.execute(&mut *self.conn).await?;
        Ok(())
    }

    /// Extends the TTL of the returned items that have a new deadline.
    async fn refresh(
        &mut self,
        page: &[SearchItem],
        deadlines: &HashMap<(String, String), (i64, i64)>,
    ) -> Attempt<()> {
        let (mut namespaces, mut keys) = (Vec::new(), Vec::new());
        let (mut ats, mut was) = (Vec::new(), Vec::new());
        for found in page {
            let address = (join(&found.item.namespace), found.item.key.clone());
            if let Some((at, before)) = deadlines.get(&address) {
                namespaces.push(address.0.into_bytes());
                keys.push(address.1.into_bytes());
                ats.push(*at);
                was.push(*before);
            }
        }
        if ats.is_empty() {
            return Ok(());
        }
        self.query(SET_EXPIRIES)
            .bind(namespaces)
            .bind(keys)
            .bind(ats)
            .bind(was)
            .execute(&mut *self.conn)
            .await?;
        Ok(())
    }

    /// The vectors of `rows`, in index order, by (namespace, key).
    async fn vectors(
        &mut self,
        rows: impl Iterator<Item = &Row>,
    ) -> Attempt<HashMap<(String, String), Vec<Vec<f32>>>> {
        let (namespaces, keys): (Vec<Vec<u8>>, Vec<Vec<u8>>) = rows
            .map(|row| {
                (
                    row.namespace.as_bytes().to_vec(),
                    row.key.as_bytes().to_vec(),
                )
            })
            .unzip();
        let mut vectors: HashMap<(String, String), Vec<Vec<f32>>> = HashMap::new();
        if namespaces.is_empty() {
            return Ok(vectors);
        }
        let rows = self
            .query(VECTORS)
            .bind(namespaces)
            .bind(keys)
            .fetch_all(&mut *self.conn)
            .await?;
        for row in rows {
            let namespace: Vec<u8> = row.try_get(0)?;
            let key: Vec<u8> = row.try_get(1)?;
            let bytes: Vec<u8> = row.try_get(2)?;
            let vector = stategraph_store::sql::decode_vector(&bytes).ok_or_else(|| {
                corrupt(
                    &namespace,
                    &key,
                    "vector",
                    stategraph_store::sql::BadVector(bytes.len()),
                )
            })?;
            // Both were UTF-8 when the item was read.
            let address = (
                String::from_utf8_lossy(&namespace).into_owned(),
                String::from_utf8_lossy(&key).into_owned(),
            );
            vectors.entry(address).or_default().push(vector);
        }
        Ok(vectors)
    }

    /// The rows of `base` (a `SELECT ... WHERE TRUE`) under `range` (all
    /// when `None`), without the expired ones when the plan omits them.
    async fn select(
        &mut self,
        base: &'static str,
        range: Option<&PrefixRange>,
        plan: &Plan,
    ) -> Attempt<Vec<PgRow>> {
        let mut sql = base.to_owned();
        let mut args = PgArguments::default();
        let add = |args: &mut PgArguments, value: Vec<u8>| {
            args.add(value)
                .map_err(|err| Failure::Db(sqlx::Error::Encode(err)))
        };
        if let Some(range) = range {
            add(&mut args, range.exact.as_bytes().to_vec())?;
            add(&mut args, range.low.as_bytes().to_vec())?;
            add(&mut args, range.high.as_bytes().to_vec())?;
            sql.push_str(" AND (namespace = $1 OR (namespace >= $2 AND namespace < $3))");
        }
        if plan.omit_expired {
            args.add(plan.now_nanos)
                .map_err(|err| Failure::Db(sqlx::Error::Encode(err)))?;
            let n = if range.is_some() { 4 } else { 1 };
            sql.push_str(&format!(" AND (expires_at IS NULL OR expires_at > ${n})"));
        }
        Ok(sqlx::query_with(AssertSqlSafe(sql), args)
            .persistent(self.prepared)
            .fetch_all(&mut *self.conn)
            .await?)
    }
}
