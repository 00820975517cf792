//! The `LanguageServer` implementation: capabilities, requests, notifications.
//!
//! Ordering: every notification that changes state (open, change, close, save, watched files)
//! is handed, synchronously and in arrival order, to one task that owns the documents
//! ([`DocumentActor`]); requests read snapshots (the committed index plus the overlay of unsaved
//! buffers) on blocking threads. Every handler runs under `catch_unwind`: a panic becomes an
//! internal-error response or a log line, and the server lives on.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use futures::FutureExt;
use serde_json::Value;
use sift_engine::{Found, Mode, Query};
use sift_indexer::UpdateOptions;
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};

use super::diagnostics::{self, Finding, Findings};
use super::position::{Encoding, apply_change};
use super::protocol::{self, SearchParams, SearchResponse, SearchResult, StatusResponse};
use super::review::Reviews;
use super::workspace::{ProgressEvent, Workspace};
use crate::watch::{Change, TreeWatcher, watch_tree};

/// Shared server state.
pub struct Backend {
    client: Client,
    encoding: Arc<OnceLock<Encoding>>,
    workspaces: Arc<RwLock<Vec<Arc<Workspace>>>>,
    roots: Mutex<Vec<PathBuf>>,
    progress_supported: std::sync::atomic::AtomicBool,
    /// `initializationOptions.siftTestHooks`: enables the `sift.test.*` commands that tests use
    /// to prove panics are caught and requests can be cancelled.
    test_hooks: std::sync::atomic::AtomicBool,
    /// `initializationOptions`: `index` and `embed` tables laid over each root's
    /// `.sift/config.toml` (editor settings).
    init_options: Mutex<Option<Value>>,
    docs: mpsc::UnboundedSender<DocEvent>,
    /// The latest version the client announced per open document (updated in arrival order).
    versions: Arc<Mutex<HashMap<Uri, i32>>>,
    /// Open documents' text as the document task last applied it.
    texts: Arc<Mutex<HashMap<Uri, String>>>,
    /// Published findings, `sift.review` and review on save.
    reviews: Arc<Reviews>,
    docs_rx: Mutex<Option<mpsc::UnboundedReceiver<DocEvent>>>,
    watchers: Mutex<Vec<TreeWatcher>>,
}

/// A state-changing notification, in arrival order.
#[derive(Debug)]
enum DocEvent {
    Open(Uri, String),
    Change(Uri, Vec<TextDocumentContentChangeEvent>),
    Close(Uri),
    Saved(Uri),
    FilesChanged,
}

pub(super) fn internal(message: impl Into<String>) -> Error {
    Error { code: ErrorCode::InternalError, message: message.into().into(), data: None }
}

/// Runs a request handler, turning a panic into an internal-error response.
async fn guarded<T>(name: &str, fut: impl Future<Output = Result<T>>) -> Result<T> {
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(result) => result,
        Err(panic) => {
            let what = panic_message(&panic);
            tracing::error!("{name} panicked: {what}");
            Err(internal(format!("sift crashed while handling {name}: {what}")))
        }
    }
}

/// Runs a notification handler, logging a panic.
async fn guarded_notification(name: &str, fut: impl Future<Output = ()>) {
    if let Err(panic) = AssertUnwindSafe(fut).catch_unwind().await {
        tracing::error!("{name} panicked: {}", panic_message(&panic));
    }
}

pub(super) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

impl Backend {
    /// A backend talking to `client`.
    pub fn new(client: Client) -> Backend {
        let (tx, rx) = mpsc::unbounded_channel();
        let encoding = Arc::new(OnceLock::new());
        let texts = Arc::new(Mutex::new(HashMap::new()));
        let versions = Arc::new(Mutex::new(HashMap::new()));
        let reviews = Arc::new(Reviews::new(
            client.clone(),
            encoding.clone(),
            texts.clone(),
            versions.clone(),
        ));
        Backend {
            client,
            encoding,
            workspaces: Arc::new(RwLock::new(Vec::new())),
            roots: Mutex::new(Vec::new()),
            progress_supported: Default::default(),
            test_hooks: Default::default(),
            init_options: Mutex::new(None),
            docs: tx,
            versions,
            texts,
            reviews,
            docs_rx: Mutex::new(Some(rx)),
            watchers: Mutex::new(Vec::new()),
        }
    }

