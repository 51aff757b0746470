//! The Mermaid text of a drawable graph (LangGraph's `draw_mermaid()`).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::drawable::{DrawableGraph, GraphEdge, GraphNode, MermaidOptions};

/// Characters that make a node label look like Markdown to Mermaid.
const MARKDOWN_SPECIAL_CHARS: [char; 3] = ['*', '_', '`'];

/// Mermaid-safe node id: ASCII letters, digits, `_` and `-` are kept, every
/// other character becomes a backslash and its lowercase hex code point.
fn safe_id(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for c in id.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else {
            let _ = write!(out, "\\{:x}", u32::from(c));
        }
    }
    out
}

/// Escapes Mermaid's label syntax characters as entities.
fn escape_label(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '#' => out.push_str("#35;"),
            '[' => out.push_str("#91;"),
            ']' => out.push_str("#93;"),
            '(' => out.push_str("#40;"),
            ')' => out.push_str("#41;"),
            '{' => out.push_str("#123;"),
            '}' => out.push_str("#125;"),
            '"' => out.push_str("#quot;"),
            '<' => out.push_str("#60;"),
            '>' => out.push_str("#62;"),
            '|' => out.push_str("#124;"),
            other => out.push(other),
        }
    }
    out
}

/// A scalar metadata value as Python's `str()` prints it; `None` for values
/// that are not shown (null, objects, lists of non-scalars).
fn metadata_scalar(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Bool(true) => Some("True".to_owned()),
        serde_json::Value::Bool(false) => Some("False".to_owned()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn metadata_value(value: &serde_json::Value) -> Option<String> {
    if let serde_json::Value::Array(items) = value {
        let items: Option<Vec<String>> = items.iter().map(metadata_scalar).collect();
        return items.map(|items| items.join(", "));
    }
    metadata_scalar(value)
}

/// The common parts of two `:`-separated ids, position by position.
fn common_prefix(source: &str, target: &str) -> String {
    source
        .split(':')
        .zip(target.split(':'))
        .filter(|(s, t)| s == t)
        .map(|(s, _)| s)
        .collect::<Vec<_>>()
        .join(":")
}

pub(super) struct MermaidWriter<'a> {
    graph: &'a DrawableGraph,
    options: &'a MermaidOptions,
    first: Option<&'a str>,
    last: Option<&'a str>,
    out: String,
    seen_subgraphs: BTreeSet<String>,
}

impl<'a> MermaidWriter<'a> {
    /// A writer of `graph`'s Mermaid text.
    pub(super) fn new(graph: &'a DrawableGraph, options: &'a MermaidOptions) -> Self {
        Self {
            graph,
            options,
            first: graph.first_node().map(|n| n.id.as_str()),
            last: graph.last_node().map(|n| n.id.as_str()),
            out: String::new(),
            seen_subgraphs: BTreeSet::new(),
        }
    }

    /// The Mermaid text.
    pub(super) fn write(mut self) -> String {
        let with_styles = self.options.with_styles;
        if with_styles {
            let _ = write!(
                self.out,
                "---\nconfig:\n  flowchart:\n    curve: {}\n---\ngraph TD;\n",
                self.options.curve_style.as_str()
            );
        } else {
            self.out.push_str("graph TD;\n");
        }
        // Nodes of subgraphs are grouped under their deepest prefix.
        let mut subgraph_nodes: Vec<(String, Vec<&'a GraphNode>)> = Vec::new();
        let mut regular_nodes: Vec<&'a GraphNode> = Vec::new();
        for node in &self.graph.nodes {
            match node.id.rsplit_once(':') {
                Some((prefix, _)) => push_grouped(&mut subgraph_nodes, prefix, node),
                None => regular_nodes.push(node),
            }
        }
        if with_styles {
            for node in regular_nodes {
                self.node(node);
            }
        }
        let mut edge_groups: Vec<(String, Vec<&'a GraphEdge>)> = Vec::new();
        for edge in &self.graph.edges {
            push_grouped(
                &mut edge_groups,
                &common_prefix(&edge.source, &edge.target),
                edge,
            );
        }
        let top: Vec<&GraphEdge> = group(&edge_groups, "").to_vec();
        self.subgraph(&top, "", &edge_groups, &subgraph_nodes);
        for (prefix, edges) in &edge_groups {
            if prefix.is_empty() || prefix.contains(':') {
                continue;
            }
            self.subgraph(edges, prefix, &edge_groups, &subgraph_nodes);
            self.seen_subgraphs.insert(prefix.clone());
        }
        if with_styles {
            for (prefix, nodes) in &subgraph_nodes {
                if prefix.contains(':') || self.seen_subgraphs.contains(prefix) {
                    continue;
                }
                let _ = writeln!(self.out, "\tsubgraph {prefix}");
                for node in nodes {
                    self.node(node);
                }
                self.out.push_str("\tend\n");
                self.seen_subgraphs.insert(prefix.clone());
            }
            let styles = &self.options.node_styles;
            let _ = write!(
                self.out,
                "\tclassDef default {}\n\tclassDef first {}\n\tclassDef last {}\n",
                styles.default, styles.first, styles.last
            );
        }
        self.out
    }

    fn node(&mut self, node: &GraphNode) {
        let name = node.name.rsplit(':').next().unwrap_or_default();
        let mut label =
            if name.starts_with(MARKDOWN_SPECIAL_CHARS) && name.ends_with(MARKDOWN_SPECIAL_CHARS) {
                format!("<p>{name}</p>")
            } else {
                name.to_owned()
            };
        // The node's own keys, then the ones drawing adds (LangGraph's order).
        const ADDED: [&str; 3] = ["defer", "__interrupt", "__tools"];
        let lines: Vec<String> = node
            .metadata
            .iter()
            .filter(|(key, _)| !ADDED.contains(&key.as_str()))
            .chain(
                ADDED
                    .iter()
                    .filter_map(|key| node.metadata.get_key_value(*key)),
            )
            .filter_map(|(key, value)| {
                metadata_value(value).map(|v| escape_label(&format!("{key} = {v}")))
            })
            .collect();
        if !lines.is_empty() {
            let _ = write!(label, "<hr/><small><em>{}</em></small>", lines.join("\n"));
        }
        let id = safe_id(&node.id);
        let line = if Some(node.id.as_str()) == self.last {
            format!("{id}([{label}]):::last")
        } else if Some(node.id.as_str()) == self.first {
            format!("{id}([{label}]):::first")
        } else {
            format!("{id}({label})")
        };
        let _ = writeln!(self.out, "\t{line}");
    }

    fn subgraph(
        &mut self,
        edges: &[&GraphEdge],
        prefix: &str,
        edge_groups: &[(String, Vec<&'a GraphEdge>)],
        subgraph_nodes: &[(String, Vec<&'a GraphNode>)],
    ) {
        let self_loop = edges.len() == 1 && edges[0].source == edges[0].target;
        let block = !prefix.is_empty() && !self_loop;
        if block {
            let name = prefix.rsplit(':').next().unwrap_or(prefix);
            self.seen_subgraphs.insert(name.to_owned());
            let _ = writeln!(self.out, "\tsubgraph {name}");
            if self.options.with_styles {
                for node in group(subgraph_nodes, prefix) {
                    self.node(node);
                }
            }
        }
        for edge in edges {
            let arrow = match &edge.data {
                Some(data) => {
                    let words: Vec<&str> = data.split_whitespace().collect();
                    let n = self.options.wrap_label_n_words.max(1);
                    let text = if words.len() > n {
                        words
                            .chunks(n)
                            .map(|chunk| chunk.join(" "))
                            .collect::<Vec<_>>()
                            .join("&nbsp<br>&nbsp")
                    } else {
                        data.clone()
                    };
                    if edge.conditional {
                        format!(" -. &nbsp;{text}&nbsp; .-> ")
                    } else {
                        format!(" -- &nbsp;{text}&nbsp; --> ")
                    }
                }
                None if edge.conditional => " -.-> ".to_owned(),
                None => " --> ".to_owned(),
            };
            let _ = writeln!(
                self.out,
                "\t{}{arrow}{};",
                safe_id(&edge.source),
                safe_id(&edge.target)
            );
        }
        let nested_start = format!("{prefix}:");
        for (nested, nested_edges) in edge_groups {
            let Some(rest) = nested.strip_prefix(&nested_start) else {
                continue;
            };
            if rest.contains(':') {
                continue;
            }
            self.subgraph(nested_edges, nested, edge_groups, subgraph_nodes);
        }
        if block {
            self.out.push_str("\tend\n");
        }
    }
}

fn push_grouped<'a, T>(groups: &mut Vec<(String, Vec<&'a T>)>, key: &str, item: &'a T) {
    match groups.iter_mut().find(|(k, _)| k == key) {
        Some((_, items)) => items.push(item),
        None => groups.push((key.to_owned(), vec![item])),
    }
}

fn group<'g, 'a, T>(groups: &'g [(String, Vec<&'a T>)], key: &str) -> &'g [&'a T] {
    groups
        .iter()
        .find(|(k, _)| k == key)
        .map_or(&[], |(_, items)| items.as_slice())
}
