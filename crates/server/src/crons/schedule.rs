//! Five-field cron schedules (`minute hour day-of-month month day-of-week`)
//! and their next fire time in an IANA time zone, as the official server
//! computes it with `croniter`.
//!
//! Each field takes `*`, numbers, ranges `a-b`, steps `*/n` and `a-b/n`,
//! and lists of those; months and weekdays also take names (`jan`, `mon`),
//! and Sunday is 0 or 7. As in Vixie cron, when both day fields are
//! restricted a day matches either. The macros `@yearly`, `@annually`,
//! `@monthly`, `@weekly`, `@daily`, `@midnight` and `@hourly` are taken.

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, TimeZone, Timelike, Utc};
use chrono_tz::Tz;

/// A parsed schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Schedule {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// Whether the day-of-month field was `*` (then only weekdays decide).
    any_day: bool,
    /// Whether the day-of-week field was `*` (then only days decide).
    any_weekday: bool,
}

/// Why a schedule does not parse.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct InvalidSchedule(pub(crate) String);

/// The fields' names and ranges, in order.
const FIELDS: [(&str, u32, u32); 5] = [
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
];

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

impl Schedule {
    /// Parses `text`.
    ///
    /// # Errors
    /// [`InvalidSchedule`] naming the field at fault.
    pub(crate) fn parse(text: &str) -> Result<Self, InvalidSchedule> {
        let text = match text.trim() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other => other,
        };
        let parts: Vec<&str> = text.split_whitespace().collect();
        if parts.len() != FIELDS.len() {
            return Err(InvalidSchedule(format!(
                "expected 5 fields, found {}",
                parts.len()
            )));
        }
        let mut sets = [0_u64; 5];
        for (index, (part, (name, low, high))) in parts.iter().zip(FIELDS).enumerate() {
            let names: &[&str] = match index {
                3 => &MONTHS,
                4 => &WEEKDAYS,
                _ => &[],
            };
            sets[index] = field(part, low, high, names)
                .map_err(|why| InvalidSchedule(format!("{name} field {part:?}: {why}")))?;
        }
        // Sunday is 0 or 7.
        let weekdays = if sets[4] & (1 << 7) != 0 {
            (sets[4] | 1) & !(1 << 7)
        } else {
            sets[4]
        };
        Ok(Self {
            minutes: sets[0],
            hours: sets[1],
            days: sets[2],
            months: sets[3],
            weekdays,
            any_day: parts[2].starts_with('*'),
            any_weekday: parts[4].starts_with('*'),
        })
    }

    /// Whether the schedule fires on `date`.
    fn day_matches(&self, date: NaiveDate) -> bool {
        if !has(self.months, date.month()) {
            return false;
        }
        let by_day = has(self.days, date.day());
        let by_weekday = has(self.weekdays, date.weekday().num_days_from_sunday());
        match (self.any_day, self.any_weekday) {
            (true, true) => true,
            (true, false) => by_weekday,
            (false, true) => by_day,
            (false, false) => by_day || by_weekday,
        }
    }

    /// The first fire time strictly after `after`, reading the schedule in
    /// `zone` (UTC when `None`). A local time a daylight-saving jump skips
    /// is not a fire time; one it repeats fires at its first occurrence.
    /// `None` when nothing fires within eight years (`30 2 30 2 *`).
    pub(crate) fn next_after(
        &self,
        after: DateTime<Utc>,
        zone: Option<Tz>,
    ) -> Option<DateTime<Utc>> {
        let zone = zone.unwrap_or(Tz::UTC);
        let local = after.with_timezone(&zone).naive_local();
        // The next whole minute after `after`.
        let mut at = local.with_second(0)?.with_nanosecond(0)? + Duration::minutes(1);
        let horizon = local + Duration::days(8 * 366);
        while at <= horizon {
            if !self.day_matches(at.date()) {
                at = NaiveDateTime::new(at.date().succ_opt()?, chrono::NaiveTime::MIN);
                continue;
            }
            if !has(self.hours, at.hour()) {
                at = at.with_minute(0)? + Duration::hours(1);
                continue;
            }
            if !has(self.minutes, at.minute()) {
                at += Duration::minutes(1);
                continue;
            }
            if let Some(fire) = zone.from_local_datetime(&at).earliest() {
                let fire = fire.with_timezone(&Utc);
                if fire > after {
                    return Some(fire);
                }
            }
            at += Duration::minutes(1);
        }
        None
    }
}

fn has(set: u64, value: u32) -> bool {
    set & (1 << value) != 0
}

