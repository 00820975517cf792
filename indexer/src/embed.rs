//! What the index needs from an embedding model, and what it gives one.
//!
//! The indexer owns the [`Embedder`] trait; the models themselves (onnxruntime through `ort`,
//! static token tables) live in `sift-runtime`. Every chunk is embedded from one text, made by
//! [`embed_text`] from its path, symbol and content; [`chunk_key`] hashes that text, and the
//! vector cache is keyed by it, so unchanged chunks (after a branch switch, a revert, a rename
//! back) are never embedded twice.

/// Whether a text is a search query or a chunk of code (some models embed them differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// A search query.
    Query,
    /// A chunk of a file.
    Document,
}

/// An embedding model. Implementations must be deterministic: the same text gives the same
/// vector, so vectors can be cached by content.
pub trait Embedder: Send + Sync {
    /// A stable identity of the model and of everything that changes its vectors (weights,
    /// pooling, token budget). Stored with the vectors; a different id means re-embedding.
    fn id(&self) -> &str;
    /// Number of dimensions of every vector.
    fn dim(&self) -> usize;
    /// Embeds `texts`; one L2-normalised vector of [`Embedder::dim`] numbers per text.
    fn embed(&self, texts: &[&str], kind: TextKind) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// A model failed to embed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EmbedError(pub String);

/// Embeds documents, checking that the model gave one vector per text.
pub(crate) fn embed_documents(
    embedder: &dyn Embedder,
    texts: &[&str],
) -> crate::Result<Vec<Vec<f32>>> {
    let vectors = embedder
        .embed(texts, TextKind::Document)
        .map_err(|e| crate::Error::Embedding(e.to_string()))?;
    if vectors.len() != texts.len() {
        return Err(crate::Error::Embedding(format!(
            "the model gave {} vectors for {} texts",
            vectors.len(),
            texts.len()
        )));
    }
    Ok(vectors)
}

/// At most this many bytes of a chunk's content go into its embedding text. Models truncate to
/// their own token budgets; this bounds the tokenizer's work on huge chunks.
pub const EMBED_TEXT_MAX_BYTES: usize = 4096;

/// The text a chunk is embedded from: where it is and what it defines, then its content with
/// identifiers split into words (`parseConfigFile` → `parse config file`), which word-piece
/// vocabularies of general-purpose models understand far better than the raw spelling.
pub fn embed_text(
    path: &str,
    symbol: Option<&str>,
    container: Option<&str>,
    content: &str,
) -> String {
    let mut head = String::with_capacity(128);
    head.push_str(&words(path));
    for name in [container, symbol].into_iter().flatten() {
        head.push_str(" . ");
        head.push_str(&words(name));
    }
    let mut end = content.len().min(EMBED_TEXT_MAX_BYTES);
    while !content.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = head;
    out.push('\n');
    out.push_str(&words(&content[..end]));
    out
}

/// A text's words as the code tokenizer splits them, lower-cased, parts only (identifiers are
/// kept as their parts; the whole forms the lexical index keeps are left out).
fn words(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in split_words(text) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&word);
    }
    out
}

/// Splits `text` into lower-cased words: identifiers at case changes (`HTTPResult` → `http`,
/// `result`), underscores and digits; punctuation dropped.
fn split_words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).filter(|s| !s.is_empty()).flat_map(split_ident)
}

fn split_ident(ident: &str) -> Vec<String> {
    let chars: Vec<char> = ident.chars().collect();
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (prev, cur) = (chars[i - 1], chars[i]);
        let next_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
        let boundary = (prev.is_lowercase() && cur.is_uppercase())
            || (prev.is_uppercase() && cur.is_uppercase() && next_lower)
            || (prev.is_ascii_digit() != cur.is_ascii_digit());
        if boundary {
            parts.push(chars[start..i].iter().collect::<String>().to_lowercase());
            start = i;
        }
    }
    parts.push(chars[start..].iter().collect::<String>().to_lowercase());
    parts
}

/// Bump when [`embed_text`] changes what it makes of a chunk: every key changes with it, so
/// every chunk is embedded again.
const EMBED_TEXT_VERSION: u8 = 1;

