//! sift's own LSP methods and commands, and the shapes of their results. `docs/lsp.md` documents
//! them for plugin authors; keep the two in step.

use serde::{Deserialize, Serialize};
use tower_lsp_server::ls_types::{Range, Uri};

use sift_engine::live::Coverage;

/// `sift/search` request method.
pub const SEARCH_METHOD: &str = "sift/search";
/// `sift/stats` request method: what `sift stats --json` prints, for an editor's view.
pub const STATS_METHOD: &str = "sift/stats";

/// The parameters of `sift/stats`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatsParams {
    /// A workspace folder (default: the first).
    #[serde(default)]
    pub uri: Option<Uri>,
    /// The period's start, as `sift stats --since` takes it (`7d`, `24h`, `2026-12-01`;
    /// default: the last 30 days).
    #[serde(default)]
    pub since: Option<String>,
    /// The whole record.
    #[serde(default)]
    pub all: bool,
}

/// Every command the server executes (`workspace/executeCommand`). `docs/lsp.md` documents
/// each and the VS Code extension mirrors each (`plugin-vscode/src/protocol.ts`); a test checks
/// all three name the same list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Search (arguments: `[query, k?]` or `[{query, k?, mode?}]`).
    Search,
    /// Review each workspace's working tree against `HEAD` and publish the findings.
    Review,
    /// Bring every workspace's index up to date now.
    Reindex,
    /// Report each workspace's index state.
    Status,
    /// Pause background embedding (answers like `sift.status`).
    EmbedPause,
    /// Resume background embedding where it stopped (answers like `sift.status`).
    EmbedResume,
    /// Dismiss one finding (arguments `[uri, findingId, reason?]`).
    Dismiss,
    /// Silence a rule in one file (arguments `[uri, rule]`).
    Silence,
    /// Apply a finding's fix through `workspace/applyEdit` (arguments `[uri, findingId]`).
    ApplyFix,
    /// Send an agent run's change through `workspace/applyEdit`, to be confirmed (arguments
    /// `[{id}]`).
    AgentApply,
    /// Forget an agent run's change (arguments `[{id}]`).
    AgentDiscard,
    /// Every memory note with its state (arguments `[{stale?}]`).
    MemoryList,
    /// Some notes in full (arguments `[{slugs}]`).
    MemoryShow,
    /// Write a note citing a selection, or the given citations (arguments `[{uri, range?, text,
    /// title?, author?}]` or `[{root, cite, text, title?, author?}]`).
    MemoryAdd,
    /// Confirm a note still holds: re-anchor its citations (arguments `[{slug}]`).
    MemoryVerify,
    /// Delete a note (arguments `[{slug}]`).
    MemoryDelete,
}

impl Command {
    /// All of them, in the order `initialize` announces them.
    pub const ALL: [Command; 16] = [
        Command::Search,
        Command::Review,
        Command::Reindex,
        Command::Status,
        Command::EmbedPause,
        Command::EmbedResume,
        Command::Dismiss,
        Command::Silence,
        Command::ApplyFix,
        Command::AgentApply,
        Command::AgentDiscard,
        Command::MemoryList,
        Command::MemoryShow,
        Command::MemoryAdd,
        Command::MemoryVerify,
        Command::MemoryDelete,
    ];

    /// The command's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Command::Search => "sift.search",
            Command::Review => "sift.review",
            Command::Reindex => "sift.reindex",
            Command::Status => "sift.status",
            Command::EmbedPause => "sift.embeddings.pause",
            Command::EmbedResume => "sift.embeddings.resume",
            Command::Dismiss => "sift.dismiss",
            Command::Silence => "sift.silence",
            Command::ApplyFix => "sift.applyFix",
            Command::AgentApply => "sift.agent.apply",
            Command::AgentDiscard => "sift.agent.discard",
            Command::MemoryList => "sift.memory.list",
            Command::MemoryShow => "sift.memory.show",
            Command::MemoryAdd => "sift.memory.add",
            Command::MemoryVerify => "sift.memory.verify",
            Command::MemoryDelete => "sift.memory.delete",
        }
    }

    /// The command of that name.
    pub fn from_name(name: &str) -> Option<Command> {
        Command::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// Parameters of `sift/search`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchParams {
    /// What to look for.
    pub query: String,
    /// Number of results (default 20, at most 200).
    #[serde(default)]
    pub k: Option<usize>,
    /// `lexical`, `semantic` or `hybrid` (the default; lexical where no embeddings exist yet).
    #[serde(default)]
    pub mode: Option<String>,
    /// At most this many results per file (each chunk a result, as with `chunks`).
    #[serde(default)]
    pub max_per_file: Option<usize>,
    /// Every matching chunk a result of its own; by default each file is one result, its best
    /// chunk, with the file's other matching chunks in `more`.
    #[serde(default)]
    pub chunks: bool,
}

