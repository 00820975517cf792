//! Content that is not what a question asks about: translation catalogs, lock files, minified
//! bundles, vendored copies of other projects, generated files. Natural-language ranking
//! (semantic search, and hybrid search of a query that names no identifier) leaves it out, unless
//! the query names it (see [`Aside::named_by`]); lexical search, identifier lookups and path
//! queries still find it. Recognised by path and, for minified and generated text, by content.
//! The embedding upgrade leaves the same content out of its slow pass
//! ([`crate::Scope::NoAside`]).

use serde::Serialize;

/// Why a chunk is left out of natural-language ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Aside {
    /// A text file under a translations directory (`locale/de/LC_MESSAGES/django.po`).
    Translation,
    /// A package manager's lock file (`Cargo.lock`, `package-lock.json`, `poetry.lock`…).
    Lock,
    /// Minified code: `*.min.js`, `*.min.css`, or a chunk of very long lines.
    Minified,
    /// Under a directory of other projects' code (`vendor/`, `node_modules/`, `third_party/`).
    Vendored,
    /// Generated: a name such as `*_pb2.py` or `*.pb.go`, or a "generated, do not edit" mark.
    Generated,
}

impl Aside {
    /// Every kind, in a fixed order.
    pub const ALL: [Aside; 5] =
        [Aside::Translation, Aside::Lock, Aside::Minified, Aside::Vendored, Aside::Generated];

    /// The kind's name, as the configuration and the JSON output spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Aside::Translation => "translation",
            Aside::Lock => "lock",
            Aside::Minified => "minified",
            Aside::Vendored => "vendored",
            Aside::Generated => "generated",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<Aside> {
        Aside::ALL.into_iter().find(|a| a.as_str() == name)
    }

    /// Query words that ask for this kind of content itself.
    fn words(self) -> &'static [&'static str] {
        match self {
            Aside::Translation => &[
                "translation",
                "translations",
                "translated",
                "locale",
                "locales",
                "catalog",
                "catalogs",
                "po",
                "gettext",
                "i18n",
                "l10n",
                "msgid",
                "msgstr",
            ],
            Aside::Lock => &["lock", "lockfile", "lockfiles", "locked", "pinned"],
            Aside::Minified => &["min", "minified", "bundle", "bundled"],
            Aside::Vendored => &["vendor", "vendored", "vendoring", "third", "party"],
            Aside::Generated => &["generated", "codegen", "protobuf", "pb", "pb2"],
        }
    }

    /// Whether a query with these (lower-case) `tokens` asks for this chunk of `path`: it names
    /// the kind ("translation catalog") or a word of the file's own name or, for vendored code,
    /// of the project it is a copy of (`jquery` for `vendor/jquery/jquery.js`).
    pub fn named_by(self, path: &str, tokens: &[&str]) -> bool {
        if tokens.iter().any(|t| self.words().contains(t)) {
            return true;
        }
        // A catalog's file name is the project's own (`django.po`): not a sign.
        if self == Aside::Translation {
            return false;
        }
        let parts: Vec<&str> = path.split('/').collect();
        let file = parts.last().copied().unwrap_or_default();
        let mut names: Vec<&str> = words_of(file).collect();
        if self == Aside::Vendored
            && let Some(i) = parts.iter().position(|p| VENDOR_DIRS.contains(p))
            && let Some(project) = parts.get(i + 1).filter(|_| i + 2 < parts.len())
        {
            names.extend(words_of(project));
        }
        tokens.iter().any(|t| t.len() > 2 && names.iter().any(|n| n.eq_ignore_ascii_case(t)))
    }
}

/// A set of [`Aside`] kinds: what natural-language ranking leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Asides(u8);

impl Asides {
    /// None: every chunk ranks.
    pub const NONE: Asides = Asides(0);
    /// Every kind (the default of `[search] leave_aside`).
    pub const ALL: Asides = Asides(0b1_1111);

    /// The set of `kinds`.
    pub fn of(kinds: impl IntoIterator<Item = Aside>) -> Asides {
        Asides(kinds.into_iter().fold(0, |bits, a| bits | 1 << a as u8))
    }

