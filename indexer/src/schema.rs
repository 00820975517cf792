//! The index's tantivy schema: its fields, and how each is indexed and stored.

use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};

use crate::tokenizer::CODE_TOKENIZER;

/// The fields of the tantivy schema.
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    /// Relative path, untokenized: for deletes and exact filters. Stored.
    pub path: Field,
    /// Path split into words, for matching.
    pub path_words: Field,
    /// Language or text label. Stored.
    pub lang: Field,
    /// Chunk kind. Stored.
    pub kind: Field,
    /// Symbol name. Indexed with the code tokenizer and stored.
    pub symbol: Field,
    /// Enclosing symbol's name. Indexed and stored.
    pub container: Field,
    /// Enclosing symbol's kind. Stored.
    pub container_kind: Field,
    /// The chunk's text. Indexed and stored.
    pub content: Field,
    /// First line, 1-based. Stored.
    pub start_line: Field,
    /// Last line, 1-based, inclusive. Stored.
    pub end_line: Field,
    /// The chunk's key in the vector cache ([`crate::embed::chunk_key`] of its embedding
    /// text). Fast field.
    pub key: Field,
}

/// sift's tantivy schema and its fields.
pub(crate) fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let code = |stored: bool| {
        let indexing = TextFieldIndexing::default()
            .set_tokenizer(CODE_TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqs);
        let opts = TextOptions::default().set_indexing_options(indexing);
        if stored { opts.set_stored() } else { opts }
    };
    let fields = Fields {
        path: b.add_text_field("path", STRING | STORED),
        path_words: b.add_text_field("path_words", code(false)),
        lang: b.add_text_field("lang", STRING | STORED),
        kind: b.add_text_field("kind", STRING | STORED),
        symbol: b.add_text_field("symbol", code(true)),
        container: b.add_text_field("container", code(true)),
        container_kind: b.add_text_field("container_kind", STORED),
        content: b.add_text_field("content", code(true)),
        start_line: b.add_u64_field("start_line", STORED | INDEXED),
        end_line: b.add_u64_field("end_line", STORED),
        key: b.add_u64_field("key", FAST),
    };
    (b.build(), fields)
}
