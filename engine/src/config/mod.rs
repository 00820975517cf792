//! One layered configuration for every front end.
//!
//! Layers, weakest first; a later layer overrides an earlier one key by key:
//!
//! 1. defaults ([`spec`]: each key's descriptor);
//! 2. the user file, `$XDG_CONFIG_HOME/sift/config.toml` (else `~/.config/sift/config.toml`);
//! 3. the repository file, `ROOT/.sift/config.toml`;
//! 4. the editor's settings, the language server's `initializationOptions` (an object of the
//!    same tables);
//! 5. the environment (`SIFT_EMBED_*`, `SIFT_MODEL_*`, `ORT_DYLIB_PATH`, `SIFT_THREADS`,
//!    `SIFT_COMMIT_INTERVAL_MS`);
//! 6. command-line flags ([`Flag`]).
//!
//! Every value carries its [`Source`]. Every subsystem reads a typed section built from the
//! layered values: [`Config::index`] and [`Config::update_options`] (the indexer's
//! `IndexConfig` and `UpdateOptions`), [`Config::embed`] (`EmbedConfig`), [`Config::model`]
//! (`ModelConfig`, sources included) and [`Config::review`]; the crates below the engine hold
//! those types and read no configuration themselves. The same descriptors give `sift config
//! show` its listing and `sift config schema` its JSON Schema ([`schema`]).
//!
//! A file that cannot be read or parsed fails the whole load ([`ConfigError`]). A bad value
//! fails only its section ([`Invalid`]: it names the layer, the table and the key), so a broken
//! `[model]` does not stop indexing. Keys a strict section does not know are errors (`[index]`,
//! `[embed]`, `[model]`, `[agent]`); `[review]` and tables sift does not read are ignored, and listed by
//! [`Config::ignored`]. The environment is read through a lookup function, so tests never
//! touch the process environment.

mod agent;
mod embed;
mod feedback;
mod github;
mod index;
mod model;
pub mod review;
mod sandbox;
pub mod schema;
mod search;
pub mod spec;

use std::path::{Path, PathBuf};

pub(crate) use agent::default_timeout as checker_timeout;
pub use agent::{AgentSettings, Budget, Checker, Format};
pub use feedback::FeedbackSettings;
pub use github::GithubSettings;
pub use review::ReviewSettings;
pub use sandbox::{PolicyError, policy};
pub use sift_runtime::llm::config::process_env;
pub use sift_runtime::setting::{Setting, Source};
use spec::{Raw, Section, Value};

/// Every section, in the order `sift config show` lists them.
pub const SECTIONS: [&Section; 9] = [
    &index::SECTION,
    &search::SECTION,
    &embed::SECTION,
    &model::SECTION,
    &review::SECTION,
    &sandbox::SECTION,
    &agent::SECTION,
    &feedback::SECTION,
    &github::SECTION,
];

/// What a front end knows when it asks for the configuration.
pub struct Inputs<'a> {
    /// The repository (none: the user file, the environment and the flags only).
    pub root: Option<&'a Path>,
    /// The editor's settings (`initializationOptions`): an object of tables. Other members
    /// (`siftTestHooks`) are not configuration and are left alone.
    pub editor: Option<&'a serde_json::Value>,
    /// Command-line flags that set configuration keys.
    pub flags: &'a [Flag],
    /// The environment.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// The repository's file as a revision holds it, instead of the working tree's: its name
    /// for sources and messages (`<commit>:.sift/config.toml`) and its text (`None`: the
    /// revision has no such file). A review of a branch reads its base's configuration so that
    /// a change cannot redirect or turn off its own review.
    pub repo_file: Option<(PathBuf, Option<&'a str>)>,
}

impl<'a> Inputs<'a> {
    /// The files of `root` and the environment `env`, no editor settings, no flags.
    pub fn new(root: Option<&'a Path>, env: &'a dyn Fn(&str) -> Option<String>) -> Self {
        Inputs { root, editor: None, flags: &[], env, repo_file: None }
    }
}

/// A command-line flag that sets a key (`--max-file-size` sets `[index] max_file_size`).
#[derive(Debug, Clone)]
pub struct Flag {
    /// The section.
    pub section: &'static str,
    /// The key.
    pub key: &'static str,
    /// The flag as typed (for sources and messages).
    pub flag: &'static str,
    /// The value, checked like a file's.
    pub value: toml::Value,
}

