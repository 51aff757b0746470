//! Adapters that turn plain async functions into graph nodes and routers.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

use serde::de::DeserializeOwned;
use stategraph_core::Value;
use stategraph_pregel::{
    ChannelValues, Command, NodeError, NodeFn, NodeOutput, Send, TaskContext, node_future,
};

/// Builds a node's input from what the runtime hands it: the state (a map of
/// the node's input keys) for a node triggered by edges, or the argument of a
/// `Send`.
///
/// Implemented for [`ChannelValues`] (zero-copy), for [`Value`], and for any
/// deserializable type (decoded from the state's JSON form, or taken as is
/// when a `Send` carried exactly that type).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a node's or router's input",
    label = "not a node input",
    note = "a node takes a typed view (`{{Name}}View` from `#[derive(State)]`), `ChannelValues`, `Value`, `serde_json::Value`, or any `Deserialize + Clone + Send + Sync` type"
)]
pub trait FromInput: Sized + std::marker::Send + 'static {
    /// Converts the input.
    ///
    /// # Errors
    /// The input does not have the shape of `Self`.
    fn from_input(input: Value) -> Result<Self, NodeError>;
}

/// Any deserializable input type: [`ChannelValues`] (zero-copy: the state map
/// itself), `serde_json::Value`, [`Value`], or your own types (decoded from
/// the state's JSON form, or taken as is when a `Send` carried that type).
impl<T: DeserializeOwned + Clone + std::marker::Send + Sync + 'static> FromInput for T {
    fn from_input(input: Value) -> Result<Self, NodeError> {
        input
            .decode_owned::<T>()
            .map_err(crate::state::invalid_input)
    }
}

/// What a node function may return: nothing, a state update, or a `Command`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a node output",
    label = "a node returns `Ok(output)` where `output` is a state update",
    note = "a node returns `()`, a typed update (`{{Name}}Update` from `#[derive(State)]`; for a whole state `s`, `{{Name}}Update::from(s)`), a JSON object (`serde_json::Value`), `ChannelValues`, a `Command`, a `Vec<Command>`, or an `Option` of one of these"
)]
pub trait IntoNodeOutput {
    /// Converts into the runtime's output.
    fn into_node_output(self) -> NodeOutput;
}

impl IntoNodeOutput for NodeOutput {
    fn into_node_output(self) -> NodeOutput {
        self
    }
}

impl IntoNodeOutput for () {
    fn into_node_output(self) -> NodeOutput {
        NodeOutput::None
    }
}

/// A JSON object is a state update (`{key: value}`); `null` is no update;
/// anything else is rejected when the writes are computed (LangGraph's
/// "Expected dict" error).
impl IntoNodeOutput for serde_json::Value {
    fn into_node_output(self) -> NodeOutput {
        match self {
            serde_json::Value::Null => NodeOutput::None,
            serde_json::Value::Object(map) => NodeOutput::Value(Value::new(ChannelValues::new(
                map.into_iter()
                    .map(|(k, v)| (Arc::from(k.as_str()), Value::from_json(v)))
                    .collect(),
            ))),
            other => NodeOutput::Value(Value::from_json(other)),
        }
    }
}

impl IntoNodeOutput for ChannelValues {
    fn into_node_output(self) -> NodeOutput {
        NodeOutput::Value(Value::new(self))
    }
}

impl IntoNodeOutput for Command {
    fn into_node_output(self) -> NodeOutput {
        NodeOutput::Command(self)
    }
}

impl IntoNodeOutput for Vec<Command> {
    fn into_node_output(self) -> NodeOutput {
        NodeOutput::Many(self.into_iter().map(NodeOutput::Command).collect())
    }
}

impl<T: IntoNodeOutput> IntoNodeOutput for Option<T> {
    fn into_node_output(self) -> NodeOutput {
        self.map_or(NodeOutput::None, IntoNodeOutput::into_node_output)
    }
}

/// Marker for node functions taking only their input.
pub struct InputOnly;
/// Marker for node functions taking their input and the task context.
pub struct WithContext;

