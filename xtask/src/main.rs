//! Project automation: `cargo xtask ci | tidy | layers | fuzz | with-postgres -- CMD`.
//!
//! Uses std's `process::Command` plus `serde_json` for `cargo metadata`; no
//! shell helpers, so the build stays small.

// A command-line tool: it reports to the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench;
mod bench_server;
mod clients;
mod fuzz;
mod layers;
mod modules;
mod postgres;
mod tidy;
mod traces;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  ci                      run every check CI runs (fmt, tidy, layers, clippy,
                          feature checks, tests with a throwaway PostgreSQL, doc
                          tests, rustdoc, 10 s of each fuzz target, --dev)
  tidy                    check file and manifest conventions, and pregel's
                          module rules (no import cycle, files <= 800 lines)
  traces                  run the ported LangGraph golden traces, one line per
                          case, then `N passed, M failed`
  bench-server [--official PY] [-c 1,8,64] [-s SECS]
                          the same load against examples/server in memory, on
                          SQLite and on PostgreSQL and, with --official (the python of an
                          environment with langgraph-cli[inmem]), against the
                          official server; runs/s, p99 and peak RSS side by side
  server-clients          the official LangGraph clients (the Python SDK
                          suite, the JS SDK check) against examples/server on
                          127.0.0.1: in memory, on SQLite and on a throwaway
                          PostgreSQL behind a transaction-mode pgbouncer
  layers [--metadata F]   check the crate dependency direction (from `cargo
                          metadata`, or from the JSON document in file F)
  bench [-w PATTERNS] [-r REPS] [--warmup N] [--python PY]
                          run the benchmark workloads (benchmark profile: release + LTO); with
                          --python (a python that has langgraph 1.2.22) also
                          run the Python harnesses on the same workloads and
                          print the speed-up of each
  fuzz [--dev] [SECS] [TARGET...]
                          build the libFuzzer targets in fuzz/ (stable
                          toolchain, release build; --dev: unoptimized, faster
                          to build) and run each (or the named ones) for SECS
                          seconds (default 60) from the seeds in fuzz/corpus;
                          prints the executions of each target and `N passed,
                          M failed`, and fails on a crash (input in
                          fuzz/artifacts/TARGET)
  with-postgres -- CMD    start a throwaway PostgreSQL 15 cluster on 127.0.0.1,
                          run CMD with STATEGRAPH_TEST_POSTGRES_URL set, then
                          stop and delete the cluster
  soak [KILLS]            the crash test with KILLS SIGKILLs per backend
                          (default 1000; CI runs 50), SQLite and a throwaway
                          PostgreSQL";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<()> {
    let root = workspace_root();
    std::env::set_current_dir(&root).with_context(|| format!("cannot enter {}", root.display()))?;
    match args.first().map(String::as_str) {
        Some("ci") => ci(&root),
        Some("tidy") => tidy::check(&root),
        Some("bench") => bench::run(&root, &args[1..]),
        Some("traces") => traces::run(&root),
        Some("bench-server") => bench_server::run(&root, &args[1..]),
        Some("server-clients") => {
            let cluster = postgres::Cluster::start()?;
            let pooler = cluster.start_pooler()?;
            clients::run(&root, &pooler.url())
        }
        Some("fuzz") => fuzz::run(&root, &args[1..]),
        Some("layers") => {
            let metadata = match args.get(1).map(String::as_str) {
                Some("--metadata") => {
                    let file = args.get(2).context("--metadata needs a file")?;
                    std::fs::read_to_string(file).with_context(|| format!("cannot read {file}"))?
                }
                Some(other) => bail!("unknown option {other:?}\n\n{USAGE}"),
                None => cargo_metadata()?,
            };
            layers::check_metadata(&metadata)?;
            println!("layers: ok");
            Ok(())
        }
        Some("with-postgres") => {
            let command = match args.get(1).map(String::as_str) {
                Some("--") => &args[2..],
                _ => &args[1..],
            };
            let (program, rest) = command
                .split_first()
                .context("with-postgres needs a command after `--`")?;
            let cluster = postgres::Cluster::start()?;
            let pooler = cluster.start_pooler()?;
            let mut cmd = Command::new(program);
            cmd.args(rest)
                .env(postgres::URL_VAR, cluster.url())
                .env(postgres::POOLER_URL_VAR, pooler.url());
            let status = cmd
                .status()
                .with_context(|| format!("cannot run {program}"))?;
            drop(pooler);
            drop(cluster);
            if !status.success() {
                bail!("{program} failed: {status}");
            }
            Ok(())
        }
        Some("soak") => {
            let kills: usize = match args.get(1) {
                Some(n) => n.parse().context("soak takes a number of kills")?,
                None => 1000,
            };
            let cluster = postgres::Cluster::start()?;
            let mut test = cargo();
            test.args([
                "test",
                "--release",
                "-p",
                "stategraph-graph",
                "--test",
                SOAK_TARGET,
                "--",
                SOAK_TEST,
                "--exact",
                "--nocapture",
            ])
            .env(postgres::URL_VAR, cluster.url())
            .env("STATEGRAPH_CRASH_KILLS", kills.to_string());
            step(test)?;
            drop(cluster);
            Ok(())
        }
        Some("help" | "--help" | "-h") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown command {other:?}\n\n{USAGE}"),
    }
}

