//! Reviews in the editor: the `sift.review` command (every workspace's change since `HEAD`) and
//! review on save (the saved file's diff from `HEAD`), both through the engine's
//! [`review`](sift_engine::review::review) that `sift review` runs too, published as
//! diagnostics; and the dismissals and silences that outlive the session.
//!
//! Review on save runs on one background task fed by `didSave` (never on the protocol loop):
//! saves arriving within [`QUIET`] of each other are coalesced, the reviews run on blocking
//! threads one after another, and a run whose file was saved again meanwhile is thrown away
//! (the newer save is already queued). A file's findings replace that file's earlier ones, from a
//! save or from `sift.review`; a file whose findings are gone is published empty.
//!
//! Persistence: dismissing a finding appends to the repository's
//! `.sift/feedback/dismissed.jsonl`; silencing a rule in a file adds the file to
//! `[review.rules.per_path_disable]` in `.sift/config.toml` (a team setting, reviewed like code).

use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;
use sift_engine::fates::Recorder;
use sift_engine::live::Workspace;
use sift_engine::review::dismiss;
use sift_engine::review::{Request, Reviewed, review};
use tokio::sync::mpsc;
use tower_lsp_server::Client;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::Uri;

use super::diagnostics::{self, Finding, Findings};
use super::documents::Documents;
use super::position::{Encoding, LineIndex};

/// How long the save queue waits for more saves before reviewing.
pub const QUIET: Duration = Duration::from_millis(150);

/// Where a published finding came from: the repository root and the file's path in it.
type Origin = (PathBuf, String);

/// A saved document and its version when it was saved.
type Saved = (Uri, Option<i32>);

/// The editor's review state, shared by the protocol handlers and the save task.
pub struct Reviews {
    client: Client,
    encoding: Arc<OnceLock<Encoding>>,
    findings: Mutex<Findings>,
    /// The open documents' texts and versions (updated by the document task, read here).
    documents: Arc<Documents>,
    /// Documents with review findings, and where they are in their repository.
    origins: Mutex<HashMap<Uri, Origin>>,
    /// Workspace roots, and the editor's settings laid over their `.sift/config.toml`.
    roots: Mutex<Vec<PathBuf>>,
    /// Each root's record of fates (dismissals and silences are recorded there).
    recorders: Mutex<HashMap<PathBuf, Arc<Recorder>>>,
    /// The fingerprints of the review findings shown so far (each recorded as shown once per
    /// session, not on every save).
    shown: Mutex<HashSet<String>>,
    overrides: Mutex<Option<Value>>,
    /// Per document: how many saves were seen (a run started at an older count is stale).
    saves: Mutex<HashMap<Uri, u64>>,
    queue: mpsc::UnboundedSender<Saved>,
    queue_rx: Mutex<Option<mpsc::UnboundedReceiver<Saved>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Reviews {
    /// The review state of a server talking to `client`.
    pub fn new(
        client: Client,
        encoding: Arc<OnceLock<Encoding>>,
        documents: Arc<Documents>,
    ) -> Reviews {
        let (queue, rx) = mpsc::unbounded_channel();
        Reviews {
            client,
            encoding,
            findings: Mutex::new(Findings::default()),
            documents,
            origins: Mutex::new(HashMap::new()),
            roots: Mutex::new(Vec::new()),
            recorders: Mutex::new(HashMap::new()),
            shown: Mutex::new(HashSet::new()),
            overrides: Mutex::new(None),
            saves: Mutex::new(HashMap::new()),
            queue,
            queue_rx: Mutex::new(Some(rx)),
        }
    }

    /// The findings published so far.
    pub fn findings(&self) -> MutexGuard<'_, Findings> {
        lock(&self.findings)
    }

    fn encoding(&self) -> Encoding {
        *self.encoding.get().unwrap_or(&Encoding::Utf16)
    }

    /// The document's text as the user sees it: the open buffer, else the file on disk.
    pub fn text_of(&self, uri: &Uri) -> String {
        self.documents.text_of(uri)
    }

