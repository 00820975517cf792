//! Symbol-aware chunking: a file becomes a list of line ranges, each a definition (function,
//! method, class, impl…) with its name and the name of what encloses it, or the code between
//! definitions.
//!
//! How it works: the file is parsed with its tree-sitter grammar, and the children of the root are
//! read in order. A child that is a definition becomes one chunk, together with the comments,
//! attributes and decorators right above it. A definition that is a container (class, impl, trait,
//! module, namespace, interface) and longer than [`ChunkLimits::split_container_lines`] is opened:
//! its header becomes a chunk of its own and its members are chunked the same way, with the
//! container's name kept. Code between definitions is grouped into `top-level` (or `body`) chunks.
//! Anything longer than its limit is cut into line windows that keep the symbol.
//!
//! Files without a grammar here, files whose parse fails, and files that look generated or are
//! huge ([`looks_generated`]) fall back to plain line windows.
//! Every non-blank line of a file lies in at least one chunk.

use std::path::Path;

use tree_sitter::{Node, Parser};

use crate::lang::Language;

/// What a chunk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChunkKind {
    /// A free function.
    Function,
    /// A function inside a class, impl, trait or interface.
    Method,
    /// A class.
    Class,
    /// A struct.
    Struct,
    /// An enum.
    Enum,
    /// A union.
    Union,
    /// A Rust trait.
    Trait,
    /// An interface (Go, Java, TypeScript).
    Interface,
    /// A Rust `impl` block.
    Impl,
    /// A module or namespace.
    Module,
    /// A type alias or other type definition.
    Type,
    /// A macro definition.
    Macro,
    /// Code between definitions at the top of a file (imports, constants, statements).
    TopLevel,
    /// Code between members inside an opened container.
    Body,
    /// A window of lines from a file without a grammar.
    Lines,
}

impl ChunkKind {
    /// The stable lowercase name used in the index and in `--json` output.
    pub fn as_str(self) -> &'static str {
        match self {
            ChunkKind::Function => "function",
            ChunkKind::Method => "method",
            ChunkKind::Class => "class",
            ChunkKind::Struct => "struct",
            ChunkKind::Enum => "enum",
            ChunkKind::Union => "union",
            ChunkKind::Trait => "trait",
            ChunkKind::Interface => "interface",
            ChunkKind::Impl => "impl",
            ChunkKind::Module => "module",
            ChunkKind::Type => "type",
            ChunkKind::Macro => "macro",
            ChunkKind::TopLevel => "top-level",
            ChunkKind::Body => "body",
            ChunkKind::Lines => "lines",
        }
    }

    fn holds_methods(self) -> bool {
        matches!(
            self,
            ChunkKind::Class
                | ChunkKind::Struct
                | ChunkKind::Trait
                | ChunkKind::Interface
                | ChunkKind::Impl
        )
    }
}

/// One chunk of a file: a range of whole lines and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// First line, 0-based.
    pub start_row: usize,
    /// Last line, 0-based, inclusive.
    pub end_row: usize,
    /// What the chunk is.
    pub kind: ChunkKind,
    /// The defined symbol's name, when the chunk is a definition.
    pub symbol: Option<String>,
    /// The enclosing symbol's name (a method's class, impl or trait; a class's namespace).
    pub container: Option<String>,
    /// The enclosing symbol's kind.
    pub container_kind: Option<ChunkKind>,
}

/// Size limits for chunks, in lines.
#[derive(Debug, Clone, Copy)]
pub struct ChunkLimits {
    /// A container longer than this is opened and its members chunked one by one.
    pub split_container_lines: usize,
    /// A definition longer than this is cut into windows.
    pub max_def_lines: usize,
    /// The window size used when cutting long definitions and long stretches of other code.
    pub window_lines: usize,
}

impl Default for ChunkLimits {
    fn default() -> Self {
        ChunkLimits { split_container_lines: 50, max_def_lines: 120, window_lines: 60 }
    }
}

