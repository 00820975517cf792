//! The Zed extension for sift.
//!
//! - Language server: starts `sift lsp` (from the worktree's `PATH`, or `lsp.sift.binary.path`)
//!   for the languages listed in `extension.toml`, and passes `lsp.sift.initialization_options`
//!   and `lsp.sift.settings` through. Zed's symbol picker (`project symbols`) then runs sift's
//!   code search through `workspace/symbol`.
//! - Slash command: `/sift-search QUERY` runs `sift search --json` on the worktree and inserts
//!   the best results as Markdown, one fold per result.
//! - Slash command: `/sift-agent TASK` runs `sift agent --json` on the worktree (the agent
//!   proposes a change and writes nothing) and inserts its answer and the diff.
//! - Slash command: `/sift-memory [QUERY]` runs `sift memory search --json` (`sift memory list
//!   --json` without a query) and inserts the notes with their freshness and citations, one fold
//!   per note, stale ones flagged and last.
//! - Slash command: `/sift-stats [PERIOD]` runs `sift stats --json` (`7d`, a date, `all`; the
//!   last 30 days without one) and inserts the agent's runs and the review rules as tables.
//!
//! The decisions live in [`command`], [`search`], [`agent`], [`memory`] and [`stats`], which are pure and tested on the host; this
//! file only connects them to Zed's API.

pub mod agent;
pub mod command;
pub mod memory;
pub mod search;
pub mod stats;

use zed_extension_api::{
    self as zed, LanguageServerId, SlashCommand, SlashCommandOutput, SlashCommandOutputSection,
    Worktree, serde_json::Value, settings::LspSettings,
};

use crate::command::BinarySettings;

/// The language server's id in `extension.toml`, and its key in Zed's `lsp` settings.
pub const SERVER_ID: &str = "sift";

/// The slash command's name in `extension.toml` (without the `/`).
pub const SEARCH_COMMAND: &str = "sift-search";

/// The agent's slash command in `extension.toml` (without the `/`).
pub const AGENT_COMMAND: &str = "sift-agent";

/// The memory notes' slash command in `extension.toml` (without the `/`).
pub const MEMORY_COMMAND: &str = "sift-memory";

/// The figures' slash command in `extension.toml` (without the `/`).
pub const STATS_COMMAND: &str = "sift-stats";

/// The extension. It keeps no state: every call reads the current settings.
struct SiftExtension;

/// The user's `lsp.<id>.binary` settings as plain data ([`BinarySettings::default`] when unset).
pub fn binary_settings(settings: Option<&LspSettings>) -> BinarySettings {
    settings
        .and_then(|settings| settings.binary.as_ref())
        .map(|binary| BinarySettings {
            path: binary.path.clone(),
            arguments: binary.arguments.clone(),
            env: binary.env.clone(),
        })
        .unwrap_or_default()
}

/// `lsp.<id>.initialization_options`, sent as the `initialize` request's
/// `initializationOptions`.
pub fn initialization_options(settings: Option<&LspSettings>) -> Option<Value> {
    settings.and_then(|settings| settings.initialization_options.clone())
}

/// `lsp.<id>.settings`, answered to `workspace/configuration` and sent with
/// `workspace/didChangeConfiguration`.
pub fn workspace_configuration(settings: Option<&LspSettings>) -> Option<Value> {
    settings.and_then(|settings| settings.settings.clone())
}

/// Reads `lsp.<name>` for the worktree. Settings that cannot be read count as unset, so a typo
/// in them does not keep the server from starting.
fn lsp_settings(name: &str, worktree: &Worktree) -> Option<LspSettings> {
    LspSettings::for_worktree(name, worktree).ok()
}

impl zed::Extension for SiftExtension {
    fn new() -> Self {
        SiftExtension
    }

    fn language_server_command(
        &mut self,
        language_server_id: &LanguageServerId,
        worktree: &Worktree,
    ) -> zed::Result<zed::Command> {
        let settings = lsp_settings(language_server_id.as_ref(), worktree);
        let resolved = command::server_command(
            &binary_settings(settings.as_ref()),
            &worktree.root_path(),
            |name| worktree.which(name),
            worktree.shell_env(),
        )?;
        Ok(zed::Command { command: resolved.command, args: resolved.args, env: resolved.env })
    }

    fn language_server_initialization_options(
        &mut self,
        language_server_id: &LanguageServerId,
        worktree: &Worktree,
    ) -> zed::Result<Option<Value>> {
        Ok(initialization_options(lsp_settings(language_server_id.as_ref(), worktree).as_ref()))
    }

