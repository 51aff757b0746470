//! Drawing a compiled graph: LangGraph's `get_graph()`, `draw_mermaid()` and
//! `draw_ascii()`.
//!
//! The edges are found the way LangGraph finds them: a dry run of the graph's
//! channels in which no node function runs. Plain edges, waiting edges and
//! `Command` destinations write their trigger channels; conditional edges
//! contribute the destinations of their path map (a branch without a path map
//! draws no edges, as in LangGraph when the router has no `Literal` return
//! type). Nodes triggered by a write become edges; a node triggered with no
//! write of the previous step (a deferred node, for example) gets dotted edges
//! from every node of that step. Nodes that lead nowhere get an edge to
//! `__end__`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::sync::Arc;

use stategraph_core::JsonMap;

use crate::builder::{NodeNames, NodeSpec, StateGraph};
use crate::{END, START};

/// How many supersteps the dry run may take (LangGraph's `limit`).
const DRY_RUN_LIMIT: i64 = 250;

// ---------------------------------------------------------------------------
// The structure a compiled graph keeps for drawing.
// ---------------------------------------------------------------------------

/// What a compiled graph remembers of its builder, for drawing.
pub(crate) struct GraphStructure {
    nodes: Vec<NodeInfo>,
    edges: Arc<BTreeSet<(String, String)>>,
    waiting_edges: Arc<BTreeSet<(Vec<String>, String)>>,
    /// Per source node, its branches in the order they were added; each is
    /// its path map (key, destination) when it has one.
    branches: BTreeMap<String, Vec<Option<PathMapPairs>>>,
    /// The compiled graph's static breakpoints (`*`: every node).
    interrupt_before: Vec<String>,
    interrupt_after: Vec<String>,
}

/// A path map as (key, destination) pairs.
type PathMapPairs = Vec<(String, String)>;

struct NodeInfo {
    name: Arc<str>,
    metadata: JsonMap,
    /// What drawing adds last (`__tools`).
    drawn: JsonMap,
    defer: bool,
    /// `Command` destinations, with their labels.
    destinations: Vec<(String, Option<String>)>,
    subgraph: Option<Arc<GraphStructure>>,
}

impl GraphStructure {
    /// Copies the drawing-relevant parts of `graph`, whose nodes in
    /// declaration order are `declared`.
    pub(crate) fn from_nodes(graph: &StateGraph, declared: &[(NodeNames, &NodeSpec)]) -> Self {
        let nodes = declared
            .iter()
            .map(|(names, spec)| NodeInfo {
                name: names.node.clone(),
                metadata: spec.metadata.clone(),
                drawn: spec.drawn.clone(),
                defer: spec.defer,
                destinations: spec
                    .destinations
                    .iter()
                    .map(|d| (d.clone(), spec.destination_labels.get(d).cloned()))
                    .collect(),
                subgraph: spec.subgraph.as_ref().map(|g| g.structure().clone()),
            })
            .collect();
        let branches = graph
            .branches
            .iter()
            .map(|(source, branches)| {
                let maps = branches
                    .iter()
                    .map(|(_, branch)| {
                        branch
                            .path_map
                            .as_ref()
                            .map(|map| map.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                    })
                    .collect();
                (source.clone(), maps)
            })
            .collect();
        Self {
            nodes,
            edges: graph.edges.clone(),
            waiting_edges: graph.waiting_edges.clone(),
            branches,
            interrupt_before: Vec::new(),
            interrupt_after: Vec::new(),
        }
    }

    /// Draws these static breakpoints as `__interrupt` metadata.
    pub(crate) fn with_interrupts(mut self, before: &[String], after: &[String]) -> Self {
        self.interrupt_before = before.to_vec();
        self.interrupt_after = after.to_vec();
        self
    }

    /// LangGraph's `__interrupt` value for `node`, if it is a breakpoint.
    fn interrupt_of(&self, node: &str) -> Option<&'static str> {
        let hit = |names: &[String]| names.iter().any(|n| n == node || n == "*");
        match (hit(&self.interrupt_before), hit(&self.interrupt_after)) {
            (true, true) => Some("before,after"),
            (true, false) => Some("before"),
            (false, true) => Some("after"),
            (false, false) => None,
        }
    }

    /// The drawable graph, expanding subgraphs `xray` levels deep.
    pub(crate) fn drawable(&self, xray: usize) -> DrawableGraph {
        let discovered = DryRun::new(self).run();
        let mut graph = DrawableGraph::default();
        graph.nodes.push(GraphNode {
            id: START.to_owned(),
            name: START.to_owned(),
            data: Some(NodeData::Runnable),
            metadata: JsonMap::new(),
        });
        for node in &self.nodes {
            let mut metadata = node.metadata.clone();
            if node.defer {
                metadata.insert("defer".to_owned(), serde_json::Value::Bool(true));
            }
            if let Some(when) = self.interrupt_of(&node.name) {
                metadata.insert("__interrupt".to_owned(), when.into());
            }
            metadata.extend(node.drawn.iter().map(|(k, v)| (k.clone(), v.clone())));
            graph.nodes.push(GraphNode {
                id: node.name.to_string(),
                name: node.name.to_string(),
                data: Some(if node.subgraph.is_some() {
                    NodeData::Graph
                } else {
                    NodeData::Runnable
                }),
                metadata,
            });
        }
        for edge in &discovered.edges {
            let data = edge.label.clone().filter(|label| *label != edge.target);
            graph.add_edge_once(&edge.source, &edge.target, data, edge.conditional);
        }
        // Nodes that lead nowhere end the graph.
        let sources: BTreeSet<&str> = discovered.edges.iter().map(|e| e.source.as_str()).collect();
        let termini: BTreeSet<&str> = discovered
            .edges
            .iter()
            .map(|e| e.target.as_str())
            .filter(|target| *target != END && !sources.contains(target))
            .collect();
        let end_edge_exists = discovered.edges.iter().any(|e| e.target == END);
        if !termini.is_empty() {
            for source in termini {
                graph.add_edge_once(source, END, None, false);
            }
        } else if discovered.last_step.len() == 1 && !end_edge_exists {
            for source in &discovered.last_step {
                graph.add_edge_once(source, END, None, true);
            }
        }
        if xray > 0 {
            for node in &self.nodes {
                if let Some(subgraph) = &node.subgraph {
                    graph.inline_subgraph(&node.name, subgraph.drawable(xray - 1));
                }
            }
        }
        graph
    }
}

// ---------------------------------------------------------------------------
// The dry run that discovers the edges.
// ---------------------------------------------------------------------------

/// A channel of the dry run; only whether it holds a value matters.
enum Channel {
    /// `EphemeralValue`: holds a value for the step after a write.
    Ephemeral { set: bool },
    /// `LastValueAfterFinish`: a deferred node's trigger.
    AfterFinish { set: bool, finished: bool },
    /// `NamedBarrierValue(AfterFinish)`: a waiting edge's join.
    Barrier {
        names: BTreeSet<String>,
        seen: BTreeSet<String>,
        after_finish: bool,
        finished: bool,
    },
}

impl Channel {
    fn update(&mut self, values: &[Option<String>]) -> bool {
        match self {
            Self::Ephemeral { set } => {
                if values.is_empty() {
                    std::mem::replace(set, false)
                } else {
                    *set = true;
                    true
                }
            }
            Self::AfterFinish { set, finished } => {
                if values.is_empty() {
                    false
                } else {
                    *finished = false;
                    *set = true;
                    true
                }
            }
            Self::Barrier { names, seen, .. } => {
                let mut updated = false;
                for value in values.iter().flatten() {
                    if names.contains(value) && !seen.contains(value) {
                        seen.insert(value.clone());
                        updated = true;
                    }
                }
                updated
            }
        }
    }

    fn is_available(&self) -> bool {
        match self {
            Self::Ephemeral { set } => *set,
            Self::AfterFinish { set, finished } => *set && *finished,
            Self::Barrier {
                names,
                seen,
                after_finish,
                finished,
            } => (!*after_finish || *finished) && seen == names,
        }
    }

    fn consume(&mut self) -> bool {
        match self {
            Self::Ephemeral { .. } => false,
            Self::AfterFinish { set, finished } => {
                if *finished {
                    *finished = false;
                    *set = false;
                    true
                } else {
                    false
                }
            }
            Self::Barrier {
                names,
                seen,
                after_finish,
                finished,
            } => {
                if (!*after_finish || *finished) && seen == names {
                    *finished = false;
                    seen.clear();
                    true
                } else {
                    false
                }
            }
        }
    }

    fn finish(&mut self) -> bool {
        match self {
            Self::Ephemeral { .. } => false,
            Self::AfterFinish { set, finished } => {
                if !*finished && *set {
                    *finished = true;
                    true
                } else {
                    false
                }
            }
            Self::Barrier {
                names,
                seen,
                after_finish,
                finished,
            } => {
                if *after_finish && !*finished && seen == names {
                    *finished = true;
                    true
                } else {
                    false
                }
            }
        }
    }
}

/// An edge found by the dry run (before labels equal to the target are dropped).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct FoundEdge {
    source: String,
    target: String,
    conditional: bool,
    label: Option<String>,
}

/// A write seen from its writer's side: the channel, and whether and how it
/// was declared by a conditional edge.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct TriggerEdge {
    channel: String,
    conditional: bool,
    label: Option<String>,
}

struct Discovered {
    edges: BTreeSet<FoundEdge>,
    /// The nodes that ran in the last superstep of the dry run.
    last_step: Vec<String>,
}

type Write = (String, Option<String>);

