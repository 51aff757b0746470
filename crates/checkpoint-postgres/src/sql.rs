//! The SQL the saver runs. Every statement names its tables unqualified, so
//! they resolve through the connection's `search_path`.

/// Blob tag of a channel that has a version but no value (it was cleared).
pub(crate) const EMPTY_TAG: &str = "empty";

/// Checkpoints with their channel values and pending writes, one row each.
/// The caller appends `AND ...` conditions, `ORDER BY` and `LIMIT`.
///
/// Values are joined through the versions the checkpoint document records,
/// so a checkpoint reads exactly the blobs of its own versions; writes are
/// ordered by `(task_id, idx)` (byte order: the key columns are
/// `COLLATE "C"`, like Rust's `String` order). One statement reads
/// checkpoint, values and writes from one snapshot.
pub(crate) const SELECT_TUPLES: &str = "SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, \
        c.parent_checkpoint_id, c.checkpoint, c.metadata, \
        b.channels AS blob_channels, b.tags AS blob_tags, b.vals AS blob_values, \
        w.task_ids AS write_tasks, w.channels AS write_channels, w.tags AS write_tags, \
        w.vals AS write_values \
    FROM stategraph_checkpoints c \
    LEFT JOIN LATERAL ( \
        SELECT array_agg(bl.channel) AS channels, array_agg(bl.tag) AS tags, \
            array_agg(bl.value) AS vals \
        FROM jsonb_each_text(c.checkpoint -> 'channel_versions') AS cv(channel, version) \
        JOIN stategraph_checkpoint_blobs bl \
            ON bl.thread_id = c.thread_id AND bl.checkpoint_ns = c.checkpoint_ns \
            AND bl.channel = cv.channel AND bl.version = cv.version \
    ) b ON TRUE \
    LEFT JOIN LATERAL ( \
        SELECT array_agg(wr.task_id ORDER BY wr.task_id, wr.idx) AS task_ids, \
            array_agg(wr.channel ORDER BY wr.task_id, wr.idx) AS channels, \
            array_agg(wr.tag ORDER BY wr.task_id, wr.idx) AS tags, \
            array_agg(wr.value ORDER BY wr.task_id, wr.idx) AS vals \
        FROM stategraph_checkpoint_writes wr \
        WHERE wr.thread_id = c.thread_id AND wr.checkpoint_ns = c.checkpoint_ns \
            AND wr.checkpoint_id = c.checkpoint_id \
    ) w ON TRUE \
    WHERE TRUE";

/// Stores the new blobs, their pieces and the checkpoint in one statement. A re-put of the
/// same id replaces checkpoint and metadata only when the parent is the same;
/// otherwise no row is returned (a conflict) and the caller rolls back, which
/// also undoes the blobs.
///
/// Blobs are inserted if absent: a version names one value.
pub(crate) const PUT: &str = "WITH blobs AS ( \
        INSERT INTO stategraph_checkpoint_blobs \
            (thread_id, checkpoint_ns, channel, version, tag, value) \
        SELECT $1, $2, b.channel, b.version, b.tag, b.value \
        FROM UNNEST($7::text[], $8::text[], $9::text[], $10::bytea[]) \
            AS b(channel, version, tag, value) \
        ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING \
    ), pieces AS ( \
        INSERT INTO stategraph_checkpoint_pieces (thread_id, id, value) \
        SELECT $1, p.id, p.value FROM UNNEST($11::bytea[], $12::bytea[]) AS p(id, value) \
        ON CONFLICT (thread_id, id) DO NOTHING \
    ) \
    INSERT INTO stategraph_checkpoints \
        (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata) \
    VALUES ($1, $2, $3, $4, $5, $6) \
    ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE \
        SET checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata \
        WHERE stategraph_checkpoints.parent_checkpoint_id \
            IS NOT DISTINCT FROM EXCLUDED.parent_checkpoint_id \
    RETURNING checkpoint_id";

/// The parent a stored checkpoint was put with (to explain a conflict).
pub(crate) const STORED_PARENT: &str = "SELECT parent_checkpoint_id FROM stategraph_checkpoints \
    WHERE thread_id = $1 AND checkpoint_ns = $2 AND checkpoint_id = $3";

