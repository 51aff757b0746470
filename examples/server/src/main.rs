//! Serves graphs over the LangGraph Server API, so the official Python and
//! JS SDKs, `RemoteGraph` and Agent Chat UI can use them:
//!
//! ```text
//! cargo run -p server                      # http://127.0.0.1:8123
//! cargo run -p server -- --port 0          # any free port (the first line says which)
//! cargo run -p server -- --database-url memory   # nothing kept on disk
//! ```
//!
//! It serves the quickstart agent as `agent` (a ReAct agent with a weather
//! and a calculator tool, over an OpenAI-compatible endpoint when
//! `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set, else a scripted model), and
//! Rust ports of the official server's fixture graphs under their names
//! (`hitl`, `simple`, `parent`, `boom`: `shared/server/fixture`), which the
//! client test suites drive. Settings come from `stategraph.toml` and
//! `STATEGRAPH_*` variables (see the `stategraph-server` crate), then these
//! flags.

// A server program: it says where it listens, and with which model.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;

use clap::Parser;
use stategraph_server::{Server, Settings};

/// The flags, over the settings file and the environment.
#[derive(Debug, Parser)]
#[command(about = "Serves stategraph graphs over the LangGraph Server API")]
struct Args {
    /// The settings file (default `./stategraph.toml` when it exists, or
    /// `STATEGRAPH_CONFIG`).
    #[arg(long)]
    config: Option<PathBuf>,
    /// The address to listen on.
    #[arg(long)]
    host: Option<String>,
    /// The port (0: any free port).
    #[arg(long)]
    port: Option<u16>,
    /// Where the server keeps its records, checkpoints and store items:
    /// `sqlite://PATH` (default `sqlite://stategraph.db`) or `memory`.
    #[arg(long)]
    database_url: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut settings = match &args.config {
        Some(path) => Settings::from_file(path)?.with_env(|name| std::env::var(name).ok())?,
        None => Settings::load()?,
    };
    if let Some(host) = args.host {
        settings.server.host = host;
    }
    if let Some(port) = args.port {
        settings.server.port = port;
    }
    if let Some(url) = args.database_url {
        settings.database.url = url;
    }
    let (model, model_name) = quickstart::model()?;
    eprintln!("agent: the quickstart agent, model {model_name}");
    let agent = quickstart::agent(model, stategraph::graph::CompileOptions::new())?;
    let mut builder = Server::builder().settings(settings).graph("agent", agent);
    for (id, graph) in stategraph_server::fixtures::all()? {
        builder = builder.graph(id, graph);
    }
    let bound = builder.build().await?.bind().await?;
    // The first line is what scripts read to find the port.
    println!("listening on http://{}", bound.local_addr());
    bound.serve().await?;
    Ok(())
}
