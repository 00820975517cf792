//! Where the `edit` tool's `old_text` lies in a file, and what replaces it.
//!
//! Search/replace is the edit format tool-calling models handle best; what goes wrong with it
//! in practice is text that almost matches (the model re-indented the snippet, dropped trailing
//! spaces, wrote `\n` for a file with `\r\n`) or matches more than once. The rules here:
//!
//! 1. An exact match that occurs once is used as written.
//! 2. An exact match that occurs several times is an error that lists where: the model must add
//!    context. No relaxed matching is tried then (it could only find more places).
//! 3. Otherwise the text is compared line by line, more and more loosely: line endings, then
//!    trailing whitespace, then indentation (each line the same after its leading whitespace,
//!    with the same *relative* indentation). The first level that finds exactly one place wins;
//!    its kind is reported back to the model, and under the indentation level `new_text` is
//!    re-indented by the same shift. Several places at a level is an error, as in 2.
//! 4. No place at any level is an error that shows the closest candidates (the windows of the
//!    file sharing the most lines with `old_text`) so the model can retry.
//!
//! A relaxed match only ever replaces whole lines that equal `old_text`'s lines up to
//! whitespace, so it can be wrong only about whitespace, never about code: there are no silent
//! wrong edits, which the edit benchmark (`bench/edit-bench.sh`) checks on real history.

use std::fmt;

/// How `old_text` matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    /// Exactly as written.
    Exact,
    /// Equal once the file's `\r\n` line endings are taken into account.
    LineEndings,
    /// Equal line by line up to trailing whitespace.
    TrailingWhitespace,
    /// Equal line by line up to a uniform shift of indentation (`new_text` was re-indented).
    Indentation,
}

impl MatchKind {
    /// How the match is described to the model (nothing for an exact one).
    pub fn note(self) -> Option<&'static str> {
        match self {
            MatchKind::Exact => None,
            MatchKind::LineEndings => Some("matched after converting line endings to the file's"),
            MatchKind::TrailingWhitespace => Some("matched ignoring trailing whitespace"),
            MatchKind::Indentation => {
                Some("matched ignoring indentation; new_text was re-indented to the file's")
            }
        }
    }
}

/// Where the replacement goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Byte range of the replaced text.
    pub start: usize,
    /// End of the replaced range (exclusive).
    pub end: usize,
    /// What replaces it (re-indented or with converted line endings where the match needed it).
    pub replacement: String,
    /// How it matched.
    pub kind: MatchKind,
    /// The first replaced line, 1-based.
    pub line: usize,
}

/// A window of the file that resembles `old_text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// First line, 1-based.
    pub start_line: usize,
    /// Last line, 1-based.
    pub end_line: usize,
    /// How many of `old_text`'s lines it has (up to whitespace), out of how many.
    pub same_lines: usize,
    /// The window's text.
    pub text: String,
}

/// Why `old_text` cannot be located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchError {
    /// `old_text` is empty (or only whitespace): use `create` for a new file, or quote the
    /// lines next to the insertion point.
    Empty,
    /// It occurs at several places (the 1-based lines where each starts).
    Ambiguous {
        /// Where each match starts.
        lines: Vec<usize>,
        /// At which level they were found.
        kind: MatchKind,
    },
    /// It occurs nowhere; the closest windows, best first.
    NotFound {
        /// Up to three candidates.
        closest: Vec<Candidate>,
        /// Lines in `old_text`.
        old_lines: usize,
    },
}

impl fmt::Display for MatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchError::Empty => f.write_str(
                "old_text is empty: quote the exact lines to replace (to add code, quote the \
                 lines next to where it goes and repeat them in new_text; to make a new file, \
                 use create)",
            ),
            MatchError::Ambiguous { lines, kind } => {
                let at: Vec<String> = lines.iter().map(|l| format!("line {l}")).collect();
                write!(
                    f,
                    "old_text occurs {} times ({}{}): include more surrounding lines so that it \
                     occurs once",
                    lines.len(),
                    at.join(", "),
                    kind.note().map(|n| format!("; {n}")).unwrap_or_default()
                )
            }
            MatchError::NotFound { closest, old_lines } => {
                f.write_str("old_text does not occur in the file, even ignoring whitespace")?;
                if closest.is_empty() {
                    return f.write_str(
                        "; no line of it occurs either: read the file again before editing",
                    );
                }
                f.write_str(". The closest places (copy the text exactly from here):")?;
                for c in closest {
                    write!(
                        f,
                        "\n--- lines {}-{} ({} of {} lines the same) ---\n{}",
                        c.start_line, c.end_line, c.same_lines, old_lines, c.text
                    )?;
                }
                Ok(())
            }
        }
    }
}

