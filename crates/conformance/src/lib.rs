//! The behaviour suites every stategraph checkpoint saver and store runs.
#![doc = include_str!("../README.md")]
// A test-support crate: cases report failures by panicking, as assertions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod backend;
pub mod copy_thread;
pub mod delete_for_runs;
pub mod delete_thread;
pub mod extra;
pub mod fixtures;
pub mod get_tuple;
mod guarded;
pub mod head;
pub mod limits;
pub mod list;
pub mod prune;
pub mod put;
pub mod put_writes;
pub mod store;

use stategraph_checkpoint::{CheckpointSaver, SaverCapabilities};

pub use guarded::Guarded;

/// The tokio the generated tests run on, so backends need not name it.
#[doc(hidden)]
pub use tokio;

/// Asserts that `saver` claims exactly the `declared` extended capabilities:
/// a backend can neither claim a capability whose cases it does not run nor
/// run cases of a capability it does not claim.
pub fn assert_declared_capabilities<S: CheckpointSaver>(saver: &S, declared: SaverCapabilities) {
    let claimed = saver.capabilities();
    assert_eq!(
        claimed, declared,
        "the saver claims {claimed:?} but the conformance run declares {declared:?}: \
         list exactly the claimed extended capabilities in `extended: [...]`"
    );
}

/// Generates the conformance tests of a checkpoint saver.
///
/// `checkpoint_conformance!(factory)` or
/// `checkpoint_conformance!(factory, extended: [delete_for_runs, copy_thread, prune])`,
/// where `factory` is an `async fn() -> S` with `S: CheckpointSaver`, expands
/// in the calling module to:
///
/// - one `#[tokio::test]` per case, in one module per capability (`put`,
///   `put_writes`, `get_tuple`, `list`, `delete_thread`, `backend`, `extra`,
///   `limits`, and each listed extended capability), named after the case
///   (`put_writes::cp_pw_07_regular_writes_are_idempotent`); every test
///   creates its own saver through the factory;
/// - `capabilities_match_declaration`, which asserts that the saver claims
///   exactly the listed extended capabilities.
///
/// Invoke it once per module. The backend needs no tokio dependency of its
/// own. Two cases of the limit table move 64 MiB values and are not
/// generated: call [`limits::metadata_size_limit`] once per backend, and
/// [`limits::serialized_value_size_limit`] too when it serializes values.
#[macro_export]
macro_rules! checkpoint_conformance {
    ($factory:path, extended: [$($extended:ident),* $(,)?] $(,)?) => {
        #[allow(dead_code)]
        async fn __stategraph_conformance_saver() -> impl $crate::__private::CheckpointSaver {
            $factory().await
        }

        $crate::__conformance_group!(put);
        $crate::__conformance_group!(put_writes);
        $crate::__conformance_group!(get_tuple);
        $crate::__conformance_group!(list);
        $crate::__conformance_group!(delete_thread);
        $crate::__conformance_group!(backend);
        $crate::__conformance_group!(extra);
        $crate::__conformance_group!(limits);
        $($crate::__conformance_group!($extended);)*

        #[allow(unused_imports)]
        use $crate::tokio as __stategraph_conformance_tokio;

        #[$crate::tokio::test(crate = "__stategraph_conformance_tokio")]
        async fn capabilities_match_declaration() {
            let saver = __stategraph_conformance_saver().await;
            #[allow(unused_mut)]
            let mut declared = $crate::__private::SaverCapabilities::base();
            $(declared = $crate::__conformance_claim!(declared, $extended);)*
            $crate::assert_declared_capabilities(&saver, declared);
        }
    };
    ($factory:path $(,)?) => {
        $crate::checkpoint_conformance!($factory, extended: []);
    };
}

/// Implementation detail of [`checkpoint_conformance!`].
#[doc(hidden)]
pub mod __private {
    pub use stategraph_checkpoint::{CheckpointSaver, SaverCapabilities};
}

/// Implementation detail of [`checkpoint_conformance!`]: the capability an
/// extended group claims.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_claim {
    ($caps:ident, delete_for_runs) => {
        $caps.with_delete_for_runs()
    };
    ($caps:ident, copy_thread) => {
        $caps.with_copy_thread()
    };
    ($caps:ident, prune) => {
        $caps.with_prune()
    };
    ($caps:ident, put_if_head) => {
        $caps.with_put_if_head()
    };
    // Unknown names are reported by `__conformance_group!`.
    ($caps:ident, $other:ident) => {
        $caps
    };
}

