//! Golden trace 23 (channel part): every channel kind's update / get /
//! consume / finish / checkpoint results, compared with what LangGraph 1.2.22
//! recorded in `fixtures/traces/23_channels_and_pregel.json`.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use serde_json::{Value as Json, json};
use stategraph_channels::{
    AnyValue, BinaryOperatorAggregate, Channel, ChannelError, EphemeralValue, LastValue,
    LastValueAfterFinish, NamedBarrierValue, NamedBarrierValueAfterFinish, Topic, UntrackedValue,
    reducers,
};
use stategraph_core::Value;

enum Op {
    Update(Json),
    Consume,
    Finish,
    Checkpoint,
}

fn raised(class: &str, message: &str) -> Json {
    json!({"raised": {"$error": class, "message": message}})
}

fn error_json(err: &ChannelError) -> Json {
    let class = if err.is_invalid_update() {
        "InvalidUpdateError"
    } else {
        "ValueError"
    };
    raised(class, &err.to_string())
}

fn get_json(channel: &dyn Channel) -> Json {
    match channel.get() {
        Some(value) => json!({"ok": value.to_json().unwrap()}),
        None => raised("EmptyChannelError", ""),
    }
}

/// Mirrors the `probe` function of the Python case script.
fn probe(mut channel: Box<dyn Channel>, ops: Vec<Op>) -> Json {
    let mut out = Vec::new();
    for op in ops {
        let (name, arg, result) = match op {
            Op::Update(arg) => {
                let writes = arg
                    .as_array()
                    .unwrap()
                    .iter()
                    .cloned()
                    .map(Value::from_json)
                    .collect();
                let result = match channel.update(writes) {
                    Ok(changed) => json!({"ok": changed}),
                    Err(err) => error_json(&err),
                };
                ("update", arg, result)
            }
            Op::Consume => ("consume", Json::Null, json!({"ok": channel.consume()})),
            Op::Finish => ("finish", Json::Null, json!({"ok": channel.finish()})),
            Op::Checkpoint => {
                // Python's MISSING sentinel is recorded as its repr.
                let value = channel
                    .checkpoint()
                    .map_or(json!({"$repr": "<object object>"}), |v| {
                        v.to_json().unwrap()
                    });
                ("checkpoint", Json::Null, json!({"ok": value}))
            }
        };
        let state = json!({"available": channel.is_available(), "get": get_json(channel.as_ref())});
        out.push(json!([name, arg, result, state]));
    }
    Json::Array(out)
}

fn update(arg: Json) -> Op {
    Op::Update(arg)
}

/// Error messages are informative in the trace contract: compare the error
/// class exactly and check the text separately.
fn strip_messages(value: &mut Json) {
    match value {
        Json::Object(map) => {
            if map.contains_key("$error") {
                map.insert("message".into(), Json::Null);
            }
            map.values_mut().for_each(strip_messages);
        }
        Json::Array(items) => items.iter_mut().for_each(strip_messages),
        _ => {}
    }
}

fn observed() -> Json {
    let mut channels = serde_json::Map::new();
    let mut add = |name: &str, observation: Json| {
        channels.insert(name.to_owned(), observation);
    };
    add(
        "LastValue",
        probe(
            Box::new(LastValue::<i64>::new()),
            vec![
                update(json!([])),
                update(json!([1])),
                update(json!([2])),
                update(json!([3, 4])),
                Op::Checkpoint,
            ],
        ),
    );
    add(
        "AnyValue",
        probe(
            Box::new(AnyValue::<i64>::new()),
            vec![update(json!([1, 2])), update(json!([]))],
        ),
    );
    add(
        "EphemeralValue",
        probe(
            Box::new(EphemeralValue::<i64>::new()),
            vec![update(json!([1])), update(json!([])), update(json!([1, 2]))],
        ),
    );
    add(
        "EphemeralValue_noguard",
        probe(
            Box::new(EphemeralValue::<i64>::unguarded()),
            vec![update(json!([1, 2]))],
        ),
    );
    add(
        "UntrackedValue",
        probe(
            Box::new(UntrackedValue::<i64>::new()),
            vec![update(json!([5])), Op::Checkpoint],
        ),
    );
    add(
        "BinaryOperatorAggregate_add",
        probe(
            Box::new(BinaryOperatorAggregate::new(
                reducers::append::<Vec<String>>,
            )),
            vec![
                update(json!([["a"], ["b"]])),
                update(json!([])),
                update(json!([["c"]])),
            ],
        ),
    );
    add(
        "BinaryOperatorAggregate_int",
        probe(
            Box::new(BinaryOperatorAggregate::new(reducers::add::<i64>)),
            vec![update(json!([2, 3]))],
        ),
    );
    add(
        "Topic",
        probe(
            Box::new(Topic::<String>::new()),
            vec![
                update(json!(["a", ["b", "c"]])),
                update(json!([])),
                update(json!(["d"])),
            ],
        ),
    );
    add(
        "Topic_accumulate",
        probe(
            Box::new(Topic::<String>::accumulating()),
            vec![
                update(json!(["a"])),
                update(json!([])),
                update(json!(["b"])),
            ],
        ),
    );
    add(
        "NamedBarrierValue",
        probe(
            Box::new(NamedBarrierValue::new(["x", "y"])),
            vec![
                update(json!(["x"])),
                update(json!(["y"])),
                Op::Consume,
                update(json!(["z"])),
            ],
        ),
    );
    add(
        "NamedBarrierValueAfterFinish",
        probe(
            Box::new(NamedBarrierValueAfterFinish::new(["x", "y"])),
            vec![update(json!(["x", "y"])), Op::Finish, Op::Consume],
        ),
    );
    add(
        "LastValueAfterFinish",
        probe(
            Box::new(LastValueAfterFinish::<i64>::new()),
            vec![update(json!([1])), Op::Finish, Op::Consume],
        ),
    );
    Json::Object(channels)
}

fn expected() -> Json {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/traces/23_channels_and_pregel.json"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let document: Json = serde_json::from_str(&text).unwrap();
    document["channels"].clone()
}

#[test]
fn trace_23_channels_match_langgraph() {
    let mut ours = observed();
    let mut theirs = expected();
    strip_messages(&mut ours);
    strip_messages(&mut theirs);
    let ours = ours.as_object().unwrap();
    let theirs = theirs.as_object().unwrap();
    assert_eq!(
        ours.keys().collect::<Vec<_>>().len(),
        theirs.len(),
        "every channel kind is probed"
    );
    for (name, expected) in theirs {
        assert_eq!(&ours[name], expected, "channel {name}");
    }
}

#[test]
fn trace_23_error_messages_say_the_same_thing() {
    let ours = observed();
    let text = |channel: &str, op: usize| {
        ours[channel][op][2]["raised"]["message"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(text("LastValue", 3).contains("Can receive only one value per step"));
    assert!(
        text("EphemeralValue", 2)
            .contains("EphemeralValue(guard=True) can receive only one value per step")
    );
    assert_eq!(
        text("NamedBarrierValue", 3),
        "at key '': Value z not in {'x', 'y'}"
    );
}
