//! The `[index]` section of the configuration: how the tree is walked. `sift_engine::config`
//! builds it from the configuration's layers (files, editor settings, flags); this crate reads
//! no configuration file.

use crate::secrets::SecretPatterns;
use crate::store::Entry;

/// `.sift/config.toml`: the repository's configuration, committed (every part of sift reads its
/// own table of it; the indexer, the lowest layer that owns a table, registers the file).
pub const CONFIG: Entry = Entry::shared_file("indexer", "config.toml");

/// Default limit on the size of an indexed file: 1 MiB.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 1024 * 1024;

/// Settings that decide which files are indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexConfig {
    /// Files larger than this many bytes are skipped (and counted).
    pub max_file_size: u64,
    /// Whether symbolic links are followed (loops are detected and skipped either way).
    pub follow_symlinks: bool,
    /// Files never indexed: the secret patterns (`[sandbox] secret_patterns`, the same list
    /// the sandbox refuses to read), skipped and counted.
    pub secrets: SecretPatterns,
    /// Files indexed although they match [`IndexConfig::secrets`] (the user's opt-in per path,
    /// `[index] index_secrets`).
    pub secret_exceptions: SecretPatterns,
    /// Symbolic links (workspace-relative paths, or folders holding them) that may lead outside
    /// the root (`[index] outside_links`); every other link whose target resolves outside is
    /// skipped and counted.
    pub outside_links: Vec<String>,
}

impl Default for IndexConfig {
    fn default() -> Self {
        IndexConfig {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            follow_symlinks: true,
            secrets: SecretPatterns::defaults(),
            secret_exceptions: SecretPatterns::none(),
            outside_links: Vec::new(),
        }
    }
}

impl IndexConfig {
    /// Whether the file at `rel` is a secret the index leaves out.
    pub fn is_secret(&self, rel: &std::path::Path) -> bool {
        self.secrets.is_secret(rel) && !self.secret_exceptions.is_secret(rel)
    }

    /// Whether the link at `rel` may lead outside the root.
    pub fn may_lead_outside(&self, rel: &str) -> bool {
        self.outside_links.iter().any(|p| {
            let p = p.trim_matches('/');
            rel == p || rel.strip_prefix(p).is_some_and(|rest| rest.starts_with('/'))
        })
    }
}

/// Parses a size such as `1048576`, `512K`, `1 MiB`, `2MB` (K/M/G count powers of 1024).
pub fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: f64 = num.parse().map_err(|_| format!("{text:?} is not a size (try \"1 MiB\")"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => return Err(format!("unknown unit {other:?} in {text:?} (use K, M or G)")),
    };
    let bytes = (num * mult as f64).round();
    if bytes < 1.0 {
        return Err(format!("{text:?} must be at least one byte"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("512K"), Ok(512 << 10));
        assert_eq!(parse_size("1 MiB"), Ok(1 << 20));
        assert_eq!(parse_size("1.5mb"), Ok(3 << 19));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("3 parsecs").is_err());
        assert!(parse_size("0").is_err());
    }
}
