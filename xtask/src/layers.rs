//! The layer rules of STYLE.md section 1, checked from `cargo metadata`.

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// Every workspace crate and its layer. A crate may depend (normal or build)
/// only on crates of a strictly lower layer. Adding a crate means adding it
/// here and to the table in docs/ARCHITECTURE.md.
pub(crate) const LAYERS: &[(&str, u8)] = &[
    ("stategraph-core", 0),
    ("stategraph-channels", 1),
    ("stategraph-checkpoint", 1),
    ("stategraph-llm", 1),
    ("stategraph-store", 2),
    ("stategraph-openai", 2),
    ("stategraph-mcp", 2),
    ("stategraph-macros", 2),
    ("stategraph-conformance", 3),
    ("stategraph-checkpoint-sqlite", 3),
    ("stategraph-checkpoint-postgres", 3),
    ("stategraph-pregel", 3),
    ("stategraph-graph", 4),
    ("stategraph-prebuilt", 5),
    ("stategraph-bigtool", 6),
    ("stategraph", 7),
    ("stategraph-bench", 8),
    ("stategraph-server", 8),
];

/// Crates that dev-dependencies may point to regardless of layer.
const DEV_ANYWHERE: &[&str] = &["stategraph-conformance", "stategraph-llm"];

/// Heavy external crates and the only workspace crates allowed to use them.
const CONFINED: &[(&str, &[&str])] = &[
    ("axum", &["stategraph-server"]),
    // The server calls webhooks.
    ("reqwest", &["stategraph-openai", "stategraph-server"]),
    // The server keeps its own records in the SQLite file of its saver.
    (
        "rusqlite",
        &["stategraph-checkpoint-sqlite", "stategraph-server"],
    ),
    // C code registered through `unsafe`: one crate owns the soundness argument.
    ("sqlite-vec", &["stategraph-checkpoint-sqlite"]),
    (
        "sqlx",
        &["stategraph-checkpoint-postgres", "stategraph-server"],
    ),
];

/// Runtime crates no persistence backend may depend on.
const RUNTIME: &[&str] = &["stategraph-pregel", "stategraph-graph"];

fn layer_of(name: &str) -> Option<u8> {
    LAYERS.iter().find(|(n, _)| *n == name).map(|(_, l)| *l)
}