/// Implementation detail of [`checkpoint_conformance!`]: the cases of each
/// capability. Every `pub async fn cp_*` of the case modules is listed here
/// (checked by a unit test).
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_group {
    (put) => {
        $crate::__conformance_tests!(put:
            cp_put_01_put_returns_stored_config,
            cp_put_02_get_returns_stored_values,
            cp_put_03_value_types_round_trip,
            cp_put_04_channel_versions_round_trip,
            cp_put_05_versions_seen_round_trips,
            cp_put_06_metadata_round_trips,
            cp_put_07_root_namespace,
            cp_put_08_child_namespace,
            cp_put_09_default_namespace,
            cp_put_10_chain_all_retrievable,
            cp_put_11_threads_do_not_collide,
            cp_put_12_parent_config,
            cp_put_13_incremental_versions_reconstruct,
            cp_put_14_new_channel_added,
            cp_put_15_dropped_channel_absent,
            cp_put_16_run_id_round_trips,
            cp_put_17_nested_versions_seen,
        );
    };
    (put_writes) => {
        $crate::__conformance_tests!(put_writes:
            cp_pw_01_single_write_is_pending,
            cp_pw_02_multiple_writes_in_one_call,
            cp_pw_03_tasks_do_not_collide,
            cp_pw_04_write_carries_task_id,
            cp_pw_05_object_value_round_trips,
            cp_pw_06_task_path_is_accepted,
            cp_pw_07_regular_writes_are_idempotent,
            cp_pw_08_special_channels,
            cp_pw_09_writes_are_scoped_by_namespace,
            cp_pw_10_writes_belong_to_their_checkpoint,
        );
    };
    (get_tuple) => {
        $crate::__conformance_tests!(get_tuple:
            cp_gt_01_missing_thread_is_none,
            cp_gt_02_latest_is_newest,
            cp_gt_03_exact_id_lookup,
            cp_gt_04_config_carries_resolved_id,
            cp_gt_05_checkpoint_fields_round_trip,
            cp_gt_06_input_metadata_round_trips,
            cp_gt_07_parent_config,
            cp_gt_08_pending_writes_included,
            cp_gt_09_namespaces_are_separate,
            cp_gt_10_unknown_id_is_none,
        );
    };
    (list) => {
        $crate::__conformance_tests!(list:
            cp_ls_01_list_thread,
            cp_ls_02_threads_are_separate,
            cp_ls_03_namespace_filter,
            cp_ls_04_newest_first,
            cp_ls_05_filter_by_source,
            cp_ls_06_filter_by_step,
            cp_ls_07_filter_keys_combine,
            cp_ls_08_filter_without_match,
            cp_ls_09_filter_by_custom_key,
            cp_ls_10_before_is_exclusive,
            cp_ls_11_limit,
            cp_ls_12_before_with_limit,
            cp_ls_13_filter_within_thread,
            cp_ls_14_filter_on_empty_thread,
            cp_ls_15_list_includes_writes,
            cp_ls_16_root_namespace_excludes_children,
        );
    };
    (delete_thread) => {
        $crate::__conformance_tests!(delete_thread:
            cp_dt_01_delete_removes_checkpoints,
            cp_dt_02_delete_removes_writes,
            cp_dt_03_delete_removes_all_namespaces,
            cp_dt_04_delete_keeps_other_threads,
            cp_dt_05_delete_missing_thread_is_noop,
        );
    };
    (backend) => {
        $crate::__conformance_tests!(backend:
            cp_bk_02_search_all_threads_by_source,
            cp_bk_03_search_by_nested_object,
            cp_bk_04_search_all_threads_unfiltered,
            cp_bk_05_search_without_match,
            cp_bk_06_thread_without_namespace_lists_all,
            cp_bk_07_before_across_threads,
            cp_bk_08_limit_within_thread,
            cp_bk_09_limit_across_threads,
            cp_bk_11_filter_keys_with_hyphens_and_digits,
            cp_bk_12_nul_characters_are_stripped,
            cp_bk_17_caller_copies_are_independent,
            cp_bk_18_writes_before_checkpoint,
            cp_bk_19_reput_replaces_or_conflicts,
            cp_bk_21_forks_at_the_same_counter,
            cp_bk_23_versioned_channel_without_value_is_absent,
        );
    };
    (extra) => {
        $crate::__conformance_tests!(extra:
            cp_ext_01_concurrent_writes_are_all_kept,
            cp_ext_02_same_write_key_keeps_one_row,
            cp_ext_07_pagination_while_appending,
            cp_ext_09_filter_semantics,
            cp_ext_09_non_object_filter_is_invalid_input,
            cp_ext_10_value_fidelity,
            cp_ext_12_writes_for_unstored_checkpoint,
            cp_ext_21_missing_value_is_an_integrity_error,
            cp_ext_21_list_goes_on_past_an_unreadable_checkpoint,
            cp_ext_22_large_strings_round_trip,
        );
    };
    (limits) => {
        $crate::__conformance_tests!(limits:
            cp_lim_01_ids_at_the_limit_round_trip,
            cp_lim_02_ids_over_the_limit_are_refused,
            cp_lim_03_nul_in_ids_is_refused,
            cp_lim_04_metadata_depth_is_limited,
            cp_lim_05_nul_in_metadata_keys_is_stripped,
        );
    };
    (delete_for_runs) => {
        $crate::__conformance_tests!(delete_for_runs:
            cp_dr_01_delete_one_run,
            cp_dr_02_delete_several_runs,
            cp_dr_03_other_runs_are_kept,
            cp_dr_04_deleted_checkpoint_is_not_found,
            cp_dr_05_empty_run_list_is_noop,
            cp_dr_06_unknown_run_is_noop,
            cp_dr_07_all_namespaces,
        );
    };
    (copy_thread) => {
        $crate::__conformance_tests!(copy_thread:
            cp_ct_01_copy_lists_all,
            cp_ct_02_copy_keeps_values,
            cp_ct_03_copy_keeps_metadata,
            cp_ct_04_copy_keeps_namespaces,
            cp_ct_05_copy_keeps_writes,
            cp_ct_06_copy_keeps_ids_and_order,
            cp_ct_07_copy_leaves_source_unchanged,
            cp_ct_08_copy_missing_source,
            cp_ct_09_copy_keeps_large_values,
        );
    };
    (prune) => {
        $crate::__conformance_tests!(prune:
            cp_pr_01_keep_latest,
            cp_pr_02_keep_latest_per_thread,
            cp_pr_03_keep_latest_per_namespace,
            cp_pr_04_keep_latest_keeps_writes,
            cp_pr_05_delete_strategy,
            cp_pr_06_other_threads_untouched,
            cp_pr_07_no_threads_is_noop,
            cp_pr_08_missing_thread_is_noop,
            cp_pr_09_keep_latest_keeps_large_values,
        );
    };
    (put_if_head) => {
        $crate::__conformance_tests!(head:
            cp_hd_01_first_checkpoint_without_parent,
            cp_hd_02_children_of_the_head_extend_the_thread,
            cp_hd_03_stale_parent_is_a_conflict,
            cp_hd_04_missing_parent_on_a_started_thread_conflicts,
            cp_hd_05_one_of_eight_concurrent_writers_wins,
            cp_hd_06_namespaces_have_separate_heads,
            cp_hd_07_plain_put_still_forks,
            cp_hd_08_ids_below_the_parent_are_refused,
        );
    };
    ($other:ident) => {
        ::core::compile_error!(::core::concat!(
            "unknown extended capability `",
            ::core::stringify!($other),
            "`: expected `delete_for_runs`, `copy_thread`, `prune` or `put_if_head`",
        ));
    };
}