/// Locates `old` in `text` and works out its replacement by `new` (see the module doc).
pub fn locate(text: &str, old: &str, new: &str) -> Result<Located, MatchError> {
    if old.trim().is_empty() {
        return Err(MatchError::Empty);
    }
    let exact: Vec<usize> = match_starts(text, old);
    match exact.len() {
        1 => return Ok(exact_match(text, exact[0], old, new)),
        0 => {}
        _ => {
            let lines = exact.iter().map(|&s| line_of(text, s)).collect();
            return Err(MatchError::Ambiguous { lines, kind: MatchKind::Exact });
        }
    }
    let crlf = text.contains("\r\n");
    if crlf && !old.contains('\r') {
        let (old_crlf, new_crlf) = (to_crlf(old), to_crlf(new));
        let starts = match_starts(text, &old_crlf);
        match starts.len() {
            1 => {
                return Ok(Located {
                    start: starts[0],
                    end: starts[0] + old_crlf.len(),
                    replacement: new_crlf,
                    kind: MatchKind::LineEndings,
                    line: line_of(text, starts[0]),
                });
            }
            0 => {}
            _ => {
                let lines = starts.iter().map(|&s| line_of(text, s)).collect();
                return Err(MatchError::Ambiguous { lines, kind: MatchKind::LineEndings });
            }
        }
    }
    let file = Lines::of(text);
    let (old_all, new_all) = (snippet_lines(old), snippet_lines(new));
    let (lead, trail) = blank_ends(&old_all);
    let old_lines = &old_all[lead..old_all.len() - trail];
    // The blank lines the model put around old_text are left out of the match; as many of the
    // ones around new_text are left out with them (the rest are new blank lines).
    let (new_lead, new_trail) = blank_ends(&new_all);
    let new_lines: &[&str] = &new_all[lead.min(new_lead)
        ..new_all.len() - trail.min(new_trail).min(new_all.len() - lead.min(new_lead))];
    let eol = if crlf { "\r\n" } else { "\n" };
    for kind in [MatchKind::TrailingWhitespace, MatchKind::Indentation] {
        let found: Vec<(usize, Option<Shift>)> = (0..=file.len().saturating_sub(old_lines.len()))
            .filter(|_| file.len() >= old_lines.len())
            .filter_map(|at| window_matches(&file, at, old_lines, kind).map(|s| (at, s)))
            .collect();
        match found.len() {
            0 => continue,
            1 => {
                let (at, shift) = found[0].clone();
                // Blank lines the model put around old_text and left out of new_text are
                // deleted with it, where the file has them.
                let extra_before = blank_run(&file, at, lead.saturating_sub(new_lead), false);
                let last = at + old_lines.len() - 1;
                let extra_after = blank_run(&file, last + 1, trail.saturating_sub(new_trail), true);
                let at = at - extra_before;
                let last = last + extra_after;
                let start = file.start(at);
                let end = file.end_without_newline(last);
                let body: Vec<String> = match &shift {
                    Some(shift) => new_lines.iter().map(|l| shift.apply(l)).collect(),
                    None => new_lines.iter().map(|l| (*l).to_owned()).collect(),
                };
                let replacement = if new_lines.is_empty() {
                    // Deleting the lines: take the line break after them too.
                    return Ok(Located {
                        start,
                        end: file.start(last + 1).max(end),
                        replacement: String::new(),
                        kind,
                        line: at + 1,
                    });
                } else {
                    body.join(eol)
                };
                return Ok(Located { start, end, replacement, kind, line: at + 1 });
            }
            _ => {
                let lines = found.iter().map(|(at, _)| at + 1).collect();
                return Err(MatchError::Ambiguous { lines, kind });
            }
        }
    }
    Err(MatchError::NotFound { closest: closest(&file, old_lines), old_lines: old_lines.len() })
}

