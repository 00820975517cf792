//! Position encodings and text edits.
//!
//! LSP positions are `(line, character)` pairs whose `character` is counted in
//! a unit the client and server agree on at initialization (UTF-8 bytes,
//! UTF-16 code units or UTF-32 code points; see [`Encoding::negotiate`]).
//! sift keeps documents as Rust `String`s, i.e. UTF-8, so every position that
//! crosses the wire is converted to or from a byte offset here, through a
//! [`LineIndex`] of the text's line starts.
//!
//! Line breaks follow the LSP spec: `\n`, `\r\n` and a lone `\r` all end a
//! line, and a position's `character` never counts the break itself.
//!
//! All conversions are total: out-of-range positions clamp (past the end of a
//! line to the line's end, past the last line to the end of the text) and
//! columns that land inside a character round down to its start, so a
//! confused or out-of-date client can never make the server panic.

use tower_lsp_server::ls_types::{
    Position, PositionEncodingKind, Range, TextDocumentContentChangeEvent,
};

/// The unit in which the client counts columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Columns count UTF-8 code units (bytes).
    Utf8,
    /// Columns count UTF-16 code units; the LSP default.
    Utf16,
    /// Columns count UTF-32 code units (Unicode scalar values).
    Utf32,
}

impl Encoding {
    /// Picks the encoding from the client's `general.positionEncodings` (in the client's order of preference,
    /// sift prefers utf-8, then utf-16; utf-16 when the client says nothing, as the spec requires).
    ///
    /// sift's own preference decides among the kinds offered: utf-8 (native
    /// to Rust strings, no conversion cost) if offered anywhere in the list,
    /// else utf-16, else utf-32. Unknown kinds are ignored; an absent or empty
    /// list, or one with nothing sift knows, yields utf-16, which every client
    /// must support.
    pub fn negotiate(offered: Option<&[PositionEncodingKind]>) -> Encoding {
        let offered = offered.unwrap_or_default();
        [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32]
            .into_iter()
            .find(|enc| offered.contains(&enc.kind()))
            .unwrap_or(Encoding::Utf16)
    }

    /// The LSP kind to announce in `ServerCapabilities::position_encoding`.
    pub fn kind(self) -> PositionEncodingKind {
        match self {
            Encoding::Utf8 => PositionEncodingKind::UTF8,
            Encoding::Utf16 => PositionEncodingKind::UTF16,
            Encoding::Utf32 => PositionEncodingKind::UTF32,
        }
    }

    /// Width of `c` in this encoding's code units.
    fn width(self, c: char) -> usize {
        match self {
            Encoding::Utf8 => c.len_utf8(),
            Encoding::Utf16 => c.len_utf16(),
            Encoding::Utf32 => 1,
        }
    }

    /// Length of `s` in this encoding's code units.
    fn len(self, s: &str) -> usize {
        match self {
            Encoding::Utf8 => s.len(),
            Encoding::Utf16 | Encoding::Utf32 => s.chars().map(|c| self.width(c)).sum(),
        }
    }

    /// Byte length of the longest prefix of `line` that is at most `column`
    /// code units long: a column past the end clamps to `line.len()`, one
    /// inside a character (a UTF-8 continuation byte, the second half of a
    /// surrogate pair) rounds down to that character's start.
    fn prefix_len(self, line: &str, column: u32) -> usize {
        let column = usize::try_from(column).unwrap_or(usize::MAX);
        if self == Encoding::Utf8 {
            // Columns are bytes: only the rounding down is left to do.
            return line.floor_char_boundary(column);
        }
        let mut units = 0;
        for (start, c) in line.char_indices() {
            units += self.width(c);
            if units > column {
                // `c` ends past the column: stop before it.
                return start;
            }
        }
        line.len()
    }
}

/// Line starts of a text, for converting between byte offsets and LSP positions.
///
/// The index only records where lines start; every method also takes the
/// text it was built from. Given a different text, the methods still never
/// panic, but their answers are meaningless.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineIndex {
    /// Byte offset at which each line starts, ascending; `starts[0] == 0`.
    /// A text ending in a line break has a final, empty line after it.
    starts: Vec<usize>,
}

