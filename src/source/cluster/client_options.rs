//! Fluss's client options (`client.writer.*`, the names of Fluss's Java client and
//! its Flink connector) mapped onto fluss-rs's `Config`.

use std::collections::HashMap;

use fluss::config::Config;

use crate::error::{Error, Result};

/// The options understood, for errors naming an unknown one.
const KNOWN: &[&str] = &[
    "client.writer.acks",
    "client.writer.retries",
    "client.writer.batch-size",
    "client.writer.batch-timeout",
    "client.writer.buffer.memory-size",
    "client.writer.request-max-size",
    "client.writer.enable-idempotence",
];

/// Sets `config` from Fluss client option names; an unknown name or a value of the
/// wrong form is an error naming both.
pub(super) fn apply(config: &mut Config, options: &HashMap<String, String>) -> Result<()> {
    let mut keys: Vec<&String> = options.keys().collect();
    keys.sort();
    for key in keys {
        let value = options[key].trim();
        let bad = |what: &str| {
            Error::invalid_input(format!("client option '{key}' = '{value}' is not {what}"))
        };
        match key.as_str() {
            "client.writer.acks" => {
                if !matches!(value, "all" | "-1" | "0" | "1") {
                    return Err(bad("one of all, -1, 0, 1"));
                }
                config.writer_acks = value.to_string();
            }
            "client.writer.retries" => {
                config.writer_retries = value.parse().map_err(|_| bad("a count"))?;
            }
            "client.writer.batch-size" => {
                config.writer_batch_size = bytes(value)
                    .and_then(|b| i32::try_from(b).ok())
                    .ok_or_else(|| bad("a size (e.g. 2mb)"))?;
            }
            "client.writer.request-max-size" => {
                config.writer_request_max_size = bytes(value)
                    .and_then(|b| i32::try_from(b).ok())
                    .ok_or_else(|| bad("a size (e.g. 10mb)"))?;
            }
            "client.writer.buffer.memory-size" => {
                config.writer_buffer_memory_size = bytes(value)
                    .and_then(|b| usize::try_from(b).ok())
                    .ok_or_else(|| bad("a size (e.g. 64mb)"))?;
            }
            "client.writer.batch-timeout" => {
                config.writer_batch_timeout_ms = millis(value)
                    .and_then(|m| i64::try_from(m).ok())
                    .ok_or_else(|| bad("a duration (e.g. 100ms, 1s)"))?;
            }
            "client.writer.enable-idempotence" => {
                config.writer_enable_idempotence =
                    value.parse().map_err(|_| bad("true or false"))?;
            }
            _ => {
                return Err(Error::invalid_input(format!(
                    "unknown client option '{key}' (known: {})",
                    KNOWN.join(", ")
                )));
            }
        }
    }
    Ok(())
}

/// `2mb`, `512kb`, `1048576` (Fluss's `MemorySize` forms) in bytes.
fn bytes(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let (number, unit) = split_unit(&lower);
    let scale: u64 = match unit {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kibibytes" => 1 << 10,
        "m" | "mb" | "mebibytes" => 1 << 20,
        "g" | "gb" | "gibibytes" => 1 << 30,
        _ => return None,
    };
    number.parse::<u64>().ok()?.checked_mul(scale)
}

/// `100ms`, `1s`, `2min`, `100` (milliseconds) in milliseconds.
fn millis(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let (number, unit) = split_unit(&lower);
    let scale: u64 = match unit {
        "" | "ms" => 1,
        "s" => 1_000,
        "min" | "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    number.parse::<u64>().ok()?.checked_mul(scale)
}

fn split_unit(text: &str) -> (&str, &str) {
    let at = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    (text[..at].trim(), text[at..].trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_fluss_names_and_refuses_others() {
        let mut config = Config::default();
        let options = HashMap::from([
            ("client.writer.acks".to_string(), "1".to_string()),
            ("client.writer.batch-size".to_string(), "2mb".to_string()),
            ("client.writer.batch-timeout".to_string(), "1s".to_string()),
        ]);
        apply(&mut config, &options).unwrap();
        assert_eq!(config.writer_acks, "1");
        assert_eq!(config.writer_batch_size, 2 << 20);
        assert_eq!(config.writer_batch_timeout_ms, 1000);
        let unknown = HashMap::from([("client.writer.nope".to_string(), "1".to_string())]);
        let e = apply(&mut config, &unknown).unwrap_err().to_string();
        assert!(
            e.contains("unknown client option 'client.writer.nope'"),
            "{e}"
        );
        let bad = HashMap::from([("client.writer.acks".to_string(), "some".to_string())]);
        assert!(apply(&mut config, &bad).is_err());
    }
}
