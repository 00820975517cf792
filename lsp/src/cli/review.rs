//! `sift review`: run the bug-finder's rules over the lines a change added and report the
//! findings (text, Markdown, JSON, SARIF or a GitHub review).
//!
//! The change is read from git (`git diff --unified=0`) or from a unified diff given with
//! `--diff`; the rules are the built-in pack plus `.sift/rules/`, configured by
//! `.sift/review.toml`. The formats and the JSON contract are in `sift_runtime::review::report`.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, ValueEnum};
use sift_indexer::Language;
use sift_runtime::review::diff::{ChangedFile, parse_unified_diff};
use sift_runtime::review::feedback::{self, Feedback};
use sift_runtime::review::history::{self, FixHistory};
use sift_runtime::review::report::{self, LineFix, ReportItem};
use sift_runtime::review::{
    Finding, LineFilter, ReviewConfig, RulePack, Severity, check_file, keep_most_important,
};

use sift_indexer::{CodeIndex, NoProgress, UpdateOptions};
use sift_runtime::llm::{Cancel, LanguageModel, config as llm_config};
use sift_runtime::review::model::{
    ChangedSource, DefinitionSource, IndexDefinitions, ModelReview, ModelReviewConfig,
    NoDefinitions, review_with_model,
};

use super::RepoArgs;

/// How many findings a review reports when neither `--max-findings` nor `max_findings` in
/// `.sift/review.toml` says.
const DEFAULT_MAX_FINDINGS: usize = 100;

/// Arguments of `sift review`.
#[derive(Debug, Args)]
pub struct ReviewArgs {
    #[command(flatten)]
    repo: RepoArgs,
    /// Review the working tree against the merge-base of REV and HEAD (what a pull request into
    /// REV would change) [default: the working tree against HEAD].
    #[arg(long, value_name = "REV", conflicts_with_all = ["staged", "diff"])]
    base: Option<String>,
    /// Review what is staged: the index against HEAD.
    #[arg(long, conflicts_with = "diff")]
    staged: bool,
    /// Review the lines added by this unified diff (`-` for stdin); files are read from the
    /// working tree.
    #[arg(long, value_name = "FILE")]
    diff: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Exit with status 1 when a finding is at least this severe.
    #[arg(long, value_enum, default_value_t = FailOn::Error, value_name = "LEVEL")]
    fail_on: FailOn,
    /// Report at most N findings, the most important first [default: `max_findings` in
    /// .sift/review.toml, else 100].
    #[arg(long, value_name = "N")]
    max_findings: Option<usize>,
    /// Also review with the language model of `[model]` (several passes per hunk; a finding
    /// needs most of them) [default: when `[model]` is set in a configuration file or the
    /// environment].
    #[arg(long, conflicts_with = "no_model")]
    model: bool,
    /// Rules only: skip the model reviewer.
    #[arg(long)]
    no_model: bool,
    /// Passes of the model reviewer over each hunk.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=9))]
    passes: u8,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// For terminals: `path:line:col: severity [rule] message`.
    Text,
    /// A summary comment.
    Markdown,
    /// `{"findings": [...]}` (see the README).
    Json,
    /// SARIF 2.1.0, for code-scanning tools.
    Sarif,
    /// The JSON body of a GitHub pull-request review.
    Github,
}

/// The severity from which findings fail the review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FailOn {
    /// Errors fail.
    Error,
    /// Warnings and errors fail.
    Warning,
    /// Every finding fails.
    Info,
    /// Nothing fails.
    Never,
}

impl FailOn {
    fn threshold(self) -> Option<Severity> {
        match self {
            FailOn::Error => Some(Severity::Error),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Info => Some(Severity::Info),
            FailOn::Never => None,
        }
    }
}

/// Where the post-image of a changed file is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Contents {
    WorkingTree,
    Index,
}

