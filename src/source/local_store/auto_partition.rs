//! Auto-partitioning of a LocalStore table (`table.auto-partition.*`), as Fluss's
//! coordinator does it (`AutoPartitionManager`, `PartitionUtils`): partitions for the
//! next `num-precreate` time units are created, those older than `num-retention`
//! units dropped (what was tiered of them stays in the lake, where union reads still
//! find it), and a write may not create a partition that is out of date. The store
//! does this on every write to the table and at CREATE TABLE, on its
//! [`StoreClock`], which tests can set.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, Datelike, FixedOffset, Months, TimeDelta, Timelike};

use crate::error::{Error, Result};
use crate::source::FlussTable;
use crate::table::now_millis;

/// The time a LocalStore's time-based work (auto-partitioning) runs on.
#[derive(Debug, Clone, Default)]
pub enum StoreClock {
    /// The system clock.
    #[default]
    System,
    /// A clock that says what it is set to (epoch millis): tests move it.
    Manual(Arc<AtomicI64>),
}

impl StoreClock {
    /// A manual clock set to `millis`.
    pub fn manual(millis: i64) -> Self {
        StoreClock::Manual(Arc::new(AtomicI64::new(millis)))
    }

    /// Sets a manual clock (a system clock ignores it).
    pub fn set(&self, millis: i64) {
        if let StoreClock::Manual(now) = self {
            now.store(millis, Ordering::SeqCst);
        }
    }

    /// Epoch milliseconds now.
    pub fn now(&self) -> i64 {
        match self {
            StoreClock::System => now_millis(),
            StoreClock::Manual(now) => now.load(Ordering::SeqCst),
        }
    }
}

/// The time unit of a table's auto-partitions (`table.auto-partition.time-unit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimeUnit {
    Year,
    Quarter,
    Month,
    Day,
    Hour,
}

impl TimeUnit {
    /// The partition value format Fluss names the unit's partitions by.
    fn format(self) -> &'static str {
        match self {
            TimeUnit::Year => "yyyy",
            TimeUnit::Quarter => "yyyyQ",
            TimeUnit::Month => "yyyyMM",
            TimeUnit::Day => "yyyyMMdd",
            TimeUnit::Hour => "yyyyMMddHH",
        }
    }

    fn name(self) -> &'static str {
        match self {
            TimeUnit::Year => "YEAR",
            TimeUnit::Quarter => "QUARTER",
            TimeUnit::Month => "MONTH",
            TimeUnit::Day => "DAY",
            TimeUnit::Hour => "HOUR",
        }
    }
}

/// A table's auto-partitioning (`AutoPartitionStrategy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct AutoPartitioning {
    unit: TimeUnit,
    num_precreate: i64,
    /// Negative: partitions are never dropped.
    num_retention: i64,
    /// Index of the partition key holding the time (`table.auto-partition.key`).
    key_index: usize,
    single_key: bool,
    zone: FixedOffset,
}

impl AutoPartitioning {
    /// The table's auto-partitioning, `None` when it is off; an error for options Fluss
    /// refuses or this store cannot follow.
    pub(super) fn of(table: &FlussTable) -> Result<Option<Self>> {
        Self::from_properties(
            table.info.get_properties(),
            table.info.get_partition_keys(),
            &table.path.to_string(),
        )
    }

    /// As [`Self::of`], from a table's properties and partition keys.
    pub(super) fn from_properties(
        properties: &HashMap<String, String>,
        partition_keys: &[String],
        table: &str,
    ) -> Result<Option<Self>> {
        let get = |key: &str| properties.get(&format!("table.auto-partition.{key}"));
        if !get("enabled").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let context = |e: Error| e.with_context("table", table.to_string());
        if partition_keys.is_empty() {
            return Err(context(Error::invalid_input(
                "Currently, auto partition is only supported for partitioned table, please \
                 set table property 'table.auto-partition.enabled' to false.",
            )));
        }
        let unit = match get("time-unit").map(|u| u.to_ascii_uppercase()).as_deref() {
            None | Some("DAY") => TimeUnit::Day,
            Some("YEAR") => TimeUnit::Year,
            Some("QUARTER") => TimeUnit::Quarter,
            Some("MONTH") => TimeUnit::Month,
            Some("HOUR") => TimeUnit::Hour,
            Some(other) => {
                return Err(context(Error::invalid_input(format!(
                    "'table.auto-partition.time-unit' must be one of YEAR, QUARTER, MONTH, \
                     DAY, HOUR, not '{other}'"
                ))));
            }
        };
        let number = |name: &str, default: i64| -> Result<i64> {
            match get(name) {
                None => Ok(default),
                Some(v) => v.trim().parse().map_err(|_| {
                    context(Error::invalid_input(format!(
                        "'table.auto-partition.{name}' must be an integer, not '{v}'"
                    )))
                }),
            }
        };
        let key = match (get("key"), partition_keys) {
            (Some(key), _) => key.clone(),
            (None, [only]) => only.clone(),
            (None, _) => {
                return Err(context(Error::invalid_input(
                    "'table.auto-partition.key' must name the time partition key of a \
                     table with several partition keys",
                )));
            }
        };
        let key_index = partition_keys
            .iter()
            .position(|k| *k == key)
            .ok_or_else(|| {
                context(Error::invalid_input(format!(
                    "'table.auto-partition.key' = '{key}' is not a partition key"
                )))
            })?;
        Ok(Some(Self {
            unit,
            num_precreate: number("num-precreate", 2)?,
            num_retention: number("num-retention", 7)?,
            key_index,
            single_key: partition_keys.len() == 1,
            zone: time_zone(get("time-zone").map(String::as_str)).map_err(context)?,
        }))
    }

