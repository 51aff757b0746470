//! `#[derive(State)]` (typed graph state) and `#[tool]` (tools from async
//! functions) for stategraph.
#![doc = include_str!("../README.md")]

mod attrs;
mod expand;
mod root;
mod tool;

use proc_macro::TokenStream;

/// Derives `State` for a struct with named fields: the graph's schema (one
/// key per field), a `{Name}Update` partial update nodes return, and a
/// `{Name}View` zero-copy read view nodes take.
///
/// Use it through `stategraph_graph::State` or `stategraph::graph::State`
/// (the trait and the derive share the name, like serde's). The generated
/// code names the graph crate as the using crate's `Cargo.toml` has it:
/// `::stategraph_graph` (or its renamed name) when `stategraph-graph` is a
/// dependency, else `::stategraph::graph` when the facade is. Besides one of
/// those, a crate using the derive needs serde for the struct's own
/// `Serialize`/`Deserialize`, and nothing else.
///
/// # Field options: `#[state(...)]`
///
/// | Option | Channel |
/// | --- | --- |
/// | (none) | `LastValue<T>`: one write per step, last value wins |
/// | `reducer = append` / `add` / `merge` / `replace` | `BinaryOperatorAggregate<T>` with `stategraph_channels::reducers::*` |
/// | `reducer = path::to::f` | `BinaryOperatorAggregate<T>` with any `Fn(T, T) -> T` (a path or a closure) |
/// | `channel = "topic"` (`T = Vec<E>`) | `Topic<E>`; add `accumulate` to keep items across steps |
/// | `channel = "ephemeral"` | `EphemeralValue<T>` |
/// | `channel = "untracked"` | `UntrackedValue<T>` |
/// | `channel = "any"` | `AnyValue<T>` |
/// | `channel = "last_value"` | `LastValue<T>` (the default, spelled out) |
///
/// A built-in reducer name wins over a function of the same name in scope;
/// write `self::append` to use your own.
///
/// # Struct options
///
/// - `#[state(crate = "path")]`: the path of the graph crate in the generated
///   code, for crates that reach it through a re-export of their own (by
///   default it is found in `Cargo.toml`, see above).
/// - `#[state(partial)]`: no key is required in the graph's JSON schemas,
///   as with a Python `TypedDict` declared `total=False` (by default every
///   key is, as a `TypedDict`'s are).
/// - `#[serde(rename_all = "...")]` and a field's `#[serde(rename = "...")]`
///   decide the key names, so the state's JSON form and its keys agree.
///
/// # Requirements on field types
///
/// Every field type must be `Serialize + DeserializeOwned + Clone + Debug +
/// Default + Send + Sync + 'static`: channels store and checkpoint the values,
/// the update and view types derive `Clone` and `Debug`, and a key the state
/// does not hold reads as `Default::default()` in the view. A type that does
/// not fit is reported at the field.
///
/// # Rejected at compile time
///
/// Tuple structs, unit structs, enums and unions; generic structs; two fields
/// with the same key; `#[serde(flatten)]` and skipped fields; unknown options;
/// `reducer` with `channel`; `channel = "topic"` on a field that is not a
/// `Vec`; and fields named `default`, `clone`, `clone_from`, `fmt`, `from` or
/// `into` (their builder method would hide the trait method: rename the field
/// and keep the key with `#[serde(rename = "...")]`).
#[proc_macro_derive(State, attributes(state))]
pub fn derive_state(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    expand::derive_state(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Turns an `async fn` into a `stategraph_llm::Tool` (LangChain's `@tool`).
///
/// `#[tool] async fn get_weather(...)` keeps the function as written and adds
/// a unit struct `GetWeatherTool` (the function's name in UpperCamelCase plus
/// `Tool`, with the function's visibility) implementing `Tool`:
///
/// - `name()` is the function's name; `description()` its doc comment (all
///   lines, joined with `\n`, shared indentation and surrounding blank lines
///   removed).
/// - `args_schema()` has one property per parameter, described by the
///   parameter's doc comment; `Option<T>` parameters are optional.
/// - `call()` reads each argument from the JSON arguments and awaits the
///   function. A missing or ill-typed argument is
///   `ToolError::InvalidArgs` naming it, never a panic.
///
/// The generated code names `stategraph-llm` as the using crate's
/// `Cargo.toml` has it: `::stategraph_llm` (or its renamed name) when it is a
/// dependency, else `::stategraph::llm` when the facade is (the facade
/// re-exports the macro as `stategraph::tool`).
///
/// # Options: `#[tool(...)]`
///
/// - `name = "..."`: the tool's name (default: the function's name).
/// - `description = "..."`: the description (default: the doc comment; one
///   of the two is required).
/// - `return_direct`: `Tool::return_direct` is `true`.
/// - `crate = "path"`: the path of `stategraph-llm` in the generated code,
///   for crates that reach it through a re-export of their own (by default
///   it is found in `Cargo.toml`, see above).
///
/// # Parameters
///
/// - Plain parameters (`a: i64`) are the model's arguments. Their types
///   implement `serde::Deserialize` and `schemars::JsonSchema` and are owned
///   (`String`, not `&str`).
/// - `#[inject(state)]`, `#[inject(state = "key")]` and
///   `#[inject(tool_call_id)]` parameters are filled from the call's
///   `ToolContext` (the whole graph state, one key of it, the tool call id):
///   they are listed in `injected_args()`, hidden from the model-visible
///   `schema()`, and their types need only deserialize from that JSON.
/// - A parameter of type `ToolContext` receives the call's context, for the
///   store, the runtime or any other extension (`ToolContext::get`). It is not
///   an argument.
///
/// # Return type
///
/// `Result<O, E>` (any type named `Result`) where `E: Into<ToolError>`
/// (`ToolError` itself, or your own error type with an
/// `impl From<MyError> for ToolError`), or a plain `O`, which makes a tool
/// that never fails once its arguments are read. `O` is anything
/// `Into<ToolOutput>` (`String`, `&'static str`, `Content`,
/// `serde_json::Value`, `ToolOutput`: the text as it is) or any other
/// `Serialize` type (its compact JSON text).
///
/// # Rejected at compile time
///
/// Functions that are not `async`, `unsafe fn`s, generic functions (`impl
/// Trait` parameters included), methods taking `self`, pattern parameters
/// (`(a, b): (i64, i64)`), borrowed parameters (`&str`), more than one
/// `ToolContext` parameter, functions returning `()`, a missing or empty
/// description, unknown or repeated options, and unknown `inject` sources.
///
/// # Example
///
/// ```
/// use serde_json::json;
/// use stategraph_llm::{Tool, ToolContext, ToolError};
/// use stategraph_macros::tool;
///
/// /// Adds two numbers.
/// #[tool]
/// async fn add(
///     /// The first number.
///     a: i64,
///     /// The second number.
///     b: i64,
/// ) -> Result<String, ToolError> {
///     Ok((a + b).to_string())
/// }
///
/// let schema = AddTool.schema();
/// assert_eq!(schema.name, "add");
/// assert_eq!(schema.description, "Adds two numbers.");
/// assert_eq!(schema.parameters["required"], json!(["a", "b"]));
/// assert_eq!(schema.parameters["properties"]["a"]["description"], "The first number.");
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let out = AddTool.call(json!({"a": 2, "b": 3}), ToolContext::default()).await?;
/// assert_eq!(out.content.text(), "5");
/// // The function is still there.
/// assert_eq!(add(2, 3).await?, "5");
///
/// let err = AddTool.call(json!({"a": "two", "b": 3}), ToolContext::default()).await.unwrap_err();
/// assert!(err.is_invalid_args());
/// assert!(err.to_string().contains("`a`"), "{err}");
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
///
/// A sync function is an error:
///
/// ```compile_fail
/// /// Adds two numbers.
/// #[stategraph_macros::tool]
/// fn add(a: i64, b: i64) -> String {
///     (a + b).to_string()
/// }
/// ```
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(attr.into(), item.into()).into()
}
