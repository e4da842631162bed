//! Lake formats.