/// The result of chunking one file.
#[derive(Debug, Clone)]
pub struct ChunkedFile {
    /// The chunks, in file order.
    pub chunks: Vec<Chunk>,
    /// Byte offset of the start of each line (the text's line table).
    pub line_starts: Vec<usize>,
    /// Whether a grammar was used (false: line windows).
    pub parsed: bool,
}

impl ChunkedFile {
    /// The text of `chunk` in `text` (whole lines, trailing newline excluded).
    pub fn text_of<'t>(&self, text: &'t str, chunk: &Chunk) -> &'t str {
        let start = self.line_starts[chunk.start_row];
        let end = self.line_starts.get(chunk.end_row + 1).copied().unwrap_or(text.len());
        text[start..end].trim_end_matches(['\n', '\r'])
    }
}

/// Byte offsets where each line starts.
pub fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = Vec::with_capacity(text.len() / 32 + 1);
    starts.push(0);
    starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
    if starts.len() > 1 && *starts.last().unwrap_or(&0) == text.len() {
        starts.pop();
    }
    starts
}

/// Reusable chunker: holds one tree-sitter parser per language so threads can reuse them.
#[derive(Default)]
pub struct Chunker {
    parsers: Vec<(Language, Parser)>,
    limits: ChunkLimits,
}

impl Chunker {
    /// A chunker with custom limits.
    pub fn with_limits(limits: ChunkLimits) -> Self {
        Chunker { parsers: Vec::new(), limits }
    }

    fn parser(&mut self, lang: Language) -> Option<&mut Parser> {
        let at = match self.parsers.iter().position(|(l, _)| *l == lang) {
            Some(at) => at,
            None => {
                let mut parser = Parser::new();
                parser.set_language(&lang.grammar()).ok()?;
                self.parsers.push((lang, parser));
                self.parsers.len() - 1
            }
        };
        Some(&mut self.parsers[at].1)
    }

    /// Every definition of `text` (the content of `path`), whole, from one parse: each with
    /// its full span (long definitions not cut into windows, containers not cut at their
    /// members) and, for containers, each member too, named with its container. In file order
    /// (outer before inner at the same line). Empty without a grammar, and for very large or
    /// generated files, which [`Chunker::chunk`] does not parse either.
    pub fn definitions(&mut self, path: &Path, text: &str) -> Vec<Chunk> {
        self.chunk_and_define(path, text, true).1
    }

    /// Chunks `text`, the content of `path`.
    pub fn chunk(&mut self, path: &Path, text: &str) -> ChunkedFile {
        self.chunk_and_define(path, text, false).0
    }

    /// [`Chunker::chunk`] and, when `define`, [`Chunker::definitions`] from the same parse.
    pub fn chunk_and_define(
        &mut self,
        path: &Path,
        text: &str,
        define: bool,
    ) -> (ChunkedFile, Vec<Chunk>) {
        let starts = line_starts(text);
        let limits = self.limits;
        if !looks_generated(text)
            && let Some(lang) = Language::from_path(path)
            && let Some(parser) = self.parser(lang)
            && let Some(tree) = parser.parse(text, None)
        {
            let mut cx =
                Cx { lang, src: text, starts: &starts, limits, out: Vec::new(), whole: false };
            cx.children(tree.root_node(), None, None);
            let mut chunks = cx.out;
            chunks.sort_by_key(|c| (c.start_row, c.end_row));
            let mut defs = Vec::new();
            if define {
                let mut cx =
                    Cx { lang, src: text, starts: &starts, limits, out: Vec::new(), whole: true };
                cx.children(tree.root_node(), None, None);
                defs = cx.out;
                defs.sort_by_key(|c| (c.start_row, std::cmp::Reverse(c.end_row)));
            }
            return (ChunkedFile { chunks, line_starts: starts, parsed: true }, defs);
        }
        let mut chunks = Vec::new();
        let nonblank = NonBlank { text, starts: &starts };
        if let Some((first, last)) = nonblank.trim(0, starts.len().saturating_sub(1)) {
            push_windows(&mut chunks, &nonblank, first, last, limits.window_lines, |s, e| Chunk {
                start_row: s,
                end_row: e,
                kind: ChunkKind::Lines,
                symbol: None,
                container: None,
                container_kind: None,
            });
        }
        (ChunkedFile { chunks, line_starts: starts, parsed: false }, Vec::new())
    }
}

