//! `[github]`: how `sift review --post github` posts to a pull request. In a pull request's
//! review it is read from the base revision's `.sift/config.toml`, like the review's rules.

use super::spec::{Default, Key, Kind, Section};
use super::{Config, Invalid};

/// The `[github]` section's keys.
pub const SECTION: Section = Section {
    name: "github",
    doc: "The pull-request bot: `sift review --post github` (docs/github.md).",
    strict: true,
    elsewhere: &[],
    refused: &[],
    keys: &[
        Key {
            name: "max_comments",
            kind: Kind::Count { min: 0, max: 200 },
            default: Default::Count(20),
            env: None,
            in_files: true,
            doc: "The most new inline comments one push posts; the rest are listed in the review's body.",
        },
        Key {
            name: "login",
            kind: Kind::Text,
            default: Default::Unset,
            env: None,
            in_files: true,
            doc: "The login the bot posts as, whose marked comments are its own; empty: asked of the API (`GET /user`), else `github-actions[bot]` (the login of Actions' GITHUB_TOKEN).",
        },
    ],
};

/// `[github]`, as a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GithubSettings {
    /// The most new inline comments a push posts.
    pub max_comments: usize,
    /// The bot's login, when set.
    pub login: Option<String>,
}

impl std::default::Default for GithubSettings {
    fn default() -> Self {
        GithubSettings { max_comments: 20, login: None }
    }
}

impl Config {
    /// `[github]`.
    pub fn github(&self) -> Result<GithubSettings, Invalid> {
        let s = self.section(&SECTION)?;
        Ok(GithubSettings {
            max_comments: usize::try_from(s.count("max_comments")).unwrap_or(usize::MAX),
            login: s.opt_text("login").filter(|l| !l.trim().is_empty()),
        })
    }
}
