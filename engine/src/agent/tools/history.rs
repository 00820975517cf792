//! `history`: what teammates changed and why: recent commits of a path or of the repository,
//! or who last changed some lines (git log and blame, run by the review use case's git
//! plumbing, the one place that runs git).

use std::fmt::Write as _;

use serde_json::Value;

use super::{Session, ToolOutput, str_arg, usize_arg};
use crate::review::git::git;

/// Commits a `history` answer lists.
const COMMITS: &str = "15";

/// `history {path?, start_line?, end_line?}`.
pub fn history(s: &Session<'_>, args: &Value) -> ToolOutput {
    let path = match str_arg(args, "path") {
        Some(given) if !given.is_empty() && given != "." => match s.readable(given) {
            Ok(rel) => Some(rel),
            Err(e) => return e,
        },
        _ => None,
    };
    let start = usize_arg(args, "start_line");
    if let (Some(path), Some(start)) = (&path, start) {
        let end = usize_arg(args, "end_line").unwrap_or(start).max(start);
        return blame(s, path, start, end);
    }
    let format = "--format=%h %as %an: %s";
    let mut cmd = vec!["log", "-n", COMMITS, "--no-merges", format];
    if let Some(path) = &path {
        cmd.extend(["--follow", "--", path.as_str()]);
    }
    match git(&s.root, &cmd) {
        Ok(out) if out.is_empty() => ToolOutput::ok(match &path {
            Some(p) => format!("no commits touch {p} (it may be new or untracked)"),
            None => "the repository has no commits".to_owned(),
        }),
        Ok(out) => {
            let what = path.as_deref().unwrap_or("the repository");
            ToolOutput::ok(format!("latest commits of {what}:\n{}", String::from_utf8_lossy(&out)))
        }
        Err(e) => ToolOutput::fail(format!("git log failed: {e}")),
    }
}

/// Who last changed lines `start..=end` of `path`, one line per commit.
fn blame(s: &Session<'_>, path: &str, start: usize, end: usize) -> ToolOutput {
    let range = format!("{start},{end}");
    let out = match git(&s.root, &["blame", "--line-porcelain", "-L", &range, "--", path]) {
        Ok(out) => out,
        Err(e) => return ToolOutput::fail(format!("git blame failed: {e}")),
    };
    let text = String::from_utf8_lossy(&out);
    // Per commit: its summary, author, date and the lines it last touched.
    let mut commits: Vec<(String, String, String, Vec<usize>)> = Vec::new();
    let (mut sha, mut author, mut time, mut summary, mut line) =
        (String::new(), String::new(), String::new(), String::new(), 0usize);
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("author ") {
            author = rest.to_owned();
        } else if let Some(rest) = l.strip_prefix("author-time ") {
            time = rest.to_owned();
        } else if let Some(rest) = l.strip_prefix("summary ") {
            summary = rest.to_owned();
        } else if l.starts_with('\t') {
            let short: String = sha.chars().take(9).collect();
            let key = format!("{short} {}", days(&time));
            match commits.iter_mut().find(|c| c.0 == key) {
                Some(c) => c.3.push(line),
                None => commits.push((key, author.clone(), summary.clone(), vec![line])),
            }
        } else {
            let mut parts = l.split(' ');
            if let (Some(s), Some(_), Some(n)) = (parts.next(), parts.next(), parts.next())
                && s.len() == 40
            {
                sha = s.to_owned();
                line = n.parse().unwrap_or(0);
            }
        }
    }
    let mut answer = format!("last changes of {path} lines {start}-{end}:\n");
    for (key, author, summary, lines) in commits {
        let shown = match (lines.first(), lines.last()) {
            (Some(a), Some(b)) if a != b => format!("lines {a}-{b}"),
            (Some(a), _) => format!("line {a}"),
            _ => String::new(),
        };
        let _ = writeln!(answer, "{key} {author}: {summary} ({shown})");
    }
    ToolOutput::ok(answer)
}

/// A Unix time as a date (`YYYY-MM-DD`), from git's `author-time`.
fn days(unix: &str) -> String {
    let Ok(secs) = unix.parse::<i64>() else { return String::new() };
    let days = secs.div_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    format!("{}-{m:02}-{d:02}", if m <= 2 { y + 1 } else { y })
}

#[cfg(test)]
mod tests {
    #[test]
    fn unix_times_become_dates() {
        assert_eq!(super::days("0"), "1970-01-01");
        assert_eq!(super::days("1700000000"), "2023-11-14");
        assert_eq!(super::days("951782400"), "2000-02-29");
    }
}
