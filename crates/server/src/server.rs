//! `Server`: the graphs it serves and its settings; binding and serving.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use stategraph::graph::CompiledStateGraph;
use tokio::net::TcpListener;

use crate::error::Error;
use crate::settings::Settings;

/// Builds a [`Server`]: its settings and the graphs it serves by id.
#[derive(Debug, Default)]
#[must_use]
pub struct ServerBuilder {
    settings: Settings,
    graphs: Vec<(String, CompiledStateGraph)>,
}

impl ServerBuilder {
    /// Serves with these settings (default: [`Settings::default`]).
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
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
    /// ([`Error::InvalidSetting`]).
    pub fn build(self) -> Result<Server, Error> {
        for origin in &self.settings.http.cors_allow_origins {
            if axum::http::HeaderValue::from_str(origin).is_err() {
                return Err(Error::InvalidSetting {
                    name: "http.cors_allow_origins",
                    message: format!("{origin:?} is not an origin"),
                });
            }
        }
        for (index, (id, _)) in self.graphs.iter().enumerate() {
            if self.graphs[..index].iter().any(|(other, _)| other == id) {
                return Err(Error::DuplicateGraph(id.clone()));
            }
        }
        let now = crate::assistants::timestamp(chrono::Utc::now());
        let assistants = self
            .graphs
            .iter()
            .map(|(id, _)| crate::assistants::Assistant::system(id, &now))
            .collect();
        Ok(Server {
            settings: self.settings,
            graphs: self.graphs.into(),
            assistants,
        })
    }
}

/// A LangGraph Server API server for a set of graphs.
#[derive(Clone, Debug)]
pub struct Server {
    settings: Settings,
    graphs: Arc<[(String, CompiledStateGraph)]>,
    // One system assistant per graph, made when the server is built.
    assistants: Arc<[crate::assistants::Assistant]>,
}

impl Server {
    /// A builder.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// The ids of the graphs it serves, in the order they were registered.
    pub fn graph_ids(&self) -> impl Iterator<Item = &str> {
        self.graphs.iter().map(|(id, _)| id.as_str())
    }

    /// Its settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The API as an axum router, to serve or to mount in an app of your
    /// own (the one public item tied to axum's version).
    pub fn into_router(self) -> axum::Router {
        let state = crate::api::ApiState {
            graph_ids: self.graphs.iter().map(|(id, _)| id.clone()).collect(),
            assistants: self.assistants,
        };
        crate::api::router(&self.settings, state)
    }

    /// Listens on the settings' address (port 0: a free one).
    ///
    /// # Errors
    /// [`Error::Listen`].
    pub async fn bind(self) -> Result<BoundServer, Error> {
        let address = self.settings.address();
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
            router: self.into_router(),
        })
    }
}

/// A server listening on its address, not yet serving.
#[derive(Debug)]
pub struct BoundServer {
    listener: TcpListener,
    local_addr: SocketAddr,
    router: axum::Router,
}

impl BoundServer {
    /// The address it listens on (with the port the system picked for 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves until the process gets SIGINT (Ctrl-C), then stops
    /// accepting and lets requests in flight finish.
    ///
    /// # Errors
    /// [`Error::Listen`] when serving fails.
    pub async fn serve(self) -> Result<(), Error> {
        self.serve_until(async {
            // Without a signal handler the server runs until dropped.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        })
        .await
    }

    /// Serves until `shutdown` completes, then stops as [`BoundServer::serve`].
    ///
    /// # Errors
    /// [`Error::Listen`] when serving fails.
    pub async fn serve_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), Error> {
        let address = self.local_addr.to_string();
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(|source| Error::Listen { address, source })
    }
}
