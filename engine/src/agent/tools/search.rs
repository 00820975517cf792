//! `search`: the engine's one search over the agent's view of the workspace.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::{Session, ToolOutput, str_arg, usize_arg};
use crate::search::{Query, search as engine_search};

/// Results shown when the model asks for no number.
const DEFAULT_K: usize = 8;

/// `search {query, k?}`: ranked files, each by its best span (path, lines, symbol) with the
/// file's other matching spans after it, then one snippet line each.
pub fn search(s: &Session<'_>, args: &Value) -> ToolOutput {
    answer(s, args).0
}

/// [`answer`], recorded as a list shown ([`crate::search::shown`]): MCP's search, whose
/// answer goes to the client rather than to sift's own agent.
pub fn answer_shown(s: &Session<'_>, args: &Value) -> (ToolOutput, Option<Value>) {
    let answered = answer(s, args);
    if let Some(data) = &answered.1 {
        let count = data["results"].as_array().map_or(0, Vec::len);
        let text = str_arg(args, "query").unwrap_or_default();
        let top = data["results"][0]["path"].as_str();
        crate::search::list_shown(&s.view().recorder, text, count, top);
    }
    answered
}

/// [`search`]'s answer, and the same as data: `{query, mode, fallback?, results: [{path,
/// start_line, end_line, symbol?, kind, container?, line, snippet, unsaved, more: [{start_line,
/// end_line, symbol?, kind}]}]}` (one result per file, as every front end's search).
pub fn answer(s: &Session<'_>, args: &Value) -> (ToolOutput, Option<Value>) {
    let text = str_arg(args, "query").unwrap_or_default();
    let k = usize_arg(args, "k").unwrap_or(DEFAULT_K);
    // Ask for a few more: files the agent deleted or may not read are dropped.
    let query = Query::new(text, k + 5);
    let found = match engine_search(&[s.view()], &query) {
        Ok(found) => found,
        Err(e) => return (ToolOutput::fail(e.to_string()), None),
    };
    let found_mode = found.mode;
    let fallback = found.fallback;
    let (hits, more): (Vec<_>, Vec<_>) = found
        .hits
        .into_iter()
        .filter(|f| s.changes.get(&f.hit.path).is_none_or(|p| p.current.is_some()))
        .filter(|f| !s.policy.is_secret(std::path::Path::new(&f.hit.path)))
        .take(k)
        .map(|f| (f.hit, f.more))
        .unzip();
    let snippet_line = |h: &sift_indexer::Hit| -> String {
        let line = h.snippet.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        line.chars().take(160).collect()
    };
    let span = |h: &sift_indexer::Hit| json!({"start_line": h.start_line, "end_line": h.end_line, "symbol": h.symbol, "kind": h.kind});
    let data = json!({
        "query": text,
        "mode": found_mode.as_str(),
        "fallback": fallback,
        "results": hits.iter().zip(&more).map(|(h, more)| json!({
            "path": h.path,
            "start_line": h.start_line,
            "end_line": h.end_line,
            "symbol": h.symbol,
            "kind": h.kind,
            "container": h.container,
            "line": h.match_line,
            "snippet": snippet_line(h),
            "unsaved": h.unsaved,
            "more": more.iter().map(span).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    if hits.is_empty() {
        return (ToolOutput::ok(format!("no results for {text:?}")), Some(data));
    }
    let mut out = format!("{} files ({} search", hits.len(), found_mode.as_str());
    if let Some(why) = &fallback {
        let _ = write!(out, "; semantic unavailable: {why}");
    }
    out.push_str("):\n");
    for (i, (h, more)) in hits.iter().zip(&more).enumerate() {
        let symbol = match (&h.symbol, &h.container) {
            (Some(sym), Some(c)) => format!(" {} {c}.{sym}", h.kind),
            (Some(sym), None) => format!(" {} {sym}", h.kind),
            _ => String::new(),
        };
        let changed = if h.unsaved { " (your edit)" } else { "" };
        let _ =
            write!(out, "{}. {}:{}-{}{symbol}{changed}", i + 1, h.path, h.start_line, h.end_line);
        if !more.is_empty() {
            let spans: Vec<String> =
                more.iter().take(5).map(|m| format!("{}-{}", m.start_line, m.end_line)).collect();
            let rest = more.len().saturating_sub(5);
            let _ = write!(out, " (also {}", spans.join(", "));
            let _ = if rest > 0 { write!(out, " and {rest} more)") } else { write!(out, ")") };
        }
        out.push('\n');
    }
    out.push('\n');
    for h in &hits {
        let _ = writeln!(out, "{}:{}: {}", h.path, h.match_line, snippet_line(h));
    }
    (ToolOutput::ok(out), Some(data))
}
