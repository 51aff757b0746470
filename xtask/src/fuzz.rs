//! `cargo xtask fuzz [--dev] [SECS] [TARGET...]`: builds the libFuzzer
//! targets in `fuzz/` once and runs each for `SECS` seconds, then reports
//! the executions and the outcome of each.
//!
//! The targets are built the way cargo-fuzz builds them (the crate keeps
//! its layout, so `cargo fuzz run -s none TARGET` works too): for the host
//! triple given as `--target`, so build scripts and proc macros stay
//! uninstrumented, with LLVM's SanitizerCoverage (8-bit counters, PC table,
//! compare tracing, stack depth), `--cfg fuzzing` and debug assertions.
//! Every one of those flags is stable, and no sanitizer is used (the code
//! under test forbids `unsafe`, so AddressSanitizer would mostly slow the
//! search down), so the stable toolchain builds the targets without
//! `RUSTC_BOOTSTRAP` and CI installs nothing but a C++ compiler for
//! libFuzzer itself. Panics (libfuzzer-sys aborts on every panic, even one
//! caught later), aborts, stack overflows, hangs and memory blow-ups are
//! crashes.
//!
//! Release builds search ten to twenty times faster; `--dev` builds in
//! less than half the time and is what `cargo xtask ci` uses for its short
//! runs, which mostly replay the seeds.
//!
//! Each run reads the committed seeds (`fuzz/corpus/<target>`) and the
//! target's dictionary of tokens (`fuzz/dicts/<target>.dict`), and writes
//! what it discovers to a scratch corpus under the target directory, so
//! the committed corpus only changes on purpose. Crash inputs land in
//! `fuzz/artifacts/<target>/` (ignored by git).

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

/// Seconds per target when `SECS` is not given.
const DEFAULT_SECS: u64 = 60;

/// The instrumentation cargo-fuzz 0.13 adds for `--sanitizer none` on
/// Linux (its `project.rs`): coverage counters and tables libFuzzer reads,
/// comparisons traced so the search learns magic values, no branch folding
/// (more edges to tell apart), the stack depth, and `cfg(fuzzing)`.
const INSTRUMENTATION: &[&str] = &[
    "-Cpasses=sancov-module",
    "-Cllvm-args=-sanitizer-coverage-level=4",
    "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
    "-Cllvm-args=-sanitizer-coverage-pc-table",
    "-Cllvm-args=-sanitizer-coverage-trace-compares",
    "--cfg",
    "fuzzing",
    "-Cllvm-args=-simplifycfg-branch-fold-threshold=0",
    "-Cllvm-args=-sanitizer-coverage-stack-depth",
    "-Cdebug-assertions",
];

/// libFuzzer options of every run: an input that takes longer than
/// `timeout` seconds or a process above `rss_limit_mb` is a crash; the
/// final statistics carry the execution count.
const LIBFUZZER_OPTIONS: &[&str] = &["-timeout=20", "-rss_limit_mb=2048", "-print_final_stats=1"];

/// How the targets are compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Profile {
    /// Optimized, one codegen unit (as cargo-fuzz builds): the long runs.
    Release,
    /// Unoptimized: builds in less than half the time, runs far slower.
    Dev,
}

/// What one target's run did.
struct Outcome {
    target: String,
    executions: Option<u64>,
    /// The crash input libFuzzer wrote, when it found one.
    failure: Option<String>,
}

/// Runs `cargo xtask fuzz` with its arguments (`[--dev] [SECS] [TARGET...]`).
pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    let (profile, secs, only) = parse(args)?;
    fuzz(root, profile, secs, &only)
}

/// The profile, the seconds per target and the targets named.
fn parse(args: &[String]) -> Result<(Profile, u64, Vec<String>)> {
    let mut profile = Profile::Release;
    let mut secs = None;
    let mut only = Vec::new();
    for arg in args {
        match arg.as_str() {
            "--dev" => profile = Profile::Dev,
            number if secs.is_none() && number.chars().all(|c| c.is_ascii_digit()) => {
                secs = Some(number.parse().context("fuzz takes a number of seconds")?);
            }
            name => only.push(name.to_owned()),
        }
    }
    Ok((profile, secs.unwrap_or(DEFAULT_SECS), only))
}

