//! Typed state: the [`State`] trait `#[derive(State)]` implements, and the
//! helpers the generated code calls.

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use stategraph_core::{Value, ValueError};
use stategraph_pregel::ChannelValues;

use crate::{FromInput, IntoNodeOutput, Schema};

/// A typed graph state: a struct whose named fields are the state keys.
///
/// Derive it with `#[derive(State)]` (the derive shares the trait's name, like
/// serde's). For `struct Overall` the derive generates:
///
/// - `Overall::schema()`: one key per field, in field order. A field is a
///   `LastValue<T>` channel unless `#[state(reducer = ...)]` or
///   `#[state(channel = "...")]` says otherwise. Keys follow serde's
///   `rename` / `rename_all`, so the state's JSON form and its keys agree.
/// - `OverallUpdate`, what a node returns: every field `Option<T>`, a builder
///   method per field. A key that does not exist or a value of the wrong type
///   does not compile. The values are moved into the state, never cloned.
/// - `OverallView`, what a node takes: every field an `Arc<T>` shared with the
///   graph's channels, so reading the state copies nothing, however large the
///   values. `to_state()` clones it into an `Overall`; `into_state()` moves,
///   cloning only the values still shared.
///
/// `Overall` itself also works as a node input (any deserializable type
/// does), but it is decoded from the state's JSON form: a full copy on every
/// step, and keys the state does not hold need `#[serde(default)]`. Prefer the
/// view.
///
/// A key the state does not hold reads as its type's `Default` in the view
/// (a key nobody wrote yet, an ephemeral key outside its step, a key outside a
/// node's `input_keys`), which is why every field type must be `Default`.
/// Field types must also be `Serialize + DeserializeOwned + Clone + Debug +
/// Send + Sync + 'static` (channels store and checkpoint them).
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use stategraph_graph::{NodeError, Send, State, StateGraph, END, START};
///
/// /// Keeps the longer of two strings (a custom reducer).
/// fn longest(current: String, write: String) -> String {
///     if write.len() > current.len() { write } else { current }
/// }
///
/// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// struct Overall {
///     subjects: Vec<String>,               // LastValue<Vec<String>>
///     #[state(reducer = append)]           // stategraph_channels::reducers::append
///     jokes: Vec<String>,
///     #[state(reducer = longest)]          // any path to `fn(T, T) -> T`
///     best: String,
/// }
///
/// #[derive(Clone, Debug, Serialize, Deserialize)]
/// struct Subject {
///     subject: String,
/// }
///
/// // One `generate` task per subject, each with its own typed input.
/// fn fan_out(state: &OverallView) -> Vec<Send> {
///     state.subjects.iter().map(|s| Send::new("generate", Subject { subject: s.clone() })).collect()
/// }
///
/// async fn generate(input: Subject) -> Result<OverallUpdate, NodeError> {
///     let joke = format!("a joke about {}", input.subject);
///     Ok(OverallUpdate::default().jokes(vec![joke.clone()]).best(joke))
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let mut graph = StateGraph::typed::<Overall>();
/// graph.add_node("generate", generate)?;
/// graph.add_conditional_edges(START, fan_out, None)?;
/// graph.add_edge("generate", END)?;
/// let app = graph.compile()?;
///
/// // Only the fields set are written (`OverallUpdate`, as LangGraph's input dict).
/// let input = OverallUpdate::default().subjects(vec!["cats".into(), "elephants".into()]);
/// let out = app.invoke_typed(input, &Default::default()).await?.done()?;
/// assert_eq!(out.jokes, ["a joke about cats", "a joke about elephants"]);
/// assert_eq!(out.best, "a joke about elephants");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub trait State: Sized + std::marker::Send + Sync + 'static {
    /// The partial update a node returns (`{Name}Update`).
    type Update: IntoNodeOutput
        + From<Self>
        + Into<ChannelValues>
        + Default
        + Clone
        + fmt::Debug
        + std::marker::Send
        + Sync
        + 'static;

    /// The zero-copy read view a node takes (`{Name}View`).
    type View: FromInput + From<Self> + Into<Self> + Clone + fmt::Debug + Sync + 'static;

    /// The state's keys and the channel of each, in field order.
    fn schema() -> Schema;

    /// Reads a state map into a view without copying live values; keys
    /// missing from the map read as their type's default.
    ///
    /// # Errors
    /// A value that does not decode to its field's type, naming the key.
    fn view(values: &ChannelValues) -> Result<Self::View, ValueError>;

    /// Reads a map of keys into an update: a field is set when its key is in
    /// the map (an `updates` chunk's payload, a node's output).
    ///
    /// # Errors
    /// A value that does not decode to its field's type, naming the key.
    fn update(values: &ChannelValues) -> Result<Self::Update, ValueError>;

    /// The typed state of a state map: a snapshot's `values`, a `values`
    /// chunk, a run's output. Keys missing from the map (or a `null` map)
    /// read as their type's default.
    ///
    /// ```
    /// # use serde::{Deserialize, Serialize};
    /// # use stategraph_core::Value;
    /// # use stategraph_graph::State;
    /// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    /// struct Counter {
    ///     count: u32,
    ///     label: String,
    /// }
    ///
    /// let state = Counter::read(&Value::from_json(serde_json::json!({"count": 2})))?;
    /// assert_eq!((state.count, state.label.as_str()), (2, ""));
    /// # Ok::<(), stategraph_core::ValueError>(())
    /// ```
    ///
    /// # Errors
    /// A value that is not a map, or does not decode to its field's type
    /// (naming the key).
    fn read(values: &Value) -> Result<Self, ValueError> {
        from_output(values.clone())
    }

    /// The typed update of a map of keys, only the keys present set: an
    /// `updates` chunk's payload for one node.
    ///
    /// # Errors
    /// A value that is not a map, or does not decode to its field's type
    /// (naming the key).
    fn read_update(values: &Value) -> Result<Self::Update, ValueError> {
        Self::update(&*state_map(values.clone())?)
    }
}