/// An async function usable as a node: `async fn(input) -> Result<output>` or
/// `async fn(input, TaskContext) -> Result<output>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a node",
    label = "not a node",
    note = "a node is an `async fn(input) -> Result<output, E>` or `async fn(input, TaskContext) -> Result<output, E>` (or a closure returning such a future), a compiled graph, or a `ToolNode`",
    note = "its input must be `FromInput` (a `{{Name}}View`, `ChannelValues`, a `Deserialize` type), its output `IntoNodeOutput` (`()`, a `{{Name}}Update` rather than the state struct, a JSON object, a `Command`) and its error `Into<NodeError>`"
)]
pub trait IntoNode<Marker>: std::marker::Send + Sync + 'static {
    /// Boxes the function for the runtime.
    fn into_node_fn(self) -> NodeFn;

    /// What drawings show under the node's name besides its metadata (a
    /// tool node lists its tools as `__tools`, as LangGraph draws it).
    fn drawing_metadata(&self) -> stategraph_core::JsonMap {
        stategraph_core::JsonMap::new()
    }
}

impl<F, I, Fut, O, E> IntoNode<(InputOnly, I, O, E)> for F
where
    F: Fn(I) -> Fut + std::marker::Send + Sync + 'static,
    I: FromInput,
    Fut: Future<Output = Result<O, E>> + std::marker::Send + 'static,
    O: IntoNodeOutput + 'static,
    E: Into<NodeError> + 'static,
{
    fn into_node_fn(self) -> NodeFn {
        Arc::new(move |input: Value, _ctx: &TaskContext| {
            // The function is called here, not in the future: its future
            // owns what it needs, so the function itself is not shared.
            let run = I::from_input(input).map(&self);
            node_future(output_of(run))
        })
    }
}

impl<F, I, Fut, O, E> IntoNode<(WithContext, I, O, E)> for F
where
    F: Fn(I, TaskContext) -> Fut + std::marker::Send + Sync + 'static,
    I: FromInput,
    Fut: Future<Output = Result<O, E>> + std::marker::Send + 'static,
    O: IntoNodeOutput + 'static,
    E: Into<NodeError> + 'static,
{
    fn into_node_fn(self) -> NodeFn {
        Arc::new(move |input: Value, ctx: &TaskContext| {
            let run = I::from_input(input).map(|input| self(input, ctx.clone()));
            node_future(output_of(run))
        })
    }
}

/// A synchronous function as a node, run on tokio's blocking thread pool:
/// CPU-bound nodes of one step then use several cores, as LangGraph runs
/// synchronous nodes on its thread pool, and never hold up the async tasks
/// of the runtime. The function takes its input (`fn(input) -> Result<output,
/// E>`) or its input and the task context (`fn(input, TaskContext) -> …`).
///
/// ```
/// use serde_json::{Value, json};
/// use stategraph_graph::{NodeError, Schema, StateGraph, START, blocking};
///
/// fn crunch(state: Value) -> Result<Value, NodeError> {
///     let n = state["n"].as_u64().unwrap_or(0);
///     Ok(json!({"n": (0..=n).sum::<u64>()}))
/// }
///
/// # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
/// let mut graph = StateGraph::new(Schema::new().last_value("n"));
/// graph.add_node("crunch", blocking(crunch))?;
/// graph.add_edge(START, "crunch")?;
/// let out = graph.compile()?.invoke(json!({"n": 100}), &Default::default()).await?;
/// assert_eq!(out.to_json()?, json!({"n": 5050}));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub fn blocking<F>(func: F) -> Blocking<F> {
    Blocking(Arc::new(func))
}

/// A synchronous node function ([`blocking`]).
pub struct Blocking<F>(Arc<F>);

/// Marker for blocking node functions taking only their input.
pub struct BlockingInput;
/// Marker for blocking node functions taking their input and the context.
pub struct BlockingWithContext;

impl<F, I, O, E> IntoNode<(BlockingInput, I, O, E)> for Blocking<F>
where
    F: Fn(I) -> Result<O, E> + std::marker::Send + Sync + 'static,
    I: FromInput,
    O: IntoNodeOutput + 'static,
    E: Into<NodeError> + 'static,
{
    fn into_node_fn(self) -> NodeFn {
        let func = self.0;
        Arc::new(move |input: Value, _ctx: &TaskContext| {
            let func = func.clone();
            node_future(on_blocking_pool(move || {
                let input = I::from_input(input)?;
                output_or_error(func(input))
            }))
        })
    }
}

