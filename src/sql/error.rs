//! Turning query-engine errors into the crate's [`Error`] with a readable, one-line
//! message: no Rust `Debug` dumps, no backtraces, no nested "External error: ..."
//! prefixes.

use datafusion::error::DataFusionError;

use crate::error::{Error, ErrorKind};

/// Converts a DataFusion error, taking this crate's own error back out of it when it
/// carries one (its kind travels as a value), else classifying DataFusion's variant.
pub fn from_datafusion(e: DataFusionError) -> Error {
    match Error::take_from(e) {
        Ok(ours) => ours,
        Err(e) => Error::new(kind_of(&e), one_line(&message_of(&e))),
    }
}

fn kind_of(e: &DataFusionError) -> ErrorKind {
    match e {
        DataFusionError::SQL(..)
        | DataFusionError::Plan(_)
        | DataFusionError::SchemaError(..)
        | DataFusionError::Configuration(_) => ErrorKind::InvalidInput,
        DataFusionError::NotImplemented(_) => ErrorKind::FeatureUnsupported,
        DataFusionError::ResourcesExhausted(_) => ErrorKind::ResourcesExhausted,
        DataFusionError::IoError(_) | DataFusionError::ObjectStore(_) => ErrorKind::Io,
        DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => {
            kind_of(inner)
        }
        DataFusionError::Shared(inner) => kind_of(inner),
        DataFusionError::Collection(errors) => errors.first().map_or(ErrorKind::Internal, kind_of),
        DataFusionError::ArrowError(..) | DataFusionError::ParquetError(..) => {
            ErrorKind::DataInvalid
        }
        _ => ErrorKind::Internal,
    }
}

/// The message of a DataFusion error without its backtrace, with SQL parser errors
/// rendered by `Display` instead of `Debug`.
fn message_of(e: &DataFusionError) -> String {
    match e {
        DataFusionError::SQL(parser, _) => {
            format!("SQL syntax error: {parser}").replace("sql parser error: ", "")
        }
        DataFusionError::Plan(m) => m.clone(),
        DataFusionError::Execution(m) | DataFusionError::ResourcesExhausted(m) => m.clone(),
        DataFusionError::NotImplemented(m) => format!("not supported: {m}"),
        DataFusionError::Configuration(m) => format!("invalid setting: {m}"),
        DataFusionError::Context(ctx, inner) => format!("{ctx}: {}", message_of(inner)),
        DataFusionError::Diagnostic(_, inner) => message_of(inner),
        DataFusionError::Shared(inner) => message_of(inner),
        DataFusionError::Collection(errors) => errors
            .first()
            .map_or_else(|| "unknown error".to_string(), message_of),
        other => other.strip_backtrace(),
    }
}

/// Collapses newlines and runs of spaces into single spaces.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwraps_crate_errors() {
        let e: DataFusionError = Error::data_invalid("bad crc").into();
        assert_eq!(from_datafusion(e).to_string(), "data invalid: bad crc");
        let e: DataFusionError = Error::not_found("table 'x' not found").into();
        let e = DataFusionError::Context("planning".into(), Box::new(e));
        assert_eq!(from_datafusion(e).kind(), ErrorKind::NotFound);
        let e = DataFusionError::Plan("table 'x' not found".into());
        assert_eq!(
            from_datafusion(e).to_string(),
            "invalid input: table 'x' not found"
        );
    }
}
