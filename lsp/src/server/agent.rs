//! `sift/agent`, `sift.agent.apply` and `sift.agent.discard`: the engine's agent
//! ([`sift_engine::agent`]) in LSP shapes.
//!
//! A run works on what the user sees (open buffers over the files on disk) and proposes its
//! change; nothing reaches a buffer or a file until the user accepts it: `sift.agent.apply`
//! sends it as one `workspace/applyEdit` whose every part carries a change annotation with
//! `needsConfirmation`, after checking that every document is still what the agent read.
//! Steps stream as work-done progress and as partial results; `$/cancelRequest` stops the run
//! between tokens or inside a tool.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sift_engine::agent::launch::{self, PendingRun, Request};
use sift_engine::agent::lessons;
use sift_engine::agent::{self, Changes, Event, FileChange, Options, Setup};
use sift_engine::llm::Cancel;
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;

use super::backend::Backend;
use super::edits::{DocChange, workspace_edit};
use super::guard::internal;

/// `sift/agent` request method.
pub const METHOD: &str = "sift/agent";

/// Parameters of `sift/agent`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentParams {
    /// What to do.
    pub task: String,
    /// The workspace folder (a URI); the first when absent.
    #[serde(default)]
    pub root: Option<String>,
    /// Most model turns.
    #[serde(default)]
    pub max_steps: Option<usize>,
    /// Best-of-N attempts (1 to 8).
    #[serde(default)]
    pub n: Option<usize>,
    /// Work-done progress token.
    #[serde(default)]
    pub work_done_token: Option<NumberOrString>,
    /// Partial-result token: the steps stream there as `{events: [...]}`.
    #[serde(default)]
    pub partial_result_token: Option<NumberOrString>,
}

/// One file of the proposed change.
#[derive(Debug, Clone, Serialize)]
pub struct AgentFile {
    /// Relative to the root.
    pub path: String,
    /// Its URI.
    pub uri: String,
    /// `modify`, `create` or `delete`.
    pub kind: &'static str,
    /// The text the agent started from.
    pub original: Option<String>,
    /// The text it proposes.
    pub proposed: Option<String>,
}

/// `$/progress` with a partial result (any JSON), which `ls_types` has no type for.
enum PartialProgress {}

impl tower_lsp_server::ls_types::notification::Notification for PartialProgress {
    type Params = Value;
    const METHOD: &'static str = "$/progress";
}

fn event_json(event: &Event) -> Option<Value> {
    Some(match event {
        Event::Step(n) => json!({"kind": "step", "step": n}),
        Event::ToolCall { name, summary } => {
            json!({"kind": "tool", "name": name, "summary": summary})
        }
        Event::ToolResult { name, error, first_line } => {
            json!({"kind": "result", "name": name, "error": error, "firstLine": first_line})
        }
        Event::Compacted { .. } => json!({"kind": "compacted"}),
        Event::Text(_) => return None,
    })
}