    /// Whether `kind` is in the set.
    pub fn contains(self, kind: Aside) -> bool {
        self.0 & (1 << kind as u8) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether a chunk of `path` of kind `aside` is left out of a ranking of a query with
    /// `tokens`: its kind is in the set and the query does not ask for it.
    pub fn leaves_out(self, aside: Option<Aside>, path: &str, tokens: &[&str]) -> bool {
        aside.is_some_and(|a| self.contains(a) && !a.named_by(path, tokens))
    }
}

/// The words of a file or directory name (`jquery.min.js`: `jquery`, `min`, `js`).
fn words_of(name: &str) -> impl Iterator<Item = &str> {
    name.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty())
}

/// Directories that hold translations.
const TRANSLATION_DIRS: &[&str] = &["locale", "locales", "i18n", "l10n", "translations"];

/// Directories that hold other projects' code.
const VENDOR_DIRS: &[&str] =
    &["vendor", "vendored", "node_modules", "third_party", "bower_components"];

/// Lock files, by name.
const LOCK_FILES: &[&str] = &[
    "Cargo.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "bun.lock",
    "poetry.lock",
    "Pipfile.lock",
    "uv.lock",
    "pdm.lock",
    "Gemfile.lock",
    "composer.lock",
    "go.sum",
    "flake.lock",
    "mix.lock",
    "pubspec.lock",
    "Podfile.lock",
    "packages.lock.json",
];

/// A chunk whose lines are this long on average is minified (or data).
const MINIFIED_MEAN_LINE: usize = 300;

/// Whether `language` (the index's label) is text rather than code.
pub(crate) fn is_text(language: &str) -> bool {
    matches!(language, "text" | "markdown" | "json" | "yaml" | "toml" | "xml" | "html")
}

/// What kind of aside content the file `path` is by its path alone (the language from its
/// extension; content marks not seen).
pub fn classify_path(path: &str) -> Option<Aside> {
    let language = crate::lang::Language::from_path(std::path::Path::new(path));
    classify(path, language.map_or("text", |l| l.name()), "", false)
}

