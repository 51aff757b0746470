//! The dry run that discovers the edges: the channels run without any node.

use std::collections::{BTreeMap, BTreeSet};

use super::structure::GraphStructure;
use crate::{END, START};

/// How many supersteps the dry run may take (LangGraph's `limit`).
const DRY_RUN_LIMIT: i64 = 250;

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
pub(super) struct FoundEdge {
    pub(super) source: String,
    pub(super) target: String,
    pub(super) conditional: bool,
    pub(super) label: Option<String>,
}

/// A write seen from its writer's side: the channel, and whether and how it
/// was declared by a conditional edge.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct TriggerEdge {
    channel: String,
    conditional: bool,
    label: Option<String>,
}

pub(super) struct Discovered {
    pub(super) edges: BTreeSet<FoundEdge>,
    /// The nodes that ran in the last superstep of the dry run.
    pub(super) last_step: Vec<String>,
}

type Write = (String, Option<String>);

pub(super) struct DryRun<'a> {
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
    pub(super) fn new(structure: &'a GraphStructure) -> Self {
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

    pub(super) fn run(mut self) -> Discovered {
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
