//! Property tests of the channel laws: reducer folding, atomic failed
//! updates, and checkpoint / restore round trips (live and through JSON).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use serde_json::json;
use stategraph_channels::{
    AnyValue, BinaryOperatorAggregate, Channel, EphemeralValue, LastValue, LastValueAfterFinish,
    NamedBarrierValue, NamedBarrierValueAfterFinish, Overwrite, Topic, UntrackedValue, reducers,
};
use stategraph_core::Value;

fn vals<T: serde::Serialize + Send + Sync + 'static>(items: Vec<T>) -> Vec<Value> {
    items.into_iter().map(Value::new).collect()
}

fn json_vals(items: &[serde_json::Value]) -> Vec<Value> {
    items.iter().cloned().map(Value::from_json).collect()
}

/// Every channel kind, in a random state reached through valid updates.
fn channel_in_state() -> impl Strategy<Value = Box<dyn Channel>> {
    let steps = prop::collection::vec(prop::collection::vec(0_i64..100, 0..3), 0..5);
    (0_usize..10, steps, any::<bool>()).prop_map(|(kind, steps, finish)| {
        let mut channel: Box<dyn Channel> = match kind {
            0 => Box::new(LastValue::<i64>::new()),
            1 => Box::new(AnyValue::<i64>::new()),
            2 => Box::new(EphemeralValue::<i64>::unguarded()),
            3 => Box::new(UntrackedValue::<i64>::unguarded()),
            4 => Box::new(BinaryOperatorAggregate::new(reducers::append::<Vec<i64>>)),
            5 => Box::new(Topic::<i64>::new()),
            6 => Box::new(Topic::<i64>::accumulating()),
            7 => Box::new(LastValueAfterFinish::<i64>::new()),
            8 => Box::new(NamedBarrierValue::new(["0", "1", "2"])),
            _ => Box::new(NamedBarrierValueAfterFinish::new(["0", "1", "2"])),
        };
        for step in steps {
            let writes: Vec<Value> = match kind {
                0 => step.into_iter().take(1).map(Value::new).collect(),
                4 => vec![Value::new(step)],
                8 | 9 => step
                    .into_iter()
                    .map(|n| Value::new((n % 3).to_string()))
                    .collect(),
                _ => vals(step),
            };
            channel.update(writes).unwrap();
        }
        if finish {
            channel.finish();
        }
        channel
    })
}

fn observe(channel: &dyn Channel) -> (bool, Option<serde_json::Value>) {
    (
        channel.is_available(),
        channel.get().map(|v| v.to_json().unwrap()),
    )
}