/// Files larger than this are cut into line windows without parsing.
pub const MAX_PARSED_BYTES: usize = 256 * 1024;

/// Markers that generators put near the top of what they write.
const GENERATED_MARKERS: [&str; 5] =
    ["@generated", "do not edit", "code generated", "auto-generated", "automatically generated"];

/// Whether a file is better cut into line windows than parsed: very large files and files that
/// say near their top that a tool generated them (bindings, tables, protobuf output). Their
/// symbols stay searchable word for word; parsing them would cost a large share of indexing time
/// (a quarter of the bytes of a typical `cargo vendor` tree) for chunks nobody reads as units.
pub fn looks_generated(text: &str) -> bool {
    text.len() > MAX_PARSED_BYTES || says_generated(text)
}

/// Whether the first lines of `text` (a file's start) say that a tool generated it.
pub(crate) fn says_generated(text: &str) -> bool {
    let mut head_end = text.len().min(2048);
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let head = text[..head_end].to_ascii_lowercase();
    head.lines().take(12).any(|line| GENERATED_MARKERS.iter().any(|m| line.contains(m)))
}

/// Line helpers over a text and its line table.
struct NonBlank<'a> {
    text: &'a str,
    starts: &'a [usize],
}

impl NonBlank<'_> {
    fn line(&self, row: usize) -> &str {
        let start = self.starts[row];
        let end = self.starts.get(row + 1).copied().unwrap_or(self.text.len());
        &self.text[start..end]
    }

    /// Whether the line holds something worth finding (a letter or digit).
    fn meaningful(&self, row: usize) -> bool {
        self.line(row).chars().any(char::is_alphanumeric)
    }

    /// Shrinks `[first, last]` to its meaningful lines; `None` when there are none.
    fn trim(&self, mut first: usize, mut last: usize) -> Option<(usize, usize)> {
        if self.starts.is_empty() {
            return None;
        }
        last = last.min(self.starts.len() - 1);
        while first <= last && !self.meaningful(first) {
            first += 1;
        }
        while last > first && !self.meaningful(last) {
            last -= 1;
        }
        (first <= last && self.meaningful(first)).then_some((first, last))
    }
}

/// Cuts `[first, last]` into windows of at most `window` lines, skipping windows with nothing in
/// them.
fn push_windows(
    out: &mut Vec<Chunk>,
    lines: &NonBlank<'_>,
    first: usize,
    last: usize,
    window: usize,
    make: impl Fn(usize, usize) -> Chunk,
) {
    let window = window.max(1);
    let mut start = first;
    while start <= last {
        let end = (start + window - 1).min(last);
        if let Some((s, e)) = lines.trim(start, end) {
            out.push(make(s, e));
        }
        start = end + 1;
    }
}

/// A definition recognised in the tree.
struct Def<'t> {
    kind: ChunkKind,
    /// The symbol name shown for the definition.
    name: Option<String>,
    /// The name its members see as their container (an impl's type, without the trait).
    member_container: Option<String>,
    /// Where its members live, when it is a container.
    body: Option<Node<'t>>,
}

struct Cx<'a> {
    lang: Language,
    src: &'a str,
    starts: &'a [usize],
    limits: ChunkLimits,
    out: Vec<Chunk>,
    /// Definitions only, whole, and every container's members as well
    /// ([`Chunker::definitions`]).
    whole: bool,
}

/// A stretch of non-definition code being accumulated.
struct Gap {
    start_row: usize,
    end_row: usize,
}

/// The header of an opened container: the first gap inside it is labelled with this.
#[derive(Clone)]
struct Header {
    row: usize,
    name: Option<String>,
    kind: ChunkKind,
    /// The container around the opened container.
    outer: Option<(String, ChunkKind)>,
}

