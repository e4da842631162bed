//! The crate's one error type.
//!
//! Modelled on iceberg-rust's `Error`: a [`ErrorKind`] that callers can match on, a
//! human message, and ordered `key: value` context (table, bucket, file, offset, ...)
//! that says *where* the problem is. Errors become [`DataFusionError`] at the
//! provider boundary ([`From<Error> for DataFusionError`]).
//!
//! Context values must never carry credentials: only names, paths and offsets.

use std::backtrace::{Backtrace, BacktraceStatus};
use std::fmt;

use datafusion::error::DataFusionError;

/// What went wrong, coarsely, so callers can react without parsing messages. New
/// kinds may come: match with a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Bytes on disk or over the network are malformed: bad CRC, truncated batch,
    /// unknown magic, impossible lengths, undecodable Arrow data.
    DataInvalid,
    /// A database, table, schema id, partition, file or snapshot does not exist.
    NotFound,
    /// The object already exists (create without `if not exists`).
    AlreadyExists,
    /// The caller asked for something invalid: bad name, wrong table kind, bad option.
    InvalidInput,
    /// Valid input that this crate does not support (yet).
    FeatureUnsupported,
    /// Underlying storage failed (I/O, object store).
    Io,
    /// The lake format library (paimon / iceberg) failed.
    Lake,
    /// A Fluss cluster could not be reached or answered with an error.
    Cluster,
    /// Another writer holds the store: retry later.
    Busy,
    /// A memory (or other resource) limit was reached.
    ResourcesExhausted,
    /// The caller stopped the work (Ctrl-C in the shell).
    Cancelled,
    /// A bug or broken invariant inside this crate.
    Internal,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            ErrorKind::DataInvalid => "data invalid",
            ErrorKind::NotFound => "not found",
            ErrorKind::AlreadyExists => "already exists",
            ErrorKind::InvalidInput => "invalid input",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::FeatureUnsupported => "unsupported",
            ErrorKind::Io => "io error",
            ErrorKind::Lake => "lake error",
            ErrorKind::Cluster => "cluster error",
            ErrorKind::Busy => "busy",
            ErrorKind::ResourcesExhausted => "resources exhausted",
            ErrorKind::Internal => "internal error",
        };
        f.write_str(name)
    }
}

/// A backtrace of the caller, when the environment asks for backtraces.
fn captured_backtrace() -> Option<Box<Backtrace>> {
    let backtrace = Backtrace::capture();
    (backtrace.status() == BacktraceStatus::Captured).then(|| Box::new(backtrace))
}

/// The error of every fallible operation in this crate.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    context: Vec<(&'static str, String)>,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    /// Where the error was made, when `RUST_BACKTRACE` (or `RUST_LIB_BACKTRACE`) asks
    /// for backtraces, as iceberg-rust's errors carry one.
    backtrace: Option<Box<Backtrace>>,
}

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error of `kind` with a message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            context: Vec::new(),
            source: None,
            backtrace: captured_backtrace(),
        }
    }

    /// Where the error was made, when the environment asks for backtraces
    /// (`RUST_BACKTRACE=1` or `RUST_LIB_BACKTRACE=1`).
    pub fn backtrace(&self) -> Option<&Backtrace> {
        self.backtrace.as_deref()
    }

    /// Adds one `key: value` of context (table, file, bucket, offset, ...).
    pub fn with_context(mut self, key: &'static str, value: impl fmt::Display) -> Self {
        // Layers that each name what they know may name the same thing twice.
        let value = value.to_string();
        if !self.context.iter().any(|(k, v)| *k == key && *v == value) {
            self.context.push((key, value));
        }
        self
    }

    /// Attaches the underlying cause.
    pub fn with_source(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message without context.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Takes this crate's error back out of a DataFusion error that carries it (see
    /// [`Error::find_in`]); where it is shared, a copy with its kind, message and
    /// context; `Err` gives the DataFusion error back when it carries none.
    pub fn take_from(e: DataFusionError) -> std::result::Result<Error, DataFusionError> {
        match e {
            DataFusionError::External(inner) => match inner.downcast::<Error>() {
                Ok(ours) => Ok(*ours),
                Err(other) => Err(DataFusionError::External(other)),
            },
            DataFusionError::Context(c, inner) => {
                Self::take_from(*inner).map_err(|e| DataFusionError::Context(c, Box::new(e)))
            }
            DataFusionError::Diagnostic(d, inner) => {
                Self::take_from(*inner).map_err(|e| DataFusionError::Diagnostic(d, Box::new(e)))
            }
            e => match Self::find_in(&e) {
                Some(ours) => Ok(Error {
                    kind: ours.kind,
                    message: ours.message.clone(),
                    context: ours.context.clone(),
                    source: ours.source.as_ref().map(|s| s.to_string().into()),
                    // where the shared original was made is not copied, and here is not it
                    backtrace: None,
                }),
                None => Err(e),
            },
        }
    }

    /// This crate's error carried inside a DataFusion error (through `External`,
    /// contexts, shared and collected errors), if there is one.
    pub fn find_in(e: &DataFusionError) -> Option<&Error> {
        match e {
            DataFusionError::External(inner) => inner.downcast_ref::<Error>(),
            DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => {
                Self::find_in(inner)
            }
            DataFusionError::Shared(inner) => Self::find_in(inner),
            DataFusionError::Collection(errors) => errors.first().and_then(Self::find_in),
            DataFusionError::ArrowError(inner, _) => match inner.as_ref() {
                datafusion::arrow::error::ArrowError::ExternalError(e) => e
                    .downcast_ref::<DataFusionError>()
                    .and_then(Self::find_in)
                    .or_else(|| e.downcast_ref::<Error>()),
                _ => None,
            },
            _ => None,
        }
    }

    /// The value of a context key, if set (the last one wins).
    pub fn context_value(&self, key: &str) -> Option<&str> {
        self.context
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Shorthand for a [`ErrorKind::DataInvalid`] error.
    pub fn data_invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::DataInvalid, message)
    }

    /// Shorthand for a [`ErrorKind::NotFound`] error.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    /// Shorthand for a [`ErrorKind::InvalidInput`] error.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, message)
    }

    /// Shorthand for a [`ErrorKind::Internal`] error.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// Shorthand for a [`ErrorKind::FeatureUnsupported`] error.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::FeatureUnsupported, message)
    }

    /// An [`ErrorKind::Io`] error reading or writing `path`.
    pub fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Self::new(ErrorKind::Io, "i/o failed")
            .with_context("file", path.display())
            .with_source(source)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)?;
        if !self.context.is_empty() {
            f.write_str(" (")?;
            for (i, (k, v)) in self.context.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{k}: {v}")?;
            }
            f.write_str(")")?;
        }
        if let Some(source) = &self.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|s| s.as_ref() as &(dyn std::error::Error + 'static))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        let kind = if e.kind() == std::io::ErrorKind::NotFound {
            ErrorKind::NotFound
        } else {
            ErrorKind::Io
        };
        Error::new(kind, "i/o failed").with_source(e)
    }
}