    /// Replaces the findings of `uri` (computed for document `version`) and publishes them.
    pub async fn set_findings(&self, uri: Uri, version: Option<i32>, findings: Vec<Finding>) {
        self.findings().set(uri.clone(), version, findings);
        self.publish(&uri).await;
    }

    /// Publishes the visible findings of `uri` as diagnostics.
    pub async fn publish(&self, uri: &Uri) {
        let (visible, version) = {
            let findings = self.findings();
            (findings.visible(uri), findings.version(uri))
        };
        let text = self.text_of(uri);
        let diagnostics = diagnostics::to_diagnostics(&visible, &text, self.encoding());
        self.client.publish_diagnostics(uri.clone(), diagnostics, version).await;
    }

    /// Starts review on save for the roots of `workspaces`, with the editor's settings
    /// (`initializationOptions`).
    pub fn start(self: &Arc<Self>, workspaces: &[Arc<Workspace>], overrides: Option<Value>) {
        *lock(&self.roots) = workspaces.iter().map(|ws| ws.root.clone()).collect();
        *lock(&self.recorders) =
            workspaces.iter().map(|ws| (ws.root.clone(), ws.recorder.clone())).collect();
        *lock(&self.overrides) = overrides;
        if let Some(rx) = lock(&self.queue_rx).take() {
            tokio::spawn(self.clone().run_saves(rx));
        }
    }

    /// `didSave`: queues a review of the saved file (called on the protocol loop, in arrival
    /// order; returns at once).
    pub fn saved(&self, uri: Uri) {
        *lock(&self.saves).entry(uri.clone()).or_default() += 1;
        let version = self.documents.version(&uri);
        let _ = self.queue.send((uri, version));
    }

    fn save_count(&self, uri: &Uri) -> u64 {
        lock(&self.saves).get(uri).copied().unwrap_or(0)
    }

    async fn run_saves(self: Arc<Self>, mut rx: mpsc::UnboundedReceiver<Saved>) {
        while let Some(first) = rx.recv().await {
            let mut pending: Vec<Saved> = vec![first];
            // Coalesce a burst of saves ("save all", format-on-save, an impatient Ctrl-S).
            loop {
                match tokio::time::timeout(QUIET, rx.recv()).await {
                    Ok(Some((uri, version))) => match pending.iter_mut().find(|(u, _)| *u == uri) {
                        Some(slot) => slot.1 = version,
                        None => pending.push((uri, version)),
                    },
                    Ok(None) => return,
                    Err(_) => break,
                }
            }
            for (uri, version) in pending {
                let run = AssertUnwindSafe(self.review_saved(uri.clone(), version));
                if let Err(panic) = run.catch_unwind().await {
                    tracing::error!(
                        "review on save of {} panicked: {}",
                        uri.as_str(),
                        super::guard::panic_message(&panic)
                    );
                }
            }
        }
    }

    /// Reviews one saved file against `HEAD` and publishes its findings.
    async fn review_saved(&self, uri: Uri, version: Option<i32>) {
        let started = self.save_count(&uri);
        let Some(path) = uri.to_file_path().map(|p| p.into_owned()) else { return };
        let path = std::fs::canonicalize(&path).unwrap_or(path);
        let Some(root) = super::backend::folder_of(&lock(&self.roots), &path) else { return };
        let overrides = lock(&self.overrides).clone();
        let result = tokio::task::spawn_blocking(move || {
            if !on_save_enabled(&root, overrides.as_ref()) {
                return None;
            }
            let only = [path];
            let request = Request { only: Some(&only), ..Request::default() };
            Some(review(&root, &request).map_err(|e| crate::message::describe(&e.into())))
        })
        .await;
        let reviewed = match result {
            Ok(Some(Ok(reviewed))) => reviewed,
            Ok(None) => return,
            // Outside a git repository (or with a broken configuration) there is no change to
            // review; `sift.review` reports why.
            Ok(Some(Err(e))) => {
                tracing::debug!("review on save of {}: {e}", uri.as_str());
                return;
            }
            Err(e) => {
                tracing::error!("review on save of {} crashed: {e}", uri.as_str());
                return;
            }
        };
        if self.save_count(&uri) != started {
            return; // saved again meanwhile: that save's review is queued and supersedes this one
        }
        let by_uri = self.convert(&reviewed);
        let findings = by_uri.into_iter().find(|(u, _)| *u == uri).map(|(_, f)| f);
        match findings {
            Some(findings) => self.set_findings(uri, version, findings).await,
            None if self.findings().has(&uri) => self.set_findings(uri, version, Vec::new()).await,
            None => {}
        }
    }

