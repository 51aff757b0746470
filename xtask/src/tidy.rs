//! File and manifest conventions that rustfmt and clippy do not check.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// Fields every crate inherits from `[workspace.package]`.
const INHERITED: &[&str] = &[
    "version",
    "edition",
    "rust-version",
    "license",
    "repository",
    "publish",
];

/// The manifest of the fuzz targets (cargo-fuzz's layout, outside the
/// workspace).
const FUZZ_MANIFEST: &str = "fuzz/Cargo.toml";

pub(crate) fn check(root: &Path) -> Result<()> {
    let mut problems = Vec::new();
    let mut files = Vec::new();
    for dir in ["crates", "xtask", "examples", "fuzz"] {
        collect(&root.join(dir), &mut files)?;
    }
    // Built from pieces so this file does not flag itself.
    let banned = [
        ["#[", "ignore"].concat(),
        ["#[", "should_panic"].concat(),
        ["dbg", "!("].concat(),
    ];
    for file in &files {
        let shown = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {shown}"))?;
        let is_rust = file.extension().is_some_and(|e| e == "rs");
        if is_rust && !text.starts_with("//!") {
            problems.push(format!(
                "{shown}: must start with a `//!` module doc comment"
            ));
        }
        for (number, line) in text.lines().enumerate() {
            if line.ends_with(' ') || line.ends_with('\t') {
                problems.push(format!("{shown}:{}: trailing whitespace", number + 1));
            }
            if is_rust {
                for pattern in &banned {
                    if line.contains(pattern.as_str()) {
                        problems.push(format!(
                            "{shown}:{}: `{pattern}` is not allowed",
                            number + 1
                        ));
                    }
                }
            }
        }
        // The fuzz crate is a workspace of its own: there is no
        // `[workspace.package]` for it to inherit.
        if file.file_name().is_some_and(|n| n == "Cargo.toml") && *file != root.join(FUZZ_MANIFEST)
        {
            check_manifest(&shown, &text, file, &mut problems);
        }
    }
    if problems.is_empty() {
        println!("tidy: ok ({} files)", files.len());
        crate::modules::check(root)
    } else {
        bail!(
            "tidy found {} problem(s):\n  {}",
            problems.len(),
            problems.join("\n  ")
        )
    }
}

fn check_manifest(shown: &str, text: &str, path: &Path, problems: &mut Vec<String>) {
    for field in INHERITED {
        if !text.contains(&format!("\n{field}.workspace = true")) {
            problems.push(format!("{shown}: must inherit `{field}.workspace = true`"));
        }
    }
    if !text.contains("[lints]\nworkspace = true") {
        problems.push(format!(
            "{shown}: must have `[lints]` with `workspace = true`"
        ));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let lib = dir.join("src/lib.rs");
    if lib.exists() {
        if !dir.join("README.md").exists() {
            problems.push(format!("{shown}: library crates need a README.md"));
        }
        let includes_readme = std::fs::read_to_string(&lib)
            .map(|source| source.contains("#![doc = include_str!(\"../README.md\")]"))
            .unwrap_or(false);
        if !includes_readme {
            problems.push(format!(
                "{shown}: src/lib.rs must use the README as crate doc"
            ));
        }
    }
}

pub(crate) fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        // Build output, hidden folders, and npm's installs (the client
        // checks' `node_modules`, made by `npm ci`, are not our files).
        if path.file_name().is_some_and(|n| {
            n == "target" || n == "node_modules" || n.to_string_lossy().starts_with('.')
        }) {
            continue;
        }
        if path.is_dir() {
            collect(&path, out)?;
        } else if path
            .extension()
            .is_some_and(|e| e == "rs" || e == "toml" || e == "md")
        {
            out.push(path);
        }
    }
    Ok(())
}
