//! A compiled graph's names: channel and node ids, their names, and the
//! channels a run reads its input from and its output to.

use stategraph_core::FxBuild;
use std::collections::HashMap;
use std::sync::Arc;
/// Index of a channel in a compiled graph.
pub type ChannelId = usize;
/// Index of a node in a compiled graph (nodes sorted by name).
pub type NodeId = usize;

/// Name-keyed maps built once per compile, hashed with [`FxBuild`].
pub(crate) type NameMap<K, V> = HashMap<K, V, FxBuild>;

/// Names and ids of a graph's channels and nodes.
#[derive(Clone, Debug, Default)]
pub struct GraphShape {
    pub(crate) channel_names: Vec<Arc<str>>,
    pub(crate) channel_index: NameMap<Arc<str>, ChannelId>,
    // Invariant: sorted by name, so node ids order like names.
    pub(crate) node_names: Vec<Arc<str>>,
    pub(crate) node_index: NameMap<Arc<str>, NodeId>,
    // Position in which each node (by id) was added to the builder.
    pub(crate) node_declared: Vec<usize>,
}

impl GraphShape {
    /// The id of a channel.
    pub fn channel_id(&self, name: &str) -> Option<ChannelId> {
        self.channel_index.get(name).copied()
    }

    /// The name of a channel.
    pub fn channel_name(&self, id: ChannelId) -> &str {
        &self.channel_names[id]
    }

    /// The shared name of a channel.
    pub fn channel_name_arc(&self, id: ChannelId) -> Arc<str> {
        self.channel_names[id].clone()
    }

    /// The number of channels.
    pub fn channel_count(&self) -> usize {
        self.channel_names.len()
    }

    /// The id of a node.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.node_index.get(name).copied()
    }

    /// The name of a node.
    pub fn node_name(&self, id: NodeId) -> &Arc<str> {
        &self.node_names[id]
    }

    /// Node names, sorted.
    pub fn node_names(&self) -> &[Arc<str>] {
        &self.node_names
    }

    /// The position in which a node was added to its builder: LangGraph
    /// lists the tasks planned from a stored checkpoint in this order.
    pub fn node_declared(&self, id: NodeId) -> usize {
        self.node_declared[id]
    }
}

/// Which channels the input is written to, or the output read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IoChannels {
    /// One channel: the value is written (or read) as is.
    One(ChannelId),
    /// Several channels: the value is a map keyed by channel name.
    Many(Vec<ChannelId>),
}

impl IoChannels {
    /// The channels, in order.
    pub(crate) fn ids(&self) -> &[ChannelId] {
        match self {
            Self::One(channel) => std::slice::from_ref(channel),
            Self::Many(channels) => channels,
        }
    }
}

/// Input or output channels by name.
#[derive(Clone, Debug)]
pub enum IoSpec {
    /// One channel.
    One(String),
    /// Several channels.
    Many(Vec<String>),
    /// Several channels, by the ids their declarations returned (for
    /// compilers that have them already).
    Ids(Vec<ChannelId>),
}

impl From<&str> for IoSpec {
    fn from(name: &str) -> Self {
        Self::One(name.to_owned())
    }
}

impl<const N: usize> From<[&str; N]> for IoSpec {
    fn from(names: [&str; N]) -> Self {
        Self::Many(names.iter().map(|n| (*n).to_owned()).collect())
    }
}

impl From<Vec<String>> for IoSpec {
    fn from(names: Vec<String>) -> Self {
        Self::Many(names)
    }
}

impl GraphShape {
    /// The channels `spec` names; `unknown` makes the error of a name
    /// that is not a channel (an id out of range is `InvalidGraph`).
    pub(crate) fn io_channels(
        &self,
        spec: &IoSpec,
        unknown: impl Fn(&str) -> crate::error::PregelError,
    ) -> crate::error::Result<IoChannels> {
        let id = |name: &str| self.channel_id(name).ok_or_else(|| unknown(name));
        Ok(match spec {
            IoSpec::One(name) => IoChannels::One(id(name)?),
            IoSpec::Many(names) => IoChannels::Many(
                names
                    .iter()
                    .map(|n| id(n))
                    .collect::<crate::error::Result<_>>()?,
            ),
            IoSpec::Ids(ids) => {
                if let Some(bad) = ids.iter().find(|c| **c >= self.channel_names.len()) {
                    return Err(crate::error::PregelError::InvalidGraph(format!(
                        "unknown channel id {bad}"
                    )));
                }
                IoChannels::Many(ids.clone())
            }
        })
    }
}
