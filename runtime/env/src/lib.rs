//! Every environment variable sift reads, read here and nowhere else.
//!
//! [`VARS`] is the one table of them (docs/configuration.md prints it, and a test keeps the two
//! the same); [`get`] and [`get_os`] read a variable of the table, and refuse, in debug builds,
//! a name that is not in it, so the table cannot fall behind the code. The configuration's own
//! variables (`SIFT_EMBED_MODEL`, `SIFT_MODEL_NAME`, …: one per key that has one, listed with
//! the key in the configuration reference) and the variable a user names for an API key
//! (`[model] api_key_env`) are read through [`named`], by the configuration loader only.
//!
//! This crate depends on nothing, so every crate of sift can use it: the indexer (git's global
//! ignore file), the plugin host (its cache), the runtime (models, the sandbox), the engine and
//! the front ends (through the engine).

use std::ffi::OsString;
use std::path::PathBuf;

/// Why sift reads a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// sift's own.
    Sift,
    /// A convention of the platform or of another tool, followed as that tool does.
    Platform,
    /// Passed to the commands the sandbox runs (and nothing more).
    Passed,
}

/// One variable sift reads.
#[derive(Debug, Clone, Copy)]
pub struct Var {
    /// Its name.
    pub name: &'static str,
    /// Why it is read.
    pub kind: Kind,
    /// What it does, in one line.
    pub what: &'static str,
}

const fn var(name: &'static str, kind: Kind, what: &'static str) -> Var {
    Var { name, kind, what }
}

/// Every variable sift reads (besides the configuration's own, see the crate documentation).
pub static VARS: &[Var] = &[
    var(
        "SIFT_HOME",
        Kind::Sift,
        "sift's data folder (models); default `$XDG_DATA_HOME/sift`, else `~/.local/share/sift`",
    ),
    var(
        "SIFT_LOG",
        Kind::Sift,
        "the log filter (`tracing` syntax, e.g. `sift=debug`); default `warn`",
    ),
    var(
        "SIFT_PYTHON",
        Kind::Sift,
        "the Python that `sift model install` runs pip with; default `python3`",
    ),
    var(
        "XDG_CONFIG_HOME",
        Kind::Platform,
        "where the user configuration file and git's global ignore file are",
    ),
    var("XDG_DATA_HOME", Kind::Platform, "where sift's data folder is when `SIFT_HOME` is not set"),
    var("XDG_CACHE_HOME", Kind::Platform, "where compiled plugins are cached (`sift/plugins`)"),
    var(
        "HOME",
        Kind::Platform,
        "the fallback of the XDG folders; the sandbox keeps commands out of it",
    ),
    var(
        "VIRTUAL_ENV",
        Kind::Platform,
        "an active Python environment searched for onnxruntime's library",
    ),
    var("VISUAL", Kind::Platform, "the editor `sift memory edit` opens"),
    var("EDITOR", Kind::Platform, "the editor `sift memory edit` opens when `VISUAL` is not set"),
    var("NO_COLOR", Kind::Platform, "set: `sift review` prints no colours"),
    var(
        "ORT_DISABLE_TELEMETRY",
        Kind::Platform,
        "onnxruntime's telemetry; sift sets it to 1 unless it is set",
    ),
    var(
        "GITHUB_EVENT_PATH",
        Kind::Platform,
        "`sift review --post github`: the pull request's event (number, base and head commits), as GitHub Actions writes it",
    ),
    var(
        "GITHUB_REPOSITORY",
        Kind::Platform,
        "`sift review --post github`: the repository the pull request is in (`owner/name`)",
    ),
    var(
        "GITHUB_GRAPHQL_URL",
        Kind::Platform,
        "`sift review --post github`: GitHub's GraphQL endpoint, where it resolves the threads of fixed findings; default from `GITHUB_API_URL`",
    ),
    var(
        "GITHUB_TOKEN",
        Kind::Platform,
        "`sift review --post github`: the token it posts with; never printed, logged, or given to a model, a plugin or a sandboxed command",
    ),
    var(
        "GITHUB_API_URL",
        Kind::Platform,
        "`sift review --post github`: the API's address; default `https://api.github.com` (GitHub Enterprise Server sets its own)",
    ),
    var(
        "GITHUB_EVENT_NAME",
        Kind::Platform,
        "`sift automate run`: the event that started the job; a pull request's event (`pull_request…`) runs the pull request's jobs",
    ),
    var(
        "GITHUB_REF_NAME",
        Kind::Platform,
        "`sift automate run`: the branch a job outside a pull request runs on, the base of a branch delivery when the event names no default branch",
    ),
    var(
        "PATH",
        Kind::Passed,
        "where the sandbox and the checkers look for commands; passed to them",
    ),
    var(
        "CARGO_HOME",
        Kind::Passed,
        "a Rust toolchain's folder, readable in the sandbox; default `~/.cargo`",
    ),
    var(
        "RUSTUP_HOME",
        Kind::Passed,
        "a Rust toolchain's folder, readable in the sandbox; default `~/.rustup`",
    ),
    var("PYENV_ROOT", Kind::Passed, "pyenv's folder, readable in the sandbox; default `~/.pyenv`"),
    var("NVM_DIR", Kind::Passed, "nvm's folder, readable in the sandbox; default `~/.nvm`"),
    var("LANG", Kind::Passed, "the locale, passed to sandboxed commands"),
    var("LANGUAGE", Kind::Passed, "the locale, passed to sandboxed commands"),
    var("LC_ALL", Kind::Passed, "the locale, passed to sandboxed commands"),
    var("LC_CTYPE", Kind::Passed, "the locale, passed to sandboxed commands"),
    var("LC_MESSAGES", Kind::Passed, "the locale, passed to sandboxed commands"),
    var("TERM", Kind::Passed, "the terminal type, passed to sandboxed commands"),
    var("TZ", Kind::Passed, "the time zone, passed to sandboxed commands"),
    var("USER", Kind::Passed, "the user's name, passed to sandboxed commands"),
    var("LOGNAME", Kind::Passed, "the user's name, passed to sandboxed commands"),
];

