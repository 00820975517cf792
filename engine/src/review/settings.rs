//! What a review is told to do, and where that was read: the rules' configuration (`[review]`
//! of `.sift/config.toml`: `max_findings`, `[review.rules]`, `[review.paths]`,
//! `[[review.plugins]]`; the old `.sift/review.toml` is still read, with a deprecation note,
//! while that table sets none of them), the project rules (`.sift/rules/`), the remembered dismissals
//! (`.sift/feedback/dismissed.jsonl`), the model reviewer's guidance (`.sift/REVIEW.md`) and the
//! WebAssembly plugins (`.sift/plugins/`, with their `[[plugins]]` entries in the configuration).
//!
//! The `[model]` table of `.sift/config.toml` (which language model reviews, at which endpoint)
//! is one of them too; [`model_for_review`](super::model_for_review) reads it.
//!
//! Invariant: **a change cannot configure its own review.** A `--base REV` review (what a pull
//! request into `REV` changes, as CI runs it) reads these files from the merge-base commit with
//! `git ls-tree` and `git cat-file`, never from the working tree, and reports every change the
//! reviewed change makes to them as a finding ([`CONFIG_CHANGED_RULE`]) instead of applying it.
//! (A pull request that could edit `[model]` could turn the model reviewer off, or send the
//! code, and the key in the variable it names, to an endpoint of its choosing.)
//! The other reviews (the working tree, the index, a given diff) and the editor read the working
//! tree's files: there the person configuring is the person reviewed.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use sift_runtime::rules::feedback::Feedback;
use sift_runtime::rules::finding::fingerprint;
use sift_runtime::rules::suppression::{Provenance, short};
use sift_runtime::rules::{Finding, LineFilter, ReviewConfig, RulePack, Severity};

use super::error::Result;
use super::git::{self, git};

/// The old review configuration, relative to the repository root: read while `[review]` of
/// [`MODEL_CONFIG`] sets no rule, deprecated.
pub const REVIEW_CONFIG: &str = ".sift/review.toml";
/// The project rules' folder.
pub const RULES_DIR: &str = ".sift/rules";
/// The remembered dismissals.
pub const DISMISSED: &str = ".sift/feedback/dismissed.jsonl";
/// The model reviewer's guidance.
pub const GUIDANCE: &str = ".sift/REVIEW.md";
/// The WebAssembly plugins' folder (discovered by the review's `plugins.rs`).
pub const PLUGINS_DIR: &str = ".sift/plugins";
/// Everything a review reads about itself from the repository, besides [`MODEL_CONFIG`].
pub const SETTINGS_PATHS: [&str; 6] =
    [REVIEW_CONFIG, RULES_DIR, DISMISSED, GUIDANCE, PLUGINS_DIR, super::learned::LEARNED];
/// The repository's configuration file: its `[model]` table picks the model reviewer's model,
/// its `[review]` table holds the rules' configuration.
pub const MODEL_CONFIG: &str = ".sift/config.toml";
/// The tables of [`MODEL_CONFIG`] that steer a review.
const STEERING_TABLES: [&str; 2] = ["model", "review"];

/// The rule id of the finding a `--base` review raises for a change to its own settings.
pub const CONFIG_CHANGED_RULE: &str = "sift/review-config-changed";

/// Where a review's settings were read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The working tree's files.
    WorkingTree,
    /// The files of the base revision of a `--base` review.
    Base {
        /// The merge-base commit (or the revision itself, without common history).
        commit: String,
        /// The revision as given (`main`, `origin/main`).
        rev: String,
    },
}

impl Origin {
    /// The commit the settings were read from; `None` for the working tree.
    pub fn revision(&self) -> Option<&str> {
        match self {
            Origin::WorkingTree => None,
            Origin::Base { commit, .. } => Some(commit),
        }
    }