/// Seconds `cargo xtask ci` fuzzes each target.
const CI_FUZZ_SECS: u64 = 10;

/// The test binary of stategraph-graph that holds the crash test, and the
/// test's libtest name: `cargo xtask soak` runs it with more kills.
const SOAK_TARGET: &str = "suite";
const SOAK_TEST: &str = "crash::every_kill_loses_nothing_acknowledged";

fn workspace_root() -> PathBuf {
    // xtask lives in <root>/xtask.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

pub(crate) fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn cargo_metadata() -> Result<String> {
    let output = cargo()
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .context("cannot run cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    String::from_utf8(output.stdout).context("cargo metadata printed invalid UTF-8")
}

/// Runs a command, echoing it first; fails when it fails.
fn step(mut cmd: Command) -> Result<()> {
    let shown = format!(
        "{} {}",
        cmd.get_program().to_string_lossy(),
        cmd.get_args()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!("\n==> {shown}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {shown}"))?;
    if !status.success() {
        bail!("`{shown}` failed: {status}");
    }
    Ok(())
}

fn ci(root: &Path) -> Result<()> {
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--check"]);
    step(fmt)?;
    // The fuzz crate is a workspace of its own, which `--all` leaves out.
    let mut fmt_fuzz = cargo();
    fmt_fuzz.args(["fmt", "--manifest-path", "fuzz/Cargo.toml", "--check"]);
    step(fmt_fuzz)?;

    println!("\n==> tidy");
    tidy::check(root)?;

    println!("\n==> layers");
    layers::check_metadata(&cargo_metadata()?)?;
    println!("layers: ok");

    // Everything from here runs next to a real PostgreSQL, so the tests that
    // need it are compiled, linted and run; they are never skipped in CI.
    let cluster = postgres::Cluster::start()?;
    cluster.check_connection()?;
    let pooler = cluster.start_pooler()?;
    let (url, pooler_url) = (cluster.url(), pooler.url());
    let cargo_pg = || {
        let mut cmd = cargo();
        cmd.env(postgres::URL_VAR, &url)
            .env(postgres::POOLER_URL_VAR, &pooler_url);
        cmd
    };

    let mut clippy = cargo_pg();
    clippy.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--",
        "-D",
        "warnings",
    ]);
    step(clippy)?;

    for features in facade_feature_sets()? {
        let mut check = cargo_pg();
        check.args(["check", "-p", "stategraph"]).args(&features);
        check.env("RUSTFLAGS", "-D warnings");
        step(check)?;
    }

    let mut nextest = cargo_pg();
    nextest.args([
        "nextest",
        "run",
        "--workspace",
        "--all-features",
        "--no-tests=fail",
    ]);
    step(nextest)?;
    // `--all-features` turns on the SQLite store's `sqlite-vec` feature
    // (scores computed by SQLite), so the SQLite crate runs once more
    // without it: scoring in Rust is its default and must stay exact.
    let mut sqlite_default = cargo();
    sqlite_default.args([
        "nextest",
        "run",
        "-p",
        "stategraph-checkpoint-sqlite",
        "--no-tests=fail",
    ]);
    step(sqlite_default)?;
    // The examples check their own output: the persistence one runs the
    // same graph on SQLite, then on this cluster; the guides' examples
    // (docs/guides) pause, resume and branch threads on SQLite; the memory
    // store one recalls memories across threads on all three stores; the
    // seed's legal and code generation agents check their results.
    for name in [
        "persistence",
        "human_in_the_loop",
        "time_travel",
        "memory_store",
        "legal_analysis",
        "code_generation",
        "tool_review",
        "bigtool",
        "subgraph",
        "streaming_agent",
    ] {
        let mut example = cargo_pg();
        example.args(["run", "--quiet", "-p", name]);
        step(example)?;
    }
    // The main job, twice on one fresh SQLite file: the second run must
    // continue the first one's conversation (the example checks it).
    let conversation = std::env::temp_dir().join(format!(
        "stategraph-quickstart-{}.sqlite",
        std::process::id()
    ));
    for _ in 0..2 {
        let mut quickstart = cargo_pg();
        quickstart
            .args(["run", "--quiet", "-p", "quickstart"])
            .env("STATEGRAPH_QUICKSTART_DB", &conversation);
        step(quickstart)?;
    }
    for suffix in ["", "-wal", "-shm"] {
        let mut path = conversation.clone().into_os_string();
        path.push(suffix);
        // Absent files (no WAL left behind) are fine.
        let _ = std::fs::remove_file(path);
    }
    // The official clients against the example server.
    // Through the transaction-mode pooler: the harder case for the
    // server's statements.
    println!("\n==> server-clients");
    clients::run(root, &pooler_url)?;
    let mut doctest = cargo_pg();
    doctest.args(["test", "--doc", "--workspace", "--all-features"]);
    step(doctest)?;

    let mut doc = cargo_pg();
    doc.args(["doc", "--workspace", "--no-deps", "--all-features"])
        .env("RUSTDOCFLAGS", "-D warnings");
    step(doc)?;
    drop(pooler);
    drop(cluster);

    // A short bounded run of every fuzz target from the committed seeds:
    // catches a target that no longer builds and a regression the seeds
    // reach. Unoptimized, as it mostly replays the seeds: the build is
    // what costs here. The search itself is `cargo xtask fuzz SECS`.
    fuzz::fuzz(root, fuzz::Profile::Dev, CI_FUZZ_SECS, &[])?;

    if Command::new("cargo-deny").arg("--version").output().is_ok() {
        let mut deny = cargo();
        deny.args(["deny", "check", "licenses", "bans", "sources"]);
        step(deny)?;
    } else {
        println!("\n==> cargo-deny is not installed; license and source checks not run");
    }
    println!("\nci: all checks passed");
    Ok(())
}