/// One result of `sift/search`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    /// The file.
    pub uri: Uri,
    /// Path relative to its workspace root, `/`-separated.
    pub path: String,
    /// Its best chunk.
    #[serde(flatten)]
    pub chunk: Chunk,
    /// Language or text label.
    pub language: String,
    /// Up to three lines around the best match.
    pub snippet: String,
    /// Whether the result comes from an unsaved buffer.
    pub unsaved: bool,
    /// The file's other chunks that matched, best first (absent when there are none, and in
    /// `chunks` results).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub more: Vec<Chunk>,
}

/// A matching chunk: where it is and what it defines. A result's best chunk is laid into the
/// result; its file's other chunks (`more`) are only this, without a snippet or what they share
/// with their file's result (no front end shows them; a 10-file answer is about a quarter of
/// the size without).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Chunk {
    /// The whole chunk (line-based: from column 0 of its first line to column 0 after its last).
    pub range: Range,
    /// The line that matched best (0-based, as in LSP positions).
    pub match_line: u32,
    /// Relevance, higher is better.
    pub score: f32,
    /// The defined symbol, when the chunk is a definition.
    pub symbol: Option<String>,
    /// Chunk kind (`function`, `method`, `class`…).
    pub kind: String,
    /// Enclosing symbol.
    pub container: Option<String>,
}

/// The answer to `sift/search` (and the `sift.search` command).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResponse {
    /// Best first.
    pub results: Vec<SearchResult>,
    /// The mode actually used.
    pub mode: &'static str,
    /// How complete each workspace's index is.
    pub coverage: Vec<Coverage>,
}

/// The answer to the `sift.status` command.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusResponse {
    /// sift's version.
    pub version: &'static str,
    /// Each workspace's index.
    pub workspaces: Vec<Coverage>,
    /// The negotiated position encoding.
    pub position_encoding: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(rel: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// The first backticked name of each row of `docs/lsp.md`'s commands table.
    fn documented() -> Vec<String> {
        let doc = read("docs/lsp.md");
        let table = doc
            .split("## Commands (`workspace/executeCommand`)")
            .nth(1)
            .expect("docs/lsp.md has a commands section");
        table
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .filter_map(|l| l.strip_prefix("| `")?.split('`').next().map(str::to_string))
            .collect()
    }

    /// The `sift.…` keys of `MIRRORED` in the VS Code extension.
    fn mirrored() -> Vec<String> {
        let ts = read("plugin-vscode/src/protocol.ts");
        let block = ts.split("export const MIRRORED").nth(1).expect("protocol.ts has MIRRORED");
        let block = &block[..block.find("};").expect("MIRRORED ends")];
        block
            .lines()
            .filter_map(|l| l.trim().strip_prefix("'sift.")?.split('\'').next())
            .map(|name| format!("sift.{name}"))
            .collect()
    }

    #[test]
    fn the_server_the_docs_and_the_vscode_extension_name_the_same_commands() {
        let mut ours: Vec<String> = Command::ALL.iter().map(|c| c.name().to_string()).collect();
        ours.sort();
        let mut docs = documented();
        docs.sort();
        let mut vscode = mirrored();
        vscode.sort();
        assert_eq!(ours, docs, "docs/lsp.md's commands table");
        assert_eq!(ours, vscode, "MIRRORED in plugin-vscode/src/protocol.ts");
        for command in Command::ALL {
            assert_eq!(Command::from_name(command.name()), Some(command));
        }
        assert_eq!(Command::from_name("sift.test.panic"), None);
        assert!(read("docs/lsp.md").contains(&format!("`{SEARCH_METHOD}`")));
    }
}
