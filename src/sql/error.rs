//! Turning query-engine errors into the crate's [`Error`] with a readable, one-line
//! message: no Rust `Debug` dumps, no backtraces, no nested "External error: ..."
//! prefixes.

use datafusion::error::DataFusionError;

use crate::error::{Error, ErrorKind};

/// Converts a DataFusion error, unwrapping this crate's own errors carried inside it.
pub fn from_datafusion(e: DataFusionError) -> Error {
    if let Some(inner) = find_crate_error(&e) {
        return with_kind_prefix(inner.kind(), &inner.to_string());
    }
    with_kind_prefix(kind_of(&e), &message_of(&e))
}

const KINDS: [ErrorKind; 10] = [
    ErrorKind::DataInvalid,
    ErrorKind::NotFound,
    ErrorKind::AlreadyExists,
    ErrorKind::InvalidInput,
    ErrorKind::FeatureUnsupported,
    ErrorKind::Io,
    ErrorKind::Lake,
    ErrorKind::Busy,
    ErrorKind::ResourcesExhausted,
    ErrorKind::Internal,
];

/// An error from a message that may start with a rendered kind (`not found: ...`, as
/// this crate's errors carried in DataFusion plan errors do): that kind wins.
fn with_kind_prefix(default: ErrorKind, message: &str) -> Error {
    let message = one_line(message);
    for kind in KINDS {
        if let Some(rest) = message.strip_prefix(&format!("{kind}: ")) {
            return Error::new(kind, rest);
        }
    }
    Error::new(default, message)
}

fn find_crate_error(e: &DataFusionError) -> Option<&Error> {
    match e {
        DataFusionError::External(inner) => inner.downcast_ref::<Error>(),
        DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => {
            find_crate_error(inner)
        }
        DataFusionError::Shared(inner) => find_crate_error(inner),
        DataFusionError::Collection(errors) => errors.first().and_then(find_crate_error),
        _ => None,
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
        let e = DataFusionError::Plan("table 'x' not found".into());
        assert_eq!(
            from_datafusion(e).to_string(),
            "invalid input: table 'x' not found"
        );
    }
}