struct DryRun<'a> {
    structure: &'a GraphStructure,
    channels: BTreeMap<String, Channel>,
    versions: BTreeMap<String, u64>,
    versions_seen: BTreeMap<String, BTreeMap<String, u64>>,
    /// Every node's trigger channels, sorted; `__start__` first in `order`.
    triggers: BTreeMap<String, Vec<String>>,
    trigger_to_nodes: BTreeMap<String, Vec<String>>,
    order: Vec<String>,
}

fn branch_channel(node: &str) -> String {
    format!("branch:to:{node}")
}

fn join_channel(starts: &[String], end: &str) -> String {
    format!("join:{}:{end}", starts.join("+"))
}

impl<'a> DryRun<'a> {
    fn new(structure: &'a GraphStructure) -> Self {
        let mut channels = BTreeMap::new();
        let mut triggers: BTreeMap<String, Vec<String>> = BTreeMap::new();
        channels.insert(START.to_owned(), Channel::Ephemeral { set: false });
        triggers.insert(START.to_owned(), vec![START.to_owned()]);
        let mut order = vec![START.to_owned()];
        for node in &structure.nodes {
            let channel = branch_channel(&node.name);
            channels.insert(
                channel.clone(),
                if node.defer {
                    Channel::AfterFinish {
                        set: false,
                        finished: false,
                    }
                } else {
                    Channel::Ephemeral { set: false }
                },
            );
            triggers.insert(node.name.to_string(), vec![channel]);
            order.push(node.name.to_string());
        }
        for (starts, end) in structure.waiting_edges.iter() {
            if end == END {
                continue;
            }
            let after_finish = structure.nodes.iter().any(|n| *n.name == **end && n.defer);
            let channel = join_channel(starts, end);
            channels.insert(
                channel.clone(),
                Channel::Barrier {
                    names: starts.iter().cloned().collect(),
                    seen: BTreeSet::new(),
                    after_finish,
                    finished: false,
                },
            );
            triggers.entry(end.clone()).or_default().push(channel);
        }
        let mut trigger_to_nodes: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (node, channels) in &mut triggers {
            channels.sort();
            channels.dedup();
            for channel in channels.iter() {
                trigger_to_nodes
                    .entry(channel.clone())
                    .or_default()
                    .push(node.clone());
            }
        }
        Self {
            structure,
            channels,
            versions: BTreeMap::new(),
            versions_seen: BTreeMap::new(),
            triggers,
            trigger_to_nodes,
            order,
        }
    }

    fn node_triggers(&self, node: &str) -> &[String] {
        self.triggers.get(node).map_or(&[], Vec::as_slice)
    }

    /// The writes of `node`'s plain and waiting edges.
    fn edge_writes(&self, node: &str) -> Vec<Write> {
        let mut writes = Vec::new();
        for (start, end) in self.structure.edges.iter() {
            if start == node && end != END {
                writes.push((branch_channel(end), None));
            }
        }
        for (starts, end) in self.structure.waiting_edges.iter() {
            if end != END && starts.iter().any(|s| s == node) {
                writes.push((join_channel(starts, end), Some(node.to_owned())));
            }
        }
        writes
    }

    /// The writes `node`'s conditional routes declare: its `Command`
    /// destinations, then each branch's path map, as (destination, label).
    fn static_writers(&self, node: &str) -> Vec<Vec<(String, Option<String>)>> {
        let mut writers = Vec::new();
        if let Some(info) = self.structure.nodes.iter().find(|n| *n.name == *node) {
            writers.push(info.destinations.clone());
        }
        for path_map in self.structure.branches.get(node).into_iter().flatten() {
            writers.push(
                path_map
                    .iter()
                    .flatten()
                    .map(|(key, dest)| (dest.clone(), Some(key.clone())))
                    .collect(),
            );
        }
        writers
    }

    fn next_version(&self) -> u64 {
        self.versions.values().max().copied().unwrap_or(0) + 1
    }

    /// LangGraph's `apply_writes`; returns the channels that became available.
    fn apply_writes(&mut self, tasks: &[(String, Vec<Write>)]) -> BTreeSet<String> {
        let bump_step = tasks
            .iter()
            .any(|(name, _)| !self.node_triggers(name).is_empty());
        for (name, _) in tasks {
            let seen: Vec<(String, u64)> = self
                .node_triggers(name)
                .iter()
                .filter_map(|c| self.versions.get(c).map(|v| (c.clone(), *v)))
                .collect();
            self.versions_seen
                .entry(name.clone())
                .or_default()
                .extend(seen);
        }
        let next = self.next_version();
        let read: BTreeSet<String> = tasks
            .iter()
            .flat_map(|(name, _)| self.node_triggers(name).iter().cloned())
            .collect();
        for channel in read {
            if let Some(c) = self.channels.get_mut(&channel)
                && c.consume()
            {
                self.versions.insert(channel, next);
            }
        }
        let mut by_channel: BTreeMap<String, Vec<Option<String>>> = BTreeMap::new();
        for (_, writes) in tasks {
            for (channel, value) in writes {
                by_channel
                    .entry(channel.clone())
                    .or_default()
                    .push(value.clone());
            }
        }
        let mut updated = BTreeSet::new();
        for (channel, values) in by_channel {
            if let Some(c) = self.channels.get_mut(&channel)
                && c.update(&values)
            {
                self.versions.insert(channel.clone(), next);
                if c.is_available() {
                    updated.insert(channel);
                }
            }
        }
        if bump_step {
            for (channel, c) in &mut self.channels {
                if c.is_available() && !updated.contains(channel) && c.update(&[]) {
                    self.versions.insert(channel.clone(), next);
                    if c.is_available() {
                        updated.insert(channel.clone());
                    }
                }
            }
            if updated
                .iter()
                .all(|c| !self.trigger_to_nodes.contains_key(c))
            {
                for (channel, c) in &mut self.channels {
                    if c.finish() {
                        self.versions.insert(channel.clone(), next);
                        if c.is_available() {
                            updated.insert(channel.clone());
                        }
                    }
                }
            }
        }
        updated
    }

    /// LangGraph's `prepare_next_tasks` for pull tasks: the nodes to run next.
    fn next_tasks(&self, updated: &BTreeSet<String>) -> Vec<String> {
        let candidates: Vec<String> = if !updated.is_empty() {
            let set: BTreeSet<&String> = updated
                .iter()
                .filter_map(|c| self.trigger_to_nodes.get(c))
                .flatten()
                .collect();
            set.into_iter().cloned().collect()
        } else if self.versions.is_empty() {
            Vec::new()
        } else {
            self.order.clone()
        };
        candidates
            .into_iter()
            .filter(|name| {
                let seen = self.versions_seen.get(name);
                self.node_triggers(name).iter().any(|channel| {
                    let available = self
                        .channels
                        .get(channel)
                        .is_some_and(Channel::is_available);
                    available
                        && seen.is_none_or(|seen| {
                            self.versions.get(channel).copied().unwrap_or(0)
                                > seen.get(channel).copied().unwrap_or(0)
                        })
                })
            })
            .collect()
    }

    fn run(mut self) -> Discovered {
        let mut edges: BTreeSet<FoundEdge> = BTreeSet::new();
        let mut sources: BTreeMap<String, BTreeSet<TriggerEdge>> = BTreeMap::new();
        let mut step_sources: BTreeMap<String, BTreeSet<TriggerEdge>> = BTreeMap::new();
        let mut declared: BTreeMap<String, BTreeSet<TriggerEdge>> = BTreeMap::new();
        let mut static_seen: BTreeSet<String> = BTreeSet::new();

        let updated = self.apply_input();
        let mut tasks = self.next_tasks(&updated);
        for _step in -1..DRY_RUN_LIMIT {
            if tasks.is_empty() {
                break;
            }
            // Run the tasks' writers: edges always, declared routes once.
            let mut conditionals: BTreeMap<(String, String), Option<String>> = BTreeMap::new();
            let mut task_writes: Vec<(String, Vec<Write>)> = Vec::new();
            for task in &tasks {
                let mut writes = self.edge_writes(task);
                if static_seen.insert(task.clone()) {
                    for writer in self.static_writers(task) {
                        for (dest, label) in writer {
                            if dest == END {
                                edges.insert(FoundEdge {
                                    source: task.clone(),
                                    target: END.to_owned(),
                                    conditional: true,
                                    label,
                                });
                                continue;
                            }
                            let channel = branch_channel(&dest);
                            conditionals.insert((task.clone(), channel.clone()), label.clone());
                            declared
                                .entry(task.clone())
                                .or_default()
                                .insert(TriggerEdge {
                                    channel: channel.clone(),
                                    conditional: true,
                                    label,
                                });
                            writes.push((channel, None));
                        }
                    }
                }
                task_writes.push((task.clone(), writes));
            }
            // Which channels each task of this step wrote, and how.
            step_sources = BTreeMap::new();
            for (task, writes) in &task_writes {
                let mut task_edges: BTreeSet<TriggerEdge> = writes
                    .iter()
                    .map(|(channel, value)| {
                        let key = (task.clone(), channel.clone());
                        let label = if value.is_none() {
                            conditionals.get(&key)
                        } else {
                            None
                        };
                        TriggerEdge {
                            channel: channel.clone(),
                            conditional: label.is_some(),
                            label: label.cloned().flatten(),
                        }
                    })
                    .collect();
                if let Some(declared) = declared.get(task) {
                    task_edges.extend(declared.iter().cloned());
                }
                step_sources.insert(task.clone(), task_edges);
            }
            sources.extend(step_sources.clone());
            let mut trigger_to_sources: BTreeMap<String, BTreeSet<FoundEdge>> = BTreeMap::new();
            for (source, triggers) in &sources {
                for trigger in triggers {
                    trigger_to_sources
                        .entry(trigger.channel.clone())
                        .or_default()
                        .insert(FoundEdge {
                            source: source.clone(),
                            target: String::new(),
                            conditional: trigger.conditional,
                            label: trigger.label.clone(),
                        });
                }
            }
            let updated = self.apply_writes(&task_writes);
            let next = self.next_tasks(&updated);
            // Each triggered node gets an edge from whoever wrote its triggers.
            for task in &next {
                let mut added = false;
                for trigger in self.node_triggers(task) {
                    for found in trigger_to_sources.get(trigger).into_iter().flatten() {
                        edges.insert(FoundEdge {
                            target: task.clone(),
                            ..found.clone()
                        });
                        let written = TriggerEdge {
                            channel: trigger.clone(),
                            conditional: found.conditional,
                            label: found.label.clone(),
                        };
                        if step_sources
                            .get(&found.source)
                            .is_some_and(|s| s.contains(&written))
                        {
                            added = true;
                        } else if let Some(s) = sources.get_mut(&found.source) {
                            s.remove(&written);
                        }
                    }
                }
                if !added {
                    for source in step_sources.keys() {
                        edges.insert(FoundEdge {
                            source: source.clone(),
                            target: task.clone(),
                            conditional: true,
                            label: None,
                        });
                    }
                }
            }
            tasks = next;
        }
        Discovered {
            edges,
            last_step: step_sources.into_keys().collect(),
        }
    }