/// The cache key of a chunk's embedding text: the first 8 bytes of a BLAKE3 hash of what
/// [`embed_text`] makes it from (hashing the parts is much cheaper than building the text, and
/// the lexical indexer computes a key for every chunk it writes).
pub fn chunk_key(path: &str, symbol: Option<&str>, container: Option<&str>, content: &str) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(&[EMBED_TEXT_VERSION]);
    for part in [Some(path), symbol, container] {
        match part {
            Some(p) => {
                h.update(&(p.len() as u64 + 1).to_le_bytes());
                h.update(p.as_bytes());
            }
            None => {
                h.update(&0u64.to_le_bytes());
            }
        }
    }
    h.update(content.as_bytes());
    let hash = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    u64::from_le_bytes(first)
}

/// Directories whose code is not the project's own (or is tests): embedded after everything else.
const LATER_DIRS: &[&str] = &[
    "vendor",
    "third_party",
    "third-party",
    "external",
    "deps",
    "node_modules",
    "site-packages",
    "test",
    "tests",
    "testing",
    "__tests__",
    "fixtures",
    "testdata",
    "examples",
    "locale",
    "locales",
    "i18n",
    "docs",
];

/// Which chunks an embedding pass gives a vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// Every chunk.
    #[default]
    All,
    /// Every chunk but what natural-language ranking leaves aside ([`crate::aside`]:
    /// translation catalogs, lock files, minified, vendored and generated code), which is
    /// marked as left out: what a slow model (the progressive upgrade) embeds. On Django the
    /// catalogs alone are 38 % of the chunks; all of it stays searchable by its words.
    NoAside,
}

/// Whether a chunk is part of a translation catalog: a text file (not code) under a
/// translations directory, such as gettext's `locale/de/LC_MESSAGES/django.po`.
pub fn is_translation(path: &str, language: &str) -> bool {
    crate::aside::classify(path, language, "", false) == Some(crate::aside::Aside::Translation)
}

fn is_code(language: &str) -> bool {
    !crate::aside::is_text(language)
}

/// Order in which chunks are embedded: lower first. First-party source code, then other text
/// files, then tests, vendored code and translations.
pub fn priority(path: &str, language: &str) -> u8 {
    let later = path.split('/').any(|part| LATER_DIRS.contains(&part));
    match (later, is_code(language)) {
        (false, true) => 0,
        (false, false) => 1,
        (true, true) => 2,
        (true, false) => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embed_text_splits_identifiers_and_names_the_place() {
        let text = embed_text(
            "src/config/loader.rs",
            Some("parseConfigFile"),
            Some("ConfigLoader"),
            "fn parseConfigFile(path: &Path) -> HTTPResult<()> { read_to_string(path) }",
        );
        let (head, body) = text.split_once('\n').unwrap();
        assert_eq!(head, "src config loader rs . config loader . parse config file");
        assert!(body.starts_with("fn parse config file path path http result"), "{body}");
        assert_eq!(split_ident("utf8Decoder2"), ["utf", "8", "decoder", "2"]);
        assert!(body.contains("read to string"), "{body}");
    }

    #[test]
    fn embed_text_cuts_huge_content_on_a_char_boundary() {
        let content = "é".repeat(EMBED_TEXT_MAX_BYTES);
        let text = embed_text("a.txt", None, None, &content);
        assert!(text.len() <= EMBED_TEXT_MAX_BYTES + 16);
    }

    #[test]
    fn keys_follow_the_text() {
        let key = |p, s, c, t| chunk_key(p, s, c, t);
        assert_eq!(key("a.rs", Some("f"), None, "x"), key("a.rs", Some("f"), None, "x"));
        assert_ne!(key("a.rs", Some("f"), None, "x"), key("a.rs", Some("f"), None, "y"));
        assert_ne!(key("a.rs", Some("f"), None, "x"), key("a.rs", None, Some("f"), "x"));
        assert_ne!(key("a.rs", Some("f"), None, "x"), key("b.rs", Some("f"), None, "x"));
    }

    #[test]
    fn first_party_code_comes_first() {
        assert!(priority("src/lib.rs", "rust") < priority("README.md", "markdown"));
        assert!(priority("README.md", "markdown") < priority("tests/a.rs", "rust"));
        assert!(
            priority("vendor/x/y.go", "go") < priority("locale/de/LC_MESSAGES/django.po", "text")
        );
    }
}