/// Sets the cancel token when dropped: the request's future is dropped on `$/cancelRequest`.
struct CancelOnDrop(Cancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl Backend {
    /// `sift/agent`.
    pub async fn sift_agent(&self, params: AgentParams) -> Result<Value> {
        super::guard::guarded("sift/agent", self.agent_run(params)).await
    }

    async fn agent_run(&self, params: AgentParams) -> Result<Value> {
        if params.task.trim().is_empty() {
            return Err(Error::invalid_params("task is empty: say what the agent should do"));
        }
        let workspaces = self.workspaces();
        let ws = match &params.root {
            Some(uri) => {
                let path: PathBuf = uri
                    .parse::<Uri>()
                    .ok()
                    .and_then(|u| u.to_file_path().map(|p| p.to_path_buf()))
                    .ok_or_else(|| {
                        Error::invalid_params(format!("root is not a file URI: {uri}"))
                    })?;
                let path = std::fs::canonicalize(&path).unwrap_or(path);
                workspaces.iter().find(|w| w.root == path).cloned().ok_or_else(|| {
                    Error::invalid_params(format!("{} is not a workspace folder", path.display()))
                })?
            }
            None => workspaces
                .first()
                .cloned()
                .ok_or_else(|| Error::invalid_params("no workspace folder is open"))?,
        };
        let root = ws.root.clone();
        // What the user sees: open buffers under this root.
        let unsaved: BTreeMap<String, String> = self
            .documents
            .open_texts()
            .into_iter()
            .filter_map(|(uri, text)| {
                let path = uri.to_file_path()?;
                Some((ws.relative(&path)?, text))
            })
            .collect();
        let overrides = self.init_options.lock().unwrap_or_else(|e| e.into_inner()).clone();

        let cancel = Cancel::new();
        let _guard = CancelOnDrop(cancel.clone());
        let (tx, mut rx) = mpsc::unbounded_channel::<Event>();

        // Progress and partial results, forwarded as the run reports them.
        let client = self.client.clone();
        let work_token = params.work_done_token.clone();
        let partial_token = params.partial_result_token.clone();
        let task_title = params.task.clone();
        let forwarder = tokio::spawn(async move {
            let progress = match work_token {
                Some(token) => Some(
                    client.progress(token, "sift agent").with_message(task_title).begin().await,
                ),
                None => None,
            };
            let mut step = 0;
            while let Some(event) = rx.recv().await {
                if let Event::Step(n) = &event {
                    step = *n;
                }
                if let (Some(p), Event::ToolCall { name, summary }) = (&progress, &event) {
                    p.report(format!("step {step}: {name} {summary}")).await;
                }
                if let (Some(token), Some(value)) = (&partial_token, event_json(&event)) {
                    client
                        .send_notification::<PartialProgress>(
                            json!({"token": token, "value": {"events": [value]}}),
                        )
                        .await;
                }
            }
            if let Some(p) = progress {
                p.finish().await;
            }
        });

        let n = params.n.unwrap_or(1).clamp(1, 8);
        let max_steps = params.max_steps;
        let task = params.task.clone();
        let workspace = ws.clone();
        let run_cancel = cancel.clone();
        let prompt =
            EditorPrompt { client: self.client.clone(), handle: tokio::runtime::Handle::current() };
        let result = tokio::task::spawn_blocking(move || {
            run_blocking(
                prompt,
                &workspace,
                &root,
                overrides.as_ref(),
                &unsaved,
                &task,
                n,
                max_steps,
                &run_cancel,
                tx,
            )
        })
        .await
        .map_err(|e| internal(format!("the agent crashed: {e}")))?;
        let _ = forwarder.await;
        let finished = result.map_err(|e| internal(format!("{e:#}")))?;
        let files = self.describe_files(&finished.root, &finished.changes);
        let id = finished.id.clone();
        let answer = json!({
            "id": id,
            "stop": finished.stop,
            "detail": finished.detail,
            "answer": finished.answer,
            "diff": finished.changes.unified_diff(),
            "files": files,
            "rules": finished.rules,
            "model": finished.model,
            "attempts": finished.attempts,
            "notes": finished.notes,
            "redactions": finished.redactions,
        });
        self.agents.insert(
            id,
            PendingRun {
                root: finished.root,
                task: params.task,
                model: finished.model,
                changes: finished.changes,
            },
        );
        Ok(answer)
    }

    fn describe_files(&self, root: &std::path::Path, changes: &Changes) -> Vec<AgentFile> {
        changes
            .file_changes()
            .iter()
            .filter_map(|change| {
                let path = change.path().to_owned();
                let uri = Uri::from_file_path(root.join(&path))?;
                let pending = changes.get(&path)?;
                let kind = match change {
                    FileChange::Modify(_) => "modify",
                    FileChange::Create { .. } => "create",
                    FileChange::Delete { .. } => "delete",
                };
                Some(AgentFile {
                    path,
                    uri: uri.as_str().to_owned(),
                    kind,
                    original: pending.original.clone(),
                    proposed: pending.current.clone(),
                })
            })
            .collect()
    }

    /// `sift.agent.apply [{id}]`: the run's change through `workspace/applyEdit`, every part
    /// needing the user's confirmation.
    pub(super) async fn agent_apply(&self, arguments: &[Value]) -> Result<Value> {
        let id = run_id(arguments, "sift.agent.apply")?;
        let PendingRun { root, task, model, changes } = self.agents.get(&id).ok_or_else(|| {
            Error::invalid_params(format!(
                "no pending agent run {id} (applied or discarded already?)"
            ))
        })?;
        let mut parts = Vec::new();
        for change in changes.file_changes() {
            let path = change.path().to_owned();
            let uri = Uri::from_file_path(root.join(&path))
                .ok_or_else(|| internal(format!("no URI for {path}")))?;
            let pending = changes.get(&path).ok_or_else(|| internal("inconsistent change"))?;
            // The document must still be what the agent read.
            let now = self.documents.text_of_opt(&uri);
            if now != pending.original {
                return Err(Error::invalid_params(format!(
                    "{path} changed since the agent read it; nothing was applied (ask again)"
                )));
            }
            parts.push(match change {
                FileChange::Modify(edit) => DocChange::Modify {
                    version: self.documents.version(&uri),
                    text: now.unwrap_or_default(),
                    uri,
                    edit,
                },
                FileChange::Create { text, .. } => DocChange::Create { uri, text },
                FileChange::Delete { .. } => DocChange::Delete { uri },
            });
        }
        if parts.is_empty() {
            return Ok(json!({"applied": false, "failureReason": "the run changed nothing"}));
        }
        let annotation = ChangeAnnotation {
            label: format!("sift agent: {}", shorten(&task, 60)),
            needs_confirmation: Some(true),
            description: Some("a change proposed by sift's agent".into()),
        };
        let edit = workspace_edit(parts, "sift-agent", annotation, self.encoding());
        let response = self.client.apply_edit(edit).await?;
        if response.applied {
            self.agents.remove(&id);
            launch::applied(&self.recorder_of(&root), &root, &id, &model, &changes, None);
        }
        Ok(json!({"applied": response.applied, "failureReason": response.failure_reason}))
    }

    /// `sift.agent.discard [{id, reason?}]`: the run's change is dropped, and recorded as
    /// refused (with the user's reason, when given). A reason also proposes a lesson
    /// (`sift_engine::agent::lessons`): the answer's `lesson` holds `sift.memory.add`'s
    /// arguments (`uri`, `cite`, `text`, `title`), which the client sends when the user keeps it.
    pub(super) fn agent_discard(&self, arguments: &[Value]) -> Result<Value> {
        let id = run_id(arguments, "sift.agent.discard")?;
        let reason = match arguments {
            [Value::Object(map)] => map.get("reason").and_then(Value::as_str),
            _ => None,
        };
        let removed = self.agents.remove(&id);
        let mut answer = json!({"discarded": removed.is_some()});
        if let Some(run) = &removed {
            launch::refused(&self.recorder_of(&run.root), &id, reason);
            let lesson = reason.and_then(|r| lessons::lesson(&id, &run.task, &run.changes, r));
            let uri = lesson
                .as_ref()
                .and_then(|l| l.scope.first())
                .and_then(|path| Uri::from_file_path(run.root.join(path)));
            if let (Some(lesson), Some(uri)) = (lesson, uri) {
                answer["lesson"] = json!({
                    "uri": uri.as_str(),
                    "cite": lesson.cites,
                    "text": lesson.text,
                    "title": lesson.title,
                    "origin": lesson.origin,
                    "scope": lesson.scope,
                });
            }
        }
        Ok(answer)
    }

    /// The record of fates of the workspace at `root`.
    fn recorder_of(&self, root: &std::path::Path) -> std::sync::Arc<sift_engine::fates::Recorder> {
        self.workspaces()
            .iter()
            .find(|w| w.root == root)
            .map(|w| w.recorder.clone())
            .unwrap_or_else(|| std::sync::Arc::new(sift_engine::fates::Recorder::off()))
    }
}

fn run_id(arguments: &[Value], command: &str) -> Result<String> {
    match arguments {
        [Value::Object(map)] => map
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| Error::invalid_params(format!("{command} takes [{{\"id\": RUN}}]"))),
        [Value::String(id)] => Ok(id.clone()),
        _ => Err(Error::invalid_params(format!("{command} takes [{{\"id\": RUN}}]"))),
    }
}