/// The replacement for the one exact match of `old` at `start`, with the two things a model
/// means by whole lines made right:
///
/// - `old` quoted without the indentation of the line it starts on (it matches right after
///   that indentation): the further lines of `new`, written flush left like `old`, get the
///   line's indentation too ([`MatchKind::Indentation`]), unless `new` already carries it;
/// - whole lines deleted with an empty `new` but quoted without their final line break: the
///   line break goes too, so no blank line is left behind.
fn exact_match(text: &str, start: usize, old: &str, new: &str) -> Located {
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let mut end = start + old.len();
    let at_line_end = text[end..].is_empty() || text[end..].starts_with(['\n', '\r']);
    let whole_lines = old.ends_with('\n') || at_line_end;
    let indent = &text[line_start..start];
    let line = line_of(text, start);
    let exact = |end, replacement: String| Located {
        start,
        end,
        replacement,
        kind: MatchKind::Exact,
        line,
    };
    // The match starts where the line's code does, or inside its indentation.
    let in_indent = indent.chars().all(|c| c == ' ' || c == '\t');
    if new.is_empty() && in_indent && whole_lines {
        // Deleting whole lines: their indentation and line break too.
        if !old.ends_with('\n') {
            if text[end..].starts_with("\r\n") {
                end += 2;
            } else if text[end..].starts_with('\n') {
                end += 1;
            }
        }
        return Located { start: line_start, ..exact(end, String::new()) };
    }
    // Quoted from where the line's code starts (without the indentation before it): the
    // replacement is laid out from the line's start, its first line (when not blank) given
    // that indentation. When old_text is one line, new_text was written in the same frame
    // and all its lines get the indentation, as under a relaxed match
    // ([`MatchKind::Indentation`]); when old_text's further lines matched as they are in the
    // file, new_text's are taken as written.
    if !indent.is_empty() && in_indent && whole_lines {
        let one_line = !old.trim_end_matches(['\n', '\r']).contains('\n');
        let lines: Vec<&str> = new.split_inclusive('\n').collect();
        let relative = one_line && lines.iter().skip(1).any(|l| !l.trim().is_empty());
        let mut replacement = String::new();
        for (i, l) in lines.iter().enumerate() {
            if !l.trim().is_empty() && (i == 0 || relative) {
                replacement.push_str(indent);
            }
            replacement.push_str(l);
        }
        let kind = if relative { MatchKind::Indentation } else { MatchKind::Exact };
        return Located { start: line_start, kind, ..exact(end, replacement) };
    }
    exact(end, new.to_owned())
}

/// Every start of `needle` in `text` (overlapping ones too: a text that occurs twice
/// overlapping is still ambiguous).
fn match_starts(text: &str, needle: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(needle) {
        out.push(from + i);
        // Next char boundary after this start.
        let step = text[from + i..].chars().next().map_or(1, char::len_utf8);
        from += i + step;
        if from > text.len() {
            break;
        }
    }
    out
}

/// The 1-based line of byte `at`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

fn to_crlf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\n', "\r\n")
}

/// A snippet's lines for line-wise matching, without their line breaks: `"a\nb\n"` and
/// `"a\nb"` are two lines, `"\n"` is one blank line, `""` none.
fn snippet_lines(snippet: &str) -> Vec<&str> {
    snippet
        .split_inclusive('\n')
        .map(|l| l.strip_suffix('\n').unwrap_or(l))
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

/// How many blank lines `lines` has at its start and at its end (not counting any twice:
/// all-blank lines count as leading).
fn blank_ends(lines: &[&str]) -> (usize, usize) {
    let lead = lines.iter().take_while(|l| l.trim().is_empty()).count();
    let trail = lines[lead..].iter().rev().take_while(|l| l.trim().is_empty()).count();
    (lead, trail)
}

/// How many of the (at most `max`) lines next to `from` are blank: going up from the line
/// before `from`, or (`down`) from `from` on.
fn blank_run(file: &Lines<'_>, from: usize, max: usize, down: bool) -> usize {
    let mut n = 0;
    while n < max {
        let i = if down { from + n } else { from.wrapping_sub(n + 1) };
        if i >= file.len() || !file.get(i).trim().is_empty() {
            break;
        }
        n += 1;
    }
    n
}

/// A file's lines with their byte offsets.
struct Lines<'t> {
    text: &'t str,
    /// (start, end without `\r\n`/`\n`) per line.
    spans: Vec<(usize, usize)>,
}

