//! Which language a file is written in, decided by its name alone.

use std::path::Path;

/// A language that sift chunks with a tree-sitter grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    /// Rust (`.rs`).
    Rust,
    /// Python (`.py`, `.pyi`, `.pyw`).
    Python,
    /// JavaScript and JSX (`.js`, `.jsx`, `.mjs`, `.cjs`).
    JavaScript,
    /// TypeScript (`.ts`, `.mts`, `.cts`).
    TypeScript,
    /// TSX (`.tsx`).
    Tsx,
    /// Go (`.go`).
    Go,
    /// Java (`.java`).
    Java,
    /// C (`.c`, `.h`).
    C,
    /// C++ (`.cc`, `.cpp`, `.cxx`, `.c++`, `.hpp`, `.hh`, `.hxx`, `.h++`, `.ipp`, `.inl`).
    Cpp,
}

impl Language {
    /// Every language, in a fixed order.
    pub const ALL: [Language; 9] = [
        Language::Rust,
        Language::Python,
        Language::JavaScript,
        Language::TypeScript,
        Language::Tsx,
        Language::Go,
        Language::Java,
        Language::C,
        Language::Cpp,
    ];

    /// The language of `path`, from its extension; `None` for anything else.
    pub fn from_path(path: &Path) -> Option<Language> {
        let ext = path.extension()?.to_str()?;
        Some(match ext.to_ascii_lowercase().as_str() {
            "rs" => Language::Rust,
            "py" | "pyi" | "pyw" => Language::Python,
            "js" | "jsx" | "mjs" | "cjs" => Language::JavaScript,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "go" => Language::Go,
            "java" => Language::Java,
            "c" | "h" => Language::C,
            "cc" | "cpp" | "cxx" | "c++" | "hpp" | "hh" | "hxx" | "h++" | "ipp" | "inl" => {
                Language::Cpp
            }
            _ => return None,
        })
    }

    /// A short, stable, lowercase name (`"rust"`, `"tsx"`, `"cpp"`…), used in the index and output.
    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::Go => "go",
            Language::Java => "java",
            Language::C => "c",
            Language::Cpp => "cpp",
        }
    }

    /// The tree-sitter grammar.
    pub fn grammar(self) -> tree_sitter::Language {
        match self {
            Language::Rust => tree_sitter_rust::LANGUAGE.into(),
            Language::Python => tree_sitter_python::LANGUAGE.into(),
            Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Language::Go => tree_sitter_go::LANGUAGE.into(),
            Language::Java => tree_sitter_java::LANGUAGE.into(),
            Language::C => tree_sitter_c::LANGUAGE.into(),
            Language::Cpp => tree_sitter_cpp::LANGUAGE.into(),
        }
    }
}

/// A label for a text file that has no grammar here: a few common kinds by extension, else `"text"`.
pub fn text_label(path: &Path) -> &'static str {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "md" | "markdown" | "mdx" => "markdown",
        "rst" => "rst",
        "toml" => "toml",
        "yaml" | "yml" => "yaml",
        "json" | "jsonc" | "json5" => "json",
        "html" | "htm" => "html",
        "css" | "scss" | "sass" | "less" => "css",
        "sh" | "bash" | "zsh" | "fish" => "shell",
        "sql" => "sql",
        "rb" => "ruby",
        "php" => "php",
        "kt" | "kts" => "kotlin",
        "swift" => "swift",
        "cs" => "csharp",
        "scala" => "scala",
        "lua" => "lua",
        "xml" => "xml",
        "proto" => "protobuf",
        _ if name == "Dockerfile" => "dockerfile",
        _ if name == "Makefile" || name == "makefile" => "make",
        _ => "text",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_map_to_languages() {
        let cases = [
            ("a/b.rs", Some(Language::Rust)),
            ("x.PY", Some(Language::Python)),
            ("x.mjs", Some(Language::JavaScript)),
            ("x.ts", Some(Language::TypeScript)),
            ("x.tsx", Some(Language::Tsx)),
            ("x.go", Some(Language::Go)),
            ("X.java", Some(Language::Java)),
            ("x.h", Some(Language::C)),
            ("x.hpp", Some(Language::Cpp)),
            ("README.md", None),
            ("Makefile", None),
        ];
        for (path, lang) in cases {
            assert_eq!(Language::from_path(Path::new(path)), lang, "{path}");
        }
    }

    #[test]
    fn every_grammar_loads() {
        for lang in Language::ALL {
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(&lang.grammar()).unwrap_or_else(|e| panic!("{}: {e}", lang.name()));
        }
    }

    #[test]
    fn text_labels() {
        assert_eq!(text_label(Path::new("docs/intro.md")), "markdown");
        assert_eq!(text_label(Path::new("Dockerfile")), "dockerfile");
        assert_eq!(text_label(Path::new("notes.weird")), "text");
    }
}
