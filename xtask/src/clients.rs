//! `cargo xtask server-clients`: the official LangGraph clients against
//! `examples/server` on 127.0.0.1, on each backend: in memory, a SQLite
//! file, and PostgreSQL. The Python SDK suite (CLIENT-CONFORMANCE Layer 1) runs
//! from a venv made from its lock file; the JS SDK check (Layer 4) runs with
//! each pinned SDK version, installed by `npm ci`; a React page using
//! `useStream` runs in Debian's Chromium (Layer 5, screenshots in
//! `target/server-clients/browser-<backend>`); on the persistent
//! backends, the failure-injection script (Layer 6) kills a server with
//! SIGKILL mid-run and cuts a stream, and slow readers are checked once. The server is started with `--port
//! 0` and stopped at the end of each pass, whatever happens. Last, the
//! differential run (Layer 3) compares it with the official server, pinned
//! in its own venv.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result, bail};

/// The Python suite and its lock file.
const PYTHON_SUITE: &str = "crates/server/tests/clients/python";
/// The failure-injection script (Layer 6): a server killed mid-run, a
/// stream cut mid-run.
const FAILURES: &str = "crates/server/tests/clients/failure/kill_restart.py";
/// Layer 6's slow readers: bounded memory, runs not slowed, a resumable
/// reader that falls behind reconnecting without a loss.
const SLOW_READER: &str = "crates/server/tests/clients/failure/slow_reader.py";
/// The differential run against the official server (Layer 3), its lock
/// file (the official server, pinned) and its allow-list.
const DIFF: &str = "crates/server/tests/clients/diff";
/// The JS check, and a folder per pinned SDK version with its lock file.
const JS_CHECK: &str = "crates/server/tests/clients/js";
const JS_SDKS: [&str; 2] = ["sdk-1.15.0", "sdk-2.0.0"];
/// The `useStream` page driven in Debian's Chromium (Layer 5).
const BROWSER: &str = "crates/server/tests/clients/browser";

