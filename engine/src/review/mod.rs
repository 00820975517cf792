//! The review use case: which change (the working tree, the index, a branch since its
//! merge-base, a unified diff), the rules and their configuration, the fix history, the model
//! reviewer and the remembered dismissals, put together into one [`review`] that `sift review`,
//! `sift feedback dismiss` and the language server (`sift.review`, review on save) all call.
//!
//! - `git`: the git plumbing (the one place in sift that runs git).
//! - `history`: the fix history, mined once per `HEAD` and cached in `.sift/cache/`.
//! - [`model`]: opening the configured `[model]` ([`model_for_review`]) and the model pass.
//! - [`plugins`]: the team's WebAssembly plugins (`.sift/plugins/`, `[[plugins]]`), run on the
//!   changed files through `sift_plugins`, read from the same place as the settings.
//! - [`settings`]: the review's configuration, project rules, dismissals and guidance, and where
//!   they are read: the working tree, or for a `--base` review the base revision (a change
//!   cannot configure its own review; its edits to them are reported instead).
//!
//! The rule engine itself (rules, their configuration, findings, the output formats) is
//! `sift_runtime::rules`; this module feeds it text and knows nothing of terminals or LSP.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sift_indexer::Language;
use sift_runtime::rules::diff::parse_unified_diff;
use sift_runtime::rules::feedback::Feedback;
use sift_runtime::rules::history;
use sift_runtime::rules::report::ReportItem;
use sift_runtime::rules::suppression::{Counts, Rerated, Suppressed, Why};
use sift_runtime::rules::{
    Finding, LineFilter, ReviewConfig, RulePack, check_file, keep_most_important,
};

pub mod dismiss;
mod error;
pub(crate) mod git;
mod history_cache;
pub mod learned;
pub mod model;
pub mod plugins;
pub mod settings;

pub use error::{Error, Result};
pub use git::toplevel;
pub use model::{ModelChoice, ModelPass, ReviewModel, model_for_review};
pub use plugins::PluginReport;
pub use settings::{CONFIG_CHANGED_RULE, Origin, Settings};

use git::Contents;

/// How many findings a review reports when neither the request nor `max_findings` in
/// the review rules (`[review]` of `.sift/config.toml`) say.
pub const DEFAULT_MAX_FINDINGS: usize = 100;

/// Which change a review looks at.
#[derive(Debug, Clone, Copy, Default)]
pub enum Change<'a> {
    /// The working tree against `HEAD`; untracked, non-ignored files are wholly new.
    #[default]
    WorkingTree,
    /// The index against `HEAD`; contents are read from the index.
    Staged,
    /// The working tree against the merge-base of this revision and `HEAD` (what a pull request
    /// into it would change). The review's settings are read from that merge-base, and the
    /// change's edits to them are reported, not applied (see [`settings`]).
    Base(&'a str),
    /// The lines a unified diff adds; files are read from the working tree.
    Diff {
        /// The diff's text.
        text: &'a str,
        /// Where it came from, for messages (a file's path, `stdin`).
        name: &'a str,
    },
    /// Texts in memory (the agent's pending change): each file's new text, reviewed on the
    /// lines that differ from its old text (every line of a new file). Settings are read from
    /// the working tree; the root is git's top folder, or `given` outside git.
    Texts(&'a [TextChange]),
}

/// One file of a [`Change::Texts`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextChange {
    /// The path relative to the root, `/`-separated.
    pub path: String,
    /// The text before (`None`: a new file).
    pub old: Option<String>,
    /// The text after.
    pub new: String,
}

/// The 1-based lines of `new` that differ from `old` (every line when `old` is `None`): the
/// lines a review of [`Change::Texts`] looks at. With `around_deletions`, the line where
/// removed lines stood counts too (the agent's checkers report a deletion's consequences
/// there); a review looks only at the lines the change wrote, as `git diff` gives them.
pub fn changed_lines(old: Option<&str>, new: &str, around_deletions: bool) -> LineFilter {
    let Some(old) = old else { return LineFilter::new([1..=usize::MAX]) };
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = new.lines().collect();
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &old_lines, &new_lines);
    LineFilter::new(ops.iter().filter_map(|op| {
        let (tag, _, range) = op.as_tag_tuple();
        match (tag, range.is_empty()) {
            (similar::DiffTag::Equal, _) => None,
            (_, false) => Some(range.start + 1..=range.end),
            (_, true) => around_deletions.then_some(range.start + 1..=range.start + 1),
        }
    }))
}

