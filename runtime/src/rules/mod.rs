//! The bug-finder's rule engine: rules are data (tree-sitter queries in TOML files), the engine
//! runs them over a file and returns [`Finding`]s.
//!
//! # Map
//!
//! - [`rule`]: one rule file, parsed and compiled per language ([`Rule`], [`Severity`]).
//! - `check`: the few named checks in Rust that query predicates cannot express.
//! - [`pack`]: a set of rules ([`RulePack`]): built-in, from `.sift/rules/`, configured.
//! - [`config`]: `.sift/review.toml` ([`ReviewConfig`]), and silencing a rule in one file.
//! - [`history`]: lines the repository's fix commits removed, flagged when a change adds them back.
//! - [`feedback`]: remembered dismissals, `.sift/feedback/dismissed.jsonl` ([`Feedback`]).
//! - [`STORE_ENTRIES`]: what review keeps in `.sift/`, registered with the store.
//! - [`run`]: [`check_file`], and [`run_rule_tests`] for a rule's embedded cases.
//! - [`finding`]: [`Finding`], [`Fix`], [`LineFilter`].
//! - `glob`: globs for rule ids and paths in the configuration.
//! - `template`: `{capture}` templates for messages and fixes.
//! - `builtin`: the list of built-in rule files (`runtime/rules/<lang>/<name>.toml`).
//! - [`diff`]: unified diffs parsed into the lines each file added (text in, no git run here).
//! - [`report`]: findings as text, Markdown, JSON, SARIF 2.1.0 and a GitHub review body.
//! - [`suppression`]: findings a review left out (dismissed, or silenced by a [`Silence`] of the
//!   configuration) and where the reason was read.
//!
//! Architecture invariant: nothing here runs git or knows the CLI or LSP (the review use case in
//! `sift_engine::review` runs git and feeds the diff text in). The engine does no I/O; only
//! [`RulePack::load_dir`] and [`ReviewConfig::load`] read files.
//!
//! # Rule files
//!
//! ```toml
//! id = "python/is-literal"            # <language>/<name>, lowercase, digits and '-'
//! languages = ["python"]              # names from sift_indexer::Language::name
//! severity = "error"                  # "error" | "warning" | "info"
//! confidence = 0.95                   # 0..=1: how sure a finding is a real bug
//! enabled = true                      # optional; false = only when review.toml enables it
//! skip_tests = true                   # optional; true = not on test files (is_test_path)
//! message = "`{left} is {right}` compares identity with a literal"  # {capture} = its text
//! rationale = "Why this is a bug, in a sentence or two."
//! fix = "{left} == {right}"           # optional: replaces the @finding range
//! check = "mentions:body,var"         # optional: a named check or a list of them
//! query = '''
//! ((comparison_operator
//!   . (_) @left . "is" . [(string) (integer) (float)] @right .) @finding
//!  (#not-match? @right "^b"))
//! '''
//!
//! [[tests]]                           # positive and negative cases, run by the test suite
//! code = "if x is 'a': pass"
//! expect = 1
//! [[tests]]
//! code = "if x is None: pass"
//! expect = 0
//! languages = ["python"]              # optional: the languages to run this case in
//! ```
//!
//! The query is a tree-sitter query compiled for each language; the capture `@finding` marks what
//! is reported. Tree-sitter's text predicates work (`#eq?`, `#not-eq?`, `#match?`, `#not-match?`,
//! `#any-of?`, `#not-any-of?` and their `any-` forms; `(#eq? @a @b)` compares two captures' text).
//! Predicates go inside the parentheses of the pattern they constrain (`((node) @x (#eq? @x "y"))`);
//! at the top level they would form a pattern of their own, which loading rejects.
//! A pattern may override the rule's message or fix with `(#set! message "…")` and
//! `(#set! fix "…")`, for example to fix `is` and `is not` differently. Conditions that need Rust
//! are named checks, described in `check.rs`: `duplicate-keys:<container>`,
//! `mentions:<tree>,<name>`, `mutates:<tree>,<name>`, `file-contains:<text>`, each negatable
//! with `!` (`check = ["mentions:body,var", "!mentions:params,var"]`).
//!
//! Loading a rule from a file ([`Rule::from_toml`], [`RulePack::load_dir`]) compiles its query for
//! every language and reports any problem with the file and line. Built-in rules, checked by the
//! tests, compile a language's queries the first time a file of that language is reviewed.

pub mod config;
pub mod diff;
pub mod error;
pub mod feedback;
pub mod finding;
pub mod history;
pub mod model;
pub mod pack;
pub mod report;
pub mod rule;
pub mod run;
pub mod suppression;

mod builtin;
mod check;
mod glob;
mod template;

pub use config::{PathsConfig, ReviewConfig, RulesConfig, Silence};
pub use error::{Result, ReviewError};
pub use feedback::{Dismissal, Feedback};
pub use finding::{Finding, Fix, LineFilter, keep_most_important};
pub use pack::RulePack;
pub use rule::{Rule, RuleTest, Severity, language_from_name};
pub use run::{
    MAX_SOURCE_BYTES, TEST_PATH_GLOBS, TestFailure, check_file, is_test_path, run_rule_tests,
};

use sift_indexer::store::Entry;

/// `.sift/review.toml`: which rules run where ([`ReviewConfig`]).
pub const CONFIG: Entry = Entry::shared_file("review", "review.toml");
/// `.sift/rules/`: the project's own rules ([`RulePack::load_dir`]).
pub const RULES: Entry = Entry::shared_dir("review", "rules");
/// `.sift/REVIEW.md`: the team's guidance for the model reviewer.
pub const GUIDANCE: Entry = Entry::shared_file("review", "REVIEW.md");
/// `.sift/feedback/`: remembered review decisions ([`feedback`]).
pub const FEEDBACK: Entry = Entry::shared_dir("review", feedback::FEEDBACK_DIR);
/// `.sift/cache/`: the mined fix history, per `HEAD`.
pub const CACHE: Entry = Entry::cache_dir("review", "cache");

/// Review's entries in `.sift/`, for [`sift_indexer::Store::open`].
pub const STORE_ENTRIES: &[Entry] = &[CONFIG, RULES, GUIDANCE, FEEDBACK, CACHE];
