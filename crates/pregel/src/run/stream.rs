//! Running a graph from the caller's side: `stream` and `invoke`, and the
//! `RunStream` that drives the loop and hands out its chunks.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::stream::{Stream, StreamExt};
use stategraph_core::{RunnableConfig, Value};

use super::pregel_loop::PregelLoop;
use crate::channel_values::ChannelValues;
use crate::chunk::{Namespace, StreamChunk, StreamMode, StreamModes};
use crate::command::Input;
use crate::error::{PregelError, Result};
use crate::graph::{CompiledGraph, Pregel};
use crate::interrupt::Interrupt;
use crate::names;
use crate::queue::ChunkQueue;
use crate::run_info::{PersistScope, RunInfo, RunOptions, SeenMessages, Sink};
use crate::shape::IoChannels;

impl Pregel {
    /// Runs the graph, streaming chunks of the requested modes. `values` and
    /// `updates` chunks show the stream channels.
    pub fn stream(
        &self,
        input: impl Into<Input>,
        config: &RunnableConfig,
        modes: impl Into<StreamModes>,
    ) -> RunStream {
        self.stream_with(input, config, modes, RunOptions::default())
    }

    /// [`Pregel::stream`] with run options (a typed context, subgraph chunks).
    pub fn stream_with(
        &self,
        input: impl Into<Input>,
        config: &RunnableConfig,
        modes: impl Into<StreamModes>,
        options: RunOptions,
    ) -> RunStream {
        let stream = self.inner.stream.clone();
        RunStream::start(
            self.inner.clone(),
            input.into(),
            config.clone(),
            modes.into(),
            stream,
            options,
            Delivery::Every,
        )
    }

    /// Runs the graph to the end and returns the output channels' final values
    /// (a map for several output channels, the value itself for one).
    ///
    /// # Errors
    /// Whatever stopped the run: a node error, an invalid update, the recursion limit.
    pub async fn invoke(&self, input: impl Into<Input>, config: &RunnableConfig) -> Result<Value> {
        self.invoke_with(input, config, RunOptions::default()).await
    }

    /// [`Pregel::invoke`] with run options (a typed context; a subgraph run
    /// forwarding its chunks to the root stream).
    ///
    /// # Errors
    /// As [`Pregel::invoke`].
    pub async fn invoke_with(
        &self,
        input: impl Into<Input>,
        config: &RunnableConfig,
        options: RunOptions,
    ) -> Result<Value> {
        let RunOutput {
            value: latest,
            interrupts,
            ..
        } = self.invoke_parts(input, config, options).await?;
        if interrupts.is_empty() {
            return Ok(latest);
        }
        // As LangGraph's `invoke`: the state (`invoke_parts` took the last
        // task's interrupts out of it) with every interrupt of the run under
        // `__interrupt__`.
        let mut pairs: Vec<(Arc<str>, Value)> = latest
            .downcast_ref::<ChannelValues>()
            .map(|values| values.pairs().to_vec())
            .unwrap_or_default();
        pairs.push((Arc::from(names::INTERRUPT), Value::new(interrupts)));
        Ok(Value::new(ChannelValues::new(pairs)))
    }

    /// [`Pregel::invoke_with`] with the output and the interrupts the run
    /// stopped on apart (LangGraph's `invoke(version="v2")`): the output is
    /// the state without `__interrupt__`, and whether the run stopped before
    /// the end is told even when no interrupt says so (a static breakpoint).
    ///
    /// # Errors
    /// As [`Pregel::invoke`].
    pub async fn invoke_parts(
        &self,
        input: impl Into<Input>,
        config: &RunnableConfig,
        options: RunOptions,
    ) -> Result<RunOutput> {
        let input = input.into();
        let mut retries = options.busy_retries;
        if retries == 0 {
            return self.invoke_once(input, config, options).await;
        }
        // Retries keep a copy, and the run drops a refused input without
        // recursion only where the last copy goes: check it before copying.
        let input = input.within_depth().map_err(PregelError::Value)?;
        let mut pause_ms = 2;
        loop {
            match self
                .invoke_once(input.clone(), config, options.clone())
                .await
            {
                Err(PregelError::ThreadBusy { .. }) if retries > 0 => {
                    retries -= 1;
                    // A random pause, so runs that collided do not collide again.
                    let jitter = stategraph_core::random_u64() % pause_ms;
                    tokio::time::sleep(std::time::Duration::from_millis(1 + jitter)).await;
                    pause_ms = (pause_ms * 2).min(250);
                }
                other => return other,
            }
        }
    }