/// The set of values one field names, as bits.
fn field(text: &str, low: u32, high: u32, names: &[&str]) -> Result<u64, String> {
    let mut set = 0_u64;
    for item in text.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .map_err(|_| format!("step {step:?} is not a number"))?;
                if step == 0 {
                    return Err("a step of 0".into());
                }
                (range, step)
            }
            None => (item, 1),
        };
        let (from, to) = if range == "*" {
            (low, high)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a, names)?, value(b, names)?)
        } else {
            let start = value(range, names)?;
            // `5/15` means from 5 to the end in steps of 15.
            (start, if step > 1 { high } else { start })
        };
        if from < low || to > high || from > to {
            return Err(format!("{from}-{to} is outside {low}-{high}"));
        }
        let mut v = from;
        while v <= to {
            set |= 1 << v;
            v += step;
        }
    }
    Ok(set)
}

/// One value: a number, or a name from `names` (its index; months count
/// from 1).
fn value(text: &str, names: &[&str]) -> Result<u32, String> {
    if let Ok(number) = text.parse::<u32>() {
        return Ok(number);
    }
    let lower = text.to_ascii_lowercase();
    let offset = u32::from(names.len() == 12);
    names
        .iter()
        .position(|name| *name == lower)
        .and_then(|index| u32::try_from(index).ok())
        .map(|index| index + offset)
        .ok_or_else(|| format!("{text:?} is not a value"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn next_fire_times_match_croniters() {
        // TRANSCRIPTS.md section 20: created at 02:15:46 UTC.
        let created = at("2026-11-22T02:15:46.204224+00:00");
        let every_ten = Schedule::parse("*/10 * * * *").unwrap();
        assert_eq!(
            every_ten.next_after(created, None),
            Some(at("2026-11-22T02:20:00Z"))
        );
        let monday_nine = Schedule::parse("0 9 * * 1").unwrap();
        let paris: Tz = "Europe/Paris".parse().unwrap();
        assert_eq!(
            monday_nine.next_after(created, Some(paris)),
            Some(at("2026-11-23T08:00:00Z"))
        );
        // Strictly after: on the minute, the next one.
        assert_eq!(
            every_ten.next_after(at("2026-11-22T02:20:00Z"), None),
            Some(at("2026-11-22T02:30:00Z"))
        );
    }

    #[test]
    fn both_day_fields_restricted_means_either() {
        // The 1st of the month or any Friday.
        let schedule = Schedule::parse("0 0 1 * fri").unwrap();
        // 2026-11-27 is a Friday.
        assert_eq!(
            schedule.next_after(at("2026-11-25T00:00:00Z"), None),
            Some(at("2026-11-27T00:00:00Z"))
        );
        assert_eq!(
            schedule.next_after(at("2026-11-28T00:00:00Z"), None),
            Some(at("2026-12-01T00:00:00Z"))
        );
    }

    #[test]
    fn names_ranges_steps_lists_and_sunday_as_seven() {
        let schedule = Schedule::parse("15,45 8-18/2 * jan-mar 7").unwrap();
        // 2027-01-03 is a Sunday.
        assert_eq!(
            schedule.next_after(at("2026-12-31T00:00:00Z"), None),
            Some(at("2027-01-03T08:15:00Z"))
        );
        assert_eq!(
            Schedule::parse("@daily").unwrap(),
            Schedule::parse("0 0 * * *").unwrap()
        );
    }

    #[test]
    fn a_skipped_local_time_does_not_fire_and_a_repeated_one_fires_once() {
        let paris: Tz = "Europe/Paris".parse().unwrap();
        // 2027-03-28 02:30 does not exist in Paris; the next 02:30 is on the 29th.
        let schedule = Schedule::parse("30 2 * * *").unwrap();
        assert_eq!(
            schedule.next_after(at("2027-03-27T12:00:00Z"), Some(paris)),
            Some(at("2027-03-29T00:30:00Z"))
        );
        // 2026-10-25 02:30 happens twice; it fires at the first.
        assert_eq!(
            schedule.next_after(at("2026-10-24T12:00:00Z"), Some(paris)),
            Some(at("2026-10-25T00:30:00Z"))
        );
    }

    #[test]
    fn bad_schedules_name_the_field() {
        for bad in [
            "* * * *",
            "60 * * * *",
            "* 24 * * *",
            "*/0 * * * *",
            "* * * foo *",
            "5-1 * * * *",
        ] {
            assert!(Schedule::parse(bad).is_err(), "{bad}");
        }
        let why = Schedule::parse("* 24 * * *").unwrap_err();
        assert!(why.0.starts_with("hour field"), "{}", why.0);
        // A day that never comes.
        let never = Schedule::parse("0 0 30 2 *").unwrap();
        assert_eq!(never.next_after(at("2026-01-01T00:00:00Z"), None), None);
    }
}
