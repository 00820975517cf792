//! Edits as one type: replacements of byte ranges of a file's text. A review finding's fix is
//! one ([`crate::rules::Fix`]); the agent's edits will be too. The front ends convert them:
//! the language server to an LSP `WorkspaceEdit` (positions in the negotiated encoding, through
//! the file's text), the CLI and review reports to whole-line replacements
//! ([`Edit::whole_lines`]) and unified diffs ([`FileEdit::unified_diff`]).
//!
//! An edit whose range does not fit the text (the file changed since the edit was made) is an
//! error, never a partial or silent change.

use serde::{Deserialize, Serialize};

/// A replacement of one byte range of a text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edit {
    /// Byte offset of the start of the replaced range.
    pub start_byte: usize,
    /// Byte offset just past the end of the replaced range.
    pub end_byte: usize,
    /// The new text.
    pub replacement: String,
}

/// The same edit widened to whole lines: the lines it touches and their new text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineEdit {
    /// First replaced line, 1-based.
    pub start_line: usize,
    /// Last replaced line, 1-based, inclusive.
    pub end_line: usize,
    /// The new text of those lines, without the final line break.
    pub replacement: String,
}

impl Edit {
    /// `source` with this edit applied; `None` when the range does not fit `source`.
    pub fn apply(&self, source: &str) -> Option<String> {
        let before = source.get(..self.start_byte)?;
        let after = source.get(self.end_byte..)?;
        Some(format!("{before}{}{after}", self.replacement))
    }

    /// The edit widened to the whole lines it touches in `source`; `None` when its range does
    /// not fit `source`.
    pub fn whole_lines(&self, source: &str) -> Option<LineEdit> {
        let before = source.get(..self.start_byte)?;
        let after = source.get(self.end_byte..)?;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let mut line_end = after.find('\n').map_or(source.len(), |i| self.end_byte + i);
        if line_end > self.end_byte && source.as_bytes().get(line_end - 1) == Some(&b'\r') {
            line_end -= 1;
        }
        let head = source.get(line_start..self.start_byte)?;
        let tail = source.get(self.end_byte..line_end)?;
        let old = source.get(line_start..line_end)?;
        let start_line = source[..line_start].matches('\n').count() + 1;
        let end_line = start_line + old.matches('\n').count();
        Some(LineEdit {
            start_line,
            end_line,
            replacement: format!("{head}{}{tail}", self.replacement),
        })
    }
}

/// Why edits could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// A range lies outside the text or splits a character.
    #[error("{path}: the edit at bytes {start}..{end} does not fit the file (it changed since)")]
    OutOfRange {
        /// The file.
        path: String,
        /// The range's start.
        start: usize,
        /// The range's end.
        end: usize,
    },
    /// Two ranges overlap.
    #[error("{path}: two edits overlap at byte {at}")]
    Overlap {
        /// The file.
        path: String,
        /// Where the second one starts.
        at: usize,
    },
}

/// Edits of one file (a path relative to the workspace root), applied together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEdit {
    /// The file, relative to the workspace root, `/`-separated.
    pub path: String,
    /// Non-overlapping replacements, in any order.
    pub edits: Vec<Edit>,
}

impl FileEdit {
    /// The edits sorted by position, checked against `source`.
    fn sorted(&self, source: &str) -> Result<Vec<&Edit>, EditError> {
        let mut edits: Vec<&Edit> = self.edits.iter().collect();
        edits.sort_by_key(|e| (e.start_byte, e.end_byte));
        let mut end = 0;
        for e in &edits {
            if e.start_byte > e.end_byte || source.get(e.start_byte..e.end_byte).is_none() {
                return Err(EditError::OutOfRange {
                    path: self.path.clone(),
                    start: e.start_byte,
                    end: e.end_byte,
                });
            }
            if e.start_byte < end {
                return Err(EditError::Overlap { path: self.path.clone(), at: e.start_byte });
            }
            end = e.end_byte;
        }
        Ok(edits)
    }

    /// `source` with every edit applied, or why not (then nothing is applied).
    pub fn apply(&self, source: &str) -> Result<String, EditError> {
        let mut out = String::with_capacity(source.len());
        let mut at = 0;
        for e in self.sorted(source)? {
            out.push_str(&source[at..e.start_byte]);
            out.push_str(&e.replacement);
            at = e.end_byte;
        }
        out.push_str(&source[at..]);
        Ok(out)
    }