/// A started server, killed when dropped.
struct Served {
    child: Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        // Already gone is fine: the point is that it is gone.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `examples/server` on a free port with `args`; its URL from its
/// first line (`listening on http://127.0.0.1:PORT`).
fn serve(root: &Path, args: &[&str]) -> Result<Served> {
    let binary = root.join("target/debug/server");
    let child = Command::new(&binary)
        .args(["--port", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", binary.display()))?;
    // From here on, an early return stops it.
    let mut served = Served {
        child,
        url: String::new(),
    };
    let stdout = served.child.stdout.take().context("the server's stdout")?;
    let mut reader = BufReader::new(stdout);
    let mut first = String::new();
    reader
        .read_line(&mut first)
        .context("reading the server's first line")?;
    // Whatever it prints later is read and dropped, so its writes never
    // fail on a closed pipe.
    std::thread::spawn(move || reader.lines().for_each(drop));
    served.url = first
        .trim()
        .strip_prefix("listening on ")
        .with_context(|| format!("the server's first line is not its address: {first:?}"))?
        .to_owned();
    Ok(served)
}

/// A venv named `name` with exactly the lock file's packages (made again
/// when the lock changes).
fn venv(root: &Path, name: &str, lock: &Path) -> Result<PathBuf> {
    let dir = root.join("target/server-clients").join(name);
    let python = dir.join("bin/python");
    let stamp = dir.join("lock.txt");
    let wanted =
        std::fs::read_to_string(lock).with_context(|| format!("cannot read {}", lock.display()))?;
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) && python.exists() {
        return Ok(python);
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    super::step({
        let mut cmd = Command::new("python3");
        cmd.args(["-m", "venv"]).arg(&dir);
        cmd
    })?;
    super::step({
        let mut cmd = Command::new(&python);
        cmd.args(["-m", "pip", "install", "--quiet", "--no-deps", "-r"])
            .arg(lock);
        cmd
    })?;
    std::fs::write(&stamp, wanted)?;
    Ok(python)
}

/// Builds the example server, then runs every client suite against it on
/// each backend (PostgreSQL at `postgres`).
pub(crate) fn run(root: &Path, postgres: &str) -> Result<()> {
    super::step({
        let mut cmd = super::cargo();
        cmd.args(["build", "--quiet", "-p", "server"]);
        cmd
    })?;
    let suite = root.join(PYTHON_SUITE);
    let python = venv(root, "venv", &suite.join("requirements.lock"))?;
    let js = root.join(JS_CHECK);
    let browser = root.join(BROWSER);
    for folder in JS_SDKS
        .iter()
        .map(|sdk| js.join(sdk))
        .chain([browser.clone()])
    {
        super::step({
            let mut cmd = Command::new("npm");
            cmd.args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(folder);
            cmd
        })?;
    }
    let dir = root.join("target/server-clients");
    let database = dir.join(format!("server-{}.db", std::process::id()));
    let sqlite = format!("sqlite://{}", database.display());
    for url in ["memory", sqlite.as_str(), postgres] {
        let served = serve(root, &["--database-url", url])?;
        println!("\n==> the Python SDK suite against {} ({url})", served.url);
        check(
            Command::new(&python)
                .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
                .arg(&suite)
                .env("STATEGRAPH_SERVER_URL", &served.url),
            "the Python SDK suite",
        )?;
        for sdk in JS_SDKS {
            println!(
                "\n==> the JS SDK check ({sdk}) against {} ({url})",
                served.url
            );
            check(
                Command::new("node")
                    .arg("../js_client_check.mjs")
                    .arg(&served.url)
                    .current_dir(js.join(sdk)),
                "the JS SDK check",
            )?;
        }
        println!("\n==> useStream in Chromium against {} ({url})", served.url);
        let backend = url.split(':').next().unwrap_or("memory");
        check(
            Command::new("node")
                .arg("run.mjs")
                .current_dir(&browser)
                .env("STATEGRAPH_SERVER_URL", &served.url)
                .env(
                    "STATEGRAPH_BROWSER_OUT",
                    dir.join(format!("browser-{backend}")),
                ),
            "the browser check",
        )?;
        drop(served);
        if url != "memory" {
            println!("\n==> failure injection ({url})");
            check(
                Command::new(&python)
                    .arg(root.join(FAILURES))
                    .arg(root.join("target/debug/server"))
                    .arg(url),
                "the failure injection",
            )?;
        }
    }
    // The slow readers, on the embedded default (a SQLite file of its own).
    println!("\n==> slow readers (sqlite)");
    let slow = dir.join(format!("slow-{}.db", std::process::id()));
    let slow_url = format!("sqlite://{}", slow.display());
    let checked = check(
        Command::new(&python)
            .arg(root.join(SLOW_READER))
            .arg(root.join("target/debug/server"))
            .arg(&slow_url),
        "the slow-reader check",
    );
    for suffix in ["", "-wal", "-shm"] {
        let mut path = slow.clone().into_os_string();
        path.push(suffix);
        // Absent files are fine.
        let _ = std::fs::remove_file(path);
    }
    checked?;
    differential(root)?;
    for suffix in ["", "-wal", "-shm"] {
        let mut path = database.clone().into_os_string();
        path.push(suffix);
        // Absent files are fine.
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Layer 3: the same scripted exchanges against the official server
/// (`langgraph dev` from the pinned lock) and `examples/server`, compared
/// structurally; a difference `allow.toml` does not explain fails. The
/// report goes to `target/server-clients/server-diff.md`.
fn differential(root: &Path) -> Result<()> {
    let diff = root.join(DIFF);
    let python = venv(root, "diff-venv", &diff.join("requirements.lock"))?;
    let langgraph = python.with_file_name("langgraph");
    println!("\n==> the differential run against the official server");
    check(
        Command::new(&python)
            .arg(diff.join("server_diff.py"))
            .arg("--official")
            .arg(&langgraph)
            .arg("--ours")
            .arg(root.join("target/debug/server"))
            .arg("--report")
            .arg(root.join("target/server-clients/server-diff.md")),
        "the differential run (see target/server-clients/server-diff.md)",
    )
}

/// Runs a client suite; its failure names it.
fn check(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd.status().with_context(|| format!("cannot run {what}"))?;
    if !status.success() {
        bail!("{what} failed: {status}");
    }
    Ok(())
}
