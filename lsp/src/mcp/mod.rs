//! `sift mcp`: sift's index, search, review and memory as a Model Context Protocol server over
//! stdio, for agents other than sift's own (Claude Code, Codex CLI, Cursor, Zed, VS Code).
//!
//! The protocol is the maintained Rust SDK's (`rmcp`: `initialize` negotiates the revision the
//! client asks for among those it knows, 2024-11-05 to 2026-07-28). sift checks the client's
//! lines first ([`framing`]): a line that is not JSON gets a parse error and the server reads
//! on; the SDK answers well-formed requests it cannot route. The tools ([`tools`]) are the
//! engine's: the workspace served is the language server's ([`sift_engine::live`]), indexed from the
//! start and kept fresh by the watcher, and every answer says how much of it is indexed. A
//! tool that fails or panics is a tool error (`isError`), never the end of the server; the
//! server ends when stdin closes.

pub mod framing;

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerInfo, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use sift_engine::agent::tools::registry::{Effect, Tool as Entry};
use sift_engine::agent::tools::served::{Answer, Served};
use tokio::sync::mpsc;

use sift_engine::live::{Coverage, Workspace};

/// What `sift mcp` serves.
#[derive(Debug, Clone)]
pub struct Options {
    /// The workspace root.
    pub root: PathBuf,
    /// Offer `memory_add` (off by default: a client's model writes notes only when the user
    /// said it may).
    pub allow_memory_add: bool,
}

/// Serves one client over `input`/`output` until the input ends.
pub async fn serve<I, O>(options: Options, input: I, output: O) -> anyhow::Result<()>
where
    I: tokio::io::AsyncRead + Unpin + Send + 'static,
    O: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    // The index: opened now, built and kept fresh in the background; answers come from
    // whatever is committed meanwhile. Progress goes nowhere: coverage is in every answer.
    let (progress, mut progress_rx) = mpsc::unbounded_channel();
    tokio::spawn(async move { while progress_rx.recv().await.is_some() {} });
    let root = options.root.clone();
    let (ws, updater) = tokio::task::spawn_blocking(move || {
        Workspace::open_configured(&root, None, sift_engine::fates::Front::MCP, progress)
    })
    .await??;
    tokio::spawn(ws.clone().run_updates(updater));
    ws.request_update();
    let watched = ws.clone();
    let watcher = tokio::task::spawn_blocking(move || match sift_engine::live::watch(&watched) {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::warn!(
                "mcp: cannot watch {}: {e}; the index is updated on start only",
                watched.root.display()
            );
            None
        }
    });

    let handler = Handler::new(Served {
        ws: ws.clone(),
        note_vectors: Default::default(),
        allow_writes: options.allow_memory_add,
    });
    let (to_sdk, sdk_in) = tokio::io::duplex(1 << 20);
    let (sdk_out, from_sdk) = tokio::io::duplex(1 << 20);
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(framing::write_lines(output, out_rx));
    let reader = tokio::spawn(framing::read_client(input, to_sdk, out_tx.clone()));
    let forwarder = tokio::spawn(framing::read_sdk(from_sdk, out_tx));
    match handler.serve((sdk_in, sdk_out)).await {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        // The input ended (or was not MCP) before `initialize` completed.
        Err(e) => tracing::info!("mcp: the session did not start: {e}"),
    }
    // A file changed since the watcher started is picked up by the next server's first update.
    drop(watcher);
    reader.abort();
    let _ = forwarder.await;
    let _ = writer.await;
    // What became of the lists shown, written before the process may exit.
    ws.recorder.flush();
    Ok(())
}

/// Tool calls running at once; more wait their turn (a client firing dozens of searches at
/// once must not take every core from the editor and the indexer).
const CONCURRENT_CALLS: usize = 4;

/// The MCP service: the tool list and the calls.
struct Handler {
    served: Arc<Served>,
    listed: Vec<Tool>,
    running: Arc<tokio::sync::Semaphore>,
}

