//! Channel versions.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The version of one channel in a checkpoint.
///
/// A version is a counter plus a random salt. The counter grows by one per
/// checkpoint in which the channel changed; the salt keeps two forks of one
/// parent that both bump a channel to the same counter from sharing a stored
/// value (blobs are keyed by thread, namespace, channel and version). Versions
/// order by counter, then salt, which is also the order of their text form
/// `"{counter:032}.{salt:016}"` (LangGraph's format).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChannelVersion {
    counter: u64,
    salt: u64,
}

const SALT_MODULUS: u64 = 10_000_000_000_000_000;

impl ChannelVersion {
    /// A version with the given counter and salt (`salt` is kept below 10^16).
    pub fn new(counter: u64, salt: u64) -> Self {
        Self {
            counter,
            salt: salt % SALT_MODULUS,
        }
    }

    /// The next version after `current` (`None` = the channel has no version yet),
    /// with a fresh random salt. The counter of the first version is 1.
    pub fn next(current: Option<&Self>) -> Self {
        let counter = current.map_or(0, |v| v.counter).saturating_add(1);
        let salt = stategraph_core::random_u64() % SALT_MODULUS;
        Self { counter, salt }
    }

    /// The counter part.
    pub fn counter(&self) -> u64 {
        self.counter
    }

    /// The salt part.
    pub fn salt(&self) -> u64 {
        self.salt
    }
}

impl fmt::Display for ChannelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032}.{:016}", self.counter, self.salt)
    }
}

/// The text form was not `COUNTER` or `COUNTER.SALT` with decimal digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid channel version {0:?}: expected digits, optionally followed by '.' and digits")]
pub struct ParseVersionError(String);

impl FromStr for ChannelVersion {
    type Err = ParseVersionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || ParseVersionError(text.to_owned());
        let (counter, salt) = text.split_once('.').unwrap_or((text, ""));
        let counter = counter.parse::<u64>().map_err(|_| bad())?;
        // Foreign salts (LangGraph writes a float such as "0.8123") keep their digits.
        let digits: String = salt.chars().filter(|c| *c != '.').collect();
        if !digits.chars().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        let salt = digits
            .bytes()
            .take(16)
            .fold(0_u64, |acc, b| acc * 10 + u64::from(b - b'0'));
        Ok(Self::new(counter, salt))
    }
}

impl Serialize for ChannelVersion {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ChannelVersion {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Int(u64),
            Text(String),
        }
        match Repr::deserialize(deserializer)? {
            Repr::Int(counter) => Ok(Self::new(counter, 0)),
            Repr::Text(text) => text.parse().map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn first_version_counts_one_and_increments() {
        let v1 = ChannelVersion::next(None);
        assert_eq!(v1.counter(), 1);
        let v2 = ChannelVersion::next(Some(&v1));
        assert_eq!(v2.counter(), 2);
        assert!(v2 > v1);
    }

    #[test]
    fn text_form_matches_langgraph_layout() {
        let v = ChannelVersion::new(2, 5_374_782_242_664_354);
        assert_eq!(
            v.to_string(),
            "00000000000000000000000000000002.5374782242664354"
        );
        assert_eq!(
            v.to_string()
                .split('.')
                .next()
                .unwrap()
                .parse::<u64>()
                .unwrap(),
            2
        );
    }

    #[test]
    fn integers_and_foreign_text_are_accepted() {
        let v: ChannelVersion = serde_json::from_str("7").unwrap();
        assert_eq!(v.counter(), 7);
        let v: ChannelVersion =
            serde_json::from_str("\"00000000000000000000000000000002.0.5374782242664354\"")
                .unwrap();
        assert_eq!(v.counter(), 2);
        assert!("x.1".parse::<ChannelVersion>().is_err());
        assert!("1.a".parse::<ChannelVersion>().is_err());
    }

    proptest! {
        #[test]
        fn next_is_strictly_greater(counter in 0_u64..u64::MAX - 1, salt: u64) {
            let v = ChannelVersion::new(counter, salt);
            let n = ChannelVersion::next(Some(&v));
            prop_assert!(n > v);
            prop_assert!(n.to_string() > v.to_string());
        }

        #[test]
        fn text_round_trips_and_orders_like_values(a: (u64, u64), b: (u64, u64)) {
            let (va, vb) = (ChannelVersion::new(a.0, a.1), ChannelVersion::new(b.0, b.1));
            prop_assert_eq!(va.to_string().parse::<ChannelVersion>().unwrap(), va);
            prop_assert_eq!(va.cmp(&vb), va.to_string().cmp(&vb.to_string()));
        }
    }
}
