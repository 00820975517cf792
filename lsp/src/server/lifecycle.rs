//! The session's life: `initialize` (capabilities, roots, the editor's settings), then on
//! `initialized` each workspace opened with its updater, watcher and progress reporting.

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::Value;
use tokio::sync::mpsc;
use tower_lsp_server::Client;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

use super::backend::Backend;
use super::documents::DocumentActor;
use super::position::Encoding;
use super::protocol::Command;
use sift_engine::live::{ProgressEvent, Workspace};

impl Backend {
    /// `initialize`: negotiates the position encoding, notes the roots and the editor's
    /// settings, and announces the capabilities.
    pub(super) fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        {
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
            let lenses = params
                .capabilities
                .workspace
                .as_ref()
                .and_then(|w| w.code_lens.as_ref())
                .and_then(|c| c.refresh_support)
                .unwrap_or(false);
            self.lens_refresh.store(lenses, std::sync::atomic::Ordering::Relaxed);
            let hooks = params
                .initialization_options
                .as_ref()
                .and_then(|o| o.get("siftTestHooks"))
                .and_then(Value::as_bool);
            self.test_hooks.store(hooks == Some(true), std::sync::atomic::Ordering::Relaxed);
            *self.init_options.lock().unwrap_or_else(|e| e.into_inner()) =
                params.initialization_options.clone();
            *self.client_name.lock().unwrap_or_else(|e| e.into_inner()) =
                params.client_info.as_ref().map(|c| c.name.clone());
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
                    // Memory notes on cited code.
                    hover_provider: Some(HoverProviderCapability::Simple(true)),
                    code_lens_provider: Some(CodeLensOptions { resolve_provider: Some(false) }),
                    code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
                    execute_command_provider: Some(ExecuteCommandOptions {
                        commands: Command::ALL.iter().map(|c| c.name().to_string()).collect(),
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
        }
    }

    /// Opens every root, starts its updater, its watcher and the progress reporter.
    pub(super) async fn start_workspaces(&self) {
        if let Some(rx) = self.docs_rx.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let documents = self.documents.clone();
            let actor = DocumentActor::new(self.workspaces.clone(), rx, self.encoding(), documents);
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
        let front = sift_engine::fates::Front::lsp(
            self.client_name.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        );
        // Opening (or creating) an index touches the disk: not on the protocol loop.
        let opening = tokio::task::spawn_blocking(move || {
            roots
                .into_iter()
                .map(|root| {
                    let result = Workspace::open_configured(
                        &root,
                        overrides.as_ref(),
                        front.clone(),
                        ptx.clone(),
                    );
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
                    // Code lenses count notes: redrawn when the notes or their states change.
                    let mut changes = ws.memory_changes();
                    let (client, lenses) = (self.client.clone(), self.lens_refresh.clone());
                    tokio::spawn(async move {
                        while changes.changed().await.is_ok() {
                            refresh_lenses(&client, &lenses);
                        }
                    });
                    ws.request_update();
                    opened.push(ws);
                }
                Err(e) => {
                    let message = format!(
                        "sift cannot index {}: {}",
                        root.display(),
                        crate::message::describe(&e.into())
                    );
                    tracing::error!("{message}");
                    self.client.show_message(MessageType::ERROR, message).await;
                }
            }
        }
        *self.workspaces.write().unwrap_or_else(|e| e.into_inner()) = opened.clone();
        self.reviews.start(&opened, review_overrides);
        // Watching a large tree adds a watch per folder: also off the loop, after indexing began.
        let watching = tokio::task::spawn_blocking(move || {
            opened
                .iter()
                .filter_map(|ws| match sift_engine::live::watch(ws) {
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

/// Asks the client to re-ask for code lenses, when it said it can (not waiting for it).
fn refresh_lenses(client: &Client, supported: &std::sync::atomic::AtomicBool) {
    if supported.load(std::sync::atomic::Ordering::Relaxed) {
        let client = client.clone();
        tokio::spawn(async move {
            let _ = client.code_lens_refresh().await;
        });
    }
}

/// Turns update progress into LSP work-done progress, one token per running update.
async fn report_progress(
    client: Client,
    mut rx: mpsc::UnboundedReceiver<ProgressEvent>,
    supported: bool,
) {
    let mut ongoing: Ongoing = HashMap::new();
    let mut counter = 0u32;
    let unit = |what: &str| if what.contains("embedding") { "chunks" } else { "files" };
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
