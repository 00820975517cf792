//! sift's own LSP methods and commands, and the shapes of their results. `docs/lsp.md` documents
//! them for plugin authors; keep the two in step.

use serde::{Deserialize, Serialize};
use tower_lsp_server::ls_types::{Range, Uri};

use super::workspace::Coverage;

/// `sift/search` request method.
pub const SEARCH_METHOD: &str = "sift/search";
/// Command: search (arguments: `[query, k?]` or `[{query, k?, mode?}]`).
pub const CMD_SEARCH: &str = "sift.search";
/// Command: bring every workspace's index up to date now.
pub const CMD_REINDEX: &str = "sift.reindex";
/// Command: report each workspace's index state.
pub const CMD_STATUS: &str = "sift.status";
/// Command: pause background embedding (answers like `sift.status`).
pub const CMD_EMBED_PAUSE: &str = "sift.embeddings.pause";
/// Command: resume background embedding where it stopped (answers like `sift.status`).
pub const CMD_EMBED_RESUME: &str = "sift.embeddings.resume";
/// Command: review each workspace's working tree against `HEAD` and publish the findings.
pub const CMD_REVIEW: &str = "sift.review";
/// Every command the server executes.
pub const COMMANDS: [&str; 9] = [
    CMD_SEARCH,
    CMD_REVIEW,
    CMD_REINDEX,
    CMD_STATUS,
    CMD_EMBED_PAUSE,
    CMD_EMBED_RESUME,
    super::diagnostics::CMD_DISMISS,
    super::diagnostics::CMD_SILENCE,
    super::diagnostics::CMD_APPLY_FIX,
];

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
    /// At most this many results per file.
    #[serde(default)]
    pub max_per_file: Option<usize>,
}

/// One result of `sift/search`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    /// The file.
    pub uri: Uri,
    /// Path relative to its workspace root, `/`-separated.
    pub path: String,
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
    /// Language or text label.
    pub language: String,
    /// Up to three lines around the best match.
    pub snippet: String,
    /// Whether the result comes from an unsaved buffer.
    pub unsaved: bool,
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
