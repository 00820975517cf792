//! Commands that tests use to prove that panics are caught, that requests can be cancelled and
//! that published findings behave; they answer only when the client sent
//! `initializationOptions.siftTestHooks = true`, and are not part of the protocol.

use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{ExecuteCommandParams, Uri};

use super::backend::Backend;
use super::diagnostics::Finding;

/// Runs `sift.test.*` when hooks are on; `None` for anything else.
pub(super) async fn execute(
    backend: &Backend,
    params: &ExecuteCommandParams,
) -> Option<Result<Option<Value>>> {
    if !backend.test_hooks_enabled() {
        return None;
    }
    Some(match params.command.as_str() {
        // Stands in for the bug-finder: `[uri, version | null, findings]`.
        "sift.test.publish" => {
            let [Value::String(uri), version, findings] = params.arguments.as_slice() else {
                return Some(Err(Error::invalid_params(
                    "sift.test.publish takes [uri, version, findings]",
                )));
            };
            let Ok(uri) = uri.parse::<Uri>() else {
                return Some(Err(Error::invalid_params("bad uri")));
            };
            match serde_json::from_value::<Vec<Finding>>(findings.clone()) {
                Ok(findings) => {
                    let version = version.as_i64().map(|v| v as i32);
                    backend.set_findings(uri, version, findings).await;
                    Ok(Some(Value::Bool(true)))
                }
                Err(e) => Err(Error::invalid_params(e.to_string())),
            }
        }
        "sift.test.panic" => panic!("a test asked for a panic"),
        "sift.test.sleep" => {
            let ms = params.arguments.first().and_then(Value::as_u64).unwrap_or(1000);
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            Ok(Some(Value::Null))
        }
        _ => return None,
    })
}