impl<'a> Cx<'a> {
    fn text(&self, node: Node<'_>) -> &'a str {
        &self.src[node.byte_range()]
    }

    fn field_text(&self, node: Node<'_>, field: &str) -> Option<String> {
        node.child_by_field_name(field).map(|n| squash(self.text(n)))
    }

    fn lines(&self) -> NonBlank<'a> {
        NonBlank { text: self.src, starts: self.starts }
    }

    /// Walks the children of `parent`; `container` names what encloses them; `header` is set when
    /// `parent` is the body of an opened container.
    fn children(
        &mut self,
        parent: Node<'_>,
        container: Option<(&str, ChunkKind)>,
        mut header: Option<Header>,
    ) {
        let mut gap: Option<Gap> =
            header.as_ref().map(|h| Gap { start_row: h.row, end_row: h.row });
        // Start row of the run of comments/attributes right above the next node.
        let mut prefix: Option<usize> = None;
        let mut last_end_row: Option<usize> = None;
        let mut cursor = parent.walk();
        for child in parent.children(&mut cursor) {
            let start = child.start_position().row;
            let end = child.end_position().row;
            let adjacent = last_end_row.is_some_and(|e| start <= e + 1);
            if is_prefix_like(self.lang, child) {
                if prefix.is_none() || !adjacent {
                    prefix = Some(start);
                }
                grow(&mut gap, start, end);
                last_end_row = Some(end);
                continue;
            }
            if let Some((outer, def)) = self.definition(child) {
                let from = match prefix {
                    Some(p) if adjacent => p,
                    _ => start,
                };
                if let Some(g) = gap.take()
                    && from > g.start_row
                {
                    self.flush_gap(g.start_row, g.end_row.min(from - 1), container, header.take());
                }
                header = None;
                self.emit_def(outer, def, from, container);
                prefix = None;
                last_end_row = Some(outer.end_position().row);
                continue;
            }
            prefix = None;
            if let Some(inner) = transparent_body(self.lang, child) {
                // The opening line (`extern "C" {`) goes with the code before it.
                if inner.id() != child.id() {
                    grow(&mut gap, start, inner.start_position().row);
                }
                if let Some(g) = gap.take() {
                    self.flush_gap(g.start_row, g.end_row, container, header.take());
                }
                self.children(inner, container, None);
                last_end_row = Some(end);
                continue;
            }
            // Punctuation (`{`, `}`) alone starts nothing; keywords such as `#endif` do.
            if child.is_named() || self.text(child).chars().any(char::is_alphanumeric) {
                grow(&mut gap, start, end);
            }
            last_end_row = Some(end);
        }
        if let Some(g) = gap {
            self.flush_gap(g.start_row, g.end_row, container, header);
        }
    }

    fn flush_gap(
        &mut self,
        first: usize,
        last: usize,
        container: Option<(&str, ChunkKind)>,
        header: Option<Header>,
    ) {
        if self.whole {
            return;
        }
        let lines = self.lines();
        let Some((first, last)) = lines.trim(first, last) else { return };
        let (kind, symbol, cont) = match header {
            Some(h) => (h.kind, h.name, h.outer),
            None => match container {
                Some((n, k)) => (ChunkKind::Body, None, Some((n.to_string(), k))),
                None => (ChunkKind::TopLevel, None, None),
            },
        };
        let window = self.limits.window_lines;
        push_windows(&mut self.out, &lines, first, last, window, |s, e| Chunk {
            start_row: s,
            end_row: e,
            kind,
            symbol: symbol.clone(),
            container: cont.as_ref().map(|(n, _)| n.clone()),
            container_kind: cont.as_ref().map(|(_, k)| *k),
        });
    }