    fn language_server_workspace_configuration(
        &mut self,
        language_server_id: &LanguageServerId,
        worktree: &Worktree,
    ) -> zed::Result<Option<Value>> {
        Ok(workspace_configuration(lsp_settings(language_server_id.as_ref(), worktree).as_ref()))
    }

    fn run_slash_command(
        &self,
        command: SlashCommand,
        args: Vec<String>,
        worktree: Option<&Worktree>,
    ) -> zed::Result<SlashCommandOutput> {
        if command.name == AGENT_COMMAND {
            return run_agent(args, worktree);
        }
        if command.name == MEMORY_COMMAND {
            return run_memory(args, worktree);
        }
        if command.name == STATS_COMMAND {
            let worktree = worktree.ok_or("/sift-stats needs an open project (a worktree)")?;
            let root = worktree.root_path();
            let stdout = run_cli(worktree, &root, stats::stats_args(&root, &args), "stats")?;
            let period = args.join(" ");
            let formatted = stats::format_output(&stdout, period.trim())?;
            return Ok(slash_output(formatted.text, formatted.sections));
        }
        if command.name != SEARCH_COMMAND {
            return Err(format!("unknown slash command: /{}", command.name));
        }
        let worktree = worktree.ok_or("/sift-search needs an open project (a worktree)")?;
        let root = worktree.root_path();
        let query = args.join(" ");
        let stdout = run_cli(worktree, &root, command::search_args(&root, &args)?, "search")?;
        let hits = search::parse_hits(&stdout)?;
        let formatted = search::format_output(query.trim(), &hits);
        Ok(slash_output(formatted.text, formatted.sections))
    }
}

/// `/sift-agent TASK`: runs `sift agent --json` (never `--apply`) and shows the proposal.
fn run_agent(args: Vec<String>, worktree: Option<&Worktree>) -> zed::Result<SlashCommandOutput> {
    let worktree = worktree.ok_or("/sift-agent needs an open project (a worktree)")?;
    let root = worktree.root_path();
    let binary = binary_settings(lsp_settings(SERVER_ID, worktree).as_ref());
    let program =
        command::resolve_binary(binary.path.as_deref(), &root, |name| worktree.which(name))?;
    let task = args.join(" ");
    let mut process = zed::process::Command {
        command: program,
        args: agent::agent_args(&root, &args)?,
        env: command::merge_env(worktree.shell_env(), binary.env.as_ref()),
    };
    let output = process.output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    // Exit status 2 (a budget or the model stopped the run) still prints the run's JSON.
    let run = match (output.status, agent::parse_run(&stdout)) {
        (Some(0 | 2), Ok(run)) => run,
        (status, _) => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let last: Vec<&str> = stderr.lines().rev().take(6).collect();
            return Err(format!(
                "sift agent failed ({}): {}",
                status.map_or("killed by a signal".to_string(), |s| format!("status {s}")),
                last.into_iter().rev().collect::<Vec<_>>().join("\n").trim()
            ));
        }
    };
    let formatted = agent::format_output(task.trim(), &root, &run);
    Ok(slash_output(formatted.text, formatted.sections))
}