impl From<object_store::Error> for Error {
    fn from(e: object_store::Error) -> Self {
        let kind = match e {
            object_store::Error::NotFound { .. } => ErrorKind::NotFound,
            object_store::Error::AlreadyExists { .. } => ErrorKind::AlreadyExists,
            _ => ErrorKind::Io,
        };
        Error::new(kind, "object store operation failed").with_source(e)
    }
}

impl From<datafusion::arrow::error::ArrowError> for Error {
    fn from(e: datafusion::arrow::error::ArrowError) -> Self {
        Error::new(ErrorKind::DataInvalid, "arrow error").with_source(e)
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::new(ErrorKind::DataInvalid, "invalid JSON").with_source(e)
    }
}

impl From<fluss::error::Error> for Error {
    fn from(e: fluss::error::Error) -> Self {
        Error::new(ErrorKind::InvalidInput, "fluss metadata error").with_source(e)
    }
}

#[cfg(feature = "paimon")]
impl From<paimon::Error> for Error {
    fn from(e: paimon::Error) -> Self {
        Error::new(ErrorKind::Lake, "paimon operation failed").with_source(e)
    }
}

impl From<DataFusionError> for Error {
    fn from(e: DataFusionError) -> Self {
        match Error::take_from(e) {
            Ok(ours) => ours,
            Err(DataFusionError::ResourcesExhausted(m)) => {
                Error::new(ErrorKind::ResourcesExhausted, m)
            }
            Err(e) => Error::new(ErrorKind::Internal, "query engine error").with_source(e),
        }
    }
}

/// Our errors cross into DataFusion whole, kind and context intact, and are taken
/// back out by downcasting ([`Error::take_from`]), never by parsing messages.
impl From<Error> for DataFusionError {
    fn from(e: Error) -> Self {
        DataFusionError::External(Box::new(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_has_kind_message_and_context() {
        let e = Error::data_invalid("crc mismatch")
            .with_context("file", "/x/00000000000000000000.log")
            .with_context("base_offset", 42);
        assert_eq!(
            e.to_string(),
            "data invalid: crc mismatch (file: /x/00000000000000000000.log, base_offset: 42)"
        );
        assert_eq!(e.context_value("base_offset"), Some("42"));
    }

    #[test]
    fn the_same_context_twice_is_shown_once() {
        let e = Error::data_invalid("bad")
            .with_context("table", "db.t")
            .with_context("table", "db.t")
            .with_context("table", "db.u");
        assert_eq!(
            e.to_string(),
            "data invalid: bad (table: db.t, table: db.u)"
        );
    }
}
