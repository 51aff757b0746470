//! Task ids: LangGraph's checkpoint task ids (xxh3-128 of the checkpoint,
//! namespace, step, node and path) and the cheaper ids of runs without a
//! checkpointer.

use crate::shape::GraphShape;
use std::sync::Arc;

/// What a task id is computed from: the run, the step and the task path.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TaskIdSeed {
    pub(crate) run: u64,
    pub(crate) step: i64,
    // `None` for a pull task, the `Send` index for a push task.
    pub(crate) push: Option<usize>,
}

impl TaskIdSeed {
    /// A deterministic task id: xxh3-128 of the run, step, node and task
    /// path, laid out like a UUID.
    pub(crate) fn task_id(&self, node: &str) -> String {
        let mut bytes = Vec::with_capacity(64);
        bytes.extend_from_slice(&self.run.to_le_bytes());
        bytes.extend_from_slice(&self.step.to_le_bytes());
        bytes.extend_from_slice(node.as_bytes());
        match self.push {
            None => bytes.extend_from_slice(crate::names::PULL.as_bytes()),
            Some(idx) => {
                bytes.extend_from_slice(crate::names::PUSH.as_bytes());
                bytes.extend_from_slice(&idx.to_le_bytes());
            }
        }
        uuid_shaped(xxhash_rust::xxh3::xxh3_128(&bytes))
    }
}

/// The id a step's checkpoint would have in a run without a checkpointer
/// (which saves none): xxh3-128 of the run and the step, laid out like a
/// UUID. Task configs name it in their `checkpoint_map`.
pub(crate) fn step_checkpoint_id(run: u64, step: i64) -> String {
    let mut bytes = [0; 16];
    bytes[..8].copy_from_slice(&run.to_le_bytes());
    bytes[8..].copy_from_slice(&step.to_le_bytes());
    uuid_shaped(xxhash_rust::xxh3::xxh3_128(&bytes))
}

/// A 128-bit hash written like a UUID (8-4-4-4-12 hex digits), with one
/// allocation.
fn uuid_shaped<T: for<'a> From<&'a str>>(hash: u128) -> T {
    let mut text = [0; uuid::fmt::Hyphenated::LENGTH];
    T::from(
        uuid::Uuid::from_u128(hash)
            .hyphenated()
            .encode_lower(&mut text),
    )
}

/// LangGraph's `task_path_str` of a task (the key its pending writes are
/// ordered by), as its parts; [`TaskPathText::text`] writes it.
#[derive(Clone, Debug)]
pub(crate) enum TaskPathText {
    /// `~__pregel_pull, node`.
    Pull(Arc<str>),
    /// `~__pregel_push, {index:010}, 0000000000`.
    Push(usize),
    /// `~__interrupt__, {index:010}` (a state update).
    Update(usize),
}

impl TaskPathText {
    /// The text LangGraph writes.
    pub(crate) fn text(&self) -> String {
        let (kind, index, tail) = match self {
            Self::Pull(node) => return ["~", crate::names::PULL, ", ", node].concat(),
            Self::Push(index) => (crate::names::PUSH, *index, ", 0000000000"),
            Self::Update(index) => (crate::names::INTERRUPT, *index, ""),
        };
        let mut text = String::with_capacity(kind.len() + tail.len() + 24);
        text.push('~');
        text.push_str(kind);
        text.push_str(", ");
        // `{index:010}`.
        let (digits, at) = decimal_digits(index.sign_and_magnitude().1);
        for _ in (digits.len() - at)..10 {
            text.push('0');
        }
        text.extend(digits[at..].iter().map(|d| char::from(*d)));
        text.push_str(tail);
        text
    }
}

/// What distinguishes tasks of one node in one step.
pub(crate) enum TaskIdPath<'a> {
    /// Triggered by channels: the node's trigger channel names, sorted.
    Pull(&'a [Arc<str>]),
    /// Created by the `Send` at this index.
    Push(usize),
    /// A functional task: the calling task's path and the call's index.
    Call(&'a [&'a str]),
}

/// LangGraph's task id in a run with a checkpointer: xxh3-128 of the bytes
/// of the checkpoint the step started from, then (without separators) the
/// task's namespace (the node name at the root, `ns|node` in a subgraph run
/// whose checkpoint namespace is `ns`), the step, the node name,
/// the path kind and the triggers or `Send` index; written like a UUID.
/// A resumed run gives its tasks the ids they had, so saved writes find
/// their task again.
pub(crate) fn checkpoint_task_id(
    checkpoint: &[u8; 16],
    namespace: &str,
    step: i64,
    node: &str,
    path: TaskIdPath<'_>,
) -> Arc<str> {
    let mut bytes = HashInput::new();
    bytes.extend(checkpoint);
    bytes.extend(namespace.as_bytes());
    bytes.decimal(step);
    bytes.extend(node.as_bytes());
    match path {
        TaskIdPath::Pull(triggers) => {
            bytes.extend(crate::names::PULL.as_bytes());
            for trigger in triggers {
                bytes.extend(trigger.as_bytes());
            }
        }
        TaskIdPath::Push(index) => {
            bytes.extend(crate::names::PUSH.as_bytes());
            bytes.decimal(index);
        }
        TaskIdPath::Call(parts) => {
            bytes.extend(crate::names::PUSH.as_bytes());
            for part in parts {
                bytes.extend(part.as_bytes());
            }
        }
    }
    uuid_shaped(xxhash_rust::xxh3::xxh3_128(bytes.as_slice()))
}

