//! Long-term memory for stategraph: LangGraph's `BaseStore` in Rust.
#![doc = include_str!("../README.md")]

mod error;
mod filter;
mod index;
mod memory;
mod options;
mod path;
pub mod query;
pub mod sql;
mod store;
mod tool;
mod types;

pub use error::{Result, StoreError};
pub use filter::Filter;
pub use index::{IndexConfig, best_score};
pub use memory::{InMemoryStore, Sweeper};
pub use options::{Clock, StoreOptions, TtlConfig};
pub use path::texts_at_path;
pub use store::{DynStore, SharedStore, Store, StoreCapabilities};
pub use tool::ToolContextStore;
pub use types::{
    GetOp, IndexFields, Item, ListNamespacesOp, MatchCondition, Namespace, Op, OpResult, PutOp,
    SearchItem, SearchOp, Ttl, ns, refuse_deep_values, validate_key, validate_namespace,
    validate_user_namespace, validate_value,
};