fn shorten(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() <= max {
        line.to_owned()
    } else {
        format!("{}…", line.chars().take(max).collect::<String>())
    }
}

/// What a finished run hands back to the protocol side.
struct Finished {
    id: String,
    root: PathBuf,
    stop: &'static str,
    detail: String,
    answer: String,
    changes: Changes,
    rules: Vec<String>,
    model: String,
    attempts: Option<Value>,
    /// The memory notes the agent proposed (`{title, text, cite}`), for the user to accept.
    notes: Vec<Value>,
    /// What was replaced before the model's endpoint saw it (`{kind, line, preview}`).
    redactions: Vec<sift_engine::redact::Redaction>,
}

/// Runs the agent (one run or best-of-N) on a blocking thread.
#[allow(clippy::too_many_arguments)]
fn run_blocking(
    prompt: EditorPrompt,
    workspace: &sift_engine::live::Workspace,
    root: &std::path::Path,
    overrides: Option<&Value>,
    unsaved: &BTreeMap<String, String>,
    task: &str,
    n: usize,
    max_steps: Option<usize>,
    cancel: &Cancel,
    tx: mpsc::UnboundedSender<Event>,
) -> anyhow::Result<Finished> {
    let config = sift_engine::config::for_editor(root, overrides)?;
    let model = sift_engine::llm::config::open(&config.model()?)?;
    let mut setup = Setup::new(root, &config)?.with_approver(Box::new(prompt));
    // The notes as the server last checked them: a run does not read them all again.
    if let Some(book) = workspace.notebook().clone() {
        setup = setup.with_notebook(book);
    }
    // `[agent]`'s budget, with the request's maxSteps over it.
    let options = Options {
        budget: launch::budget(setup.budget, max_steps, None, None),
        ..Options::default()
    };
    let request = Request { task, attempts: n, resume: None, transcript: None, options: &options };
    let finished =
        launch::launch(&setup, workspace, unsaved, &*model, request, cancel, &mut |_, e| {
            let _ = tx.send(e);
        })?;
    // The ranking is recorded now; which one the user takes is not known here.
    finished.record_pick(&setup, None);
    let attempts = (!finished.attempts.is_empty()).then(|| {
        Value::Array(
            finished
                .attempts
                .iter()
                .map(|a| json!({"index": a.index, "score": a.score, "diff": a.diff, "answer": a.outcome.answer}))
                .collect(),
        )
    });
    let outcome = finished.outcome;
    Ok(Finished {
        id: finished.id,
        root: root.to_path_buf(),
        stop: outcome.stop.as_str(),
        detail: outcome.stop.describe(&options.budget),
        answer: outcome.answer,
        changes: outcome.changes,
        notes: proposed(&outcome.notes),
        rules: outcome.rules,
        model: finished.model,
        attempts,
        redactions: model.redactions(),
    })
}