    /// The change as a unified diff (`--- a/PATH`, `+++ b/PATH`, hunks with `context` lines
    /// around each change), as `git apply` and `patch -p1` read it; empty when nothing changes.
    pub fn unified_diff(&self, source: &str, context: usize) -> Result<String, EditError> {
        let new = self.apply(source)?;
        if new == source {
            return Ok(String::new());
        }
        let old_lines: Vec<&str> = source.split_inclusive('\n').collect();
        let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
        // Changed line ranges from the edits themselves (no diff algorithm needed): each edit
        // widened to the whole lines it touches, edits whose lines touch taken together, then
        // the lines that came out the same trimmed off both ends.
        let mut regions: Vec<(usize, usize, Vec<&Edit>)> = Vec::new();
        for e in self.sorted(source)? {
            let start = source[..e.start_byte].rfind('\n').map_or(0, |i| i + 1);
            let end = source[e.end_byte..].find('\n').map_or(source.len(), |i| e.end_byte + i + 1);
            match regions.last_mut() {
                Some(last) if start < last.1 => {
                    last.1 = last.1.max(end);
                    last.2.push(e);
                }
                _ => regions.push((start, end, vec![e])),
            }
        }
        // (old first line, old count, new first line, new count), 0-based.
        let mut changes: Vec<(usize, usize, usize, usize)> = Vec::new();
        let mut delta: isize = 0;
        for (start, end, edits) in regions {
            let mut text = String::new();
            let mut at = start;
            for e in edits {
                text.push_str(&source[at..e.start_byte]);
                text.push_str(&e.replacement);
                at = e.end_byte;
            }
            text.push_str(&source[at..end]);
            let old: Vec<&str> = source[start..end].split_inclusive('\n').collect();
            let replaced: Vec<&str> = text.split_inclusive('\n').collect();
            let same_head = old.iter().zip(&replaced).take_while(|(a, b)| a == b).count();
            let same_tail = old[same_head..]
                .iter()
                .rev()
                .zip(replaced[same_head..].iter().rev())
                .take_while(|(a, b)| a == b)
                .count();
            let first = source[..start].matches('\n').count() + same_head;
            let old_count = old.len() - same_head - same_tail;
            let new_count = replaced.len() - same_head - same_tail;
            if old_count == 0 && new_count == 0 {
                continue; // replaced by the same text
            }
            changes.push((first, old_count, (first as isize + delta) as usize, new_count));
            delta += new_count as isize - old_count as isize;
        }
        let mut out = format!("--- a/{0}\n+++ b/{0}\n", self.path);
        let mut i = 0;
        while i < changes.len() {
            // One hunk: changes whose contexts overlap.
            let mut j = i;
            while j + 1 < changes.len()
                && changes[j + 1].0 <= changes[j].0 + changes[j].1 + 2 * context
            {
                j += 1;
            }
            let (o0, _, n0, _) = changes[i];
            let start = o0.saturating_sub(context);
            let new_start = n0 - (o0 - start);
            let (oj, oc, _, _) = changes[j];
            let end = (oj + oc + context).min(old_lines.len());
            let mut body = String::new();
            let (mut old_n, mut new_n) = (0, 0);
            let mut at = start;
            for &(o, oc, n, nc) in &changes[i..=j] {
                for line in &old_lines[at..o] {
                    push_line(&mut body, ' ', line);
                    old_n += 1;
                    new_n += 1;
                }
                for line in &old_lines[o..o + oc] {
                    push_line(&mut body, '-', line);
                    old_n += 1;
                }
                for line in &new_lines[n..(n + nc).min(new_lines.len())] {
                    push_line(&mut body, '+', line);
                    new_n += 1;
                }
                at = o + oc;
            }
            for line in &old_lines[at..end] {
                push_line(&mut body, ' ', line);
                old_n += 1;
                new_n += 1;
            }
            let from = |first: usize, n: usize| if n == 0 { first } else { first + 1 };
            out.push_str(&format!(
                "@@ -{},{old_n} +{},{new_n} @@\n",
                from(start, old_n),
                from(new_start, new_n)
            ));
            out.push_str(&body);
            i = j + 1;
        }
        Ok(out)
    }
}

