//! A run: the superstep loop and the stream that drives it.
//!
//! A run is a future (the loop) plus a queue of chunks. The loop applies the
//! input, then repeats: plan the tasks of the next step, run them
//! concurrently, turn each finished task's output into writes (and an
//! `updates` chunk), apply all writes together in task-path order, emit a
//! `values` chunk, and yield to the consumer whenever chunks are waiting.
//! Dropping the stream drops the loop and every task in flight.
//!
//! One file per part of a run:
//!
//! | File | Holds |
//! |---|---|
//! | `stream.rs` | `Pregel::stream` / `invoke`, `RunStream` |
//! | `pregel_loop.rs` | `PregelLoop`: the run's state and its step sequence |
//! | `task.rs` | a step's tasks, their paths and results |
//! | `input.rs` | the input and `Command`s (goto, update, resume) |
//! | `plan.rs` | which tasks a step runs |
//! | `kept_input.rs` | the input maps kept between steps |
//! | `execute.rs` | running tasks: retries, timeouts, the node cache |
//! | `fresh.rs` | conditional edges reading the task's own writes |
//! | `apply.rs` | applying a step's writes to the channels |
//! | `channels.rs` | the run's copies of the channels |
//! | `emit.rs` | `tasks`, `updates`, `values` and `debug` chunks |
//! | `messages.rs` | the `messages` mode |
//! | `breakpoints.rs` | static breakpoints (`interrupt_before` / `after`) |
//! | `checkpointing.rs` | the run's checkpoint state and save pipeline |
//! | `load.rs` | loading a checkpoint: restore, task ids, resume |
//! | `save.rs` | saving checkpoints and task writes |
//! | `announce.rs` | `checkpoints` chunks |
//! | `state.rs` | `get_state`, `get_state_history` (read side) |
//! | `update.rs` | `update_state`, `bulk_update_state` |

mod announce;
mod apply;
mod breakpoints;
mod channels;
mod checkpointing;
mod emit;
mod execute;
mod fresh;
mod input;
mod kept_input;
mod load;
mod message_sink;
mod messages;
mod plan;
mod pregel_loop;
mod save;
mod state;
mod stream;
mod task;
mod update;

pub use pregel_loop::DEFAULT_RECURSION_LIMIT;
pub use state::{PregelTask, StateSnapshot};
pub use stream::{RunOutput, RunStream};
pub use update::StateUpdate;