impl<F, I, O, E> IntoNode<(BlockingWithContext, I, O, E)> for Blocking<F>
where
    F: Fn(I, TaskContext) -> Result<O, E> + std::marker::Send + Sync + 'static,
    I: FromInput,
    O: IntoNodeOutput + 'static,
    E: Into<NodeError> + 'static,
{
    fn into_node_fn(self) -> NodeFn {
        let func = self.0;
        Arc::new(move |input: Value, ctx: &TaskContext| {
            let (func, ctx) = (func.clone(), ctx.clone());
            node_future(on_blocking_pool(move || {
                let input = I::from_input(input)?;
                output_or_error(func(input, ctx))
            }))
        })
    }
}

/// Runs a node body on tokio's blocking pool. A panic in it goes on in the
/// awaiting task, where the runtime reports it as the node's `Panic`.
async fn on_blocking_pool(
    body: impl FnOnce() -> Result<NodeOutput, NodeError> + std::marker::Send + 'static,
) -> Result<NodeOutput, NodeError> {
    match tokio::task::spawn_blocking(body).await {
        Ok(result) => result,
        Err(err) => match err.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(err) => Err(NodeError::new("CancelledError", err.to_string())),
        },
    }
}

/// A node function's result as the runtime takes it.
fn output_or_error<O: IntoNodeOutput, E: Into<NodeError>>(
    result: Result<O, E>,
) -> Result<NodeOutput, NodeError> {
    result
        .map(IntoNodeOutput::into_node_output)
        .map_err(Into::into)
}

/// The runtime's output of a node function's future (or of the input the
/// function could not take).
async fn output_of<Fut, O, E>(run: Result<Fut, NodeError>) -> Result<NodeOutput, NodeError>
where
    Fut: Future<Output = Result<O, E>>,
    O: IntoNodeOutput,
    E: Into<NodeError>,
{
    output_or_error(run?.await)
}

/// One destination chosen by a router.
#[derive(Clone, Debug, PartialEq)]
pub enum Route {
    /// A node name, or a key of the branch's path map.
    To(String),
    /// A `Send` (map-reduce fan-out).
    Send(Send),
}

/// What a router may return: a name, several names, `Send`s, or a mix.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a router's result",
    label = "not a route",
    note = "a router returns a node name (`&str`, `String`), a `bool` (with a path map), a `Send`, a `Route`, or a `Vec` or array of these"
)]
pub trait IntoRoutes {
    /// The destinations.
    fn into_routes(self) -> Vec<Route>;

    /// Every destination a value of this type can name, when the type knows
    /// them: LangGraph reads them from a router's `Literal[...]` return
    /// hint. A branch added without a path map then maps each to itself:
    /// it is drawn with an edge to each, `compile` checks they are nodes,
    /// and a router result outside them is an error. `None` (the default):
    /// any node name.
    fn destinations() -> Option<&'static [&'static str]>
    where
        Self: Sized,
    {
        None
    }
}

impl IntoRoutes for &str {
    fn into_routes(self) -> Vec<Route> {
        vec![Route::To(self.to_owned())]
    }
}

impl IntoRoutes for String {
    fn into_routes(self) -> Vec<Route> {
        vec![Route::To(self)]
    }
}

impl IntoRoutes for bool {
    fn into_routes(self) -> Vec<Route> {
        vec![Route::To(if self { "True" } else { "False" }.to_owned())]
    }
}

impl IntoRoutes for Send {
    fn into_routes(self) -> Vec<Route> {
        vec![Route::Send(self)]
    }
}

impl IntoRoutes for Route {
    fn into_routes(self) -> Vec<Route> {
        vec![self]
    }
}

impl<T: IntoRoutes> IntoRoutes for Vec<T> {
    fn into_routes(self) -> Vec<Route> {
        self.into_iter().flat_map(IntoRoutes::into_routes).collect()
    }
}