impl LineIndex {
    /// Indexes the line starts of `text`.
    pub fn new(text: &str) -> LineIndex {
        let bytes = text.as_bytes();
        let mut starts = vec![0];
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' => starts.push(i + 1),
                b'\r' => {
                    // `\r\n` is a single break; a lone `\r` is one too.
                    if bytes.get(i + 1) == Some(&b'\n') {
                        i += 1;
                    }
                    starts.push(i + 1);
                }
                _ => {}
            }
            i += 1;
        }
        LineIndex { starts }
    }

    /// Byte offset of `pos`; positions past the end of a line clamp to the line's end (before its line break), lines past the end clamp to the end of the text; a column that falls inside a multi-byte character or between the two halves of a surrogate pair rounds down to the character start. Never panics.
    pub fn offset(&self, text: &str, pos: Position, enc: Encoding) -> usize {
        let line = usize::try_from(pos.line).unwrap_or(usize::MAX);
        match self.line_bounds(text, line) {
            Some((start, end)) => start + enc.prefix_len(&text[start..end], pos.character),
            None => text.len(),
        }
    }

    /// LSP position of a byte offset (clamped to the text, rounded down to a char boundary).
    ///
    /// An offset inside a line break (between the `\r` and `\n` of a `\r\n`)
    /// maps to the end of that line, as positions cannot point there.
    pub fn position(&self, text: &str, offset: usize, enc: Encoding) -> Position {
        let offset = text.floor_char_boundary(offset);
        // The last line starting at or before `offset`; `starts[0] == 0`
        // guarantees there is one.
        let line = self.starts.partition_point(|&s| s <= offset).saturating_sub(1);
        let (start, end) = self.line_bounds(text, line).unwrap_or((offset, offset));
        let offset = offset.min(end).max(start);
        Position::new(to_u32(line), to_u32(enc.len(&text[start..offset])))
    }

    /// Convenience for 0-based line numbers used by sift's index: the Range from (line a, col 0) to the end of line b (exclusive of its break).
    ///
    /// Lines past the end clamp to the end of the text, and an end line
    /// before the start line yields an empty range at the start.
    pub fn line_range(&self, text: &str, first_line: u32, last_line: u32, enc: Encoding) -> Range {
        let start = self.offset(text, Position::new(first_line, 0), enc);
        let end = self.offset(text, Position::new(last_line, u32::MAX), enc);
        // Going through offsets normalizes clamped lines to real positions.
        Range::new(self.position(text, start, enc), self.position(text, end.max(start), enc))
    }

    /// Byte range of line `line`'s content in `text`, excluding its line
    /// break, or `None` past the last line. Both ends are char boundaries of
    /// `text` and `start <= end`, even if `text` is not the indexed text.
    fn line_bounds(&self, text: &str, line: usize) -> Option<(usize, usize)> {
        let start = *self.starts.get(line)?;
        let next = self.starts.get(line + 1).copied().unwrap_or(text.len());
        // Only a mismatched text makes these clamps do anything.
        let next = text.floor_char_boundary(next);
        let start = text.floor_char_boundary(start.min(next));
        // Strip the break: `\n`, `\r\n` or `\r` (all ASCII, so the result
        // stays a char boundary).
        let mut end = next;
        if text.as_bytes()[start..end].ends_with(b"\n") {
            end -= 1;
        }
        if text.as_bytes()[start..end].ends_with(b"\r") {
            end -= 1;
        }
        Some((start, end))
    }
}

/// Applies one `textDocument/didChange` content change (full text when `range` is None) to `text`, with the same clamping rules. Never panics.
///
/// The deprecated `range_length` is ignored: `range` alone is authoritative.
/// A range whose end precedes its start is treated as the same span with its
/// ends swapped.
pub fn apply_change(text: &mut String, change: &TextDocumentContentChangeEvent, enc: Encoding) {
    let Some(range) = change.range else {
        text.clone_from(&change.text);
        return;
    };
    let index = LineIndex::new(text);
    let a = index.offset(text, range.start, enc);
    let b = index.offset(text, range.end, enc);
    // Both offsets are char boundaries, so this cannot panic.
    text.replace_range(a.min(b)..a.max(b), &change.text);
}

