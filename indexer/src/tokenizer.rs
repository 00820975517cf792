//! A code-aware tokenizer: splits identifiers the way programmers read them.
//!
//! Every alphanumeric run (`[A-Za-z0-9_]` plus other Unicode alphanumerics) is emitted whole,
//! lowercased, so `getUserName` and `get_user_name` can be found by their exact spelling. When
//! the run has parts (camelCase humps, `snake_case` or `kebab` segments, `HTTPServer` acronyms),
//! each part is emitted too: `getUserName` → `getusername`, `get`, `user`, `name`. Paths split on
//! every separator, so `src/net/http_client.rs` yields `src`, `net`, `http_client`, `http`,
//! `client`, `rs`.
//!
//! The same tokenizer analyses documents and queries, so a query spelled either way meets the
//! code spelled either way.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// Tokens longer than this (in bytes) are dropped: they are hashes, base64 or minified noise.
pub const MAX_TOKEN_BYTES: usize = 96;

/// The name under which [`CodeTokenizer`] is registered in the tantivy index.
pub const CODE_TOKENIZER: &str = "sift_code";

/// A tantivy tokenizer for source code; see the module documentation.
#[derive(Clone, Default)]
pub struct CodeTokenizer {
    token: Token,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        self.token.reset();
        CodeTokenStream {
            text,
            cursor: 0,
            word: None,
            parts: Vec::new(),
            next_part: 0,
            position: 0,
            token: &mut self.token,
        }
    }
}

/// The stream returned by [`CodeTokenizer`].
pub struct CodeTokenStream<'a> {
    text: &'a str,
    cursor: usize,
    /// The current word's byte range, while its parts are being emitted.
    word: Option<(usize, usize)>,
    /// Byte ranges (absolute) of the current word's parts; empty when it has only one part.
    parts: Vec<(usize, usize)>,
    next_part: usize,
    position: usize,
    token: &'a mut Token,
}

fn is_word_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

impl CodeTokenStream<'_> {
    fn emit(&mut self, from: usize, to: usize) {
        let slice = &self.text[from..to];
        self.token.text.clear();
        if slice.is_ascii() {
            self.token.text.push_str(slice);
            self.token.text.make_ascii_lowercase();
        } else {
            for c in slice.chars() {
                self.token.text.extend(c.to_lowercase());
            }
        }
        light_stem(&mut self.token.text);
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token.position = self.position;
        self.token.position_length = 1;
        self.position += 1;
    }

    /// Finds the next word at or after the cursor; returns its byte range.
    fn next_word(&mut self) -> Option<(usize, usize)> {
        let bytes = self.text.as_bytes();
        loop {
            // Skip separators quickly on ASCII, carefully on the rest.
            while self.cursor < bytes.len() {
                let b = bytes[self.cursor];
                if b < 0x80 {
                    if b == b'_' || b.is_ascii_alphanumeric() {
                        break;
                    }
                    self.cursor += 1;
                } else {
                    let c = self.text[self.cursor..].chars().next().unwrap_or(' ');
                    if is_word_char(c) {
                        break;
                    }
                    self.cursor += c.len_utf8();
                }
            }
            if self.cursor >= bytes.len() {
                return None;
            }
            let start = self.cursor;
            while self.cursor < bytes.len() {
                let b = bytes[self.cursor];
                if b < 0x80 {
                    if b == b'_' || b.is_ascii_alphanumeric() {
                        self.cursor += 1;
                    } else {
                        break;
                    }
                } else {
                    let c = self.text[self.cursor..].chars().next().unwrap_or(' ');
                    if is_word_char(c) {
                        self.cursor += c.len_utf8();
                    } else {
                        break;
                    }
                }
            }
            let end = self.cursor;
            // A word made only of underscores carries nothing.
            if self.text[start..end].bytes().all(|b| b == b'_') || end - start > MAX_TOKEN_BYTES {
                continue;
            }
            return Some((start, end));
        }
    }
}