    /// Where `file` (relative to the root) was read.
    pub fn provenance(&self, file: &str) -> Provenance {
        Provenance { file: file.to_string(), revision: self.revision().map(str::to_string) }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::WorkingTree => f.write_str("the working tree"),
            Origin::Base { commit, rev } => {
                write!(f, "commit {}, the merge-base of HEAD and {rev}", short(commit))
            }
        }
    }
}

/// A review's settings.
#[derive(Debug)]
pub struct Settings {
    /// The rules' configuration (the default when no file sets one).
    pub config: ReviewConfig,
    /// The file it was read from: [`MODEL_CONFIG`], or the old [`REVIEW_CONFIG`].
    pub config_file: &'static str,
    /// The project rules of `.sift/rules/`, not configured yet.
    pub rules: RulePack,
    /// The dismissals in force.
    pub dismissed: Feedback,
    /// `.sift/REVIEW.md`, when there is one.
    pub guidance: Option<String>,
    /// The learned demotions of `.sift/learned.toml` (none without the file).
    pub learned: super::learned::Learned,
    /// Where all of them were read.
    pub origin: Origin,
}

impl Settings {
    /// The working tree's settings.
    pub(crate) fn working_tree(root: &Path) -> Result<Settings> {
        let (config, config_file) = rules_config_in(root)?;
        Ok(Settings {
            config,
            config_file,
            rules: RulePack::load_dir(&root.join(RULES_DIR))?,
            dismissed: Feedback::load(&root.join(DISMISSED))?,
            guidance: std::fs::read_to_string(root.join(GUIDANCE)).ok(),
            learned: match std::fs::read_to_string(root.join(super::learned::LEARNED)) {
                Ok(text) => {
                    learned_of(&text, &root.join(super::learned::LEARNED).display().to_string())?
                }
                Err(_) => super::learned::Learned::default(),
            },
            origin: Origin::WorkingTree,
        })
    }

    /// The settings as `commit` holds them (`rev` is what the user called it, for messages).
    /// Errors in them name the file as `<commit>:<path>`, as git does.
    pub(crate) fn at_commit(root: &Path, commit: &str, rev: &str) -> Result<Settings> {
        let mut args = vec!["ls-tree", "-r", "-z", "--name-only", commit, "--"];
        args.extend(SETTINGS_PATHS);
        args.push(MODEL_CONFIG);
        let files = git::nul_separated(&git(root, &args)?);
        let read = |path: &str| -> Result<String> {
            let bytes = git(root, &["cat-file", "blob", &format!("{commit}:{path}")])?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        };
        let origin = |path: &str| format!("{}:{path}", short(commit));
        let has = |path: &str| files.iter().any(|f| f == path);
        let text = |path: &str| -> Result<Option<(String, String)>> {
            Ok(if has(path) { Some((origin(path), read(path)?)) } else { None })
        };
        let (config, config_file) = rules_config(text(MODEL_CONFIG)?, text(REVIEW_CONFIG)?)?;
        let mut rule_files: Vec<&String> = files
            .iter()
            .filter(|f| f.starts_with(&format!("{RULES_DIR}/")) && f.ends_with(".toml"))
            .collect();
        rule_files.sort();
        let mut texts = Vec::with_capacity(rule_files.len());
        for file in rule_files {
            texts.push((origin(file), read(file)?));
        }
        let dismissed =
            if has(DISMISSED) { Feedback::parse(&read(DISMISSED)?) } else { Feedback::default() };
        if dismissed.skipped_lines > 0 {
            tracing::warn!(
                "{}: skipped {} line(s) that are not feedback records",
                origin(DISMISSED),
                dismissed.skipped_lines
            );
        }
        let guidance = if has(GUIDANCE) { Some(read(GUIDANCE)?) } else { None };
        let learned_file = super::learned::LEARNED;
        let learned = if has(learned_file) {
            learned_of(&read(learned_file)?, &origin(learned_file))?
        } else {
            super::learned::Learned::default()
        };
        Ok(Settings {
            config,
            config_file,
            rules: RulePack::from_texts(texts)?,
            dismissed,
            guidance,
            learned,
            origin: Origin::Base { commit: commit.to_string(), rev: rev.to_string() },
        })
    }
}