/// Runs `sift review`.
#[allow(clippy::print_stdout)]
pub fn run(args: ReviewArgs) -> Result<ExitCode> {
    let root = args.repo.root();
    let (model, skipped) = model_for_review(&root, &args)?;
    let pass = model.as_deref().map(|model| ModelPass {
        model,
        config: ModelReviewConfig { passes: usize::from(args.passes), ..Default::default() },
    });
    let (reviewed, pack) = review(
        &root,
        &Request {
            base: args.base.as_deref(),
            staged: args.staged,
            diff: args.diff.as_deref(),
            max_findings: args.max_findings,
            model: pass.as_ref(),
            ..Request::default()
        },
    )?;
    let note = reviewed.model_note.clone().or(skipped);
    if let Some(note) = &note {
        eprintln!("{note}");
    }
    let (items, total, suppressed) = (reviewed.items, reviewed.total, reviewed.suppressed);
    let out = match args.format {
        Format::Text => {
            let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            report::to_text(&items, total, suppressed, color)
        }
        Format::Markdown => {
            let mut md = report::to_markdown(&items, total, suppressed);
            if let Some(note) = &note {
                md.push_str(&format!("\n_{note}_\n"));
            }
            md
        }
        Format::Json => {
            let mut json = report::to_json(&items, total, suppressed);
            if let (Some(note), Some(obj)) = (&note, json.as_object_mut()) {
                obj.insert("model_review".into(), serde_json::Value::String(note.clone()));
            }
            pretty(&json)?
        }
        Format::Sarif => pretty(&report::to_sarif(&items, &pack))?,
        Format::Github => pretty(&report::to_github(&items, total, suppressed))?,
    };
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush()) {
        // A closed pipe (`| head`) is not a failure of the review.
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(e).context("write the report");
        }
    }
    let failed =
        args.fail_on.threshold().is_some_and(|min| items.iter().any(|i| i.finding.severity >= min));
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// Why the model reviewer did not run, for stderr (`None`: it was asked not to).
type SkipNote = Option<String>;

/// The language model `sift review` uses, or why it runs without one: `--model` and a `[model]`
/// set in a configuration file or the environment turn the model reviewer on, `--no-model` off.
/// A configured model that cannot be opened is an error, not a silent skip.
fn model_for_review(
    root: &Path,
    args: &ReviewArgs,
) -> Result<(Option<Box<dyn LanguageModel>>, SkipNote)> {
    if args.no_model {
        return Ok((None, None));
    }
    let config = super::load_config(root, &[])?.model()?;
    let configured =
        [&config.backend.source, &config.name.source, &config.path.source, &config.base_url.source]
            .iter()
            .any(|s| **s != llm_config::Source::Default);
    if !(args.model || configured) {
        return Ok((
            None,
            Some("model review skipped: no language model is configured (set [model] in .sift/config.toml, or pass --model; --no-model silences this)".into()),
        ));
    }
    let model = llm_config::open(&config).context("the model reviewer's language model")?;
    Ok((Some(model), None))
}

/// The model reviewer's part of a review: the model and how to run it.
pub(crate) struct ModelPass<'a> {
    /// The model.
    pub model: &'a dyn LanguageModel,
    /// Passes, hunk sizes, sampling.
    pub config: ModelReviewConfig,
}

impl std::fmt::Debug for ModelPass<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelPass")
            .field("model", &self.model.describe())
            .field("config", &self.config)
            .finish()
    }
}

/// What a review found: the findings kept (most important first, with their fixes as whole
/// lines), how many there were before the cap, the repository root and the reviewed sources.
pub(crate) struct Reviewed {
    /// The repository root.
    pub root: PathBuf,
    /// The findings kept.
    pub items: Vec<ReportItem>,
    /// Findings before the cap (dismissed ones not counted).
    pub total: usize,
    /// Findings left out because they were dismissed (`.sift/feedback/`).
    pub suppressed: usize,
    /// What the model reviewer did, when it ran.
    pub model_note: Option<String>,
    /// The reviewed text of each file with findings (repository-relative path).
    pub sources: BTreeMap<String, String>,
}