impl Handler {
    fn new(served: Served) -> Handler {
        let listed = served.tools().map(to_tool).collect();
        let running = Arc::new(tokio::sync::Semaphore::new(CONCURRENT_CALLS));
        Handler { served: Arc::new(served), listed, running }
    }
}

/// A registry entry as the protocol lists it.
fn to_tool(entry: &Entry) -> Tool {
    let schema = match (entry.schema)() {
        Value::Object(map) => map,
        _ => Default::default(),
    };
    // Hints for clients that ask before calling: nothing reaches outside the workspace, and
    // the one tool that writes (memory_add) only adds a note.
    let read_only = entry.effect == Effect::Reads;
    let annotations = ToolAnnotations::new()
        .read_only(read_only)
        .destructive(false)
        .idempotent(read_only)
        .open_world(false);
    Tool::new(entry.mcp_name, entry.description, schema).with_annotations(annotations)
}

/// What the server says about itself at `initialize`.
const INSTRUCTIONS: &str = "sift indexes this repository locally (code-aware lexical + embedding \
search). Use `search` to find code by meaning or name, `outline` and `read` to look at a file, \
`review` for sift's findings on the uncommitted changes, `memory_search` for facts people recorded \
about this codebase.";

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerInfo {
        ServerInfo::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("sift", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.listed.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.listed.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let name = request.name.to_string();
        if self.served.tool(&name).is_none() {
            let known: Vec<&str> = self.listed.iter().map(|t| t.name.as_ref()).collect();
            return Err(ErrorData::invalid_params(
                format!("there is no tool named {name:?} (tools: {})", known.join(", ")),
                None,
            ));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let Ok(_turn) = self.running.clone().acquire_owned().await else {
            return Err(ErrorData::internal_error("the server is shutting down", None));
        };
        let served = self.served.clone();
        let call = name.clone();
        // Bad arguments are the model's to fix: the answer is a tool error naming the argument.
        let answered = tokio::task::spawn_blocking(move || {
            let answer = served.call(&call, &args);
            (answer, served.ws.coverage())
        })
        .await;
        Ok(match answered {
            Ok((answer, coverage)) => to_result(answer, &coverage),
            Err(join) => {
                tracing::error!("mcp: the {name} tool crashed: {join}");
                error_result(format!("error: the {name} tool crashed (a bug in sift: see its log)"))
            }
        })
    }
}

fn error_result(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// An answer as the protocol carries it: compact text first, the same as `structuredContent`
/// with the index's coverage.
fn to_result(answer: Answer, coverage: &Coverage) -> CallToolResult {
    if answer.error {
        return error_result(answer.text);
    }
    let mut text = answer.text;
    if let Some(note) = coverage_note(coverage) {
        text = format!("{note}\n{text}");
    }
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    if let Some(Value::Object(mut data)) = answer.data {
        data.insert("coverage".into(), coverage_json(coverage));
        result.structured_content = Some(Value::Object(data));
    }
    result
}

/// A line for the model when the answer may be incomplete.
fn coverage_note(c: &Coverage) -> Option<String> {
    match c.state {
        "ready" if c.embed_state != "embedding" && c.embed_state != "pending" => None,
        "ready" => Some(format!(
            "(note: {} of {} chunks have embeddings so far; search by meaning covers those)",
            c.embedded, c.chunks
        )),
        "indexing" if c.files_total > 0 => Some(format!(
            "(note: indexing in progress, {} of {} files; answers cover what is indexed so far)",
            c.files_done, c.files_total
        )),
        "failed" => Some(format!(
            "(note: indexing failed: {}; answers come from the last index)",
            c.message.as_deref().unwrap_or("see the log")
        )),
        state => Some(format!("(note: the index is {state}; answers may be incomplete)")),
    }
}

fn coverage_json(c: &Coverage) -> Value {
    serde_json::json!({
        "state": c.state,
        "files": c.files,
        "chunks": c.chunks,
        "files_done": c.files_done,
        "files_total": c.files_total,
        "embedded": c.embedded,
        "embed_state": c.embed_state,
    })
}
