//! `Server`: the graphs it serves and its settings; binding and serving.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use stategraph::checkpoint::SharedSaver;
use stategraph::graph::CompiledStateGraph;
use stategraph::store::SharedStore;
use tokio::net::TcpListener;

use crate::api::ApiError;
use crate::assistants::{Assistant, system_id};
use crate::auth::{Auth, DynAuth};
use crate::error::Error;
use crate::persist::{Repository, Storage};
use crate::runs::RunManager;
use crate::settings::Settings;

/// Builds a [`Server`]: its settings and the graphs it serves by id.
#[derive(Debug, Default)]
#[must_use]
pub struct ServerBuilder {
    settings: Settings,
    graphs: Vec<(String, CompiledStateGraph)>,
    auth: Option<Arc<dyn DynAuth>>,
}

impl ServerBuilder {
    /// Serves with these settings (default: [`Settings::default`]).
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// Authenticates every request but the health and info routes, and
    /// authorizes each operation, with `auth` (`langgraph.json`'s `auth`).
    pub fn auth(mut self, auth: impl Auth) -> Self {
        self.auth = Some(Arc::new(auth));
        self
    }

    /// Serves `graph` under `id` (one entry of `langgraph.json`'s `graphs`).
    pub fn graph(mut self, id: impl Into<String>, graph: CompiledStateGraph) -> Self {
        self.graphs.push((id.into(), graph));
        self
    }

    /// The server.
    ///
    /// # Errors
    /// Two graphs under one id ([`Error::DuplicateGraph`]); an origin in
    /// `http.cors_allow_origins` that is not a header value
    /// ([`Error::InvalidSetting`]); a database that cannot be opened
    /// ([`Error::Database`]) or is not served yet ([`Error::Unsupported`]).
    pub async fn build(self) -> Result<Server, Error> {
        for origin in &self.settings.http.cors_allow_origins {
            if axum::http::HeaderValue::from_str(origin).is_err() {
                return Err(Error::InvalidSetting {
                    name: "http.cors_allow_origins",
                    message: format!("{origin:?} is not an origin"),
                });
            }
        }
        if let Some(minutes) = self.settings.threads.default_ttl_minutes {
            crate::threads::ThreadTtl::check_minutes(minutes).map_err(|message| {
                Error::InvalidSetting {
                    name: "threads.default_ttl_minutes",
                    message,
                }
            })?;
        }
        for (index, (id, _)) in self.graphs.iter().enumerate() {
            if self.graphs[..index].iter().any(|(other, _)| other == id) {
                return Err(Error::DuplicateGraph(id.clone()));
            }
        }
        let Storage {
            repository,
            saver,
            store,
            sweeper,
        } = Storage::open(&self.settings.database, &self.settings.store).await?;
        // One system assistant per graph, made the first time a server
        // serves that graph on this database (API.md 1.3).
        let now = chrono::Utc::now();
        for (id, _) in &self.graphs {
            repository
                .insert_assistant(Assistant::system(id, now))
                .await
                .map_err(|err| Error::Database {
                    url: self.settings.database.url.clone(),
                    message: err.0,
                })?;
        }
        // Runs and the state API use the server's saver and store, as
        // LangGraph Server ignores a graph's own.
        let graphs = self
            .graphs
            .into_iter()
            .map(|(id, graph)| {
                if graph.pregel().checkpointer().is_some() {
                    tracing::warn!(graph = %id, "the graph's own checkpointer is replaced by the server's");
                }
                let graph = graph.with_checkpointer(saver.clone()).with_store(store.clone());
                (id, graph)
            })
            .collect();
        let runs = Arc::new(RunManager::new(
            self.settings.runs.max_concurrent,
            Duration::from_secs(self.settings.streams.resumable_ttl_seconds),
        ));
        Ok(Server {
            core: Arc::new(Core {
                settings: self.settings,
                graphs,
                auth: self.auth,
                http: reqwest::Client::new(),
                repository,
                saver,
                store,
                _sweeper: sweeper,
                runs,
            }),
        })
    }
}

