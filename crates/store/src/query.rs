//! The parts of answering a batch every backend shares, so that every
//! backend gives the same answers: namespace prefixes and patterns, the
//! order of search results and pages, namespace listings.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use crate::{Item, ListNamespacesOp, MatchCondition, Namespace, SearchItem};

/// Whether `namespace` starts with the whole labels of `prefix` (no
/// wildcards: a search prefix is literal).
pub fn has_prefix(namespace: &[String], prefix: &[String]) -> bool {
    namespace.len() >= prefix.len() && namespace[..prefix.len()] == *prefix
}

/// Whether `namespace` meets `condition`; `"*"` matches any one label.
pub fn meets(namespace: &[String], condition: &MatchCondition) -> bool {
    let fits = |labels: &[String], pattern: &[String]| {
        labels
            .iter()
            .zip(pattern)
            .all(|(label, want)| want == "*" || label == want)
    };
    match condition {
        MatchCondition::Prefix(prefix) => {
            namespace.len() >= prefix.len() && fits(&namespace[..prefix.len()], prefix)
        }
        MatchCondition::Suffix(suffix) => {
            namespace.len() >= suffix.len()
                && fits(&namespace[namespace.len() - suffix.len()..], suffix)
        }
    }
}

/// The answer to a namespace listing over the namespaces holding items:
/// those meeting every condition, cut to `max_depth`, de-duplicated, in
/// label order, then paged.
pub fn list_namespaces<'a>(
    namespaces: impl IntoIterator<Item = &'a Namespace>,
    op: &ListNamespacesOp,
) -> Vec<Namespace> {
    let mut found: BTreeSet<Namespace> = BTreeSet::new();
    for namespace in namespaces {
        if op.match_conditions.iter().all(|c| meets(namespace, c)) {
            let depth = op.max_depth.unwrap_or(usize::MAX).min(namespace.len());
            found.insert(namespace[..depth].to_vec());
        }
    }
    found.into_iter().skip(op.offset).take(op.limit).collect()
}

/// Orders search candidates and returns the requested page: by score
/// (highest first, unscored last), then namespace and key — the order of
/// LangGraph's in-memory store on its golden trace, and a total order, so
/// every backend returns the same page.
pub fn rank_and_page(
    mut candidates: Vec<SearchItem>,
    limit: usize,
    offset: usize,
) -> Vec<SearchItem> {
    candidates.sort_by(|a, b| result_order((a.score, &a.item), (b.score, &b.item)));
    candidates.into_iter().skip(offset).take(limit).collect()
}

/// The order of search results (see [`rank_and_page`]), on a score and an
/// item, so a backend can rank borrowed rows and copy only its page.
pub fn result_order(a: (Option<f64>, &Item), b: (Option<f64>, &Item)) -> Ordering {
    by_score(a.0, b.0).then_with(|| compare_address(a.1, b.1))
}

/// The score part of [`result_order`]: highest first, unscored last.
pub(crate) fn by_score(a: Option<f64>, b: Option<f64>) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => y.partial_cmp(&x).unwrap_or(Ordering::Equal),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

fn compare_address(a: &Item, b: &Item) -> Ordering {
    a.namespace
        .cmp(&b.namespace)
        .then_with(|| a.key.cmp(&b.key))
}

#[cfg(test)]
mod tests {
    use crate::ns;

    use super::*;

    #[test]
    fn prefixes_match_whole_labels() {
        assert!(has_prefix(&ns(["foo", "child"]), &ns(["foo"])));
        assert!(!has_prefix(&ns(["foobar"]), &ns(["foo"])));
        assert!(has_prefix(&ns(["x"]), &ns::<[&str; 0], &str>([])));
    }

    #[test]
    fn listings_cut_dedupe_sort_and_page() {
        let all: Vec<Namespace> = [
            &["a", "b", "c"][..],
            &["a", "b", "d", "e"],
            &["a", "b", "d", "i"],
            &["a", "b", "f"],
            &["a", "c", "f"],
            &["b", "a", "f"],
        ]
        .iter()
        .map(|labels| ns(labels.iter().copied()))
        .collect();
        let op = ListNamespacesOp::new()
            .with_prefix(ns(["a", "b"]))
            .with_max_depth(3);
        assert_eq!(
            list_namespaces(&all, &op),
            [
                ns(["a", "b", "c"]),
                ns(["a", "b", "d"]),
                ns(["a", "b", "f"])
            ]
        );
        let op = ListNamespacesOp::new().with_prefix(ns(["a", "*", "f"]));
        assert_eq!(
            list_namespaces(&all, &op),
            [ns(["a", "b", "f"]), ns(["a", "c", "f"])]
        );
        let op = ListNamespacesOp::new()
            .with_suffix(ns(["*", "f"]))
            .with_page(2, 1);
        assert_eq!(
            list_namespaces(&all, &op),
            [ns(["a", "c", "f"]), ns(["b", "a", "f"])]
        );
    }
}
