//! `workspace/executeCommand`: one arm per [`Command`]; the `sift.test.*` hooks live apart
//! ([`super::test_hooks`]) and answer only when the client turned them on.

use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{ExecuteCommandParams, Uri};

use super::backend::Backend;
use super::guard::internal;
use super::protocol::Command;
use super::search;

/// A command's answer as JSON.
fn json(value: impl serde::Serialize) -> Result<Value> {
    serde_json::to_value(value).map_err(|e| internal(e.to_string()))
}

impl Backend {
    /// Runs one command.
    pub(super) async fn execute(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        let Some(command) = Command::from_name(&params.command) else {
            if let Some(answer) = super::test_hooks::execute(self, &params).await {
                return answer;
            }
            let known: Vec<&str> = Command::ALL.iter().map(|c| c.name()).collect();
            return Err(Error::invalid_params(format!(
                "unknown command {:?}; sift knows {}",
                params.command,
                known.join(", ")
            )));
        };
        match command {
            Command::Search => {
                let params = search::command_params(&params.arguments)?;
                Ok(Some(json(search::search(self.workspaces(), params, true).await?)?))
            }
            Command::Reindex => {
                let workspaces = self.workspaces();
                for ws in &workspaces {
                    ws.request_update();
                }
                Ok(Some(serde_json::json!({ "scheduled": workspaces.len() })))
            }
            Command::Review => self.review().await.map(Some),
            Command::EmbedPause | Command::EmbedResume => {
                for ws in self.workspaces() {
                    if command == Command::EmbedPause {
                        ws.pause_embedding()
                    } else {
                        ws.resume_embedding()
                    }
                }
                Ok(Some(json(self.status())?))
            }
            Command::Status => Ok(Some(json(self.status())?)),
            Command::AgentApply => self.agent_apply(&params.arguments).await.map(Some),
            Command::AgentDiscard => self.agent_discard(&params.arguments).map(Some),
            Command::MemoryList => self.memory_list(&params.arguments).map(Some),
            Command::MemoryShow => self.memory_show(&params.arguments).map(Some),
            Command::MemoryAdd => self.memory_add(&params.arguments).await.map(Some),
            Command::MemoryVerify => self.memory_change(&params.arguments, false).await.map(Some),
            Command::MemoryDelete => self.memory_change(&params.arguments, true).await.map(Some),
            Command::Dismiss | Command::Silence | Command::ApplyFix => {
                let (uri, what, reason) = match params.arguments.as_slice() {
                    [Value::String(uri), Value::String(what)] => (uri, what, None),
                    [Value::String(uri), Value::String(what), Value::String(reason)]
                        if command == Command::Dismiss =>
                    {
                        (uri, what, Some(reason.clone()))
                    }
                    _ => {
                        return Err(Error::invalid_params(format!(
                            "{} takes [uri, id or rule] (sift.dismiss: and an optional reason)",
                            command.name()
                        )));
                    }
                };
                let uri: Uri =
                    uri.parse().map_err(|_| Error::invalid_params(format!("not a URI: {uri}")))?;
                match command {
                    Command::Dismiss => self.reviews.dismiss(&uri, what, reason).await.map(Some),
                    Command::Silence => self.reviews.silence(&uri, what).await.map(Some),
                    _ => self.apply_fix(&uri, what).await.map(Some),
                }
            }
        }
    }
}