/// What every request reads: the graphs, the server's records, and the
/// saver and store the graphs are bound to.
#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) settings: Settings,
    /// The graphs by id, in registration order, bound to `saver` and
    /// `store`.
    pub(crate) graphs: Vec<(String, CompiledStateGraph)>,
    /// Who may call, and do what; `None`: anyone, anything.
    pub(crate) auth: Option<Arc<dyn DynAuth>>,
    /// The client webhooks are called with.
    pub(crate) http: reqwest::Client,
    pub(crate) repository: Arc<dyn Repository>,
    pub(crate) saver: SharedSaver,
    pub(crate) store: SharedStore,
    /// Deletes expired store items while the server lives.
    _sweeper: stategraph::store::Sweeper,
    pub(crate) runs: Arc<RunManager>,
}

impl Core {
    /// The graph registered under `graph_id`.
    pub(crate) fn graph(&self, graph_id: &str) -> Option<&CompiledStateGraph> {
        self.graphs
            .iter()
            .find(|(id, _)| id == graph_id)
            .map(|(_, graph)| graph)
    }

    /// The graph ids, in registration order.
    pub(crate) fn graph_ids(&self) -> impl Iterator<Item = &str> {
        self.graphs.iter().map(|(id, _)| id.as_str())
    }

    /// The assistant with that id, if there is one and it runs a graph this
    /// server serves (the others are hidden, as the official server hides
    /// them).
    ///
    /// # Errors
    /// The repository's.
    pub(crate) async fn assistant(
        &self,
        assistant_id: &str,
    ) -> Result<Option<Assistant>, crate::persist::PersistError> {
        let found = self.repository.get_assistant(assistant_id).await?;
        Ok(found.filter(|assistant| self.graph(&assistant.graph_id).is_some()))
    }

    /// 404 naming the registered graphs unless `graph_id` is one of them
    /// (the official text).
    ///
    /// # Errors
    /// That 404.
    pub(crate) fn graph_exists(&self, graph_id: &str) -> Result<(), ApiError> {
        if self.graph(graph_id).is_some() {
            return Ok(());
        }
        let mut ids: Vec<&str> = self.graph_ids().collect();
        ids.sort_unstable();
        let listed: Vec<String> = ids.iter().map(|id| format!("'{id}'")).collect();
        Err(ApiError::not_found(format!(
            "Graph '{graph_id}' not found. Expected one of: [{}]",
            listed.join(", ")
        )))
    }

    /// The assistant id that `id` names: itself when a UUID, else the
    /// system assistant of the graph with that id (API.md 1.3).
    ///
    /// # Errors
    /// 422 listing the registered graphs (TRANSCRIPTS.md section 12).
    pub(crate) fn resolve_assistant(&self, id: &str) -> Result<String, ApiError> {
        if let Ok(uuid) = uuid::Uuid::parse_str(id) {
            return Ok(uuid.to_string());
        }
        if self.graph_ids().any(|graph| graph == id) {
            return Ok(system_id(id));
        }
        let graphs: Vec<&str> = self.graph_ids().collect();
        Err(ApiError::invalid(format!(
            "Invalid assistant: '{id}'. Must be either:\n- A valid assistant UUID, or\n- One of the registered graphs: {}",
            graphs.join(", ")
        )))
    }
}

/// A LangGraph Server API server for a set of graphs.
#[derive(Clone, Debug)]
pub struct Server {
    core: Arc<Core>,
}

impl Server {
    /// A builder.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// The ids of the graphs it serves, in the order they were registered.
    pub fn graph_ids(&self) -> impl Iterator<Item = &str> {
        self.core.graph_ids()
    }

    /// Its settings.
    pub fn settings(&self) -> &Settings {
        &self.core.settings
    }

    /// The API as an axum router, to serve or to mount in an app of your
    /// own (the one public item tied to axum's version).
    pub fn into_router(self) -> axum::Router {
        crate::api::router(self.core)
    }