/// `.sift/learned.toml`'s text, read; a file that does not parse fails the review (it says
/// which file and where).
fn learned_of(text: &str, origin: &str) -> Result<super::learned::Learned> {
    super::learned::Learned::parse(text, origin).map_err(super::Error::ModelConfig)
}

/// The rules' configuration of the working tree of `root`, and the file it came from.
pub(crate) fn rules_config_in(root: &Path) -> Result<(ReviewConfig, &'static str)> {
    let text = |rel: &str| -> Result<Option<(String, String)>> {
        let path = root.join(rel);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some((path.display().to_string(), text))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(sift_runtime::rules::ReviewError::Io { path, source }.into()),
        }
    };
    rules_config(text(MODEL_CONFIG)?, text(REVIEW_CONFIG)?)
}

/// The rules' configuration from the texts (origin, text) of `.sift/config.toml` and of the old
/// `.sift/review.toml`: `[review]` of the first when it sets a rule key, else the second (with
/// a deprecation note), else the default.
fn rules_config(
    config: Option<(String, String)>,
    legacy: Option<(String, String)>,
) -> Result<(ReviewConfig, &'static str)> {
    let keys = crate::config::review::RULE_KEYS;
    if let Some((origin, text)) = &config {
        // A file that does not parse is the configuration loader's error to report; here it
        // sets no rule.
        let table: Option<toml::Table> =
            text.parse::<toml::Table>().ok().and_then(|mut t| match t.remove("review") {
                Some(toml::Value::Table(review)) => Some(review),
                _ => None,
            });
        if let Some(review) = table.filter(|r| keys.iter().any(|k| r.contains_key(*k))) {
            if let Some((legacy_origin, _)) = &legacy {
                tracing::warn!(
                    "{legacy_origin} is not read: [review] of {origin} sets the review's rules; \
                     delete it once its tables are moved there"
                );
            }
            let config = ReviewConfig::from_table(&format!("{origin} [review]"), &review, &keys)?;
            return Ok((config, MODEL_CONFIG));
        }
    }
    match legacy {
        Some((origin, text)) => {
            tracing::warn!("{origin}: {DEPRECATED}");
            Ok((ReviewConfig::from_toml(&origin, &text)?, REVIEW_CONFIG))
        }
        None => Ok((ReviewConfig::default(), MODEL_CONFIG)),
    }
}

/// What a user of the old file is told.
pub const DEPRECATED: &str = "this file is deprecated: move its tables under [review] of \
.sift/config.toml (`[rules]` becomes `[review.rules]`, `[paths]` `[review.paths]`, `[[plugins]]` \
`[[review.plugins]]`, `max_findings` a key of `[review]`) and delete it; it is read until then";

/// What a change does to one of the review's settings files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edit {
    Adds,
    Edits,
    Deletes,
}