    fn emit_def(
        &mut self,
        outer: Node<'_>,
        def: Def<'_>,
        from_row: usize,
        container: Option<(&str, ChunkKind)>,
    ) {
        let end_row = outer.end_position().row;
        let lines_long = end_row - from_row + 1;
        let kind = match def.kind {
            ChunkKind::Function if container.is_some_and(|(_, k)| k.holds_methods()) => {
                ChunkKind::Method
            }
            k => k,
        };
        let outer_container = container.map(|(n, k)| (n.to_string(), k));
        if self.whole {
            self.out.push(Chunk {
                start_row: from_row,
                end_row,
                kind,
                symbol: def.name.clone(),
                container: outer_container.as_ref().map(|(n, _)| n.clone()),
                container_kind: outer_container.as_ref().map(|(_, k)| *k),
            });
            if let Some(body) = def.body {
                let member_container = def.member_container.or(def.name).unwrap_or_default();
                self.children(body, Some((&member_container, kind)), None);
            }
            return;
        }
        if let Some(body) = def.body
            && lines_long > self.limits.split_container_lines
        {
            let member_container =
                def.member_container.clone().or_else(|| def.name.clone()).unwrap_or_default();
            let header = Header {
                row: from_row,
                name: def.name.clone(),
                kind,
                outer: outer_container.clone(),
            };
            let before = self.out.len();
            self.children(body, Some((&member_container, kind)), Some(header));
            if !self.out[before..].iter().any(|c| c.start_row == from_row) {
                // No header text of its own (a member starts on the first line): keep a marker.
                self.out.push(Chunk {
                    start_row: from_row,
                    end_row: from_row,
                    kind,
                    symbol: def.name,
                    container: outer_container.as_ref().map(|(n, _)| n.clone()),
                    container_kind: outer_container.as_ref().map(|(_, k)| *k),
                });
            }
            return;
        }
        let make = |s: usize, e: usize| Chunk {
            start_row: s,
            end_row: e,
            kind,
            symbol: def.name.clone(),
            container: outer_container.as_ref().map(|(n, _)| n.clone()),
            container_kind: outer_container.as_ref().map(|(_, k)| *k),
        };
        if lines_long > self.limits.max_def_lines {
            let lines = self.lines();
            push_windows(&mut self.out, &lines, from_row, end_row, self.limits.window_lines, make);
        } else {
            self.out.push(make(from_row, end_row));
        }
    }