fn push_line(out: &mut String, mark: char, line: &str) {
    out.push(mark);
    out.push_str(line);
    if !line.ends_with('\n') {
        out.push_str("\n\\ No newline at end of file\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(start: usize, end: usize, text: &str) -> Edit {
        Edit { start_byte: start, end_byte: end, replacement: text.into() }
    }

    #[test]
    fn edits_apply_together_or_not_at_all() {
        let source = "let a = 1;\nlet b = 2;\n";
        let file =
            FileEdit { path: "x.rs".into(), edits: vec![edit(19, 20, "3"), edit(8, 9, "5")] };
        assert_eq!(file.apply(source).unwrap(), "let a = 5;\nlet b = 3;\n");
        let overlapping =
            FileEdit { path: "x.rs".into(), edits: vec![edit(0, 5, ""), edit(4, 6, "")] };
        assert_eq!(
            overlapping.apply(source),
            Err(EditError::Overlap { path: "x.rs".into(), at: 4 })
        );
        let outside = FileEdit { path: "x.rs".into(), edits: vec![edit(8, 99, "")] };
        assert!(matches!(outside.apply(source), Err(EditError::OutOfRange { .. })));
        // Inside a character: refused, not cut.
        let cut = FileEdit { path: "x.rs".into(), edits: vec![edit(1, 2, "")] };
        assert!(cut.apply("é").is_err());
    }

    #[test]
    fn an_edit_widens_to_whole_lines() {
        let source = "x = 1\nif a is 'b':\n    pass\n";
        let start = source.find("a is 'b'").unwrap();
        let e = edit(start, start + 8, "a == 'b'");
        assert_eq!(
            e.whole_lines(source),
            Some(LineEdit { start_line: 2, end_line: 2, replacement: "if a == 'b':".into() })
        );
        assert_eq!(edit(99, 100, "").whole_lines(source), None);
    }

    /// Applies a unified diff with `patch` semantics, as a check that the diff is well-formed:
    /// context and removed lines must match the source, and the result must be the new text.
    fn patch(source: &str, diff: &str) -> String {
        let old: Vec<&str> = source.split_inclusive('\n').collect();
        let mut out = String::new();
        let mut at = 0;
        let mut lines = diff.lines().skip(2).peekable();
        while let Some(header) = lines.next() {
            let header = header.strip_prefix("@@ -").unwrap();
            let start: usize = header.split([',', ' ']).next().unwrap().parse().unwrap();
            let start = start.saturating_sub(1).max(at);
            for line in &old[at..start] {
                out.push_str(line);
            }
            at = start;
            while let Some(line) = lines.peek() {
                if line.starts_with("@@") {
                    break;
                }
                let line = lines.next().unwrap();
                let text = &line[1..];
                let no_newline = lines.peek() == Some(&"\\ No newline at end of file");
                let full = if no_newline { text.to_string() } else { format!("{text}\n") };
                match &line[..1] {
                    " " => {
                        assert_eq!(old[at], full);
                        out.push_str(&full);
                        at += 1;
                    }
                    "-" => {
                        assert_eq!(old[at], full);
                        at += 1;
                    }
                    "+" => out.push_str(&full),
                    "\\" => {}
                    other => panic!("bad line {other:?}"),
                }
                if no_newline {
                    lines.next();
                }
            }
        }
        for line in &old[at..] {
            out.push_str(line);
        }
        out
    }

    #[test]
    fn unified_diffs_apply_back_to_the_edited_text() {
        let source: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let at = |s: &str| source.find(s).unwrap();
        let cases = vec![
            vec![edit(at("line 3\n"), at("line 4\n"), "three\n")],
            vec![edit(at("line 3\n"), at("line 3\n"), "inserted\n")],
            vec![edit(at("line 2\n"), at("line 5\n"), "")],
            // Two changes close together share a hunk; far apart, two hunks.
            vec![
                edit(at("line 4"), at("line 4") + 6, "four"),
                edit(at("line 6"), at("line 6") + 6, "six"),
            ],
            vec![
                edit(at("line 2"), at("line 2") + 6, "two"),
                edit(at("line 18"), at("line 18") + 7, "x\ny"),
            ],
            vec![edit(source.len() - 1, source.len(), "")],
            vec![edit(0, 0, "first\n")],
        ];
        for edits in cases {
            let file = FileEdit { path: "src/a.txt".into(), edits };
            let diff = file.unified_diff(&source, 3).unwrap();
            assert!(diff.starts_with("--- a/src/a.txt\n+++ b/src/a.txt\n@@ -"), "{diff}");
            assert_eq!(patch(&source, &diff), file.apply(&source).unwrap(), "{diff}");
        }
        let far = FileEdit {
            path: "a".into(),
            edits: vec![
                edit(at("line 2"), at("line 2") + 6, "two"),
                edit(at("line 18"), at("line 18") + 7, "x"),
            ],
        };
        assert_eq!(far.unified_diff(&source, 3).unwrap().matches("@@ -").count(), 2);
        let near = FileEdit {
            path: "a".into(),
            edits: vec![
                edit(at("line 4"), at("line 4") + 6, "4"),
                edit(at("line 6"), at("line 6") + 6, "6"),
            ],
        };
        assert_eq!(near.unified_diff(&source, 3).unwrap().matches("@@ -").count(), 1);
        assert_eq!(
            FileEdit { path: "a".into(), edits: vec![] }.unified_diff(&source, 3).unwrap(),
            ""
        );
    }
}