/// Which change a review looks at (see [`ReviewArgs`]); the default is the working tree against
/// `HEAD`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Request<'a> {
    /// `--base REV`.
    pub base: Option<&'a str>,
    /// `--staged`.
    pub staged: bool,
    /// `--diff FILE`.
    pub diff: Option<&'a Path>,
    /// `--max-findings N`.
    pub max_findings: Option<usize>,
    /// Only these files (absolute, or relative to the repository root); all when `None`.
    pub only: Option<&'a [PathBuf]>,
    /// Report dismissed findings too (`sift feedback dismiss` looks for them).
    pub keep_dismissed: bool,
    /// Also review with a language model.
    pub model: Option<&'a ModelPass<'a>>,
}

/// Reviews a change of the repository containing `given`; `sift review`, `sift feedback` and the
/// language server (`sift.review`, review on save) share it. Findings dismissed in
/// `.sift/feedback/` are left out and counted.
pub(crate) fn review(given: &Path, request: &Request<'_>) -> Result<(Reviewed, RulePack)> {
    let Request { base, staged, diff, max_findings, only, keep_dismissed, model } = *request;
    if !given.is_dir() {
        bail!("not a directory: {}", given.display());
    }
    let (root, changes, contents) = match diff {
        Some(file) => {
            let text = read_diff(file)?;
            let changes =
                parse_unified_diff(&text).with_context(|| format!("--diff {}", file.display()))?;
            // Paths in a diff are relative to the repository root; outside git, to --path.
            let root = toplevel(given).unwrap_or_else(|| given.to_path_buf());
            (root, into_filters(changes), Contents::WorkingTree)
        }
        None => {
            let root = toplevel(given)
                .ok_or_else(|| anyhow!("not a git repository: {}", given.display()))?;
            let only = only.map(|paths| relative_paths(&root, paths));
            let (changes, contents) = git_changes(&root, base, staged, only.as_deref())?;
            (root, changes, contents)
        }
    };
    let changes = match only {
        Some(paths) => {
            let wanted = relative_paths(&root, paths);
            changes.into_iter().filter(|(p, _)| wanted.contains(p)).collect()
        }
        None => changes,
    };

    let config = ReviewConfig::load(&root.join(".sift").join("review.toml"))?;
    let mut pack = RulePack::builtin_all();
    pack.extend(RulePack::load_dir(&root.join(".sift").join("rules"))?);
    pack.apply_config(&config)?;
    let max = max_findings.or(pack.max_findings()).unwrap_or(DEFAULT_MAX_FINDINGS);

    let mut findings: Vec<Finding> = Vec::new();
    let mut sources: BTreeMap<String, String> = BTreeMap::new();
    // Fix commits' removals, when this is a git repository with history (mined once per HEAD).
    let fixes =
        (pack.history_enabled() && !changes.is_empty()).then(|| fix_history(&root)).flatten();
    for (path, filter) in &changes {
        let Some(language) = Language::from_path(Path::new(path)) else { continue };
        let history_here = fixes.as_ref().filter(|_| !pack.disabled_in(history::RULE_ID, path));
        if !(pack.covers(language) || history_here.is_some()) || !pack.includes_path(path) {
            continue;
        }
        let Some(source) = read_source(&root, path, contents) else { continue };
        let mut found = check_file(&pack, path, language, &source, Some(filter));
        if let Some(fixes) = history_here {
            found.extend(fixes.check(path, &source, |line| filter.contains(line)));
        }
        if !found.is_empty() {
            findings.extend(found);
            sources.insert(path.clone(), source);
        }
    }
    let model_note = match model {
        Some(pass) => {
            let review = model_review(&root, &changes, contents, &pack, pass);
            let about = pass.model.describe();
            findings.extend(review.findings.iter().cloned());
            Some(review.summary(&about.name, pass.config.passes))
        }
        None => None,
    };
    let dismissed = if keep_dismissed {
        Feedback::default()
    } else {
        Feedback::load(&feedback::dismissed_path(&root))?
    };
    let before = findings.len();
    findings.retain(|f| !dismissed.is_dismissed(&f.fingerprint));
    let suppressed = before - findings.len();
    let total = findings.len();
    keep_most_important(&mut findings, max);
    let items: Vec<ReportItem> = findings
        .into_iter()
        .map(|finding| {
            let fix = finding
                .fix
                .as_ref()
                .zip(sources.get(&finding.path))
                .and_then(|(fix, source)| LineFix::from_fix(fix, source));
            ReportItem { finding, fix }
        })
        .collect();
    Ok((Reviewed { root, items, total, suppressed, sources, model_note }, pack))
}

