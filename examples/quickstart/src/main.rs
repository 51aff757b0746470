//! Quickstart: what stategraph can do today, before the graph runtime lands.
//!
//! Runs three "supersteps" of a joke-writing state by hand — the job the
//! Pregel runtime will take over — applying each step's writes to channels,
//! saving a checkpoint per step, then reading the history back newest first
//! and restoring the channels from the oldest checkpoint (time travel).

// An example program: it reports to the terminal.
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;

use futures::TryStreamExt;
use stategraph::checkpoint::ChannelVersion;
use stategraph::prelude::*;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let saver = InMemorySaver::new();
    let thread = CheckpointConfig::thread("quickstart");

    // The state: `subject` keeps the last value, `jokes` appends.
    let mut channels: BTreeMap<&str, Box<dyn Channel>> = BTreeMap::new();
    channels.insert("subject", Box::new(LastValue::<String>::new()));
    channels.insert(
        "jokes",
        Box::new(BinaryOperatorAggregate::new(reducers::append::<String>)),
    );
    let mut versions: BTreeMap<String, ChannelVersion> = BTreeMap::new();

    let steps: Vec<(&str, Vec<(&str, Value)>)> = vec![
        ("input", vec![("subject", Value::new("cats".to_string()))]),
        (
            "write_joke",
            vec![(
                "jokes",
                Value::new(vec!["Why did the cat sit on the computer?".to_string()]),
            )],
        ),
        (
            "write_joke",
            vec![
                (
                    "jokes",
                    Value::new(vec!["To keep an eye on the mouse.".to_string()]),
                ),
                ("subject", Value::new("dogs".to_string())),
            ],
        ),
    ];

    let mut parent = thread.clone();
    for (step, (node, writes)) in steps.into_iter().enumerate() {
        // Apply the step's writes together, then bump the versions of the channels that changed.
        let mut new_versions = BTreeMap::new();
        for (name, channel) in &mut channels {
            let mine: Vec<Value> = writes
                .iter()
                .filter(|(c, _)| c == name)
                .map(|(_, v)| v.clone())
                .collect();
            if channel.update(mine).map_err(|e| e.at_key(name))? {
                let version = saver.get_next_version(versions.get(*name));
                versions.insert((*name).to_owned(), version);
                new_versions.insert((*name).to_owned(), version);
            }
        }
        let mut checkpoint = Checkpoint::empty();
        for (name, channel) in &channels {
            if let (Some(value), Some(version)) = (channel.checkpoint(), versions.get(*name)) {
                checkpoint = checkpoint.with_channel(*name, value, *version);
            }
        }
        let source = if step == 0 {
            CheckpointSource::Input
        } else {
            CheckpointSource::Loop
        };
        let metadata =
            CheckpointMetadata::new(source, step as i64 - 1).with("node", serde_json::json!(node));
        parent = saver
            .put(&parent, checkpoint, metadata, new_versions)
            .await?;
        println!(
            "step {:>2} ({node}): saved checkpoint {}",
            step as i64 - 1,
            parent.checkpoint_id.as_ref().map_or("", |id| id.as_str())
        );
    }

    println!("\nhistory, newest first:");
    let history: Vec<CheckpointTuple> = saver
        .list(ListQuery::thread("quickstart"))
        .try_collect()
        .await?;
    for tuple in &history {
        let values: BTreeMap<_, _> = tuple
            .checkpoint
            .channel_values
            .iter()
            .map(|(k, v)| (k.clone(), v.to_json().unwrap_or_default()))
            .collect();
        println!(
            "  step {:>2}: {}",
            tuple.metadata.step.unwrap_or_default(),
            serde_json::to_string(&values)?
        );
    }

    let oldest = history
        .last()
        .ok_or_else(|| anyhow::anyhow!("no history"))?;
    let jokes = channels["jokes"]
        .from_checkpoint(oldest.checkpoint.channel_values.get("jokes").cloned())?;
    println!(
        "\nrestored from the first checkpoint: jokes = {}",
        jokes
            .get()
            .map(|v| v.to_json())
            .transpose()?
            .unwrap_or_default()
    );
    Ok(())
}
