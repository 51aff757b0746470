//! Interrupts: what a node raises to pause a run, and the error that carries them.

use serde::{Deserialize, Serialize};
use stategraph_core::Value;
use std::fmt;

/// A pause requested by a node through
/// [`TaskContext::interrupt`](crate::TaskContext::interrupt): the value shown
/// to whoever resumes the run, and a stable id to answer it by.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interrupt {
    /// What the node asked.
    pub value: Value,
    /// The interrupt's id: 32 hex digits, the same every time the task
    /// reaches this interrupt.
    pub id: String,
}

impl Interrupt {
    /// LangGraph's interrupt id: xxh3-128 of the task's namespace
    /// (`node:task_id`), with `|n` appended for the interrupt that follows
    /// `n` answered ones in the same task.
    pub(crate) fn id_for(task_namespace: &str, answered: usize) -> String {
        let hash = if answered == 0 {
            xxhash_rust::xxh3::xxh3_128(task_namespace.as_bytes())
        } else {
            xxhash_rust::xxh3::xxh3_128(format!("{task_namespace}|{answered}").as_bytes())
        };
        format!("{hash:032x}")
    }

    /// Whether `key` has the shape of an interrupt id (32 lowercase hex digits).
    pub(crate) fn is_id(key: &str) -> bool {
        key.len() == 32 && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    }
}

/// The error [`TaskContext::interrupt`](crate::TaskContext::interrupt) returns to pause the run: return it
/// from the node (with `?`) and the run stops after the current step, showing
/// the interrupt; resuming with `Command::resume` runs the node again from
/// the start, and this time `interrupt` returns the answer.
///
/// It converts into [`NodeError`](crate::NodeError) like any error; the runtime recognises it
/// there. An interrupt is never retried. A subgraph node returns the
/// interrupts of its subgraph's run, possibly several.
#[derive(Clone, Debug, PartialEq)]
pub struct Interrupted(pub Vec<crate::interrupt::Interrupt>);

impl Interrupted {
    pub(crate) fn one(interrupt: crate::interrupt::Interrupt) -> Self {
        Self(vec![interrupt])
    }
}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("interrupted")?;
        for interrupt in &self.0 {
            let shown = interrupt.value.to_json().map_or_else(
                |_| interrupt.value.type_name().to_owned(),
                |j| j.to_string(),
            );
            write!(f, " ({}): {shown}", interrupt.id)?;
        }
        Ok(())
    }
}

impl std::error::Error for Interrupted {}
