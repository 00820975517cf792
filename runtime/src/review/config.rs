//! `.sift/review.toml`: which rules run, at what severity, on which paths, and how many findings
//! a review reports.
//!
//! ```toml
//! max_findings = 50
//!
//! [rules]
//! enable = ["java/empty-catch"]        # turn on rules that are off by default (globs allowed)
//! disable = ["python/bare-except-pass"] # turn rules off ("*" for all)
//! min_confidence = 0.7                  # drop rules less sure than this
//!
//! [rules.severity]
//! "python/mutable-default-arg" = "error"
//!
//! [paths]
//! include = ["src/**"]                  # when set, only these paths are reviewed
//! exclude = ["vendor", "**/*_pb2.py"]   # never reviewed
//! ```
//!
//! When a rule matches both an `enable` and a `disable` pattern, the longer (more specific)
//! pattern wins, and `disable` wins a tie: `disable = ["*"]` with `enable = ["python/*"]` runs
//! only the Python rules. In rule ids `*` matches anything; in paths `*` stops at `/`, `**`
//! does not, and a pattern without `/` matches any path component (`vendor`, `*_pb2.py`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::error::{Result, ReviewError};
use super::rule::Severity;

/// The parsed `.sift/review.toml`. The default reviews everything with the built-in settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReviewConfig {
    /// Which rules run and at what severity.
    pub rules: RulesConfig,
    /// Which files are reviewed.
    pub paths: PathsConfig,
    /// The most findings one review reports (the most severe and confident are kept).
    pub max_findings: Option<usize>,
    /// Where the configuration was read from, for error messages.
    #[serde(skip)]
    pub(crate) origin: String,
}

/// The `[rules]` table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RulesConfig {
    /// Rule id globs to turn on (including rules that are off by default).
    pub enable: Vec<String>,
    /// Rule id globs to turn off.
    pub disable: Vec<String>,
    /// Severity overrides, by exact rule id or glob.
    pub severity: BTreeMap<String, Severity>,
    /// Rules whose confidence is below this do not run.
    pub min_confidence: Option<f32>,
}

/// The `[paths]` table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PathsConfig {
    /// When not empty, only paths matching one of these globs are reviewed.
    pub include: Vec<String>,
    /// Paths matching one of these globs are never reviewed.
    pub exclude: Vec<String>,
}

impl ReviewConfig {
    /// Parses the text of a `review.toml`; `origin` names it in errors.
    pub fn from_toml(origin: &str, text: &str) -> Result<ReviewConfig> {
        let mut config: ReviewConfig = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| super::rule::line_of(text, s.start));
            ReviewError::Config {
                origin: match line {
                    Some(line) => format!("{origin}:{line}"),
                    None => origin.to_string(),
                },
                message: e.message().trim_end().to_string(),
            }
        })?;
        config.origin = origin.to_string();
        if let Some(c) = config.rules.min_confidence
            && !(0.0..=1.0).contains(&c)
        {
            return Err(ReviewError::Config {
                origin: origin.to_string(),
                message: format!("rules.min_confidence = {c} is outside 0..=1"),
            });
        }
        Ok(config)
    }

    /// Reads `path` (usually `<root>/.sift/review.toml`); a missing file is the default config.
    pub fn load(path: &Path) -> Result<ReviewConfig> {
        match std::fs::read_to_string(path) {
            Ok(text) => ReviewConfig::from_toml(&path.display().to_string(), &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ReviewConfig::default()),
            Err(source) => Err(ReviewError::Io { path: path.to_path_buf(), source }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_field() {
        let text = r#"
max_findings = 5
[rules]
enable = ["java/*"]
disable = ["python/x"]
min_confidence = 0.5
[rules.severity]
"go/self-comparison" = "error"
[paths]
include = ["src/**"]
exclude = ["vendor"]
"#;
        let c = ReviewConfig::from_toml("review.toml", text).unwrap();
        assert_eq!(c.max_findings, Some(5));
        assert_eq!(c.rules.enable, vec!["java/*"]);
        assert_eq!(c.rules.severity["go/self-comparison"], Severity::Error);
        assert_eq!(c.paths.exclude, vec!["vendor"]);
        assert_eq!(ReviewConfig::from_toml("r", "").unwrap().rules, RulesConfig::default());
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let err = ReviewConfig::from_toml("x/review.toml", "[rules]\ndisabel = []\n").unwrap_err();
        assert!(err.to_string().starts_with("x/review.toml:2: "), "{err}");
        let err = ReviewConfig::from_toml("r", "[rules]\nmin_confidence = 2.0").unwrap_err();
        assert!(err.to_string().contains("outside"), "{err}");
        let missing = ReviewConfig::load(Path::new("/definitely/not/here/review.toml")).unwrap();
        assert_eq!(missing, ReviewConfig::default());
    }
}
