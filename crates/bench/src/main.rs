//! `stategraph-bench [-w PATTERNS] [-r REPS] [--warmup N] [--list]`: runs the
//! benchmark workloads and prints one JSON line per workload.

// A command-line tool: it reports to the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut patterns = "*".to_owned();
    let mut reps = 5;
    let mut warmup = 1;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = |flag: &str| -> Result<usize, String> {
            args.next()
                .ok_or(format!("{flag} needs a value"))?
                .parse()
                .map_err(|_| format!("{flag} needs a whole number"))
        };
        let parsed = match arg.as_str() {
            "-w" | "--workloads" => args
                .next()
                .map(|p| patterns = p)
                .ok_or("-w needs patterns".to_owned()),
            "-r" | "--reps" => number("-r").map(|n| reps = n),
            "--warmup" => number("--warmup").map(|n| warmup = n),
            "--list" => {
                for workload in stategraph_bench::workloads() {
                    println!("{}", workload.name);
                }
                return ExitCode::SUCCESS;
            }
            other => Err(format!("unknown argument {other:?}")),
        };
        if let Err(message) = parsed {
            eprintln!(
                "stategraph-bench: {message}\nusage: stategraph-bench [-w PATTERNS] [-r REPS] [--warmup N] [--list]"
            );
            return ExitCode::FAILURE;
        }
    }
    let selected: Vec<_> = stategraph_bench::workloads()
        .into_iter()
        .filter(|w| stategraph_bench::matches(&patterns, w.name))
        .collect();
    if selected.is_empty() {
        eprintln!("stategraph-bench: no workload matches {patterns:?}; use --list");
        return ExitCode::FAILURE;
    }
    for workload in &selected {
        println!("{}", stategraph_bench::measure(workload, reps, warmup));
    }
    ExitCode::SUCCESS
}
