//! The review's WebAssembly plugins (`sift_plugins`): which run, and their findings in the
//! review's shape.
//!
//! Which: every `.sift/plugins/*.wasm`, and every `[[review.plugins]]` entry of `.sift/config.toml`
//! (an entry for a file in `.sift/plugins/` sets its grants and limits; `enabled = false` turns
//! it off). Without an entry a plugin gets the `log` grant only. Where: the working tree, or for
//! a `--base` review the base revision, components and entries alike (a pull request cannot
//! bring a plugin, or new grants for one, into the review of itself: its edits under
//! `.sift/plugins/` are reported as settings changes instead).
//!
//! Running: each plugin's `check-file` on each changed file with a language, under its limits;
//! reads go through [`SandboxWorkspace`] (the sandbox's path rules). A plugin that fails (a
//! trap, a deadline, a refused component…) is reported in [`PluginReport::failures`] and the
//! review goes on without it; after [`MAX_FAILURES`] failures a plugin is not called again in
//! that review.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use sift_indexer::Language;
use sift_plugins::{ChangedFile, Plugin, PluginEngine, PluginEntry, PluginError, PluginFinding};
use sift_runtime::rules::finding::{Fix, fingerprint};
use sift_runtime::rules::{Finding, LineFilter, ReviewConfig, Severity};
use sift_runtime::sandbox::{Policy, SandboxSettings};

use super::error::Result;
use super::git::{self, Contents, git};
use super::settings::{Origin, file_at};

pub use super::settings::PLUGINS_DIR;

pub use crate::store::PLUGIN_ENTRIES as STORE_ENTRIES;

/// How many failures of one plugin a review tolerates before it stops calling it.
pub const MAX_FAILURES: usize = 5;

/// A plugin to run: its entry and its component's bytes, and where they were read.
#[derive(Debug, Clone)]
pub struct PluginSource {
    /// Its configuration.
    pub entry: PluginEntry,
    /// The component (`None`: the listed file is missing; reported, not run).
    pub bytes: Option<Vec<u8>>,
    /// Where it was read (`.sift/plugins/a.wasm`, `abc1234:.sift/plugins/a.wasm`).
    pub from: String,
}

impl PluginSource {
    /// The plugin compiled (or taken from the code cache) under its entry's limits and grants,
    /// or why it will not run, one line naming it and where it was read.
    pub fn load(&self, engine: &PluginEngine) -> std::result::Result<Plugin, String> {
        let name = self.entry.name();
        let Some(bytes) = &self.bytes else {
            return Err(format!(
                "plugin {name}: {} is listed in [[plugins]] but missing",
                self.from
            ));
        };
        Plugin::load(engine, &name, bytes, self.entry.limits(), self.entry.grants.clone())
            .map_err(|e| format!("{e} ({})", self.from))
    }
}

/// What the plugins did in one review.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginReport {
    /// The plugins that ran (their names).
    pub ran: Vec<String>,
    /// Their failures, one line each, naming the plugin (and the file when it was about one).
    pub failures: Vec<String>,
}

/// The one plugin engine of the process (its code cache in the user's cache folder).
pub fn engine() -> std::result::Result<&'static PluginEngine, PluginError> {
    static ENGINE: OnceLock<std::result::Result<PluginEngine, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| PluginEngine::with_user_cache().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|reason| PluginError::Load { name: "(engine)".into(), reason: reason.clone() })
}

/// The plugins of the repository at `root`, as `config` (read from `config_file` of `origin`)
/// lists them and `origin`'s `.sift/plugins/` holds them.
pub fn sources(
    root: &Path,
    config: &ReviewConfig,
    config_file: &str,
    origin: &Origin,
) -> Result<Vec<PluginSource>> {
    let config_from = origin.provenance(config_file).to_string();
    let mut entries: BTreeMap<String, PluginEntry> = BTreeMap::new();
    for path in found_files(root, origin)? {
        entries.insert(path.clone(), PluginEntry::discovered(path));
    }
    for value in &config.plugins {
        let entry = PluginEntry::from_toml(value.clone(), &config_from)?;
        entries.insert(entry.path.clone(), entry);
    }
    let mut out = Vec::new();
    for (path, entry) in entries {
        if !entry.enabled {
            continue;
        }
        let (bytes, from) = match origin.revision() {
            Some(commit) => (blob_at(root, commit, &path)?, format!("{}:{path}", short(commit))),
            None => (std::fs::read(root.join(&path)).ok(), path.clone()),
        };
        out.push(PluginSource { entry, bytes, from });
    }
    Ok(out)
}

