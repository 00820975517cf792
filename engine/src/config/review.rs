//! `[review]` of the configuration file: what the language server reviews on its own. The same
//! table of the repository's `.sift/config.toml` holds the review's rules (`max_findings`,
//! `[review.rules]`, `[review.paths]`, `[[review.plugins]]`), which the review reads itself
//! (its `settings.rs`), from the base revision in a `--base` review.

use super::spec::{Default, Key, Kind, Section};
use super::{Config, Invalid};

/// The keys of `[review]` that are the review's rules, read by the review itself from the
/// repository's `.sift/config.toml` (the format of the old `.sift/review.toml`, one level down).
pub const RULE_KEYS: [&str; 4] = sift_runtime::rules::config::REVIEW_KEYS;

/// The `[review]` section's keys. Keys it does not know are ignored (and listed by `sift
/// config show`), as they always were.
pub const SECTION: Section = Section {
    name: "review",
    doc: "What the language server reviews on its own; the review's rules are [review.rules], [review.paths], [[review.plugins]] and max_findings of the repository's file (docs/review.md).",
    strict: false,
    elsewhere: &RULE_KEYS,
    refused: &[],
    keys: &[Key {
        name: "on_save",
        kind: Kind::Bool,
        default: Default::Bool(true),
        env: None,
        in_files: true,
        doc: "sift lsp reviews a file's diff from HEAD when it is saved and publishes the findings.",
    }],
};

/// The `[review]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewSettings {
    /// Whether the language server reviews a file when it is saved.
    pub on_save: bool,
}

impl std::default::Default for ReviewSettings {
    fn default() -> Self {
        ReviewSettings { on_save: true }
    }
}

impl Config {
    /// `[review]`.
    pub fn review(&self) -> Result<ReviewSettings, Invalid> {
        let s = self.section(&SECTION)?;
        Ok(ReviewSettings { on_save: s.bool("on_save") })
    }
}
