//! `cargo xtask bench`: the Rust workloads, built with the `benchmark`
//! profile (release + LTO), optionally beside the Python LangGraph
//! harnesses in the same run.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// Python-side harnesses: (script relative to the workspace root, workload
/// prefix it covers). The official harness covers the graph workloads by name.
const PYTHON_HARNESSES: &[(&str, &str)] = &[
    (
        "crates/bench/python/checkpoint_put.py",
        "checkpoint_memory_put",
    ),
    ("crates/bench/python/store.py", "store_memory_"),
    ("crates/bench/python/bigtool.py", "bigtool_search_"),
];

/// The allocator setting both sides run with: glibc's malloc gives freed
/// memory back to the kernel once 128 KiB sit free at the top of the heap,
/// so a workload that builds and drops megabytes per repetition pays page
/// faults again on every run (a third of `fanout_to_subgraph_100x`'s time on
/// Rust's side). A higher threshold keeps the pages, as a long-running
/// service's heap would have them; Python runs with the same setting (it is
/// slightly faster with it too). A `GLIBC_TUNABLES` already set wins.
const GLIBC_TUNABLES: &str = "glibc.malloc.trim_threshold=268435456";

/// Gives a benchmark process the shared allocator setting.
fn with_allocator_setting(command: &mut Command) -> &mut Command {
    if std::env::var_os("GLIBC_TUNABLES").is_none() {
        command.env("GLIBC_TUNABLES", GLIBC_TUNABLES);
    }
    command
}

pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    let mut rust_args = Vec::new();
    let mut python = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--python" {
            python = Some(
                iter.next()
                    .context("--python needs the path of a python interpreter")?
                    .clone(),
            );
        } else {
            rust_args.push(arg.clone());
        }
    }
    let tunables = std::env::var("GLIBC_TUNABLES").unwrap_or_else(|_| GLIBC_TUNABLES.to_owned());
    println!("# both sides run with GLIBC_TUNABLES={tunables}");
    println!(
        "# the Rust side is built with the `benchmark` profile (release, lto = \"fat\", codegen-units = 1)"
    );
    let output = with_allocator_setting(&mut crate::cargo())
        .args([
            "run",
            "--profile",
            "benchmark",
            "-q",
            "-p",
            "stategraph-bench",
            "--",
        ])
        .args(&rust_args)
        .output()
        .context("cannot run stategraph-bench")?;
    print!("{}", String::from_utf8_lossy(&output.stdout));
    if !output.status.success() {
        bail!(
            "stategraph-bench failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let Some(python) = python else {
        return Ok(());
    };
    let rust = parse_lines(&String::from_utf8_lossy(&output.stdout));
    let failed: Vec<&str> = rust
        .iter()
        .filter(|line| line["ok"] == serde_json::Value::Bool(false))
        .filter_map(|line| line["workload"].as_str())
        .collect();
    if !failed.is_empty() {
        bail!(
            "check mismatch (the run did not do the expected work): {}",
            failed.join(", ")
        );
    }
    let passthrough = python_args(&rust_args);
    let mut python_lines = Vec::new();
    // The official harness, on exactly the graph workloads that ran here.
    let harness = root.join("../shared/bench/python/bench.py");
    let names: Vec<&str> = rust
        .iter()
        .filter_map(|line| line["workload"].as_str())
        // Saver and store workloads have no counterpart in the official
        // harness (their own scripts cover them); the provider's stream
        // decoder (`sse_*`) has none anywhere.
        .filter(|name| {
            !name.starts_with("checkpoint_")
                && !name.starts_with("store_")
                && !name.starts_with("sse_")
        })
        .collect();
    if !names.is_empty() && harness.exists() {
        let output = with_allocator_setting(&mut Command::new(&python))
            .arg(&harness)
            .args(["-w", &names.join(",")])
            .args(&passthrough)
            .output()
            .with_context(|| format!("cannot run {python} {}", harness.display()))?;
        let text = String::from_utf8_lossy(&output.stdout);
        print!("{text}");
        python_lines.extend(parse_lines(&text));
    } else if !names.is_empty() {
        println!(
            "# {} not found: graph workloads have no Python run",
            harness.display()
        );
    }
    for (script, prefix) in PYTHON_HARNESSES {
        if !rust.iter().any(|line| {
            line["workload"]
                .as_str()
                .is_some_and(|w| w.starts_with(prefix))
        }) {
            continue;
        }
        let output = with_allocator_setting(&mut Command::new(&python))
            .arg(root.join(script))
            .args(&passthrough)
            .output()
            .with_context(|| format!("cannot run {python} {script}"))?;
        if !output.status.success() {
            bail!(
                "{script} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let text = String::from_utf8_lossy(&output.stdout);
        print!("{text}");
        python_lines.extend(parse_lines(&text));
    }
    println!("\nspeed-up (python median / rust median):");
    for line in &rust {
        let name = line["workload"].as_str().unwrap_or_default();
        // Graph workloads compare by exact name; the saver workloads with
        // the Python script whose workload name they start with.
        let theirs = python_lines
            .iter()
            .find(|p| p["workload"].as_str() == Some(name))
            .or_else(|| {
                python_lines.iter().find(|p| {
                    p["workload"]
                        .as_str()
                        .is_some_and(|w| w.starts_with("checkpoint_") && name.starts_with(w))
                })
            });
        match (
            line["median_s"].as_f64(),
            theirs.and_then(|p| p["median_s"].as_f64()),
        ) {
            (Some(ours), Some(theirs)) if ours > 0.0 => {
                println!("  {name:<40} {:>10.1}x", theirs / ours)
            }
            _ => println!("  {name:<40} {:>11}", "no python run"),
        }
    }
    Ok(())
}

fn parse_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// The options both harnesses understand (`-r`, `--warmup`).
fn python_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if matches!(arg.as_str(), "-r" | "--reps" | "--warmup") {
            out.push(arg.clone());
            if let Some(value) = iter.next() {
                out.push(value.clone());
            }
        }
    }
    out
}