/// The plugins of the working tree at `root` (what a review of uncommitted work runs, and what
/// the agent offers the tools of).
pub fn working_tree_sources(root: &Path) -> Result<Vec<PluginSource>> {
    let (config, file) = super::settings::rules_config_in(root)?;
    sources(root, &config, file, &Origin::WorkingTree)
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(7)]
}

/// The `*.wasm` files directly in `.sift/plugins/` of the working tree or the commit.
fn found_files(root: &Path, origin: &Origin) -> Result<Vec<String>> {
    let mut files: Vec<String> = match origin.revision() {
        Some(commit) => {
            let listed = git(
                root,
                &["ls-tree", "-z", "--name-only", commit, "--", &format!("{PLUGINS_DIR}/")],
            )?;
            git::nul_separated(&listed)
        }
        None => match std::fs::read_dir(root.join(PLUGINS_DIR)) {
            Ok(dir) => dir
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter_map(|e| e.file_name().to_str().map(|n| format!("{PLUGINS_DIR}/{n}")))
                .collect(),
            Err(_) => Vec::new(),
        },
    };
    files.retain(|f| f.ends_with(".wasm"));
    files.sort();
    Ok(files)
}

/// The bytes of `path` at `commit` (`None`: it has no such file).
fn blob_at(root: &Path, commit: &str, path: &str) -> Result<Option<Vec<u8>>> {
    let listed = git(root, &["ls-tree", "-z", "--name-only", commit, "--", path])?;
    if git::nul_separated(&listed).iter().all(|p| p != path) {
        return Ok(None);
    }
    Ok(Some(git(root, &["cat-file", "blob", &format!("{commit}:{path}")])?))
}

/// The workspace as a plugin reads it: through the sandbox's policy (`Policy::open_read`:
/// inside the root after `..` and symbolic links, not a secret, no NUL bytes, no hard links),
/// as UTF-8 text of at most the plugin's read budget.
pub struct SandboxWorkspace {
    policy: Policy,
}

impl SandboxWorkspace {
    /// The workspace at `root` under the sandbox `settings`.
    pub fn new(root: &Path, settings: &SandboxSettings) -> std::result::Result<Self, String> {
        Policy::for_workspace(root, settings).map(Self::with_policy).map_err(|e| e.to_string())
    }

    /// The workspace read under `policy` (the agent's, already built).
    pub fn with_policy(policy: Policy) -> Self {
        SandboxWorkspace { policy }
    }
}