/// `--no-default-features`, each feature alone, and `--all-features` for the facade.
fn facade_feature_sets() -> Result<Vec<Vec<String>>> {
    let metadata: serde_json::Value = serde_json::from_str(&cargo_metadata()?)?;
    let facade = metadata["packages"]
        .as_array()
        .and_then(|packages| packages.iter().find(|p| p["name"] == "stategraph"))
        .context("the facade package `stategraph` is missing")?;
    let mut sets = vec![vec!["--no-default-features".to_owned()]];
    if let Some(features) = facade["features"].as_object() {
        for name in features
            .keys()
            .filter(|name| *name != "default" && !name.starts_with('_'))
        {
            sets.push(vec![
                "--no-default-features".into(),
                "--features".into(),
                name.clone(),
            ]);
        }
    }
    sets.push(vec!["--all-features".to_owned()]);
    Ok(sets)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `soak` names a test binary and a test by hand; moving the crash
    /// test must not leave the command pointing at nothing.
    #[test]
    fn soak_names_the_crash_test() {
        let suite = workspace_root()
            .join("crates/graph/tests")
            .join(SOAK_TARGET);
        let main = std::fs::read_to_string(suite.join("main.rs")).unwrap();
        let (module, test) = SOAK_TEST.split_once("::").unwrap();
        assert!(
            main.contains(&format!("mod {module};")),
            "{module} is not in {SOAK_TARGET}"
        );
        let source = std::fs::read_to_string(suite.join(format!("{module}.rs"))).unwrap();
        assert!(
            source.contains(&format!("async fn {test}()")),
            "{test} is not in {module}.rs"
        );
    }
}