    fn encoding(&self) -> Encoding {
        *self.encoding.get().unwrap_or(&Encoding::Utf16)
    }

    fn workspaces(&self) -> Vec<Arc<Workspace>> {
        self.workspaces.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The custom `sift/search` request.
    pub async fn sift_search(&self, params: SearchParams) -> Result<SearchResponse> {
        guarded("sift/search", self.search(params)).await
    }

    async fn search(&self, params: SearchParams) -> Result<SearchResponse> {
        let mode = match params.mode.as_deref() {
            None | Some("auto") => None,
            Some(name) => Some(name.parse::<Mode>().map_err(Error::invalid_params)?),
        };
        let k = params.k.unwrap_or(20).clamp(1, 200);
        let workspaces = self.workspaces();
        let found = tokio::task::spawn_blocking(move || {
            let query =
                Query { mode, max_per_file: params.max_per_file, ..Query::new(&params.query, k) };
            let all: Vec<&sift_engine::Workspace> = workspaces.iter().map(|w| &***w).collect();
            sift_engine::search(&all, &query)
        })
        .await
        .map_err(|e| internal(format!("search crashed: {e}")))?;
        let found = found.map_err(|e| match e {
            sift_engine::Error::Index(e @ sift_indexer::Error::EmptyQuery(_)) => {
                Error::invalid_params(e.to_string())
            }
            e @ sift_engine::Error::SemanticUnavailable(_) => Error::invalid_params(e.to_string()),
            other => internal(other.to_string()),
        })?;
        let results = found.hits.into_iter().filter_map(to_result).collect();
        Ok(SearchResponse {
            results,
            mode: found.mode.as_str(),
            coverage: self.workspaces().iter().map(|w| w.coverage()).collect(),
        })
    }

    fn findings(&self) -> std::sync::MutexGuard<'_, Findings> {
        self.reviews.findings()
    }

    /// Records the version the client just announced (called in arrival order, before the
    /// change reaches the document task).
    fn note_version(&self, uri: &Uri, version: i32) {
        self.versions.lock().unwrap_or_else(|e| e.into_inner()).insert(uri.clone(), version);
    }

    fn current_version(&self, uri: &Uri) -> Option<i32> {
        self.versions.lock().unwrap_or_else(|e| e.into_inner()).get(uri).copied()
    }

    /// The document's text as the user sees it: the open buffer, else the file on disk.
    fn text_of(&self, uri: &Uri) -> String {
        self.reviews.text_of(uri)
    }

    /// Replaces the findings of `uri` (computed for document `version`) and publishes them.
    pub async fn set_findings(&self, uri: Uri, version: Option<i32>, findings: Vec<Finding>) {
        self.reviews.set_findings(uri, version, findings).await;
    }

    /// Sends a finding's fix to the client through `workspace/applyEdit`, which asks the user to
    /// confirm it.
    async fn apply_fix(&self, uri: &Uri, id: &str) -> Result<Value> {
        let edit = {
            let findings = self.findings();
            let finding = findings.get(uri, id).ok_or_else(|| {
                Error::invalid_params(format!("no finding {id} in {}", uri.as_str()))
            })?;
            let fix = finding
                .fix
                .as_ref()
                .ok_or_else(|| Error::invalid_params(format!("finding {id} has no fix")))?;
            diagnostics::fix_edit(
                uri,
                findings.version(uri),
                fix,
                &self.text_of(uri),
                self.encoding(),
            )
        };
        let response = self.client.apply_edit(edit).await?;
        Ok(
            serde_json::json!({ "applied": response.applied, "failureReason": response.failure_reason }),
        )
    }

    /// `sift.review`: reviews each workspace's working tree against `HEAD` (as `sift review`
    /// does) and publishes the findings as diagnostics, replacing the previous review's.
    async fn review(&self) -> Result<Value> {
        let roots: Vec<PathBuf> = self.workspaces().iter().map(|w| w.root.clone()).collect();
        self.reviews.review_all(roots).await
    }