    /// Writes the (empty) input to `__start__`.
    fn apply_input(&mut self) -> BTreeSet<String> {
        let mut updated = BTreeSet::new();
        if let Some(channel) = self.channels.get_mut(START)
            && channel.update(&[None])
        {
            self.versions.insert(START.to_owned(), 1);
            updated.insert(START.to_owned());
        }
        updated
    }
}

// ---------------------------------------------------------------------------
// The drawable graph.
// ---------------------------------------------------------------------------

/// What a node of a [`DrawableGraph`] stands for (LangGraph's node `data`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeData {
    /// A node function (also the `__start__` node).
    Runnable,
    /// A compiled graph used as a node (a subgraph), not expanded.
    Graph,
}

/// A node of a [`DrawableGraph`] (LangGraph's `langchain_core` `Node`).
#[derive(Clone, Debug, PartialEq)]
pub struct GraphNode {
    /// The unique id: the node name, or `parent:child` for a node of an
    /// expanded subgraph.
    pub id: String,
    /// The name shown in drawings (the last part of the id).
    pub name: String,
    /// What the node runs; `None` for `__end__`.
    pub data: Option<NodeData>,
    /// The node's metadata, plus `"defer": true` for deferred nodes (empty
    /// when there is none).
    pub metadata: JsonMap,
}

/// An edge of a [`DrawableGraph`] (LangGraph's `langchain_core` `Edge`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphEdge {
    /// The source node id.
    pub source: String,
    /// The target node id.
    pub target: String,
    /// The edge's label (LangGraph's `data`): the path-map key that leads to
    /// the target, when it differs from the target's name.
    pub data: Option<String>,
    /// Whether the edge is taken only sometimes (conditional edges,
    /// `Command` destinations); drawn dotted.
    pub conditional: bool,
}

/// The nodes and edges of a compiled graph, ready to draw (LangGraph's
/// `get_graph()` result). Get one from
/// [`CompiledStateGraph::get_graph`](crate::CompiledStateGraph::get_graph).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DrawableGraph {
    nodes: Vec<GraphNode>,
    edges: Vec<GraphEdge>,
}

/// The curve Mermaid draws edges with (LangGraph's `CurveStyle`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CurveStyle {
    /// `basis`
    Basis,
    /// `bumpX`
    BumpX,
    /// `bumpY`
    BumpY,
    /// `cardinal`
    Cardinal,
    /// `catmullRom`
    CatmullRom,
    /// `linear` (the default)
    #[default]
    Linear,
    /// `monotoneX`
    MonotoneX,
    /// `monotoneY`
    MonotoneY,
    /// `natural`
    Natural,
    /// `step`
    Step,
    /// `stepAfter`
    StepAfter,
    /// `stepBefore`
    StepBefore,
}

impl CurveStyle {
    /// The name Mermaid knows the curve by.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Basis => "basis",
            Self::BumpX => "bumpX",
            Self::BumpY => "bumpY",
            Self::Cardinal => "cardinal",
            Self::CatmullRom => "catmullRom",
            Self::Linear => "linear",
            Self::MonotoneX => "monotoneX",
            Self::MonotoneY => "monotoneY",
            Self::Natural => "natural",
            Self::Step => "step",
            Self::StepAfter => "stepAfter",
            Self::StepBefore => "stepBefore",
        }
    }
}

/// The CSS of Mermaid's node classes (LangGraph's `NodeStyles`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeStyles {
    /// Every node.
    pub default: String,
    /// The first node (`__start__`).
    pub first: String,
    /// The last node (`__end__`).
    pub last: String,
}

impl Default for NodeStyles {
    fn default() -> Self {
        Self {
            default: "fill:#f2f0ff,line-height:1.2".to_owned(),
            first: "fill-opacity:0".to_owned(),
            last: "fill:#bfb6fc".to_owned(),
        }
    }
}

/// Options of [`DrawableGraph::draw_mermaid_with`] (LangGraph's
/// `draw_mermaid` keyword arguments).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MermaidOptions {
    /// Emit the front matter, node declarations and class definitions
    /// (default `true`); without them only the edges are listed.
    pub with_styles: bool,
    /// The edge curve (default [`CurveStyle::Linear`]).
    pub curve_style: CurveStyle,
    /// The node classes' CSS.
    pub node_styles: NodeStyles,
    /// Edge labels longer than this many words are wrapped (default 9).
    pub wrap_label_n_words: usize,
}

impl Default for MermaidOptions {
    fn default() -> Self {
        Self {
            with_styles: true,
            curve_style: CurveStyle::default(),
            node_styles: NodeStyles::default(),
            wrap_label_n_words: 9,
        }
    }
}

impl DrawableGraph {
    /// The nodes, in order: `__start__`, the graph's nodes in the order they
    /// were added, `__end__`, then the nodes of expanded subgraphs.
    pub fn nodes(&self) -> &[GraphNode] {
        &self.nodes
    }

    /// The node with this id.
    pub fn node(&self, id: &str) -> Option<&GraphNode> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The edges, sorted by source, target, conditional flag and label, then
    /// the edges of expanded subgraphs.
    pub fn edges(&self) -> &[GraphEdge] {
        &self.edges
    }

    /// The single node no edge leads to (`__start__`), if there is exactly one.
    pub fn first_node(&self) -> Option<&GraphNode> {
        self.first_node_excluding(&[])
    }

    /// The single node no edge leaves (`__end__`), if there is exactly one.
    pub fn last_node(&self) -> Option<&GraphNode> {
        self.last_node_excluding(&[])
    }

    fn first_node_excluding(&self, exclude: &[&str]) -> Option<&GraphNode> {
        let targets: BTreeSet<&str> = self
            .edges
            .iter()
            .filter(|e| !exclude.contains(&e.source.as_str()))
            .map(|e| e.target.as_str())
            .collect();
        single(
            self.nodes
                .iter()
                .filter(|n| !exclude.contains(&n.id.as_str()) && !targets.contains(n.id.as_str())),
        )
    }

    fn last_node_excluding(&self, exclude: &[&str]) -> Option<&GraphNode> {
        let sources: BTreeSet<&str> = self
            .edges
            .iter()
            .filter(|e| !exclude.contains(&e.target.as_str()))
            .map(|e| e.source.as_str())
            .collect();
        single(
            self.nodes
                .iter()
                .filter(|n| !exclude.contains(&n.id.as_str()) && !sources.contains(n.id.as_str())),
        )
    }

    /// Adds an edge unless one already joins `source` to `target`, adding
    /// `__end__` when it is first needed.
    fn add_edge_once(
        &mut self,
        source: &str,
        target: &str,
        data: Option<String>,
        conditional: bool,
    ) {
        if self
            .edges
            .iter()
            .any(|e| e.source == source && e.target == target)
        {
            return;
        }
        for id in [source, target] {
            if self.node(id).is_none() {
                self.nodes.push(GraphNode {
                    id: id.to_owned(),
                    name: id.to_owned(),
                    data: None,
                    metadata: JsonMap::new(),
                });
            }
        }
        self.edges.push(GraphEdge {
            source: source.to_owned(),
            target: target.to_owned(),
            data,
            conditional,
        });
    }

    fn remove_node(&mut self, id: &str) {
        self.nodes.retain(|n| n.id != id);
        self.edges.retain(|e| e.source != id && e.target != id);
    }

    fn distinct_edges(&self, keep: impl Fn(&GraphEdge) -> bool) -> usize {
        let mut seen: Vec<&GraphEdge> = Vec::new();
        for edge in self.edges.iter().filter(|e| keep(e)) {
            if !seen.contains(&edge) {
                seen.push(edge);
            }
        }
        seen.len()
    }

    /// Drops the first node when one remains after it and it has a single
    /// outgoing edge.
    fn trim_first_node(&mut self) {
        let Some(first) = self.first_node().map(|n| n.id.clone()) else {
            return;
        };
        if self.first_node_excluding(&[&first]).is_some()
            && self.distinct_edges(|e| e.source == first) == 1
        {
            self.remove_node(&first);
        }
    }

    /// Drops the last node when one remains before it and it has a single
    /// incoming edge.
    fn trim_last_node(&mut self) {
        let Some(last) = self.last_node().map(|n| n.id.clone()) else {
            return;
        };
        if self.last_node_excluding(&[&last]).is_some()
            && self.distinct_edges(|e| e.target == last) == 1
        {
            self.remove_node(&last);
        }
    }