impl sift_plugins::Workspace for SandboxWorkspace {
    fn read(&self, path: &str, limit: usize) -> std::result::Result<String, String> {
        let file = self.policy.open_read(path).map_err(|denied| denied.to_string())?;
        let mut bytes = Vec::new();
        file.take(limit as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{path:?}: cannot be read: {e}"))?;
        if bytes.len() > limit {
            return Err(format!("{path:?}: over the plugin's read budget of {limit} bytes"));
        }
        String::from_utf8(bytes).map_err(|_| format!("{path:?}: not UTF-8 text"))
    }
}

/// The sandbox settings plugins read under: the repository's `[sandbox]` in a review of the
/// working tree (its author configures it), the defaults in a `--base` review (the change
/// under review must not loosen them).
fn sandbox_settings(root: &Path, origin: &Origin) -> SandboxSettings {
    match origin {
        Origin::Base { .. } => SandboxSettings::default(),
        Origin::WorkingTree => crate::config::for_cli(root, &[])
            .ok()
            .and_then(|config| config.sandbox().ok())
            .unwrap_or_default(),
    }
}

/// What [`run`] found: findings on the changed lines, and the report.
pub(crate) struct Ran {
    pub(crate) findings: Vec<(Finding, String)>,
    pub(crate) report: PluginReport,
}

/// Runs `sources` on the changed files. `old` gives a file's text before the change.
pub(crate) fn run(
    root: &Path,
    sources: &[PluginSource],
    changes: &[(String, LineFilter)],
    contents: Contents<'_>,
    origin: &Origin,
    old: &dyn Fn(&str) -> Option<String>,
) -> Ran {
    let mut ran = Ran { findings: Vec::new(), report: PluginReport::default() };
    if sources.is_empty() {
        return ran;
    }
    let fail = |report: &mut PluginReport, e: String| {
        tracing::warn!("{e}");
        report.failures.push(e);
    };
    let engine = match engine() {
        Ok(engine) => engine,
        Err(e) => {
            fail(&mut ran.report, e.to_string());
            return ran;
        }
    };
    let workspace: Arc<dyn sift_plugins::Workspace> =
        match SandboxWorkspace::new(root, &sandbox_settings(root, origin)) {
            Ok(ws) => Arc::new(ws),
            Err(e) => Arc::new(Refusing(e)),
        };
    let mut plugins: Vec<(Plugin, usize)> = Vec::new();
    for source in sources {
        match source.load(engine) {
            Ok(plugin) => plugins.push((plugin, 0)),
            Err(e) => fail(&mut ran.report, e),
        }
    }
    ran.report.ran = plugins.iter().map(|(p, _)| p.name().to_string()).collect();
    for (path, filter) in changes {
        let Some(language) = Language::from_path(Path::new(path)) else { continue };
        let Some(new_text) = git::read_source(root, path, contents) else { continue };
        let file = ChangedFile {
            path: path.clone(),
            language: language.name().to_string(),
            old_text: old(path),
            new_text,
            changed: filter
                .ranges()
                .into_iter()
                .map(|r| (clamp(*r.start()), clamp(*r.end())))
                .collect(),
        };
        for (plugin, failures) in &mut plugins {
            if *failures >= MAX_FAILURES {
                continue;
            }
            match plugin.check_file(workspace.clone(), &file) {
                Ok(out) => {
                    for found in out.value {
                        if !filter.overlaps(found.start_line, found.end_line) {
                            continue;
                        }
                        let finding = to_finding(plugin.name(), path, &file.new_text, found);
                        ran.findings.push((finding, file.new_text.clone()));
                    }
                }
                Err(e) => {
                    *failures += 1;
                    let mut line = format!("{e} (on {path})");
                    if *failures == MAX_FAILURES {
                        line.push_str(&format!(
                            "; {MAX_FAILURES} failures: not called again in this review"
                        ));
                    }
                    fail(&mut ran.report, line);
                }
            }
        }
    }
    ran
}

fn clamp(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A workspace whose every read is refused with the reason the sandbox could not be built.
struct Refusing(String);

impl sift_plugins::Workspace for Refusing {
    fn read(&self, path: &str, _: usize) -> std::result::Result<String, String> {
        Err(format!("{path:?}: the sandbox could not be set up: {}", self.0))
    }
}

/// A plugin's finding in the review's shape: its rule as `plugin/<name>/<rule>`, byte offsets
/// from its lines and columns (which the host checked against `text`).
fn to_finding(plugin: &str, path: &str, text: &str, f: PluginFinding) -> Finding {
    let rule = format!("plugin/{plugin}/{}", f.rule);
    let start_byte = byte_of(text, f.start_line, f.start_col);
    let end_byte = byte_of(text, f.end_line, f.end_col).max(start_byte);
    Finding {
        fingerprint: fingerprint(&rule, path, &text[start_byte..end_byte]),
        rule,
        severity: match f.severity {
            sift_plugins::Severity::Info => Severity::Info,
            sift_plugins::Severity::Warning => Severity::Warning,
            sift_plugins::Severity::Error => Severity::Error,
        },
        confidence: f.confidence,
        path: path.to_string(),
        start_line: f.start_line,
        end_line: f.end_line,
        start_col: f.start_col,
        end_col: f.end_col,
        start_byte,
        end_byte,
        message: f.message,
        rationale: f.rationale,
        fix: f.fix.map(|fix| Fix {
            start_byte: fix.start_byte,
            end_byte: fix.end_byte,
            replacement: fix.replacement,
        }),
    }
}

/// The byte offset of 1-based `line`, `col` (in characters) in `text`.
fn byte_of(text: &str, line: usize, col: usize) -> usize {
    let start: usize = text.split_inclusive('\n').take(line - 1).map(str::len).sum();
    let rest = &text[start..];
    let rest = &rest[..rest.find('\n').unwrap_or(rest.len())];
    start + rest.char_indices().nth(col - 1).map_or(rest.len(), |(i, _)| i)
}

/// `path` at `commit`, as text.
pub(crate) fn old_text(root: &Path, commit: &str, path: &str) -> Option<String> {
    file_at(root, commit, path).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::byte_of;

    #[test]
    fn columns_are_characters() {
        let text = "ab\nçé x\n";
        assert_eq!(byte_of(text, 1, 1), 0);
        assert_eq!(byte_of(text, 2, 1), 3);
        assert_eq!(byte_of(text, 2, 3), 3 + 4);
        assert_eq!(byte_of(text, 2, 6), 3 + 6);
    }
}

/// One plugin as `sift plugin list` shows it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Its name.
    pub name: String,
    /// Where it was read.
    pub from: String,
    /// Its configuration (grants, limits).
    pub entry: PluginEntry,
    /// What it exports, or why it would not run.
    pub status: std::result::Result<sift_plugins::Interface, String>,
}

/// The plugins a review of the repository containing `given` would run, each loaded and
/// checked: the working tree's, or with `base` those of the merge-base with `base` (what a
/// `--base` review runs).
pub fn list(given: &Path, base: Option<&str>) -> Result<Vec<Listed>> {
    let root = super::repository_root(given)?;
    let settings = match base {
        Some(rev) => {
            let head = git::head(&root)?;
            let commit = git::merge_base(&root, rev, &head)?;
            super::Settings::at_commit(&root, &commit, rev)?
        }
        None => super::Settings::working_tree(&root)?,
    };
    let sources = sources(&root, &settings.config, settings.config_file, &settings.origin)?;
    let engine = engine()?;
    Ok(sources
        .into_iter()
        .map(|source| {
            let name = source.entry.name();
            let status = match &source.bytes {
                None => Err("listed in [[plugins]] but missing".to_string()),
                Some(bytes) => Plugin::load(
                    engine,
                    &name,
                    bytes,
                    source.entry.limits(),
                    source.entry.grants.clone(),
                )
                .map(|p| p.interface().clone())
                .map_err(|e| e.to_string()),
            };
            Listed { name, from: source.from, entry: source.entry, status }
        })
        .collect())
}

/// What `sift plugin check` reports on a component file.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Its imports and exports.
    pub interface: sift_plugins::Interface,
    /// Why a review would refuse it (`None`: accepted).
    pub refusal: Option<String>,
    /// The agent tools it offers (when accepted and they could be listed).
    pub tools: Vec<sift_plugins::Tool>,
}

/// Inspects the component at `path`: its interface version, exports and imports, whether this
/// sift accepts it, and its tools. Errors: it cannot be read, or is not a component.
pub fn check(path: &Path) -> std::result::Result<Checked, PluginError> {
    let bytes = std::fs::read(path)
        .map_err(|source| PluginError::Read { path: path.to_path_buf(), source })?;
    let name =
        path.file_stem().map_or_else(|| "plugin".into(), |s| s.to_string_lossy().into_owned());
    let engine = engine()?;
    let (interface, refusal) = engine.inspect(&name, &bytes)?;
    let mut tools = Vec::new();
    let mut refusal = refusal;
    if refusal.is_none() {
        let limits = sift_plugins::Limits::default();
        match Plugin::load(engine, &name, &bytes, limits, vec![]) {
            Ok(plugin) => match plugin.tools(Arc::new(sift_plugins::host::NoWorkspace)) {
                Ok(out) => tools = out.value,
                Err(e) => refusal = Some(e.to_string()),
            },
            Err(e) => refusal = Some(e.to_string()),
        }
    }
    Ok(Checked { interface, refusal, tools })
}
