//! The store conformance kit: the behaviour every
//! [`Store`] backend shares, from the store
//! checklist (`ST-NS`, `ST-KV`, `ST-BA`, `ST-SR`, `ST-VS`, `ST-LN`, `ST-TTL`)
//! and the limit table (`ST-LIM`, docs/LIMITS.md).
//!
//! A backend implements [`StoreHarness`] (a fresh store from
//! [`StoreOptions`], and a sweep of expired items) and invokes
//! [`store_conformance!`](crate::store_conformance). Every case is a plain
//! `pub async fn st_<area>_<nn>_<name>(h: &impl StoreHarness)` that builds
//! the stores it needs through the harness and panics with a message naming
//! its id when the store breaks it. Time-dependent cases move a
//! [`ManualClock`] instead of sleeping.

pub mod batch;
pub mod fixtures;
pub mod kv;
pub mod limits;
pub mod list;
pub mod namespaces;
pub mod scenarios;
pub mod search;
pub mod ttl;
pub mod vector;

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, TimeZone, Utc};
use stategraph_store::{Clock, Store, StoreCapabilities, TtlConfig};

/// How the kit asks for a store: `stategraph-store`'s one options type
/// (no index, no TTL and the system clock from [`StoreOptions::new`]),
/// which every store takes whole with its `with_options`.
pub use stategraph_store::StoreOptions;

/// How a backend gives the kit stores.
///
/// ```
/// use stategraph_conformance::store::{StoreHarness, StoreOptions};
/// use stategraph_store::InMemoryStore;
///
/// struct Harness;
///
/// impl StoreHarness for Harness {
///     type Store = InMemoryStore;
///
///     async fn store(&self, options: StoreOptions) -> InMemoryStore {
///         InMemoryStore::new().with_options(options)
///     }
///
///     async fn sweep<'a>(&'a self, store: &'a InMemoryStore) -> usize {
///         store.sweep_expired()
///     }
/// }
/// ```
pub trait StoreHarness: Send + Sync {
    /// The store under test.
    type Store: Store;

    /// A fresh, empty, isolated store built with these options: the
    /// semantic index and the TTL configuration when given (a store built
    /// without a TTL configuration has no TTL support), reading the time
    /// from `options.clock` for timestamps and expiry.
    fn store(&self, options: StoreOptions) -> impl Future<Output = Self::Store> + Send;

    /// Deletes expired items now; returns how many.
    fn sweep<'a>(&'a self, store: &'a Self::Store) -> impl Future<Output = usize> + Send + 'a;
}

/// A clock the cases move by hand, so TTL cases never sleep. Clones share
/// the time; [`clock`](Self::clock) (or `Clock::from`) gives the
/// [`Clock`] a store reads.
///
/// ```
/// use stategraph_conformance::store::ManualClock;
/// use stategraph_store::Clock;
///
/// let manual = ManualClock::new();
/// let clock: Clock = manual.clone().into();
/// let start = clock();
/// manual.advance_minutes(1.5);
/// assert_eq!((clock() - start).num_seconds(), 90);
/// ```
#[derive(Clone, Debug)]
pub struct ManualClock(Arc<Mutex<DateTime<Utc>>>);

impl ManualClock {
    /// A clock at 2030-01-01T00:00:00Z (whole seconds, so every backend
    /// stores it exactly).
    pub fn new() -> Self {
        let start = Utc
            .with_ymd_and_hms(2030, 1, 1, 0, 0, 0)
            .single()
            .unwrap_or_else(Utc::now);
        Self::starting_at(start)
    }

    /// A clock at `start`.
    pub fn starting_at(start: DateTime<Utc>) -> Self {
        Self(Arc::new(Mutex::new(start)))
    }

    /// The time now.
    pub fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves the time forward by `by`.
    pub fn advance(&self, by: chrono::Duration) {
        let mut now = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *now += by;
    }

    /// Moves the time forward by `seconds` (fractions kept to the
    /// millisecond).
    pub fn advance_seconds(&self, seconds: f64) {
        self.advance(chrono::Duration::milliseconds(
            (seconds * 1000.0).round() as i64
        ));
    }

    /// Moves the time forward by `minutes` (fractions kept to the
    /// millisecond).
    pub fn advance_minutes(&self, minutes: f64) {
        self.advance_seconds(minutes * 60.0);
    }