/// The state map a node or `Send` received: the live map itself when it is
/// one, otherwise the input decoded as a JSON object.
///
/// # Errors
/// The input is not an object.
#[doc(hidden)]
pub fn state_values(input: Value) -> Result<Arc<ChannelValues>, ValueError> {
    input.decode::<ChannelValues>()
}

/// Decodes the value of `key` (shared without copying when it is a live `T`);
/// an error names the key in its path.
///
/// # Errors
/// The value does not decode to `T`.
#[doc(hidden)]
pub fn decode_key<T: DeserializeOwned + std::marker::Send + Sync + 'static>(
    key: &str,
    value: &Value,
) -> Result<Arc<T>, ValueError> {
    value.clone().decode::<T>().map_err(|err| at_key(key, err))
}

/// The value a key the state does not hold reads as.
#[doc(hidden)]
pub fn default_value<T: Default>() -> Arc<T> {
    Arc::new(T::default())
}

/// Prefixes an error's path with the key it happened at.
fn at_key(key: &str, err: ValueError) -> ValueError {
    let join = |path: String| match path.as_str() {
        "." | "" => key.to_owned(),
        p if p.starts_with('[') => format!("{key}{p}"),
        p => format!("{key}.{p}"),
    };
    match err {
        ValueError::Decode {
            expected,
            path,
            message,
        } => ValueError::Decode {
            expected,
            path: join(path),
            message,
        },
        ValueError::Serialize {
            type_name,
            path,
            message,
        } => ValueError::Serialize {
            type_name,
            path: join(path),
            message,
        },
        other => other,
    }
}

/// A node input that does not decode into the node's input type: a
/// `ValidationError` naming the key and the path, or a `ValueError` for a
/// value that cannot be read at all ([`ValueError::class`]).
#[doc(hidden)]
pub fn invalid_input(err: ValueError) -> stategraph_pregel::NodeError {
    stategraph_pregel::NodeError::with_source(err.class(), err)
}

/// The state map of a run's output or a chunk: `null` (no output) is the
/// empty map.
fn state_map(output: Value) -> Result<Arc<ChannelValues>, ValueError> {
    if output.as_json().is_some_and(serde_json::Value::is_null) {
        return Ok(Arc::default());
    }
    state_values(output)
}

/// The typed state of a run's output: `null` (no output) reads as every key
/// missing.
pub(crate) fn from_output<S: State>(output: Value) -> Result<S, ValueError> {
    let values = state_map(output)?;
    let view = S::view(&values)?;
    // Release the map first, so `into` can move values nobody else shares.
    drop(values);
    Ok(view.into())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn decode_errors_name_the_key() {
        let value = Value::from_json(json!(["a", 1]));
        let err = decode_key::<Vec<String>>("jokes", &value).unwrap_err();
        assert!(err.to_string().contains("at `jokes[1]`"), "{err}");
        let value = Value::from_json(json!({"x": "no"}));
        let err = decode_key::<std::collections::BTreeMap<String, u8>>("m", &value).unwrap_err();
        assert!(err.to_string().contains("at `m.x`"), "{err}");
        let err = decode_key::<u8>("n", &Value::from_json(json!("no"))).unwrap_err();
        assert!(err.to_string().contains("at `n`"), "{err}");
    }

    #[test]
    fn live_values_are_shared() {
        let live = Value::new(vec![1_u8, 2]);
        let a = decode_key::<Vec<u8>>("k", &live).unwrap();
        let b = decode_key::<Vec<u8>>("k", &live).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
    }

    #[test]
    fn non_objects_are_not_state_maps() {
        assert!(state_values(Value::from_json(json!([1]))).is_err());
        let map = state_values(Value::from_json(json!({"a": 1}))).unwrap();
        assert_eq!(map.json("a"), Some(json!(1)));
    }
}