/// Checks a `cargo metadata --format-version 1` document; the error lists
/// every offending edge.
pub(crate) fn check_metadata(document: &str) -> Result<()> {
    let metadata: Value = serde_json::from_str(document).context("invalid cargo metadata JSON")?;
    let packages = metadata["packages"]
        .as_array()
        .context("cargo metadata has no packages")?;
    let members: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut problems = Vec::new();
    for package in packages {
        let name = package["name"].as_str().unwrap_or_default();
        let manifest = package["manifest_path"].as_str().unwrap_or_default();
        // Tools and examples sit above every layer.
        if name == "xtask" || manifest.contains("/examples/") {
            continue;
        }
        let Some(layer) = layer_of(name) else {
            problems.push(format!(
                "crate {name} is not in the layer table (xtask/src/layers.rs)"
            ));
            continue;
        };
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let dep_name = dep["name"].as_str().unwrap_or_default();
            let kind = dep["kind"].as_str().unwrap_or("normal");
            // A crate's tests may turn on its own features (a dev-dependency
            // on itself): that is no edge between crates.
            if dep_name == name && kind == "dev" {
                continue;
            }
            if let Some((_, allowed)) = CONFINED.iter().find(|(heavy, _)| *heavy == dep_name)
                && kind != "dev"
                && !allowed.contains(&name)
            {
                problems.push(format!(
                    "{name} -> {dep_name}: {dep_name} is confined to {}",
                    allowed.join(", ")
                ));
            }
            if !members.contains(&dep_name) {
                continue;
            }
            let Some(dep_layer) = layer_of(dep_name) else {
                problems.push(format!(
                    "crate {dep_name} is not in the layer table (xtask/src/layers.rs)"
                ));
                continue;
            };
            if name.starts_with("stategraph-checkpoint-") && RUNTIME.contains(&dep_name) {
                problems.push(format!(
                    "{name} -> {dep_name}: a persistence backend must not depend on the runtime"
                ));
                continue;
            }
            let allowed = dep_layer < layer || (kind == "dev" && DEV_ANYWHERE.contains(&dep_name));
            if !allowed {
                problems.push(format!(
                    "{name} (layer {layer}) -> {dep_name} (layer {dep_layer}) [{kind}]: dependencies must point to a lower layer"
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        bail!("layer rules violated:\n  {}", problems.join("\n  "))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn package(name: &str, deps: &[(&str, &str)]) -> Value {
        let deps: Vec<Value> = deps
            .iter()
            .map(|(dep, kind)| json!({"name": dep, "kind": if *kind == "normal" { Value::Null } else { json!(kind) }}))
            .collect();
        json!({"name": name, "manifest_path": format!("/w/crates/{name}/Cargo.toml"), "dependencies": deps})
    }

    fn check(packages: Vec<Value>) -> Result<()> {
        check_metadata(&json!({ "packages": packages }).to_string())
    }

    #[test]
    fn downward_edges_pass() {
        check(vec![
            package("stategraph-core", &[("serde", "normal")]),
            package("stategraph-channels", &[("stategraph-core", "normal")]),
            package(
                "stategraph-checkpoint",
                &[
                    ("stategraph-core", "normal"),
                    ("stategraph-conformance", "dev"),
                ],
            ),
            package(
                "stategraph-conformance",
                &[("stategraph-checkpoint", "normal")],
            ),
        ])
        .unwrap();
    }

    #[test]
    fn a_planted_upward_edge_is_rejected_and_named() {
        let err = check(vec![
            package("stategraph-core", &[("stategraph-channels", "normal")]),
            package("stategraph-channels", &[("stategraph-core", "normal")]),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("stategraph-core (layer 0) -> stategraph-channels (layer 1)"),
            "{err}"
        );
    }

    #[test]
    fn same_layer_edges_are_rejected() {
        let err = check(vec![
            package(
                "stategraph-channels",
                &[("stategraph-checkpoint", "normal")],
            ),
            package("stategraph-checkpoint", &[]),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("stategraph-channels (layer 1) -> stategraph-checkpoint (layer 1)"),
            "{err}"
        );
    }

    #[test]
    fn a_crate_may_turn_on_its_own_features_for_its_tests() {
        check(vec![package(
            "stategraph-server",
            &[("stategraph-server", "dev")],
        )])
        .unwrap();
        let err = check(vec![package(
            "stategraph-server",
            &[("stategraph-server", "normal")],
        )])
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("stategraph-server (layer 8) -> stategraph-server"),
            "{err}"
        );
    }

    #[test]
    fn upward_dev_dependencies_are_rejected_except_the_suite_and_fakes() {
        let err = check(vec![
            package("stategraph-channels", &[("stategraph-graph", "dev")]),
            package("stategraph-graph", &[]),
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("[dev]"), "{err}");
    }

    #[test]
    fn backends_must_not_depend_on_the_runtime() {
        let err = check(vec![
            package(
                "stategraph-checkpoint-sqlite",
                &[("stategraph-graph", "dev")],
            ),
            package("stategraph-graph", &[]),
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("must not depend on the runtime"), "{err}");
    }

    #[test]
    fn heavy_externals_are_confined() {
        let err = check(vec![package("stategraph-graph", &[("rusqlite", "normal")])])
            .unwrap_err()
            .to_string();
        assert!(err.contains("rusqlite is confined"), "{err}");
    }

    #[test]
    fn unknown_crates_must_join_the_table() {
        let err = check(vec![package("stategraph-mystery", &[])])
            .unwrap_err()
            .to_string();
        assert!(err.contains("not in the layer table"), "{err}");
    }
}