/// Implementation detail of [`checkpoint_conformance!`]: one module of tests
/// calling the case functions of `$crate::$group`.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_tests {
    ($group:ident: $($case:ident),+ $(,)?) => {
        mod $group {
            #[allow(unused_imports)]
            use $crate::tokio as __stategraph_conformance_tokio;

            $(
                #[$crate::tokio::test(crate = "__stategraph_conformance_tokio")]
                async fn $case() {
                    let saver = super::__stategraph_conformance_saver().await;
                    $crate::$group::$case(&saver).await;
                }
            )+
        }
    };
}

#[cfg(test)]
mod tests {
    /// The case modules and their sources.
    const SOURCES: &[(&str, &str)] = &[
        ("put", include_str!("put.rs")),
        ("put_writes", include_str!("put_writes.rs")),
        ("get_tuple", include_str!("get_tuple.rs")),
        ("list", include_str!("list.rs")),
        ("delete_thread", include_str!("delete_thread.rs")),
        ("delete_for_runs", include_str!("delete_for_runs.rs")),
        ("copy_thread", include_str!("copy_thread.rs")),
        ("prune", include_str!("prune.rs")),
        ("head", include_str!("head.rs")),
        ("backend", include_str!("backend.rs")),
        ("extra", include_str!("extra.rs")),
        ("limits", include_str!("limits.rs")),
    ];

    fn cases(source: &str) -> Vec<&str> {
        source
            .lines()
            .filter_map(|line| line.strip_prefix("pub async fn "))
            .filter_map(|rest| rest.split('<').next())
            .filter(|name| name.starts_with("cp_"))
            .collect()
    }

    #[test]
    fn every_case_is_generated_by_the_macro() {
        let lib = include_str!("lib.rs");
        let mut total = 0;
        for (module, source) in SOURCES {
            let cases = cases(source);
            assert!(!cases.is_empty(), "module {module} has no cases");
            let group = lib
                .split(&format!("__conformance_tests!({module}:\n"))
                .nth(1)
                .and_then(|rest| rest.split(");").next())
                .unwrap_or_else(|| panic!("no macro group for module {module}"));
            let listed: Vec<&str> = group
                .split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .collect();
            assert_eq!(
                listed, cases,
                "macro group {module} must list exactly the module's cases, in order"
            );
            total += cases.len();
        }
        // 81 official cases (CP-DH is not claimed) and 2 on large strings
        // (CP-CT-09, CP-PR-09), 15 CP-BK, 10 CP-EXT, 8 CP-HD, 5 CP-LIM.
        assert_eq!(total, 121);
    }

    #[test]
    fn case_names_carry_their_ids() {
        for (module, source) in SOURCES {
            for case in cases(source) {
                let mut parts = case.split('_');
                let (prefix, kind, number) = (parts.next(), parts.next(), parts.next());
                assert_eq!(prefix, Some("cp"), "{module}::{case}");
                let id = format!(
                    "CP-{}-{}",
                    kind.unwrap_or_default().to_uppercase(),
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
