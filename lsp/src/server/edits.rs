//! The engine's edits in LSP shapes: a [`FileEdit`]'s byte ranges as `TextEdit`s in the
//! negotiated position encoding, and a whole pending change as one `WorkspaceEdit` whose every
//! part carries a change annotation that asks the user to confirm.

use std::collections::HashMap;

use sift_engine::edit::FileEdit;
use tower_lsp_server::ls_types::*;

use super::position::{Encoding, LineIndex};

/// One file's part of a change, with the document's version when it is open.
pub enum DocChange {
    /// Edits of an existing document (`text` is what they apply to).
    Modify {
        /// The document.
        uri: Uri,
        /// Its version, when open.
        version: Option<i32>,
        /// Its text now.
        text: String,
        /// The edits.
        edit: FileEdit,
    },
    /// A new file with this text.
    Create {
        /// The file.
        uri: Uri,
        /// Its text.
        text: String,
    },
    /// A removed file.
    Delete {
        /// The file.
        uri: Uri,
    },
}

/// `edit`'s byte ranges over `text` as LSP edits (the ranges were checked against `text` by
/// the caller; one that does not fit is clamped to the text, never a panic).
pub fn text_edits(text: &str, edit: &FileEdit, enc: Encoding) -> Vec<TextEdit> {
    let index = LineIndex::new(text);
    edit.edits
        .iter()
        .map(|e| {
            let start = index.position(text, e.start_byte.min(text.len()), enc);
            let end = index.position(text, e.end_byte.min(text.len()), enc);
            TextEdit::new(Range::new(start, end), e.replacement.clone())
        })
        .collect()
}

/// The change as one `WorkspaceEdit` (document changes and file operations, in order), every
/// part annotated with `annotation` under `id`.
pub fn workspace_edit(
    changes: Vec<DocChange>,
    id: &str,
    annotation: ChangeAnnotation,
    enc: Encoding,
) -> WorkspaceEdit {
    let annotated = |edits: Vec<TextEdit>| -> Vec<OneOf<TextEdit, AnnotatedTextEdit>> {
        edits
            .into_iter()
            .map(|text_edit| {
                OneOf::Right(AnnotatedTextEdit { text_edit, annotation_id: id.into() })
            })
            .collect()
    };
    let mut ops = Vec::new();
    for change in changes {
        match change {
            DocChange::Modify { uri, version, text, edit } => {
                ops.push(DocumentChangeOperation::Edit(TextDocumentEdit {
                    text_document: OptionalVersionedTextDocumentIdentifier { uri, version },
                    edits: annotated(text_edits(&text, &edit, enc)),
                }));
            }
            DocChange::Create { uri, text } => {
                ops.push(DocumentChangeOperation::Op(ResourceOp::Create(CreateFile {
                    uri: uri.clone(),
                    options: Some(CreateFileOptions {
                        overwrite: Some(false),
                        ignore_if_exists: Some(false),
                    }),
                    annotation_id: Some(id.into()),
                })));
                let insert =
                    TextEdit::new(Range::new(Position::new(0, 0), Position::new(0, 0)), text);
                ops.push(DocumentChangeOperation::Edit(TextDocumentEdit {
                    text_document: OptionalVersionedTextDocumentIdentifier { uri, version: None },
                    edits: annotated(vec![insert]),
                }));
            }
            DocChange::Delete { uri } => {
                ops.push(DocumentChangeOperation::Op(ResourceOp::Delete(DeleteFile {
                    uri,
                    options: None,
                    annotation_id: Some(id.into()),
                })));
            }
        }
    }
    WorkspaceEdit {
        changes: None,
        document_changes: Some(DocumentChanges::Operations(ops)),
        change_annotations: Some(HashMap::from([(id.to_string(), annotation)])),
    }
}

#[cfg(test)]
mod tests {
    use sift_engine::edit::Edit;

    use super::*;

    #[test]
    fn byte_ranges_become_positions_in_the_negotiated_encoding() {
        let text = "é = 1\nb = 2\n";
        // Replace "1" (bytes 5..6: "é" is two bytes in UTF-8, one unit in UTF-16).
        let edit = FileEdit {
            path: "a.py".into(),
            edits: vec![Edit { start_byte: 5, end_byte: 6, replacement: "3".into() }],
        };
        let utf16 = text_edits(text, &edit, Encoding::Utf16);
        assert_eq!(utf16[0].range, Range::new(Position::new(0, 4), Position::new(0, 5)));
        let utf8 = text_edits(text, &edit, Encoding::Utf8);
        assert_eq!(utf8[0].range, Range::new(Position::new(0, 5), Position::new(0, 6)));
    }
}