    /// The partition time `offset` units from `now_ms` (Fluss's
    /// `generateAutoPartitionTime`).
    fn time(&self, now_ms: i64, offset: i64) -> String {
        let Some(now) = DateTime::from_timestamp_millis(now_ms) else {
            return String::new();
        };
        let now = now.with_timezone(&self.zone);
        let months = |n: i64| {
            let shifted = if n >= 0 {
                now.checked_add_months(Months::new(n as u32))
            } else {
                now.checked_sub_months(Months::new(n.unsigned_abs() as u32))
            };
            shifted.unwrap_or(now)
        };
        let at = match self.unit {
            TimeUnit::Year => months(12 * offset),
            TimeUnit::Quarter => months(3 * offset),
            TimeUnit::Month => months(offset),
            TimeUnit::Day => now + TimeDelta::days(offset),
            TimeUnit::Hour => now + TimeDelta::hours(offset),
        };
        match self.unit {
            TimeUnit::Year => format!("{:04}", at.year()),
            TimeUnit::Quarter => format!("{:04}{}", at.year(), at.month0() / 3 + 1),
            TimeUnit::Month => format!("{:04}{:02}", at.year(), at.month()),
            TimeUnit::Day => format!("{:04}{:02}{:02}", at.year(), at.month(), at.day()),
            TimeUnit::Hour => format!(
                "{:04}{:02}{:02}{:02}",
                at.year(),
                at.month(),
                at.day(),
                at.hour()
            ),
        }
    }

    /// The names of the partitions to create at `now_ms` (those of the next
    /// `num-precreate` units; a table with several partition keys pre-creates none, as
    /// its other keys' values are not known).
    pub(super) fn to_precreate(&self, now_ms: i64) -> Vec<String> {
        if !self.single_key {
            return Vec::new();
        }
        (0..self.num_precreate.max(0))
            .map(|offset| self.time(now_ms, offset))
            .collect()
    }

    /// The time value of a partition name (its auto-partition key's value).
    fn time_of<'a>(&self, partition_name: &'a str) -> Option<&'a str> {
        partition_name.split('$').nth(self.key_index)
    }

    /// Of `partitions`, those retention drops at `now_ms`: time values before the
    /// earliest one kept (string order is time order in these formats).
    pub(super) fn expired<'a>(&self, now_ms: i64, partitions: &'a [String]) -> Vec<&'a str> {
        if self.num_retention < 0 {
            return Vec::new();
        }
        let earliest = self.time(now_ms, -self.num_retention);
        partitions
            .iter()
            .filter(|p| {
                self.time_of(p).is_some_and(|t| {
                    t != crate::table::HISTORICAL_PARTITION && t < earliest.as_str()
                })
            })
            .map(String::as_str)
            .collect()
    }

    /// Refuses a partition a write or ADD PARTITION would create, in Fluss's words:
    /// its time value must have the unit's format and not be out of date at `now_ms`.
    pub(super) fn check_new(&self, now_ms: i64, partition_name: &str) -> Result<()> {
        let value = self.time_of(partition_name).unwrap_or_default();
        let digits = match self.unit {
            TimeUnit::Year => 4,
            TimeUnit::Quarter => 5,
            TimeUnit::Month => 6,
            TimeUnit::Day => 8,
            TimeUnit::Hour => 10,
        };
        let well_formed = value.len() == digits
            && value.bytes().all(|b| b.is_ascii_digit())
            && (self.unit != TimeUnit::Quarter || matches!(value.as_bytes()[4], b'1'..=b'4'));
        if !well_formed {
            return Err(Error::invalid_input(format!(
                "Partition value '{value}' does not match the expected format '{}' for \
                 auto-partition time unit '{}'.",
                self.unit.format(),
                self.unit.name()
            )));
        }
        if self.num_retention >= 0 {
            let earliest = self.time(now_ms, -self.num_retention);
            if earliest.as_str() > value {
                return Err(Error::invalid_input(format!(
                    "Partition value '{value}' is out-of-date. The earliest retained \
                     partition is '{earliest}'."
                )));
            }
        }
        Ok(())
    }
}

