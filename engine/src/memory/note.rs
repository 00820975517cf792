//! The note file: `.sift/memory/<slug>.md`, TOML front matter between `+++` lines, then the
//! fact in Markdown. The format is stable (documented in `docs/memory.md`): fields are only
//! ever added, and unknown fields are kept when sift rewrites a note.
//!
//! ```text
//! +++
//! title = "Index updates take the writer lock first"
//! scope = ["indexer/**"]
//! created = "2026-12-02"
//! updated = "2026-12-02"
//! author = "user"
//! origin = "task: make the watcher batch updates"
//!
//! [[cite]]
//! path = "indexer/src/update.rs"
//! lines = "234-260"
//! symbol = "CodeIndex.update"
//! hash = "b3:5d0e8f1c2a4b6d70"
//! +++
//!
//! Every update goes through `CodeIndex::update`, which takes the writer lock before it walks.
//! ```

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// Who wrote a note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Author {
    /// A person, with `sift memory add` or the editor.
    User,
    /// The agent, accepted by a person.
    Agent,
}

impl Author {
    /// `user` or `agent`.
    pub fn as_str(self) -> &'static str {
        match self {
            Author::User => "user",
            Author::Agent => "agent",
        }
    }
}

/// What a note cites: a symbol, lines, or both, in one file, and the hash of the cited text as
/// it was when the note was written or last verified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Citation {
    /// The file, relative to the repository root, `/`-separated.
    pub path: String,
    /// The cited lines, 1-based and inclusive (`"12-30"`, or `"12"`): for a symbol, where it
    /// was (a hint); without one, the citation itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<String>,
    /// The cited definition (`name`, or `Container.name`), looked up first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// `b3:` and 16 hex digits of the BLAKE3 hash of the cited text (see
    /// [`super::cite::text_hash`]).
    pub hash: String,
}

impl Citation {
    /// The line range, 1-based inclusive, when `lines` parses.
    pub fn line_range(&self) -> Option<(usize, usize)> {
        parse_lines(self.lines.as_deref()?)
    }

    /// How it is shown: `path#symbol` or `path:lines`.
    pub fn label(&self) -> String {
        match (&self.symbol, &self.lines) {
            (Some(symbol), _) => format!("{}#{symbol}", self.path),
            (None, Some(lines)) => format!("{}:{lines}", self.path),
            (None, None) => self.path.clone(),
        }
    }
}

/// `"12-30"` or `"12"` as a 1-based inclusive range.
pub fn parse_lines(lines: &str) -> Option<(usize, usize)> {
    let (a, b) = match lines.split_once('-') {
        Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
        None => {
            let n = lines.trim().parse().ok()?;
            (n, n)
        }
    };
    (a >= 1 && b >= a).then_some((a, b))
}

/// A range as `lines` writes it.
pub fn format_lines(start: usize, end: usize) -> String {
    if start == end { start.to_string() } else { format!("{start}-{end}") }
}

/// The front matter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Front {
    /// One line that says what the note is about.
    pub title: String,
    /// Path globs the note is about (empty: the whole repository).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scope: Vec<String>,
    /// `YYYY-MM-DD`.
    pub created: String,
    /// `YYYY-MM-DD`.
    pub updated: String,
    /// Who wrote it.
    pub author: Author,
    /// Where it came from: `task: …`, `commit: …`, `review: …` (free text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The code it cites.
    #[serde(default, rename = "cite", skip_serializing_if = "Vec::is_empty")]
    pub citations: Vec<Citation>,
    /// Fields this sift does not know (a newer sift's), kept on rewrite.
    #[serde(flatten)]
    pub other: toml::Table,
}

/// One note: its slug (the file name without `.md`), front matter and body.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    /// The file's name without `.md`: lowercase letters, digits and `-`.
    pub slug: String,
    /// The front matter.
    pub front: Front,
    /// The fact, in Markdown (trimmed).
    pub body: String,
}

/// A note file that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{slug}.md: {reason}")]
pub struct ParseError {
    /// The note's slug.
    pub slug: String,
    /// What is wrong, and where.
    pub reason: String,
}

const FENCE: &str = "+++";

impl Note {
    /// Parses a note file's text.
    pub fn parse(slug: &str, text: &str) -> Result<Note, ParseError> {
        let fail = |reason: String| ParseError { slug: slug.to_string(), reason };
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut lines = text.split_inclusive('\n');
        let first = lines.next().unwrap_or("");
        if first.trim_end() != FENCE {
            return Err(fail(format!("the first line must be `{FENCE}` (front matter)")));
        }
        let mut front = String::new();
        let mut closed = false;
        let mut consumed = first.len();
        for line in lines.by_ref() {
            consumed += line.len();
            if line.trim_end() == FENCE {
                closed = true;
                break;
            }
            front.push_str(line);
        }
        if !closed {
            return Err(fail(format!("the front matter has no closing `{FENCE}` line")));
        }
        let front: Front =
            toml::from_str(&front).map_err(|e| fail(format!("front matter: {}", e.message())))?;
        if front.title.trim().is_empty() {
            return Err(fail("the title is empty".into()));
        }
        for (i, c) in front.citations.iter().enumerate() {
            if c.path.is_empty() {
                return Err(fail(format!("citation {} has no path", i + 1)));
            }
            if c.lines.is_some() && c.line_range().is_none() {
                return Err(fail(format!(
                    "citation {} ({}): lines must be `N` or `N-M`",
                    i + 1,
                    c.path
                )));
            }
            if c.symbol.is_none() && c.lines.is_none() {
                return Err(fail(format!(
                    "citation {} ({}) names neither lines nor a symbol",
                    i + 1,
                    c.path
                )));
            }
        }
        let body = text[consumed..].trim().to_string();
        Ok(Note { slug: slug.to_string(), front, body })
    }

