//! `sift/search`, the `sift.search` command and `workspace/symbol`: the engine's one search
//! ([`sift_engine::search`], the same as `sift search`'s), in LSP shapes.

use std::sync::Arc;

use serde_json::Value;
use sift_engine::{Found, Mode, Query};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;

use super::guard::internal;
use super::protocol::{Chunk, SearchParams, SearchResponse, SearchResult};
use sift_engine::live::Workspace;

/// Searches every workspace (on a blocking thread); a list `shown` to the user (`sift/search`,
/// not `workspace/symbol`'s lookups as the user types) is recorded as such.
pub async fn search(
    workspaces: Vec<Arc<Workspace>>,
    params: SearchParams,
    shown: bool,
) -> Result<SearchResponse> {
    let mode = match params.mode.as_deref() {
        None | Some("auto") => None,
        Some(name) => Some(name.parse::<Mode>().map_err(Error::invalid_params)?),
    };
    let k = params.k.unwrap_or(20).clamp(1, 200);
    let searched = workspaces.clone();
    let found = tokio::task::spawn_blocking(move || {
        let query = Query { mode, ..Query::new(&params.query, k) }
            .listed(params.chunks, params.max_per_file);
        let all: Vec<&sift_engine::Workspace> = searched.iter().map(|w| &***w).collect();
        let found = sift_engine::search(&all, &query);
        if let (Ok(found), true) = (&found, shown) {
            sift_engine::search::shown(&all, &query, found);
        }
        found
    })
    .await
    .map_err(|e| internal(format!("search crashed: {e}")))?;
    let found = found.map_err(|e| match e {
        sift_engine::Error::Index(e @ sift_engine::index::Error::EmptyQuery(_)) => {
            Error::invalid_params(e.to_string())
        }
        e @ sift_engine::Error::SemanticUnavailable(_) => Error::invalid_params(e.to_string()),
        other => internal(other.to_string()),
    })?;
    Ok(SearchResponse {
        results: found.hits.into_iter().filter_map(to_result).collect(),
        mode: found.mode.as_str(),
        coverage: workspaces.iter().map(|w| w.coverage()).collect(),
    })
}

/// `workspace/symbol`: the same search (50 deep), each result as a symbol at its best line.
pub async fn symbol(
    workspaces: Vec<Arc<Workspace>>,
    params: WorkspaceSymbolParams,
) -> Result<Option<WorkspaceSymbolResponse>> {
    if sift_engine::index::tokenize(&params.query).is_empty() {
        return Ok(Some(WorkspaceSymbolResponse::Flat(Vec::new())));
    }
    // Each chunk is a symbol of its own.
    let params = SearchParams {
        query: params.query,
        k: Some(50),
        mode: None,
        max_per_file: None,
        chunks: true,
    };
    let found = search(workspaces, params, false).await?;
    Ok(Some(WorkspaceSymbolResponse::Flat(found.results.into_iter().map(to_symbol).collect())))
}

fn line_range(first: u64, last: u64) -> Range {
    Range::new(Position::new(first.saturating_sub(1) as u32, 0), Position::new(last as u32, 0))
}

fn chunk(hit: &mut sift_engine::index::Hit) -> Chunk {
    Chunk {
        range: line_range(hit.start_line, hit.end_line),
        match_line: hit.match_line.saturating_sub(1) as u32,
        score: hit.score,
        symbol: hit.symbol.take(),
        kind: std::mem::take(&mut hit.kind),
        container: hit.container.take(),
    }
}

fn to_result(Found { root, mut hit, more }: Found) -> Option<SearchResult> {
    let more = more.into_iter().map(|mut hit| chunk(&mut hit)).collect();
    let uri = Uri::from_file_path(root.join(&hit.path))?;
    Some(SearchResult {
        uri,
        chunk: chunk(&mut hit),
        path: hit.path,
        language: hit.language,
        snippet: hit.snippet,
        unsaved: hit.unsaved,
        more,
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
    let line = result.chunk.match_line;
    let name = match &result.chunk.symbol {
        Some(symbol) => symbol.clone(),
        None => format!("{}:{}", result.path, line + 1),
    };
    let first_line = result
        .snippet
        .lines()
        .nth(usize::from(result.chunk.match_line > result.chunk.range.start.line))
        .unwrap_or("")
        .trim();
    let container = match &result.chunk.container {
        Some(c) => format!("{c} · {}:{}", result.path, line + 1),
        None => format!("{}:{} {first_line}", result.path, line + 1),
    };
    SymbolInformation {
        name,
        kind: symbol_kind(&result.chunk.kind),
        tags: None,
        deprecated: None,
        location: Location::new(
            result.uri,
            Range::new(Position::new(line, 0), Position::new(line, 0)),
        ),
        container_name: Some(container),
    }
}

/// `sift.search` takes `[query, k?]` or `[{query, k?, mode?}]`.
pub fn command_params(args: &[Value]) -> Result<SearchParams> {
    match args {
        [Value::String(query), rest @ ..] => Ok(SearchParams {
            query: query.clone(),
            k: rest.first().and_then(Value::as_u64).map(|k| k as usize),
            mode: None,
            max_per_file: None,
            chunks: false,
        }),
        [object @ Value::Object(_)] => {
            serde_json::from_value(object.clone()).map_err(|e| Error::invalid_params(e.to_string()))
        }
        _ => Err(Error::invalid_params("sift.search takes [query, k?] or [{\"query\": …}]")),
    }
}
