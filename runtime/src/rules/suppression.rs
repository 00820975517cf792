//! Findings a review left out, and why: dismissed (a record of `.sift/feedback/dismissed.jsonl`)
//! or silenced by a setting of `.sift/review.toml` ([`Silence`]), each with the file and the
//! revision the reason was read from, so that a report can say exactly what left each one out
//! (`sift review --explain`).

use std::fmt;

use super::config::Silence;
use super::feedback::Dismissal;
use super::finding::Finding;
use super::rule::Severity;

/// Where a review setting was read: a file of the repository, at a revision or in the working
/// tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// The file, relative to the repository root (`.sift/review.toml`).
    pub file: String,
    /// The commit it was read from; `None` for the working tree.
    pub revision: Option<String>,
}

impl fmt::Display for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.revision {
            Some(rev) => write!(f, "{} at {}", self.file, short(rev)),
            None => write!(f, "{} in the working tree", self.file),
        }
    }
}

/// A commit id shortened for people (12 hex digits).
pub fn short(rev: &str) -> &str {
    rev.get(..12).unwrap_or(rev)
}

/// Why a finding was left out.
#[derive(Debug, Clone, PartialEq)]
pub enum Why {
    /// Someone dismissed it: this record, in this file.
    Dismissed {
        /// The dismissal (fingerprint, when, why).
        dismissal: Dismissal,
        /// The dismissals file it was read from.
        from: Provenance,
    },
    /// A setting of the review configuration silences it.
    Configured {
        /// The setting.
        silence: Silence,
        /// The configuration file it was read from.
        from: Provenance,
    },
    /// The repository's learned demotions (`.sift/learned.toml`) turned its rule off.
    Learned {
        /// The evidence of the demotion, in words.
        evidence: String,
        /// The file it was read from.
        from: Provenance,
    },
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::Dismissed { dismissal, from } => {
                write!(f, "dismissed ({}, {}", dismissal.fingerprint, dismissal.time)?;
                if let Some(reason) = &dismissal.reason {
                    write!(f, ": {reason:?}")?;
                }
                write!(f, ") in {from}")
            }
            Why::Configured { silence, from } => write!(f, "{silence} in {from}"),
            Why::Learned { evidence, from } => {
                write!(f, "demoted to off ({evidence}) in {from}")
            }
        }
    }
}

/// A finding a review left out, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Suppressed {
    /// The finding.
    pub finding: Finding,
    /// Why it is not reported.
    pub why: Why,
}

/// A finding reported at another severity than its rule's own, because of `[rules.severity]`
/// or a learned demotion.
#[derive(Debug, Clone, PartialEq)]
pub struct Rerated {
    /// The finding, at the configured severity.
    pub finding: Finding,
    /// The rule's own severity.
    pub default: Severity,
    /// The `[rules.severity]` pattern that set it (empty when `learned` did).
    pub pattern: String,
    /// The configuration file it was read from.
    pub from: Provenance,
    /// The evidence, when the repository's learned demotions (`.sift/learned.toml`) set it.
    pub learned: Option<String>,
}

/// How many findings were left out, by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// By dismissals.
    pub dismissed: usize,
    /// By the review configuration.
    pub configured: usize,
}

impl Counts {
    /// The counts of `suppressed`.
    pub fn of(suppressed: &[Suppressed]) -> Counts {
        let dismissed =
            suppressed.iter().filter(|s| matches!(s.why, Why::Dismissed { .. })).count();
        Counts { dismissed, configured: suppressed.len() - dismissed }
    }

    /// Both together.
    pub fn total(self) -> usize {
        self.dismissed + self.configured
    }
}
