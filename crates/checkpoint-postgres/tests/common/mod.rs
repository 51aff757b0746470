//! Test support: a fresh PostgreSQL schema per test, dropped when the last
//! pool using it is dropped.
// Each test binary uses a different part of this module.
#![allow(dead_code)]

pub(crate) mod proxy;

use std::str::FromStr;
use std::sync::Arc;

use stategraph_checkpoint_postgres::PostgresSaver;
use stategraph_checkpoint_postgres::sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use stategraph_checkpoint_postgres::sqlx::{self, AssertSqlSafe, Connection, PgConnection};

/// The variable holding the test server's URL.
pub(crate) const URL_VAR: &str = "STATEGRAPH_TEST_POSTGRES_URL";

/// The test server's URL; `None` (after printing one line naming `test`) when
/// the variable is unset.
pub(crate) fn url(test: &str) -> Option<String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            // The one line STYLE.md 7 asks for when no server is configured.
            #[allow(clippy::print_stdout)]
            {
                println!("{test}: {URL_VAR} is unset, skipped (no PostgreSQL server)");
            }
            None
        }
    }
}

/// A schema that exists while any pool built on it exists.
pub(crate) struct Schema {
    url: String,
    /// The schema's name (also the first entry of its pools' `search_path`).
    pub(crate) name: String,
}

impl Schema {
    /// Creates a uniquely named schema.
    pub(crate) async fn create(url: &str) -> Arc<Self> {
        let name = format!("sg_test_{}", uuid::Uuid::new_v4().simple());
        let mut conn = PgConnection::connect(url).await.unwrap();
        sqlx::raw_sql(AssertSqlSafe(format!("CREATE SCHEMA \"{name}\"")))
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
        Arc::new(Self {
            url: url.to_owned(),
            name,
        })
    }

    /// The connection options of the test server.
    pub(crate) fn options(&self) -> PgConnectOptions {
        PgConnectOptions::from_str(&self.url).unwrap()
    }

    /// A pool whose connections use this schema, reporting
    /// `application_name` when given.
    pub(crate) async fn pool(
        self: &Arc<Self>,
        max_connections: u32,
        application_name: Option<&str>,
    ) -> PgPool {
        let mut options = self.options();
        if let Some(name) = application_name {
            options = options.application_name(name);
        }
        self.pool_with(options, max_connections).await
    }

    /// A pool of at most `max_connections` connections made with `options`
    /// (another host or port, such as a proxy's), using this schema.
    pub(crate) async fn pool_with(
        self: &Arc<Self>,
        options: PgConnectOptions,
        max_connections: u32,
    ) -> PgPool {
        let schema = Arc::clone(self);
        PostgresSaver::pool_options()
            .max_connections(max_connections)
            .after_connect(move |conn, _meta| {
                // The closure owns `schema`: the schema lives as long as the pool.
                let set = format!("SET search_path TO \"{}\"", schema.name);
                Box::pin(async move {
                    sqlx::raw_sql(AssertSqlSafe(set)).execute(conn).await?;
                    Ok(())
                })
            })
            .connect_with(options)
            .await
            .unwrap()
    }

    /// A set-up saver on a fresh schema.
    pub(crate) async fn saver(url: &str) -> PostgresSaver {
        let schema = Self::create(url).await;
        let saver = PostgresSaver::from_pool(schema.pool(10, None).await);
        saver.setup().await.unwrap();
        saver
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let url = self.url.clone();
        let drop = format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name);
        // Drop runs inside the test's runtime, which cannot be blocked on:
        // drop the schema from a thread with its own runtime, and wait.
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let mut conn = PgConnection::connect(&url).await.ok()?;
                sqlx::raw_sql(AssertSqlSafe(drop))
                    .execute(&mut conn)
                    .await
                    .ok()?;
                conn.close().await.ok()
            })
        });
        let _ = cleanup.join();
    }
}

/// A plain pool on the server (no schema), for inspecting or sabotaging
/// what the saver's pools do.
pub(crate) async fn admin_pool(url: &str) -> PgPool {
    PgPoolOptions::new()
        .max_connections(2)
        .connect(url)
        .await
        .unwrap()
}

/// Waits until every connection of `pool` is back in it, idle. sqlx hands a
/// connection back in a background task, after a ping; a test that cuts the
/// network waits for that first, or the ping would hang with it.
pub(crate) async fn wait_until_idle(pool: &PgPool) {
    for _ in 0..400 {
        if u32::try_from(pool.num_idle()).is_ok_and(|idle| idle == pool.size()) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the pool's connections did not come back");
}
