//! `[review]` of the configuration file: what the language server reviews on its own. (The
//! review's rules live in `.sift/review.toml`, read by `sift_runtime::rules`.)

use super::spec::{Default, Key, Kind, Section};
use super::{Config, Invalid};

/// The `[review]` section's keys. Keys it does not know are ignored (and listed by `sift
/// config show`), as they always were.
pub const SECTION: Section = Section {
    name: "review",
    doc: "What the language server reviews on its own (the rules are in .sift/review.toml).",
    strict: false,
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
