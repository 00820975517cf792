//! `[feedback]`: whether sift records the fate of what it suggests, and how much of it (the
//! engine's record of fates reads it).

use super::spec::{Default, Key, Kind, Section};
use super::{Config, Invalid};

/// The `[feedback]` section's keys.
pub const SECTION: Section = Section {
    name: "feedback",
    doc: "The local record of what became of sift's suggestions (`.sift/fates/`, never sent anywhere).",
    strict: true,
    elsewhere: &[],
    refused: &[],
    keys: &[
        Key {
            name: "record",
            kind: Kind::Bool,
            default: Default::Bool(true),
            env: None,
            in_files: true,
            doc: "false: nothing is recorded (what is recorded already stays until `sift feedback clear`).",
        },
        Key {
            name: "text",
            kind: Kind::Bool,
            default: Default::Bool(false),
            env: None,
            in_files: true,
            doc: "true: records also carry the text they are about (a search's query). Off by default: records hold ids, paths, rules, models and counts, no code. Only the user's own file or editor settings may turn it on.",
        },
        Key {
            name: "max_size",
            kind: Kind::Size,
            default: Default::Text("4 MiB"),
            env: None,
            in_files: true,
            doc: "The record's file is set aside when it passes this size; the four newest set aside are kept, older ones deleted.",
        },
    ],
};

/// `[feedback]`, as a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedbackSettings {
    /// Whether anything is recorded.
    pub record: bool,
    /// Whether records keep the text they are about.
    pub text: bool,
    /// The size at which the record's file is set aside.
    pub max_size: u64,
}

impl std::default::Default for FeedbackSettings {
    fn default() -> Self {
        FeedbackSettings { record: true, text: false, max_size: 4 << 20 }
    }
}

impl Config {
    /// `[feedback]`.
    pub fn feedback(&self) -> Result<FeedbackSettings, Invalid> {
        let s = self.section(&SECTION)?;
        let text = s.bool("text");
        if text {
            s.not_from_repo(
                "text",
                "a repository cannot opt its users in to recording text; set it in your own configuration",
            )?;
        }
        Ok(FeedbackSettings {
            record: s.bool("record"),
            text,
            max_size: s.count("max_size").max(1),
        })
    }
}