/// Asks the user in the editor (`window/showMessageRequest`) whether the command the agent
/// asks to run outside the sandbox may run, each time; no answer within ten minutes, an
/// editor that cannot ask, any other choice, or the run cancelled while it waits is a refusal.
struct EditorPrompt {
    client: tower_lsp_server::Client,
    handle: tokio::runtime::Handle,
}

/// The prompt's button that lets the command out.
const RUN_OUTSIDE: &str = "Run outside the sandbox";

impl agent::approval::Approver for EditorPrompt {
    fn decide(
        &self,
        escape: &agent::approval::Escape,
        cancel: &Cancel,
    ) -> agent::approval::Decision {
        use agent::approval::Decision;
        // One paragraph: editors show a notification's text without its line breaks.
        let message = format!(
            "sift's agent asks to run this command OUTSIDE the sandbox, with the network and \
             every file you can reach: “{}”. Its reason: {}",
            escape.command, escape.why
        );
        let actions = [RUN_OUTSIDE, "Keep it in the sandbox"]
            .map(|title| MessageActionItem { title: title.into(), properties: HashMap::new() });
        let asked =
            self.client.show_message_request(MessageType::WARNING, message, Some(actions.to_vec()));
        let cancelled = async {
            while !cancel.is_cancelled() {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        };
        let answer = self.handle.block_on(async {
            tokio::select! {
                answer = tokio::time::timeout(std::time::Duration::from_secs(600), asked) => Some(answer),
                () = cancelled => None,
            }
        });
        let Some(answer) = answer else {
            return Decision::Refused {
                why: "the run was cancelled while the user was asked".into(),
            };
        };
        match answer {
            Ok(Ok(Some(item))) if item.title == RUN_OUTSIDE => {
                Decision::Approved { by: "the user, in the editor's prompt".into() }
            }
            Ok(Ok(_)) => Decision::Refused { why: "the user said no in the editor".into() },
            Ok(Err(e)) => {
                Decision::Refused { why: format!("the editor could not ask the user ({e})") }
            }
            Err(_) => {
                Decision::Refused { why: "the user did not answer within ten minutes".into() }
            }
        }
    }
}

/// Proposed notes as the result carries them: what `sift.memory.add` takes back (with a
/// `uri` of the workspace) when the user accepts one.
fn proposed(notes: &[sift_engine::memory::Note]) -> Vec<Value> {
    notes
        .iter()
        .map(|n| {
            let cite: Vec<String> = n.front.citations.iter().map(|c| c.label()).collect();
            json!({"title": n.front.title, "text": n.body, "cite": cite, "author": "agent"})
        })
        .collect()
}
