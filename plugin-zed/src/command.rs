//! How the `sift` command line is put together from the user's settings: which binary, which
//! arguments, which environment. Pure functions of their inputs, so they are tested on the host.

use std::collections::HashMap;

/// The name of the binary looked up on the worktree's `PATH`.
pub const BINARY_NAME: &str = "sift";

/// The arguments that start the language server over stdio.
pub const LSP_ARGS: &[&str] = &["lsp"];

/// How many results `/sift-search` asks for.
pub const SEARCH_LIMIT: usize = 10;

/// A resolved command: what Zed should run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedCommand {
    /// The program: an absolute path, or whatever the user configured.
    pub command: String,
    /// The arguments after the program.
    pub args: Vec<String>,
    /// Environment variables to set, sorted by name.
    pub env: Vec<(String, String)>,
}

/// The user's `lsp.sift.binary` settings, as plain data (mirrors Zed's `CommandSettings`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BinarySettings {
    /// `binary.path`: the program to run instead of `sift` from `PATH`.
    pub path: Option<String>,
    /// `binary.arguments`: replaces the default arguments (`lsp`) of the language server.
    pub arguments: Option<Vec<String>>,
    /// `binary.env`: extra environment variables, on top of the worktree's shell environment.
    pub env: Option<HashMap<String, String>>,
}

/// Picks the program to run.
///
/// A configured `path` wins: an absolute path is used as it is, a relative path with a directory
/// part (`bin/sift`) is taken relative to the worktree root, and a bare name (`sift-nightly`) is
/// looked up on the worktree's `PATH` with `which`. Without a configured path, `sift` is looked up
/// on `PATH`. An empty or blank configured path counts as none.
pub fn resolve_binary(
    configured: Option<&str>,
    worktree_root: &str,
    which: impl FnOnce(&str) -> Option<String>,
) -> Result<String, String> {
    match configured.map(str::trim).filter(|path| !path.is_empty()) {
        Some(path) if is_absolute(path) => Ok(path.to_string()),
        Some(path) if path.contains('/') || path.contains('\\') => {
            Ok(join(worktree_root, path.trim_start_matches("./")))
        }
        Some(name) => which(name).ok_or_else(|| {
            format!(
                "the configured sift binary `{name}` (lsp.sift.binary.path) is not on the \
                 worktree's PATH"
            )
        }),
        None => which(BINARY_NAME).ok_or_else(|| {
            format!(
                "`{BINARY_NAME}` was not found on the worktree's PATH: install it (`cargo install \
                 --path lsp` in the sift repository) or set `lsp.sift.binary.path` in Zed's \
                 settings"
            )
        }),
    }
}

/// The language server's arguments: the configured ones when there are any, else `lsp`.
///
/// Configured arguments replace the default as in Zed's own `binary.arguments` handling, so they
/// must name the subcommand themselves (`["lsp", "--log-file", "/tmp/sift.log"]`).
pub fn server_args(configured: Option<&[String]>) -> Vec<String> {
    match configured {
        Some(args) if !args.is_empty() => args.to_vec(),
        _ => LSP_ARGS.iter().map(|arg| (*arg).to_string()).collect(),
    }
}

/// The environment for a sift process: the worktree's shell environment with the configured
/// variables on top (a configured variable replaces one of the same name), sorted by name.
pub fn merge_env(
    shell_env: Vec<(String, String)>,
    configured: Option<&HashMap<String, String>>,
) -> Vec<(String, String)> {
    let mut env: HashMap<String, String> = shell_env.into_iter().collect();
    if let Some(configured) = configured {
        env.extend(configured.iter().map(|(key, value)| (key.clone(), value.clone())));
    }
    let mut env: Vec<(String, String)> = env.into_iter().collect();
    env.sort();
    env
}

/// The full language server command: `sift lsp` (or the configured program and arguments) with
/// the merged environment.
pub fn server_command(
    settings: &BinarySettings,
    worktree_root: &str,
    which: impl FnOnce(&str) -> Option<String>,
    shell_env: Vec<(String, String)>,
) -> Result<ResolvedCommand, String> {
    Ok(ResolvedCommand {
        command: resolve_binary(settings.path.as_deref(), worktree_root, which)?,
        args: server_args(settings.arguments.as_deref()),
        env: merge_env(shell_env, settings.env.as_ref()),
    })
}

/// The arguments of `sift search` for `/sift-search`: `search --json --path ROOT -k N -- QUERY…`.
///
/// The words of the query are passed as separate arguments after `--`, so a query that starts
/// with `-` is not taken for an option. Errors when the query is empty. `search --json` must stay
/// first: the extension's `process:exec` capability allows only that prefix.
pub fn search_args(worktree_root: &str, query: &[String]) -> Result<Vec<String>, String> {
    let words: Vec<String> =
        query.iter().flat_map(|arg| arg.split_whitespace()).map(str::to_string).collect();
    if words.is_empty() {
        return Err("usage: /sift-search QUERY (what to look for)".to_string());
    }
    let mut args: Vec<String> = ["search", "--json", "--path", worktree_root, "-k"]
        .iter()
        .map(|arg| (*arg).to_string())
        .collect();
    args.push(SEARCH_LIMIT.to_string());
    args.push("--".to_string());
    args.extend(words);
    Ok(args)
}

