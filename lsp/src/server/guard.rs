//! Every handler of the server runs guarded: a panic becomes an internal-error response (for a
//! request) or a log line (for a notification), and the server lives on.

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};

/// An internal-error response with `message`.
pub(super) fn internal(message: impl Into<String>) -> Error {
    Error { code: ErrorCode::InternalError, message: message.into().into(), data: None }
}

/// Runs a request handler, turning a panic into an internal-error response.
pub(super) async fn guarded<T>(name: &str, fut: impl Future<Output = Result<T>>) -> Result<T> {
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
pub(super) async fn guarded_notification(name: &str, fut: impl Future<Output = ()>) {
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