/// The entry of `name`, when the table has it.
pub fn entry(name: &str) -> Option<&'static Var> {
    VARS.iter().find(|v| v.name == name)
}

fn listed(name: &str) {
    debug_assert!(
        entry(name).is_some(),
        "{name} is read but not listed in sift_env::VARS (add it there, with what it does)"
    );
}

/// The value of `name` (a variable of [`VARS`]) when it is set and UTF-8.
pub fn get(name: &str) -> Option<String> {
    listed(name);
    std::env::var(name).ok()
}

/// The value of `name` (a variable of [`VARS`]) when it is set.
pub fn get_os(name: &str) -> Option<OsString> {
    listed(name);
    std::env::var_os(name)
}

/// `name` as an absolute folder: `None` when unset, empty or relative (the XDG rule).
pub fn absolute_dir(name: &str) -> Option<PathBuf> {
    get_os(name).map(PathBuf::from).filter(|p| p.is_absolute())
}

/// The home folder, when `HOME` names an absolute one.
pub fn home() -> Option<PathBuf> {
    absolute_dir("HOME")
}

/// An XDG base folder: `$xdg` when absolute, else `$HOME/fallback`.
pub fn xdg_dir(xdg: &str, fallback: &str) -> Option<PathBuf> {
    absolute_dir(xdg).or_else(|| home().map(|h| h.join(fallback)))
}

/// A variable named by the configuration (a key's variable, or the user's `api_key_env`),
/// for the configuration loader and the model client only.
pub fn named(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_listed_once_and_explained() {
        let mut names: Vec<_> = VARS.iter().map(|v| v.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), VARS.len());
        assert!(VARS.iter().all(|v| !v.what.is_empty() && !v.what.contains('|')));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "not listed")]
    fn a_name_outside_the_table_is_refused() {
        get("SIFT_SOMETHING_NEW");
    }
}