/// Folds English plurals so a query for `files` meets `file` and `chunks` meets `chunk`: a
/// final `ies` becomes `y` and a final `s` goes, on words of four letters or more that do not end
/// in `ss`, `us` or `is` (`class`, `status`, `analysis` stay). Applied to documents and queries
/// alike, so exact identifiers still meet each other.
pub fn light_stem(word: &mut String) {
    let b = word.as_bytes();
    let n = b.len();
    if n < 4 || b[n - 1] != b's' || !b.is_ascii() {
        return;
    }
    if word.ends_with("ies") && n > 4 {
        word.truncate(n - 3);
        word.push('y');
    } else if !(word.ends_with("ss") || word.ends_with("us") || word.ends_with("is")) {
        word.truncate(n - 1);
    }
}

/// Splits an identifier into its parts (absolute byte ranges, offset by `base`).
///
/// Rules: `_` separates; a lower-case letter or digit followed by an upper-case letter starts a
/// new part (`getUser` → `get`, `User`); in a run of capitals, the last capital starts a new part
/// when a lower-case letter follows (`HTTPServer` → `HTTP`, `Server`). Digits stay with the
/// letters before them (`utf8`, `sha256`).
pub fn split_identifier(word: &str, base: usize, out: &mut Vec<(usize, usize)>) {
    out.clear();
    if word.is_ascii() {
        split_ascii(word.as_bytes(), base, out);
    } else {
        split_unicode(word, base, out);
    }
    if out.len() == 1 {
        out.clear();
    }
}

/// [`split_identifier`] for ASCII words (nearly all code): the same rules on bytes, without
/// decoding characters or allocating.
fn split_ascii(word: &[u8], base: usize, out: &mut Vec<(usize, usize)>) {
    let mut part_start: Option<usize> = None;
    for (i, &c) in word.iter().enumerate() {
        if c == b'_' {
            if let Some(s) = part_start.take() {
                out.push((base + s, base + i));
            }
            continue;
        }
        if let Some(s) = part_start {
            let boundary = c.is_ascii_uppercase() && {
                let prev = word[i - 1];
                prev.is_ascii_lowercase()
                    || prev.is_ascii_digit()
                    || (prev.is_ascii_uppercase()
                        && word.get(i + 1).is_some_and(|n| n.is_ascii_lowercase()))
            };
            if boundary {
                out.push((base + s, base + i));
                part_start = Some(i);
            }
        } else {
            part_start = Some(i);
        }
    }
    if let Some(s) = part_start {
        out.push((base + s, base + word.len()));
    }
}

/// [`split_identifier`] for words with non-ASCII letters.
fn split_unicode(word: &str, base: usize, out: &mut Vec<(usize, usize)>) {
    let mut part_start: Option<usize> = None;
    let mut prev: Option<char> = None;
    let mut chars = word.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        if c == '_' {
            if let Some(s) = part_start.take() {
                out.push((base + s, base + at));
            }
            prev = Some(c);
            continue;
        }
        if let Some(s) = part_start {
            let p = prev.unwrap_or(' ');
            let boundary = c.is_uppercase()
                && (p.is_lowercase()
                    || p.is_ascii_digit()
                    || (p.is_uppercase() && next.is_some_and(|n| n.is_lowercase())));
            if boundary {
                out.push((base + s, base + at));
                part_start = Some(at);
            }
        } else {
            part_start = Some(at);
        }
        prev = Some(c);
    }
    if let Some(s) = part_start {
        out.push((base + s, base + word.len()));
    }
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if self.word.is_some() && self.next_part < self.parts.len() {
            let (from, to) = self.parts[self.next_part];
            self.next_part += 1;
            self.emit(from, to);
            return true;
        }
        self.word = None;
        match self.next_word() {
            Some((start, end)) => {
                self.word = Some((start, end));
                let mut parts = std::mem::take(&mut self.parts);
                split_identifier(&self.text[start..end], start, &mut parts);
                self.parts = parts;
                self.next_part = 0;
                self.emit(start, end);
                true
            }
            None => false,
        }
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

