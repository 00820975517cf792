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
//! [rules.per_path_disable]              # rules off in some paths (the editor's "silence")
//! "/web/legacy.py" = ["python/is-literal"]
//!
//! [paths]
//! include = ["src/**"]                  # when set, only these paths are reviewed
//! exclude = ["vendor", "**/*_pb2.py"]   # never reviewed
//!
//! [[plugins]]                           # a WebAssembly plugin (see docs/plugins.md)
//! path = ".sift/plugins/banned-api.wasm"
//! grants = ["read", "log"]              # default: ["log"]
//! deadline_ms = 1000                    # per call; also fuel, memory_mb, read_mb, enabled
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
use super::glob;
use super::rule::Severity;

/// The review's own keys of a file's table (those of `.sift/review.toml`, and of `[review]` in
/// `.sift/config.toml`).
pub const REVIEW_KEYS: [&str; 4] = ["max_findings", "rules", "paths", "plugins"];

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
    /// The `[[plugins]]` entries as written (a path, grants, limits); the plugin host
    /// (`sift_plugins::PluginEntry`) reads and checks them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plugins: Vec<toml::Value>,
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
    /// Path glob → rule id globs that do not run on matching paths.
    pub per_path_disable: BTreeMap<String, Vec<String>>,
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
        config.checked()
    }

    /// The review's tables inside another file's table (`[review]` of `.sift/config.toml`: the
    /// same keys one level down, `keys` those of them that are the review's); `origin` names it
    /// in errors (`.sift/config.toml [review]`).
    pub fn from_table(origin: &str, table: &toml::Table, keys: &[&str]) -> Result<ReviewConfig> {
        let own: toml::Table = table
            .iter()
            .filter(|(k, _)| keys.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut config: ReviewConfig =
            toml::Value::Table(own).try_into().map_err(|e: toml::de::Error| {
                ReviewError::Config {
                    origin: origin.to_string(),
                    message: e.message().trim_end().to_string(),
                }
            })?;
        config.origin = origin.to_string();
        config.checked()
    }

    fn checked(self) -> Result<ReviewConfig> {
        let origin = &self.origin;
        if let Some(c) = self.rules.min_confidence
            && !(0.0..=1.0).contains(&c)
        {
            return Err(ReviewError::Config {
                origin: origin.to_string(),
                message: format!("rules.min_confidence = {c} is outside 0..=1"),
            });
        }
        Ok(self)
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

/// A setting of `.sift/review.toml` that leaves a finding out of a review (see
/// [`ReviewConfig::silencing`]). Shown as the key and value that did it:
/// `rules.disable = "python/*"`.
#[derive(Debug, Clone, PartialEq)]
pub enum Silence {
    /// `[paths] include` is set and none of its patterns matches the file.
    NotIncluded,
    /// A `[paths] exclude` pattern matches the file.
    Excluded {
        /// The pattern.
        pattern: String,
    },
    /// A `[rules] disable` pattern turns the rule off (and no longer `enable` pattern turns it
    /// back on).
    Disabled {
        /// The pattern.
        pattern: String,
    },
    /// The rule is less sure than `[rules] min_confidence`.
    BelowMinConfidence {
        /// The setting.
        min: f32,
    },
    /// `[rules.per_path_disable]` turns the rule off for the file.
    DisabledInPath {
        /// The path pattern (the key).
        path: String,
        /// The rule pattern in its list.
        rule: String,
    },
}

impl Silence {
    /// The configuration key, as a dotted TOML path: `rules.disable`,
    /// `rules.per_path_disable."/a.py"`.
    pub fn key(&self) -> String {
        match self {
            Silence::NotIncluded => "paths.include".into(),
            Silence::Excluded { .. } => "paths.exclude".into(),
            Silence::Disabled { .. } => "rules.disable".into(),
            Silence::BelowMinConfidence { .. } => "rules.min_confidence".into(),
            Silence::DisabledInPath { path, .. } => format!("rules.per_path_disable.{path:?}"),
        }
    }

    /// The value (or list entry) of [`Silence::key`] that matched; `None` for `paths.include`,
    /// which silences by matching nothing.
    pub fn value(&self) -> Option<String> {
        match self {
            Silence::NotIncluded => None,
            Silence::Excluded { pattern } | Silence::Disabled { pattern } => Some(pattern.clone()),
            Silence::BelowMinConfidence { min } => Some(min.to_string()),
            Silence::DisabledInPath { rule, .. } => Some(rule.clone()),
        }
    }
}

impl std::fmt::Display for Silence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Silence::NotIncluded => write!(f, "paths.include (no pattern matches the file)"),
            Silence::BelowMinConfidence { min } => write!(f, "rules.min_confidence = {min}"),
            _ => write!(f, "{} = {:?}", self.key(), self.value().unwrap_or_default()),
        }
    }
}