    /// Review findings by document, remembering where each document is in its repository;
    /// those not shown before in this session are recorded as shown.
    fn convert(&self, reviewed: &Reviewed) -> HashMap<Uri, Vec<Finding>> {
        let new: Vec<&sift_engine::rules::Finding> = {
            let mut shown = lock(&self.shown);
            let findings = reviewed.items.iter().map(|i| &i.finding);
            findings.filter(|f| shown.insert(f.fingerprint.clone())).collect()
        };
        sift_engine::review::record_shown(&self.recorder(&reviewed.root), new);
        let mut by_uri: HashMap<Uri, Vec<Finding>> = HashMap::new();
        let mut origins = lock(&self.origins);
        for item in &reviewed.items {
            let f = &item.finding;
            let Some(uri) = Uri::from_file_path(reviewed.root.join(&f.path)) else { continue };
            let source = reviewed.sources.get(&f.path).map(String::as_str).unwrap_or("");
            origins.insert(uri.clone(), (reviewed.root.clone(), f.path.clone()));
            by_uri.entry(uri).or_default().push(review_finding(f, source));
        }
        by_uri
    }

    /// `sift.review`: reviews each of `roots`' working tree against `HEAD` (as `sift review`
    /// does) and publishes the findings, replacing every earlier review finding.
    pub async fn review_all(&self, roots: Vec<PathBuf>) -> Result<Value> {
        let reviewed = tokio::task::spawn_blocking(move || {
            roots
                .into_iter()
                .map(|root| {
                    let result = review(&root, &Request::default())
                        .map_err(|e| crate::message::describe(&e.into()));
                    (root, result)
                })
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| super::guard::internal(format!("review crashed: {e}")))?;
        let mut by_uri: HashMap<Uri, Vec<Finding>> = HashMap::new();
        let mut errors = Vec::new();
        let (mut dismissed, mut configured) = (0, 0);
        for (root, result) in reviewed {
            match result {
                Ok(reviewed) => {
                    let counts = reviewed.suppressed_counts();
                    dismissed += counts.dismissed;
                    configured += counts.configured;
                    by_uri.extend(self.convert(&reviewed));
                }
                Err(e) => errors.push(format!("{}: {e}", root.display())),
            }
        }
        let count: usize = by_uri.values().map(Vec::len).sum();
        let previous: HashSet<Uri> = lock(&self.origins).keys().cloned().collect();
        for uri in previous.into_iter().filter(|u| !by_uri.contains_key(u)) {
            self.set_findings(uri, None, Vec::new()).await;
        }
        let files = by_uri.len();
        for (uri, findings) in by_uri {
            let version = self.documents.version(&uri);
            self.set_findings(uri, version, findings).await;
        }
        let mut message = format!(
            "{count} finding{} in {files} file{} on the lines changed since HEAD",
            if count == 1 { "" } else { "s" },
            if files == 1 { "" } else { "s" }
        );
        match (dismissed, configured) {
            (0, 0) => {}
            (d, 0) => message.push_str(&format!("; {d} dismissed earlier, not shown")),
            (0, c) => message.push_str(&format!("; {c} silenced by the review rules, not shown")),
            (d, c) => message.push_str(&format!(
                "; {d} dismissed earlier and {c} silenced by the review rules, not shown"
            )),
        }
        if !errors.is_empty() {
            message = format!("{message}; {}", errors.join("; "));
        }
        Ok(serde_json::json!({
            "findings": count, "files": files, "suppressed": dismissed + configured,
            "suppressed_by": {"dismissals": dismissed, "config": configured}, "errors": errors,
            "message": message
        }))
    }

    /// The record of fates of the workspace at `root` (one that records nothing for a
    /// repository that is not a workspace folder).
    fn recorder(&self, root: &Path) -> Arc<Recorder> {
        lock(&self.recorders).get(root).cloned().unwrap_or_else(|| Arc::new(Recorder::off()))
    }

    /// `sift.dismiss`: hides a finding now and, for a review finding, records the dismissal in
    /// the repository's `.sift/feedback/` so that it is not raised again for that code.
    pub async fn dismiss(&self, uri: &Uri, id: &str, reason: Option<String>) -> Result<Value> {
        let rule = self.findings().get(uri, id).map(|f| f.rule.clone());
        let origin = lock(&self.origins).get(uri).cloned();
        let mut remembered = false;
        if let (Some(rule), Some((root, path))) = (rule, origin) {
            let id = id.to_string();
            let recorder = self.recorder(&root);
            tokio::task::spawn_blocking(move || {
                dismiss::dismiss(&root, &recorder, &id, &rule, &path, reason, false)
            })
            .await
            .map_err(|e| super::guard::internal(format!("dismissing crashed: {e}")))?
            .map_err(|e| super::guard::internal(e.to_string()))?;
            remembered = true;
        }
        self.findings().dismiss(id);
        self.publish(uri).await;
        Ok(serde_json::json!({ "dismissed": id, "remembered": remembered }))
    }

    /// `sift.silence`: hides a rule's findings in one file now and, for a review finding's file,
    /// turns the rule off for that file in the repository's review rules (`[review.rules]` of
    /// `.sift/config.toml`).
    pub async fn silence(&self, uri: &Uri, rule: &str) -> Result<Value> {
        let origin = lock(&self.origins).get(uri).cloned();
        let mut remembered = false;
        if let Some((root, path)) = origin {
            let rule_id = rule.to_string();
            let recorder = self.recorder(&root);
            tokio::task::spawn_blocking(move || {
                dismiss::silence(&root, &recorder, &path, &rule_id)
            })
            .await
            .map_err(|e| super::guard::internal(format!("silencing crashed: {e}")))?
            .map_err(|e| Error::invalid_params(e.to_string()))?;
            remembered = true;
        }
        self.findings().silence(uri, rule);
        self.publish(uri).await;
        Ok(serde_json::json!({ "silenced": rule, "remembered": remembered }))
    }
}

/// Whether `[review] on_save` (the layered configuration of `root`, with the editor's settings)
/// lets saves be reviewed; on unless set to `false`, and on when the configuration is broken
/// (the review then says what is wrong).
fn on_save_enabled(root: &Path, overrides: Option<&Value>) -> bool {
    let review = sift_engine::config::for_editor(root, overrides)
        .map_err(|e| e.to_string())
        .and_then(|c| c.review().map_err(|e| e.to_string()));
    match review {
        Ok(review) => review.on_save,
        Err(e) => {
            tracing::warn!("{e}");
            true
        }
    }
}

/// A rule finding (byte offsets into `source`) as a diagnostic-ready finding.
fn review_finding(f: &sift_engine::rules::Finding, source: &str) -> Finding {
    let lines = LineIndex::new(source);
    let span = |start: usize, end: usize| {
        // UTF-8 positions: 0-based lines and byte columns, which is what a `Span` holds.
        let (a, b) = (
            lines.position(source, start, Encoding::Utf8),
            lines.position(source, end, Encoding::Utf8),
        );
        diagnostics::Span {
            start_line: a.line,
            start_col: a.character,
            end_line: b.line,
            end_col: b.character,
        }
    };
    let severity = match f.severity {
        sift_engine::rules::Severity::Error => diagnostics::Severity::Error,
        sift_engine::rules::Severity::Warning => diagnostics::Severity::Warning,
        _ => diagnostics::Severity::Info,
    };
    Finding {
        id: f.fingerprint.clone(),
        rule: f.rule.clone(),
        severity,
        message: format!("{} ({})", f.message, f.rationale),
        span: span(f.start_byte, f.end_byte),
        related: Vec::new(),
        fix: f.fix.as_ref().map(|fix| diagnostics::Fix {
            title: format!("Apply sift's fix for {}", f.rule),
            span: span(fix.start_byte, fix.end_byte),
            replacement: fix.replacement.clone(),
        }),
    }
}