/// Runs the model reviewer over the changed code files the rule pack's paths include, with
/// `.sift/REVIEW.md` as guidance and definitions from the code index (refreshed first).
fn model_review(
    root: &Path,
    changes: &[(String, LineFilter)],
    contents: Contents,
    pack: &RulePack,
    pass: &ModelPass<'_>,
) -> ModelReview {
    let guidance = std::fs::read_to_string(root.join(".sift").join("REVIEW.md")).ok();
    let index = CodeIndex::open_or_create(root)
        .ok()
        .map(|(index, _)| index)
        .filter(|index| index.update(&UpdateOptions::default(), &NoProgress).is_ok());
    let sources: Vec<(String, String, Vec<std::ops::RangeInclusive<usize>>)> = changes
        .iter()
        .filter(|(path, _)| {
            Language::from_path(Path::new(path)).is_some() && pack.includes_path(path)
        })
        .filter_map(|(path, filter)| {
            read_source(root, path, contents).map(|s| (path.clone(), s, filter.ranges()))
        })
        .collect();
    let files: Vec<ChangedSource<'_>> =
        sources.iter().map(|(path, source, added)| ChangedSource { path, source, added }).collect();
    let definitions: Box<dyn DefinitionSource + '_> = match &index {
        Some(index) => Box::new(IndexDefinitions { index }),
        None => Box::new(NoDefinitions),
    };
    review_with_model(
        pass.model,
        &files,
        guidance.as_deref(),
        definitions.as_ref(),
        &pass.config,
        &Cancel::new(),
    )
}

fn pretty(value: &serde_json::Value) -> Result<String> {
    Ok(serde_json::to_string_pretty(value)? + "\n")
}

/// Reads the `--diff` argument: a file, or stdin for `-`.
fn read_diff(file: &Path) -> Result<String> {
    let mut bytes = Vec::new();
    if file == Path::new("-") {
        std::io::stdin().read_to_end(&mut bytes).context("read the diff from stdin")?;
    } else {
        bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    }
    // A diff of non-UTF-8 files still has readable headers; the lossy text keeps line counts.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Per changed file, the line filter of its added lines.
fn into_filters(changes: Vec<ChangedFile>) -> Vec<(String, LineFilter)> {
    changes.into_iter().map(|c| (c.path, LineFilter::new(c.added))).collect()
}

/// What the repository's fix commits removed ([`FixHistory`]), mined from `git log` and cached in
/// `.sift/cache/history-<HEAD>.json` (a cache: git-ignored, replaced when HEAD moves). `None`
/// outside git or without commits.
fn fix_history(root: &Path) -> Option<FixHistory> {
    let head = resolve(root, "HEAD").ok()?;
    let cache_dir = root.join(".sift").join("cache");
    let cache = cache_dir.join(format!("history-{head}.json"));
    if let Ok(text) = std::fs::read_to_string(&cache)
        && let Ok(history) = serde_json::from_str::<FixHistory>(&text)
    {
        return Some(history);
    }
    let log = git(root, history::LOG_ARGS).ok()?;
    let history = FixHistory::from_git_log(&String::from_utf8_lossy(&log));
    // Only where sift already keeps its data (a review must not create `.sift/` by itself), with
    // sift's `.sift/.gitignore`, which keeps `cache/` out of git.
    if root.join(".sift").is_dir()
        && let Ok(layout) = sift_indexer::Layout::new(root)
        && layout.ensure().is_ok()
    {
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(&cache_dir)?;
            for old in std::fs::read_dir(&cache_dir)?.flatten() {
                if old.file_name().to_string_lossy().starts_with("history-") {
                    let _ = std::fs::remove_file(old.path());
                }
            }
            let tmp = cache_dir.join(format!("history-{head}.json.{}.tmp", std::process::id()));
            std::fs::write(&tmp, serde_json::to_vec(&history).unwrap_or_default())?;
            std::fs::rename(&tmp, &cache)
        };
        if let Err(e) = write() {
            tracing::warn!("cannot cache the fix history in {}: {e}", cache_dir.display());
        }
    }
    Some(history)
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

/// The repository's top folder, or `None` outside a git repository.
pub(crate) fn toplevel(dir: &Path) -> Option<PathBuf> {
    let out = git(dir, &["rev-parse", "--show-toplevel"]).ok()?;
    let text = String::from_utf8(out).ok()?;
    let path = text.trim_end_matches(['\n', '\r']);
    (!path.is_empty()).then(|| PathBuf::from(path))
}

/// Runs git in `dir` with settings that keep its output parseable whatever the user's
/// configuration; the stdout, or an error with git's first line of stderr.
fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "core.quotePath=false"])
        .args(args)
        .env_remove("GIT_EXTERNAL_DIFF")
        .output()
        .context("cannot run git")?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("failed").trim();
        bail!("git {}: {line}", args.first().copied().unwrap_or(""));
    }
    Ok(out.stdout)
}

