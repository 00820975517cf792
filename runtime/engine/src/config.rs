//! Configuration: `ROOT/.sift/config.toml`, with the editor's settings laid over it.

use std::path::{Path, PathBuf};

use sift_indexer::Error;

/// The tables of `.sift/config.toml` that editors may also set (through `initializationOptions`).
pub const EDITOR_TABLES: [&str; 3] = ["index", "embed", "review"];

/// Reads `ROOT/.sift/config.toml` (an empty table when there is none), with `overrides` (an
/// object of tables, as editors send in `initializationOptions`) laid over its
/// [`EDITOR_TABLES`] key by key. Returns the table and the file's path (for messages).
pub fn config_table(
    root: &Path,
    overrides: Option<&serde_json::Value>,
) -> sift_indexer::Result<(toml::Table, PathBuf)> {
    // A missing or wrong root is reported as such, not as an unreadable config file.
    crate::store::open(root)?;
    let path = root.join(".sift").join("config.toml");
    let mut table = match std::fs::read_to_string(&path) {
        Ok(text) => text.parse::<toml::Table>().map_err(|e: toml::de::Error| Error::Config {
            path: path.clone(),
            reason: e.message().to_string(),
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => toml::Table::new(),
        Err(e) => return Err(Error::io("read", &path, e)),
    };
    for name in EDITOR_TABLES {
        let Some(serde_json::Value::Object(extra)) = overrides.and_then(|o| o.get(name)) else {
            continue;
        };
        let section = table.entry(name).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let Some(section) = section.as_table_mut() else { continue };
        for (key, value) in extra {
            if value.is_null() {
                continue;
            }
            let value = toml::Value::try_from(value).map_err(|e| Error::Config {
                path: path.clone(),
                reason: format!("editor setting {name}.{key}: {e}"),
            })?;
            section.insert(key.clone(), value);
        }
    }
    Ok((table, path))
}
