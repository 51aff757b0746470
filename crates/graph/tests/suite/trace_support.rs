//! Self-checks of the golden-trace test support (`support/mod.rs`): the id
//! normaliser and the loose comparison rules.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::json;
use support::{assert_trace, assert_trace_ids, messages_match, normalise_ids, py_str};

const T1: &str = "6f9619ff-8b86-4011-b42d-00c04fc964ff";
const T2: &str = "0a1b2c3d-0000-4000-8000-000000000002";
const C_OLD: &str = "1f0a0000-0000-6000-8000-000000000001";
const C_NEW: &str = "1f0b0000-0000-6000-8000-000000000001";

#[test]
fn ids_become_placeholders_by_kind_and_order() {
    let raw = json!([
        {"id": T2, "name": "b", "triggers": ["branch:to:b"]},
        {"id": T1, "name": "a", "result": {}},
        ["sub:".to_owned() + T2, {"checkpoint_id": C_NEW}],
        {"checkpoint_id": C_OLD, "msg": "0123456789abcdef0123456789abcdef"},
        {"$interrupt": {"value": 1, "id": "fedcba9876543210fedcba9876543210"}},
    ]);
    assert_eq!(
        normalise_ids(&raw),
        json!([
            {"id": "<task:1>", "name": "b", "triggers": ["branch:to:b"]},
            {"id": "<task:2>", "name": "a", "result": {}},
            ["sub:<task:1>", {"checkpoint_id": "<ckpt:2>"}],
            {"checkpoint_id": "<ckpt:1>", "msg": "<hex:1>"},
            {"$interrupt": {"value": 1, "id": "<interrupt:1>"}},
        ])
    );
}

#[test]
fn recorded_placeholders_are_renumbered_within_an_observation() {
    let recorded = json!([
        {"id": "<task:7>", "name": "b", "interrupts": []},
        {"ns": ["sub:<task:7>"], "checkpoint_id": "<ckpt:12>"},
        {"checkpoint_id": "<ckpt:9>"},
    ]);
    let ours = json!([
        {"id": T1, "name": "b", "interrupts": []},
        {"ns": ["sub:".to_owned() + T1], "checkpoint_id": C_NEW},
        {"checkpoint_id": C_OLD},
    ]);
    assert_trace_ids(&ours, &recorded);
}

#[test]
fn error_classes_compare_exactly_and_messages_loosely() {
    let expected = json!({"raised": {"$error": "InvalidUpdateError", "message": "Can receive only one Overwrite value per super-step.\nFor troubleshooting, visit: https://docs.langchain.com/x"}});
    let ours = json!({"raised": {"$error": "InvalidUpdateError", "message": "at key 'items': Can receive only one Overwrite value per super-step."}});
    assert_trace(&ours, &expected);
    assert!(!messages_match(
        "something else",
        "Can receive only one value"
    ));
    let wrong_class = json!({"raised": {"$error": "ValueError", "message": "at key 'items': Can receive only one Overwrite value per super-step."}});
    let caught = std::panic::catch_unwind(|| assert_trace(&wrong_class, &expected));
    assert!(caught.is_err());
}

#[test]
fn py_str_prints_like_python() {
    assert_eq!(
        py_str(&json!(["a", 1, true, null, {"k": [2]}])),
        "['a', 1, True, None, {'k': [2]}]"
    );
}
