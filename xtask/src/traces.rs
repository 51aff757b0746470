//! `cargo xtask traces`: runs every ported golden-trace test and reports one
//! line per LangGraph case in `fixtures/traces/`.
//!
//! A case is ported when some test named `trace_NN_*` exists. A test file may
//! list observations it cannot port yet in comments starting with
//! `Not ported yet:`; such cases are reported as partial.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};

#[derive(Default)]
struct CaseResult {
    passed: usize,
    failed: Vec<String>,
    not_ported: usize,
}

pub(crate) fn run(root: &Path) -> Result<()> {
    let output = crate::cargo()
        .args([
            "nextest",
            "run",
            "--workspace",
            "--all-features",
            "--no-fail-fast",
        ])
        .args(["--status-level", "all", "--final-status-level", "none"])
        .args(["-E", "test(/trace_[0-9][0-9]_/)"])
        .output()
        .context("cannot run cargo nextest")?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let mut results: BTreeMap<String, CaseResult> = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim_start();
        let passed = line.starts_with("PASS ");
        let failed = ["FAIL ", "TIMEOUT ", "SIGSEGV ", "SIGABRT ", "ABORT "]
            .iter()
            .any(|s| line.starts_with(s));
        if !passed && !failed {
            continue;
        }
        let Some(test) = line.split_whitespace().last() else {
            continue;
        };
        let Some(case) = case_number(test) else {
            continue;
        };
        let entry = results.entry(case).or_default();
        if passed {
            entry.passed += 1;
        } else {
            entry.failed.push(test.to_owned());
        }
    }
    count_not_ported(root, &mut results)?;

    let mut cases: Vec<String> = std::fs::read_dir(root.join("fixtures/traces"))
        .context("cannot list fixtures/traces")?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .map(str::to_owned)
        })
        .collect();
    cases.sort();
    let (mut pass, mut fail) = (0, 0);
    for case in &cases {
        let number = &case[..2];
        match results.get(number) {
            Some(result) if !result.failed.is_empty() => {
                fail += 1;
                println!("trace {case}: FAIL ({})", result.failed.join(", "));
            }
            Some(result) if result.passed > 0 => {
                pass += 1;
                if result.not_ported > 0 {
                    println!(
                        "trace {case}: pass ({} tests; partial: {} observations not ported yet)",
                        result.passed, result.not_ported
                    );
                } else {
                    println!("trace {case}: pass ({} tests)", result.passed);
                }
            }
            _ => println!("trace {case}: not ported"),
        }
    }
    println!("{pass} passed, {fail} failed");
    if fail > 0 {
        bail!("{fail} trace case(s) failed");
    }
    Ok(())
}

/// `NN` from a test name containing `trace_NN_`.
fn case_number(test: &str) -> Option<String> {
    let start = test.find("trace_")? + "trace_".len();
    let digits = test.get(start..start + 2)?;
    (digits.bytes().all(|b| b.is_ascii_digit()) && test.get(start + 2..start + 3) == Some("_"))
        .then(|| digits.to_owned())
}

/// Counts `Not ported yet:` notes in `trace_NN_*.rs` test files.
fn count_not_ported(root: &Path, results: &mut BTreeMap<String, CaseResult>) -> Result<()> {
    let mut stack = vec![root.join("crates")];
    while let Some(dir) = stack.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))?
        {
            let path = entry?.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "target") {
                    stack.push(path);
                }
                continue;
            }
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let Some(case) = name.strip_suffix(".rs").and_then(case_number) else {
                continue;
            };
            let text = std::fs::read_to_string(&path)?;
            let notes = text
                .lines()
                .filter(|l| l.contains("Not ported yet:"))
                .count();
            if notes > 0 {
                results.entry(case).or_default().not_ported += notes;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_numbers_come_from_test_names() {
        assert_eq!(case_number("trace_23_pregel_invoke").as_deref(), Some("23"));
        assert_eq!(
            case_number("put::trace_05_send_map_reduce_order").as_deref(),
            Some("05")
        );
        assert_eq!(case_number("trace_1_x"), None);
        assert_eq!(case_number("no_trace_here"), None);
    }
}