    fn status(&self) -> StatusResponse {
        StatusResponse {
            version: env!("CARGO_PKG_VERSION"),
            workspaces: self.workspaces().iter().map(|w| w.coverage()).collect(),
            position_encoding: self.encoding().kind().as_str().to_string(),
        }
    }

    /// Opens every root, starts its updater, its watcher and the progress reporter.
    async fn start_workspaces(&self) {
        if let Some(rx) = self.docs_rx.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let texts = self.texts.clone();
            let actor = DocumentActor::new(self.workspaces.clone(), rx, self.encoding(), texts);
            tokio::spawn(actor.run());
        }
        let roots = self.roots.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let (ptx, prx) = mpsc::unbounded_channel();
        let supported = self.progress_supported.load(std::sync::atomic::Ordering::Relaxed);
        tokio::spawn(report_progress(self.client.clone(), prx, supported));
        // Each root's settings come from the layered configuration: its files, the editor's
        // settings (initializationOptions), the environment.
        let overrides = self.init_options.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let review_overrides = overrides.clone();
        type Embed = std::result::Result<sift_runtime::embed::EmbedConfig, String>;
        let options = move |root: &std::path::Path| -> anyhow::Result<(UpdateOptions, Embed)> {
            let config = sift_engine::config::for_editor(root, overrides.as_ref())?;
            // The server commits often, so what it indexed is soon searchable from the CLI too.
            let opts = config.update_options(std::time::Duration::from_millis(750))?;
            // A bad `[embed]` turns semantic search off (and says why); it does not stop indexing.
            Ok((opts, config.embed().map_err(|e| e.to_string())))
        };
        // Opening (or creating) an index touches the disk: not on the protocol loop.
        let opening = tokio::task::spawn_blocking(move || {
            roots
                .into_iter()
                .map(|root| {
                    let result = options(&root)
                        .and_then(|(opts, embed)| Workspace::open(&root, opts, embed, ptx.clone()));
                    (root, result)
                })
                .collect::<Vec<_>>()
        })
        .await;
        let mut opened = Vec::new();
        for (root, result) in opening.unwrap_or_default() {
            match result {
                Ok((ws, updater)) => {
                    tokio::spawn(ws.clone().run_updates(updater));
                    ws.request_update();
                    opened.push(ws);
                }
                Err(e) => {
                    let message = format!(
                        "sift cannot index {}: {}",
                        root.display(),
                        crate::message::describe(&e)
                    );
                    tracing::error!("{message}");
                    self.client.show_message(MessageType::ERROR, message).await;
                }
            }
        }
        *self.workspaces.write().unwrap_or_else(|e| e.into_inner()) = opened.clone();
        self.reviews.start(opened.iter().map(|ws| ws.root.clone()).collect(), review_overrides);
        // Watching a large tree adds a watch per folder: also off the loop, after indexing began.
        let watching = tokio::task::spawn_blocking(move || {
            opened
                .iter()
                .filter_map(|ws| match watch(ws) {
                    Ok(w) => Some(w),
                    Err(e) => {
                        tracing::warn!("cannot watch {}: {e}", ws.root.display());
                        None
                    }
                })
                .collect::<Vec<_>>()
        })
        .await;
        self.watchers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(watching.unwrap_or_default());
        // A file changed after the first walk passed it but before its folder was watched would
        // be missed: one more (coalesced, usually no-op) update closes that window.
        for ws in self.workspaces() {
            ws.request_update();
        }
    }
}

