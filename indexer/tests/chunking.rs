//! Snapshot tests of chunking per language, plus the coverage property on every fixture.

use std::path::Path;

use sift_indexer::chunk::{ChunkLimits, Chunker};

/// Small limits so the fixtures exercise container splitting and windowing.
fn limits() -> ChunkLimits {
    ChunkLimits { split_container_lines: 8, max_def_lines: 30, window_lines: 12 }
}

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/chunk").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Renders chunks one per line: range, kind, symbol, container, first line of text.
fn render(name: &str) -> String {
    let text = fixture(name);
    let mut chunker = Chunker::with_limits(limits());
    let chunked = chunker.chunk(Path::new(name), &text);
    let mut out = format!("parsed: {}\n", chunked.parsed);
    for c in &chunked.chunks {
        let first = chunked.text_of(&text, c).lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let container = match (&c.container_kind, &c.container) {
            (Some(k), Some(n)) => format!(" in {} {n}", k.as_str()),
            _ => String::new(),
        };
        out.push_str(&format!(
            "{:>3}-{:<3} {} {}{} | {}\n",
            c.start_row + 1,
            c.end_row + 1,
            c.kind.as_str(),
            c.symbol.as_deref().unwrap_or("-"),
            container,
            first.trim()
        ));
    }
    out
}

macro_rules! snapshot {
    ($test:ident, $file:expr) => {
        #[test]
        fn $test() {
            insta::assert_snapshot!(render($file));
        }
    };
}

snapshot!(rust, "sample.rs");
snapshot!(python, "sample.py");
snapshot!(javascript, "sample.js");
snapshot!(typescript, "sample.ts");
snapshot!(tsx, "sample.tsx");
snapshot!(go, "sample.go");
snapshot!(java, "Sample.java");
snapshot!(c, "sample.c");
snapshot!(cpp, "sample.cpp");
snapshot!(markdown_falls_back_to_lines, "notes.md");

const FIXTURES: &[&str] = &[
    "sample.rs",
    "sample.py",
    "sample.js",
    "sample.ts",
    "sample.tsx",
    "sample.go",
    "Sample.java",
    "sample.c",
    "sample.cpp",
    "notes.md",
];

/// Every line with a letter or digit on it must be findable: it lies in some chunk.
#[test]
fn every_meaningful_line_is_in_a_chunk() {
    for limits in [limits(), ChunkLimits::default()] {
        for name in FIXTURES {
            let text = fixture(name);
            let chunked = Chunker::with_limits(limits).chunk(Path::new(name), &text);
            for (row, line) in text.lines().enumerate() {
                if line.chars().any(char::is_alphanumeric) {
                    assert!(
                        chunked.chunks.iter().any(|c| c.start_row <= row && row <= c.end_row),
                        "{name}:{} is in no chunk: {line:?}",
                        row + 1
                    );
                }
            }
            for c in &chunked.chunks {
                assert!(c.start_row <= c.end_row, "{name}: inverted chunk {c:?}");
                assert!(
                    c.end_row - c.start_row
                        < limits.max_def_lines.max(limits.window_lines)
                            + limits.split_container_lines,
                    "{name}: oversized {c:?}"
                );
            }
        }
    }
}

#[test]
fn broken_code_still_chunks() {
    let text = "fn ok() { 1 }\n\nfn broken( {\n  let x = ;\n}\n\nstruct S { a: u8 }\n";
    let chunked = Chunker::default().chunk(Path::new("x.rs"), text);
    assert!(chunked.parsed);
    let symbols: Vec<_> = chunked.chunks.iter().filter_map(|c| c.symbol.as_deref()).collect();
    assert!(symbols.contains(&"ok"), "{symbols:?}");
    assert!(symbols.contains(&"S"), "{symbols:?}");
}

#[test]
fn empty_and_blank_files_have_no_chunks() {
    for text in ["", "\n\n   \n", "}\n)\n"] {
        for name in ["a.rs", "a.txt"] {
            let chunked = Chunker::default().chunk(Path::new(name), text);
            assert!(chunked.chunks.is_empty(), "{name} {text:?}: {:?}", chunked.chunks);
        }
    }
}

#[test]
fn long_functions_are_windowed_and_keep_their_name() {
    let mut text = String::from("fn long_one() {\n");
    for i in 0..100 {
        text.push_str(&format!("    let v{i} = {i};\n"));
    }
    text.push_str("}\n");
    let chunked = Chunker::with_limits(limits()).chunk(Path::new("l.rs"), &text);
    assert!(chunked.chunks.len() >= 8, "{}", chunked.chunks.len());
    assert!(chunked.chunks.iter().all(|c| c.symbol.as_deref() == Some("long_one")));
    assert!(chunked.chunks.iter().all(|c| c.end_row - c.start_row < 12));
}

#[test]
fn crlf_and_non_utf8_lossy_text_chunk() {
    let text = "def a():\r\n    return 1\r\n\r\ndef b():\r\n    return 'é\u{FFFD}'\r\n";
    let chunked = Chunker::default().chunk(Path::new("x.py"), text);
    let names: Vec<_> = chunked.chunks.iter().filter_map(|c| c.symbol.clone()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(chunked.text_of(text, &chunked.chunks[0]), "def a():\r\n    return 1");
}

#[test]
fn generated_and_huge_files_are_windowed_not_parsed() {
    let generated = "// Code generated by protoc-gen-go. DO NOT EDIT.\npackage pb\n\nfunc (x *Msg) Reset() {}\n";
    let chunked = Chunker::default().chunk(Path::new("msg.pb.go"), generated);
    assert!(!chunked.parsed);
    assert_eq!(chunked.chunks[0].kind.as_str(), "lines");

    let huge = "fn f() {}\n".repeat(sift_indexer::chunk::MAX_PARSED_BYTES / 10 + 1);
    assert!(!Chunker::default().chunk(Path::new("big.rs"), &huge).parsed);

    // A marker far below the top is just text.
    let mut normal = "fn a() {}\n".repeat(20);
    normal.push_str("// this comment says do not edit\n");
    assert!(Chunker::default().chunk(Path::new("ok.rs"), &normal).parsed);
}

#[test]
fn definitions_are_whole_and_include_every_member_whatever_the_limits() {
    // A 45-line class with a 40-line method: over every limit, yet each definition is whole.
    let mut text = String::from("import os\n\n\nclass Store:\n    def get(self, key):\n");
    for i in 0..39 {
        text.push_str(&format!("        x{i} = key\n"));
    }
    text.push_str("\n    class Meta:\n        def ordering(self):\n            return 1\n\n\ndef top():\n    return 2\n");
    let mut chunker = Chunker::with_limits(ChunkLimits {
        split_container_lines: 2,
        max_def_lines: 5,
        window_lines: 3,
    });
    let defs: Vec<String> = chunker
        .definitions(Path::new("m.py"), &text)
        .iter()
        .map(|c| {
            format!(
                "{} {}{} {}-{}",
                c.kind.as_str(),
                c.container.as_deref().map(|n| format!("{n}.")).unwrap_or_default(),
                c.symbol.as_deref().unwrap_or("-"),
                c.start_row + 1,
                c.end_row + 1
            )
        })
        .collect();
    assert_eq!(
        defs,
        [
            "class Store 4-48",
            "method Store.get 5-44",
            "class Store.Meta 46-48",
            "method Meta.ordering 47-48",
            "function top 51-52",
        ],
        "{defs:#?}"
    );
    assert!(chunker.definitions(Path::new("notes.txt"), &text).is_empty(), "no grammar");
}