fn is_absolute(path: &str) -> bool {
    // Zed may run on Windows: `C:\...`, `C:/...` and UNC paths count as absolute too.
    let bytes = path.as_bytes();
    path.starts_with('/')
        || path.starts_with("\\\\")
        || (bytes.len() >= 3
            && bytes[0].is_ascii_alphabetic()
            && bytes[1] == b':'
            && (bytes[2] == b'\\' || bytes[2] == b'/'))
}

fn join(root: &str, relative: &str) -> String {
    if root.ends_with('/') || root.ends_with('\\') {
        format!("{root}{relative}")
    } else {
        format!("{root}/{relative}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_string()).collect()
    }

    fn found(path: &'static str) -> impl FnOnce(&str) -> Option<String> {
        move |_| Some(path.to_string())
    }

    fn nowhere(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn default_is_sift_from_path_with_lsp() {
        let mut asked = String::new();
        let command = server_command(
            &BinarySettings::default(),
            "/repo",
            |name| {
                asked = name.to_string();
                Some("/usr/local/bin/sift".to_string())
            },
            vec![],
        )
        .unwrap();
        assert_eq!(asked, "sift");
        assert_eq!(command.command, "/usr/local/bin/sift");
        assert_eq!(command.args, strings(&["lsp"]));
        assert!(command.env.is_empty());
    }

    #[test]
    fn missing_binary_says_how_to_fix_it() {
        let err = server_command(&BinarySettings::default(), "/repo", nowhere, vec![]).unwrap_err();
        assert!(err.contains("not found on the worktree's PATH"), "{err}");
        assert!(err.contains("lsp.sift.binary.path"), "{err}");
    }

    #[test]
    fn configured_absolute_path_wins_without_lookup() {
        let settings =
            BinarySettings { path: Some("/opt/sift/bin/sift".into()), ..Default::default() };
        let command =
            server_command(&settings, "/repo", |_| panic!("no PATH lookup"), vec![]).unwrap();
        assert_eq!(command.command, "/opt/sift/bin/sift");
        assert_eq!(command.args, strings(&["lsp"]));
    }

    #[test]
    fn windows_absolute_paths_are_absolute() {
        for path in [r"C:\tools\sift.exe", "C:/tools/sift.exe", r"\\server\share\sift.exe"] {
            assert_eq!(resolve_binary(Some(path), "/repo", nowhere).unwrap(), path);
        }
    }

    #[test]
    fn configured_relative_path_is_under_the_worktree() {
        assert_eq!(
            resolve_binary(Some("target/release/sift"), "/repo", nowhere).unwrap(),
            "/repo/target/release/sift"
        );
        assert_eq!(
            resolve_binary(Some("./target/debug/sift"), "/repo/", nowhere).unwrap(),
            "/repo/target/debug/sift"
        );
    }

    #[test]
    fn configured_bare_name_is_looked_up_on_path() {
        let mut asked = String::new();
        let resolved = resolve_binary(Some("sift-nightly"), "/repo", |name| {
            asked = name.to_string();
            Some("/home/me/bin/sift-nightly".to_string())
        })
        .unwrap();
        assert_eq!(asked, "sift-nightly");
        assert_eq!(resolved, "/home/me/bin/sift-nightly");
        let err = resolve_binary(Some("sift-nightly"), "/repo", nowhere).unwrap_err();
        assert!(err.contains("sift-nightly"), "{err}");
    }

    #[test]
    fn blank_configured_path_counts_as_none() {
        assert_eq!(resolve_binary(Some("  "), "/repo", found("/bin/sift")).unwrap(), "/bin/sift");
    }

    #[test]
    fn configured_arguments_replace_the_default() {
        let settings = BinarySettings {
            arguments: Some(strings(&["lsp", "--log-file", "/tmp/sift.log"])),
            ..Default::default()
        };
        let command = server_command(&settings, "/repo", found("/bin/sift"), vec![]).unwrap();
        assert_eq!(command.args, strings(&["lsp", "--log-file", "/tmp/sift.log"]));
        // An empty list is no override: the server still gets its subcommand.
        assert_eq!(server_args(Some(&[])), strings(&["lsp"]));
    }

    #[test]
    fn configured_env_overrides_the_shell_env_and_is_sorted() {
        let shell = vec![
            ("PATH".to_string(), "/usr/bin".to_string()),
            ("SIFT_LOG".to_string(), "warn".to_string()),
        ];
        let configured: HashMap<String, String> = [
            ("SIFT_LOG".to_string(), "debug".to_string()),
            ("SIFT_THREADS".to_string(), "2".to_string()),
        ]
        .into_iter()
        .collect();
        let settings = BinarySettings { env: Some(configured), ..Default::default() };
        let command = server_command(&settings, "/repo", found("/bin/sift"), shell).unwrap();
        assert_eq!(
            command.env,
            vec![
                ("PATH".to_string(), "/usr/bin".to_string()),
                ("SIFT_LOG".to_string(), "debug".to_string()),
                ("SIFT_THREADS".to_string(), "2".to_string()),
            ]
        );
    }

    #[test]
    fn search_args_put_the_query_after_a_separator() {
        let args = search_args("/repo", &strings(&["parse config", "-x"])).unwrap();
        assert_eq!(
            args,
            strings(&[
                "search", "--json", "--path", "/repo", "-k", "10", "--", "parse", "config", "-x"
            ])
        );
        // The capability in extension.toml allows exactly this prefix.
        assert_eq!(&args[..2], &strings(&["search", "--json"])[..]);
    }

    #[test]
    fn search_needs_a_query() {
        assert!(search_args("/repo", &[]).is_err());
        assert!(search_args("/repo", &strings(&["  "])).is_err());
    }
}