/// What to review and how.
#[derive(Debug, Clone, Copy, Default)]
pub struct Request<'a> {
    /// The change.
    pub change: Change<'a>,
    /// Report at most this many findings (default: `[review] max_findings` of `.sift/config.toml`, else
    /// [`DEFAULT_MAX_FINDINGS`]).
    pub max_findings: Option<usize>,
    /// Only these files (absolute, or relative to the repository root); all when `None`.
    pub only: Option<&'a [PathBuf]>,
    /// Report dismissed findings too (`sift feedback dismiss` looks for them).
    pub keep_dismissed: bool,
    /// Also review with a language model.
    pub model: Option<&'a ModelPass<'a>>,
}

/// What a review found: the findings kept (most important first, with their fixes as whole
/// lines), how many there were before the cap, the repository root and the reviewed sources.
#[derive(Debug)]
pub struct Reviewed {
    /// The repository root.
    pub root: PathBuf,
    /// The findings kept.
    pub items: Vec<ReportItem>,
    /// Findings before the cap (dismissed ones not counted).
    pub total: usize,
    /// Findings left out, and why: dismissed in `.sift/feedback/`, or silenced by
    /// the review rules (a disabled rule, a path left out…).
    pub suppressed: Vec<Suppressed>,
    /// Findings reported at a severity `[rules.severity]` set.
    pub rerated: Vec<Rerated>,
    /// What the model reviewer did, when it ran.
    pub model_note: Option<String>,
    /// The reviewed text of each file with findings (repository-relative path).
    pub sources: BTreeMap<String, String>,
    /// The rules the review ran, configured (SARIF describes its rules from them).
    pub pack: RulePack,
    /// Where the configuration, project rules and dismissals were read.
    pub settings: Origin,
    /// Which plugins ran and how they failed (a failed plugin does not fail the review).
    pub plugins: PluginReport,
}

impl Reviewed {
    /// How many findings were left out, by cause.
    pub fn suppressed_counts(&self) -> Counts {
        Counts::of(&self.suppressed)
    }

    /// Records the findings kept as shown to the user (the front end calls this once it has
    /// shown them: `sift review`'s report, the editor's diagnostics).
    pub fn record_shown(&self, recorder: &crate::fates::Recorder) {
        record_shown(recorder, self.items.iter().map(|i| &i.finding));
    }
}

/// Records `findings` as shown to the user ([`Reviewed::record_shown`]).
pub fn record_shown<'a>(
    recorder: &crate::fates::Recorder,
    findings: impl IntoIterator<Item = &'a sift_runtime::rules::Finding>,
) {
    use crate::fates::{Event, Fate, Kind};
    for f in findings {
        recorder.record(
            Event::new(Kind::Finding, &f.fingerprint, Fate::Shown).rule(&f.rule).path(&f.path),
        );
    }
}

/// The repository that holds `.sift/` for reviews of `given`: git's top folder.
pub fn repository_root(given: &Path) -> Result<PathBuf> {
    if !given.is_dir() {
        return Err(Error::NotADirectory { path: given.to_path_buf() });
    }
    toplevel(given).ok_or_else(|| Error::NotARepository { path: given.to_path_buf() })
}

