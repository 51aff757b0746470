//! `add_messages`: LangGraph's reducer for message lists.

use std::collections::{HashMap, HashSet};

use stategraph_core::FxBuild;

use crate::message::Message;
use crate::{Error, Result};

/// Merges `update` into `current` with LangGraph's `add_messages` semantics,
/// or reports a `RemoveMessage` whose id no message has.
///
/// 1. Every message without an id gets a fresh UUIDv4 id, on both sides.
/// 2. If `update` holds [`Message::remove_all`] markers, the result is what
///    follows the last one, as is (LangGraph does not merge or check that
///    tail either).
/// 3. Otherwise each update message, in order: one whose id is already in the
///    list replaces it **in its slot**; a new id is appended; a remove marker
///    deletes the message with its id. So when `update` repeats an id, the
///    last one wins, in the slot of the first; a message removed and then
///    written again in the same update stays.
///
/// # Errors
/// [`Error::UnknownRemoveId`] when a remove marker names an id that is neither
/// in `current` nor earlier in `update` (LangGraph raises `ValueError`).
///
/// ```
/// use stategraph_llm::{try_add_messages, Message};
///
/// let history = vec![Message::human("hi").with_id("h1"), Message::ai("hello").with_id("a1")];
/// let merged = try_add_messages(history.clone(), vec![Message::ai("hello v2").with_id("a1")])?;
/// assert_eq!(merged[1].text(), "hello v2");
///
/// let err = try_add_messages(history, vec![Message::remove("nope")]).unwrap_err();
/// assert!(err.to_string().contains("'nope'"));
/// # Ok::<(), stategraph_llm::Error>(())
/// ```
pub fn try_add_messages(current: Vec<Message>, update: Vec<Message>) -> Result<Vec<Message>> {
    if let Some(id) = unknown_remove_id(&current, &update) {
        return Err(Error::UnknownRemoveId { id: id.to_owned() });
    }
    Ok(merge(current, update))
}

/// Merges `update` into `current` with LangGraph's `add_messages` semantics
/// (see [`try_add_messages`]); the reducer to name in a typed state:
/// `#[state(reducer = stategraph_llm::add_messages)] messages: Vec<Message>`.
///
/// A reducer cannot fail, so where LangGraph raises `ValueError` (a
/// `RemoveMessage` with an id no message has) this function logs a
/// `tracing::warn!` naming the id and returns `current` unchanged: the whole
/// update is dropped, not half applied. Use [`try_add_messages`] to get the
/// error instead.
///
/// ```
/// use stategraph_llm::{add_messages, Message};
///
/// let history = vec![Message::human("hi").with_id("h1")];
/// let merged = add_messages(history, vec![Message::ai("one").with_id("x"), Message::ai("two").with_id("x")]);
/// assert_eq!(merged.len(), 2);
/// assert_eq!(merged[1].text(), "two");
///
/// // Messages without an id get one.
/// let merged = add_messages(merged, vec!["plain string".into()]);
/// assert!(merged[2].id().is_some());
///
/// // Removing an unknown id leaves the list as it was.
/// let same = add_messages(merged.clone(), vec![Message::remove("nope")]);
/// assert_eq!(same, merged);
/// ```
pub fn add_messages(current: Vec<Message>, update: Vec<Message>) -> Vec<Message> {
    if let Some(id) = unknown_remove_id(&current, &update) {
        tracing::warn!(
            id,
            "add_messages: attempting to delete a message with an id that doesn't exist; the update is ignored"
        );
        return current;
    }
    merge(current, update)
}

/// The id of the first remove marker that would meet an unknown id, as the
/// merge loop meets them. A remove-all marker anywhere means no check (the
/// tail after it is taken as is).
fn unknown_remove_id<'a>(current: &'a [Message], update: &'a [Message]) -> Option<&'a str> {
    if !update.iter().any(Message::is_remove) || update.iter().any(Message::is_remove_all) {
        return None;
    }
    let mut known: HashSet<&str> = current.iter().filter_map(Message::id).collect();
    for message in update {
        match (message, message.id()) {
            (Message::Remove(remove), _) if !known.contains(remove.id.as_str()) => {
                return Some(&remove.id);
            }
            (_, Some(id)) => {
                known.insert(id);
            }
            // A message without an id gets a fresh one, which no later marker
            // can name.
            (_, None) => {}
        }
    }
    None
}