/// Serialises `put_if_head` calls on one thread and namespace until commit.
/// The two-key form keeps these locks apart from `setup()`'s one-key lock; a
/// hash collision only makes two heads queue behind each other.
pub(crate) const LOCK_HEAD: &str = "SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))";

/// The head (latest checkpoint) of a thread and namespace. Run after
/// [`LOCK_HEAD`], in its own statement, so its snapshot sees every commit made
/// before the lock was granted.
pub(crate) const HEAD: &str = "SELECT checkpoint_id FROM stategraph_checkpoints \
    WHERE thread_id = $1 AND checkpoint_ns = $2 ORDER BY checkpoint_id DESC LIMIT 1";

/// Takes, until commit, the lock of thread `$1`'s pieces: shared by every
/// transaction that stores pieces (it may rely on a piece already stored),
/// exclusive ([`LOCK_PIECES`]) while [`STORED_SKELETONS`] and
/// [`COLLECT_PIECES`] decide which pieces nothing refers to any more.
pub(crate) const SHARE_PIECES: &str =
    "SELECT pg_advisory_xact_lock_shared(hashtext($1), 1885693795)";

/// The exclusive form of [`SHARE_PIECES`] for each thread in `$1`, taken in
/// thread order so that two collections never wait for each other.
pub(crate) const LOCK_PIECES: &str = "SELECT pg_advisory_xact_lock(hashtext(t), 1885693795) \
    FROM (SELECT t FROM UNNEST($1::text[]) AS t ORDER BY t) AS threads";

/// The skeletons (values stored with tag `$2`) of the threads in `$1`.
pub(crate) const STORED_SKELETONS: &str = "SELECT thread_id, value \
        FROM stategraph_checkpoint_blobs WHERE thread_id = ANY($1) AND tag = $2 \
    UNION ALL SELECT thread_id, value \
        FROM stategraph_checkpoint_writes WHERE thread_id = ANY($1) AND tag = $2";

/// Deletes the pieces of the threads in `$1` but those listed as
/// `($2[i], $3[i])` (thread, id).
pub(crate) const COLLECT_PIECES: &str = "DELETE FROM stategraph_checkpoint_pieces p \
    WHERE p.thread_id = ANY($1) AND (p.thread_id, p.id) NOT IN ( \
        SELECT k.thread_id, k.id FROM UNNEST($2::text[], $3::bytea[]) AS k(thread_id, id))";

/// The pieces `($1[i], $2[i])` (thread, id) that are stored.
pub(crate) const SELECT_PIECES: &str = "SELECT p.thread_id, p.id, p.value \
    FROM stategraph_checkpoint_pieces p \
    JOIN UNNEST($1::text[], $2::bytea[]) AS k(thread_id, id) \
        ON p.thread_id = k.thread_id AND p.id = k.id";

/// Stores a task's writes and their pieces in one statement. Ordinary
/// writes (index >= 0) are first-writer-wins, special writes (negative
/// index) last-writer-wins, decided per row.
pub(crate) const PUT_WRITES: &str = "WITH pieces AS ( \
        INSERT INTO stategraph_checkpoint_pieces (thread_id, id, value) \
        SELECT $1, p.id, p.value FROM UNNEST($10::bytea[], $11::bytea[]) AS p(id, value) \
        ON CONFLICT (thread_id, id) DO NOTHING \
    ) \
    INSERT INTO stategraph_checkpoint_writes \
        (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, tag, value) \
    SELECT $1, $2, $3, $4, $5, w.idx, w.channel, w.tag, w.value \
    FROM UNNEST($6::bigint[], $7::text[], $8::text[], $9::bytea[]) AS w(idx, channel, tag, value) \
    ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE \
        SET channel = EXCLUDED.channel, tag = EXCLUDED.tag, value = EXCLUDED.value, \
            task_path = EXCLUDED.task_path \
        WHERE EXCLUDED.idx < 0";

/// Deletes everything of the threads in `$1` in one statement (one snapshot,
/// one implicit transaction).
pub(crate) const DELETE_THREADS: &str = "WITH writes AS ( \
        DELETE FROM stategraph_checkpoint_writes WHERE thread_id = ANY($1) \
    ), blobs AS ( \
        DELETE FROM stategraph_checkpoint_blobs WHERE thread_id = ANY($1) \
    ), pieces AS ( \
        DELETE FROM stategraph_checkpoint_pieces WHERE thread_id = ANY($1) \
    ) \
    DELETE FROM stategraph_checkpoints WHERE thread_id = ANY($1)";