/// Builds every target, runs the chosen ones (all when `only` is empty)
/// for `secs` seconds each, prints a line per target and fails when any
/// target crashed.
pub(crate) fn fuzz(root: &Path, profile: Profile, secs: u64, only: &[String]) -> Result<()> {
    let targets = targets(root)?;
    if let Some(unknown) = only.iter().find(|name| !targets.contains(name)) {
        bail!(
            "no fuzz target {unknown:?}; targets: {}",
            targets.join(", ")
        );
    }
    let chosen: Vec<&String> = targets
        .iter()
        .filter(|name| only.is_empty() || only.contains(name))
        .collect();

    let started = Instant::now();
    let binaries = build(root, profile)?;
    println!(
        "fuzz: built {} targets ({profile:?}) in {:.0?}",
        targets.len(),
        started.elapsed()
    );

    let scratch = target_dir(root).join("fuzz-corpus");
    let logs = target_dir(root).join("fuzz-logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let mut outcomes = Vec::new();
    for target in chosen {
        let binary = binaries.join(target);
        outcomes.push(run_target(root, &binary, target, secs, &scratch, &logs)?);
    }

    println!();
    let mut failed = 0;
    for outcome in &outcomes {
        let executions = outcome
            .executions
            .map_or_else(|| "unknown".to_owned(), |n| n.to_string());
        match &outcome.failure {
            None => println!(
                "fuzz {}: ok, {executions} executions in {secs} s",
                outcome.target
            ),
            Some(input) => {
                failed += 1;
                println!(
                    "fuzz {}: CRASH after {executions} executions, input {input}",
                    outcome.target
                );
            }
        }
    }
    println!("{} passed, {failed} failed", outcomes.len() - failed);
    if failed > 0 {
        bail!(
            "{failed} fuzz target(s) crashed; reproduce with \
             `cargo fuzz run -s none TARGET INPUT` or by running the target's binary on INPUT"
        );
    }
    Ok(())
}

/// Builds every target with the instrumentation for `profile`; returns the
/// directory holding the binaries.
fn build(root: &Path, profile: Profile) -> Result<PathBuf> {
    let host = host_triple()?;
    let mut flags: Vec<&str> = INSTRUMENTATION.to_vec();
    if profile == Profile::Release {
        // The sancov passes keep functions from being imported across
        // codegen units, so more than one would cost inlining (cargo-fuzz).
        flags.push("-Ccodegen-units=1");
    }
    let mut rustflags = flags.join(" ");
    // The caller's own flags come last, so they win.
    if let Ok(own) = std::env::var("RUSTFLAGS") {
        rustflags.push(' ');
        rustflags.push_str(&own);
    }
    let mut cmd = crate::cargo();
    cmd.args(["build", "--manifest-path", "fuzz/Cargo.toml", "--bins"])
        .args(["--target", &host])
        .env("RUSTFLAGS", rustflags);
    if profile == Profile::Release {
        cmd.arg("--release");
    }
    crate::step(cmd)?;
    let dir = match profile {
        Profile::Release => "release",
        Profile::Dev => "debug",
    };
    Ok(target_dir(root).join(host).join(dir))
}

/// The host's target triple, from `rustc -vV`.
fn host_triple() -> Result<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(rustc)
        .arg("-vV")
        .output()
        .context("cannot run rustc -vV")?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .find_map(|line| line.strip_prefix("host: "))
        .map(str::to_owned)
        .context("rustc -vV names no host")
}

/// The `[[bin]]` names of `fuzz/Cargo.toml`, in file order.
fn targets(root: &Path) -> Result<Vec<String>> {
    let manifest = root.join("fuzz/Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("cannot read {}", manifest.display()))?;
    let mut names = Vec::new();
    let mut in_bin = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if in_bin && let Some(value) = line.strip_prefix("name") {
            let name = value.trim_start().trim_start_matches('=').trim();
            names.push(name.trim_matches('"').to_owned());
        }
    }
    if names.is_empty() {
        bail!("{} declares no [[bin]] fuzz target", manifest.display());
    }
    Ok(names)
}

/// Where cargo builds the fuzz crate: `CARGO_TARGET_DIR`, else
/// `fuzz/target` (its own workspace's default, as for cargo-fuzz).
fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root.join(dir),
        None => root.join("fuzz/target"),
    }
}