impl<'t> Lines<'t> {
    fn of(text: &'t str) -> Lines<'t> {
        let mut spans = Vec::new();
        let mut start = 0;
        for piece in text.split_inclusive('\n') {
            let mut end = start + piece.len();
            if piece.ends_with('\n') {
                end -= 1;
                if piece.ends_with("\r\n") {
                    end -= 1;
                }
            }
            spans.push((start, end));
            start += piece.len();
        }
        Lines { text, spans }
    }

    fn len(&self) -> usize {
        self.spans.len()
    }

    fn get(&self, i: usize) -> &'t str {
        let (s, e) = self.spans[i];
        &self.text[s..e]
    }

    fn start(&self, i: usize) -> usize {
        self.spans.get(i).map_or(self.text.len(), |s| s.0)
    }

    fn end_without_newline(&self, i: usize) -> usize {
        self.spans[i].1
    }
}

/// A uniform change of indentation: the file's lines are `old`'s with `from` replaced by `to`
/// at the start.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shift {
    from: String,
    to: String,
}

impl Shift {
    /// `line` re-indented: `from` at its start becomes `to`; a line indented less than `from`
    /// gets `to` in front (its own indentation kept); blank lines stay blank.
    fn apply(&self, line: &str) -> String {
        if line.trim().is_empty() {
            return String::new();
        }
        match line.strip_prefix(self.from.as_str()) {
            Some(rest) => format!("{}{rest}", self.to),
            None => format!("{}{}", self.to, line.trim_start()),
        }
    }
}

fn indentation(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// The longest common leading whitespace of the non-blank lines.
fn common_indent<'a>(lines: impl Iterator<Item = &'a str>) -> &'a str {
    let mut common: Option<&str> = None;
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let ind = indentation(line);
        common = Some(match common {
            None => ind,
            Some(c) => {
                let n = c.bytes().zip(ind.bytes()).take_while(|(a, b)| a == b).count();
                &c[..n]
            }
        });
    }
    common.unwrap_or("")
}

/// Whether the file's lines from `at` match `old` at `kind`; for [`MatchKind::Indentation`],
/// the shift that maps `old`'s indentation to the file's.
fn window_matches(
    file: &Lines<'_>,
    at: usize,
    old: &[&str],
    kind: MatchKind,
) -> Option<Option<Shift>> {
    let window: Vec<&str> = (at..at + old.len()).map(|i| file.get(i)).collect();
    match kind {
        MatchKind::TrailingWhitespace => {
            window.iter().zip(old).all(|(f, o)| f.trim_end() == o.trim_end()).then_some(None)
        }
        MatchKind::Indentation => {
            if !window.iter().zip(old).all(|(f, o)| f.trim() == o.trim()) {
                return None;
            }
            let from = common_indent(old.iter().copied());
            let to = common_indent(window.iter().copied());
            // The same relative indentation on every non-blank line.
            let same_shape =
                window.iter().zip(old).filter(|(f, _)| !f.trim().is_empty()).all(|(f, o)| {
                    indentation(f).strip_prefix(to) == indentation(o).strip_prefix(from)
                        && indentation(f).starts_with(to)
                });
            same_shape.then(|| Some(Shift { from: from.to_owned(), to: to.to_owned() }))
        }
        MatchKind::Exact | MatchKind::LineEndings => None,
    }
}

/// The windows sharing most lines (up to whitespace, same position) with `old`.
fn closest(file: &Lines<'_>, old: &[&str]) -> Vec<Candidate> {
    if file.len() == 0 {
        return Vec::new();
    }
    let n = old.len().min(file.len());
    let mut scored: Vec<(usize, usize)> = Vec::new();
    for at in 0..=file.len() - n {
        let same = (0..n)
            .filter(|&i| !old[i].trim().is_empty() && file.get(at + i).trim() == old[i].trim())
            .count();
        if same > 0 {
            scored.push((same, at));
        }
    }
    let anchored = scored.is_empty();
    if anchored {
        // No line is the same even up to whitespace: anchor on the file lines most like
        // old_text's first non-blank line (a typo, a changed number).
        let Some(first) = old.iter().position(|l| !l.trim().is_empty()) else { return Vec::new() };
        let want = old[first].trim();
        let mut similar_lines: Vec<(f32, usize)> = (0..file.len())
            .filter(|&i| !file.get(i).trim().is_empty())
            .filter(|&i| file.get(i).len() <= 400)
            .map(|i| (similar::TextDiff::from_chars(want, file.get(i).trim()).ratio(), i))
            .filter(|(r, _)| *r >= 0.6)
            .collect();
        similar_lines.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for (_, i) in similar_lines.into_iter().take(3) {
            let at = i.saturating_sub(first).min(file.len() - n);
            scored.push((0, at));
        }
    }
    // Best first; among equals, earlier first (anchored ones are in similarity order).
    // Overlapping windows are shown once.
    if !anchored {
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    }
    let mut out: Vec<Candidate> = Vec::new();
    for (same, at) in scored {
        if out.len() == 3 {
            break;
        }
        if out.iter().any(|c| at < c.end_line && at + n >= c.start_line) {
            continue;
        }
        let shown = n.min(12);
        let mut text: Vec<&str> = (at..at + shown).map(|i| file.get(i)).collect();
        if shown < n {
            text.push("…");
        }
        out.push(Candidate {
            start_line: at + 1,
            end_line: at + n,
            same_lines: same,
            text: text.join("\n"),
        });
    }
    out
}