/// Resolves `rev` to a commit, or says it is unknown.
fn resolve(root: &Path, rev: &str) -> Result<String> {
    let spec = format!("{rev}^{{commit}}");
    let out = git(root, &["rev-parse", "--verify", "--quiet", &spec])
        .map_err(|_| anyhow!("unknown revision `{rev}`"))?;
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

/// The files a git change added lines to: the working tree (with untracked files, whose lines
/// are all new) against `base`'s merge-base with HEAD or against HEAD, or the index against HEAD.
/// With `only`, just those paths (relative to `root`).
fn git_changes(
    root: &Path,
    base: Option<&str>,
    staged: bool,
    only: Option<&[String]>,
) -> Result<(Vec<(String, LineFilter)>, Contents)> {
    // Literal pathspecs: a file named `a*.py` is that file, not a pattern.
    let pathspecs: Vec<String> =
        only.unwrap_or_default().iter().map(|p| format!(":(literal){p}")).collect();
    let head = resolve(root, "HEAD")
        .map_err(|_| anyhow!("unknown revision `HEAD`: the repository has no commit yet"))?;
    let from = match base {
        Some(rev) => {
            let commit = resolve(root, rev)?;
            // No common history: compare with REV itself.
            match git(root, &["merge-base", &commit, &head]) {
                Ok(out) => String::from_utf8_lossy(&out).trim().to_string(),
                Err(_) => commit,
            }
        }
        None => head,
    };
    let mut cmd = vec![
        "diff",
        "--unified=0",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "-M",
        "--src-prefix=a/",
        "--dst-prefix=b/",
    ];
    if staged {
        cmd.push("--cached");
    }
    cmd.push(&from);
    cmd.push("--");
    cmd.extend(pathspecs.iter().map(String::as_str));
    let diff = git(root, &cmd)?;
    let changes =
        parse_unified_diff(&String::from_utf8_lossy(&diff)).context("cannot read git's diff")?;
    let mut filters = into_filters(changes);
    if staged {
        return Ok((filters, Contents::Index));
    }
    let mut ls = vec!["ls-files", "--others", "--exclude-standard", "-z", "--"];
    ls.extend(pathspecs.iter().map(String::as_str));
    let untracked = git(root, &ls)?;
    for path in untracked.split(|&b| b == 0).filter(|p| !p.is_empty()) {
        if let Ok(path) = std::str::from_utf8(path) {
            filters.push((path.to_string(), LineFilter::new([1..=usize::MAX])));
        }
    }
    filters.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((filters, Contents::WorkingTree))
}

/// The new text of `path`: `None` when it is gone, not a file, binary or not UTF-8.
fn read_source(root: &Path, path: &str, contents: Contents) -> Option<String> {
    let bytes = match contents {
        Contents::WorkingTree => std::fs::read(root.join(path)).ok()?,
        Contents::Index => git(root, &["show", &format!(":{path}")]).ok()?,
    };
    if bytes.contains(&0) {
        return None;
    }
    String::from_utf8(bytes).ok()
}