/// Why the configuration could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The repository root is missing, not a folder, or its `.sift/` is not sift's.
    #[error(transparent)]
    Root(#[from] sift_indexer::Error),
    /// A configuration file exists but cannot be read.
    #[error("cannot read {}: {reason}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A configuration file is not valid TOML.
    #[error("{}:{line}:{column}: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// Where (1-based).
        line: usize,
        /// Where (1-based, in characters).
        column: usize,
        /// What the TOML parser says.
        message: String,
    },
}

/// A value (or a table) that a layer got wrong: it fails its section only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {}{reason}", self.place())]
pub struct Invalid {
    /// The layer.
    pub origin: Source,
    /// The section.
    pub section: &'static str,
    /// The key (none: the section itself, e.g. not a table).
    pub key: Option<String>,
    /// What is wrong and what to write instead.
    pub reason: String,
}

impl Invalid {
    fn place(&self) -> String {
        match &self.key {
            Some(key) => format!("[{}] {key}: ", self.section),
            None => String::new(),
        }
    }
}

/// A configuration file and whether it was there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// [`Source::User`] or [`Source::Repo`], with the file's path.
    pub source: Source,
    /// Whether it exists.
    pub found: bool,
}

/// A table sift does not read, or a key a lenient section does not know: left alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// The layer.
    pub origin: Source,
    /// The table.
    pub table: String,
    /// The key (none: the whole table).
    pub key: Option<String>,
}

impl std::fmt::Display for Ignored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.key {
            Some(key) => write!(f, "{}: [{}] {key}", self.origin, self.table),
            None => write!(f, "{}: [{}]", self.origin, self.table),
        }
    }
}

/// The effective configuration: every key of every section with its value and source.
#[derive(Debug, Clone)]
pub struct Config {
    root: Option<PathBuf>,
    files: Vec<File>,
    /// `values[section][key]`, in the order of [`SECTIONS`] and their keys.
    values: Vec<Vec<Setting<Option<Value>>>>,
    invalid: Vec<Invalid>,
    ignored: Vec<Ignored>,
}

/// The per-user configuration file: `$XDG_CONFIG_HOME/sift/config.toml` (an absolute
/// `XDG_CONFIG_HOME`), else `$HOME/.config/sift/config.toml`; none without either.
pub fn user_config_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(xdg) = set("XDG_CONFIG_HOME").filter(|x| Path::new(x).is_absolute()) {
        return Some(PathBuf::from(xdg).join("sift/config.toml"));
    }
    set("HOME").map(|home| PathBuf::from(home).join(".config/sift/config.toml"))
}

/// The configuration of the repository at `root` for a command-line front end: its files and
/// the process environment, with `flags` over them.
pub fn for_cli(root: &Path, flags: &[Flag]) -> Result<Config, ConfigError> {
    Config::load(&Inputs { flags, ..Inputs::new(Some(root), &process_env) })
}

/// The configuration of the workspace folder `root` for the language server: its files, the
/// editor's settings (`initializationOptions`) and the process environment.
pub fn for_editor(root: &Path, editor: Option<&serde_json::Value>) -> Result<Config, ConfigError> {
    Config::load(&Inputs { editor, ..Inputs::new(Some(root), &process_env) })
}

impl Config {
    /// Reads every layer `inputs` names.
    pub fn load(inputs: &Inputs<'_>) -> Result<Config, ConfigError> {
        // A missing or wrong root is reported as such, not as an unreadable file in it.
        let root = match inputs.root {
            Some(root) => Some(crate::store::open(root)?.root().to_path_buf()),
            None => None,
        };
        // Counted by a test (tests/tests/agent.rs): a run reads its configuration once.
        tracing::debug!(target: "sift::config", "configuration loaded for {:?}", root);
        let mut config = Config {
            root: root.clone(),
            files: Vec::new(),
            values: SECTIONS
                .iter()
                .map(|s| s.keys.iter().map(|k| Setting::default_to(k.default_value())).collect())
                .collect(),
            invalid: Vec::new(),
            ignored: Vec::new(),
        };
        if let Some(path) = user_config_path(inputs.env) {
            let table = read_file(&path)?;
            let source = Source::User(path.clone());
            config.files.push(File { source: source.clone(), found: table.is_some() });
            if let Some(table) = table {
                config.apply_file(&table, &source, path.parent());
            }
        }
        if let Some(root) = &root {
            let (path, table) = match &inputs.repo_file {
                Some((name, text)) => (name.clone(), parse_text(*text, name)?),
                None => {
                    let path = root.join(".sift").join("config.toml");
                    let table = read_file(&path)?;
                    (path, table)
                }
            };
            let source = Source::Repo(path);
            config.files.push(File { source: source.clone(), found: table.is_some() });
            if let Some(table) = table {
                config.apply_file(&table, &source, Some(root));
            }
        }
        if let Some(editor) = inputs.editor {
            config.apply_editor(editor, root.as_deref());
        }
        config.apply_env(inputs.env);
        for flag in inputs.flags {
            let source = Source::Flag(flag.flag);
            match SECTIONS.iter().position(|s| s.name == flag.section) {
                Some(si) => {
                    config.offer(si, flag.key, Raw::Toml(flag.value.clone()), &source, None)
                }
                None => config.invalid.push(Invalid {
                    origin: source,
                    section: "flags",
                    key: Some(flag.key.into()),
                    reason: format!("no section [{}]", flag.section),
                }),
            }
        }
        Ok(config)
    }