proptest! {
    /// A channel that says it ignores empty updates is unchanged by one, in
    /// any state: the runtime skips that call for it.
    #[test]
    fn ignored_empty_updates_change_nothing(mut channel in channel_in_state()) {
        if channel.ignores_empty_updates() {
            let before = (observe(channel.as_ref()), channel.checkpoint().map(|v| v.to_json().unwrap()));
            prop_assert_eq!(channel.update(Vec::new()).unwrap(), false);
            let after = (observe(channel.as_ref()), channel.checkpoint().map(|v| v.to_json().unwrap()));
            prop_assert_eq!(after, before);
        }
    }

    /// A channel that says it is in its initial state is indistinguishable
    /// from a copy restored to nothing, now and after more steps: the
    /// runtime then drops its copy and reads the spec instead.
    #[test]
    fn an_initial_channel_is_its_restored_initial_state(
        channel in channel_in_state(),
        writes in prop::collection::vec(0_i64..100, 0..3),
    ) {
        if channel.is_initial() {
            let mut copy = channel.boxed_clone();
            let mut fresh = channel.from_checkpoint(None).unwrap();
            let checkpoint = |c: &dyn Channel| c.checkpoint().map(|v| v.to_json().unwrap());
            prop_assert_eq!(observe(copy.as_ref()), observe(fresh.as_ref()));
            prop_assert_eq!(checkpoint(copy.as_ref()), checkpoint(fresh.as_ref()));
            let step = vals(writes);
            prop_assert_eq!(
                copy.update(step.clone()).map_err(|e| e.to_string()),
                fresh.update(step).map_err(|e| e.to_string())
            );
            prop_assert_eq!(copy.finish(), fresh.finish());
            prop_assert_eq!(observe(copy.as_ref()), observe(fresh.as_ref()));
            prop_assert_eq!(checkpoint(copy.as_ref()), checkpoint(fresh.as_ref()));
        }
    }

    /// `copy_from` either makes a channel an exact copy of the other (same
    /// reads, same checkpoint) or, for another kind of channel, says so and
    /// changes nothing.
    #[test]
    fn copy_from_copies_or_changes_nothing(mut target in channel_in_state(), source in channel_in_state()) {
        let checkpoint = |c: &dyn Channel| c.checkpoint().map(|v| v.to_json().unwrap());
        let before = (observe(target.as_ref()), checkpoint(target.as_ref()));
        if target.copy_from(source.as_ref()) {
            prop_assert_eq!(observe(target.as_ref()), observe(source.as_ref()));
            prop_assert_eq!(checkpoint(target.as_ref()), checkpoint(source.as_ref()));
            prop_assert_eq!(target.is_initial(), source.is_initial());
        } else {
            prop_assert_eq!((observe(target.as_ref()), checkpoint(target.as_ref())), before);
        }
    }

    /// Writes of one step fold left in order: one update with all writes
    /// equals one update per write.
    #[test]
    fn reducer_folds_writes_in_order(writes in prop::collection::vec(prop::collection::vec(any::<i32>(), 0..4), 1..6)) {
        let mut together = BinaryOperatorAggregate::new(reducers::append::<Vec<i32>>);
        together.update(vals(writes.clone())).unwrap();
        let mut one_by_one = BinaryOperatorAggregate::new(reducers::append::<Vec<i32>>);
        for write in &writes {
            one_by_one.update(vals(vec![write.clone()])).unwrap();
        }
        let expected: Vec<i32> = writes.concat();
        prop_assert_eq!(together.value().unwrap(), &expected);
        prop_assert_eq!(one_by_one.value().unwrap(), &expected);
    }

    /// An overwrite replaces the value and the rest of its step is ignored.
    #[test]
    fn overwrite_wins_over_the_reducer(before in prop::collection::vec(any::<i32>(), 0..4), replacement in prop::collection::vec(any::<i32>(), 0..4), after in prop::collection::vec(any::<i32>(), 0..4)) {
        let mut channel = BinaryOperatorAggregate::new(reducers::append::<Vec<i32>>);
        channel.update(vals(vec![before.clone()])).unwrap();
        channel.update(vec![Value::new(before.clone()), Value::new(Overwrite(replacement.clone())), Value::new(after)]).unwrap();
        prop_assert_eq!(channel.value().unwrap(), &replacement);
    }

    /// A rejected update leaves the channel exactly as it was.
    #[test]
    fn failed_updates_change_nothing(mut channel in channel_in_state()) {
        let before = observe(channel.as_ref());
        let checkpoint_before = channel.checkpoint().map(|v| v.to_json().unwrap());
        let bad = vec![Value::from_json(json!({"not": "an int"})), Value::from_json(json!([{"x": 1}]))];
        prop_assert!(channel.update(bad).is_err());
        prop_assert_eq!(observe(channel.as_ref()), before);
        prop_assert_eq!(channel.checkpoint().map(|v| v.to_json().unwrap()), checkpoint_before);
    }

    /// `update_empty()` is `update(vec![])`: same answer, same channel after.
    #[test]
    fn update_empty_is_update_of_nothing(channel in channel_in_state()) {
        let checkpoint = |c: &dyn Channel| c.checkpoint().map(|v| v.to_json().unwrap());
        let mut by_list = channel.boxed_clone();
        let mut empty = channel.boxed_clone();
        prop_assert_eq!(
            by_list.update(Vec::new()).map_err(|e| e.to_string()),
            empty.update_empty().map_err(|e| e.to_string())
        );
        prop_assert_eq!(observe(by_list.as_ref()), observe(empty.as_ref()));
        prop_assert_eq!(checkpoint(by_list.as_ref()), checkpoint(empty.as_ref()));
    }

    /// `restore(checkpoint())` reproduces the channel, whether the checkpoint
    /// stays a live value (in-memory saver) or goes through JSON (persistent savers).
    #[test]
    fn checkpoint_restore_round_trips(channel in channel_in_state()) {
        let live = channel.from_checkpoint(channel.checkpoint()).unwrap();
        let through_json = channel
            .from_checkpoint(channel.checkpoint().map(|v| Value::from_json(v.to_json().unwrap())))
            .unwrap();
        let untracked = channel.checkpoint().is_none();
        for restored in [live, through_json] {
            if untracked {
                prop_assert!(!restored.is_available());
            } else {
                prop_assert_eq!(observe(restored.as_ref()), observe(channel.as_ref()));
            }
        }
    }

    /// A non-accumulating topic holds exactly the flattened writes of the last step.
    #[test]
    fn topic_holds_the_last_step(steps in prop::collection::vec(prop::collection::vec(prop::collection::vec(any::<i16>(), 0..3), 0..3), 1..5)) {
        let mut topic = Topic::<i16>::new();
        let mut accumulating = Topic::<i16>::accumulating();
        let mut all = Vec::new();
        for step in &steps {
            topic.update(vals(step.clone())).unwrap();
            accumulating.update(json_vals(&step.iter().map(|w| json!(w)).collect::<Vec<_>>())).unwrap();
            all.extend(step.concat());
        }
        let last = steps.last().unwrap().concat();
        prop_assert_eq!(topic.values(), &last[..]);
        prop_assert_eq!(topic.is_available(), !last.is_empty());
        prop_assert_eq!(accumulating.values(), &all[..]);
    }

    /// `update_one(v)` is `update(vec![v])` for every channel kind.
    #[test]
    fn update_one_is_update_of_one(channel in channel_in_state(), write in 0_i64..100) {
        let mut one = channel.boxed_clone();
        let mut many = channel.boxed_clone();
        let value = || if channel.checkpoint().is_some_and(|c| c.is::<std::collections::BTreeSet<String>>()) {
            Value::new((write % 3).to_string())
        } else {
            Value::new(write)
        };
        let a = one.update_one(value()).map_err(|e| e.to_string());
        let b = many.update(vec![value()]).map_err(|e| e.to_string());
        prop_assert_eq!(a.is_ok(), b.is_ok());
        prop_assert_eq!(observe(one.as_ref()), observe(many.as_ref()));
    }

    /// A reducer channel's single write, plain, overwrite, live or JSON,
    /// does what the same write in a list does.
    #[test]
    fn a_reducer_channel_takes_one_write_as_a_list_of_one(
        before in prop::collection::vec(any::<i64>(), 0..4),
        write in prop::collection::vec(any::<i64>(), 0..4),
        shape in 0_u8..4,
    ) {
        let mut channel = BinaryOperatorAggregate::new(reducers::append::<Vec<i64>>);
        if !before.is_empty() {
            channel.update(vec![Value::new(before)]).unwrap();
        }
        let value = || match shape {
            0 => Value::new(write.clone()),
            1 => Value::new(Overwrite(write.clone())),
            2 => Value::from_json(json!(write)),
            _ => Value::from_json(json!({"__overwrite__": write})),
        };
        let (mut one, mut many) = (channel.clone(), channel);
        let a = one.update_one(value()).map_err(|e| e.to_string());
        let b = many.update(vec![value()]).map_err(|e| e.to_string());
        prop_assert_eq!(a, b);
        prop_assert_eq!(one.value(), many.value());
    }

    /// Two or more writes to a last-value channel in one step are rejected.
    #[test]
    fn last_value_takes_one_write_per_step(writes in prop::collection::vec(any::<i64>(), 2..5)) {
        let mut channel = LastValue::<i64>::new();
        let err = channel.update(vals(writes)).unwrap_err();
        prop_assert!(err.is_invalid_update());
        prop_assert!(!channel.is_available());
    }
}