/// Runs the tokenizer over `text` and collects the token texts (for queries and tests).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut tokenizer = CodeTokenizer::default();
    let mut stream = tokenizer.token_stream(text);
    let mut out = Vec::new();
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(text: &str, expected: &[&str]) {
        assert_eq!(tokenize(text), expected, "tokens of {text:?}");
    }

    #[test]
    fn camel_case_keeps_whole_and_parts() {
        check("getUserName", &["getusername", "get", "user", "name"]);
    }

    #[test]
    fn plurals_fold_to_the_singular() {
        check("chunks files entries", &["chunk", "file", "entry"]);
        check("class status analysis bus its", &["class", "status", "analysis", "bus", "its"]);
        check("getUsers", &["getuser", "get", "user"]);
    }

    #[test]
    fn snake_case_and_screaming_case() {
        check("parse_config_file", &["parse_config_file", "parse", "config", "file"]);
        check("MAX_RETRIES", &["max_retry", "max", "retry"]);
        check("__init__", &["__init__"]);
    }

    #[test]
    fn acronyms_and_digits() {
        check("HTTPServer", &["httpserver", "http", "server"]);
        check("parseJSON2XML", &["parsejson2xml", "parse", "json2", "xml"]);
        check("sha256sum", &["sha256sum"]);
        check("utf8Decode", &["utf8decode", "utf8", "decode"]);
    }

    #[test]
    fn paths_split_on_separators() {
        check("src/net/http_client.rs", &["src", "net", "http_client", "http", "client", "rs"]);
    }

    #[test]
    fn punctuation_and_operators_are_separators() {
        check("a->b::c(d, e)", &["a", "b", "c", "d", "e"]);
        check("x-frame-options", &["x", "frame", "option"]);
    }

    #[test]
    fn non_ascii_is_lowercased_and_kept() {
        check("Größe café", &["größe", "café"]);
        check("日本語 テスト", &["日本語", "テスト"]);
    }

    #[test]
    fn long_tokens_and_underscore_runs_are_dropped() {
        let long = "a".repeat(MAX_TOKEN_BYTES + 1);
        check(&format!("keep {long} ___ this"), &["keep", "this"]);
    }

    #[test]
    fn offsets_point_into_the_original_text() {
        let mut tokenizer = CodeTokenizer::default();
        let text = "let fooBar = 1;";
        let mut stream = tokenizer.token_stream(text);
        let mut seen = Vec::new();
        while stream.advance() {
            let t = stream.token();
            seen.push((t.text.clone(), &text[t.offset_from..t.offset_to], t.position));
        }
        assert_eq!(
            seen,
            vec![
                ("let".to_string(), "let", 0),
                ("foobar".to_string(), "fooBar", 1),
                ("foo".to_string(), "foo", 2),
                ("bar".to_string(), "Bar", 3),
                ("1".to_string(), "1", 4),
            ]
        );
    }

    #[test]
    fn ascii_fast_path_splits_as_the_unicode_rules_do() {
        // Every word of up to five characters over an alphabet that exercises each rule.
        let alphabet = ['a', 'b', 'X', 'Y', '1', '_'];
        let mut words = vec![String::new()];
        for _ in 0..5 {
            let longer: Vec<String> = words
                .iter()
                .flat_map(|w| alphabet.iter().map(move |c| format!("{w}{c}")))
                .collect();
            words.extend(longer);
        }
        words.extend(
            ["getHTTPResponse", "parseJSON2XML", "__init__", "ABCdef", "x_Y_z"].map(String::from),
        );
        let (mut fast, mut slow) = (Vec::new(), Vec::new());
        for word in &words {
            fast.clear();
            split_ascii(word.as_bytes(), 7, &mut fast);
            slow.clear();
            split_unicode(word, 7, &mut slow);
            assert_eq!(fast, slow, "parts of {word:?}");
        }
    }

    #[test]
    fn empty_and_separator_only_inputs_give_nothing() {
        check("", &[]);
        check("  ->  {}  ", &[]);
    }
}