    /// The repository root (canonical), when there is one.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// The configuration files looked at, in order.
    pub fn files(&self) -> &[File] {
        &self.files
    }

    /// Every bad value or table, in the order the layers were read.
    pub fn errors(&self) -> &[Invalid] {
        &self.invalid
    }

    /// Tables and keys sift does not read.
    pub fn ignored(&self) -> &[Ignored] {
        &self.ignored
    }

    /// Every key of every section with its value (`None`: unset) and source.
    pub fn entries(
        &self,
    ) -> impl Iterator<Item = (&'static Section, &'static spec::Key, &Setting<Option<Value>>)> {
        SECTIONS.iter().zip(&self.values).flat_map(|(section, values)| {
            section.keys.iter().zip(values).map(move |(key, value)| (*section, key, value))
        })
    }

    /// The value of `[section] key` (`None` when there is no such key).
    pub fn get(&self, section: &str, key: &str) -> Option<&Setting<Option<Value>>> {
        let si = SECTIONS.iter().position(|s| s.name == section)?;
        let ki = SECTIONS[si].keys.iter().position(|k| k.name == key)?;
        Some(&self.values[si][ki])
    }

    /// The effective configuration as `sift config show --json` prints it: `root`, `files`,
    /// `sections` (every key's `value` and `source`), `errors` and `ignored`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut sections = serde_json::Map::new();
        for (section, values) in SECTIONS.iter().zip(&self.values) {
            let mut keys = serde_json::Map::new();
            for (key, setting) in section.keys.iter().zip(values) {
                keys.insert(
                    key.name.into(),
                    serde_json::json!({
                        "value": setting.value.as_ref().map_or(serde_json::Value::Null, Value::to_json),
                        "source": source_json(&setting.source),
                    }),
                );
            }
            sections.insert(section.name.into(), serde_json::Value::Object(keys));
        }
        let files: Vec<serde_json::Value> = self
            .files
            .iter()
            .map(|f| {
                let mut v = source_json(&f.source);
                v["found"] = serde_json::Value::Bool(f.found);
                v
            })
            .collect();
        serde_json::json!({
            "root": self.root.as_ref().map(|r| r.display().to_string()),
            "files": files,
            "sections": sections,
            "errors": self.invalid.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            "ignored": self.ignored.iter().map(|i| i.to_string()).collect::<Vec<_>>(),
        })
    }

    /// A section's values, or its first error.
    fn section(&self, spec: &'static Section) -> Result<SectionValues<'_>, Invalid> {
        if let Some(bad) = self.invalid.iter().find(|e| e.section == spec.name) {
            return Err(bad.clone());
        }
        let si = SECTIONS
            .iter()
            .position(|s| s.name == spec.name)
            .expect("every section's descriptor is in SECTIONS");
        Ok(SectionValues { spec, values: &self.values[si] })
    }

    /// A configuration file's tables.
    fn apply_file(&mut self, table: &toml::Table, source: &Source, base: Option<&Path>) {
        for (name, value) in table {
            let Some(si) = SECTIONS.iter().position(|s| s.name == name) else {
                self.ignored.push(Ignored {
                    origin: source.clone(),
                    table: name.clone(),
                    key: None,
                });
                continue;
            };
            let Some(table) = value.as_table() else {
                self.invalid.push(not_a_table(source, SECTIONS[si].name, value.type_str()));
                continue;
            };
            for (key, value) in table {
                self.offer(si, key, Raw::Toml(value.clone()), source, base);
            }
        }
    }

    /// The editor's settings: an object of tables, as `initializationOptions` carries them. A
    /// `null` is no setting (the repository's file decides).
    fn apply_editor(&mut self, editor: &serde_json::Value, root: Option<&Path>) {
        let source = Source::Editor;
        for (si, section) in SECTIONS.iter().enumerate() {
            let Some(value) = editor.get(section.name).filter(|v| !v.is_null()) else {
                continue;
            };
            let Some(object) = value.as_object() else {
                let found = match value {
                    serde_json::Value::Bool(_) => "boolean",
                    serde_json::Value::Number(_) => "number",
                    serde_json::Value::String(_) => "string",
                    _ => "array",
                };
                self.invalid.push(not_a_table(&source, section.name, found));
                continue;
            };
            for (key, value) in object.iter().filter(|(_, v)| !v.is_null()) {
                match toml::Value::try_from(value) {
                    Ok(value) => self.offer(si, key, Raw::Toml(value), &source, root),
                    Err(e) => self.invalid.push(Invalid {
                        origin: source.clone(),
                        section: section.name,
                        key: Some(key.clone()),
                        reason: format!("not a configuration value: {e}"),
                    }),
                }
            }
        }
    }

    /// The environment variables of every key that has one; empty ones are unset.
    fn apply_env(&mut self, env: &dyn Fn(&str) -> Option<String>) {
        for (si, section) in SECTIONS.iter().enumerate() {
            for key in section.keys {
                let Some(var) = key.env else { continue };
                let Some(value) = env(var).filter(|v| !v.trim().is_empty()) else { continue };
                self.offer(
                    si,
                    key.name,
                    Raw::Text(value.trim().to_owned()),
                    &Source::Env(var),
                    None,
                );
            }
        }
    }

    /// One layer's value for `[section] key`: checked, and in force unless a later layer
    /// sets the key too. A bad value is recorded and leaves the earlier value in force.
    fn offer(&mut self, si: usize, key: &str, raw: Raw, source: &Source, base: Option<&Path>) {
        let section = SECTIONS[si];
        let bad = |reason: String| Invalid {
            origin: source.clone(),
            section: section.name,
            key: Some(key.to_owned()),
            reason,
        };
        if let Some((_, reason)) = section.refused.iter().find(|(name, _)| *name == key) {
            self.invalid.push(bad((*reason).to_owned()));
            return;
        }
        let from_a_file = matches!(source, Source::User(_) | Source::Repo(_) | Source::Editor);
        let ki = match section.keys.iter().position(|k| k.name == key) {
            Some(ki) if from_a_file && !section.keys[ki].in_files => {
                let var = section.keys[ki].env.unwrap_or("the environment");
                self.invalid
                    .push(bad(format!("set by {var} only, not in a file or editor settings")));
                return;
            }
            Some(ki) => ki,
            // The review's rules: read by the review from the repository's file only.
            None if section.elsewhere.contains(&key) => {
                if !matches!(source, Source::Repo(_)) {
                    self.ignored.push(Ignored {
                        origin: source.clone(),
                        table: section.name.to_owned(),
                        key: Some(key.to_owned()),
                    });
                }
                return;
            }
            None if section.strict => {
                self.invalid
                    .push(bad(format!("unknown key (known: {})", section.file_key_names())));
                return;
            }
            None => {
                self.ignored.push(Ignored {
                    origin: source.clone(),
                    table: section.name.to_owned(),
                    key: Some(key.to_owned()),
                });
                return;
            }
        };
        match section.keys[ki].kind.parse(&raw, base) {
            Ok(value) => self.values[si][ki] = Setting::from(value, source.clone()),
            Err(reason) => self.invalid.push(bad(reason)),
        }
    }
}