#[test]
fn two_overwrites_in_one_step_are_rejected() {
    let mut channel = BinaryOperatorAggregate::new(reducers::append::<Vec<i32>>);
    let err = channel
        .update(vec![
            Value::new(Overwrite(vec![1])),
            Value::from_json(json!({"__overwrite__": [2]})),
        ])
        .unwrap_err();
    assert!(err.is_invalid_update());
    assert!(err.to_string().contains("only one Overwrite"));
    assert_eq!(channel.value().unwrap(), &Vec::<i32>::new());
}

#[test]
fn overwrite_json_shapes_are_recognised() {
    let mut channel = BinaryOperatorAggregate::new(reducers::json_add);
    channel.update(json_vals(&[json!([1])])).unwrap();
    channel
        .update(json_vals(&[json!({"type": "__overwrite__", "value": [9]})]))
        .unwrap();
    assert_eq!(channel.value().unwrap(), &json!([9]));
    channel
        .update(json_vals(&[json!({"__overwrite__": [7]}), json!([8])]))
        .unwrap();
    assert_eq!(channel.value().unwrap(), &json!([7]));
}

#[test]
fn wrong_typed_writes_name_the_path() {
    let mut channel = LastValue::<Vec<String>>::new();
    let err = channel
        .update(vec![Value::from_json(json!(["ok", 2]))])
        .unwrap_err()
        .at_key("subjects");
    let text = err.to_string();
    assert!(text.contains("subjects") && text.contains("[1]"), "{text}");
    assert_eq!(err.kind(), stategraph_core::ErrorKind::Serialization);
}