    /// The file's text; [`Note::parse`] of it gives the note back.
    pub fn render(&self) -> String {
        let front = toml::to_string(&self.front).expect("front matter is always serializable");
        let mut out = String::new();
        let _ = writeln!(out, "{FENCE}");
        out.push_str(&front);
        if !front.ends_with('\n') {
            out.push('\n');
        }
        let _ = writeln!(out, "{FENCE}");
        out.push('\n');
        out.push_str(self.body.trim());
        out.push('\n');
        out
    }

    /// The text that retrieval matches: title and body.
    pub fn search_text(&self) -> String {
        format!("{}\n{}", self.front.title, self.body)
    }
}

/// A slug from a title: lowercase ASCII words joined by `-`, at most 60 characters (`note`
/// when nothing is left).
pub fn slugify(title: &str) -> String {
    let mut slug = String::new();
    for word in title.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()) {
        if slug.len() + word.len() + 1 > 60 {
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(&word.to_ascii_lowercase());
    }
    if slug.is_empty() { "note".into() } else { slug }
}

/// Whether `slug` is one sift would write (so a name from the command line cannot leave
/// `.sift/memory/`).
pub fn valid_slug(slug: &str) -> bool {
    !slug.is_empty()
        && slug.len() <= 100
        && slug.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !slug.starts_with('-')
}

/// A title from a note's text when none is given: its first line, cut at 80 characters.
pub fn title_from(text: &str) -> String {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("note");
    let first = first.trim_start_matches('#').trim();
    if first.chars().count() <= 80 {
        first.to_string()
    } else {
        let cut: String = first.chars().take(77).collect();
        format!("{}...", cut.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Note {
        Note {
            slug: "writer-lock".into(),
            front: Front {
                title: "Index updates take the writer lock first".into(),
                scope: vec!["indexer/**".into()],
                created: "2026-12-01".into(),
                updated: "2026-12-02".into(),
                author: Author::Agent,
                origin: Some("task: batch the watcher".into()),
                citations: vec![
                    Citation {
                        path: "indexer/src/update.rs".into(),
                        lines: Some("234-260".into()),
                        symbol: Some("CodeIndex.update".into()),
                        hash: "b3:0123456789abcdef".into(),
                    },
                    Citation {
                        path: "README.md".into(),
                        lines: Some("3".into()),
                        symbol: None,
                        hash: "b3:fedcba9876543210".into(),
                    },
                ],
                other: toml::Table::new(),
            },
            body: "Every update goes through `CodeIndex::update`.\n\nIt takes the lock.".into(),
        }
    }

    #[test]
    fn a_note_survives_render_and_parse() {
        let note = sample();
        let text = note.render();
        assert!(text.starts_with("+++\n"), "{text}");
        assert!(text.contains("[[cite]]"), "{text}");
        assert_eq!(Note::parse("writer-lock", &text).unwrap(), note);
    }

    #[test]
    fn unknown_fields_of_a_newer_sift_are_kept() {
        let mut text = sample().render();
        text = text.replacen("author = ", "confidence = 0.9\nauthor = ", 1);
        let note = Note::parse("writer-lock", &text).unwrap();
        assert_eq!(note.front.other.get("confidence").and_then(|v| v.as_float()), Some(0.9));
        assert!(note.render().contains("confidence = 0.9"));
    }

    #[test]
    fn hand_written_notes_parse_and_broken_ones_say_why() {
        let text = "+++\r\ntitle = \"t\"\r\ncreated = \"2026-01-01\"\r\nupdated = \"2026-01-01\"\r\nauthor = \"user\"\r\n+++\r\nBody\r\n";
        let note = Note::parse("t", text).unwrap();
        assert_eq!(note.body, "Body");
        assert!(note.front.citations.is_empty());

        let err = |text: &str| Note::parse("x", text).unwrap_err().reason;
        assert!(err("title = 1").contains("first line"));
        assert!(err("+++\ntitle = \"t\"\n").contains("closing"));
        assert!(err("+++\ntitle = \"t\"\n+++\n").contains("front matter"), "missing fields");
        let bad_lines = "+++\ntitle = \"t\"\ncreated = \"d\"\nupdated = \"d\"\nauthor = \"user\"\n[[cite]]\npath = \"a.rs\"\nlines = \"9-2\"\nhash = \"b3:0\"\n+++\n";
        assert!(err(bad_lines).contains("lines must be"), "{}", err(bad_lines));
        let bad_author =
            "+++\ntitle = \"t\"\ncreated = \"d\"\nupdated = \"d\"\nauthor = \"bot\"\n+++\n";
        assert!(err(bad_author).contains("front matter"));
    }

    #[test]
    fn slugs_stay_inside_the_folder() {
        assert_eq!(
            slugify("Index updates: take the LOCK first!"),
            "index-updates-take-the-lock-first"
        );
        assert_eq!(slugify("¿¡!"), "note");
        assert!(slugify(&"word ".repeat(40)).len() <= 60);
        assert!(valid_slug("a-b-1"));
        for bad in ["", "../x", "a/b", "A", "-x", "a.md"] {
            assert!(!valid_slug(bad), "{bad}");
        }
        assert_eq!(title_from("\n# Heading here\nmore"), "Heading here");
        assert_eq!(parse_lines("4"), Some((4, 4)));
        assert_eq!(parse_lines("0-3"), None);
        assert_eq!(format_lines(3, 3), "3");
    }
}
