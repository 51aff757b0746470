//! `cargo xtask bench-server [--official PYTHON] [-c 1,8,64] [-s SECONDS]`:
//! the same load (`stategraph-bench`'s `server_load`) against
//! `examples/server` in memory, on SQLite and on a throwaway PostgreSQL,
//! and, with
//! `--official`, against the official server (`langgraph dev` from the
//! Python environment given, serving the same fixture graphs), in one run.
//! Prints each server's JSON lines, its peak RSS, then a table of runs/s
//! and p99 side by side. Everything talks to 127.0.0.1.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// A started server, killed when dropped.
struct Running {
    child: Child,
    url: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        // Already gone is fine.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    /// Its peak resident memory so far, in MB (`VmHWM`).
    fn peak_rss_mb(&self) -> Option<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let kb: f64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kb / 1024.0)
    }
}

/// Our server on `database`, built with the benchmark profile.
fn ours(root: &Path, database: &str) -> Result<Running> {
    let binary = root.join("target/benchmark/server");
    let mut command = Command::new(&binary);
    // A direct connection: PostgreSQL's prepared statements on, as a
    // deployment without a transaction-mode pooler runs it.
    if database.starts_with("postgres") {
        command.env("STATEGRAPH_DATABASE_PREPARED_STATEMENTS", "true");
    }
    let mut child = command
        .args(["--port", "0", "--database-url", database])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {}", binary.display()))?;
    let stdout = child.stdout.take().context("the server's stdout")?;
    let mut reader = BufReader::new(stdout);
    let mut first = String::new();
    reader.read_line(&mut first)?;
    std::thread::spawn(move || reader.lines().for_each(drop));
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .with_context(|| format!("the server's first line is not its address: {first:?}"))?
        .to_owned();
    Ok(Running { child, url })
}

/// A free port on 127.0.0.1 (free when asked; the official server binds it
/// right after).
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// The official server (`langgraph dev`, next to `python`) on a copy of the
/// fixture, once it answers `/ok`.
fn official(root: &Path, python: &Path) -> Result<Running> {
    let cli = python.with_file_name("langgraph");
    if !cli.exists() {
        bail!(
            "{} not found: --official takes the python of an environment with langgraph-cli[inmem]",
            cli.display()
        );
    }
    let fixture = root.join("target/bench-server/fixture");
    if fixture.exists() {
        std::fs::remove_dir_all(&fixture)?;
    }
    std::fs::create_dir_all(&fixture)?;
    let source = root.join("../shared/server/fixture");
    for entry in
        std::fs::read_dir(&source).with_context(|| format!("cannot read {}", source.display()))?
    {
        let path = entry?.path();
        if let Some(name) = path.file_name() {
            std::fs::copy(&path, fixture.join(name))?;
        }
    }
    let port = free_port()?;
    let child = Command::new(&cli)
        .args(["dev", "--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--no-browser", "--no-reload", "--allow-blocking"])
        .current_dir(&fixture)
        .env("LANGGRAPH_NO_VERSION_CHECK", "true")
        .env("LANGGRAPH_CLI_NO_ANALYTICS", "1")
        .env("LANGSMITH_TRACING", "false")
        .env("LANGCHAIN_TRACING_V2", "false")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {}", cli.display()))?;
    let running = Running {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            std::thread::sleep(Duration::from_secs(2));
            return Ok(running);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    bail!("the official server did not listen on {port} within 120 s")
}

/// The load against `server`; its JSON lines.
fn load(root: &Path, server: &Running, concurrency: &str, seconds: &str) -> Result<Vec<Value>> {
    let output = Command::new(root.join("target/benchmark/server_load"))
        .arg(&server.url)
        .arg("stateless_wait,threaded_wait,hitl_roundtrip,background_join")
        .arg(concurrency)
        .arg(seconds)
        .output()
        .context("cannot run server_load")?;
    if !output.status.success() {
        bail!(
            "server_load failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| Ok(serde_json::from_str(line)?))
        .collect()
}

pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    let mut python: Option<PathBuf> = None;
    let mut concurrency = "1,8,64".to_owned();
    let mut seconds = "3".to_owned();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let mut value = || {
            iter.next()
                .with_context(|| format!("{arg} needs a value"))
                .cloned()
        };
        match arg.as_str() {
            "--official" => python = Some(PathBuf::from(value()?)),
            "-c" => concurrency = value()?,
            "-s" => seconds = value()?,
            other => bail!("unknown option {other:?}"),
        }
    }
    for target in [
        &["-p", "server"][..],
        &["-p", "stategraph-bench", "--bin", "server_load"],
    ] {
        super::step({
            let mut cmd = super::cargo();
            cmd.args(["build", "--profile", "benchmark", "-q"])
                .args(target);
            cmd
        })?;
    }
    let dir = root.join("target/bench-server");
    std::fs::create_dir_all(&dir)?;
    let sqlite = dir.join(format!("server-{}.db", std::process::id()));
    let cluster = super::postgres::Cluster::start()?;
    let mut servers = vec![
        ("stategraph (memory)".to_owned(), ours(root, "memory")?),
        (
            "stategraph (SQLite)".to_owned(),
            ours(root, &format!("sqlite://{}", sqlite.display()))?,
        ),
        (
            "stategraph (PostgreSQL)".to_owned(),
            ours(root, &cluster.url())?,
        ),
    ];
    if let Some(python) = &python {
        servers.push((
            "official 0.16.7 (in-memory)".to_owned(),
            official(root, python)?,
        ));
    }
    let mut results = Vec::new();
    for (name, server) in &servers {
        println!("\n==> {name} at {}", server.url);
        let lines = load(root, server, &concurrency, &seconds)?;
        for line in &lines {
            println!("{line}");
        }
        let rss = server.peak_rss_mb();
        println!(
            "peak RSS: {}",
            rss.map_or_else(|| "?".to_owned(), |mb| format!("{mb:.1} MB"))
        );
        results.push((name.clone(), lines, rss));
    }
    drop(servers);
    for suffix in ["", "-wal", "-shm"] {
        let mut path = sqlite.clone().into_os_string();
        path.push(suffix);
        // Absent files are fine.
        let _ = std::fs::remove_file(path);
    }
    println!(
        "\n| scenario | c | {} |",
        results
            .iter()
            .map(|(n, _, _)| format!("{n} runs/s (p99 ms)"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|---|{}", "---|".repeat(results.len()));
    if let Some((_, first, _)) = results.first() {
        for (index, line) in first.iter().enumerate() {
            let cells: Vec<String> = results
                .iter()
                .map(|(_, lines, _)| {
                    lines.get(index).map_or_else(String::new, |l| {
                        format!(
                            "{:.0} ({:.1}){}",
                            l["ops_per_s"].as_f64().unwrap_or(0.0),
                            l["p99_ms"].as_f64().unwrap_or(f64::NAN),
                            if l["errors"].as_u64().unwrap_or(0) > 0 {
                                " !errors"
                            } else {
                                ""
                            }
                        )
                    })
                })
                .collect();
            println!(
                "| {} | {} | {} |",
                line["scenario"].as_str().unwrap_or("?"),
                line["concurrency"],
                cells.join(" | ")
            );
        }
    }
    let rss: Vec<String> = results
        .iter()
        .map(|(name, _, rss)| {
            format!(
                "{name}: {}",
                rss.map_or_else(|| "?".to_owned(), |mb| format!("{mb:.1} MB"))
            )
        })
        .collect();
    println!("\npeak RSS: {}", rss.join(", "));
    drop(cluster);
    Ok(())
}