/// Reviews a change of the repository containing `given` (see the module doc). Findings
/// dismissed in `.sift/feedback/` or silenced by the review rules are left out, each with its
/// reason ([`Reviewed::suppressed`]).
pub fn review(given: &Path, request: &Request<'_>) -> Result<Reviewed> {
    let Request { change, max_findings, only, keep_dismissed, model } = *request;
    if !given.is_dir() {
        return Err(Error::NotADirectory { path: given.to_path_buf() });
    }
    // The base commit of a `--base` review.
    let mut base: Option<(String, &str)> = None;
    // The commit the change is against, for the plugins' old texts.
    let mut against: Option<String> = None;
    let memory: BTreeMap<String, String>;
    let (root, changes, contents) = match change {
        Change::Texts(files) => {
            let root = toplevel(given).unwrap_or_else(|| given.to_path_buf());
            memory = files.iter().map(|f| (f.path.clone(), f.new.clone())).collect();
            let filters = files
                .iter()
                .map(|f| (f.path.clone(), changed_lines(f.old.as_deref(), &f.new, false)))
                .collect();
            (root, filters, Contents::Memory(&memory))
        }
        Change::Diff { text, name } => {
            let changes = parse_unified_diff(text)
                .map_err(|source| Error::Diff { name: name.to_string(), source })?;
            // Paths in a diff are relative to the repository root; outside git, to `given`.
            let root = toplevel(given).unwrap_or_else(|| given.to_path_buf());
            (root, git::into_filters(changes), Contents::WorkingTree)
        }
        Change::WorkingTree | Change::Staged | Change::Base(_) => {
            let root = repository_root(given)?;
            let only = only.map(|paths| relative_paths(&root, paths));
            let head = git::head(&root)?;
            let from = match change {
                Change::Base(rev) => {
                    let commit = git::merge_base(&root, rev, &head)?;
                    base = Some((commit.clone(), rev));
                    commit
                }
                _ => head,
            };
            against = Some(from.clone());
            let staged = matches!(change, Change::Staged);
            let (changes, contents) = git::changes(&root, &from, staged, only.as_deref())?;
            (root, changes, contents)
        }
    };
    let wanted = only.map(|paths| relative_paths(&root, paths));
    let changes: Vec<(String, LineFilter)> = match &wanted {
        Some(wanted) => changes.into_iter().filter(|(p, _)| wanted.contains(p)).collect(),
        None => changes,
    };

    let settings = match &base {
        Some((commit, rev)) => Settings::at_commit(&root, commit, rev)?,
        None => Settings::working_tree(&root)?,
    };
    let config = &settings.config;
    let mut all = RulePack::builtin_all();
    all.extend(settings.rules.clone());
    let mut pack = all.clone();
    pack.apply_config(config)?;
    let max = max_findings.or(pack.max_findings()).unwrap_or(DEFAULT_MAX_FINDINGS);

    let Checked { mut findings, mut suppressed, mut sources } =
        check_changes(&root, &changes, contents, &all, &pack, &settings)?;
    let plugin_sources = plugins::sources(&root, config, settings.config_file, &settings.origin)?;
    let old = |path: &str| -> Option<String> {
        match (change, &against) {
            (Change::Texts(files), _) => files.iter().find(|f| f.path == path)?.old.clone(),
            (_, Some(commit)) => plugins::old_text(&root, commit, path),
            _ => None,
        }
    };
    let ran = plugins::run(&root, &plugin_sources, &changes, contents, &settings.origin, &old);
    let from = settings.origin.provenance(settings.config_file);
    for (finding, source) in ran.findings {
        match config.silencing(&finding.rule, Some(finding.confidence), &finding.path) {
            Some(silence) => suppressed
                .push(Suppressed { finding, why: Why::Configured { silence, from: from.clone() } }),
            None => {
                sources.insert(finding.path.clone(), source);
                findings.push(finding);
            }
        }
    }
    if let Some((commit, _)) = &base {
        for (finding, source) in
            settings::changes_to_settings(&root, commit, &changes, &settings.origin)?
        {
            if wanted.as_ref().is_some_and(|w| !w.contains(&finding.path)) {
                continue;
            }
            if let Some(source) = source {
                sources.insert(finding.path.clone(), source);
            }
            findings.push(finding);
        }
    }
    let model_note = match model {
        Some(pass) => {
            let guidance = settings.guidance.as_deref();
            let review = model::model_review(&root, &changes, contents, &pack, guidance, pass);
            let about = pass.model.describe();
            findings.extend(review.findings.iter().cloned());
            Some(review.summary(&about.name, pass.config.passes))
        }
        None => None,
    };
    // The learned demotions: only ever quieter (an entry that would raise a rule is ignored).
    let today = learned::date(crate::fates::now());
    let learned_file = settings.origin.provenance(learned::LEARNED);
    let mut demoted: BTreeMap<String, (sift_runtime::rules::Severity, String)> = BTreeMap::new();
    findings.retain_mut(|f| {
        let Some(demotion) = settings.learned.active(&f.rule, &today) else { return true };
        match demotion.to.severity() {
            None => {
                suppressed.push(Suppressed {
                    finding: f.clone(),
                    why: Why::Learned { evidence: demotion.evidence(), from: learned_file.clone() },
                });
                false
            }
            Some(lower) if lower < f.severity => {
                demoted.insert(f.fingerprint.clone(), (f.severity, demotion.evidence()));
                f.severity = lower;
                true
            }
            Some(_) => true,
        }
    });
    let no_dismissals = Feedback::default();
    let dismissed = if keep_dismissed { &no_dismissals } else { &settings.dismissed };
    let dismissals_file = settings.origin.provenance(settings::DISMISSED);
    findings.retain(|f| match dismissed.get(&f.fingerprint) {
        Some(dismissal) => {
            suppressed.push(Suppressed {
                finding: f.clone(),
                why: Why::Dismissed { dismissal: dismissal.clone(), from: dismissals_file.clone() },
            });
            false
        }
        None => true,
    });
    suppressed.sort_by(|a, b| {
        let key = |s: &Suppressed| {
            let f = &s.finding;
            (f.path.clone(), f.start_byte, f.end_byte, f.rule.clone())
        };
        key(a).cmp(&key(b))
    });
    let total = findings.len();
    keep_most_important(&mut findings, max);
    let items: Vec<ReportItem> = findings
        .into_iter()
        .map(|finding| {
            let fix = finding
                .fix
                .as_ref()
                .zip(sources.get(&finding.path))
                .and_then(|(fix, source)| fix.whole_lines(source));
            ReportItem { finding, fix }
        })
        .collect();
    let mut rerated = rerated(&items, &all, &settings);
    rerated.retain(|r| !demoted.contains_key(&r.finding.fingerprint));
    rerated.extend(items.iter().filter_map(|item| {
        let f = &item.finding;
        let (before, evidence) = demoted.get(&f.fingerprint)?;
        Some(Rerated {
            finding: f.clone(),
            default: *before,
            pattern: String::new(),
            from: learned_file.clone(),
            learned: Some(evidence.clone()),
        })
    }));
    Ok(Reviewed {
        root,
        items,
        total,
        suppressed,
        rerated,
        sources,
        model_note,
        pack,
        settings: settings.origin,
        plugins: ran.report,
    })
}

