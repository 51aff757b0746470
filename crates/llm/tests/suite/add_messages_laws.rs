//! Property tests of `add_messages`: ids are always assigned, disjoint lists
//! concatenate, re-adding is idempotent, the last of repeated ids wins in the
//! slot of the first, removal deletes exactly the named messages, and an
//! unknown remove id changes nothing.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;

use proptest::prelude::*;
use stategraph_llm::{Error, Message, add_messages, try_add_messages};

/// A human or AI message with an id drawn from a small pool (so ids repeat)
/// and some text.
fn message(ids: &'static [&'static str]) -> impl Strategy<Value = Message> {
    (prop::sample::select(ids), any::<bool>(), "[a-z]{0,4}").prop_map(|(id, human, text)| {
        if human {
            Message::human(text).with_id(id)
        } else {
            Message::ai(text).with_id(id)
        }
    })
}

const LEFT_IDS: &[&str] = &["a", "b", "c", "d", "e", "f"];
const RIGHT_IDS: &[&str] = &["p", "q", "r", "s", "t", "u"];
const ALL_IDS: &[&str] = &["a", "b", "c", "p", "q", "r"];

/// Messages with unique ids from `ids`.
fn unique(ids: &'static [&'static str]) -> impl Strategy<Value = Vec<Message>> {
    prop::collection::vec(message(ids), 0..8).prop_map(|messages| {
        let mut seen = HashSet::new();
        messages
            .into_iter()
            .filter(|m| seen.insert(m.id().unwrap().to_owned()))
            .collect()
    })
}

/// The obvious quadratic model of the merge without removals: replace the
/// message with the same id in place, or append.
fn model(mut current: Vec<Message>, update: Vec<Message>) -> Vec<Message> {
    for message in update {
        match current.iter().position(|m| m.id() == message.id()) {
            Some(slot) => current[slot] = message,
            None => current.push(message),
        }
    }
    current
}

proptest! {
    #[test]
    fn every_message_gets_an_id(texts in prop::collection::vec("[a-z]{0,3}", 0..6)) {
        let update: Vec<Message> = texts.into_iter().map(Message::human).collect();
        let n = update.len();
        let merged = add_messages(vec![Message::ai("x")], update);
        prop_assert_eq!(merged.len(), n + 1);
        let ids: HashSet<_> = merged.iter().map(|m| m.id().unwrap()).collect();
        prop_assert_eq!(ids.len(), n + 1);
    }

    #[test]
    fn disjoint_ids_concatenate(left in unique(LEFT_IDS), right in unique(RIGHT_IDS)) {
        let merged = add_messages(left.clone(), right.clone());
        prop_assert_eq!(merged.len(), left.len() + right.len());
        let expected: Vec<Message> = left.into_iter().chain(right).collect();
        prop_assert_eq!(merged, expected);
    }

    #[test]
    fn re_adding_is_idempotent(
        left in unique(ALL_IDS),
        right in prop::collection::vec(message(ALL_IDS), 0..8),
    ) {
        let once = add_messages(left, right.clone());
        let twice = add_messages(once.clone(), right);
        prop_assert_eq!(&twice, &once);
        prop_assert_eq!(add_messages(once.clone(), once.clone()), once);
    }

    #[test]
    fn last_of_repeated_ids_wins_in_the_slot_of_the_first(
        left in unique(ALL_IDS),
        right in prop::collection::vec(message(ALL_IDS), 0..10),
    ) {
        let merged = add_messages(left.clone(), right.clone());
        prop_assert_eq!(&merged, &model(left.clone(), right.clone()));
        for message in &merged {
            let id = message.id();
            if let Some(last) = right.iter().rev().find(|m| m.id() == id) {
                prop_assert_eq!(message, last);
            }
        }
        // New ids appear in the order of their first occurrence.
        let known: HashSet<_> = left.iter().map(|m| m.id().unwrap()).collect();
        let mut firsts = Vec::new();
        for m in &right {
            let id = m.id().unwrap();
            if !known.contains(id) && !firsts.contains(&id) {
                firsts.push(id);
            }
        }
        let tail: Vec<_> = merged[left.len()..].iter().map(|m| m.id().unwrap()).collect();
        prop_assert_eq!(tail, firsts);
    }

    #[test]
    fn removal_deletes_exactly_the_named_messages(
        left in unique(LEFT_IDS),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
    ) {
        prop_assume!(!left.is_empty());
        let doomed: HashSet<String> =
            picks.iter().map(|i| left[i.index(left.len())].id().unwrap().to_owned()).collect();
        let removes = doomed.iter().map(|id| Message::remove(id.clone())).collect();
        let merged = try_add_messages(left.clone(), removes).unwrap();
        let expected: Vec<Message> =
            left.into_iter().filter(|m| !doomed.contains(m.id().unwrap())).collect();
        prop_assert_eq!(merged, expected);
    }

    #[test]
    fn an_unknown_remove_id_changes_nothing(
        left in unique(LEFT_IDS),
        right in unique(RIGHT_IDS),
    ) {
        let mut update = right;
        update.push(Message::remove("nowhere"));
        let err = try_add_messages(left.clone(), update.clone()).unwrap_err();
        let unknown = matches!(err, Error::UnknownRemoveId { ref id } if id == "nowhere");
        prop_assert!(unknown, "{}", err);
        prop_assert_eq!(add_messages(left.clone(), update), left);
    }

    #[test]
    fn remove_all_keeps_only_what_follows_the_last_marker(
        left in unique(ALL_IDS),
        before in unique(RIGHT_IDS),
        after in unique(RIGHT_IDS),
    ) {
        let mut update = before;
        update.push(Message::remove_all());
        update.extend(after.clone());
        prop_assert_eq!(add_messages(left, update), after);
    }
}