    /// Recognises a definition; returns the node spanning it (a wrapper such as a decorator or
    /// `export` included) and what it defines.
    fn definition<'t>(&self, node: Node<'t>) -> Option<(Node<'t>, Def<'t>)> {
        if let Some(inner) = wrapped_definition(self.lang, node) {
            return self.definition(inner).map(|(_, def)| (node, def));
        }
        self.classify(node).map(|def| (node, def))
    }

    fn classify<'t>(&self, node: Node<'t>) -> Option<Def<'t>> {
        use ChunkKind as K;
        let kind = node.kind();
        let named = |k: ChunkKind| Def {
            kind: k,
            name: self.field_text(node, "name"),
            member_container: None,
            body: None,
        };
        let container = |k: ChunkKind| Def {
            kind: k,
            name: self.field_text(node, "name"),
            member_container: None,
            body: node.child_by_field_name("body"),
        };
        Some(match self.lang {
            Language::Rust => match kind {
                "function_item" | "function_signature_item" => named(K::Function),
                "struct_item" => named(K::Struct),
                "enum_item" => named(K::Enum),
                "union_item" => named(K::Union),
                "type_item" => named(K::Type),
                "macro_definition" => named(K::Macro),
                "trait_item" => container(K::Trait),
                "mod_item" if node.child_by_field_name("body").is_some() => container(K::Module),
                "impl_item" => {
                    let ty = self.field_text(node, "type").map(|t| strip_generics(&t));
                    let name = match (self.field_text(node, "trait"), &ty) {
                        (Some(tr), Some(ty)) => Some(format!("{} for {ty}", strip_generics(&tr))),
                        _ => ty.clone(),
                    };
                    Def {
                        kind: K::Impl,
                        name,
                        member_container: ty,
                        body: node.child_by_field_name("body"),
                    }
                }
                _ => return None,
            },
            Language::Python => match kind {
                "function_definition" => named(K::Function),
                "class_definition" => container(K::Class),
                _ => return None,
            },
            Language::JavaScript | Language::TypeScript | Language::Tsx => match kind {
                "function_declaration"
                | "generator_function_declaration"
                | "function_signature" => named(K::Function),
                "method_definition" | "method_signature" | "abstract_method_signature" => {
                    named(K::Method)
                }
                "class_declaration" | "abstract_class_declaration" | "class" => container(K::Class),
                "interface_declaration" => container(K::Interface),
                "type_alias_declaration" => named(K::Type),
                "enum_declaration" => named(K::Enum),
                "internal_module" | "module" => container(K::Module),
                "lexical_declaration" | "variable_declaration" => self.js_variable(node)?,
                "field_definition" | "public_field_definition" => {
                    let value = node.child_by_field_name("value")?;
                    if !matches!(
                        value.kind(),
                        "arrow_function" | "function_expression" | "function"
                    ) {
                        return None;
                    }
                    let name = node
                        .child_by_field_name("property")
                        .or_else(|| node.child_by_field_name("name"))
                        .map(|n| squash(self.text(n)));
                    Def { kind: K::Method, name, member_container: None, body: None }
                }
                _ => return None,
            },
            Language::Go => match kind {
                "function_declaration" => named(K::Function),
                "method_declaration" => {
                    let receiver = node.child_by_field_name("receiver").and_then(|r| {
                        let mut c = r.walk();
                        let param = r.named_children(&mut c).next()?;
                        let ty = param.child_by_field_name("type")?;
                        Some(strip_generics(self.text(ty).trim_start_matches('*')))
                    });
                    Def {
                        kind: K::Method,
                        name: self.field_text(node, "name"),
                        member_container: receiver,
                        body: None,
                    }
                }
                "type_declaration" => {
                    let mut c = node.walk();
                    let spec = node
                        .named_children(&mut c)
                        .find(|n| matches!(n.kind(), "type_spec" | "type_alias"))?;
                    let k = match spec.child_by_field_name("type").map(|t| t.kind()) {
                        Some("struct_type") => K::Struct,
                        Some("interface_type") => K::Interface,
                        _ => K::Type,
                    };
                    Def {
                        kind: k,
                        name: self.field_text(spec, "name"),
                        member_container: None,
                        body: None,
                    }
                }
                _ => return None,
            },
            Language::Java => match kind {
                "class_declaration" | "record_declaration" => container(K::Class),
                "interface_declaration" | "annotation_type_declaration" => container(K::Interface),
                "enum_declaration" => container(K::Enum),
                "method_declaration"
                | "constructor_declaration"
                | "compact_constructor_declaration" => named(K::Method),
                _ => return None,
            },
            Language::C | Language::Cpp => match kind {
                "function_definition" => {
                    let name =
                        node.child_by_field_name("declarator").map(|d| self.declarator_name(d));
                    Def { kind: K::Function, name, member_container: None, body: None }
                }
                "struct_specifier" | "union_specifier" | "enum_specifier" | "class_specifier"
                    if node.child_by_field_name("body").is_some() =>
                {
                    let k = match kind {
                        "struct_specifier" => K::Struct,
                        "union_specifier" => K::Union,
                        "enum_specifier" => K::Enum,
                        _ => K::Class,
                    };
                    if k == K::Enum || self.lang == Language::C { named(k) } else { container(k) }
                }
                "type_definition" | "declaration" => {
                    // `typedef struct {…} name;` and `struct s {…} x;`: a type with a body.
                    let ty = node.child_by_field_name("type")?;
                    ty.child_by_field_name("body")?;
                    let mut def = self.classify(ty)?;
                    if def.name.is_none() {
                        def.name =
                            node.child_by_field_name("declarator").map(|d| self.declarator_name(d));
                    }
                    def
                }
                "namespace_definition" => container(K::Module),
                "concept_definition" => named(K::Type),
                _ => return None,
            },
        })
    }

    fn js_variable<'t>(&self, node: Node<'t>) -> Option<Def<'t>> {
        let mut c = node.walk();
        let declarators: Vec<Node<'t>> =
            node.named_children(&mut c).filter(|n| n.kind() == "variable_declarator").collect();
        let [decl] = declarators.as_slice() else { return None };
        let value = decl.child_by_field_name("value")?;
        let kind = match value.kind() {
            "arrow_function" | "function_expression" | "function" | "generator_function" => {
                ChunkKind::Function
            }
            "class" => ChunkKind::Class,
            _ => return None,
        };
        let body = (kind == ChunkKind::Class).then(|| value.child_by_field_name("body")).flatten();
        Some(Def { kind, name: self.field_text(*decl, "name"), member_container: None, body })
    }

    fn declarator_name(&self, mut node: Node<'_>) -> String {
        const WRAPPERS: &[&str] = &[
            "function_declarator",
            "pointer_declarator",
            "reference_declarator",
            "parenthesized_declarator",
            "attributed_declarator",
            "array_declarator",
        ];
        while WRAPPERS.contains(&node.kind())
            && let Some(next) = node.child_by_field_name("declarator").or_else(|| {
                let mut c = node.walk();
                node.named_children(&mut c).next()
            })
        {
            node = next;
        }
        squash(self.text(node))
    }
}