    /// Takes over the runs a stopped server left pending or running on this
    /// database (each queues again; one that was running goes on from its
    /// last checkpoint as its next attempt), then listens on the settings'
    /// address (port 0: a free one).
    ///
    /// # Errors
    /// [`Error::Database`] when the runs cannot be read; [`Error::Listen`].
    pub async fn bind(self) -> Result<BoundServer, Error> {
        // Runs a stopped server left in flight on this database go on here.
        crate::runs::manager::recover(&self.core)
            .await
            .map_err(|err| Error::Database {
                url: self.core.settings.database.url.clone(),
                message: err.0,
            })?;
        let address = self.core.settings.address();
        let listener = TcpListener::bind(&address)
            .await
            .map_err(|source| Error::Listen {
                address: address.clone(),
                source,
            })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| Error::Listen { address, source })?;
        Ok(BoundServer {
            listener,
            local_addr,
            core: Arc::clone(&self.core),
            router: self.into_router(),
        })
    }
}

/// A server listening on its address, not yet serving.
#[derive(Debug)]
pub struct BoundServer {
    listener: TcpListener,
    local_addr: SocketAddr,
    core: Arc<Core>,
    router: axum::Router,
}

impl BoundServer {
    /// The address it listens on (with the port the system picked for 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves until the process gets SIGINT (Ctrl-C) or SIGTERM (what
    /// container runtimes send), then shuts down as
    /// [`BoundServer::serve_until`] describes.
    ///
    /// # Errors
    /// [`Error::Listen`] when serving fails.
    pub async fn serve(self) -> Result<(), Error> {
        self.serve_until(async {
            #[cfg(unix)]
            {
                use tokio::signal::unix::{SignalKind, signal};
                if let Ok(mut terminate) = signal(SignalKind::terminate()) {
                    tokio::select! {
                        _ = tokio::signal::ctrl_c() => {}
                        _ = terminate.recv() => {}
                    }
                    return;
                }
            }
            // Without a signal handler the server runs until dropped.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        })
        .await
    }

    /// Serves until `shutdown` completes. While it serves, it fires due
    /// crons (unless `crons.enabled` is off). Then it stops accepting, ends
    /// open streams, lets requests in flight finish, and gives runs in
    /// flight `server.shutdown_grace_seconds` to end; the rest stop with
    /// their records left `running`, for the next server on the database.
    ///
    /// # Errors
    /// [`Error::Listen`] when serving fails.
    pub async fn serve_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), Error> {
        let address = self.local_addr.to_string();
        use axum::serve::ListenerExt;
        // Events and answers are small writes: sent at once, not held back
        // until the client's ACK (Nagle's delay cost ~40 ms per request).
        let listener = self.listener.tap_io(|stream| {
            if let Err(err) = stream.set_nodelay(true) {
                tracing::debug!(error = %err, "cannot set TCP_NODELAY");
            }
        });
        // The cron scheduler runs while the server serves.
        let scheduler = self
            .core
            .settings
            .crons
            .enabled
            .then(|| tokio::spawn(crate::crons::scheduler::run(Arc::clone(&self.core))));
        // So does the sweeper of expired threads.
        let ttl_sweeper = tokio::spawn(crate::api::sweep_expired_threads(Arc::clone(&self.core)));
        // On shutdown, open streams end (so connections close) and runs in
        // flight get `server.shutdown_grace_seconds` to finish; the rest
        // are taken over by the next server on the database.
        let core = Arc::clone(&self.core);
        let grace = Duration::try_from_secs_f64(core.settings.server.shutdown_grace_seconds)
            .unwrap_or(Duration::from_secs(10));
        let stopping = async move {
            shutdown.await;
            core.runs.shutdown.cancel();
        };
        let served = axum::serve(listener, self.router)
            .with_graceful_shutdown(stopping)
            .await
            .map_err(|source| Error::Listen { address, source });
        if let Some(scheduler) = scheduler {
            scheduler.abort();
        }
        ttl_sweeper.abort();
        if !self.core.runs.drain(grace).await {
            tracing::warn!(
                "runs still in flight at shutdown; the next server on this database takes them over"
            );
        }
        served
    }
}
