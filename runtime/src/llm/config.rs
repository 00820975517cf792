//! The `[model]` configuration (placeholder while the loader is written).