    /// The [`Clock`] a store reads.
    pub fn clock(&self) -> Clock {
        let shared = self.clone();
        Arc::new(move || shared.now())
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl From<ManualClock> for Clock {
    fn from(manual: ManualClock) -> Self {
        manual.clock()
    }
}

impl From<&ManualClock> for Clock {
    fn from(manual: &ManualClock) -> Self {
        manual.clock()
    }
}

/// Asserts that a store built with both an index and a TTL configuration
/// claims exactly the `declared` capabilities: a backend can neither claim
/// a capability whose cases it does not run nor run cases of a capability
/// it does not claim.
pub async fn assert_declared_store_capabilities<H: StoreHarness>(
    h: &H,
    declared: StoreCapabilities,
) {
    let options = StoreOptions::new()
        .with_index(fixtures::index(["$"]))
        .with_ttl(TtlConfig::default());
    let claimed = h.store(options).await.capabilities();
    assert_eq!(
        claimed, declared,
        "a store built with an index and a TTL config claims {claimed:?} but the conformance \
         run declares {declared:?}: list exactly the claimed capabilities in `capabilities: [...]`"
    );
}

/// Generates the conformance tests of a store backend.
///
/// `store_conformance!(harness)` or
/// `store_conformance!(harness, capabilities: [vector_search, ttl])`, where
/// `harness` is an expression of a type implementing
/// [`StoreHarness`](crate::store::StoreHarness), expands in the calling
/// module to a module `store` holding:
///
/// - one `#[tokio::test]` per case, in one module per area (`namespaces`,
///   `kv`, `batch`, `search`, `list`, `limits`, `unconfigured`, and each listed
///   capability: `vector_search`, `ttl`), named after the case
///   (`store::search::st_sr_07_numbers_compare_as_numbers`); every test
///   evaluates the harness expression and builds its own stores;
/// - `capabilities_match_declaration`, which asserts that a store built
///   with an index and a TTL configuration claims exactly the listed
///   capabilities.
///
/// The `unconfigured` cases run for every backend: what a store built
/// without an index (ST-VS-01) or without a TTL configuration (ST-TTL-01)
/// does. Invoke the macro once per module; the backend needs no tokio
/// dependency of its own. One case of the limit table moves a 64 MiB value
/// and is not generated: call [`limits::value_size_limit`] once per
/// backend.
#[macro_export]
macro_rules! store_conformance {
    ($harness:expr, capabilities: [$($capability:ident),* $(,)?] $(,)?) => {
        #[allow(dead_code)]
        fn __stategraph_store_harness() -> impl $crate::store::StoreHarness {
            $harness
        }

        mod store {
            $crate::__store_conformance_group!(namespaces);
            $crate::__store_conformance_group!(kv);
            $crate::__store_conformance_group!(batch);
            $crate::__store_conformance_group!(search);
            $crate::__store_conformance_group!(list);
            $crate::__store_conformance_group!(limits);
            $crate::__store_conformance_group!(unconfigured);
            $($crate::__store_conformance_group!($capability);)*

            #[allow(unused_imports)]
            use $crate::tokio as __stategraph_conformance_tokio;

            #[$crate::tokio::test(crate = "__stategraph_conformance_tokio")]
            async fn capabilities_match_declaration() {
                let harness = super::__stategraph_store_harness();
                #[allow(unused_mut)]
                let mut declared = $crate::store::__private::StoreCapabilities::default();
                $($crate::__store_conformance_claim!(declared, $capability);)*
                $crate::store::assert_declared_store_capabilities(&harness, declared).await;
            }
        }
    };
    ($harness:expr $(,)?) => {
        $crate::store_conformance!($harness, capabilities: []);
    };
}

/// Implementation detail of [`store_conformance!`](crate::store_conformance).
#[doc(hidden)]
pub mod __private {
    pub use stategraph_store::StoreCapabilities;
}

/// Implementation detail of [`store_conformance!`](crate::store_conformance):
/// sets the flag a capability claims.
#[doc(hidden)]
#[macro_export]
macro_rules! __store_conformance_claim {
    ($caps:ident, vector_search) => {
        $caps.vector_search = true
    };
    ($caps:ident, ttl) => {
        $caps.ttl = true
    };
    // Unknown names are reported by `__store_conformance_group!`.
    ($caps:ident, $other:ident) => {};
}

/// Implementation detail of [`store_conformance!`](crate::store_conformance):
/// the cases of each group, as `source_module::case`. Every
/// `pub async fn st_*` of the case modules is listed here exactly once
/// (checked by a unit test).
#[doc(hidden)]
#[macro_export]
macro_rules! __store_conformance_group {
    (namespaces) => {
        $crate::__store_conformance_tests!(namespaces:
            namespaces::st_ns_01_empty_namespace_is_refused,
            namespaces::st_ns_02_dot_in_label_is_refused,
            namespaces::st_ns_03_empty_label_is_refused,
            namespaces::st_ns_05_reserved_root_is_refused,
            namespaces::st_ns_06_reserved_label_below_root_is_allowed,
            namespaces::st_ns_07_system_batch_may_use_reserved_root,
            namespaces::st_ns_08_trailing_newline_is_another_label,
            namespaces::st_ns_09_labels_are_case_sensitive,
            namespaces::st_ns_10_metacharacter_labels_are_literal,
        );
    };
    (kv) => {
        $crate::__store_conformance_tests!(kv:
            kv::st_kv_01_put_then_get,
            kv::st_kv_02_put_replaces_value,
            kv::st_kv_03_other_namespace_misses,
            kv::st_kv_04_delete_removes_item,
            kv::st_kv_05_delete_missing_is_noop,
            kv::st_kv_06_unicode_values_round_trip,
            kv::st_kv_07_update_preserves_created_at,
            kv::st_kv_08_value_edge_cases_round_trip,
            kv::st_kv_09_unusual_keys,
        );
    };
    (batch) => {
        $crate::__store_conformance_tests!(batch:
            batch::st_ba_01_mixed_batch_results_are_positional,
            batch::st_ba_02_reordered_mixed_batch,
            batch::st_ba_03_gets_in_order,
            batch::st_ba_04_puts_and_delete,
            batch::st_ba_05_searches_in_order,
            batch::st_ba_06_listings_in_order,
            batch::st_ba_07_last_put_of_a_key_wins,
            batch::st_ba_08_reads_see_the_store_before_the_batch,
            batch::st_ba_09_invalid_op_fails_whole_batch,
        );
    };
    (search) => {
        $crate::__store_conformance_tests!(search:
            search::st_sr_01_prefix_matches_whole_labels,
            search::st_sr_02_prefix_metacharacters_are_literal,
            search::st_sr_03_empty_prefix_matches_everything,
            search::st_sr_04_exact_match_filter,
            search::st_sr_05_list_values_compare_whole,
            search::st_sr_06_comparison_operators,
            search::st_sr_07_numbers_compare_as_numbers,
            search::st_sr_08_extreme_numeric_operands,
            search::st_sr_09_booleans_are_not_numbers,
            search::st_sr_10_string_values_are_literals,
            search::st_sr_11_injection_shaped_keys_are_refused,
            search::st_sr_12_hyphens_digits_and_nested_keys,
            search::st_sr_13_pagination_and_order,
            search::st_sr_14_integers_beyond_2_pow_53,
            search::st_sr_15_mixed_types_never_match,
        );
    };
    (list) => {
        $crate::__store_conformance_tests!(list:
            list::st_ln_01_prefix,
            list::st_ln_02_suffix,
            list::st_ln_03_prefix_and_suffix,
            list::st_ln_04_max_depth_truncates_and_dedupes,
            list::st_ln_05_limit_and_offset,
            list::st_ln_06_wildcards,
            list::st_ln_07_missing_and_exact_prefix,
            list::st_ln_08_wildcard_prefix_is_open_ended,
            list::st_ln_09_wildcard_suffix,
            list::st_ln_10_pages_follow_sorted_order,
            list::st_ln_11_max_depth_two,
            list::st_ln_12_no_conditions,
            list::st_ln_13_segment_boundaries,
            list::st_ln_14_metacharacter_labels,
            list::st_ln_15_wildcard_with_max_depth_dedupes,
        );
    };
    (limits) => {
        $crate::__store_conformance_tests!(limits:
            limits::st_lim_01_keys_and_namespaces_at_the_limit_round_trip,
            limits::st_lim_02_keys_and_namespaces_over_the_limit_are_refused,
            limits::st_lim_03_nul_in_labels_and_keys_is_refused,
            limits::st_lim_04_value_depth_is_limited,
        );
    };
    (unconfigured) => {
        $crate::__store_conformance_tests!(unconfigured:
            vector::st_vs_01_without_index_queries_only_filter,
            ttl::st_ttl_01_ttl_without_support_is_unsupported,
        );
    };
    (vector_search) => {
        $crate::__store_conformance_tests!(vector_search:
            vector::st_vs_01_index_enables_vector_search,
            vector::st_vs_02_query_ranks_documents,
            vector::st_vs_03_update_re_embeds,
            vector::st_vs_04_unindexed_puts_are_not_ranked,
            vector::st_vs_05_missing_fields_are_skipped,
            vector::st_vs_06_per_put_fields_override_default,
            vector::st_vs_07_field_paths,
            vector::st_vs_08_best_vector_scores_once,
            vector::st_vs_09_query_with_filter,
            vector::st_vs_10_query_pagination,
            vector::st_vs_11_odd_queries,
            vector::st_vs_12_score_is_cosine_similarity,
            vector::st_vs_13_match_among_many_siblings,
            vector::st_vs_14_non_ascii_queries,
            vector::st_vs_15_embedder_failure_stores_nothing,
            vector::st_vs_16_dimension_mismatch_is_an_error,
            vector::st_vs_17_delete_removes_vectors,
        );
    };
    (ttl) => {
        $crate::__store_conformance_tests!(ttl:
            ttl::st_ttl_02_default_ttl_expires,
            ttl::st_ttl_03_reads_extend_deadline,
            ttl::st_ttl_04_sweep_deletes_without_reads,
            ttl::st_ttl_05_per_item_ttls,
            ttl::st_ttl_06_explicit_never_beats_default,
            ttl::st_ttl_07_search_after_expiry,
            ttl::st_ttl_08_search_refreshes_only_results,
            ttl::st_ttl_09_reads_without_refresh,
            ttl::st_ttl_10_omit_expired_hides_rows,
            ttl::st_ttl_11_expired_rows_show_until_swept,
            ttl::st_ttl_12_expired_rows_are_not_resurrected,
            ttl::st_ttl_13_expiry_filters_before_paging,
            ttl::st_ttl_14_config_defaults_are_honoured,
            ttl::st_ttl_15_sub_minute_ttl,
            ttl::st_ttl_17_put_resets_deadline,
        );
    };
    ($other:ident) => {
        ::core::compile_error!(::core::concat!(
            "unknown store capability `",
            ::core::stringify!($other),
            "`: expected `vector_search` or `ttl`",
        ));
    };
}

/// Implementation detail of [`store_conformance!`](crate::store_conformance):
/// one module of tests calling the case functions of `$crate::store`.
#[doc(hidden)]
#[macro_export]
macro_rules! __store_conformance_tests {
    ($group:ident: $($module:ident :: $case:ident),+ $(,)?) => {
        mod $group {
            #[allow(unused_imports)]
            use $crate::tokio as __stategraph_conformance_tokio;

            $(
                #[$crate::tokio::test(crate = "__stategraph_conformance_tokio")]
                async fn $case() {
                    let harness = super::super::__stategraph_store_harness();
                    $crate::store::$module::$case(&harness).await;
                }
            )+
        }
    };
}

#[cfg(test)]
mod tests {
    /// The case modules and their sources.
    const SOURCES: &[(&str, &str)] = &[
        ("namespaces", include_str!("namespaces.rs")),
        ("kv", include_str!("kv.rs")),
        ("batch", include_str!("batch.rs")),
        ("search", include_str!("search.rs")),
        ("vector", include_str!("vector.rs")),
        ("list", include_str!("list.rs")),
        ("ttl", include_str!("ttl.rs")),
        ("limits", include_str!("limits.rs")),
    ];

    fn cases(source: &str) -> Vec<&str> {
        source
            .lines()
            .filter_map(|line| line.strip_prefix("pub async fn "))
            .filter_map(|rest| rest.split('(').next())
            .filter(|name| name.starts_with("st_"))
            .collect()
    }

    /// Every `module::case` the macro lists, in order.
    fn listed() -> Vec<(String, String)> {
        let source = include_str!("mod.rs");
        let macros = source
            .split("macro_rules! __store_conformance_group")
            .nth(1)
            .and_then(|rest| rest.split("macro_rules! __store_conformance_tests").next())
            .unwrap();
        macros
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter_map(|word| word.split_once("::"))
            .filter(|(module, case)| !module.is_empty() && case.starts_with("st_"))
            .map(|(module, case)| (module.to_owned(), case.to_owned()))
            .collect()
    }

    #[test]
    fn every_case_is_generated_by_the_macro() {
        let listed = listed();
        let mut total = 0;
        for (module, source) in SOURCES {
            let cases = cases(source);
            assert!(!cases.is_empty(), "module {module} has no cases");
            let in_macro: Vec<&str> = listed
                .iter()
                .filter(|(m, _)| m == module)
                .map(|(_, case)| case.as_str())
                .collect();
            assert_eq!(
                in_macro, cases,
                "the macro must list exactly the cases of module {module}, in order"
            );
            total += cases.len();
        }
        assert_eq!(listed.len(), total, "the macro lists unknown cases");
    }

    #[test]
    fn case_names_carry_their_ids() {
        for (module, source) in SOURCES {
            for case in cases(source) {
                let mut parts = case.split('_');
                let (prefix, area, number) = (parts.next(), parts.next(), parts.next());
                assert_eq!(prefix, Some("st"), "{module}::{case}");
                let id = format!(
                    "ST-{}-{}",
                    area.unwrap_or_default().to_uppercase(),
                    number.unwrap_or_default()
                );
                assert!(
                    source.contains(&format!("/// {id}: ")),
                    "{module}::{case} must document its id {id}"
                );
            }
        }
    }
}