/// Work-done progress shown for one root and kind of work, with its last percentage.
type Ongoing = HashMap<
    (PathBuf, &'static str),
    (
        tower_lsp_server::OngoingProgress<
            tower_lsp_server::Bounded,
            tower_lsp_server::NotCancellable,
        >,
        u32,
    ),
>;

fn line_range(first: u64, last: u64) -> Range {
    Range::new(Position::new(first.saturating_sub(1) as u32, 0), Position::new(last as u32, 0))
}

fn to_result(Found { root, hit }: Found) -> Option<SearchResult> {
    let uri = Uri::from_file_path(root.join(&hit.path))?;
    Some(SearchResult {
        uri,
        range: line_range(hit.start_line, hit.end_line),
        match_line: hit.match_line.saturating_sub(1) as u32,
        path: hit.path,
        score: hit.score,
        symbol: hit.symbol,
        kind: hit.kind,
        container: hit.container,
        language: hit.language,
        snippet: hit.snippet,
        unsaved: hit.unsaved,
    })
}

fn symbol_kind(kind: &str) -> SymbolKind {
    match kind {
        "function" => SymbolKind::FUNCTION,
        "method" => SymbolKind::METHOD,
        "class" => SymbolKind::CLASS,
        "struct" => SymbolKind::STRUCT,
        "enum" => SymbolKind::ENUM,
        "union" => SymbolKind::STRUCT,
        "trait" | "interface" => SymbolKind::INTERFACE,
        "impl" => SymbolKind::CLASS,
        "module" => SymbolKind::MODULE,
        "type" => SymbolKind::TYPE_PARAMETER,
        "macro" => SymbolKind::FUNCTION,
        _ => SymbolKind::FILE,
    }
}

#[allow(deprecated)] // `SymbolInformation::deprecated` must still be named.
fn to_symbol(result: SearchResult) -> SymbolInformation {
    let line = result.match_line;
    let name = match &result.symbol {
        Some(symbol) => symbol.clone(),
        None => format!("{}:{}", result.path, line + 1),
    };
    let first_line = result
        .snippet
        .lines()
        .nth(usize::from(result.match_line > result.range.start.line))
        .unwrap_or("")
        .trim();
    let container = match &result.container {
        Some(c) => format!("{c} · {}:{}", result.path, line + 1),
        None => format!("{}:{} {first_line}", result.path, line + 1),
    };
    SymbolInformation {
        name,
        kind: symbol_kind(&result.kind),
        tags: None,
        deprecated: None,
        location: Location::new(
            result.uri,
            Range::new(Position::new(line, 0), Position::new(line, 0)),
        ),
        container_name: Some(container),
    }
}

/// Watches a workspace root: named files update by themselves, a lost watcher walks the tree.
fn watch(ws: &Arc<Workspace>) -> notify::Result<TreeWatcher> {
    let weak = Arc::downgrade(ws);
    watch_tree(&ws.root, move |change| {
        let Some(ws) = weak.upgrade() else { return };
        match change {
            Change::Rescan => ws.request_update(),
            Change::Paths(paths) => ws.request_paths(paths),
        }
    })
}

/// Turns update progress into LSP work-done progress, one token per running update.
async fn report_progress(
    client: Client,
    mut rx: mpsc::UnboundedReceiver<ProgressEvent>,
    supported: bool,
) {
    let mut ongoing: Ongoing = HashMap::new();
    let mut counter = 0u32;
    let unit = |what: &str| if what == "embedding" { "chunks" } else { "files" };
    while let Some(event) = rx.recv().await {
        if !supported {
            continue;
        }
        match event {
            ProgressEvent::Begin { root, what, total } => {
                counter += 1;
                let token = NumberOrString::String(format!("sift-{what}-{counter}"));
                if client.create_work_done_progress(token.clone()).await.is_err() {
                    continue;
                }
                let name =
                    root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let progress = client
                    .progress(token, format!("sift: {what} {name}"))
                    .with_percentage(0)
                    .with_message(format!("0/{total} {}", unit(what)))
                    .begin()
                    .await;
                ongoing.insert((root, what), (progress, 0));
            }
            ProgressEvent::Report { root, what, done, total } => {
                if let Some((progress, last)) = ongoing.get_mut(&(root, what)) {
                    let pct = (done * 100 / total.max(1)).min(100) as u32;
                    if pct != *last {
                        *last = pct;
                        progress
                            .report_with_message(format!("{done}/{total} {}", unit(what)), pct)
                            .await;
                    }
                }
            }
            ProgressEvent::End { root, what, message } => {
                if let Some((progress, _)) = ongoing.remove(&(root, what)) {
                    progress.finish_with_message(message).await;
                }
            }
        }
    }
}

/// Owns the open documents; applies notifications strictly in arrival order.
struct DocumentActor {
    workspaces: Arc<RwLock<Vec<Arc<Workspace>>>>,
    rx: mpsc::UnboundedReceiver<DocEvent>,
    encoding: Encoding,
    texts: Arc<Mutex<HashMap<Uri, String>>>,
}

impl DocumentActor {
    fn new(
        workspaces: Arc<RwLock<Vec<Arc<Workspace>>>>,
        rx: mpsc::UnboundedReceiver<DocEvent>,
        encoding: Encoding,
        texts: Arc<Mutex<HashMap<Uri, String>>>,
    ) -> Self {
        DocumentActor { workspaces, rx, encoding, texts }
    }

    /// The workspace holding `uri` and the document's path relative to it.
    fn locate(&self, uri: &Uri) -> Option<(Arc<Workspace>, String)> {
        let path = uri.to_file_path()?.into_owned();
        let path = std::fs::canonicalize(&path).unwrap_or(path);
        let workspaces = self.workspaces.read().unwrap_or_else(|e| e.into_inner());
        workspaces
            .iter()
            .filter_map(|ws| ws.relative(&path).map(|rel| (ws.clone(), rel)))
            .max_by_key(|(ws, _)| ws.root.as_os_str().len())
    }

    async fn run(mut self) {
        while let Some(event) = self.rx.recv().await {
            let outcome = AssertUnwindSafe(self.apply(event)).catch_unwind().await;
            if let Err(panic) = outcome {
                tracing::error!("document update panicked: {}", panic_message(&panic));
            }
        }
    }

    async fn apply(&mut self, event: DocEvent) {
        let (uri, text) = match event {
            DocEvent::Open(uri, text) => {
                self.texts
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(uri.clone(), text.clone());
                (uri, Some(text))
            }
            DocEvent::Change(uri, changes) => {
                let mut texts = self.texts.lock().unwrap_or_else(|e| e.into_inner());
                let Some(text) = texts.get_mut(&uri) else {
                    tracing::warn!("change to a document that is not open: {}", uri.as_str());
                    return;
                };
                for change in &changes {
                    apply_change(text, change, self.encoding);
                }
                let text = text.clone();
                drop(texts);
                (uri, Some(text))
            }
            DocEvent::Close(uri) => {
                self.texts.lock().unwrap_or_else(|e| e.into_inner()).remove(&uri);
                (uri, None)
            }
            DocEvent::Saved(uri) => {
                if let Some((ws, _)) = self.locate(&uri)
                    && let Some(path) = uri.to_file_path()
                {
                    ws.request_paths([path.into_owned()]);
                }
                return;
            }
            DocEvent::FilesChanged => {
                let workspaces = self.workspaces.read().unwrap_or_else(|e| e.into_inner()).clone();
                for ws in workspaces {
                    ws.request_update();
                }
                return;
            }
        };
        let Some((ws, rel)) = self.locate(&uri) else { return };
        let result =
            tokio::task::spawn_blocking(move || ws.set_unsaved(&rel, text.as_deref())).await;
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("cannot index the unsaved buffer {}: {e}", uri.as_str()),
            Err(e) => tracing::error!("indexing the unsaved buffer {} crashed: {e}", uri.as_str()),
        }
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        guarded("initialize", async {
            let offered =
                params.capabilities.general.as_ref().and_then(|g| g.position_encodings.as_deref());
            let encoding = Encoding::negotiate(offered);
            let _ = self.encoding.set(encoding);
            let progress = params
                .capabilities
                .window
                .as_ref()
                .and_then(|w| w.work_done_progress)
                .unwrap_or(false);
            self.progress_supported.store(progress, std::sync::atomic::Ordering::Relaxed);
            let hooks = params
                .initialization_options
                .as_ref()
                .and_then(|o| o.get("siftTestHooks"))
                .and_then(Value::as_bool);
            self.test_hooks.store(hooks == Some(true), std::sync::atomic::Ordering::Relaxed);
            *self.init_options.lock().unwrap_or_else(|e| e.into_inner()) =
                params.initialization_options.clone();
            let mut roots: Vec<PathBuf> = params
                .workspace_folders
                .unwrap_or_default()
                .iter()
                .filter_map(|f| f.uri.to_file_path().map(|p| p.into_owned()))
                .collect();
            #[allow(deprecated)]
            if roots.is_empty()
                && let Some(uri) = params.root_uri.as_ref()
                && let Some(path) = uri.to_file_path()
            {
                roots.push(path.into_owned());
            }
            *self.roots.lock().unwrap_or_else(|e| e.into_inner()) = roots;
            Ok(InitializeResult {
                capabilities: ServerCapabilities {
                    position_encoding: Some(encoding.kind()),
                    text_document_sync: Some(TextDocumentSyncCapability::Options(
                        TextDocumentSyncOptions {
                            open_close: Some(true),
                            change: Some(TextDocumentSyncKind::INCREMENTAL),
                            save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                            ..Default::default()
                        },
                    )),
                    workspace_symbol_provider: Some(OneOf::Left(true)),
                    code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
                    execute_command_provider: Some(ExecuteCommandOptions {
                        commands: protocol::COMMANDS.iter().map(|c| c.to_string()).collect(),
                        ..Default::default()
                    }),
                    workspace: Some(WorkspaceServerCapabilities {
                        workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                            supported: Some(true),
                            change_notifications: None,
                        }),
                        file_operations: None,
                    }),
                    ..Default::default()
                },
                server_info: Some(ServerInfo {
                    name: "sift".into(),
                    version: Some(env!("CARGO_PKG_VERSION").into()),
                }),
                offset_encoding: None,
            })
        })
        .await
    }

    async fn initialized(&self, _: InitializedParams) {
        guarded_notification("initialized", self.start_workspaces()).await;
    }

    async fn shutdown(&self) -> Result<()> {
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        self.note_version(&params.text_document.uri, params.text_document.version);
        let _ = self.docs.send(DocEvent::Open(params.text_document.uri, params.text_document.text));
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        self.note_version(&params.text_document.uri, params.text_document.version);
        let _ = self.docs.send(DocEvent::Change(params.text_document.uri, params.content_changes));
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        self.versions.lock().unwrap_or_else(|e| e.into_inner()).remove(&params.text_document.uri);
        let _ = self.docs.send(DocEvent::Close(params.text_document.uri));
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        self.reviews.saved(params.text_document.uri.clone());
        let _ = self.docs.send(DocEvent::Saved(params.text_document.uri));
    }

    async fn did_change_watched_files(&self, _: DidChangeWatchedFilesParams) {
        let _ = self.docs.send(DocEvent::FilesChanged);
    }

    async fn symbol(
        &self,
        params: WorkspaceSymbolParams,
    ) -> Result<Option<WorkspaceSymbolResponse>> {
        guarded("workspace/symbol", async {
            if sift_indexer::tokenizer::tokenize(&params.query).is_empty() {
                return Ok(Some(WorkspaceSymbolResponse::Flat(Vec::new())));
            }
            let found = self
                .search(SearchParams {
                    query: params.query,
                    k: Some(50),
                    mode: None,
                    max_per_file: None,
                })
                .await?;
            Ok(Some(WorkspaceSymbolResponse::Flat(
                found.results.into_iter().map(to_symbol).collect(),
            )))
        })
        .await
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        guarded("textDocument/codeAction", async {
            let uri = params.text_document.uri;
            let findings = self.findings();
            if let Some(published) = findings.version(&uri)
                && self.current_version(&uri).is_some_and(|now| now != published)
            {
                // The findings describe an older text: their ranges would be wrong.
                return Err(Error::content_modified());
            }
            let text = self.text_of(&uri);
            let actions = diagnostics::code_actions(
                &findings,
                &uri,
                &params.context.diagnostics,
                &text,
                self.encoding(),
            );
            Ok(Some(actions))
        })
        .await
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        guarded("workspace/executeCommand", async {
            match params.command.as_str() {
                protocol::CMD_SEARCH => {
                    let search = command_search_params(&params.arguments)?;
                    let found = self.search(search).await?;
                    Ok(Some(serde_json::to_value(found).map_err(|e| internal(e.to_string()))?))
                }
                protocol::CMD_REINDEX => {
                    let workspaces = self.workspaces();
                    for ws in &workspaces {
                        ws.request_update();
                    }
                    Ok(Some(serde_json::json!({ "scheduled": workspaces.len() })))
                }
                protocol::CMD_REVIEW => self.review().await.map(Some),
                protocol::CMD_EMBED_PAUSE | protocol::CMD_EMBED_RESUME => {
                    let pause = params.command == protocol::CMD_EMBED_PAUSE;
                    for ws in self.workspaces() {
                        if pause { ws.pause_embedding() } else { ws.resume_embedding() }
                    }
                    Ok(Some(
                        serde_json::to_value(self.status()).map_err(|e| internal(e.to_string()))?,
                    ))
                }
                protocol::CMD_STATUS => Ok(Some(
                    serde_json::to_value(self.status()).map_err(|e| internal(e.to_string()))?,
                )),
                diagnostics::CMD_DISMISS
                | diagnostics::CMD_SILENCE
                | diagnostics::CMD_APPLY_FIX => {
                    let (uri, what, reason) = match params.arguments.as_slice() {
                        [Value::String(uri), Value::String(what)] => (uri, what, None),
                        [Value::String(uri), Value::String(what), Value::String(reason)]
                            if params.command == diagnostics::CMD_DISMISS =>
                        {
                            (uri, what, Some(reason.clone()))
                        }
                        _ => {
                            return Err(Error::invalid_params(format!(
                                "{} takes [uri, id or rule] (sift.dismiss: and an optional reason)",
                                params.command
                            )));
                        }
                    };
                    let uri: Uri = uri
                        .parse()
                        .map_err(|_| Error::invalid_params(format!("not a URI: {uri}")))?;
                    match params.command.as_str() {
                        diagnostics::CMD_DISMISS => {
                            self.reviews.dismiss(&uri, what, reason).await.map(Some)
                        }
                        diagnostics::CMD_SILENCE => {
                            self.reviews.silence(&uri, what).await.map(Some)
                        }
                        _ => self.apply_fix(&uri, what).await.map(Some),
                    }
                }
                "sift.test.publish"
                    if self.test_hooks.load(std::sync::atomic::Ordering::Relaxed) =>
                {
                    // Stands in for the bug-finder: `[uri, version | null, findings]`.
                    let [Value::String(uri), version, findings] = params.arguments.as_slice()
                    else {
                        return Err(Error::invalid_params(
                            "sift.test.publish takes [uri, version, findings]",
                        ));
                    };
                    let uri: Uri = uri.parse().map_err(|_| Error::invalid_params("bad uri"))?;
                    let findings: Vec<Finding> = serde_json::from_value(findings.clone())
                        .map_err(|e| Error::invalid_params(e.to_string()))?;
                    let version = version.as_i64().map(|v| v as i32);
                    self.set_findings(uri, version, findings).await;
                    Ok(Some(Value::Bool(true)))
                }
                "sift.test.panic" if self.test_hooks.load(std::sync::atomic::Ordering::Relaxed) => {
                    panic!("a test asked for a panic")
                }
                "sift.test.sleep" if self.test_hooks.load(std::sync::atomic::Ordering::Relaxed) => {
                    let ms = params.arguments.first().and_then(Value::as_u64).unwrap_or(1000);
                    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                    Ok(Some(Value::Null))
                }
                other => Err(Error::invalid_params(format!(
                    "unknown command {other:?}; sift knows {}",
                    protocol::COMMANDS.join(", ")
                ))),
            }
        })
        .await
    }
}

/// `sift.search` takes `[query, k?]` or `[{query, k?, mode?}]`.
fn command_search_params(args: &[Value]) -> Result<SearchParams> {
    match args {
        [Value::String(query), rest @ ..] => Ok(SearchParams {
            query: query.clone(),
            k: rest.first().and_then(Value::as_u64).map(|k| k as usize),
            mode: None,
            max_per_file: None,
        }),
        [object @ Value::Object(_)] => {
            serde_json::from_value(object.clone()).map_err(|e| Error::invalid_params(e.to_string()))
        }
        _ => Err(Error::invalid_params("sift.search takes [query, k?] or [{\"query\": …}]")),
    }
}
