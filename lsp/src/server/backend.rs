//! The `LanguageServer` implementation: the shared state of a session and one thin method per
//! LSP request or notification, each handing off to the module that owns it — [`super::lifecycle`]
//! (initialize, workspaces), [`super::documents`] (open documents, in arrival order),
//! [`super::search`] (`sift/search`, `workspace/symbol`), [`super::agent`] (`sift/agent`),
//! [`super::commands`]
//! (`workspace/executeCommand`), [`super::review`] and [`super::diagnostics`] (findings, code
//! actions).
//!
//! Ordering: every notification that changes state (open, change, close, save, watched files)
//! is handed, synchronously and in arrival order, to one task that owns the documents
//! ([`super::documents::DocumentActor`]); requests read snapshots (the committed index plus the
//! overlay of unsaved buffers) on blocking threads. Every handler runs under `catch_unwind`: a
//! panic becomes an internal-error response or a log line, and the server lives on.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use serde_json::Value;
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};

use super::diagnostics::{self, Finding, Findings};
use super::documents::{DocEvent, Documents};
use super::guard::{guarded, guarded_notification};
use super::position::Encoding;
use super::protocol::{SearchParams, SearchResponse, StatusResponse};
use super::review::Reviews;
use super::search;
use sift_engine::live::Workspace;
use sift_engine::watch::TreeWatcher;

/// How long `shutdown` waits for a running embedding batch to end (a batch of the transformer
/// takes well under a second on two cores).
const SHUTDOWN_EMBEDDING_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Shared server state.
pub struct Backend {
    pub(super) client: Client,
    pub(super) encoding: Arc<OnceLock<Encoding>>,
    pub(super) workspaces: Arc<RwLock<Vec<Arc<Workspace>>>>,
    pub(super) roots: Mutex<Vec<PathBuf>>,
    pub(super) progress_supported: AtomicBool,
    /// The client re-asks for code lenses on `workspace/codeLens/refresh` (memory notes'
    /// counts change without the document changing).
    pub(super) lens_refresh: Arc<AtomicBool>,
    /// `initializationOptions.siftTestHooks`: enables the `sift.test.*` commands
    /// ([`super::test_hooks`]).
    pub(super) test_hooks: AtomicBool,
    /// `initializationOptions`: tables laid over each root's `.sift/config.toml` (editor
    /// settings).
    pub(super) init_options: Mutex<Option<Value>>,
    /// The editor's name (`initialize`'s `clientInfo`), for the fates it records.
    pub(super) client_name: Mutex<Option<String>>,
    docs: mpsc::UnboundedSender<DocEvent>,
    pub(super) docs_rx: Mutex<Option<mpsc::UnboundedReceiver<DocEvent>>>,
    /// The open documents' texts and versions, held once.
    pub(super) documents: Arc<Documents>,
    /// Published findings, `sift.review` and review on save.
    pub(super) reviews: Arc<Reviews>,
    pub(super) watchers: Mutex<Vec<TreeWatcher>>,
    /// Agent runs whose change waits for the user (`sift.agent.apply`).
    pub(super) agents: sift_engine::agent::launch::Pending,
}

/// The workspace folder among `roots` that holds `path`: the innermost, when folders nest.
pub(super) fn folder_of(roots: &[PathBuf], path: &Path) -> Option<PathBuf> {
    roots.iter().filter(|r| path.starts_with(r)).max_by_key(|r| r.as_os_str().len()).cloned()
}

impl Backend {
    /// A backend talking to `client`.
    pub fn new(client: Client) -> Backend {
        let (tx, rx) = mpsc::unbounded_channel();
        let encoding = Arc::new(OnceLock::new());
        let documents = Arc::new(Documents::default());
        let reviews = Arc::new(Reviews::new(client.clone(), encoding.clone(), documents.clone()));
        Backend {
            client,
            encoding,
            workspaces: Arc::new(RwLock::new(Vec::new())),
            roots: Mutex::new(Vec::new()),
            progress_supported: Default::default(),
            lens_refresh: Default::default(),
            test_hooks: Default::default(),
            init_options: Mutex::new(None),
            client_name: Mutex::new(None),
            docs: tx,
            docs_rx: Mutex::new(Some(rx)),
            documents,
            reviews,
            watchers: Mutex::new(Vec::new()),
            agents: Default::default(),
        }
    }

    pub(super) fn encoding(&self) -> Encoding {
        *self.encoding.get().unwrap_or(&Encoding::Utf16)
    }