/// The bytes a task id hashes: on the stack while they fit (they mostly
/// do), then on the heap.
struct HashInput {
    stack: [u8; 256],
    len: usize,
    // Empty until the bytes outgrow `stack`.
    heap: Vec<u8>,
}

impl HashInput {
    fn new() -> Self {
        Self {
            stack: [0; 256],
            len: 0,
            heap: Vec::new(),
        }
    }

    fn extend(&mut self, bytes: &[u8]) {
        if self.heap.is_empty() {
            if let Some(slot) = self.stack.get_mut(self.len..self.len + bytes.len()) {
                slot.copy_from_slice(bytes);
                self.len += bytes.len();
                return;
            }
            self.heap.extend_from_slice(&self.stack[..self.len]);
        }
        self.heap.extend_from_slice(bytes);
    }

    /// Appends `number` in decimal (as `to_string` writes it), without the
    /// formatting machinery.
    fn decimal(&mut self, number: impl Decimal) {
        let (negative, magnitude) = number.sign_and_magnitude();
        if negative {
            self.extend(b"-");
        }
        let (digits, at) = decimal_digits(magnitude);
        self.extend(&digits[at..]);
    }

    fn as_slice(&self) -> &[u8] {
        if self.heap.is_empty() {
            &self.stack[..self.len]
        } else {
            &self.heap
        }
    }
}

/// The decimal digits of `number`: `digits[at..]` of the returned pair.
pub(crate) fn decimal_digits(number: u64) -> ([u8; 20], usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = number;
    loop {
        at -= 1;
        // `rest % 10` is below 10: the cast keeps it whole.
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    (digits, at)
}

/// An integer written in decimal ([`decimal_digits`], `HashInput::decimal`).
pub(crate) trait Decimal {
    /// Whether it is negative, and its magnitude.
    fn sign_and_magnitude(self) -> (bool, u64);
}

impl Decimal for i64 {
    fn sign_and_magnitude(self) -> (bool, u64) {
        (self < 0, self.unsigned_abs())
    }
}

impl Decimal for usize {
    fn sign_and_magnitude(self) -> (bool, u64) {
        (false, u64::try_from(self).unwrap_or(u64::MAX))
    }
}

/// A task's id and namespace.
#[derive(Clone)]
pub(crate) struct TaskIdentity {
    pub(crate) task_id: Arc<str>,
    // `node:task_id` (after the run's own namespace, `|`-separated): the
    // namespace of the task's interrupts and of its subgraph's checkpoints.
    pub(crate) namespace: String,
}

/// The task path part of a task id's inputs.
#[derive(Clone)]
pub(crate) enum IdPath {
    /// A pull task: its trigger channels' names, sorted.
    Pull(Arc<[Arc<str>]>),
    /// A push (or update) task: its index.
    Push(usize),
}

/// What a task's id is computed from (see [`checkpoint_task_id`]).
#[derive(Clone)]
pub(crate) struct TaskIdInputs {
    /// The bytes of the checkpoint the task's step started from.
    pub(crate) checkpoint: [u8; 16],
    /// The checkpoint namespace of the task's run.
    pub(crate) run_namespace: Arc<str>,
    pub(crate) step: i64,
    pub(crate) shape: Arc<GraphShape>,
    pub(crate) node: crate::shape::NodeId,
    /// A pull task's sorted trigger names, else its `Send` (or update) index.
    pub(crate) path: IdPath,
}

impl TaskIdInputs {
    pub(crate) fn identity(&self) -> TaskIdentity {
        let name = self.shape.node_name(self.node);
        // `path` (the node within the run's namespace), then `:task_id`.
        let mut namespace = String::with_capacity(self.run_namespace.len() + name.len() + 38);
        if !self.run_namespace.is_empty() {
            namespace.push_str(&self.run_namespace);
            namespace.push('|');
        }
        namespace.push_str(name);
        let kind = match &self.path {
            IdPath::Pull(triggers) => TaskIdPath::Pull(triggers),
            IdPath::Push(index) => TaskIdPath::Push(*index),
        };
        let task_id = checkpoint_task_id(&self.checkpoint, &namespace, self.step, name, kind);
        namespace.push(':');
        namespace.push_str(&task_id);
        TaskIdentity { task_id, namespace }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_are_written_like_uuids() {
        for hash in [
            0_u128,
            1,
            u128::MAX,
            0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
        ] {
            let hex = format!("{hash:032x}");
            let expected = format!(
                "{}-{}-{}-{}-{}",
                &hex[..8],
                &hex[8..12],
                &hex[12..16],
                &hex[16..20],
                &hex[20..]
            );
            assert_eq!(uuid_shaped::<String>(hash), expected);
        }
    }

    #[test]
    fn decimals_are_written_as_to_string_writes_them() {
        let mut bytes = HashInput::new();
        bytes.decimal(-12_i64);
        bytes.decimal(7_usize);
        bytes.decimal(i64::MIN);
        bytes.decimal(0_usize);
        assert_eq!(bytes.as_slice(), format!("-127{}0", i64::MIN).as_bytes());
    }

    #[test]
    fn hash_input_moves_to_the_heap_when_the_stack_is_full() {
        let long: Vec<u8> = (0..=255u8).cycle().take(700).collect();
        for split in [0, 1, 255, 256, 257, 699] {
            let mut bytes = HashInput::new();
            bytes.extend(&long[..split]);
            bytes.extend(&long[split..]);
            assert_eq!(bytes.as_slice(), long.as_slice(), "split at {split}");
        }
        let mut bytes = HashInput::new();
        for chunk in long.chunks(7) {
            bytes.extend(chunk);
        }
        assert_eq!(bytes.as_slice(), long.as_slice());
    }
}
