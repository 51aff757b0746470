//! `#[derive(State)]`: typed graph state for stategraph.
#![doc = include_str!("../README.md")]

mod attrs;
mod expand;

use proc_macro::TokenStream;

/// Derives `State` for a struct with named fields: the graph's schema (one
/// key per field), a `{Name}Update` partial update nodes return, and a
/// `{Name}View` zero-copy read view nodes take.
///
/// Use it through `stategraph_graph::State` (the trait and the derive share
/// the name, like serde's); the generated code names only
/// `::stategraph_graph`, so a crate using the derive needs `stategraph-graph`
/// (and serde for the struct's own `Serialize`/`Deserialize`) and nothing else.
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
///   code (default `::stategraph_graph`), for crates that re-export it.
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