    /// One run of [`Pregel::invoke_parts`].
    pub(super) async fn invoke_once(
        &self,
        input: Input,
        config: &RunnableConfig,
        options: RunOptions,
    ) -> Result<RunOutput> {
        let output = self.inner.output.clone();
        let mut stream = RunStream::start(
            self.inner.clone(),
            input,
            config.clone(),
            StreamMode::Values.into(),
            output,
            options,
            Delivery::Latest,
        );
        let mut latest = None;
        while let Some(chunk) = stream.next().await {
            latest = Some(chunk?.data);
        }
        let mut latest = latest.unwrap_or_else(Value::null);
        if let Some(values) = latest.downcast_ref::<ChannelValues>()
            && values.get(names::INTERRUPT).is_some()
        {
            let pairs = values
                .pairs()
                .iter()
                .filter(|(key, _)| &**key != names::INTERRUPT)
                .cloned()
                .collect();
            latest = Value::new(ChannelValues::new(pairs));
        }
        let interrupts = stream.interrupts();
        let paused = !interrupts.is_empty() || stream.stopped_at_breakpoint();
        Ok(RunOutput {
            value: latest,
            interrupts,
            paused,
        })
    }
}

/// What [`Pregel::invoke_parts`] returns: the run's output and how it ended.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RunOutput {
    /// The output keys' values (without `__interrupt__`).
    pub value: Value,
    /// The interrupts the run stopped on, in the order the tasks
    /// interrupted.
    pub interrupts: Vec<Interrupt>,
    /// Whether the run stopped before the end: at interrupts, or at a static
    /// breakpoint (`interrupt_before` / `interrupt_after`, which raise none).
    pub paused: bool,
}

/// Which `values` chunks a run's own stream needs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Delivery {
    /// Every one (a caller streaming the run).
    Every,
    /// The last one only (`invoke`): the loop holds the shown values of the
    /// latest step and builds one chunk when the run stops.
    Latest,
}

/// The stream of a run: chunks in order, then the run's error if it failed.
///
/// Dropping it cancels the run where it waits. With a checkpointer the
/// thread stays at its last saved checkpoint, with the saved writes of the
/// tasks that finished; a run resuming the thread (`Input::Resume`)
/// continues from there without running those tasks again. A put already
/// handed to a saver that runs it on another thread (SQLite's blocking
/// pool) may still land; the head's compare-and-set keeps it from forking
/// the thread.
pub struct RunStream {
    pub(super) run: Option<Pin<Box<dyn Future<Output = Result<()>> + std::marker::Send>>>,
    pub(super) info: Arc<RunInfo>,
    pub(super) queue: Arc<ChunkQueue>,
    // Chunks taken from `queue` in one lock, handed out one by one.
    pub(super) taken: VecDeque<StreamChunk>,
    pub(super) error: Option<PregelError>,
    // The modes the caller asked for, and those printed (see `RunOptions::print_modes`).
    pub(super) streamed: StreamModes,
    pub(super) printed: StreamModes,
}