/// What kind of aside content the chunk of `path` in `language` with `content` is, if any;
/// `head`: the chunk starts at the file's first line, where generators mark what they wrote
/// (the markers [`crate::chunk::looks_generated`] reads).
pub fn classify(path: &str, language: &str, content: &str, head: bool) -> Option<Aside> {
    let parts: Vec<&str> = path.split('/').collect();
    let file = parts.last().copied().unwrap_or_default();
    let dirs = &parts[..parts.len().saturating_sub(1)];
    if is_text(language) && dirs.iter().any(|d| TRANSLATION_DIRS.contains(d)) {
        return Some(Aside::Translation);
    }
    if LOCK_FILES.contains(&file) {
        return Some(Aside::Lock);
    }
    let lower = file.to_ascii_lowercase();
    if [".min.js", ".min.css", ".min.mjs", "-min.js", ".bundle.js"]
        .iter()
        .any(|s| lower.ends_with(s))
    {
        return Some(Aside::Minified);
    }
    if dirs.iter().any(|d| VENDOR_DIRS.contains(d)) {
        return Some(Aside::Vendored);
    }
    if ["_pb2.py", "_pb2_grpc.py", ".pb.go", ".pb.cc", ".pb.h", ".g.dart", ".freezed.dart"]
        .iter()
        .any(|s| lower.ends_with(s))
        || lower.contains(".generated.")
    {
        return Some(Aside::Generated);
    }
    let lines = content.lines().count().max(1);
    if content.len() / lines >= MINIFIED_MEAN_LINE && content.len() >= 2 * MINIFIED_MEAN_LINE {
        return Some(Aside::Minified);
    }
    if head && crate::chunk::says_generated(content) {
        return Some(Aside::Generated);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_paths_are_classified() {
        let none = |p: &str, lang: &str| classify(p, lang, "def f():\n    return 1\n", true);
        assert_eq!(
            none("django/conf/locale/de/LC_MESSAGES/django.po", "text"),
            Some(Aside::Translation)
        );
        assert_eq!(none("web/i18n/fr.json", "json"), Some(Aside::Translation));
        assert_eq!(none("django/conf/locale/de/formats.py", "python"), None);
        assert_eq!(none("docs/localed.txt", "text"), None);
        assert_eq!(none("Cargo.lock", "text"), Some(Aside::Lock));
        assert_eq!(none("frontend/package-lock.json", "json"), Some(Aside::Lock));
        assert_eq!(none("src/lock.rs", "rust"), None);
        assert_eq!(
            none("django/contrib/admin/static/admin/js/vendor/jquery/jquery.min.js", "javascript"),
            Some(Aside::Minified)
        );
        assert_eq!(
            none("django/contrib/admin/static/admin/js/vendor/jquery/jquery.js", "javascript"),
            Some(Aside::Vendored)
        );
        assert_eq!(none("api/user_pb2.py", "python"), Some(Aside::Generated));
        assert_eq!(none("django/contrib/admin/static/admin/js/actions.js", "javascript"), None);
        assert_eq!(none("README.md", "markdown"), None);
    }

    #[test]
    fn content_marks_minified_and_generated_chunks() {
        let long = format!("!function(e,t){{{}}}", "var a=1;".repeat(100));
        assert_eq!(classify("static/app.js", "javascript", &long, false), Some(Aside::Minified));
        let marked = "# @generated by tools/gen.py\nTABLE = [1, 2]\n";
        assert_eq!(classify("app/table.py", "python", marked, true), Some(Aside::Generated));
        // Only at the file's start: a chunk further down that mentions the words is code.
        assert_eq!(classify("app/table.py", "python", marked, false), None);
        // Django's migrations say "Generated by Django": they are the project's own code.
        let migration =
            "# Generated by Django 5.1 on 2024-01-01\nfrom django.db import migrations\n";
        assert_eq!(classify("app/migrations/0001_initial.py", "python", migration, true), None);
        let go = "// Code generated by protoc-gen-go. DO NOT EDIT.\npackage api\n";
        assert_eq!(classify("api/types.go", "go", go, true), Some(Aside::Generated));
        // A long line or two in ordinary code is not minified.
        let code = format!("x = 1\n{}\ny = 2\nz = 3\n", "a".repeat(400));
        assert_eq!(classify("src/x.py", "python", &code, true), None);
    }

    #[test]
    fn a_query_can_ask_for_it_by_name() {
        let words = |q: &str| crate::tokenizer::tokenize(q);
        let t = |q: &str| -> Vec<&'static str> {
            words(q).into_iter().map(|w| &*Box::leak(w.into_boxed_str())).collect()
        };
        let catalog = "django/conf/locale/de/LC_MESSAGES/django.po";
        assert!(Aside::Translation.named_by(catalog, &t("German translation of the login page")));
        assert!(!Aside::Translation.named_by(catalog, &t("django login page")));
        let jquery = "django/contrib/admin/static/admin/js/vendor/jquery/jquery.js";
        assert!(Aside::Vendored.named_by(jquery, &t("how does jquery bind events")));
        assert!(!Aside::Vendored.named_by(jquery, &t("how are admin events bound")));
        assert!(Aside::Lock.named_by("Cargo.lock", &t("which serde version is in the lock file")));
        assert!(Aside::Lock.named_by("Cargo.lock", &t("cargo dependencies")));
        let set = Asides::of([Aside::Translation, Aside::Lock]);
        assert!(set.contains(Aside::Lock) && !set.contains(Aside::Vendored));
        let question = t("prevent other websites from framing our pages");
        assert!(set.leaves_out(Some(Aside::Translation), catalog, &question));
        assert!(!set.leaves_out(Some(Aside::Vendored), jquery, &question));
        assert!(!set.leaves_out(None, "django/middleware/clickjacking.py", &question));
        assert!(Asides::ALL.leaves_out(Some(Aside::Vendored), jquery, &question));
        assert!(Asides::NONE.is_empty());
    }
}
