//! Arrow IPC buffer compression used in log batches (`table.log.arrow.compression.*`).

use std::collections::HashMap;

use datafusion::arrow::ipc::CompressionType;

use crate::error::{Error, Result};

/// Table property selecting the codec: `NONE`, `LZ4_FRAME` or `ZSTD` (default).
pub const COMPRESSION_TYPE_PROPERTY: &str = "table.log.arrow.compression.type";
/// Table property selecting the ZSTD level (default 3, valid 1..=22).
pub const ZSTD_LEVEL_PROPERTY: &str = "table.log.arrow.compression.zstd.level";

/// How the Arrow buffers of a log batch are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrowCompression {
    /// Buffers stored as is.
    None,
    /// LZ4 frame format per buffer.
    Lz4Frame,
    /// ZSTD per buffer at the given level.
    Zstd(i32),
}

impl Default for ArrowCompression {
    /// Fluss's default: ZSTD level 3 (`ArrowCompressionInfo.DEFAULT_COMPRESSION`).
    fn default() -> Self {
        ArrowCompression::Zstd(3)
    }
}

impl ArrowCompression {
    /// Reads the codec from table properties, as the Fluss client does.
    pub fn from_properties(properties: &HashMap<String, String>) -> Result<Self> {
        let kind = properties
            .get(COMPRESSION_TYPE_PROPERTY)
            .map(|s| s.trim().to_ascii_uppercase());
        match kind.as_deref() {
            None | Some("ZSTD") => {
                let level = match properties.get(ZSTD_LEVEL_PROPERTY) {
                    None => 3,
                    Some(v) => v
                        .trim()
                        .parse::<i32>()
                        .ok()
                        .filter(|l| (1..=22).contains(l))
                        .ok_or_else(|| {
                            Error::invalid_input(format!(
                                "{ZSTD_LEVEL_PROPERTY} must be 1..=22, got '{v}'"
                            ))
                        })?,
                };
                Ok(ArrowCompression::Zstd(level))
            }
            Some("LZ4_FRAME") => Ok(ArrowCompression::Lz4Frame),
            Some("NONE") => Ok(ArrowCompression::None),
            Some(other) => Err(Error::invalid_input(format!(
                "unknown {COMPRESSION_TYPE_PROPERTY} '{other}' (NONE, LZ4_FRAME, ZSTD)"
            ))),
        }
    }

    /// The Arrow IPC codec, if any.
    pub fn ipc_codec(self) -> Option<CompressionType> {
        match self {
            ArrowCompression::None => None,
            ArrowCompression::Lz4Frame => Some(CompressionType::LZ4_FRAME),
            ArrowCompression::Zstd(_) => Some(CompressionType::ZSTD),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_table_properties() {
        assert_eq!(
            ArrowCompression::from_properties(&props(&[])).unwrap(),
            ArrowCompression::Zstd(3)
        );
        assert_eq!(
            ArrowCompression::from_properties(&props(&[(COMPRESSION_TYPE_PROPERTY, "lz4_frame")]))
                .unwrap(),
            ArrowCompression::Lz4Frame
        );
        assert_eq!(
            ArrowCompression::from_properties(&props(&[(ZSTD_LEVEL_PROPERTY, "9")])).unwrap(),
            ArrowCompression::Zstd(9)
        );
        assert!(ArrowCompression::from_properties(&props(&[(ZSTD_LEVEL_PROPERTY, "99")])).is_err());
        assert!(
            ArrowCompression::from_properties(&props(&[(COMPRESSION_TYPE_PROPERTY, "GZIP")]))
                .is_err()
        );
    }
}
