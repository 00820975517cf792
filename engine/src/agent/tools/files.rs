//! `read`, `outline`, `list` and `grep`: looking at files, in bounded windows.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Value, json};
use sift_indexer::{Chunker, Language};
use sift_runtime::llm::Cancel;

use super::{Session, ToolOutput, str_arg, usize_arg};

/// Lines a `read` shows when no end is given.
pub const READ_WINDOW: usize = 100;

/// A line longer than this is cut in `read` and `grep` answers.
const MAX_LINE_CHARS: usize = 400;

/// The most matching lines `grep` shows.
const GREP_LINES: usize = 50;

/// The most files `grep` and `list` name.
const LIST_FILES: usize = 200;

fn cut_line(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_owned();
    }
    let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
    format!("{cut} […]")
}

/// The file the `path` argument names, readable and existing: its relative path and text.
fn existing(s: &Session<'_>, args: &Value) -> Result<(String, String), ToolOutput> {
    let rel = s.readable(str_arg(args, "path").unwrap_or_default())?;
    match s.text(&rel)? {
        Some(text) => Ok((rel, text)),
        None => Err(ToolOutput::fail(not_found(s, &rel))),
    }
}

/// `read {path, start_line?, end_line?}`.
pub fn read(s: &Session<'_>, args: &Value) -> ToolOutput {
    read_answer(s, args).0
}

/// [`read`]'s answer, and the same as data: `{path, start_line, end_line, total_lines, text}`
/// (the window's lines, each cut like the answer's).
pub fn read_answer(s: &Session<'_>, args: &Value) -> (ToolOutput, Option<Value>) {
    let (rel, text) = match existing(s, args) {
        Ok(found) => found,
        Err(e) => return (e, None),
    };
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        let data =
            json!({"path": rel, "start_line": 0, "end_line": 0, "total_lines": 0, "text": ""});
        return (ToolOutput::ok(format!("{rel} is empty")), Some(data));
    }
    let start = usize_arg(args, "start_line").unwrap_or(1);
    if start > lines.len() {
        let why = format!("{rel} has {} lines; start_line {start} is past its end", lines.len());
        return (ToolOutput::fail(why), None);
    }
    let wanted_end = usize_arg(args, "end_line").unwrap_or(start + READ_WINDOW - 1);
    if wanted_end < start {
        return (ToolOutput::fail("end_line is before start_line"), None);
    }
    let mut end = wanted_end.min(lines.len()).min(start + 4 * READ_WINDOW - 1);
    // The window ends early rather than being cut mid-line by the answer's bound, so the text
    // and the data hold the same whole lines and the hint says where to go on.
    let width = end.to_string().len();
    let mut body = String::new();
    let mut window = String::new();
    for (i, line) in lines[start - 1..end].iter().enumerate() {
        let line = cut_line(line);
        if i > 0 && body.len() + line.len() + width + 3 > super::MAX_OUTPUT_CHARS - 300 {
            end = start + i - 1;
            break;
        }
        let _ = writeln!(body, "{:>width$}  {line}", start + i);
        window.push_str(&line);
        window.push('\n');
    }
    let mut out = format!("{rel} (lines {start}-{end} of {})", lines.len());
    if end < lines.len() {
        let _ = write!(out, "; read with start_line={} for more", end + 1);
    }
    out.push('\n');
    out.push_str(&body);
    let data = json!({
        "path": rel, "start_line": start, "end_line": end, "total_lines": lines.len(), "text": window,
    });
    (ToolOutput::ok(out), Some(data))
}

/// Why `rel` has no text: a path that does not exist, with the files of that name elsewhere.
fn not_found(s: &Session<'_>, rel: &str) -> String {
    let name = Path::new(rel).file_name().and_then(|n| n.to_str()).unwrap_or(rel);
    let same: Vec<String> = s
        .files()
        .into_iter()
        .filter(|f| Path::new(f).file_name().and_then(|n| n.to_str()) == Some(name))
        .take(5)
        .collect();
    if same.is_empty() {
        format!("{rel} does not exist (use list or search to find files)")
    } else {
        format!("{rel} does not exist; files with that name: {}", same.join(", "))
    }
}

/// `outline {path}`: the file's definitions, as the index's chunker sees them.
pub fn outline(s: &Session<'_>, args: &Value) -> ToolOutput {
    outline_answer(s, args).0
}

/// [`outline`]'s answer, and the same as data: `{path, total_lines, symbols: [{name, kind,
/// start_line, end_line, container?}]}` (`symbols` is `null` for a file without a grammar).
pub fn outline_answer(s: &Session<'_>, args: &Value) -> (ToolOutput, Option<Value>) {
    let (rel, text) = match existing(s, args) {
        Ok(found) => found,
        Err(e) => return (e, None),
    };
    let total = text.lines().count();
    if Language::from_path(Path::new(&rel)).is_none() {
        let out = format!(
            "{rel}: no grammar for this kind of file, so no outline; use read ({total} lines)"
        );
        let data = json!({"path": rel, "total_lines": total, "symbols": null});
        return (ToolOutput::ok(out), Some(data));
    }
    let chunked = Chunker::default().chunk(Path::new(&rel), &text);
    let mut out = format!("{rel} ({total} lines)\n");
    let mut any = false;
    let mut symbols = Vec::new();
    for chunk in &chunked.chunks {
        let Some(symbol) = &chunk.symbol else { continue };
        any = true;
        symbols.push(json!({
            "name": symbol,
            "kind": chunk.kind.as_str(),
            "start_line": chunk.start_row + 1,
            "end_line": chunk.end_row + 1,
            "container": chunk.container,
        }));
        let indent = if chunk.container.is_some() { "  " } else { "" };
        let _ = writeln!(
            out,
            "{indent}{}-{} {} {symbol}{}",
            chunk.start_row + 1,
            chunk.end_row + 1,
            chunk.kind.as_str(),
            chunk.container.as_ref().map(|c| format!(" (in {c})")).unwrap_or_default()
        );
    }
    if !any {
        out.push_str("no definitions found\n");
    }
    (ToolOutput::ok(out), Some(json!({"path": rel, "total_lines": total, "symbols": symbols})))
}