impl<T: IntoRoutes, const N: usize> IntoRoutes for [T; N] {
    fn into_routes(self) -> Vec<Route> {
        self.into_iter().flat_map(IntoRoutes::into_routes).collect()
    }
}

/// What an async router's future gives: routes ([`IntoRoutes`]), or a
/// `Result` of them whose error fails the task (LangGraph's router that
/// raises).
pub trait RouteOutput {
    /// The routes, or the error.
    ///
    /// # Errors
    /// The router's own.
    fn into_route_result(self) -> Result<Vec<Route>, NodeError>;

    /// The destinations its routes can name ([`IntoRoutes::destinations`]).
    fn destinations() -> Option<&'static [&'static str]>
    where
        Self: Sized;
}

impl<R: IntoRoutes> RouteOutput for R {
    fn into_route_result(self) -> Result<Vec<Route>, NodeError> {
        Ok(self.into_routes())
    }

    fn destinations() -> Option<&'static [&'static str]> {
        R::destinations()
    }
}

impl<R: IntoRoutes, E: Into<NodeError>> RouteOutput for Result<R, E> {
    fn into_route_result(self) -> Result<Vec<Route>, NodeError> {
        self.map(IntoRoutes::into_routes).map_err(Into::into)
    }

    fn destinations() -> Option<&'static [&'static str]> {
        R::destinations()
    }
}

/// A router: reads the state (with its node's own writes applied) and returns
/// destinations. Any [`FromInput`] type can be its input.
/// It also gets the run's context (its config, store and typed context).
#[derive(Clone)]
pub enum RouterFn {
    /// Routes at once.
    Sync(Arc<SyncRouter>),
    /// Routes when its future is done (LangGraph's `async def` router).
    Async(Arc<AsyncRouter>),
}

/// A router that routes at once.
pub type SyncRouter =
    dyn Fn(Value, &TaskContext) -> Result<Vec<Route>, NodeError> + std::marker::Send + Sync;

/// A router whose routes come from a future.
pub type AsyncRouter = dyn Fn(Value, &TaskContext) -> BoxFuture<'static, Result<Vec<Route>, NodeError>>
    + std::marker::Send
    + Sync;

/// A function usable as a router: `fn(&input) -> routes`,
/// `fn(input) -> routes`, `fn(&input, &TaskContext) -> routes` (LangGraph's
/// `(state, runtime)`: the run's config, store and typed context),
/// `fn(&input, &RunnableConfig) -> routes` (LangGraph's `(state, config)`),
/// or async: `async fn(input) -> routes` and
/// `async fn(input, TaskContext) -> routes` (LangGraph's `async def`
/// routers; the task's writes are saved and applied once it is done).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a router",
    label = "not a router",
    note = "a router is a function `fn(&input) -> routes`, `fn(input) -> routes`, `fn(&input, &TaskContext) -> routes`, `fn(&input, &RunnableConfig) -> routes`, or an async `fn(input) -> routes` or `fn(input, TaskContext) -> routes`, where the input is `FromInput` (a `&{{Name}}View`, `ChannelValues`, a `Deserialize` type) and the routes a node name, a `bool`, a `Send`, or a `Vec` of these"
)]
pub trait IntoRouter<Marker>: std::marker::Send + Sync + 'static {
    /// Boxes the router.
    fn into_router(self) -> RouterFn;

    /// The destinations its results can name, when their type knows them
    /// ([`IntoRoutes::destinations`]).
    fn destinations() -> Option<&'static [&'static str]>
    where
        Self: Sized,
    {
        None
    }
}

/// Marker for routers taking their input by reference.
pub struct ByRef;
/// Marker for routers taking their input by value.
pub struct ByValue;
/// Marker for routers taking their input by reference and the run's
/// context (LangGraph's `(state, runtime)` form).
pub struct ByRefWithContext;
/// Marker for routers taking their input by reference and the run's config
/// (LangGraph's `(state, config)` form).
pub struct ByRefWithConfig;