    /// Replaces node `name` by the nodes of `subgraph` (LangGraph's xray):
    /// ids get the prefix `name:`, and edges to and from the node now go to
    /// the subgraph's first node and leave from its last node.
    fn inline_subgraph(&mut self, name: &str, mut subgraph: DrawableGraph) {
        if subgraph.nodes.len() <= 1
            || self.node(name).is_none()
            || subgraph.first_node().is_none()
            || subgraph.last_node().is_none()
        {
            return;
        }
        subgraph.trim_first_node();
        subgraph.trim_last_node();
        let prefixed = |id: &str| format!("{name}:{id}");
        let first = subgraph.first_node().map(|n| prefixed(&n.id));
        let last = subgraph.last_node().map(|n| prefixed(&n.id));
        self.nodes.retain(|n| n.id != name);
        self.nodes
            .extend(subgraph.nodes.into_iter().map(|n| GraphNode {
                id: prefixed(&n.id),
                ..n
            }));
        self.edges
            .extend(subgraph.edges.into_iter().map(|e| GraphEdge {
                source: prefixed(&e.source),
                target: prefixed(&e.target),
                ..e
            }));
        for edge in &mut self.edges {
            if edge.source == name
                && let Some(last) = &last
            {
                edge.source.clone_from(last);
            }
            if edge.target == name
                && let Some(first) = &first
            {
                edge.target.clone_from(first);
            }
        }
    }

    /// The JSON form of the graph (LangGraph's `Graph.to_json()`):
    /// `{"nodes": [{"id", "type", "data": {"id", "name"}, "metadata"?}],
    /// "edges": [{"source", "target", "data"?, "conditional"?}]}`.
    ///
    /// A node's `data.id` names the class LangGraph would report for it
    /// (`RunnableCallable` for a function, `CompiledStateGraph` for a
    /// subgraph), so tools that read LangGraph's graph JSON read this one.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::{Value as Json, json};
        let nodes: Vec<Json> = self
            .nodes
            .iter()
            .map(|node| {
                let mut object = JsonMap::new();
                object.insert("id".to_owned(), Json::String(node.id.clone()));
                if let Some(data) = node.data {
                    let class = match data {
                        NodeData::Runnable => {
                            json!(["langgraph", "_internal", "_runnable", "RunnableCallable"])
                        }
                        NodeData::Graph => {
                            json!(["langgraph", "graph", "state", "CompiledStateGraph"])
                        }
                    };
                    object.insert("type".to_owned(), json!("runnable"));
                    object.insert("data".to_owned(), json!({"id": class, "name": node.id}));
                }
                if !node.metadata.is_empty() {
                    object.insert("metadata".to_owned(), Json::Object(node.metadata.clone()));
                }
                Json::Object(object)
            })
            .collect();
        let edges: Vec<Json> = self
            .edges
            .iter()
            .map(|edge| {
                let mut object = JsonMap::new();
                object.insert("source".to_owned(), Json::String(edge.source.clone()));
                object.insert("target".to_owned(), Json::String(edge.target.clone()));
                if let Some(data) = &edge.data {
                    object.insert("data".to_owned(), Json::String(data.clone()));
                }
                if edge.conditional {
                    object.insert("conditional".to_owned(), Json::Bool(true));
                }
                Json::Object(object)
            })
            .collect();
        json!({"nodes": nodes, "edges": edges})
    }

    /// The graph in Mermaid flowchart syntax, with LangGraph's default
    /// options (front matter, node classes, linear curves).
    ///
    /// ```
    /// use serde_json::{json, Value as Json};
    /// use stategraph_graph::{PathMap, Schema, StateGraph, END, START};
    /// use stategraph_pregel::NodeError;
    ///
    /// let mut graph = StateGraph::new(Schema::new().append("log"));
    /// graph.add_node("work", |_s: Json| async { Ok::<_, NodeError>(json!({"log": ["w"]})) })?;
    /// graph.add_edge(START, "work")?;
    /// graph.add_conditional_edges(
    ///     "work",
    ///     |_s: &Json| "done",
    ///     Some(PathMap::from([("again", "work"), ("done", END)])),
    /// )?;
    /// let mermaid = graph.compile()?.get_graph(false).draw_mermaid();
    /// assert_eq!(
    ///     mermaid,
    ///     "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\
    ///      \t__start__([<p>__start__</p>]):::first\n\
    ///      \twork(work)\n\
    ///      \t__end__([<p>__end__</p>]):::last\n\
    ///      \t__start__ --> work;\n\
    ///      \twork -. &nbsp;done&nbsp; .-> __end__;\n\
    ///      \twork -. &nbsp;again&nbsp; .-> work;\n\
    ///      \tclassDef default fill:#f2f0ff,line-height:1.2\n\
    ///      \tclassDef first fill-opacity:0\n\
    ///      \tclassDef last fill:#bfb6fc\n"
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn draw_mermaid(&self) -> String {
        self.draw_mermaid_with(&MermaidOptions::default())
    }

    /// The graph in Mermaid flowchart syntax, with options.
    ///
    /// Nodes of expanded subgraphs are drawn inside `subgraph` blocks. Where
    /// two expanded subgraphs share a name (the same graph reused under two
    /// nodes), LangGraph raises an error; this draws both blocks, which
    /// Mermaid merges.
    pub fn draw_mermaid_with(&self, options: &MermaidOptions) -> String {
        let first = self.first_node().map(|n| n.id.as_str());
        let last = self.last_node().map(|n| n.id.as_str());
        MermaidWriter {
            graph: self,
            options,
            first,
            last,
            out: String::new(),
            seen_subgraphs: BTreeSet::new(),
        }
        .write()
    }

    /// The graph as ASCII art: a box per node, in layers from `__start__`
    /// down to `__end__`, with `*` lines for edges and `.` lines for
    /// conditional edges.
    ///
    /// Like LangGraph's, the drawing shows only the part of the graph
    /// connected to `__start__`. LangGraph lays the graph out with grandalf;
    /// this uses its own layered layout, so the boxes and edges are the same
    /// but the exact placement differs. The output is deterministic.
    pub fn draw_ascii(&self) -> String {
        ascii::draw(self)
    }
}

/// The only item, if there is exactly one.
fn single<T>(mut items: impl Iterator<Item = T>) -> Option<T> {
    let first = items.next()?;
    items.next().is_none().then_some(first)
}

// ---------------------------------------------------------------------------
// Mermaid.
// ---------------------------------------------------------------------------

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

struct MermaidWriter<'a> {
    graph: &'a DrawableGraph,
    options: &'a MermaidOptions,
    first: Option<&'a str>,
    last: Option<&'a str>,
    out: String,
    seen_subgraphs: BTreeSet<String>,
}