/// `text` with `located` applied.
pub fn apply(text: &str, located: &Located) -> String {
    format!("{}{}{}", &text[..located.start], located.replacement, &text[located.end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(text: &str, old: &str, new: &str) -> Result<(String, MatchKind), MatchError> {
        locate(text, old, new).map(|l| (apply(text, &l), l.kind))
    }

    const PY: &str =
        "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n";

    #[test]
    fn an_exact_unique_match_is_used_as_written() {
        let (out, kind) = edit(PY, "return 1", "return 10").unwrap();
        assert_eq!(kind, MatchKind::Exact);
        assert!(out.contains("return 10\n") && out.contains("return 2"));
    }

    #[test]
    fn several_exact_matches_are_an_error_naming_the_lines() {
        let err = edit(PY, "    def ", "    async def ").unwrap_err();
        assert_eq!(err, MatchError::Ambiguous { lines: vec![2, 5], kind: MatchKind::Exact });
        assert!(err.to_string().contains("line 2, line 5"), "{err}");
    }

    #[test]
    fn an_unindented_snippet_is_matched_and_the_replacement_reindented() {
        let (out, kind) =
            edit(PY, "def g(self):\n    return 2\n", "def g(self):\n    x = 2\n    return x\n")
                .unwrap();
        assert_eq!(kind, MatchKind::Indentation);
        assert_eq!(
            out,
            "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        x = 2\n        return x\n"
        );
    }

    #[test]
    fn indentation_must_shift_uniformly() {
        // The same lines but with a different nesting are not the same code.
        let text = "if a:\n    b()\nc()\n";
        let err = edit(text, "if a:\nb()\nc()", "x").unwrap_err();
        assert!(matches!(err, MatchError::NotFound { .. }), "{err:?}");
    }

    #[test]
    fn trailing_whitespace_is_ignored_before_indentation() {
        let text = "fn a() {   \n    1\n}\n";
        let (out, kind) = edit(text, "fn a() {\n    1\n}", "fn a() {\n    2\n}").unwrap();
        assert_eq!(kind, MatchKind::TrailingWhitespace);
        assert_eq!(out, "fn a() {\n    2\n}\n");
    }

    #[test]
    fn crlf_files_take_lf_snippets_and_keep_crlf() {
        let text = "a\r\nb\r\nc\r\n";
        let (out, kind) = edit(text, "a\nb\n", "a\nB\n").unwrap();
        assert_eq!(kind, MatchKind::LineEndings);
        assert_eq!(out, "a\r\nB\r\nc\r\n");
    }

    #[test]
    fn no_match_shows_the_closest_windows() {
        let err = edit(PY, "def f(self):\n    return 3\n", "x").unwrap_err();
        let MatchError::NotFound { closest, old_lines } = &err else { panic!("{err:?}") };
        assert_eq!(*old_lines, 2);
        assert_eq!(closest[0].start_line, 2);
        assert_eq!(closest[0].same_lines, 1);
        assert!(err.to_string().contains("def f(self):"), "{err}");
    }

    #[test]
    fn a_typo_in_every_line_still_finds_the_place() {
        let err = edit(PY, "        return 3", "x").unwrap_err();
        let MatchError::NotFound { closest, .. } = &err else { panic!("{err:?}") };
        assert_eq!(closest[0].start_line, 3, "{closest:?}");
        assert_eq!(closest[0].same_lines, 0);
    }

    #[test]
    fn blank_lines_added_after_the_snippet_are_kept() {
        let text = "  a \nb\n";
        let (out, kind) = edit(text, "a\n", "a\n\n").unwrap();
        assert_eq!(kind, MatchKind::Indentation);
        assert_eq!(out, "  a\n\nb\n");
    }

    #[test]
    fn a_flush_left_line_replaced_by_several_gets_the_lines_indentation() {
        let text = "def f():\n    return compute(a, b)\n";
        let (out, kind) =
            edit(text, "return compute(a, b)\n", "x = compute(a, b)\nreturn x\n").unwrap();
        assert_eq!(kind, MatchKind::Indentation);
        assert_eq!(out, "def f():\n    x = compute(a, b)\n    return x\n");
        // The whole of new_text shifts, nested lines keep their place relative to the first.
        let (out, _) =
            edit(text, "return compute(a, b)\n", "if a:\n    return b\nreturn a\n").unwrap();
        assert_eq!(out, "def f():\n    if a:\n        return b\n    return a\n");
        // Part of a line: an ordinary exact replacement.
        let (out, kind) = edit(text, "compute(a, b)", "compute(\n    a, b)").unwrap();
        assert_eq!(kind, MatchKind::Exact);
        assert_eq!(out, "def f():\n    return compute(\n    a, b)\n");
    }

    #[test]
    fn deleted_lines_quoted_without_their_line_break_take_it_along() {
        let text = "a\n# one\n# two\nb\n";
        let (out, _) = edit(text, "# one\n# two", "").unwrap();
        assert_eq!(out, "a\nb\n");
        // Quoted without their indentation: it goes too.
        let text = "fn f() {\n    let a = 1;\n    let b = 2;\n}\n";
        let (out, _) = edit(text, "let a = 1;\n", "").unwrap();
        assert_eq!(out, "fn f() {\n    let b = 2;\n}\n");
    }

    #[test]
    fn blank_lines_quoted_around_deleted_code_go_with_it() {
        let text = "a = 1\n\n    b = 2\n\nc = 3\n";
        // Quoted flush left (a relaxed match) with the blank line before it.
        let (out, kind) = edit(text, "\nb = 2\n", "").unwrap();
        assert_eq!(kind, MatchKind::Indentation);
        assert_eq!(out, "a = 1\n\nc = 3\n");
        // A blank line after it, dropped from new_text.
        let text = "x:\n    y(\n    )\n\n    z\n";
        let (out, _) = edit(text, "y(\n)\n\n", "y()\n").unwrap();
        assert_eq!(out, "x:\n    y()\n    z\n");
    }

    #[test]
    fn code_replaced_by_a_blank_line_leaves_one() {
        let text = "def f():\n    a()\n    b()\n    c()\n";
        let (out, _) = edit(text, "b()\n", "\n").unwrap();
        assert_eq!(out, "def f():\n    a()\n\n    c()\n");
        let (out, _) = edit(text, "a()\nb()\n", "\n").unwrap();
        assert_eq!(out, "def f():\n\n    c()\n");
        // A blank first line of new_text stays empty, not indented.
        let (out, _) = edit(text, "b()\n", "\nfrom x import y\n").unwrap();
        assert_eq!(out, "def f():\n    a()\n\n    from x import y\n    c()\n");
    }

    #[test]
    fn empty_old_text_is_refused() {
        assert_eq!(edit(PY, "  \n", "x").unwrap_err(), MatchError::Empty);
    }

    #[test]
    fn relaxed_duplicates_are_ambiguous_too() {
        let text = "if x:\n    a()\nif y:\n    pass\n        a()\n";
        let err = edit(text, "a()\n", "b()\n").unwrap_err();
        assert!(matches!(err, MatchError::Ambiguous { .. }), "{err:?}");
    }

    #[test]
    fn deleting_relaxed_lines_takes_their_line_break() {
        let text = "a\n  b  \nc\n";
        let (out, _) = edit(text, "  b\n", "").unwrap();
        assert_eq!(out, "a\nc\n");
    }

    #[test]
    fn the_last_line_without_a_newline_still_matches() {
        let text = "x = 1\ny = 2";
        let (out, kind) = edit(text, "y = 2\n", "y = 3\n").unwrap();
        assert_eq!(kind, MatchKind::TrailingWhitespace);
        assert_eq!(out, "x = 1\ny = 3");
    }
}