/// A list that counts how often it is deep-copied.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Counted(Vec<u8>);

static CLONES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Clone for Counted {
    fn clone(&self) -> Self {
        CLONES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Self(self.0.clone())
    }
}

#[test]
fn reducer_copies_only_what_a_checkpoint_shares() {
    let append = |mut a: Counted, b: Counted| {
        a.0.extend(b.0);
        a
    };
    let clones = || CLONES.load(std::sync::atomic::Ordering::SeqCst);
    let mut channel = BinaryOperatorAggregate::new(append);
    for _ in 0..100 {
        channel.update(vec![Value::new(Counted(vec![1]))]).unwrap();
    }
    assert_eq!(clones(), 0, "an unshared value is reduced in place");
    let shared = channel.checkpoint().unwrap();
    channel.update(vec![Value::new(Counted(vec![2]))]).unwrap();
    assert_eq!(
        clones(),
        1,
        "a value shared with a checkpoint is copied once"
    );
    assert_eq!(
        shared.decode::<Counted>().unwrap().0.len(),
        100,
        "the checkpoint is immutable"
    );
    assert_eq!(channel.value().unwrap().0.len(), 101);
}

#[test]
fn empty_reducer_channel_takes_its_first_write_as_is() {
    let mut channel = BinaryOperatorAggregate::empty(|a: String, b: String| a + &b);
    assert!(!channel.is_available());
    channel
        .update(vals(vec!["x".to_string(), "y".to_string()]))
        .unwrap();
    assert_eq!(channel.value().unwrap(), "xy");
    channel.restore(None).unwrap();
    assert!(!channel.is_available());
}

#[test]
fn channels_that_clear_on_a_new_step_hear_empty_updates() {
    let clearing: [Box<dyn Channel>; 3] = [
        Box::new(EphemeralValue::<i64>::unguarded()),
        Box::new(Topic::<i64>::new()),
        Box::new(AnyValue::<i64>::new()),
    ];
    for channel in clearing {
        assert!(!channel.ignores_empty_updates(), "{channel:?}");
    }
    let keeping: [Box<dyn Channel>; 2] = [
        Box::new(LastValue::<i64>::new()),
        Box::new(BinaryOperatorAggregate::new(reducers::append::<Vec<i64>>)),
    ];
    for channel in keeping {
        assert!(channel.ignores_empty_updates(), "{channel:?}");
    }
}