/// Runs one target for `secs` seconds, its output going to a log file.
fn run_target(
    root: &Path,
    binary: &Path,
    target: &str,
    secs: u64,
    scratch: &Path,
    logs: &Path,
) -> Result<Outcome> {
    let corpus = scratch.join(target);
    let artifacts = root.join("fuzz/artifacts").join(target);
    for dir in [&corpus, &artifacts] {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let log_path = logs.join(format!("{target}.log"));
    let log =
        File::create(&log_path).with_context(|| format!("cannot create {}", log_path.display()))?;
    let mut cmd = Command::new(binary);
    cmd.arg(format!("-max_total_time={secs}"))
        .args(LIBFUZZER_OPTIONS)
        .arg(option("-artifact_prefix=", &artifacts.join("")));
    let dictionary = root.join("fuzz/dicts").join(format!("{target}.dict"));
    if dictionary.exists() {
        cmd.arg(option("-dict=", &dictionary));
    }
    // New inputs go to the first directory; the seeds are only read.
    cmd.arg(&corpus)
        .arg(root.join("fuzz/corpus").join(target))
        .stdout(Stdio::from(log.try_clone()?))
        .stderr(Stdio::from(log));
    println!(
        "\n==> fuzz {target} for {secs} s (log: {})",
        log_path.display()
    );
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {}", binary.display()))?;
    let output = std::fs::read_to_string(&log_path).unwrap_or_default();
    let executions = executions(&output);
    let failure = if status.success() {
        None
    } else {
        let tail: Vec<&str> = output.lines().rev().take(40).collect();
        for line in tail.iter().rev() {
            println!("    {line}");
        }
        Some(crash_input(&output).unwrap_or_else(|| format!("unknown ({status})")))
    };
    Ok(Outcome {
        target: target.to_owned(),
        executions,
        failure,
    })
}

/// A libFuzzer option whose value is a path (`-name=PATH`).
fn option(name: &str, path: &Path) -> OsString {
    let mut option = OsString::from(name);
    option.push(path);
    option
}

/// The execution count of libFuzzer's final statistics
/// (`stat::number_of_executed_units: N`), or of its last status line
/// (`#N ...`) when it stopped before printing them.
fn executions(log: &str) -> Option<u64> {
    let stat = log.lines().rev().find_map(|line| {
        line.strip_prefix("stat::number_of_executed_units:")
            .and_then(|n| n.trim().parse().ok())
    });
    stat.or_else(|| {
        log.lines().rev().find_map(|line| {
            let count = line.strip_prefix('#')?.split_whitespace().next()?;
            count.parse().ok()
        })
    })
}

/// The file libFuzzer wrote the crashing input to.
fn crash_input(log: &str) -> Option<String> {
    log.lines().rev().find_map(|line| {
        let (_, path) = line.split_once("Test unit written to ")?;
        Some(path.trim().to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_has_a_source_and_seeds() {
        let root = crate::workspace_root();
        let targets = targets(&root).unwrap();
        assert!(targets.len() >= 8, "{targets:?}");
        for target in &targets {
            let source = root.join("fuzz/fuzz_targets").join(format!("{target}.rs"));
            assert!(source.exists(), "{} is missing", source.display());
            let seeds = root.join("fuzz/corpus").join(target);
            let count = std::fs::read_dir(&seeds)
                .map(|entries| entries.count())
                .unwrap_or(0);
            assert!(count > 0, "{target} has no seeds in {}", seeds.display());
        }
    }

    #[test]
    fn arguments_name_the_profile_the_seconds_and_the_targets() {
        let args = |list: &[&str]| list.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
        let (profile, secs, only) = parse(&[]).unwrap();
        assert_eq!(
            (profile, secs, only.len()),
            (Profile::Release, DEFAULT_SECS, 0)
        );
        let (profile, secs, only) = parse(&args(&["--dev", "10", "config", "store_ops"])).unwrap();
        assert_eq!((profile, secs), (Profile::Dev, 10));
        assert_eq!(only, ["config", "store_ops"]);
        let (_, secs, only) = parse(&args(&["config", "600"])).unwrap();
        assert_eq!((secs, only), (600, args(&["config"])));
    }

    #[test]
    fn libfuzzer_logs_give_executions_and_crash_inputs() {
        let finished = "#1024\tDONE   cov: 10 ft: 20 corp: 3/30b exec/s: 512 rss: 40Mb\n\
                        Done 1024 runs in 2 second(s)\n\
                        stat::number_of_executed_units: 1025\n\
                        stat::average_exec_per_sec:     512\n";
        assert_eq!(executions(finished), Some(1025));
        let crashed = "#77\tNEW    cov: 10 ft: 20 corp: 3/30b\n\
                       ==12== ERROR: libFuzzer: deadly signal\n\
                       artifact_prefix='fuzz/artifacts/x/'; Test unit written to fuzz/artifacts/x/crash-ab12\n";
        assert_eq!(executions(crashed), Some(77));
        assert_eq!(
            crash_input(crashed).as_deref(),
            Some("fuzz/artifacts/x/crash-ab12")
        );
        assert_eq!(executions("nothing"), None);
    }
}