/// For a `--base` review: one finding ([`CONFIG_CHANGED_RULE`], a warning) per settings file
/// that the working tree adds, edits or deletes since `from` (for `.sift/config.toml`, only
/// when its `[model]` table changes), on its first added line (line 1 when it only lost lines or
/// is gone), and the file's text (for the report's sources). `changes` are the review's changed
/// files with their added lines.
pub(crate) fn changes_to_settings(
    root: &Path,
    from: &str,
    changes: &[(String, LineFilter)],
    origin: &Origin,
) -> Result<Vec<(Finding, Option<String>)>> {
    let mut args = vec!["diff", "--name-status", "-z", "--no-renames", "--no-ext-diff", from, "--"];
    args.extend(SETTINGS_PATHS);
    args.push(MODEL_CONFIG);
    let listed = git::nul_separated(&git(root, &args)?);
    let mut edited: Vec<(String, Edit)> = listed
        .chunks(2)
        .filter_map(|pair| match pair {
            [status, path] => Some((
                path.clone(),
                match status.as_str() {
                    "A" => Edit::Adds,
                    "D" => Edit::Deletes,
                    _ => Edit::Edits,
                },
            )),
            _ => None,
        })
        .collect();
    let mut pathspecs: Vec<String> = SETTINGS_PATHS.iter().map(|p| p.to_string()).collect();
    pathspecs.push(MODEL_CONFIG.to_string());
    for path in git::untracked(root, &pathspecs)? {
        if !edited.iter().any(|(p, _)| *p == path) {
            edited.push((path, Edit::Adds));
        }
    }
    edited.sort_by(|a, b| a.0.cmp(&b.0));
    let mut found = Vec::with_capacity(edited.len());
    for (path, edit) in edited {
        let source = match edit {
            Edit::Deletes => None,
            _ => git::read_source(root, &path, git::Contents::WorkingTree),
        };
        let text = source.as_deref().unwrap_or("");
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let added: Vec<usize> = match changes.iter().find(|(p, _)| *p == path) {
            Some((_, filter)) => (1..=lines.len()).filter(|&n| filter.contains(n)).collect(),
            None if edit == Edit::Adds => (1..=lines.len()).collect(),
            None => Vec::new(),
        };
        let (subject, line) = if path == MODEL_CONFIG {
            // Only `[model]` and the review's rules in `[review]` steer the review; the index's
            // settings are the change's business.
            let before = file_at(root, from, MODEL_CONFIG)?;
            let (was, now) = (steering(before.as_deref()), steering(source.as_deref()));
            let Some(table) = STEERING_TABLES.iter().find(|t| was.get(**t) != now.get(**t)) else {
                continue;
            };
            // On the table's first added line, or its header.
            let header = lines.iter().position(|l| {
                let l = l.trim_start();
                l.starts_with(&format!("[{table}]"))
                    || l.starts_with(&format!("[{table}."))
                    || l.starts_with(&format!("[[{table}."))
            });
            let line = match header {
                Some(h) => added.iter().copied().find(|&n| n > h).unwrap_or(h + 1),
                None => added.first().copied().unwrap_or(1),
            };
            (format!("`[{table}]` in `{path}`"), line)
        } else {
            (format!("`{path}`"), added.first().copied().unwrap_or(1))
        };
        let finding = settings_finding(&path, &subject, edit, &lines, &added, line, origin);
        found.push((finding, source));
    }
    Ok(found)
}

/// The tables of a `.sift/config.toml` text that steer a review: `[model]`, and the review's
/// rules of `[review]` (not `on_save`, the editor's); a text that does not parse is one value.
fn steering(text: Option<&str>) -> BTreeMap<&'static str, toml::Value> {
    let Some(text) = text else { return BTreeMap::new() };
    let Ok(mut table) = text.parse::<toml::Table>() else {
        return STEERING_TABLES.iter().map(|t| (*t, toml::Value::String(text.into()))).collect();
    };
    let mut out = BTreeMap::new();
    if let Some(model) = table.remove("model") {
        out.insert("model", model);
    }
    if let Some(toml::Value::Table(mut review)) = table.remove("review") {
        review.retain(|k, _| crate::config::review::RULE_KEYS.contains(&k));
        if !review.is_empty() {
            out.insert("review", toml::Value::Table(review));
        }
    }
    out
}