/// The merge itself, for an update whose remove markers are known to be
/// valid (a marker with an unknown id is skipped).
fn merge(mut current: Vec<Message>, mut update: Vec<Message>) -> Vec<Message> {
    assign_ids(&mut update);
    if let Some(last) = update.iter().rposition(Message::is_remove_all) {
        return update.split_off(last + 1);
    }
    if update.is_empty() {
        assign_ids(&mut current);
        return current;
    }
    // Plan with ids borrowed from both lists (no id is copied), then apply.
    // A current message without an id gets a fresh one, which no update
    // can name: the plan holds without it, and the ids are given after
    // (found by the plan's own pass over the list, not by another).
    let (actions, removed, unnamed) = plan(&current, &update);
    let mut update: Vec<Option<Message>> = update.into_iter().map(Some).collect();
    for action in actions {
        match action {
            Action::Replace { slot, from } => {
                if let Some(message) = update[from].take() {
                    current[slot] = message;
                }
            }
            Action::Append { from } => current.extend(update[from].take()),
        }
    }
    if unnamed {
        assign_ids(&mut current);
    }
    if !removed.is_empty() {
        current.retain(|m| m.id().is_none_or(|id| !removed.contains(id)));
    }
    current
}

/// `a == b`, quick to refuse: ids of one history mostly share their length,
/// and generated ids (UUIDs, time-ordered ones included) differ in their
/// last bytes, so those are compared first, as one word.
fn same_id(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    if let (Some(tail_a), Some(tail_b)) = (a.last_chunk::<8>(), b.last_chunk::<8>())
        && tail_a != tail_b
    {
        return false;
    }
    a == b
}

/// One step of a merge: update message `from` replaces the message in
/// `slot`, or is appended.
enum Action {
    Replace { slot: usize, from: usize },
    Append { from: usize },
}

/// The merge steps in order, the ids to delete at the end, and whether
/// some current message has no id.
fn plan(current: &[Message], update: &[Message]) -> (Vec<Action>, HashSet<String>, bool) {
    // Python builds `{m.id: i}` over the list, so with repeated ids on the
    // left the last slot is the one updates land in. Only the ids the
    // update names matter, so only they are indexed: a long history costs
    // one fast hash per message, not a map of it.
    let wanted: Vec<&str> = update.iter().filter_map(Message::id).collect();
    // The usual update names a message or two: compare, no hashing.
    let hashed: Option<HashSet<&str, FxBuild>> =
        (wanted.len() > 8).then(|| wanted.iter().copied().collect());
    let named = |id: &str| match &hashed {
        Some(set) => set.contains(id),
        None => wanted.iter().any(|w| same_id(w, id)),
    };
    let mut slots: HashMap<&str, usize, FxBuild> =
        HashMap::with_capacity_and_hasher(update.len(), FxBuild);
    let mut unnamed = false;
    for (i, message) in current.iter().enumerate() {
        match message.id() {
            Some(id) if named(id) => {
                slots.insert(id, i);
            }
            Some(_) => {}
            None => unnamed = true,
        }
    }
    let mut len = current.len();
    let mut actions = Vec::with_capacity(update.len());
    let mut removed: HashSet<&str, FxBuild> = HashSet::default();
    for (from, message) in update.iter().enumerate() {
        let Some(id) = message.id() else {
            unreachable!("assign_ids gave every message an id")
        };
        match slots.get(id) {
            Some(_) if message.is_remove() => {
                removed.insert(id);
            }
            Some(&slot) => {
                removed.remove(id);
                actions.push(Action::Replace { slot, from });
            }
            None if message.is_remove() => {}
            None => {
                slots.insert(id, len);
                len += 1;
                actions.push(Action::Append { from });
            }
        }
    }
    let removed = removed.into_iter().map(str::to_owned).collect();
    (actions, removed, unnamed)
}