/// `list {path?}`: the files under a folder; when there are many, the folders with counts.
pub fn list(s: &Session<'_>, args: &Value) -> ToolOutput {
    let given = str_arg(args, "path").unwrap_or("");
    let prefix = if given.is_empty() || given == "." {
        String::new()
    } else {
        match s.readable(given) {
            Ok(rel) if rel.is_empty() => String::new(),
            Ok(rel) => format!("{}/", rel.trim_end_matches('/')),
            Err(e) => return e,
        }
    };
    let files: Vec<String> = s.files().into_iter().filter(|f| f.starts_with(&prefix)).collect();
    if files.is_empty() {
        let shown = if prefix.is_empty() { "the workspace" } else { prefix.as_str() };
        return ToolOutput::ok(format!("no files under {shown}"));
    }
    let mut out = String::new();
    if files.len() <= LIST_FILES {
        let _ = writeln!(out, "{} files:", files.len());
        for f in &files {
            let _ = writeln!(out, "{f}");
        }
        return ToolOutput::ok(out);
    }
    // Too many: the next level down, with counts.
    let mut entries: BTreeMap<String, usize> = BTreeMap::new();
    for f in &files {
        let rest = &f[prefix.len()..];
        let key = match rest.split_once('/') {
            Some((dir, _)) => format!("{prefix}{dir}/"),
            None => f.clone(),
        };
        *entries.entry(key).or_default() += 1;
    }
    let _ = writeln!(out, "{} files; by folder:", files.len());
    for (entry, n) in entries.iter().take(LIST_FILES) {
        if entry.ends_with('/') {
            let _ = writeln!(out, "{entry} ({n} files)");
        } else {
            let _ = writeln!(out, "{entry}");
        }
    }
    ToolOutput::ok(out)
}

/// `grep {pattern, path?, ignore_case?}`.
pub fn grep(s: &Session<'_>, args: &Value, cancel: &Cancel) -> ToolOutput {
    let pattern = str_arg(args, "pattern").unwrap_or_default();
    let ignore_case = args.get("ignore_case").and_then(Value::as_bool).unwrap_or(false);
    let re = match regex::RegexBuilder::new(pattern)
        .case_insensitive(ignore_case)
        .size_limit(1 << 20)
        .build()
    {
        Ok(re) => re,
        Err(e) => return ToolOutput::fail(format!("the pattern is not a valid regex: {e}")),
    };
    let scope = str_arg(args, "path").unwrap_or("");
    let glob = if scope.contains(['*', '?', '[']) {
        match globset::Glob::new(scope) {
            Ok(g) => Some(g.compile_matcher()),
            Err(e) => return ToolOutput::fail(format!("path is not a valid glob: {e}")),
        }
    } else {
        None
    };
    let prefix = if glob.is_some() || scope.is_empty() || scope == "." {
        String::new()
    } else {
        match s.readable(scope) {
            Ok(rel) => rel,
            Err(e) => return e,
        }
    };
    let mut per_file: Vec<(String, Vec<(usize, String)>)> = Vec::new();
    let mut total = 0;
    for file in s.files() {
        if cancel.is_cancelled() {
            return ToolOutput::fail("cancelled");
        }
        let in_scope = match &glob {
            Some(g) => g.is_match(&file),
            None => {
                prefix.is_empty()
                    || file == prefix
                    || file.starts_with(&format!("{}/", prefix.trim_end_matches('/')))
            }
        };
        if !in_scope {
            continue;
        }
        let Ok(Some(text)) = s.text(&file) else { continue };
        let hits: Vec<(usize, String)> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| re.is_match(l))
            .map(|(i, l)| (i + 1, cut_line(l.trim_end())))
            .collect();
        if !hits.is_empty() {
            total += hits.len();
            per_file.push((file, hits));
        }
    }
    if per_file.is_empty() {
        return ToolOutput::ok(format!("no matches for /{pattern}/"));
    }
    let mut out = format!("{total} matches in {} files:\n", per_file.len());
    for (file, hits) in per_file.iter().take(LIST_FILES.min(30)) {
        let _ = writeln!(out, "{file} ({})", hits.len());
    }
    if per_file.len() > 30 {
        let _ = writeln!(out, "… and {} more files", per_file.len() - 30);
    }
    out.push('\n');
    let mut shown = 0;
    'files: for (file, hits) in &per_file {
        for (line, text) in hits {
            if shown == GREP_LINES {
                let _ = writeln!(
                    out,
                    "[{} more matching lines; narrow the pattern or the path]",
                    total - shown
                );
                break 'files;
            }
            let _ = writeln!(out, "{file}:{line}: {text}");
            shown += 1;
        }
    }
    ToolOutput::ok(out)
}