/// `table.auto-partition.time-zone`: UTC (also the default here) or a fixed offset.
/// Named zones need a time zone database this store does not carry.
fn time_zone(zone: Option<&str>) -> Result<FixedOffset> {
    let utc = FixedOffset::east_opt(0).ok_or_else(|| Error::internal("UTC offset"))?;
    let Some(zone) = zone.map(str::trim) else {
        return Ok(utc);
    };
    if ["UTC", "GMT", "Z", "Etc/UTC"]
        .iter()
        .any(|z| z.eq_ignore_ascii_case(zone))
    {
        return Ok(utc);
    }
    let offset = zone
        .strip_prefix("UTC")
        .or_else(|| zone.strip_prefix("GMT"))
        .unwrap_or(zone);
    let parsed = (|| {
        let sign = match offset.as_bytes().first()? {
            b'+' => 1,
            b'-' => -1,
            _ => return None,
        };
        let (hours, minutes) = offset[1..].split_once(':').unwrap_or((&offset[1..], "0"));
        let seconds = hours.parse::<i32>().ok()? * 3600 + minutes.parse::<i32>().ok()? * 60;
        FixedOffset::east_opt(sign * seconds)
    })();
    parsed.ok_or_else(|| {
        Error::unsupported(format!(
            "'table.auto-partition.time-zone' = '{zone}' is not supported here: use UTC or an \
             offset such as +08:00"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strategy(unit: &str, extra: &[(&str, &str)]) -> AutoPartitioning {
        let mut properties: HashMap<String, String> = [
            ("table.auto-partition.enabled", "true"),
            ("table.auto-partition.time-unit", unit),
        ]
        .iter()
        .chain(extra)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        properties.retain(|_, v| !v.is_empty());
        AutoPartitioning::from_properties(&properties, &["dt".to_string()], "db.t")
            .unwrap()
            .unwrap()
    }

    // 2025-05-08 10:30:00 UTC
    const NOW: i64 = 1_746_700_200_000;

    #[test]
    fn partition_times_are_fluss_s() {
        assert_eq!(
            strategy("DAY", &[]).to_precreate(NOW),
            ["20250508", "20250509"]
        );
        assert_eq!(
            strategy("HOUR", &[]).to_precreate(NOW),
            ["2025050810", "2025050811"]
        );
        assert_eq!(
            strategy("MONTH", &[]).to_precreate(NOW),
            ["202505", "202506"]
        );
        assert_eq!(
            strategy("QUARTER", &[]).to_precreate(NOW),
            ["20252", "20253"]
        );
        assert_eq!(strategy("YEAR", &[]).to_precreate(NOW), ["2025", "2026"]);
        let east = strategy("DAY", &[("table.auto-partition.time-zone", "+14:00")]);
        assert_eq!(east.to_precreate(NOW)[0], "20250509");
    }

    #[test]
    fn retention_drops_what_is_older_and_refuses_to_recreate_it() {
        // AutoPartitionManager: now 20250508, num-retention 2 keeps 20250506, 20250507
        let s = strategy("DAY", &[("table.auto-partition.num-retention", "2")]);
        let partitions: Vec<String> = ["20250505", "20250506", "20250507", "20250508"]
            .map(String::from)
            .to_vec();
        assert_eq!(s.expired(NOW, &partitions), ["20250505"]);
        assert!(s.check_new(NOW, "20250506").is_ok());
        let e = s.check_new(NOW, "20250505").unwrap_err().to_string();
        assert!(
            e.contains("'20250505' is out-of-date. The earliest retained partition is '20250506'"),
            "{e}"
        );
        let e = s.check_new(NOW, "2025-05-08").unwrap_err().to_string();
        assert!(e.contains("expected format 'yyyyMMdd'"), "{e}");
    }
}
