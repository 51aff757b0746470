//! The runtime's module rules (issue 22): in `crates/pregel/src`, no
//! source file over 800 lines, and no cycle in the file-level import graph.
//!
//! An import is a path that starts with `crate::` or `super::` outside
//! comments and test modules. It must name the module that defines what it
//! imports (`crate::chunk::StreamChunk`, not the crate root's re-export
//! `crate::StreamChunk`), so that every edge of the graph is a real one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result, bail};

/// The crate whose modules are checked.
const RUNTIME: &str = "crates/pregel/src";
/// The longest a source file of it may be.
const MAX_LINES: usize = 800;

pub(crate) fn check(root: &Path) -> Result<()> {
    let dir = root.join(RUNTIME);
    let sources = read_modules(&dir)?;
    let modules: BTreeSet<String> = sources.keys().cloned().collect();
    let mut problems = Vec::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, text) in &sources {
        let shown = format!("{RUNTIME}/{}", file_of(module));
        let lines = text.lines().count();
        if lines > MAX_LINES {
            problems.push(format!("{shown}: {lines} lines, more than {MAX_LINES}"));
        }
        let code = without_tests_and_comments(text);
        let targets = edges.entry(module.clone()).or_default();
        // `use child::Item` (a re-export of a submodule's item) imports too.
        for child in used_children(&code) {
            let child = if module.is_empty() {
                child
            } else {
                format!("{module}::{child}")
            };
            if modules.contains(&child) {
                targets.insert(child);
            }
        }
        for path in import_paths(&code) {
            let absolute = match path.first().map(String::as_str) {
                Some("super") => {
                    let mut parent: Vec<String> = module.split("::").map(str::to_owned).collect();
                    parent.pop();
                    parent
                        .into_iter()
                        .chain(path[1..].iter().cloned())
                        .collect()
                }
                _ => path[1..].to_vec(),
            };
            match defining_module(&absolute, &modules) {
                Some(target) if target != *module => {
                    targets.insert(target);
                }
                Some(_) => {}
                None => problems.push(format!(
                    "{shown}: `{}` names the crate root; import from the module that defines it",
                    path.join("::")
                )),
            }
        }
    }
    if let Some(cycle) = find_cycle(&edges) {
        problems.push(format!(
            "{RUNTIME}: the file-level imports form a cycle: {}",
            cycle.join(" -> ")
        ));
    }
    if problems.is_empty() {
        println!("modules: ok ({} files of {RUNTIME})", sources.len());
        Ok(())
    } else {
        bail!("modules: {}", problems.join("\n  "))
    }
}

/// Reads every `.rs` file under `dir` (found by tidy's walk), keyed by
/// module path (`""` for `lib.rs`, `run::plan` for `run/plan.rs`).
fn read_modules(dir: &Path) -> Result<BTreeMap<String, String>> {
    let mut files = Vec::new();
    crate::tidy::collect(dir, &mut files)?;
    let mut out = BTreeMap::new();
    for path in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
    {
        let relative = path.strip_prefix(dir).unwrap_or(path).with_extension("");
        let mut module: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if module.last().is_some_and(|m| m == "mod" || m == "lib") {
            module.pop();
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        out.insert(module.join("::"), text);
    }
    Ok(out)
}

fn file_of(module: &str) -> String {
    if module.is_empty() {
        "lib.rs".to_owned()
    } else {
        format!("{}.rs", module.replace("::", "/"))
    }
}

/// The text before the first test module, with `//` comments blanked.
fn without_tests_and_comments(text: &str) -> String {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    code.lines()
        .map(|line| line.split("//").next().unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::…` and `super::…` path, with `use crate::{a::B, c}`
/// groups expanded one level (enough for the module a path names).
fn import_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for start in ["crate::", "super::"] {
        let mut rest = code;
        while let Some(at) = rest.find(start) {
            let before = rest[..at].chars().next_back();
            rest = &rest[at..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                rest = &rest[start.len()..];
                continue;
            }
            let head = start.trim_end_matches(':').to_owned();
            let mut path = vec![head];
            let mut tail = &rest[start.len()..];
            loop {
                if let Some(group) = tail.strip_prefix('{') {
                    let end = group.find('}').unwrap_or(group.len());
                    for part in group[..end].split(',') {
                        let mut expanded = path.clone();
                        expanded.extend(segments(part.trim()));
                        if expanded.len() > path.len() {
                            paths.push(expanded);
                        }
                    }
                    break;
                }
                let ident: String = tail
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if ident.is_empty() {
                    break;
                }
                tail = &tail[ident.len()..];
                path.push(ident);
                match tail.strip_prefix("::") {
                    Some(next) => tail = next,
                    None => {
                        paths.push(path.clone());
                        break;
                    }
                }
            }
            rest = &rest[start.len()..];
        }
    }
    paths
}

/// The first segment of every `use` path that starts with a plain name
/// (not `crate`, `super`, `self` or an external crate the caller rules out
/// by checking it against the modules).
fn used_children(code: &str) -> Vec<String> {
    code.lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = line
                .strip_prefix("pub(crate) ")
                .or_else(|| line.strip_prefix("pub(super) "))
                .or_else(|| line.strip_prefix("pub "))
                .unwrap_or(line);
            line.strip_prefix("use ")
        })
        .filter_map(|path| segments(path).into_iter().next())
        .filter(|first| !matches!(first.as_str(), "crate" | "super" | "self"))
        .collect()
}

fn segments(part: &str) -> Vec<String> {
    part.split("::")
        .map(|s| {
            s.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .take_while(|s| !s.is_empty())
        .collect()
}

/// The longest prefix of `path` that names a module other than the crate
/// root; `None` for a path into the root (a re-export).
fn defining_module(path: &[String], modules: &BTreeSet<String>) -> Option<String> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].join("::"))
        .find(|candidate| modules.contains(candidate))
}

/// A cycle of the graph, if it has one, as the modules along it.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, bool>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        // `false`: on the current path; `true`: done.
        match state.get(node) {
            Some(true) => return None,
            Some(false) => {
                let from = stack.iter().position(|m| m == node).unwrap_or(0);
                let mut cycle = stack[from..].to_vec();
                cycle.push(node.to_owned());
                return Some(cycle);
            }
            None => {}
        }
        state.insert(node.to_owned(), false);
        stack.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, state, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        state.insert(node.to_owned(), true);
        None
    }
    let mut state = BTreeMap::new();
    edges
        .keys()
        .find_map(|node| visit(node, edges, &mut state, &mut Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(paths: &[&[&str]]) -> Vec<Vec<String>> {
        paths
            .iter()
            .map(|p| p.iter().map(|s| (*s).to_owned()).collect())
            .collect()
    }

    #[test]
    fn paths_are_read_from_use_groups_and_inline_code() {
        let code = "use crate::{a::B, c};\nfn f() { super::d::E::new(); my_crate::x::Y; }";
        assert_eq!(
            import_paths(code),
            strings(&[
                &["crate", "a", "B"],
                &["crate", "c"],
                &["super", "d", "E", "new"]
            ])
        );
    }

    #[test]
    fn a_cycle_is_found_and_a_chain_is_not() {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        edges.entry("a".into()).or_default().insert("b".into());
        edges.entry("b".into()).or_default().insert("c".into());
        assert_eq!(find_cycle(&edges), None);
        edges.entry("c".into()).or_default().insert("a".into());
        assert_eq!(
            find_cycle(&edges),
            Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
        );
    }
}