fn assign_ids(messages: &mut [Message]) {
    for message in messages.iter_mut().filter(|m| m.id().is_none()) {
        message.set_id(stategraph_core::random_uuid());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(messages: &[Message]) -> Vec<&str> {
        messages.iter().map(|m| m.id().unwrap()).collect()
    }

    #[test]
    fn ids_compare_as_strings() {
        let pairs = [
            ("", ""),
            ("a", "a"),
            ("a", "b"),
            ("abc", "abcd"),
            (
                "0190a1b2-0000-7000-8000-000000000001",
                "0190a1b2-0000-7000-8000-000000000001",
            ),
            (
                "0190a1b2-0000-7000-8000-000000000001",
                "0190a1b2-0000-7000-8000-000000000002",
            ),
            // Same last eight bytes, different start.
            ("x-12345678", "y-12345678"),
            ("tool-call-1", "tool-call-1"),
        ];
        for (a, b) in pairs {
            assert_eq!(same_id(a, b), a == b, "{a:?} vs {b:?}");
            assert_eq!(same_id(b, a), a == b, "{b:?} vs {a:?}");
        }
    }

    #[test]
    fn remove_then_rewrite_in_one_update_keeps_the_message() {
        let current = vec![Message::human("a").with_id("1")];
        let merged = try_add_messages(
            current,
            vec![Message::remove("1"), Message::human("b").with_id("1")],
        )
        .unwrap();
        assert_eq!(merged, [Message::human("b").with_id("1")]);
    }

    #[test]
    fn a_message_added_earlier_in_the_update_can_be_removed() {
        let merged = try_add_messages(
            vec![],
            vec![Message::human("a").with_id("1"), Message::remove("1")],
        )
        .unwrap();
        assert!(merged.is_empty());
        let err = try_add_messages(
            vec![],
            vec![Message::remove("1"), Message::human("a").with_id("1")],
        )
        .unwrap_err();
        assert!(matches!(err, Error::UnknownRemoveId { ref id } if id == "1"));
    }

    #[test]
    fn the_last_remove_all_wins_and_its_tail_is_taken_as_is() {
        let current = vec![Message::human("a").with_id("1")];
        let merged = try_add_messages(
            current,
            vec![
                Message::remove("unknown"),
                Message::remove_all(),
                Message::human("b").with_id("2"),
                Message::remove_all(),
                Message::human("c").with_id("3"),
                Message::human("d").with_id("3"),
            ],
        )
        .unwrap();
        assert_eq!(ids(&merged), ["3", "3"]);
    }

    #[test]
    fn repeated_ids_on_the_left_update_the_last_slot() {
        let current = vec![
            Message::human("a").with_id("x"),
            Message::human("b").with_id("x"),
        ];
        let merged = try_add_messages(current, vec![Message::ai("c").with_id("x")]).unwrap();
        assert_eq!(merged[0].text(), "a");
        assert_eq!(merged[1].text(), "c");
        let removed = try_add_messages(merged, vec![Message::remove("x")]).unwrap();
        assert!(removed.is_empty());
    }

    #[test]
    fn current_messages_without_ids_get_them_whatever_the_update_does() {
        let current = || {
            vec![
                Message::human("a"),
                Message::ai("b").with_id("b"),
                Message::human("c"),
            ]
        };
        // A replacement, an append, a removal, and nothing at all.
        for update in [
            vec![Message::ai("B").with_id("b")],
            vec![Message::ai("d").with_id("d")],
            vec![Message::remove("b")],
            vec![],
        ] {
            let merged = try_add_messages(current(), update.clone()).unwrap();
            assert!(merged.iter().all(|m| m.id().is_some()), "{update:?}");
            let texts: Vec<String> = merged.iter().map(|m| m.text().into_owned()).collect();
            let expected: &[&str] = match update.first() {
                Some(Message::Remove(_)) => &["a", "c"],
                Some(m) if m.text() == "B" => &["a", "B", "c"],
                Some(_) => &["a", "b", "c", "d"],
                None => &["a", "b", "c"],
            };
            assert_eq!(texts, expected, "{update:?}");
        }
    }

    #[test]
    fn generated_ids_are_uuid4() {
        let merged = add_messages(vec![Message::human("a")], vec![Message::ai("b")]);
        for id in ids(&merged) {
            let uuid = uuid::Uuid::parse_str(id).unwrap();
            assert_eq!(uuid.get_version_num(), 4);
        }
    }
}