/// What the rules and the fix history found on the changed files, split into what the
/// configuration lets through and what it silences.
struct Checked {
    findings: Vec<Finding>,
    suppressed: Vec<Suppressed>,
    /// The text of each file with findings kept.
    sources: BTreeMap<String, String>,
}

/// Runs the rules and the fix history over the changed files.
///
/// So that every finding the configuration silences is counted and explained, the files are
/// checked with the rules that run *without* its silencing (on by default, or turned on by it,
/// at its severities; on every path), and each finding is then kept or silenced by
/// [`ReviewConfig::silencing`](sift_runtime::rules::ReviewConfig::silencing), which decides as
/// `pack` does. The fix history is the exception: when the configuration turns it off
/// everywhere it is not mined (mining reads the whole `git log`), so its findings are neither
/// computed nor counted.
fn check_changes(
    root: &Path,
    changes: &[(String, LineFilter)],
    contents: Contents<'_>,
    all: &RulePack,
    pack: &RulePack,
    settings: &Settings,
) -> Result<Checked> {
    let config = &settings.config;
    let mut unsilenced = all.clone();
    unsilenced.apply_config(&ReviewConfig::default())?;
    unsilenced.extend(pack.clone());
    // Fix commits' removals, when this is a git repository with history (mined once per HEAD).
    let fixes = (pack.history_enabled() && !changes.is_empty())
        .then(|| history_cache::fix_history(root))
        .flatten();
    let from = settings.origin.provenance(settings.config_file);
    let mut checked =
        Checked { findings: Vec::new(), suppressed: Vec::new(), sources: BTreeMap::new() };
    for (path, filter) in changes {
        let Some(language) = Language::from_path(Path::new(path)) else { continue };
        if !(unsilenced.covers(language) || fixes.is_some()) {
            continue;
        }
        let Some(source) = git::read_source(root, path, contents) else { continue };
        let mut found = check_file(&unsilenced, path, language, &source, Some(filter));
        if let Some(fixes) = &fixes {
            found.extend(fixes.check(path, &source, |line| filter.contains(line)));
        }
        let mut kept = false;
        for finding in found {
            // `min_confidence` is about rules; the history check has no confidence setting.
            let confidence = (finding.rule != history::RULE_ID).then_some(finding.confidence);
            match config.silencing(&finding.rule, confidence, path) {
                Some(silence) => checked.suppressed.push(Suppressed {
                    finding,
                    why: Why::Configured { silence, from: from.clone() },
                }),
                None => {
                    checked.findings.push(finding);
                    kept = true;
                }
            }
        }
        if kept {
            checked.sources.insert(path.clone(), source);
        }
    }
    Ok(checked)
}

/// The reported findings whose severity `[rules.severity]` changed from their rule's own.
fn rerated(items: &[ReportItem], all: &RulePack, settings: &Settings) -> Vec<Rerated> {
    items
        .iter()
        .filter_map(|item| {
            let f = &item.finding;
            let default = all.rule(&f.rule)?.severity();
            let (pattern, _) = settings.config.rules.severity_for(&f.rule)?;
            (default != f.severity).then(|| Rerated {
                finding: f.clone(),
                default,
                pattern: pattern.to_string(),
                from: settings.origin.provenance(settings.config_file),
                learned: None,
            })
        })
        .collect()
}

/// `paths` relative to `root`, `/`-separated (absolute ones outside `root` are dropped).
fn relative_paths(root: &Path, paths: &[PathBuf]) -> Vec<String> {
    paths
        .iter()
        .filter_map(|p| {
            if p.is_relative() {
                return Some(p.clone());
            }
            let p = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
            p.strip_prefix(root).ok().map(Path::to_path_buf)
        })
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .collect()
}