/// Deletes the checkpoints (and their writes) of the runs in `$1`; returns
/// the threads touched, whose unreferenced blobs [`COLLECT_BLOBS`] removes.
pub(crate) const DELETE_RUNS: &str = "WITH doomed AS ( \
        DELETE FROM stategraph_checkpoints WHERE metadata ->> 'run_id' = ANY($1) \
        RETURNING thread_id, checkpoint_ns, checkpoint_id \
    ), writes AS ( \
        DELETE FROM stategraph_checkpoint_writes wr USING doomed d \
        WHERE wr.thread_id = d.thread_id AND wr.checkpoint_ns = d.checkpoint_ns \
            AND wr.checkpoint_id = d.checkpoint_id \
    ) \
    SELECT DISTINCT thread_id FROM doomed";

/// Deletes every checkpoint of the threads in `$1` but the latest of each
/// namespace, with their writes.
pub(crate) const PRUNE_KEEP_LATEST: &str = "WITH doomed AS ( \
        DELETE FROM stategraph_checkpoints c \
        WHERE c.thread_id = ANY($1) AND c.checkpoint_id < ( \
            SELECT max(l.checkpoint_id) FROM stategraph_checkpoints l \
            WHERE l.thread_id = c.thread_id AND l.checkpoint_ns = c.checkpoint_ns) \
        RETURNING c.thread_id, c.checkpoint_ns, c.checkpoint_id \
    ), writes AS ( \
        DELETE FROM stategraph_checkpoint_writes wr USING doomed d \
        WHERE wr.thread_id = d.thread_id AND wr.checkpoint_ns = d.checkpoint_ns \
            AND wr.checkpoint_id = d.checkpoint_id \
    ) \
    SELECT count(*) FROM doomed";

/// Deletes the blobs of the threads in `$1` that no remaining checkpoint
/// refers to. Runs in the transaction of the delete before it, as a separate
/// statement so it sees that delete. The repeated `c.thread_id = ANY($1)`
/// keeps the planner from hashing every checkpoint of the table.
pub(crate) const COLLECT_BLOBS: &str = "DELETE FROM stategraph_checkpoint_blobs bl \
    WHERE bl.thread_id = ANY($1) AND NOT EXISTS ( \
        SELECT 1 FROM stategraph_checkpoints c, \
            jsonb_each_text(c.checkpoint -> 'channel_versions') AS cv(channel, version) \
        WHERE c.thread_id = ANY($1) AND c.thread_id = bl.thread_id \
            AND c.checkpoint_ns = bl.checkpoint_ns \
            AND cv.channel = bl.channel AND cv.version = bl.version)";

/// Copies thread `$1` to thread `$2` in one statement, replacing what the
/// target already holds under the same keys.
pub(crate) const COPY_THREAD: &str = "WITH pieces AS ( \
        INSERT INTO stategraph_checkpoint_pieces (thread_id, id, value) \
        SELECT $2, id, value FROM stategraph_checkpoint_pieces WHERE thread_id = $1 \
        ON CONFLICT (thread_id, id) DO NOTHING \
    ), blobs AS ( \
        INSERT INTO stategraph_checkpoint_blobs \
            (thread_id, checkpoint_ns, channel, version, tag, value) \
        SELECT $2, checkpoint_ns, channel, version, tag, value \
        FROM stategraph_checkpoint_blobs WHERE thread_id = $1 \
        ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO UPDATE \
            SET tag = EXCLUDED.tag, value = EXCLUDED.value \
    ), writes AS ( \
        INSERT INTO stategraph_checkpoint_writes \
            (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, tag, value) \
        SELECT $2, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, tag, value \
        FROM stategraph_checkpoint_writes WHERE thread_id = $1 \
        ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE \
            SET channel = EXCLUDED.channel, tag = EXCLUDED.tag, value = EXCLUDED.value, \
                task_path = EXCLUDED.task_path \
    ) \
    INSERT INTO stategraph_checkpoints \
        (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata) \
    SELECT $2, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata \
    FROM stategraph_checkpoints WHERE thread_id = $1 \
    ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE \
        SET parent_checkpoint_id = EXCLUDED.parent_checkpoint_id, \
            checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata";