impl<'a> MermaidWriter<'a> {
    fn write(mut self) -> String {
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

// ---------------------------------------------------------------------------
// ASCII.
// ---------------------------------------------------------------------------

mod ascii {
    //! A small layered (Sugiyama-style) layout drawn on a character canvas.

    use super::{DrawableGraph, VecDeque};

    /// Rows of a box: border, label, border.
    const BOX_HEIGHT: usize = 3;
    /// Rows between two layers of boxes.
    const LAYER_GAP: usize = 3;
    /// Ordering sweeps (each down then up).
    const ORDER_SWEEPS: usize = 12;
    /// Coordinate relaxation sweeps.
    const PLACE_SWEEPS: usize = 16;

    #[derive(Clone, Copy, PartialEq)]
    enum Item {
        Vertex(usize),
        /// The `k`-th bend point of layout edge `e`.
        Dummy(usize, usize),
    }

    /// An edge of the layout, always pointing down.
    struct LayoutEdge {
        upper: usize,
        lower: usize,
        conditional: bool,
    }

    pub(super) fn draw(graph: &DrawableGraph) -> String {
        let nodes = graph.nodes();
        if nodes.is_empty() {
            return String::new();
        }
        let index = |id: &str| nodes.iter().position(|n| n.id == id);
        let all_edges: Vec<(usize, usize, bool)> = graph
            .edges()
            .iter()
            .filter_map(|e| Some((index(&e.source)?, index(&e.target)?, e.conditional)))
            .collect();
        let keep = component(nodes.len(), &all_edges);
        let vertices: Vec<usize> = (0..nodes.len()).filter(|v| keep[*v]).collect();
        let local = |v: usize| vertices.iter().position(|x| *x == v);
        let edges: Vec<(usize, usize, bool)> = all_edges
            .iter()
            .filter_map(|(s, t, c)| Some((local(*s)?, local(*t)?, *c)))
            .filter(|(s, t, _)| s != t)
            .collect();
        let labels: Vec<String> = vertices
            .iter()
            .map(|v| format!(" {} ", nodes[*v].name))
            .collect();
        let widths: Vec<usize> = labels.iter().map(|l| l.chars().count() + 2).collect();

        let layout_edges = break_cycles(vertices.len(), &edges);
        let ranks = rank(vertices.len(), &layout_edges);
        let (layers, bends) = build_layers(&ranks, &layout_edges);
        let layers = order(layers, &layout_edges, &bends);
        let spacing = widths.iter().copied().min().unwrap_or(1);
        let item_width = |item: &Item| match item {
            Item::Vertex(v) => widths[*v],
            Item::Dummy(..) => 1,
        };
        let centers = place(&layers, &layout_edges, &bends, &item_width, spacing);

        // Integer columns: a box's left border, a bend point's column.
        let mut min_left = f64::INFINITY;
        for (layer, xs) in layers.iter().zip(&centers) {
            for (item, x) in layer.iter().zip(xs) {
                min_left = min_left.min(x - item_width(item) as f64 / 2.0);
            }
        }
        let mut vertex_pos = vec![(0_usize, 0_usize); vertices.len()];
        let mut bend_pos: Vec<Vec<(usize, usize)>> =
            bends.iter().map(|b| vec![(0, 0); b.len()]).collect();
        let mut cols = 1;
        for (r, (layer, xs)) in layers.iter().zip(&centers).enumerate() {
            let top = r * (BOX_HEIGHT + LAYER_GAP);
            for (item, x) in layer.iter().zip(xs) {
                let width = item_width(item);
                let left = (x - width as f64 / 2.0 - min_left).round().max(0.0) as usize;
                cols = cols.max(left + width);
                match item {
                    Item::Vertex(v) => vertex_pos[*v] = (left, top),
                    Item::Dummy(e, k) => bend_pos[*e][*k] = (left, top),
                }
            }
        }
        let lines = layers.len() * (BOX_HEIGHT + LAYER_GAP) - LAYER_GAP;
        let mut canvas = Canvas::new(cols, lines);
        // Edges first, so that boxes cover their ends.
        for (e, edge) in layout_edges.iter().enumerate() {
            let (ul, ut) = vertex_pos[edge.upper];
            let (ll, lt) = vertex_pos[edge.lower];
            let mut points = vec![(ul + widths[edge.upper] / 2, ut + BOX_HEIGHT - 1)];
            for (col, top) in &bend_pos[e] {
                points.push((*col, *top));
                points.push((*col, top + BOX_HEIGHT - 1));
            }
            points.push((ll + widths[edge.lower] / 2, lt));
            let c = if edge.conditional { '.' } else { '*' };
            for pair in points.windows(2) {
                canvas.line(pair[0], pair[1], c);
            }
        }
        for (v, (left, top)) in vertex_pos.iter().enumerate() {
            canvas.boxed(*left, *top, widths[v], &labels[v]);
        }
        canvas.render()
    }

    /// Which vertices are connected (in either direction) to the first one.
    fn component(n: usize, edges: &[(usize, usize, bool)]) -> Vec<bool> {
        let mut keep = vec![false; n];
        let mut queue = VecDeque::from([0]);
        keep[0] = true;
        while let Some(v) = queue.pop_front() {
            for (s, t, _) in edges {
                for (a, b) in [(*s, *t), (*t, *s)] {
                    if a == v && !keep[b] {
                        keep[b] = true;
                        queue.push_back(b);
                    }
                }
            }
        }
        keep
    }

    /// Turns edges that close a cycle upside down (depth-first from the
    /// vertices nothing leads to, in order), so every layout edge points down.
    fn break_cycles(n: usize, edges: &[(usize, usize, bool)]) -> Vec<LayoutEdge> {
        let has_in: Vec<bool> = (0..n).map(|v| edges.iter().any(|e| e.1 == v)).collect();
        let starts: Vec<usize> = (0..n)
            .filter(|v| !has_in[*v])
            .chain((0..n).filter(|v| has_in[*v]))
            .collect();
        // 0 = unvisited, 1 = on the stack, 2 = done.
        let mut state = vec![0_u8; n];
        let mut reversed = vec![false; edges.len()];
        for start in starts {
            if state[start] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
            state[start] = 1;
            while let Some(&mut (v, ref mut next)) = stack.last_mut() {
                match edges.iter().enumerate().skip(*next).find(|(_, e)| e.0 == v) {
                    Some((i, e)) => {
                        *next = i + 1;
                        match state[e.1] {
                            0 => {
                                state[e.1] = 1;
                                stack.push((e.1, 0));
                            }
                            1 => reversed[i] = true,
                            _ => {}
                        }
                    }
                    None => {
                        state[v] = 2;
                        stack.pop();
                    }
                }
            }
        }
        edges
            .iter()
            .zip(reversed)
            .map(|(&(s, t, conditional), rev)| LayoutEdge {
                upper: if rev { t } else { s },
                lower: if rev { s } else { t },
                conditional,
            })
            .collect()
    }

    /// Longest-path layers; a vertex nothing leads to sits just above its
    /// highest successor.
    fn rank(n: usize, edges: &[LayoutEdge]) -> Vec<usize> {
        let mut indegree: Vec<usize> = (0..n)
            .map(|v| edges.iter().filter(|e| e.lower == v).count())
            .collect();
        let mut ranks = vec![0_usize; n];
        let mut ready: VecDeque<usize> = (0..n).filter(|v| indegree[*v] == 0).collect();
        let mut topo = Vec::with_capacity(n);
        while let Some(v) = ready.pop_front() {
            topo.push(v);
            for e in edges.iter().filter(|e| e.upper == v) {
                ranks[e.lower] = ranks[e.lower].max(ranks[v] + 1);
                indegree[e.lower] -= 1;
                if indegree[e.lower] == 0 {
                    ready.push_back(e.lower);
                }
            }
        }
        for v in topo.into_iter().rev() {
            let is_source = !edges.iter().any(|e| e.lower == v);
            let lowest = edges
                .iter()
                .filter(|e| e.upper == v)
                .map(|e| ranks[e.lower])
                .min();
            if let (true, Some(lowest)) = (is_source && v != 0, lowest) {
                ranks[v] = ranks[v].max(lowest.saturating_sub(1));
            }
        }
        ranks
    }

    /// Layers of vertices, with a bend point on every layer a long edge crosses.
    fn build_layers(ranks: &[usize], edges: &[LayoutEdge]) -> (Vec<Vec<Item>>, Vec<Vec<usize>>) {
        let depth = ranks.iter().copied().max().unwrap_or(0) + 1;
        let mut layers: Vec<Vec<Item>> = vec![Vec::new(); depth];
        // Vertices in breadth-first order from the top, for a stable start.
        let mut seen = vec![false; ranks.len()];
        let mut queue: VecDeque<usize> = (0..ranks.len()).filter(|v| ranks[*v] == 0).collect();
        for v in &queue {
            seen[*v] = true;
        }
        let mut visit = Vec::new();
        while let Some(v) = queue.pop_front() {
            visit.push(v);
            for e in edges.iter().filter(|e| e.upper == v) {
                if !seen[e.lower] {
                    seen[e.lower] = true;
                    queue.push_back(e.lower);
                }
            }
        }
        visit.extend((0..ranks.len()).filter(|v| !seen[*v]));
        for v in visit {
            layers[ranks[v]].push(Item::Vertex(v));
        }
        let mut bends = Vec::with_capacity(edges.len());
        for (i, e) in edges.iter().enumerate() {
            let layers_crossed: Vec<usize> = (ranks[e.upper] + 1..ranks[e.lower]).collect();
            for (k, r) in layers_crossed.iter().enumerate() {
                layers[*r].push(Item::Dummy(i, k));
            }
            bends.push(layers_crossed);
        }
        (layers, bends)
    }

    /// The item one layer up (`up`) or down joined to `item`.
    fn neighbours(item: Item, up: bool, edges: &[LayoutEdge], bends: &[Vec<usize>]) -> Vec<Item> {
        let segment_end = |e: usize, k: Option<usize>, towards_upper: bool| -> Item {
            // `k` is the bend index we are at (None = at the edge's vertex).
            let count = bends[e].len();
            match (k, towards_upper) {
                (None, true) => match count {
                    0 => Item::Vertex(edges[e].upper),
                    _ => Item::Dummy(e, count - 1),
                },
                (None, false) => match count {
                    0 => Item::Vertex(edges[e].lower),
                    _ => Item::Dummy(e, 0),
                },
                (Some(0), true) => Item::Vertex(edges[e].upper),
                (Some(k), true) => Item::Dummy(e, k - 1),
                (Some(k), false) if k + 1 == count => Item::Vertex(edges[e].lower),
                (Some(k), false) => Item::Dummy(e, k + 1),
            }
        };
        match item {
            Item::Vertex(v) => edges
                .iter()
                .enumerate()
                .filter(|(_, e)| if up { e.lower == v } else { e.upper == v })
                .map(|(i, _)| segment_end(i, None, up))
                .collect(),
            Item::Dummy(e, k) => vec![segment_end(e, Some(k), up)],
        }
    }

    fn crossings(layers: &[Vec<Item>], edges: &[LayoutEdge], bends: &[Vec<usize>]) -> usize {
        let mut total = 0;
        for pair in layers.windows(2) {
            let mut segments = Vec::new();
            for (i, item) in pair[0].iter().enumerate() {
                for below in neighbours(*item, false, edges, bends) {
                    if let Some(j) = pair[1].iter().position(|x| *x == below) {
                        segments.push((i, j));
                    }
                }
            }
            for (a, s) in segments.iter().enumerate() {
                for t in &segments[a + 1..] {
                    if (s.0 < t.0 && s.1 > t.1) || (s.0 > t.0 && s.1 < t.1) {
                        total += 1;
                    }
                }
            }
        }
        total
    }

    /// Barycentre ordering within layers, keeping the ordering with the
    /// fewest crossings.
    fn order(
        mut layers: Vec<Vec<Item>>,
        edges: &[LayoutEdge],
        bends: &[Vec<usize>],
    ) -> Vec<Vec<Item>> {
        let mut best = layers.clone();
        let mut best_crossings = crossings(&layers, edges, bends);
        for _ in 0..ORDER_SWEEPS {
            for down in [true, false] {
                let range: Vec<usize> = if down {
                    (1..layers.len()).collect()
                } else {
                    (0..layers.len().saturating_sub(1)).rev().collect()
                };
                for r in range {
                    let reference = if down { r - 1 } else { r + 1 };
                    let mut keyed: Vec<(f64, usize, Item)> = layers[r]
                        .iter()
                        .enumerate()
                        .map(|(i, item)| {
                            let positions: Vec<f64> = neighbours(*item, down, edges, bends)
                                .iter()
                                .filter_map(|n| layers[reference].iter().position(|x| x == n))
                                .map(|p| p as f64)
                                .collect();
                            let key = if positions.is_empty() {
                                i as f64
                            } else {
                                positions.iter().sum::<f64>() / positions.len() as f64
                            };
                            (key, i, *item)
                        })
                        .collect();
                    keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                    layers[r] = keyed.into_iter().map(|(_, _, item)| item).collect();
                }
                let count = crossings(&layers, edges, bends);
                if count < best_crossings {
                    best_crossings = count;
                    best = layers.clone();
                }
            }
        }
        best
    }

    /// Horizontal centres: each item is pulled towards the mean position of
    /// its neighbours, keeping `spacing` columns between items of a layer.
    fn place(
        layers: &[Vec<Item>],
        edges: &[LayoutEdge],
        bends: &[Vec<usize>],
        width: &dyn Fn(&Item) -> usize,
        spacing: usize,
    ) -> Vec<Vec<f64>> {
        let gaps: Vec<Vec<f64>> = layers
            .iter()
            .map(|layer| {
                layer
                    .windows(2)
                    .map(|p| (width(&p[0]) + width(&p[1])) as f64 / 2.0 + spacing as f64)
                    .collect()
            })
            .collect();
        let mut xs: Vec<Vec<f64>> = gaps
            .iter()
            .map(|g| {
                let mut x = vec![0.0];
                for gap in g {
                    let last = x.last().copied().unwrap_or(0.0);
                    x.push(last + gap);
                }
                x
            })
            .collect();
        let position = |xs: &[Vec<f64>], r: usize, item: &Item| -> Option<f64> {
            layers[r].iter().position(|x| x == item).map(|i| xs[r][i])
        };
        let relax = |xs: &mut Vec<Vec<f64>>, r: usize, dirs: &[bool]| {
            let desired: Vec<f64> = layers[r]
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let mut pulls = Vec::new();
                    for &up in dirs {
                        let Some(reference) = (if up { r.checked_sub(1) } else { Some(r + 1) })
                        else {
                            continue;
                        };
                        if reference >= layers.len() {
                            continue;
                        }
                        for n in neighbours(*item, up, edges, bends) {
                            pulls.extend(position(xs, reference, &n));
                        }
                    }
                    if pulls.is_empty() {
                        xs[r][i]
                    } else {
                        pulls.iter().sum::<f64>() / pulls.len() as f64
                    }
                })
                .collect();
            xs[r] = isotonic(&desired, &gaps[r]);
        };
        for _ in 0..PLACE_SWEEPS {
            for r in 1..layers.len() {
                relax(&mut xs, r, &[true]);
            }
            for r in (0..layers.len().saturating_sub(1)).rev() {
                relax(&mut xs, r, &[false]);
            }
        }
        for r in 0..layers.len() {
            relax(&mut xs, r, &[true, false]);
        }
        xs
    }

