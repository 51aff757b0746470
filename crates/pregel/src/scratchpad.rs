//! A task's interrupt bookkeeping (LangGraph's scratchpad): raising an
//! interrupt, and answering it from recorded answers or a resume.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use stategraph_core::Value;

use crate::interrupt::Interrupted;
use crate::run_info::RunInfo;
use crate::task_id::{TaskIdInputs, TaskIdentity, TaskPathText};

/// A task's interrupt bookkeeping (LangGraph's scratchpad): its id, the
/// answers it has been given so far, and how many interrupts it has reached
/// in the current attempt.
pub(crate) struct Scratchpad {
    // The task's id and namespace, computed when first read: most tasks of
    // an exit-durability run never need them.
    identity: std::sync::OnceLock<TaskIdentity>,
    inputs: TaskIdInputs,
    // The checkpoint the task's step started from.
    pub(crate) checkpoint: Option<stategraph_core::CheckpointId>,
    // LangGraph's `task_path_str` of the task (written when asked).
    pub(crate) task_path: TaskPathText,
    answers: Mutex<Vec<Value>>,
    reached: std::sync::atomic::AtomicUsize,
    // Per interrupt scope (see `TaskContext::interrupt_scope`): its answers
    // in the order its interrupts were reached, and how many it reached.
    scoped: Mutex<BTreeMap<Arc<str>, ScopeAnswers>>,
    // Functional tasks called so far (`TaskContext::task`).
    pub(crate) calls: std::sync::atomic::AtomicUsize,
}

/// The interrupt answers of one scope of a task.
#[derive(Clone, Default)]
struct ScopeAnswers {
    answers: Vec<Value>,
    reached: usize,
}

impl Scratchpad {
    /// The scratchpad of the task whose id comes from `inputs`.
    pub(crate) fn new(
        inputs: TaskIdInputs,
        checkpoint: Option<stategraph_core::CheckpointId>,
        task_path: TaskPathText,
    ) -> Self {
        Self {
            identity: std::sync::OnceLock::new(),
            inputs,
            checkpoint,
            task_path,
            answers: Mutex::new(Vec::new()),
            reached: std::sync::atomic::AtomicUsize::new(0),
            scoped: Mutex::new(BTreeMap::new()),
            calls: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// The same task with these recorded answers (a resumed run): the
    /// task's own, and those of its interrupt scopes.
    pub(crate) fn with_answers(
        &self,
        answers: Vec<Value>,
        scoped: BTreeMap<String, Vec<Value>>,
    ) -> Self {
        let scoped = scoped
            .into_iter()
            .map(|(scope, answers)| {
                let answers = ScopeAnswers {
                    answers,
                    reached: 0,
                };
                (Arc::from(scope), answers)
            })
            .collect();
        Self {
            identity: std::sync::OnceLock::from(self.identity().clone()),
            inputs: self.inputs.clone(),
            checkpoint: self.checkpoint.clone(),
            task_path: self.task_path.clone(),
            answers: Mutex::new(answers),
            reached: std::sync::atomic::AtomicUsize::new(0),
            scoped: Mutex::new(scoped),
            calls: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    pub(crate) fn identity(&self) -> &TaskIdentity {
        self.identity.get_or_init(|| self.inputs.identity())
    }

    /// The task's LangGraph id.
    pub(crate) fn task_id(&self) -> &Arc<str> {
        &self.identity().task_id
    }

    /// `node:task_id` after the run's own namespace: the namespace of the
    /// task's interrupts and of its subgraph's checkpoints.
    pub(crate) fn namespace(&self) -> &str {
        &self.identity().namespace
    }

    fn scoped(&self) -> std::sync::MutexGuard<'_, BTreeMap<Arc<str>, ScopeAnswers>> {
        self.scoped
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The answers given so far to each interrupt scope that has any.
    pub(crate) fn answered_scopes(&self) -> BTreeMap<String, Vec<Value>> {
        self.scoped()
            .iter()
            .filter(|(_, scope)| !scope.answers.is_empty())
            .map(|(name, scope)| (name.to_string(), scope.answers.clone()))
            .collect()
    }

    fn answers(&self) -> std::sync::MutexGuard<'_, Vec<Value>> {
        self.answers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The answers given so far, in the order the interrupts were reached.
    pub(crate) fn answered(&self) -> Vec<Value> {
        self.answers().clone()
    }

    /// Records the answer a resume map gives the next unanswered interrupt.
    pub(crate) fn answer_from(&self, map: &serde_json::Map<String, serde_json::Value>) {
        let mut answers = self.answers();
        let next = crate::interrupt::Interrupt::id_for(self.namespace(), answers.len());
        if let Some(answer) = map.get(&next) {
            answers.push(Value::from_json(answer.clone()));
        }
    }

    pub(crate) fn interrupt(&self, value: Value, run: &RunInfo) -> Result<Value, Interrupted> {
        let index = self
            .reached
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut answers = self.answers();
        if let Some(answer) = answers.get(index) {
            return Ok(answer.clone());
        }
        if let Some(answer) = run.take_resume() {
            answers.push(answer.clone());
            return Ok(answer);
        }
        Err(Interrupted::one(crate::interrupt::Interrupt {
            value,
            id: crate::interrupt::Interrupt::id_for(self.namespace(), answers.len()),
        }))
    }

    /// An interrupt of one scope of the task: its id hashes the scope, and
    /// its answer comes from the scope's recorded answers, then from a
    /// resume map by id, then from a single resume value.
    pub(crate) fn interrupt_in(
        &self,
        scope: &Arc<str>,
        value: Value,
        run: &RunInfo,
    ) -> Result<Value, Interrupted> {
        let mut scopes = self.scoped();
        let answers = scopes.entry(scope.clone()).or_default();
        let index = answers.reached;
        answers.reached += 1;
        if let Some(answer) = answers.answers.get(index) {
            return Ok(answer.clone());
        }
        let id =
            crate::interrupt::Interrupt::id_for(&[self.namespace(), "|", scope].concat(), index);
        let by_id = run
            .answers()
            .and_then(|map| map.get(&id).map(|answer| Value::from_json(answer.clone())));
        if let Some(answer) = by_id.or_else(|| run.take_resume()) {
            answers.answers.push(answer.clone());
            return Ok(answer);
        }
        Err(Interrupted::one(crate::interrupt::Interrupt { value, id }))
    }
}