    pub(super) fn workspaces(&self) -> Vec<Arc<Workspace>> {
        self.workspaces.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(super) fn test_hooks_enabled(&self) -> bool {
        self.test_hooks.load(Ordering::Relaxed)
    }

    /// The custom `sift/stats` request: the figures `sift stats --json` prints, of one workspace
    /// folder (the retention due is measured first, as the CLI does).
    pub async fn sift_stats(&self, params: super::protocol::StatsParams) -> Result<Value> {
        let workspaces = self.workspaces();
        let roots = self.roots.lock().unwrap_or_else(|e| e.into_inner()).clone();
        guarded("sift/stats", async move {
            let folder = params
                .uri
                .as_ref()
                .and_then(|u| u.to_file_path())
                .map(|p| std::fs::canonicalize(&p).unwrap_or_else(|_| p.into_owned()));
            let root = match &folder {
                Some(path) => folder_of(&roots, path),
                None => roots.first().cloned(),
            }
            .ok_or_else(|| Error::invalid_params("no such workspace folder"))?;
            // The folder's recorder once it is open (retention is recorded through it); the
            // record is read either way.
            let recorder = workspaces
                .iter()
                .find(|w| w.root == root)
                .map(|w| w.recorder.clone())
                .unwrap_or_else(|| Arc::new(sift_engine::fates::Recorder::off()));
            let now = sift_engine::fates::now();
            let since = sift_engine::stats::period(params.since.as_deref(), params.all, now)
                .map_err(Error::invalid_params)?;
            let folder = root.clone();
            let report = tokio::task::spawn_blocking(move || {
                sift_engine::stats::report(&root, &recorder, since, now)
            })
            .await
            .map_err(|e| super::guard::internal(format!("stats crashed: {e}")))?
            .map_err(|e| super::guard::internal(e.to_string()))?;
            let mut value =
                serde_json::to_value(&report).map_err(|e| super::guard::internal(e.to_string()))?;
            // Each lesson as `sift.memory.add`'s arguments: the file it is about, as a URI.
            for (lesson, json) in
                report.lessons.iter().zip(value["lessons"].as_array_mut().into_iter().flatten())
            {
                let uri = lesson.scope.first().and_then(|p| Uri::from_file_path(folder.join(p)));
                json["uri"] = uri.map_or(Value::Null, |u| Value::String(u.as_str().to_owned()));
            }
            Ok(value)
        })
        .await
    }

    /// The custom `sift/search` request.
    pub async fn sift_search(&self, params: SearchParams) -> Result<SearchResponse> {
        guarded("sift/search", search::search(self.workspaces(), params, true)).await
    }

    fn findings(&self) -> std::sync::MutexGuard<'_, Findings> {
        self.reviews.findings()
    }

    /// The document's text as the user sees it: the open buffer, else the file on disk.
    fn text_of(&self, uri: &Uri) -> String {
        self.documents.text_of(uri)
    }

    /// Replaces the findings of `uri` (computed for document `version`) and publishes them.
    pub async fn set_findings(&self, uri: Uri, version: Option<i32>, findings: Vec<Finding>) {
        self.reviews.set_findings(uri, version, findings).await;
    }

    /// Sends a finding's fix to the client through `workspace/applyEdit`, which asks the user to
    /// confirm it.
    pub(super) async fn apply_fix(&self, uri: &Uri, id: &str) -> Result<Value> {
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
    pub(super) async fn review(&self) -> Result<Value> {
        let roots: Vec<PathBuf> = self.workspaces().iter().map(|w| w.root.clone()).collect();
        self.reviews.review_all(roots).await
    }

    pub(super) fn status(&self) -> StatusResponse {
        StatusResponse {
            version: env!("CARGO_PKG_VERSION"),
            workspaces: self.workspaces().iter().map(|w| w.coverage()).collect(),
            position_encoding: self.encoding().kind().as_str().to_string(),
        }
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        guarded("initialize", async { self.initialize(params) }).await
    }

    async fn initialized(&self, _: InitializedParams) {
        guarded_notification("initialized", self.start_workspaces()).await;
    }

    async fn shutdown(&self) -> Result<()> {
        // Background embedding stops after its batch before the process exits: onnxruntime
        // torn down at exit under a running batch failed it with an error line in the log.
        // Nothing is lost either way (vectors are appended batch by batch).
        let workspaces = self.workspaces();
        for ws in &workspaces {
            ws.pause_embedding();
        }
        let deadline = std::time::Instant::now() + SHUTDOWN_EMBEDDING_WAIT;
        while workspaces.iter().any(|w| w.embedding_running())
            && std::time::Instant::now() < deadline
        {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        // What became of the session's suggestions, written before the process may exit.
        for ws in &workspaces {
            ws.recorder.flush();
        }
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        self.documents.note_version(&params.text_document.uri, params.text_document.version);
        let _ = self.docs.send(DocEvent::Open(params.text_document.uri, params.text_document.text));
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        self.documents.note_version(&params.text_document.uri, params.text_document.version);
        let _ = self.docs.send(DocEvent::Change(params.text_document.uri, params.content_changes));
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        self.documents.forget_version(&params.text_document.uri);
        let _ = self.docs.send(DocEvent::Close(params.text_document.uri));
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        self.memory_saved(&params.text_document.uri).await;
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
        guarded("workspace/symbol", search::symbol(self.workspaces(), params)).await
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        guarded("textDocument/codeAction", async {
            let uri = params.text_document.uri;
            let findings = self.findings();
            if let Some(published) = findings.version(&uri)
                && self.documents.version(&uri).is_some_and(|now| now != published)
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

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        guarded("textDocument/hover", async { Ok(self.memory_hover(params)) }).await
    }

    async fn code_lens(&self, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        guarded("textDocument/codeLens", async { Ok(Some(self.memory_lenses(params))) }).await
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        guarded("workspace/executeCommand", self.execute(params)).await
    }
}