    /// The positions closest (least squares) to `desired` that keep at least
    /// `gaps[i]` between items `i` and `i + 1` (pool-adjacent-violators).
    fn isotonic(desired: &[f64], gaps: &[f64]) -> Vec<f64> {
        let mut offsets = vec![0.0; desired.len()];
        for i in 1..desired.len() {
            offsets[i] = offsets[i - 1] + gaps[i - 1];
        }
        // Blocks of (sum, count) of the shifted targets.
        let mut blocks: Vec<(f64, usize)> = Vec::new();
        for (d, o) in desired.iter().zip(&offsets) {
            blocks.push((d - o, 1));
            while blocks.len() >= 2 {
                let (s2, c2) = blocks[blocks.len() - 1];
                let (s1, c1) = blocks[blocks.len() - 2];
                if s1 / c1 as f64 > s2 / c2 as f64 {
                    blocks.pop();
                    blocks.pop();
                    blocks.push((s1 + s2, c1 + c2));
                } else {
                    break;
                }
            }
        }
        let mut out = Vec::with_capacity(desired.len());
        for (sum, count) in blocks {
            out.extend(std::iter::repeat_n(sum / count as f64, count));
        }
        out.iter_mut().zip(&offsets).for_each(|(x, o)| *x += o);
        out
    }

    struct Canvas {
        cells: Vec<Vec<char>>,
    }

    impl Canvas {
        fn new(cols: usize, lines: usize) -> Self {
            Self {
                cells: vec![vec![' '; cols]; lines],
            }
        }

        fn point(&mut self, x: i64, y: i64, c: char) {
            let (Ok(x), Ok(y)) = (usize::try_from(x), usize::try_from(y)) else {
                return;
            };
            if let Some(cell) = self.cells.get_mut(y).and_then(|row| row.get_mut(x)) {
                *cell = c;
            }
        }

        fn line(&mut self, from: (usize, usize), to: (usize, usize), c: char) {
            let (x0, y0) = (from.0 as i64, from.1 as i64);
            let (x1, y1) = (to.0 as i64, to.1 as i64);
            let steps = (x1 - x0).abs().max((y1 - y0).abs());
            if steps == 0 {
                self.point(x0, y0, c);
                return;
            }
            for i in 0..=steps {
                let x = x0 as f64 + (x1 - x0) as f64 * i as f64 / steps as f64;
                let y = y0 as f64 + (y1 - y0) as f64 * i as f64 / steps as f64;
                self.point(x.round() as i64, y.round() as i64, c);
            }
        }

        fn boxed(&mut self, left: usize, top: usize, width: usize, label: &str) {
            let (l, t, w) = (left as i64, top as i64, width as i64);
            for x in l..l + w {
                let border = if x == l || x == l + w - 1 { '+' } else { '-' };
                self.point(x, t, border);
                self.point(x, t + 2, border);
            }
            self.point(l, t + 1, '|');
            self.point(l + w - 1, t + 1, '|');
            for (i, c) in label.chars().enumerate() {
                self.point(l + 1 + i as i64, t + 1, c);
            }
        }

        fn render(&self) -> String {
            let rows: Vec<String> = self.cells.iter().map(|r| r.iter().collect()).collect();
            rows.join("\n")
        }
    }
}

#[cfg(test)]
mod tests {
    //! Drawings of small graphs compared with what LangGraph 1.2.22 draws for
    //! the same graphs (`get_graph().nodes`, `.edges` and `draw_mermaid()`).

    use serde_json::{Value as Json, json};
    use stategraph_pregel::{NodeError, Send};

    use super::{CurveStyle, DrawableGraph, MermaidOptions};
    use crate::{CompiledStateGraph, END, NodeSpec, PathMap, START, Schema, StateGraph};