/// What `[rules] enable` and `disable` say about one rule id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Switch<'a> {
    /// No pattern matches: the rule's default holds.
    Default,
    /// This `enable` pattern turns it on.
    On(&'a str),
    /// This `disable` pattern turns it off.
    Off(&'a str),
}

impl RulesConfig {
    /// Whether `enable`/`disable` turn rule `id` on or off: the longest (most specific) matching
    /// pattern wins, and `disable` wins a tie.
    pub(crate) fn switch(&self, id: &str) -> Switch<'_> {
        fn longest<'a>(list: &'a [String], id: &str) -> Option<&'a str> {
            // The first of equally long patterns, as written.
            let mut best: Option<&str> = None;
            for p in list.iter().filter(|p| glob::matches_id(p, id)) {
                if best.is_none_or(|b| p.len() > b.len()) {
                    best = Some(p);
                }
            }
            best
        }
        match (longest(&self.enable, id), longest(&self.disable, id)) {
            (Some(e), Some(d)) if e.len() > d.len() => Switch::On(e),
            (_, Some(d)) => Switch::Off(d),
            (Some(e), None) => Switch::On(e),
            (None, None) => Switch::Default,
        }
    }

    /// The `[rules.severity]` entry for rule `id`: the most specific matching pattern and its
    /// severity.
    pub fn severity_for(&self, id: &str) -> Option<(&str, Severity)> {
        self.severity
            .iter()
            .filter(|(p, _)| glob::matches_id(p, id))
            .max_by_key(|(p, _)| p.len())
            .map(|(p, s)| (p.as_str(), *s))
    }
}

/// The `[paths]` setting that keeps `path` out of a review, if any: see [`Silence`].
pub(crate) fn path_silence(include: &[String], exclude: &[String], path: &str) -> Option<Silence> {
    if !include.is_empty() && !include.iter().any(|p| glob::matches_path(p, path)) {
        return Some(Silence::NotIncluded);
    }
    exclude
        .iter()
        .find(|p| glob::matches_path(p, path))
        .map(|p| Silence::Excluded { pattern: p.clone() })
}

/// The `[rules.per_path_disable]` entry (path pattern, rule pattern) that turns rule `id` off
/// for `path`, if any.
pub(crate) fn per_path_silence<'a>(
    entries: impl IntoIterator<Item = (&'a String, &'a Vec<String>)>,
    id: &str,
    path: &str,
) -> Option<Silence> {
    entries.into_iter().filter(|(pattern, _)| glob::matches_path(pattern, path)).find_map(
        |(pattern, rules)| {
            rules
                .iter()
                .find(|r| glob::matches_id(r, id))
                .map(|r| Silence::DisabledInPath { path: pattern.clone(), rule: r.clone() })
        },
    )
}

impl ReviewConfig {
    /// Where this configuration came from, as given to [`ReviewConfig::from_toml`] (empty for
    /// the default).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The setting that leaves a finding of rule `id` in `path` out of a review, or `None` when
    /// none does; exactly what [`RulePack::apply_config`](super::RulePack::apply_config) and
    /// [`check_file`](super::check_file) do, in their order: `[paths]`, then `enable`/`disable`,
    /// then `min_confidence` (for rules with a `confidence`: not the history check), then
    /// `[rules.per_path_disable]`.
    ///
    /// Only for a rule that runs without this configuration (on by default, or turned on by
    /// it); a rule off by default that nothing enables is not silenced, it simply does not run.
    pub fn silencing(&self, id: &str, confidence: Option<f32>, path: &str) -> Option<Silence> {
        if let Some(silence) = self.path_silence(path) {
            return Some(silence);
        }
        if let Switch::Off(pattern) = self.rules.switch(id) {
            return Some(Silence::Disabled { pattern: pattern.to_string() });
        }
        if let (Some(min), Some(confidence)) = (self.rules.min_confidence, confidence)
            && confidence < min
        {
            return Some(Silence::BelowMinConfidence { min });
        }
        per_path_silence(&self.rules.per_path_disable, id, path)
    }

    /// The `[paths]` setting that keeps `path` out of a review, if any.
    pub fn path_silence(&self, path: &str) -> Option<Silence> {
        path_silence(&self.paths.include, &self.paths.exclude, path)
    }
}

/// Turns `rule` off for exactly the file `path` (relative to the repository root) in the
/// `review.toml` at `config_path`, as the editor's "silence this rule in this file" does: an entry
/// of `[rules.per_path_disable]`, added to the file's text with its comments and layout kept
/// (the file is created when missing). Returns whether the file changed.
pub fn silence_rule_in(config_path: &Path, path: &str, rule: &str) -> Result<bool> {
    silence_rule_under(config_path, &[], path, rule)
}

/// [`silence_rule_in`] for a file whose review tables sit under `table` (`["review"]` for
/// `.sift/config.toml`: `[review.rules.per_path_disable]`).
pub fn silence_rule_under(
    config_path: &Path,
    table: &[&str],
    path: &str,
    rule: &str,
) -> Result<bool> {
    let text = match std::fs::read_to_string(config_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(ReviewError::Io { path: config_path.to_path_buf(), source }),
    };
    let origin = config_path.display().to_string();
    let Some(new) = with_rule_silenced_under(&origin, &text, table, path, rule)? else {
        return Ok(false);
    };
    if let Some(dir) = config_path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|source| ReviewError::Io { path: dir.to_path_buf(), source })?;
    }
    // A crash leaves the old file or the new one, never half of it.
    sift_indexer::store::write_atomic(config_path, new.as_bytes())?;
    Ok(true)
}

