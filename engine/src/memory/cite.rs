//! Citations against code: the definitions of a file as tree-sitter sees them, a symbol's
//! span, the hash of cited text, and where a citation's text is now.
//!
//! The hash is taken over the cited text *normalised*: line endings, trailing whitespace,
//! blank lines at either end and the indentation common to all lines do not count. So a
//! function moved into a class (re-indented) or to another file keeps its hash, and any change
//! of a token inside it changes the hash.

use std::path::Path;

use sift_indexer::chunk::Chunker;

/// One definition of a file: a name, what encloses it, and its whole lines (1-based,
/// inclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// The defined name.
    pub name: String,
    /// The enclosing class, impl, trait or module, for members.
    pub container: Option<String>,
    /// `function`, `method`, `class`… (the chunker's kinds).
    pub kind: &'static str,
    /// First line, 1-based.
    pub start: usize,
    /// Last line, 1-based, inclusive.
    pub end: usize,
}

impl Definition {
    /// `Container.name` or `name`.
    pub fn qualified(&self) -> String {
        match &self.container {
            Some(c) => format!("{c}.{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// The definitions of a file, whole, from one parse ([`Chunker::definitions`]): top-level
/// ones and every member of every container (with its container's name), each with its full
/// span. Empty for files without a grammar.
pub fn definitions(rel: &str, text: &str) -> Vec<Definition> {
    to_definitions(Chunker::default().definitions(Path::new(rel), text))
}

/// [`Definition`]s from what [`Chunker::definitions`] returns (duplicates dropped).
pub fn to_definitions(chunks: impl IntoIterator<Item = sift_indexer::Chunk>) -> Vec<Definition> {
    let mut out: Vec<Definition> = Vec::new();
    for c in chunks {
        let Some(name) = c.symbol else { continue };
        let d = Definition {
            name,
            container: c.container,
            kind: c.kind.as_str(),
            start: c.start_row + 1,
            end: c.end_row + 1,
        };
        if !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

/// `name`, `Container.name` or `Container::name` split into (container, name).
pub fn split_symbol(symbol: &str) -> (Option<&str>, &str) {
    let cut = symbol.rfind("::").map(|i| (i, 2)).or_else(|| symbol.rfind('.').map(|i| (i, 1)));
    match cut {
        Some((i, len)) if i > 0 && i + len < symbol.len() => {
            (Some(&symbol[..i]), &symbol[i + len..])
        }
        _ => (None, symbol),
    }
}

/// The definitions in `defs` that `symbol` names (a container, when given, must match the last
/// segment of the member's container).
pub fn matching<'d>(defs: &'d [Definition], symbol: &str) -> Vec<&'d Definition> {
    let (container, name) = split_symbol(symbol);
    let container = container.map(|c| c.rsplit(['.', ':']).next().unwrap_or(c));
    defs.iter()
        .filter(|d| d.name == name)
        .filter(|d| match container {
            None => true,
            Some(c) => d.container.as_deref().is_some_and(|dc| {
                dc == c || dc.rsplit(['.', ':', ' ', '<']).find(|s| !s.is_empty()) == Some(c)
            }),
        })
        .collect()
}

/// Lines `start..=end` (1-based) of `text`, or `None` when the file is shorter.
pub fn lines_of(text: &str, start: usize, end: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    if start == 0 || end < start || end > lines.len() {
        return None;
    }
    Some(lines[start - 1..end].join("\n"))
}

/// `b3:` and the first 16 hex digits of the BLAKE3 hash of `text` normalised (see the module
/// documentation).
pub fn text_hash(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let first = lines.iter().position(|l| !l.is_empty());
    let last = lines.iter().rposition(|l| !l.is_empty());
    let mut hasher = blake3::Hasher::new();
    if let (Some(first), Some(last)) = (first, last) {
        let body = &lines[first..=last];
        let indent = body
            .iter()
            .filter(|l| !l.is_empty())
            .map(|l| l.len() - l.trim_start().len())
            .min()
            .unwrap_or(0);
        for line in body {
            hasher.update(line.get(indent..).unwrap_or("").as_bytes());
            hasher.update(b"\n");
        }
    }
    let hex = hasher.finalize().to_hex();
    format!("b3:{}", &hex[..16])
}

/// Where a citation's text is in one file's current text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    /// At these lines, with this hash (equal to the note's or not).
    At {
        /// First line, 1-based.
        start: usize,
        /// Last line, 1-based, inclusive.
        end: usize,
        /// The hash of what is there now.
        hash: String,
    },
    /// The symbol is not defined in this file.
    NoSymbol,
    /// The symbol is defined several times here and none has the cited text.
    Ambiguous(Vec<(usize, usize)>),
    /// Neither the lines nor a block with the cited text are there.
    LinesGone,
}

/// Looks a citation up in one file: the symbol first (the definition whose text still hashes
/// as cited, else the only one, else the one nearest the line hint); without a symbol the
/// cited lines, else a block of as many lines with the cited hash anywhere in the file.
pub fn locate(
    rel: &str,
    text: &str,
    symbol: Option<&str>,
    hint: Option<(usize, usize)>,
    hash: &str,
) -> Located {
    let defs = if symbol.is_some() { definitions(rel, text) } else { Vec::new() };
    locate_among(text, &defs, symbol, hint, hash)
}

/// [`locate`] with the file's [`definitions`] already at hand (`defs` is only looked at when
/// there is a symbol).
pub fn locate_among(
    text: &str,
    defs: &[Definition],
    symbol: Option<&str>,
    hint: Option<(usize, usize)>,
    hash: &str,
) -> Located {
    if let Some(symbol) = symbol {
        let found = matching(defs, symbol);
        let at = |d: &Definition| Located::At {
            start: d.start,
            end: d.end,
            hash: lines_of(text, d.start, d.end).map(|t| text_hash(&t)).unwrap_or_default(),
        };
        let hashed: Vec<Located> = found.iter().map(|d| at(d)).collect();
        if let Some(same) =
            hashed.iter().find(|l| matches!(l, Located::At { hash: h, .. } if h == hash))
        {
            return same.clone();
        }
        return match found.len() {
            0 => Located::NoSymbol,
            1 => hashed.into_iter().next().expect("one"),
            _ => match hint {
                Some((start, _)) => {
                    let nearest =
                        found.iter().min_by_key(|d| d.start.abs_diff(start)).expect("several");
                    at(nearest)
                }
                None => Located::Ambiguous(found.iter().map(|d| (d.start, d.end)).collect()),
            },
        };
    }
    let Some((start, end)) = hint else { return Located::LinesGone };
    if let Some(now) = lines_of(text, start, end) {
        let now = text_hash(&now);
        if now == hash {
            return Located::At { start, end, hash: now };
        }
    }
    // Moved within the file: the same number of lines with the cited hash, nearest first.
    let len = end - start;
    let total = text.lines().count();
    let mut best: Option<usize> = None;
    for s in 1..=total.saturating_sub(len) {
        if lines_of(text, s, s + len).is_some_and(|t| text_hash(&t) == hash)
            && best.is_none_or(|b| s.abs_diff(start) < b.abs_diff(start))
        {
            best = Some(s);
        }
    }
    match best {
        Some(s) => Located::At { start: s, end: s + len, hash: hash.to_string() },
        None => match lines_of(text, start, end) {
            Some(now) => Located::At { start, end, hash: text_hash(&now) },
            None => Located::LinesGone,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PY: &str = "import os\n\n\ndef top(a):\n    return a + 1\n\n\nclass Cache:\n    \"\"\"A cache.\"\"\"\n\n    def get(self, key):\n        return self.d[key]\n\n    def put(self, key, value):\n        self.d[key] = value\n";

    #[test]
    fn definitions_cover_top_level_and_members_whole() {
        let defs = definitions("m.py", PY);
        let names: Vec<String> =
            defs.iter().map(|d| format!("{} {}-{}", d.qualified(), d.start, d.end)).collect();
        assert!(names.contains(&"top 4-5".to_string()), "{names:?}");
        assert!(names.contains(&"Cache 8-15".to_string()), "{names:?}");
        assert!(names.contains(&"Cache.get 11-12".to_string()), "{names:?}");
        assert!(names.contains(&"Cache.put 14-15".to_string()), "{names:?}");
        assert!(definitions("notes.txt", PY).is_empty());
    }

    #[test]
    fn symbols_match_with_or_without_their_container() {
        let defs = definitions("m.py", PY);
        assert_eq!(matching(&defs, "get").len(), 1);
        assert_eq!(matching(&defs, "Cache.get").len(), 1);
        assert_eq!(matching(&defs, "Cache::get").len(), 1);
        assert!(matching(&defs, "Other.get").is_empty());
        assert_eq!(split_symbol("a::b::c"), (Some("a::b"), "c"));
        assert_eq!(split_symbol(".x"), (None, ".x"));
    }

    #[test]
    fn the_hash_ignores_layout_but_not_tokens() {
        let a = text_hash("def f():\n    return 1\n");
        assert_eq!(a, text_hash("\n    def f():  \r\n        return 1\n\n"));
        assert_ne!(a, text_hash("def f():\n    return 2\n"));
        assert_ne!(a, text_hash("def f():\nreturn 1\n"), "relative indentation counts");
        assert!(a.starts_with("b3:") && a.len() == 19);
    }

    #[test]
    fn lines_are_found_again_after_moving_within_the_file() {
        let text = "a\nb\nc\nd\n";
        let hash = text_hash("b\nc");
        assert_eq!(
            locate("x.txt", text, None, Some((2, 3)), &hash),
            Located::At { start: 2, end: 3, hash: hash.clone() }
        );
        let moved = "new\nnew\na\nb\nc\nd\n";
        assert_eq!(
            locate("x.txt", moved, None, Some((2, 3)), &hash),
            Located::At { start: 4, end: 5, hash: hash.clone() }
        );
        let changed = "a\nB\nc\nd\n";
        assert!(matches!(
            locate("x.txt", changed, None, Some((2, 3)), &hash),
            Located::At { hash: h, .. } if h != hash
        ));
        assert_eq!(locate("x.txt", "a\n", None, Some((2, 3)), &hash), Located::LinesGone);
    }
}