fn not_a_table(source: &Source, section: &'static str, found: &str) -> Invalid {
    Invalid {
        origin: source.clone(),
        section,
        key: None,
        reason: format!("{section} must be a table ([{section}]), not a {found}"),
    }
}

/// A source as `sift config show --json` writes it: `{"layer": …}` and the file, variable or
/// flag.
pub fn source_json(source: &Source) -> serde_json::Value {
    let mut v = serde_json::json!({ "layer": source.layer() });
    match source {
        Source::User(p) | Source::Repo(p) => v["path"] = p.display().to_string().into(),
        Source::Env(var) => v["variable"] = (*var).into(),
        Source::Flag(flag) => v["flag"] = (*flag).into(),
        Source::Default | Source::Editor => {}
    }
    v
}

/// A configuration file's tables; `None` when there is no file.
fn read_file(path: &Path) -> Result<Option<toml::Table>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(ConfigError::Read { path: path.to_path_buf(), reason: e.to_string() });
        }
    };
    parse_text(Some(&text), path)
}

/// A configuration file's text as a table (`path` names it in messages); `None` for no file.
fn parse_text(text: Option<&str>, path: &Path) -> Result<Option<toml::Table>, ConfigError> {
    let Some(text) = text else { return Ok(None) };
    text.parse::<toml::Table>().map(Some).map_err(|e: toml::de::Error| {
        let at = e.span().map_or(0, |s| s.start).min(text.len());
        let before = &text[..text.floor_char_boundary(at)];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        let message = e.message().lines().map(str::trim).collect::<Vec<_>>().join("; ");
        ConfigError::Syntax { path: path.to_path_buf(), line, column, message }
    })
}