/// Implements `IntoRouter` for one router form: its marker, its function
/// type, and how it is called (`|router, input, ctx| call`) with the
/// decoded input and the run's context.
macro_rules! router_form {
    ($marker:ident, [$($bound:tt)+], |$f:ident, $input:ident, $ctx:pat_param| $call:expr) => {
        impl<F, I, R> IntoRouter<($marker, I, R)> for F
        where
            F: $($bound)+ + std::marker::Send + Sync + 'static,
            I: FromInput,
            R: IntoRoutes,
        {
            fn into_router(self) -> RouterFn {
                RouterFn::Sync(Arc::new(move |input, ctx| {
                    let ($f, $input, $ctx) = (&self, I::from_input(input)?, ctx);
                    Ok($call.into_routes())
                }))
            }

            fn destinations() -> Option<&'static [&'static str]> {
                R::destinations()
            }
        }
    };
}

router_form!(ByRef, [Fn(&I) -> R], |f, input, _| f(&input));
router_form!(ByValue, [Fn(I) -> R], |f, input, _| f(input));
router_form!(
    ByRefWithContext,
    [Fn(&I, &TaskContext) -> R],
    |f, input, ctx| f(&input, ctx)
);
router_form!(
    ByRefWithConfig,
    [Fn(&I, &stategraph_core::RunnableConfig) -> R],
    |f, input, ctx| f(&input, ctx.config())
);

/// Marker for async routers taking their input by value.
pub struct AsyncByValue;
/// Marker for async routers taking their input by value and the task's
/// context.
pub struct AsyncWithContext;

/// Implements `IntoRouter` for one async router form, as `router_form!`.
macro_rules! async_router_form {
    ($marker:ident, [$($bound:tt)+], |$f:ident, $input:ident, $ctx:pat_param| $call:expr) => {
        impl<F, I, Fut> IntoRouter<($marker, I, Fut)> for F
        where
            F: $($bound)+ + std::marker::Send + Sync + 'static,
            I: FromInput,
            Fut: Future + std::marker::Send + 'static,
            Fut::Output: RouteOutput,
        {
            fn into_router(self) -> RouterFn {
                RouterFn::Async(Arc::new(move |input, ctx| {
                    let ($f, $ctx) = (&self, ctx);
                    match I::from_input(input) {
                        Ok($input) => {
                            let routes = $call;
                            Box::pin(async move { routes.await.into_route_result() })
                        }
                        Err(err) => Box::pin(std::future::ready(Err(err))),
                    }
                }))
            }

            fn destinations() -> Option<&'static [&'static str]> {
                <Fut::Output as RouteOutput>::destinations()
            }
        }
    };
}

async_router_form!(AsyncByValue, [Fn(I) -> Fut], |f, input, _| f(input));
async_router_form!(
    AsyncWithContext,
    [Fn(I, TaskContext) -> Fut],
    |f, input, ctx| f(input, ctx.clone())
);

/// Marker for a compiled graph used as a node.
pub struct Subgraph;

/// A compiled graph is a node: it runs on the node's input (the parent's
/// state, or a `Send` argument) and its output (the subgraph's final state,
/// filtered to its output keys) becomes the node's update. A subgraph node
/// returning `Command { graph: Parent, .. }` stops the subgraph, and the
/// command becomes this node's output in the parent.
impl IntoNode<Subgraph> for crate::CompiledStateGraph {
    fn into_node_fn(self) -> NodeFn {
        Arc::new(move |input: Value, ctx: &TaskContext| {
            let graph = self.clone();
            let ctx = ctx.clone();
            node_future(async move {
                match graph
                    .pregel()
                    .invoke_parts(input, ctx.run_config(), ctx.subgraph_options())
                    .await
                {
                    // The subgraph stopped on interrupts: so does this task.
                    Ok(output) if !output.interrupts.is_empty() => {
                        Err(stategraph_pregel::Interrupted(output.interrupts).into())
                    }
                    Ok(output) => Ok(NodeOutput::Value(output.value)),
                    Err(stategraph_pregel::PregelError::ParentCommand(command)) => {
                        let mut command = *command;
                        command.graph = stategraph_pregel::CommandGraph::Current;
                        Ok(NodeOutput::Command(command))
                    }
                    Err(err) => Err(NodeError::new(err.class().to_owned(), err.to_string())),
                }
            })
        })
    }
}
