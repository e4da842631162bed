//! Fluss data sources: the [`FlussSource`] trait and the embedded LocalStore.