/// Runs the sift binary the settings name (or the one on the worktree's `PATH`) with `args`
/// and the worktree's environment: its stdout, or why it failed (`what`: the subcommand, for
/// the message).
fn run_cli(worktree: &Worktree, root: &str, args: Vec<String>, what: &str) -> zed::Result<String> {
    let binary = binary_settings(lsp_settings(SERVER_ID, worktree).as_ref());
    let program =
        command::resolve_binary(binary.path.as_deref(), root, |name| worktree.which(name))?;
    let mut process = zed::process::Command {
        command: program,
        args,
        env: command::merge_env(worktree.shell_env(), binary.env.as_ref()),
    };
    let output = process.output()?;
    if output.status != Some(0) {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!(
            "sift {what} failed ({}): {}",
            output.status.map_or("killed by a signal".to_string(), |s| format!("status {s}")),
            stderr.trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// `/sift-memory [QUERY]`: runs `sift memory search --json` (or `list --json`) and shows the notes.
fn run_memory(args: Vec<String>, worktree: Option<&Worktree>) -> zed::Result<SlashCommandOutput> {
    let worktree = worktree.ok_or("/sift-memory needs an open project (a worktree)")?;
    let root = worktree.root_path();
    let query = args.join(" ");
    let stdout = run_cli(worktree, &root, memory::memory_args(&root, &args), "memory")?;
    let notes = memory::parse_notes(&stdout)?;
    let formatted = memory::format_output(
        query.split_whitespace().collect::<Vec<_>>().join(" ").as_str(),
        &notes,
    );
    Ok(slash_output(formatted.text, formatted.sections))
}

/// Registers the extension with Zed. The macro defines the exported `init-extension` function;
/// inside this private module it is not part of the crate's documented API.
mod registration {
    zed_extension_api::register_extension!(super::SiftExtension);
}

/// Zed's form of a formatted output: its Markdown and its folds.
fn slash_output(text: String, sections: Vec<search::Section>) -> SlashCommandOutput {
    SlashCommandOutput {
        text,
        sections: sections
            .into_iter()
            .map(|section| SlashCommandOutputSection {
                range: section.range.into(),
                label: section.label,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use zed_extension_api::{serde_json::json, settings::CommandSettings};

    use super::*;

    /// Settings as Zed hands them over: the JSON of `"lsp": { "sift": { ... } }`.
    fn from_json(value: Value) -> LspSettings {
        zed_extension_api::serde_json::from_value(value).unwrap()
    }

    #[test]
    fn unset_settings_mean_defaults() {
        assert_eq!(binary_settings(None), BinarySettings::default());
        assert_eq!(binary_settings(Some(&LspSettings::default())), BinarySettings::default());
        assert_eq!(initialization_options(None), None);
        assert_eq!(workspace_configuration(Some(&LspSettings::default())), None);
    }

    #[test]
    fn settings_json_reaches_the_command_and_the_server() {
        let settings = from_json(json!({
            "binary": {
                "path": "/opt/sift",
                "arguments": ["lsp", "--log-file", "/tmp/sift.log"],
                "env": { "SIFT_LOG": "debug" }
            },
            "initialization_options": { "siftTestHooks": false },
            "settings": { "search": { "k": 30 } }
        }));
        let binary = binary_settings(Some(&settings));
        assert_eq!(binary.path.as_deref(), Some("/opt/sift"));
        let resolved =
            command::server_command(&binary, "/repo", |_| None, vec![("HOME".into(), "/h".into())])
                .unwrap();
        assert_eq!(resolved.command, "/opt/sift");
        assert_eq!(resolved.args, ["lsp", "--log-file", "/tmp/sift.log"]);
        assert_eq!(
            resolved.env,
            [("HOME".to_string(), "/h".to_string()), ("SIFT_LOG".to_string(), "debug".to_string())]
        );
        assert_eq!(
            initialization_options(Some(&settings)),
            Some(json!({ "siftTestHooks": false }))
        );
        assert_eq!(
            workspace_configuration(Some(&settings)),
            Some(json!({ "search": { "k": 30 } }))
        );
    }

    #[test]
    fn binary_settings_copy_every_field() {
        let settings = LspSettings {
            binary: Some(CommandSettings {
                path: None,
                arguments: Some(vec!["lsp".into()]),
                env: Some(HashMap::from([("A".to_string(), "1".to_string())])),
            }),
            ..Default::default()
        };
        let binary = binary_settings(Some(&settings));
        assert_eq!(binary.path, None);
        assert_eq!(binary.arguments, Some(vec!["lsp".to_string()]));
        assert_eq!(binary.env, Some(HashMap::from([("A".to_string(), "1".to_string())])));
    }

    #[test]
    fn manifest_matches_the_code() {
        let manifest = include_str!("../extension.toml");
        assert!(manifest.contains(&format!("[language_servers.{SERVER_ID}]")));
        assert!(manifest.contains(&format!("[slash_commands.{SEARCH_COMMAND}]")));
        assert!(manifest.contains(&format!("[slash_commands.{AGENT_COMMAND}]")));
        assert!(manifest.contains(&format!("[slash_commands.{MEMORY_COMMAND}]")));
        // The process:exec capabilities must allow the arguments that memory_args builds.
        assert!(manifest.contains(r#"args = ["memory", "list", "--json", "**"]"#));
        assert!(manifest.contains(r#"args = ["memory", "search", "--json", "**"]"#));
        assert_eq!(memory::memory_args("/r", &[])[..3], ["memory", "list", "--json"]);
        assert_eq!(memory::memory_args("/r", &["q".into()])[..3], ["memory", "search", "--json"]);
        assert!(manifest.contains(r#"args = ["agent", "--json", "**"]"#));
        assert!(manifest.contains("schema_version = 1"));
        // The process:exec capability must allow the arguments that search_args builds.
        assert!(manifest.contains(r#"args = ["search", "--json", "**"]"#));
        let version = format!("version = \"{}\"", env!("CARGO_PKG_VERSION"));
        assert!(manifest.contains(&version), "extension.toml and Cargo.toml versions differ");
        for language in ["Rust", "Python", "JavaScript", "TypeScript", "TSX", "Go", "Java", "C++"] {
            assert!(manifest.contains(&format!("\"{language}\"")), "{language} missing");
        }
    }
}