    /// One line per graph: a name, a tab, then LangGraph's
    /// `{"nodes": [[id, name, metadata]], "edges": [[source, target,
    /// conditional, data]], "mermaid": ...}` (or only the Mermaid text).
    const LANGGRAPH: &str = r#"no_path_map	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["a", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__(<p>__start__</p>)\n\ta(a)\n\tb(b)\n\t__end__(<p>__end__</p>)\n\t__start__ --> a;\n\ta --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
no_path_map_plus_edge	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["c", "c", null], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["a", "c", false, null], ["c", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__(<p>__start__</p>)\n\ta(a)\n\tb(b)\n\tc(c)\n\t__end__(<p>__end__</p>)\n\t__start__ --> a;\n\ta --> c;\n\tc --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
waiting	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["c", "c", null], ["d", "d", null], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["__start__", "b", false, null], ["a", "c", false, null], ["a", "d", false, null], ["b", "c", false, null], ["b", "d", false, null], ["c", "__end__", false, null], ["d", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ta(a)\n\tb(b)\n\tc(c)\n\td(d)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> a;\n\t__start__ --> b;\n\ta --> c;\n\ta --> d;\n\tb --> c;\n\tb --> d;\n\tc --> __end__;\n\td --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
defer	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["c", "c", null], ["fin", "fin", {"defer": true}], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["a", "b", false, null], ["a", "fin", false, null], ["b", "c", false, null], ["c", "fin", true, null], ["fin", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ta(a)\n\tb(b)\n\tc(c)\n\tfin(fin<hr/><small><em>defer = True</em></small>)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> a;\n\ta --> b;\n\ta --> fin;\n\tb --> c;\n\tc -.-> fin;\n\tfin --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
destinations	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["c", "c", null], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["a", "__end__", true, null], ["a", "b", true, null], ["b", "__end__", true, "stop"], ["b", "c", true, "go c"], ["c", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ta(a)\n\tb(b)\n\tc(c)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> a;\n\ta -.-> __end__;\n\ta -.-> b;\n\tb -. &nbsp;stop&nbsp; .-> __end__;\n\tb -. &nbsp;go c&nbsp; .-> c;\n\tc --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
send_only	{"nodes": [["__start__", "__start__", null], ["gen", "gen", null], ["rev", "rev", null], ["__end__", "__end__", null]], "edges": [["__start__", "__end__", true, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__(<p>__start__</p>)\n\tgen(gen)\n\trev(rev)\n\t__end__(<p>__end__</p>)\n\t__start__ -.-> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
cycle	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["a", "b", false, null], ["b", "a", false, null], ["b", "__end__", true, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ta(a)\n\tb(b)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> a;\n\ta --> b;\n\tb --> a;\n\tb -.-> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
labels	{"nodes": [["__start__", "__start__", null], ["my node", "my node", null], ["*x*", "*x*", null], ["a-b", "a-b", {"f": true, "k": "v<1>", "l": [1, "a"], "n": 3, "o": {"x": 1}, "z": null}], ["__end__", "__end__", null]], "edges": [["__start__", "my node", false, null], ["my node", "*x*", true, "one two three four five six seven eight nine ten eleven"], ["my node", "__end__", true, "short label"], ["my node", "a-b", true, "k"], ["*x*", "__end__", false, null], ["a-b", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\tmy\\20node(my node)\n\t\\2ax\\2a(<p>*x*</p>)\n\ta-b(a-b<hr/><small><em>f = True\nk = v#60;1#62;\nl = 1, a\nn = 3</em></small>)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> my\\20node;\n\tmy\\20node -. &nbsp;one two three four five six seven eight nine&nbsp<br>&nbspten eleven&nbsp; .-> \\2ax\\2a;\n\tmy\\20node -. &nbsp;short label&nbsp; .-> __end__;\n\tmy\\20node -. &nbsp;k&nbsp; .-> a-b;\n\t\\2ax\\2a --> __end__;\n\ta-b --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
labels_nostyle_mermaid	{"nodes": [["__start__", "__start__", null], ["my node", "my node", null], ["*x*", "*x*", null], ["a-b", "a-b", {"f": true, "k": "v<1>", "l": [1, "a"], "n": 3, "o": {"x": 1}, "z": null}], ["__end__", "__end__", null]], "edges": [["__start__", "my node", false, null], ["my node", "*x*", true, "one two three four five six seven eight nine ten eleven"], ["my node", "__end__", true, "short label"], ["my node", "a-b", true, "k"], ["*x*", "__end__", false, null], ["a-b", "__end__", false, null]], "mermaid": "graph TD;\n\t__start__ --> my\\20node;\n\tmy\\20node -. &nbsp;one two three four five six seven eight nine&nbsp<br>&nbspten eleven&nbsp; .-> \\2ax\\2a;\n\tmy\\20node -. &nbsp;short label&nbsp; .-> __end__;\n\tmy\\20node -. &nbsp;k&nbsp; .-> a-b;\n\t\\2ax\\2a --> __end__;\n\ta-b --> __end__;\n"}
labels_wrap3	"---\nconfig:\n  flowchart:\n    curve: basis\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\tmy\\20node(my node)\n\t\\2ax\\2a(<p>*x*</p>)\n\ta-b(a-b<hr/><small><em>f = True\nk = v#60;1#62;\nl = 1, a\nn = 3</em></small>)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> my\\20node;\n\tmy\\20node -. &nbsp;one two three&nbsp<br>&nbspfour five six&nbsp<br>&nbspseven eight nine&nbsp<br>&nbspten eleven&nbsp; .-> \\2ax\\2a;\n\tmy\\20node -. &nbsp;short label&nbsp; .-> __end__;\n\tmy\\20node -. &nbsp;k&nbsp; .-> a-b;\n\t\\2ax\\2a --> __end__;\n\ta-b --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"
cond_entry_selfloop	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["__end__", "__end__", null]], "edges": [["__start__", "a", true, null], ["__start__", "b", true, null], ["a", "__end__", true, "done"], ["a", "a", true, "again"], ["b", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ta(a)\n\tb(b)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ -.-> a;\n\t__start__ -.-> b;\n\ta -. &nbsp;done&nbsp; .-> __end__;\n\tb --> __end__;\n\ta -. &nbsp;again&nbsp; .-> a;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
nested_x0	{"nodes": [["__start__", "__start__", null], ["top", "top", null], ["outer", "outer", null], ["__end__", "__end__", null]], "edges": [["__start__", "top", false, null], ["top", "outer", false, null], ["outer", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ttop(top)\n\touter(outer)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> top;\n\ttop --> outer;\n\touter --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
nested_x1	{"nodes": [["__start__", "__start__", null], ["top", "top", null], ["__end__", "__end__", null], ["outer:mid1", "mid1", null], ["outer:inner", "inner", null]], "edges": [["__start__", "top", false, null], ["top", "outer:mid1", false, null], ["outer:inner", "__end__", false, null], ["outer:mid1", "outer:inner", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ttop(top)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> top;\n\ttop --> outer\\3amid1;\n\touter\\3ainner --> __end__;\n\tsubgraph outer\n\touter\\3amid1(mid1)\n\touter\\3ainner(inner)\n\touter\\3amid1 --> outer\\3ainner;\n\tend\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
nested_xtrue	{"nodes": [["__start__", "__start__", null], ["top", "top", null], ["__end__", "__end__", null], ["outer:mid1", "mid1", null], ["outer:inner:deep1", "deep1", null], ["outer:inner:deep2", "deep2", null]], "edges": [["__start__", "top", false, null], ["top", "outer:mid1", false, null], ["outer:inner:deep2", "__end__", false, null], ["outer:mid1", "outer:inner:deep1", false, null], ["outer:inner:deep1", "outer:inner:deep2", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ttop(top)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> top;\n\ttop --> outer\\3amid1;\n\touter\\3ainner\\3adeep2 --> __end__;\n\tsubgraph outer\n\touter\\3amid1(mid1)\n\touter\\3amid1 --> outer\\3ainner\\3adeep1;\n\tsubgraph inner\n\touter\\3ainner\\3adeep1(deep1)\n\touter\\3ainner\\3adeep2(deep2)\n\touter\\3ainner\\3adeep1 --> outer\\3ainner\\3adeep2;\n\tend\n\tend\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
sub_multi_first	{"nodes": [["__start__", "__start__", null], ["__end__", "__end__", null], ["s:__start__", "__start__", null], ["s:p", "p", null], ["s:q", "q", null], ["s:__end__", "__end__", null]], "edges": [["__start__", "s:__start__", false, null], ["s:__end__", "__end__", false, null], ["s:__start__", "s:p", true, null], ["s:__start__", "s:q", true, null], ["s:p", "s:__end__", false, null], ["s:q", "s:__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> s\\3a__start__;\n\ts\\3a__end__ --> __end__;\n\tsubgraph s\n\ts\\3a__start__(<p>__start__</p>)\n\ts\\3ap(p)\n\ts\\3aq(q)\n\ts\\3a__end__(<p>__end__</p>)\n\ts\\3a__start__ -.-> s\\3ap;\n\ts\\3a__start__ -.-> s\\3aq;\n\ts\\3ap --> s\\3a__end__;\n\ts\\3aq --> s\\3a__end__;\n\tend\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
two_termini	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["__start__", "b", false, null], ["a", "__end__", false, null], ["b", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ta(a)\n\tb(b)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> a;\n\t__start__ --> b;\n\ta --> __end__;\n\tb --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
case09	{"nodes": [["__start__", "__start__", null], ["sub", "sub", null], ["x", "x", null], ["y", "y", null], ["__end__", "__end__", null]], "edges": [["__start__", "sub", false, null], ["sub", "x", true, null], ["sub", "y", true, null], ["x", "__end__", false, null], ["y", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\tsub(sub)\n\tx(x)\n\ty(y)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> sub;\n\tsub -.-> x;\n\tsub -.-> y;\n\tx --> __end__;\n\ty --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
end_edge_dropped	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["c", "c", null], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["a", "b", false, null], ["b", "c", false, null], ["c", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ta(a)\n\tb(b)\n\tc(c)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> a;\n\ta --> b;\n\tb --> c;\n\tc --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}
defer_waiting	{"nodes": [["__start__", "__start__", null], ["a", "a", null], ["b", "b", null], ["c", "c", null], ["j", "j", {"defer": true}], ["__end__", "__end__", null]], "edges": [["__start__", "a", false, null], ["__start__", "b", false, null], ["a", "j", false, null], ["b", "c", false, null], ["c", "j", false, null], ["j", "__end__", false, null]], "mermaid": "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n\t__start__([<p>__start__</p>]):::first\n\ta(a)\n\tb(b)\n\tc(c)\n\tj(j<hr/><small><em>defer = True</em></small>)\n\t__end__([<p>__end__</p>]):::last\n\t__start__ --> a;\n\t__start__ --> b;\n\ta --> j;\n\tb --> c;\n\tc --> j;\n\tj --> __end__;\n\tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\tclassDef last fill:#bfb6fc\n"}"#;

    fn langgraph(name: &str) -> Json {
        let line = LANGGRAPH
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name}\t")))
            .unwrap();
        serde_json::from_str(line).unwrap()
    }

    fn check(name: &str, graph: &DrawableGraph) {
        let nodes: Vec<Json> = graph
            .nodes()
            .iter()
            .map(|n| {
                let metadata = if n.metadata.is_empty() {
                    Json::Null
                } else {
                    Json::Object(n.metadata.clone())
                };
                json!([n.id, n.name, metadata])
            })
            .collect();
        let edges: Vec<Json> = graph
            .edges()
            .iter()
            .map(|e| json!([e.source, e.target, e.conditional, e.data]))
            .collect();
        let expected = langgraph(name);
        assert_eq!(json!(nodes), expected["nodes"], "{name}: nodes");
        assert_eq!(json!(edges), expected["edges"], "{name}: edges");
        assert_eq!(
            graph.draw_mermaid(),
            expected["mermaid"].as_str().unwrap(),
            "{name}: mermaid"
        );
    }

    async fn nothing(_s: Json) -> Result<Json, NodeError> {
        Ok(json!({}))
    }

    fn graph(nodes: &[&str]) -> StateGraph {
        let mut g = StateGraph::new(Schema::new().append("log"));
        for name in nodes {
            g.add_node(name, nothing).unwrap();
        }
        g
    }

    fn compile(g: &StateGraph) -> CompiledStateGraph {
        g.compile().unwrap()
    }

    #[test]
    fn branch_without_path_map_draws_no_edges() {
        let mut g = graph(&["a", "b"]);
        g.add_edge(START, "a").unwrap();
        g.add_conditional_edges("a", |_s: &Json| "b", None).unwrap();
        check("no_path_map", &compile(&g).get_graph(false));

        let mut g = graph(&["a", "b", "c"]);
        g.add_edge(START, "a").unwrap();
        g.add_conditional_edges("a", |_s: &Json| "b", None).unwrap();
        g.add_edge("a", "c").unwrap();
        g.add_edge("b", END).unwrap();
        check("no_path_map_plus_edge", &compile(&g).get_graph(false));
    }

    #[test]
    fn a_compiled_graph_keeps_its_edges_when_the_builder_changes() {
        let mut g = graph(&["a", "b", "c"]);
        g.add_edge(START, "a").unwrap();
        g.add_edge("a", "b").unwrap();
        g.add_waiting_edge(["a", "b"], "c").unwrap();
        let first = compile(&g);
        let before = first.get_graph(false).draw_mermaid();
        // Edges are shared with the compiled graph until the builder
        // changes them; the compiled graph must not see the change.
        g.add_edge("b", "c").unwrap();
        g.add_waiting_edge(["b", "c"], END).unwrap();
        g.add_node("d", nothing).unwrap();
        g.add_edge("c", "d").unwrap();
        assert_eq!(first.get_graph(false).draw_mermaid(), before);
        let second = compile(&g).get_graph(false).draw_mermaid();
        assert_ne!(second, before);
        assert!(second.contains("c --> d"), "{second}");
        assert!(!before.contains("d(d)"), "{before}");
    }

    #[test]
    fn waiting_edges_and_plain_edges() {
        let mut g = graph(&["a", "b", "c", "d"]);
        g.add_edge(START, "a").unwrap();
        g.add_edge(START, "b").unwrap();
        g.add_waiting_edge(["a", "b"], "c").unwrap();
        g.add_edge("a", "d").unwrap();
        g.add_edge("b", "d").unwrap();
        check("waiting", &compile(&g).get_graph(false));
    }

    #[test]
    fn deferred_nodes() {
        let mut g = graph(&["a", "b", "c"]);
        g.add_node_spec("fin", NodeSpec::new(nothing).defer())
            .unwrap();
        g.add_edge(START, "a").unwrap();
        g.add_edge("a", "b").unwrap();
        g.add_edge("b", "c").unwrap();
        g.add_edge("a", "fin").unwrap();
        g.add_edge("fin", END).unwrap();
        check("defer", &compile(&g).get_graph(false));

        let mut g = graph(&["a", "b", "c"]);
        g.add_node_spec("j", NodeSpec::new(nothing).defer())
            .unwrap();
        g.add_edge(START, "a").unwrap();
        g.add_edge(START, "b").unwrap();
        g.add_edge("b", "c").unwrap();
        g.add_waiting_edge(["a", "c"], "j").unwrap();
        check("defer_waiting", &compile(&g).get_graph(false));
    }

    #[test]
    fn command_destinations() {
        let mut g = StateGraph::new(Schema::new().append("log"));
        g.add_node_spec("a", NodeSpec::new(nothing).destinations(["b", END]))
            .unwrap();
        g.add_node_spec(
            "b",
            NodeSpec::new(nothing).labeled_destinations([("c", "go c"), (END, "stop")]),
        )
        .unwrap();
        g.add_node("c", nothing).unwrap();
        g.add_edge(START, "a").unwrap();
        check("destinations", &compile(&g).get_graph(false));
    }

    #[test]
    fn case_09_subgraph_with_destinations() {
        let mut child = graph(&["child_a"]);
        child.add_edge(START, "child_a").unwrap();
        let mut g = StateGraph::new(Schema::new().append("log"));
        g.add_node_spec(
            "sub",
            NodeSpec::new(compile(&child)).destinations(["x", "y"]),
        )
        .unwrap();
        g.add_node("x", nothing).unwrap();
        g.add_node("y", nothing).unwrap();
        g.add_edge(START, "sub").unwrap();
        g.add_edge("x", END).unwrap();
        g.add_edge("y", END).unwrap();
        check("case09", &compile(&g).get_graph(false));
    }

    #[test]
    fn send_only_router() {
        let mut g = graph(&["gen", "rev"]);
        g.add_conditional_edges(START, |_s: &Json| vec![Send::new("gen", json!({}))], None)
            .unwrap();
        g.add_edge("gen", "rev").unwrap();
        g.add_edge("rev", END).unwrap();
        check("send_only", &compile(&g).get_graph(false));
    }

    #[test]
    fn cycles_and_self_loops() {
        let mut g = graph(&["a", "b"]);
        g.add_edge(START, "a").unwrap();
        g.add_edge("a", "b").unwrap();
        g.add_edge("b", "a").unwrap();
        check("cycle", &compile(&g).get_graph(false));

        let mut g = graph(&["a", "b"]);
        g.add_conditional_edges(START, |_s: &Json| "a", Some(PathMap::from(["a", "b"])))
            .unwrap();
        g.add_conditional_edges(
            "a",
            |_s: &Json| "again",
            Some(PathMap::from([("again", "a"), ("done", END)])),
        )
        .unwrap();
        g.add_edge("b", END).unwrap();
        check("cond_entry_selfloop", &compile(&g).get_graph(false));
    }

    #[test]
    fn end_edges_and_termini() {
        let mut g = graph(&["a", "b"]);
        g.add_edge(START, "a").unwrap();
        g.add_edge(START, "b").unwrap();
        check("two_termini", &compile(&g).get_graph(false));

        // LangGraph draws `a -> __end__` only when `a` leads nowhere else.
        let mut g = graph(&["a", "b", "c"]);
        g.add_edge(START, "a").unwrap();
        g.add_edge("a", "b").unwrap();
        g.add_edge("a", END).unwrap();
        g.add_edge("b", "c").unwrap();
        check("end_edge_dropped", &compile(&g).get_graph(false));
    }

    fn labels_graph() -> CompiledStateGraph {
        let mut g = graph(&["my node", "*x*"]);
        let metadata =
            json!({"f": true, "k": "v<1>", "l": [1, "a"], "n": 3, "o": {"x": 1}, "z": null});
        let Json::Object(metadata) = metadata else {
            unreachable!()
        };
        g.add_node_spec("a-b", NodeSpec::new(nothing).metadata(metadata))
            .unwrap();
        g.add_edge(START, "my node").unwrap();
        g.add_conditional_edges(
            "my node",
            |_s: &Json| "k",
            Some(PathMap::from([
                (
                    "one two three four five six seven eight nine ten eleven",
                    "*x*",
                ),
                ("k", "a-b"),
                ("short label", END),
            ])),
        )
        .unwrap();
        g.add_edge("*x*", END).unwrap();
        g.add_edge("a-b", END).unwrap();
        compile(&g)
    }

    #[test]
    fn labels_ids_metadata_and_options() {
        let drawn = labels_graph().get_graph(false);
        check("labels", &drawn);
        let plain = MermaidOptions {
            with_styles: false,
            ..MermaidOptions::default()
        };
        assert_eq!(
            drawn.draw_mermaid_with(&plain),
            langgraph("labels_nostyle_mermaid")["mermaid"]
        );
        let wrapped = MermaidOptions {
            wrap_label_n_words: 3,
            curve_style: CurveStyle::Basis,
            ..MermaidOptions::default()
        };
        assert_eq!(drawn.draw_mermaid_with(&wrapped), langgraph("labels_wrap3"));
    }

    #[test]
    fn nested_subgraphs_and_xray_depth() {
        let mut deep = graph(&["deep1", "deep2"]);
        deep.add_edge(START, "deep1").unwrap();
        deep.add_edge("deep1", "deep2").unwrap();
        let mut mid = graph(&["mid1"]);
        mid.add_node("inner", compile(&deep)).unwrap();
        mid.add_edge(START, "mid1").unwrap();
        mid.add_edge("mid1", "inner").unwrap();
        mid.add_edge("inner", END).unwrap();
        let mut top = graph(&["top"]);
        top.add_node("outer", compile(&mid)).unwrap();
        top.add_edge(START, "top").unwrap();
        top.add_edge("top", "outer").unwrap();
        let app = compile(&top);
        check("nested_x0", &app.get_graph(false));
        check("nested_x1", &app.get_graph_xray_depth(1));
        check("nested_xtrue", &app.get_graph(true));
    }

    #[test]
    fn subgraph_whose_start_cannot_be_trimmed() {
        let mut child = graph(&["p", "q"]);
        child
            .add_conditional_edges(START, |_s: &Json| "p", Some(PathMap::from(["p", "q"])))
            .unwrap();
        let mut g = StateGraph::new(Schema::new().append("log"));
        g.add_node("s", compile(&child)).unwrap();
        g.add_edge(START, "s").unwrap();
        check("sub_multi_first", &compile(&g).get_graph(true));
    }

    #[test]
    fn ascii_of_a_single_chain() {
        let mut g = graph(&["a"]);
        g.add_edge(START, "a").unwrap();
        let drawing = compile(&g).get_graph(false).draw_ascii();
        let expected = [
            "+-----------+",
            "| __start__ |",
            "+-----------+",
            "      *      ",
            "      *      ",
            "      *      ",
            "    +---+    ",
            "    | a |    ",
            "    +---+    ",
            "      *      ",
            "      *      ",
            "      *      ",
            " +---------+ ",
            " | __end__ | ",
            " +---------+ ",
        ];
        assert_eq!(drawing, expected.join("\n"));
    }
}