/// The text of `path` as `commit` holds it; `None` when it has no such file.
pub(crate) fn file_at(root: &Path, commit: &str, path: &str) -> Result<Option<String>> {
    let listed = git(root, &["ls-tree", "-z", "--name-only", commit, "--", path])?;
    if git::nul_separated(&listed).iter().all(|p| p != path) {
        return Ok(None);
    }
    let bytes = git(root, &["cat-file", "blob", &format!("{commit}:{path}")])?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// The finding for a change to the settings file `path` (`subject` in the message), on `line`
/// of its `lines`; `added` are the lines the change added (what identifies the edit).
fn settings_finding(
    path: &str,
    subject: &str,
    edit: Edit,
    lines: &[&str],
    added: &[usize],
    line: usize,
    origin: &Origin,
) -> Finding {
    let start_byte: usize = lines.iter().take(line - 1).map(|l| l.len()).sum();
    let this = lines.get(line - 1).copied().unwrap_or("").trim_end_matches(['\n', '\r']);
    // What identifies this edit: what it says, so that a dismissal (from the base) of one edit
    // does not hide another.
    let mut said = format!("{edit:?}\n");
    for n in added {
        said.push_str(lines.get(n - 1).copied().unwrap_or(""));
    }
    let verb = match edit {
        Edit::Adds => "adds",
        Edit::Edits => "edits",
        Edit::Deletes => "deletes",
    };
    let (since, merged) = match origin {
        Origin::Base { commit, rev } => {
            (format!("{} (the merge-base with {rev})", short(commit)), format!("into {rev}"))
        }
        Origin::WorkingTree => ("the base revision".to_string(), "in".to_string()),
    };
    Finding {
        rule: CONFIG_CHANGED_RULE.to_string(),
        severity: Severity::Warning,
        confidence: 1.0,
        path: path.to_string(),
        start_line: line,
        end_line: line,
        start_col: 1,
        end_col: this.chars().count() + 1,
        start_byte,
        end_byte: start_byte + this.len(),
        message: format!(
            "this change {verb} {subject}, part of the review's own configuration; this review does not apply it and uses the settings of {since}"
        ),
        rationale: format!(
            "A review of a branch reads {REVIEW_CONFIG}, {RULES_DIR}/, {DISMISSED}, {GUIDANCE}, {PLUGINS_DIR}/ and the [model] and the rules of [review] of {MODEL_CONFIG} from the base revision, so that a change cannot silence, steer or redirect its own review; this edit takes effect once it is merged {merged}. Review it like code."
        ),
        fix: None,
        fingerprint: fingerprint(CONFIG_CHANGED_RULE, path, &said),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Origin {
        Origin::Base { commit: "0123456789abcdef0123".into(), rev: "main".into() }
    }

    #[test]
    fn a_settings_finding_names_the_edit_and_where_the_review_read_its_settings() {
        let text = "[rules]\ndisable = [\"x\"]\nmax_findings = 1\n";
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let f = settings_finding(REVIEW_CONFIG, "`r`", Edit::Edits, &lines, &[2, 3], 2, &base());
        assert_eq!((f.start_line, f.start_col, f.end_col), (2, 1, 16));
        assert_eq!(&text[f.start_byte..f.end_byte], "disable = [\"x\"]");
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.starts_with("this change edits `r`, part of"), "{}", f.message);
        assert!(f.message.contains("0123456789ab (the merge-base with main)"), "{}", f.message);

        let gone = settings_finding(DISMISSED, "`d`", Edit::Deletes, &[], &[], 1, &base());
        assert_eq!((gone.start_line, gone.start_byte, gone.end_byte), (1, 0, 0));
        assert!(gone.message.contains("deletes"), "{}", gone.message);

        // Another edit of the same file is another finding: a dismissal of one is not of all.
        let g = settings_finding(REVIEW_CONFIG, "`r`", Edit::Edits, &lines, &[3], 3, &base());
        assert_ne!(f.fingerprint, g.fingerprint);
    }

    #[test]
    fn origins_say_where_settings_were_read() {
        assert_eq!(Origin::WorkingTree.to_string(), "the working tree");
        assert_eq!(base().to_string(), "commit 0123456789ab, the merge-base of HEAD and main");
        let p = base().provenance(REVIEW_CONFIG);
        assert_eq!(p.to_string(), ".sift/review.toml at 0123456789ab");
        assert_eq!(Origin::WorkingTree.provenance(DISMISSED).revision, None);
    }
}