impl RunStream {
    pub(super) fn start(
        graph: Arc<CompiledGraph>,
        input: Input,
        config: RunnableConfig,
        modes: StreamModes,
        output: IoChannels,
        options: RunOptions,
        delivery: Delivery,
    ) -> Self {
        let mut options = options;
        // The run's own output keys, if it has them; an unknown one fails
        // the run as it starts.
        let (output, bad_keys) = match options.output_keys.take().map(|keys| {
            graph.shape.io_channels(&keys, |name| {
                // LangGraph's `ValueError`.
                PregelError::InvalidGraph(format!("Key {name} not in channels"))
            })
        }) {
            None => (output, None),
            Some(Ok(keys)) => (keys, None),
            Some(Err(err)) => (output, Some(err)),
        };
        let queue = Arc::new(ChunkQueue::default());
        let printed = if graph.debug {
            options
                .print
                .union(StreamMode::Updates | StreamMode::Values)
        } else {
            options.print
        };
        let sink = Sink {
            queue: queue.clone(),
            modes: modes.union(printed),
            namespace: Namespace::ROOT,
            shown: output,
            seen: SeenMessages::default(),
            // A printed chunk is printed when it is taken: all of them are needed.
            latest_only: delivery == Delivery::Latest && printed.is_empty(),
        };
        let forward = options.forward.clone().map(|forward| Sink {
            queue: forward.queue,
            modes: forward.modes,
            namespace: forward.namespace,
            shown: graph.stream.clone(),
            seen: forward.seen,
            latest_only: false,
        });
        let durability = options.durability;
        let scope = match (&options.parent, &graph.checkpointer, options.nested) {
            (Some(parent), _, _) => {
                PersistScope::for_subgraph(&parent.scope, graph.subgraph_checkpoints)
            }
            (None, Some(saver), false) => Some(PersistScope {
                saver: saver.clone(),
                checkpoint_ns: config.checkpoint_ns().to_owned(),
                durability,
                parents: std::collections::BTreeMap::new(),
                nested: false,
            }),
            _ => None,
        };
        // A graph's own store wins over the one a parent task passes down.
        if let Some(store) = &graph.store {
            options.store = Some(store.clone());
        }
        // A JSON context is decoded before anything runs; one that does not
        // decode ends the run with that error and no step.
        let bad_context = match crate::run_info::resolve_context(
            options.context.take(),
            graph.context_type.as_ref(),
        ) {
            Ok(context) => {
                options.context = context;
                None
            }
            Err(err) => Some(err),
        };
        let refused = bad_keys.or(bad_context);
        let run_info = RunInfo::new(
            graph.shape.clone(),
            graph.clone(),
            config,
            sink,
            forward,
            &options,
            scope,
        );
        let before = options
            .interrupt_before
            .unwrap_or_else(|| graph.interrupt_before.clone());
        let after = options
            .interrupt_after
            .unwrap_or_else(|| graph.interrupt_after.clone());
        let run_loop = PregelLoop::new(graph, run_info);
        let info = run_loop.run.clone();
        let run: Pin<Box<dyn Future<Output = Result<()>> + std::marker::Send>> = match refused {
            Some(err) => Box::pin(std::future::ready(Err(err))),
            None => Box::pin(run_loop.run(input, durability, [before, after])),
        };
        Self {
            run: Some(run),
            info,
            queue,
            taken: VecDeque::new(),
            error: None,
            streamed: modes,
            printed,
        }
    }

    /// The interrupts the run stopped on so far (all of them once the
    /// stream has ended), in the order the tasks interrupted.
    pub fn interrupts(&self) -> Vec<Interrupt> {
        self.info.interrupts()
    }

    /// Whether the run stopped at a static breakpoint (`interrupt_before`
    /// or `interrupt_after`), once the stream has ended.
    pub fn stopped_at_breakpoint(&self) -> bool {
        self.info
            .at_breakpoint
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The next chunk to hand out (chunks only printed are printed here).
    /// With `refill`, takes what the queue holds when nothing taken is
    /// left; without, hands out only chunks already taken (no lock).
    pub(super) fn pop(&mut self, refill: bool) -> Option<StreamChunk> {
        loop {
            if refill && self.taken.is_empty() {
                self.queue.take_into(&mut self.taken);
            }
            let chunk = self.taken.pop_front()?;
            if self.printed.contains(chunk.mode) {
                print_chunk(&chunk);
            }
            if self.streamed.contains(chunk.mode) {
                return Some(chunk);
            }
        }
    }
}

impl Stream for RunStream {
    type Item = Result<StreamChunk>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            // Chunks the run queued before it last returned were taken then;
            // while it is alive, new ones are taken after polling it.
            let finished = this.run.is_none();
            if let Some(chunk) = this.pop(finished) {
                return Poll::Ready(Some(Ok(chunk)));
            }
            let Some(run) = this.run.as_mut() else {
                return Poll::Ready(this.error.take().map(Err));
            };
            match run.as_mut().poll(cx) {
                Poll::Ready(result) => {
                    this.run = None;
                    this.error = result.err();
                }
                Poll::Pending => {
                    // The loop yields with chunks waiting; hand them out first.
                    let yielded = this.queue.take_yield();
                    return match this.pop(true) {
                        Some(chunk) => Poll::Ready(Some(Ok(chunk))),
                        None => {
                            if yielded {
                                // The chunks went to a parent's queue; the
                                // loop can go on as soon as we are polled.
                                cx.waker().wake_by_ref();
                            }
                            Poll::Pending
                        }
                    };
                }
            }
        }
    }
}

/// Prints a chunk as LangGraph's `print_mode` does, through `tracing`.
pub(super) fn print_chunk(chunk: &StreamChunk) {
    let payload = serde_json::to_string(&chunk.data)
        .unwrap_or_else(|err| format!("<{} not serializable: {err}>", chunk.data.type_name()));
    if chunk.namespace.is_empty() {
        tracing::info!(target: "stategraph::print", "[{}] {payload}", chunk.mode);
    } else {
        let namespace = chunk.namespace.join("|");
        tracing::info!(
            target: "stategraph::print",
            "[{}] [graph={namespace}] {payload}",
            chunk.mode
        );
    }
}