/// The text of a `review.toml` with `rule` off for the file `path`; `None` when it already is.
pub fn with_rule_silenced(
    origin: &str,
    text: &str,
    path: &str,
    rule: &str,
) -> Result<Option<String>> {
    with_rule_silenced_under(origin, text, &[], path, rule)
}

/// [`with_rule_silenced`] for review tables under `table` (see [`silence_rule_under`]).
pub fn with_rule_silenced_under(
    origin: &str,
    text: &str,
    table: &[&str],
    path: &str,
    rule: &str,
) -> Result<Option<String>> {
    let bad = |message: String| ReviewError::Config { origin: origin.to_string(), message };
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| bad(format!("{e}")))?;
    // Anchored: a pattern without `/` would match that name in every folder.
    let pattern = format!("/{}", path.trim_start_matches('/'));
    let mut outer = doc.as_table_mut() as &mut dyn toml_edit::TableLike;
    for name in table {
        outer = outer
            .entry(name)
            .or_insert_with(|| {
                let mut t = toml_edit::Table::new();
                t.set_implicit(true);
                toml_edit::Item::Table(t)
            })
            .as_table_like_mut()
            .ok_or_else(|| bad(format!("`{name}` is not a table")))?;
    }
    let rules = outer
        .entry("rules")
        .or_insert_with(|| {
            // Only `[rules.per_path_disable]` is written, not an empty `[rules]` above it.
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        })
        .as_table_like_mut()
        .ok_or_else(|| bad("`rules` is not a table".into()))?;
    let per_path = rules.entry("per_path_disable").or_insert_with(|| {
        let mut t = toml_edit::Table::new();
        t.set_implicit(false);
        toml_edit::Item::Table(t)
    });
    let per_path = per_path
        .as_table_like_mut()
        .ok_or_else(|| bad("`rules.per_path_disable` is not a table".into()))?;
    let list = per_path
        .entry(&pattern)
        .or_insert_with(|| toml_edit::value(toml_edit::Array::new()))
        .as_array_mut()
        .ok_or_else(|| bad(format!("`rules.per_path_disable.\"{pattern}\"` is not a list")))?;
    if list.iter().any(|v| v.as_str() == Some(rule)) {
        return Ok(None);
    }
    list.push(rule);
    let new = doc.to_string();
    // What we wrote must still be a valid configuration.
    let mut parsed: toml::Table = new.parse().map_err(|e| bad(format!("{e}")))?;
    for name in table {
        parsed = match parsed.remove(*name) {
            Some(toml::Value::Table(t)) => t,
            _ => return Err(bad(format!("`{name}` is not a table"))),
        };
    }
    let keys: Vec<&str> = if table.is_empty() {
        parsed.keys().map(String::as_str).collect()
    } else {
        REVIEW_KEYS.to_vec()
    };
    ReviewConfig::from_table(origin, &parsed, &keys)?;
    Ok(Some(new))
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
    fn silencing_adds_a_per_path_entry_and_keeps_comments() {
        let text = "# team settings\nmax_findings = 5\n\n[rules]\ndisable = [\"go/*\"] # no Go\n";
        let new = with_rule_silenced("r", text, "web/a.py", "python/is-literal").unwrap().unwrap();
        assert!(new.starts_with("# team settings\nmax_findings = 5\n"), "{new}");
        assert!(new.contains("# no Go"), "{new}");
        let c = ReviewConfig::from_toml("r", &new).unwrap();
        assert_eq!(c.rules.per_path_disable["/web/a.py"], vec!["python/is-literal"]);
        assert_eq!(c.rules.disable, vec!["go/*"]);
        let again = with_rule_silenced("r", &new, "web/a.py", "python/is-literal").unwrap();
        assert_eq!(again, None, "already silenced");
        let two = with_rule_silenced("r", &new, "web/a.py", "python/x").unwrap().unwrap();
        let c = ReviewConfig::from_toml("r", &two).unwrap();
        assert_eq!(c.rules.per_path_disable["/web/a.py"], vec!["python/is-literal", "python/x"]);
        let fresh = with_rule_silenced("r", "", "a.py", "python/x").unwrap().unwrap();
        assert_eq!(fresh.trim(), "[rules.per_path_disable]\n\"/a.py\" = [\"python/x\"]");

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".sift/review.toml");
        assert!(silence_rule_in(&file, "a.py", "python/x").unwrap());
        assert!(!silence_rule_in(&file, "a.py", "python/x").unwrap());
        let c = ReviewConfig::load(&file).unwrap();
        assert_eq!(c.rules.per_path_disable["/a.py"], vec!["python/x"]);
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
