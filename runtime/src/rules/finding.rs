//! What a review reports: [`Finding`]s with an optional [`Fix`], and the [`LineFilter`] that
//! keeps a review to the lines a change touched.

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use super::rule::Severity;

/// One problem found in one file.
///
/// Lines are 1-based and inclusive. Columns are 1-based and count characters (Unicode scalar
/// values) from the start of the line; `end_col` is the column just past the last character, so
/// a one-character finding at column 5 has `start_col = 5, end_col = 6`. The byte offsets are
/// exact and are what an editor should convert to its own positions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The id of the rule that raised it (`python/mutable-default-arg`).
    pub rule: String,
    /// How bad it is.
    pub severity: Severity,
    /// How sure the rule is, from 0 to 1.
    pub confidence: f32,
    /// The path of the file, as the caller gave it.
    pub path: String,
    /// First line, 1-based.
    pub start_line: usize,
    /// Last line, 1-based, inclusive.
    pub end_line: usize,
    /// Column of the first character, 1-based.
    pub start_col: usize,
    /// Column just past the last character, 1-based.
    pub end_col: usize,
    /// Byte offset of the start in the file.
    pub start_byte: usize,
    /// Byte offset just past the end in the file.
    pub end_byte: usize,
    /// What is wrong, with the code it is about.
    pub message: String,
    /// Why it is a bug.
    pub rationale: String,
    /// A replacement that fixes it, when the rule knows one.
    pub fix: Option<Fix>,
    /// A stable id for "this finding in this file", from the rule, the path and the reported
    /// text (not the line, so it survives edits above it): 16 hex digits, for remembering dismissals.
    pub fingerprint: String,
}

/// The fingerprint of a finding of `rule` in `path` about `text`: 16 hex digits of a hash of the
/// three, the text with its whitespace collapsed, so it survives edits elsewhere in the file and
/// re-indentation but not a change to the flagged code.
pub fn fingerprint(rule: &str, path: &str, text: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(rule.as_bytes());
    hasher.update(b"\0");
    hasher.update(path.as_bytes());
    hasher.update(b"\0");
    for word in text.split_whitespace() {
        hasher.update(word.as_bytes());
        hasher.update(b" ");
    }
    hasher.finalize().to_hex()[..16].to_string()
}

/// A finding's fix: a replacement of one byte range of the file (sift's one edit type).
pub use crate::edit::Edit as Fix;

/// The lines of a file a review is limited to (for example, the lines a diff added or changed).
/// A finding is kept when any of its lines is in the filter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineFilter {
    /// Sorted, disjoint, non-adjacent 1-based inclusive ranges.
    ranges: Vec<(usize, usize)>,
}

impl LineFilter {
    /// A filter of 1-based inclusive line ranges (in any order; they may overlap).
    pub fn new(ranges: impl IntoIterator<Item = RangeInclusive<usize>>) -> LineFilter {
        let mut ranges: Vec<(usize, usize)> =
            ranges.into_iter().filter(|r| !r.is_empty()).map(|r| (*r.start(), *r.end())).collect();
        ranges.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
        for (start, end) in ranges {
            match merged.last_mut() {
                Some(last) if start <= last.1.saturating_add(1) => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        LineFilter { ranges: merged }
    }

    /// Its ranges: sorted, disjoint, 1-based inclusive.
    pub fn ranges(&self) -> Vec<RangeInclusive<usize>> {
        self.ranges.iter().map(|&(a, b)| a..=b).collect()
    }

    /// A filter of single 1-based lines.
    pub fn from_lines(lines: impl IntoIterator<Item = usize>) -> LineFilter {
        LineFilter::new(lines.into_iter().map(|l| l..=l))
    }

    /// Whether the filter holds no line at all.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether 1-based `line` is in the filter.
    pub fn contains(&self, line: usize) -> bool {
        self.overlaps(line, line)
    }

    /// Whether any line of `start..=end` (1-based) is in the filter.
    pub fn overlaps(&self, start: usize, end: usize) -> bool {
        let i = self.ranges.partition_point(|&(_, e)| e < start);
        self.ranges.get(i).is_some_and(|&(s, _)| s <= end)
    }
}

/// Keeps at most `max` findings, preferring higher severity, then higher confidence, then
/// earlier position; the result is in the usual order (path, position, rule).
pub fn keep_most_important(findings: &mut Vec<Finding>, max: usize) {
    if findings.len() > max {
        findings.sort_by(|a, b| {
            b.severity
                .cmp(&a.severity)
                .then(b.confidence.total_cmp(&a.confidence))
                .then_with(|| order(a, b))
        });
        findings.truncate(max);
    }
    findings.sort_by(order);
}

/// The usual order of findings: path, then position, then rule id.
pub(crate) fn order(a: &Finding, b: &Finding) -> std::cmp::Ordering {
    (&a.path, a.start_byte, a.end_byte, &a.rule).cmp(&(&b.path, b.start_byte, b.end_byte, &b.rule))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_filter_merges_and_overlaps() {
        let f = LineFilter::new([10..=12, 3..=4, 5..=5, 11..=20]);
        assert_eq!(f.ranges, vec![(3, 5), (10, 20)]);
        assert!(f.contains(3) && f.contains(5) && f.contains(20));
        assert!(!f.contains(2) && !f.contains(6) && !f.contains(21));
        assert!(f.overlaps(6, 10));
        assert!(!f.overlaps(6, 9));
        assert!(LineFilter::from_lines([]).is_empty());
        assert_eq!(LineFilter::from_lines([7, 8, 9]).ranges, vec![(7, 9)]);
    }

    #[test]
    fn fix_applies_to_its_range() {
        let fix = Fix { start_byte: 2, end_byte: 4, replacement: "==".into() };
        assert_eq!(fix.apply("a is b").as_deref(), Some("a == b"));
        assert_eq!(
            Fix { start_byte: 9, end_byte: 10, replacement: String::new() }.apply("abc"),
            None
        );
    }
}