/// `n` as a `u32`, saturating (lines and columns beyond 4 GiB are not real).
fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Encoding; 3] = [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32];

    fn pos(line: u32, character: u32) -> Position {
        Position::new(line, character)
    }

    /// Checks `(position, offset)` pairs both ways: each position maps to
    /// the offset, and each offset maps back to the position.
    fn check_both_ways(text: &str, enc: Encoding, cases: &[(Position, usize)]) {
        let index = LineIndex::new(text);
        for &(p, off) in cases {
            assert_eq!(index.offset(text, p, enc), off, "offset of {p:?} ({enc:?}) in {text:?}");
            assert_eq!(
                index.position(text, off, enc),
                p,
                "position of {off} ({enc:?}) in {text:?}"
            );
        }
    }

    /// Checks that positions map to offsets (one way: for clamped inputs).
    fn check_offsets(text: &str, enc: Encoding, cases: &[(Position, usize)]) {
        let index = LineIndex::new(text);
        for &(p, off) in cases {
            assert_eq!(index.offset(text, p, enc), off, "offset of {p:?} ({enc:?}) in {text:?}");
        }
    }

    #[test]
    fn ascii_columns_are_the_same_in_every_encoding() {
        let text = "fn main() {\n    x\n}";
        for enc in ALL {
            check_both_ways(
                text,
                enc,
                &[
                    (pos(0, 0), 0),
                    (pos(0, 3), 3),
                    (pos(0, 11), 11),
                    (pos(1, 0), 12),
                    (pos(1, 4), 16),
                    (pos(1, 5), 17),
                    (pos(2, 0), 18),
                    (pos(2, 1), 19),
                ],
            );
        }
    }

    #[test]
    fn multibyte_utf8_columns_count_bytes_units_or_chars() {
        // é is 2 bytes, 日 and 本 are 3 bytes each; all are 1 UTF-16 unit.
        let text = "é日本x";
        check_both_ways(
            text,
            Encoding::Utf8,
            &[(pos(0, 0), 0), (pos(0, 2), 2), (pos(0, 5), 5), (pos(0, 8), 8), (pos(0, 9), 9)],
        );
        for enc in [Encoding::Utf16, Encoding::Utf32] {
            check_both_ways(
                text,
                enc,
                &[(pos(0, 0), 0), (pos(0, 1), 2), (pos(0, 2), 5), (pos(0, 3), 8), (pos(0, 4), 9)],
            );
        }
    }

    #[test]
    fn astral_char_is_4_bytes_2_utf16_units_1_utf32_unit() {
        let text = "a😀b";
        check_both_ways(text, Encoding::Utf8, &[(pos(0, 1), 1), (pos(0, 5), 5), (pos(0, 6), 6)]);
        check_both_ways(text, Encoding::Utf16, &[(pos(0, 1), 1), (pos(0, 3), 5), (pos(0, 4), 6)]);
        check_both_ways(text, Encoding::Utf32, &[(pos(0, 1), 1), (pos(0, 2), 5), (pos(0, 3), 6)]);
    }

    #[test]
    fn column_between_surrogate_halves_rounds_down_to_char_start() {
        // UTF-16 column 2 is between the two halves of 😀 (columns 1..3).
        check_offsets("a😀b", Encoding::Utf16, &[(pos(0, 2), 1)]);
        check_offsets("😀😀", Encoding::Utf16, &[(pos(0, 1), 0), (pos(0, 3), 4)]);
    }

    #[test]
    fn utf8_column_inside_multibyte_char_rounds_down_to_char_start() {
        check_offsets(
            "a日😀",
            Encoding::Utf8,
            &[(pos(0, 2), 1), (pos(0, 3), 1), (pos(0, 5), 4), (pos(0, 7), 4), (pos(0, 8), 8)],
        );
    }

    #[test]
    fn crlf_ends_a_line_and_is_not_counted_as_columns() {
        let text = "ab\r\ncd\r\n";
        for enc in ALL {
            check_both_ways(
                text,
                enc,
                &[(pos(0, 0), 0), (pos(0, 2), 2), (pos(1, 0), 4), (pos(1, 2), 6), (pos(2, 0), 8)],
            );
            // Columns past the line end stop before the `\r`.
            check_offsets(text, enc, &[(pos(0, 3), 2), (pos(0, 4), 2), (pos(1, 9), 6)]);
        }
    }

    #[test]
    fn lone_cr_ends_a_line() {
        let text = "ab\rcd\r\re";
        for enc in ALL {
            check_both_ways(
                text,
                enc,
                &[
                    (pos(0, 2), 2),
                    (pos(1, 0), 3),
                    (pos(1, 2), 5),
                    (pos(2, 0), 6),
                    (pos(3, 0), 7),
                    (pos(3, 1), 8),
                ],
            );
            check_offsets(text, enc, &[(pos(0, 5), 2), (pos(2, 1), 6)]);
        }
    }

    #[test]
    fn mixed_line_breaks_each_end_one_line() {
        // `\n\r` is two breaks (LF, then a lone CR), unlike `\r\n`.
        let text = "a\nb\r\nc\rd\n\re";
        let index = LineIndex::new(text);
        assert_eq!(index.starts, vec![0, 2, 5, 7, 9, 10]);
        check_both_ways(text, Encoding::Utf16, &[(pos(4, 0), 9), (pos(5, 0), 10), (pos(5, 1), 11)]);
    }

    #[test]
    fn offset_inside_crlf_maps_to_end_of_line() {
        let text = "ab\r\ncd";
        let index = LineIndex::new(text);
        for enc in ALL {
            // Offset 3 is between `\r` and `\n`; offset 2 is before the `\r`.
            assert_eq!(index.position(text, 3, enc), pos(0, 2));
            assert_eq!(index.position(text, 2, enc), pos(0, 2));
        }
    }

    #[test]
    fn column_past_end_of_line_clamps_to_before_its_break() {
        let text = "日本\nx";
        check_offsets(text, Encoding::Utf8, &[(pos(0, 7), 6), (pos(0, u32::MAX), 6)]);
        check_offsets(text, Encoding::Utf16, &[(pos(0, 3), 6), (pos(0, u32::MAX), 6)]);
        check_offsets(text, Encoding::Utf32, &[(pos(0, 3), 6), (pos(1, 2), 8)]);
    }

    #[test]
    fn line_past_last_line_clamps_to_end_of_text() {
        for (text, end) in [("ab\ncd", 5), ("ab\n", 3), ("ab\r", 3), ("é", 2)] {
            for enc in ALL {
                check_offsets(text, enc, &[(pos(9, 0), end), (pos(u32::MAX, u32::MAX), end)]);
            }
        }
    }

    #[test]
    fn trailing_line_break_starts_a_final_empty_line() {
        for enc in ALL {
            check_both_ways("ab\n", enc, &[(pos(1, 0), 3)]);
            check_both_ways("ab\r\n", enc, &[(pos(1, 0), 4)]);
        }
    }

    #[test]
    fn offset_past_text_clamps_to_end() {
        let text = "a\né";
        let index = LineIndex::new(text);
        for enc in ALL {
            assert_eq!(index.position(text, 100, enc), index.position(text, text.len(), enc));
            assert_eq!(index.position(text, usize::MAX, enc), pos(1, enc.len("é") as u32));
        }
    }

    #[test]
    fn offset_inside_char_rounds_down_to_char_start() {
        let text = "a😀b";
        let index = LineIndex::new(text);
        for (off, expected) in [(2, pos(0, 1)), (3, pos(0, 1)), (4, pos(0, 1))] {
            assert_eq!(index.position(text, off, Encoding::Utf16), expected);
        }
    }

    #[test]
    fn empty_text_has_one_empty_line() {
        let index = LineIndex::new("");
        for enc in ALL {
            assert_eq!(index.position("", 0, enc), pos(0, 0));
            assert_eq!(index.position("", 5, enc), pos(0, 0));
            check_offsets("", enc, &[(pos(0, 0), 0), (pos(0, 4), 0), (pos(3, 1), 0)]);
            assert_eq!(index.line_range("", 0, 0, enc), Range::new(pos(0, 0), pos(0, 0)));
        }
    }

    /// A text mixing every width of character and every kind of line break.
    const MIXED: &str = "fn é() {\r\n  \"日本\" 😀😀x\r\rlone\n\n\t😀é日\r\nend😀";

    /// Reference position of `offset` in `text`, by scanning every char.
    fn naive_position(text: &str, offset: usize, enc: Encoding) -> Position {
        let (mut line, mut col) = (0, 0);
        let mut chars = text[..offset].chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\r' if chars.peek() == Some(&'\n') => {}
                '\r' | '\n' => (line, col) = (line + 1, 0),
                c => col += enc.width(c) as u32,
            }
        }
        pos(line, col)
    }

    #[test]
    fn round_trips_every_char_boundary_in_all_encodings() {
        let index = LineIndex::new(MIXED);
        for enc in ALL {
            for off in (0..=MIXED.len()).filter(|&i| MIXED.is_char_boundary(i)) {
                // Between `\r` and `\n` is not a position LSP can express.
                if off > 0 && MIXED[..off].ends_with('\r') && MIXED[off..].starts_with('\n') {
                    continue;
                }
                let p = index.position(MIXED, off, enc);
                assert_eq!(p, naive_position(MIXED, off, enc), "position of {off} ({enc:?})");
                assert_eq!(index.offset(MIXED, p, enc), off, "offset of {p:?} ({enc:?})");
            }
        }
    }

    #[test]
    fn line_range_spans_from_line_start_to_end_of_last_line() {
        let text = "a\r\nb😀\nc\n";
        let index = LineIndex::new(text);
        let cases = [
            (0, 0, Encoding::Utf16, pos(0, 0), pos(0, 1)),
            (0, 1, Encoding::Utf16, pos(0, 0), pos(1, 3)),
            (1, 1, Encoding::Utf8, pos(1, 0), pos(1, 5)),
            (1, 2, Encoding::Utf32, pos(1, 0), pos(2, 1)),
            // The final empty line, then lines past the end, clamp.
            (3, 3, Encoding::Utf16, pos(3, 0), pos(3, 0)),
            (2, 99, Encoding::Utf16, pos(2, 0), pos(3, 0)),
            (50, 99, Encoding::Utf16, pos(3, 0), pos(3, 0)),
            // Reversed lines give an empty range at the start.
            (2, 0, Encoding::Utf16, pos(2, 0), pos(2, 0)),
        ];
        for (a, b, enc, start, end) in cases {
            assert_eq!(
                index.line_range(text, a, b, enc),
                Range::new(start, end),
                "lines {a}..={b} ({enc:?})"
            );
        }
    }

    #[test]
    fn mismatched_text_never_panics() {
        // An index built for one text, used with another.
        let index = LineIndex::new("abc\ndef\nghi\n");
        for text in ["", "é", "日本😀", "x\r\n"] {
            for enc in ALL {
                for line in 0..6 {
                    for character in 0..8 {
                        let off = index.offset(text, pos(line, character), enc);
                        assert!(text.is_char_boundary(off));
                    }
                }
                for off in 0..16 {
                    index.position(text, off, enc);
                }
                index.line_range(text, 0, 5, enc);
            }
        }
    }

    fn kinds(kinds: &[&'static str]) -> Vec<PositionEncodingKind> {
        kinds.iter().map(|&k| PositionEncodingKind::new(k)).collect()
    }

    fn negotiated(offered: Option<&[&'static str]>) -> Encoding {
        Encoding::negotiate(offered.map(kinds).as_deref())
    }

    #[test]
    fn negotiate_picks_utf8_whenever_offered() {
        assert_eq!(negotiated(Some(&["utf-8"])), Encoding::Utf8);
        assert_eq!(negotiated(Some(&["utf-16", "utf-8"])), Encoding::Utf8);
        assert_eq!(negotiated(Some(&["utf-32", "utf-16", "utf-8"])), Encoding::Utf8);
    }

    #[test]
    fn negotiate_picks_utf16_when_only_utf16_offered() {
        assert_eq!(negotiated(Some(&["utf-16"])), Encoding::Utf16);
    }

    #[test]
    fn negotiate_prefers_utf16_over_utf32() {
        assert_eq!(negotiated(Some(&["utf-32", "utf-16"])), Encoding::Utf16);
    }

    #[test]
    fn negotiate_defaults_to_utf16_when_nothing_offered() {
        assert_eq!(negotiated(None), Encoding::Utf16);
        assert_eq!(negotiated(Some(&[])), Encoding::Utf16);
    }

    #[test]
    fn negotiate_ignores_unknown_kinds() {
        assert_eq!(negotiated(Some(&["utf-7", "ebcdic"])), Encoding::Utf16);
        assert_eq!(negotiated(Some(&["utf-7", "utf-32"])), Encoding::Utf32);
    }

    #[test]
    fn negotiate_picks_utf32_when_only_utf32_offered() {
        assert_eq!(negotiated(Some(&["utf-32"])), Encoding::Utf32);
    }

    #[test]
    fn kind_names_the_lsp_encoding() {
        assert_eq!(Encoding::Utf8.kind().as_str(), "utf-8");
        assert_eq!(Encoding::Utf16.kind().as_str(), "utf-16");
        assert_eq!(Encoding::Utf32.kind().as_str(), "utf-32");
        for enc in ALL {
            assert_eq!(Encoding::negotiate(Some(&[enc.kind()])), enc);
        }
    }

    fn change(range: Option<(Position, Position)>, text: &str) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: range.map(|(start, end)| Range::new(start, end)),
            range_length: None,
            text: text.to_owned(),
        }
    }

    /// Applies a ranged change (or a full one when `range` is `None`) to
    /// `before` and returns the result.
    fn changed(
        before: &str,
        range: Option<(Position, Position)>,
        new: &str,
        enc: Encoding,
    ) -> String {
        let mut text = before.to_owned();
        apply_change(&mut text, &change(range, new), enc);
        text
    }

    #[test]
    fn apply_change_inserts_at_an_empty_range() {
        let r = Some((pos(0, 3), pos(0, 3)));
        assert_eq!(changed("fn x() {}", r, "yz", Encoding::Utf16), "fn yzx() {}");
    }

    #[test]
    fn apply_change_inserts_on_the_final_empty_line() {
        let r = Some((pos(1, 0), pos(1, 0)));
        assert_eq!(changed("a\n", r, "b", Encoding::Utf16), "a\nb");
    }

    #[test]
    fn apply_change_deletes_across_lines() {
        let r = Some((pos(0, 1), pos(2, 2)));
        assert_eq!(changed("one\r\ntwo\nthree", r, "", Encoding::Utf16), "oree");
    }

    #[test]
    fn apply_change_replaces_with_multibyte_char_in_utf16_columns() {
        // UTF-16 columns: a=0, 😀=1..3, b=3, 😀=4..6, c=6.
        let r = Some((pos(0, 3), pos(0, 6)));
        assert_eq!(changed("a😀b😀c", r, "é", Encoding::Utf16), "a😀éc");
    }

    #[test]
    fn apply_change_replaces_astral_char_in_utf8_columns() {
        let r = Some((pos(0, 1), pos(0, 5)));
        assert_eq!(changed("a😀b", r, "日", Encoding::Utf8), "a日b");
    }

    #[test]
    fn apply_change_replaces_in_utf32_columns() {
        let r = Some((pos(0, 1), pos(0, 2)));
        assert_eq!(changed("😀😀😀", r, "x", Encoding::Utf32), "😀x😀");
    }

    #[test]
    fn apply_change_without_range_replaces_full_text() {
        assert_eq!(changed("old\ntext", None, "new 😀", Encoding::Utf16), "new 😀");
    }

    #[test]
    fn apply_change_out_of_range_clamps_to_text_end() {
        let r = Some((pos(1, 1), pos(7, 3)));
        assert_eq!(changed("ab\ncd", r, "X\n", Encoding::Utf16), "ab\ncX\n");
        let r = Some((pos(5, 0), pos(9, 9)));
        assert_eq!(changed("ab", r, "!", Encoding::Utf8), "ab!");
    }

    #[test]
    fn apply_change_column_past_line_end_clamps_before_break() {
        let r = Some((pos(0, 9), pos(0, 9)));
        assert_eq!(changed("ab\r\ncd", r, "!", Encoding::Utf16), "ab!\r\ncd");
    }

    #[test]
    fn apply_change_column_inside_surrogate_pair_rounds_down() {
        // Column 2 is inside 😀, so the range starts before it.
        let r = Some((pos(0, 2), pos(0, 3)));
        assert_eq!(changed("a😀b", r, "x", Encoding::Utf16), "axb");
    }

    #[test]
    fn apply_change_reversed_range_replaces_the_same_span() {
        let r = Some((pos(0, 3), pos(0, 1)));
        assert_eq!(changed("abcd", r, "-", Encoding::Utf8), "a-d");
    }

    #[test]
    fn apply_change_ignores_deprecated_range_length() {
        let mut text = "abcd".to_owned();
        let mut c = change(Some((pos(0, 1), pos(0, 2))), "X");
        c.range_length = Some(99);
        apply_change(&mut text, &c, Encoding::Utf8);
        assert_eq!(text, "aXcd");
    }
}
