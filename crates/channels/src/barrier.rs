//! `NamedBarrierValue` and `NamedBarrierValueAfterFinish`.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use stategraph_core::Value;

use crate::{Channel, ChannelError, Result, decode};

/// Becomes available once every name of a fixed set has been written, and
/// resets when consumed. The runtime uses it for waiting edges
/// (`[a, b] -> c` runs `c` once both `a` and `b` finished, in any steps).
/// Writing a name outside the set is an error.
#[derive(Clone, Debug)]
pub struct NamedBarrierValue {
    names: Arc<BTreeSet<String>>,
    seen: BTreeSet<String>,
}

/// Like [`NamedBarrierValue`], but also needs `finish` (the run would
/// otherwise end) before it becomes available. Used for waiting edges into
/// deferred nodes.
#[derive(Clone, Debug)]
pub struct NamedBarrierValueAfterFinish {
    names: Arc<BTreeSet<String>>,
    seen: BTreeSet<String>,
    finished: bool,
}

#[derive(Clone, Serialize, Deserialize)]
struct AfterFinishState(BTreeSet<String>, bool);

fn names_of<I: IntoIterator<Item = S>, S: Into<String>>(names: I) -> Arc<BTreeSet<String>> {
    Arc::new(names.into_iter().map(Into::into).collect())
}

/// Records the written names; all are checked before any is recorded.
fn record(
    names: &BTreeSet<String>,
    seen: &mut BTreeSet<String>,
    values: Vec<Value>,
) -> Result<bool> {
    let written = values
        .into_iter()
        .map(decode::<String>)
        .collect::<Result<Vec<_>>>()?;
    if let Some(unknown) = written.iter().find(|name| !names.contains(name.as_str())) {
        let set = names
            .iter()
            .map(|n| format!("'{n}'"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(ChannelError::invalid(format!(
            "Value {unknown} not in {{{set}}}"
        )));
    }
    let mut updated = false;
    for name in written {
        updated |= seen.insert((*name).clone());
    }
    Ok(updated)
}

impl NamedBarrierValue {
    /// A barrier waiting for every one of `names`.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(names: I) -> Self {
        Self {
            names: names_of(names),
            seen: BTreeSet::new(),
        }
    }

    fn complete(&self) -> bool {
        self.seen == *self.names
    }
}

impl Channel for NamedBarrierValue {
    fn get(&self) -> Option<Value> {
        self.complete().then(Value::null)
    }

    fn is_available(&self) -> bool {
        self.complete()
    }

    fn ignores_empty_updates(&self) -> bool {
        true
    }

    fn update(&mut self, values: Vec<Value>) -> Result<bool> {
        record(&self.names, &mut self.seen, values)
    }

    fn consume(&mut self) -> bool {
        if self.complete() {
            self.seen.clear();
            true
        } else {
            false
        }
    }

    fn checkpoint(&self) -> Option<Value> {
        Some(Value::new(self.seen.clone()))
    }

    fn restore(&mut self, checkpoint: Option<Value>) -> Result<()> {
        self.seen = match checkpoint {
            None => BTreeSet::new(),
            Some(value) => value.decode_owned::<BTreeSet<String>>()?,
        };
        Ok(())
    }

    fn boxed_clone(&self) -> Box<dyn Channel> {
        Box::new(self.clone())
    }
}

impl NamedBarrierValueAfterFinish {
    /// A barrier waiting for every one of `names`, then for `finish`.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(names: I) -> Self {
        Self {
            names: names_of(names),
            seen: BTreeSet::new(),
            finished: false,
        }
    }

    fn complete(&self) -> bool {
        self.seen == *self.names
    }
}

impl Channel for NamedBarrierValueAfterFinish {
    fn get(&self) -> Option<Value> {
        (self.finished && self.complete()).then(Value::null)
    }

    fn is_available(&self) -> bool {
        self.finished && self.complete()
    }

    fn ignores_empty_updates(&self) -> bool {
        true
    }

    fn update(&mut self, values: Vec<Value>) -> Result<bool> {
        record(&self.names, &mut self.seen, values)
    }

    fn consume(&mut self) -> bool {
        if self.finished && self.complete() {
            self.finished = false;
            self.seen.clear();
            true
        } else {
            false
        }
    }

    fn would_finish(&self) -> bool {
        !self.finished && self.complete()
    }

    fn finish(&mut self) -> bool {
        if !self.finished && self.complete() {
            self.finished = true;
            true
        } else {
            false
        }
    }

    fn checkpoint(&self) -> Option<Value> {
        Some(Value::new(AfterFinishState(
            self.seen.clone(),
            self.finished,
        )))
    }

    fn restore(&mut self, checkpoint: Option<Value>) -> Result<()> {
        (self.seen, self.finished) = match checkpoint {
            None => (BTreeSet::new(), false),
            Some(value) => {
                let state = value.decode_owned::<AfterFinishState>()?;
                (state.0, state.1)
            }
        };
        Ok(())
    }

    fn boxed_clone(&self) -> Box<dyn Channel> {
        Box::new(self.clone())
    }
}