/// One section's values, read by the code that builds its typed section. The values' kinds
/// come from the descriptors, so asking for a key as another kind is a bug in this module
/// (every section is built in the tests), never a user's error.
struct SectionValues<'a> {
    spec: &'static Section,
    values: &'a [Setting<Option<Value>>],
}

impl SectionValues<'_> {
    fn setting(&self, key: &str) -> &Setting<Option<Value>> {
        let ki = self.spec.keys.iter().position(|k| k.name == key);
        let ki = ki.unwrap_or_else(|| panic!("[{}] has no key {key}", self.spec.name));
        &self.values[ki]
    }

    fn source(&self, key: &str) -> Source {
        self.setting(key).source.clone()
    }

    /// Refuses `key` when the repository's own file set it (`reason` says why and where to set
    /// it instead): for settings a clone must not choose for the person who runs sift.
    fn not_from_repo(&self, key: &str, reason: &str) -> Result<(), Invalid> {
        match self.source(key) {
            source @ Source::Repo(_) => Err(Invalid {
                origin: source,
                section: self.spec.name,
                key: Some(key.to_owned()),
                reason: reason.into(),
            }),
            _ => Ok(()),
        }
    }

    /// `value` with the source of `key`.
    fn with<T>(&self, key: &str, value: T) -> Setting<T> {
        Setting::from(value, self.source(key))
    }

    fn bool(&self, key: &str) -> bool {
        match self.setting(key).value {
            Some(Value::Bool(b)) => b,
            ref other => panic!("[{}] {key} is not a boolean: {other:?}", self.spec.name),
        }
    }

    fn opt_count(&self, key: &str) -> Option<u64> {
        match self.setting(key).value {
            Some(Value::Count(n)) => Some(n),
            None => None,
            ref other => panic!("[{}] {key} is not a number: {other:?}", self.spec.name),
        }
    }

    fn count(&self, key: &str) -> u64 {
        self.opt_count(key).unwrap_or_else(|| panic!("[{}] {key} has no default", self.spec.name))
    }

    fn opt_text(&self, key: &str) -> Option<String> {
        match &self.setting(key).value {
            Some(Value::Text(t)) => Some(t.clone()),
            None => None,
            other => panic!("[{}] {key} is not text: {other:?}", self.spec.name),
        }
    }

    fn text(&self, key: &str) -> String {
        self.opt_text(key).unwrap_or_else(|| panic!("[{}] {key} has no default", self.spec.name))
    }

    fn opt_path(&self, key: &str) -> Option<PathBuf> {
        match &self.setting(key).value {
            Some(Value::Path(p)) => Some(p.clone()),
            None => None,
            other => panic!("[{}] {key} is not a path: {other:?}", self.spec.name),
        }
    }

    fn list(&self, key: &str) -> Vec<String> {
        match &self.setting(key).value {
            Some(Value::List(items)) => items.clone(),
            None => Vec::new(),
            other => panic!("[{}] {key} is not a list: {other:?}", self.spec.name),
        }
    }

    /// A choice as its type (`Device`, `Backend`).
    fn parsed<T: std::str::FromStr<Err = String>>(&self, key: &str) -> Result<T, Invalid> {
        self.text(key).parse().map_err(|reason| Invalid {
            origin: self.source(key),
            section: self.spec.name,
            key: Some(key.to_owned()),
            reason,
        })
    }
}

#[cfg(test)]
mod tests;