fn grow(gap: &mut Option<Gap>, start: usize, end: usize) {
    match gap {
        Some(g) => g.end_row = g.end_row.max(end),
        None => *gap = Some(Gap { start_row: start, end_row: end }),
    }
}

/// Comments, attributes and decorators that belong to the definition below them.
fn is_prefix_like(lang: Language, node: Node<'_>) -> bool {
    let kind = node.kind();
    kind.contains("comment") || (lang == Language::Rust && kind == "attribute_item")
}

/// Wrappers whose inner node is the real definition: decorators, `export`, `template<…>`,
/// `declare`.
fn wrapped_definition<'t>(lang: Language, node: Node<'t>) -> Option<Node<'t>> {
    match (lang, node.kind()) {
        (Language::Python, "decorated_definition") => node.child_by_field_name("definition"),
        (Language::JavaScript | Language::TypeScript | Language::Tsx, "export_statement") => {
            node.child_by_field_name("declaration").or_else(|| node.child_by_field_name("value"))
        }
        (Language::TypeScript | Language::Tsx, "expression_statement") => {
            // `namespace X { … }` parses as an expression statement around the module.
            let inner = node.named_child(0)?;
            matches!(inner.kind(), "internal_module" | "module").then_some(inner)
        }
        (Language::TypeScript | Language::Tsx, "ambient_declaration") => {
            let mut c = node.walk();
            node.named_children(&mut c).find(|n| !n.kind().contains("comment"))
        }
        (Language::Cpp, "template_declaration") => {
            let mut c = node.walk();
            node.named_children(&mut c).filter(|n| n.kind() != "template_parameter_list").last()
        }
        _ => None,
    }
}

/// Nodes whose children are read as if they stood where the node stands (preprocessor
/// conditionals, `extern "C" { … }`).
fn transparent_body<'t>(lang: Language, node: Node<'t>) -> Option<Node<'t>> {
    match (lang, node.kind()) {
        (
            Language::C | Language::Cpp,
            "preproc_if" | "preproc_ifdef" | "preproc_else" | "preproc_elif" | "preproc_elifdef",
        ) => Some(node),
        (Language::Cpp, "linkage_specification") => node.child_by_field_name("body"),
        _ => None,
    }
}

/// Collapses whitespace runs to single spaces.
fn squash(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(128));
    for (i, word) in text.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// `Foo<T>` → `Foo`; `a::b::Foo<T>` → `a::b::Foo`.
fn strip_generics(text: &str) -> String {
    squash(text.split('<').next().unwrap_or(text).trim())
}
