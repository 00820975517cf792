//! Named checks: conditions on a match that tree-sitter predicates cannot express, written in a
//! rule file as `check = "name:capture,capture"` (or a list of them) and run in Rust after the
//! query matched. The set is small and generic on purpose:
//!
//! - `duplicate-keys:<container>`: the container's `pair` children (and JavaScript shorthand
//!   properties) with the same literal key. Each key after the first becomes a finding, and the
//!   templates can use `{key}` for it. Keys that are not plain literals or names are ignored,
//!   so `{f(): 1, f(): 2}` is never reported.
//! - `mentions:<tree>,<name>`: the subtree of `<tree>` uses the name that `<name>` captured, as
//!   a variable (not as an attribute, property or keyword argument name). A missing `<tree>`
//!   capture mentions nothing.
//! - `mutates:<tree>,<name>`: the subtree of `<tree>` mutates the collection that `<name>`
//!   captured, in place and without rebinding it first (Python's shapes: `name.append(...)` and
//!   the other mutating methods of list, dict and set, `name[k] = v`, `name[k] += v`,
//!   `del name[k]`, `name += ...`). Any plain rebinding `name = ...` in the subtree makes it
//!   false, since the shared object may have been replaced before the mutation.
//! - `file-contains:<text>`: the file's source contains `<text>` (plain text, commas allowed), for
//!   rules that only hold under an import (`file-contains:import logging`,
//!   `!file-contains:loguru`).
//! - `!<check>`: the negation of a check that does not move findings (`!mentions:params,var`).

use std::fmt;

use rustc_hash::FxHashMap;
use sift_indexer::Language;
use tree_sitter::Node;

/// A check, parsed from its text form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Check {
    /// `duplicate-keys:<container>`.
    DuplicateKeys {
        /// The capture holding the dict/object literal.
        container: String,
    },
    /// `file-contains:<text>`, or `!file-contains:…` when `negated`.
    FileContains {
        /// Whether the check is negated.
        negated: bool,
        /// The text looked for.
        text: String,
    },
    /// `mentions:<tree>,<name>` or `mutates:<tree>,<name>`, or their negation.
    Name {
        /// Which test.
        test: NameTest,
        /// Whether the check is negated (`!mentions`).
        negated: bool,
        /// The capture whose subtree is searched.
        tree: String,
        /// The capture whose text is the name looked for.
        name: String,
    },
}

/// What a [`Check::Name`] looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameTest {
    /// The name is used as a variable.
    Mentions,
    /// The collection the name holds is mutated in place.
    Mutates,
}

impl NameTest {
    fn as_str(self) -> &'static str {
        match self {
            NameTest::Mentions => "mentions",
            NameTest::Mutates => "mutates",
        }
    }
}

/// Where a finding will be reported, with any extra captures a check supplies.
pub(crate) struct Site<'t> {
    /// The reported node.
    pub(crate) node: Node<'t>,
    /// Extra named nodes for templates (`key` for `duplicate-keys`).
    pub(crate) extra: Vec<(&'static str, Node<'t>)>,
}

impl Check {
    /// Parses `name:arg,arg`.
    pub(crate) fn parse(spec: &str) -> Result<Check, String> {
        let spec = spec.trim();
        let (negated, body) = match spec.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, spec),
        };
        let (name, args) = body.split_once(':').unwrap_or((body, ""));
        if name == "file-contains" {
            if args.is_empty() {
                return Err(format!(
                    "check `{spec}` needs the text to look for: `file-contains:<text>`"
                ));
            }
            return Ok(Check::FileContains { negated, text: args.to_string() });
        }
        let args: Vec<String> =
            args.split(',').map(|a| a.trim().trim_start_matches('@').to_string()).collect();
        let arity = |n: usize| -> Result<(), String> {
            if args.len() == n && args.iter().all(|a| !a.is_empty()) {
                Ok(())
            } else {
                Err(format!(
                    "check `{spec}` takes {n} capture name(s), like `{name}:{}`",
                    ["a", "b"][..n].join(",")
                ))
            }
        };
        match name {
            "duplicate-keys" => {
                arity(1)?;
                if negated {
                    return Err(format!(
                        "check `{spec}` cannot be negated: it moves findings to the duplicates"
                    ));
                }
                Ok(Check::DuplicateKeys { container: args[0].clone() })
            }
            "mentions" | "mutates" => {
                arity(2)?;
                let test = if name == "mentions" { NameTest::Mentions } else { NameTest::Mutates };
                Ok(Check::Name { test, negated, tree: args[0].clone(), name: args[1].clone() })
            }
            _ => Err(format!(
                "unknown check `{name}`; known: duplicate-keys:<container>, mentions:<tree>,<name>, \
                 mutates:<tree>,<name>, file-contains:<text>, and `!` before a check to negate it"
            )),
        }
    }

    /// The captures the check reads.
    pub(crate) fn captures(&self) -> Vec<&str> {
        match self {
            Check::DuplicateKeys { container } => vec![container],
            Check::Name { tree, name, .. } => vec![tree, name],
            Check::FileContains { .. } => Vec::new(),
        }
    }

    /// The extra names the check makes available to templates.
    pub(crate) fn provides(&self) -> &'static [&'static str] {
        match self {
            Check::DuplicateKeys { .. } => &["key"],
            Check::Name { .. } | Check::FileContains { .. } => &[],
        }
    }

    /// Runs the check on one match: `capture(name)` gives the first node of a capture. Returns the
    /// sites to report (possibly moved, possibly none).
    pub(crate) fn apply<'t>(
        &self,
        source: &str,
        language: Language,
        capture: &dyn Fn(&str) -> Option<Node<'t>>,
        sites: Vec<Site<'t>>,
    ) -> Vec<Site<'t>> {
        match self {
            Check::DuplicateKeys { container } => match capture(container) {
                Some(node) => duplicate_keys(source, node, is_js(language))
                    .into_iter()
                    .map(|key| Site { node: key, extra: vec![("key", key)] })
                    .collect(),
                None => Vec::new(),
            },
            Check::FileContains { negated, text } => {
                if source.contains(text.as_str()) != *negated {
                    sites
                } else {
                    Vec::new()
                }
            }
            Check::Name { test, negated, tree, name } => {
                let found = match (capture(tree), capture(name)) {
                    (Some(tree), Some(name)) => match test {
                        NameTest::Mentions => mentions(source, tree, text(source, name)),
                        NameTest::Mutates => mutates(source, tree, text(source, name)),
                    },
                    _ => false,
                };
                if found != *negated { sites } else { Vec::new() }
            }
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Check::DuplicateKeys { container } => write!(f, "duplicate-keys:{container}"),
            Check::FileContains { negated, text } => {
                write!(f, "{}file-contains:{text}", if *negated { "!" } else { "" })
            }
            Check::Name { test, negated, tree, name } => {
                write!(f, "{}{}:{tree},{name}", if *negated { "!" } else { "" }, test.as_str())
            }
        }
    }
}

fn text<'s>(source: &'s str, node: Node<'_>) -> &'s str {
    source.get(node.byte_range()).unwrap_or("")
}

/// The key nodes of `container` that repeat an earlier key.
fn duplicate_keys<'t>(source: &str, container: Node<'t>, js: bool) -> Vec<Node<'t>> {
    let mut seen: FxHashMap<String, ()> = FxHashMap::default();
    let mut dups = Vec::new();
    let mut cursor = container.walk();
    for child in container.named_children(&mut cursor) {
        let key = match child.kind() {
            "pair" => child.child_by_field_name("key"),
            "shorthand_property_identifier" => Some(child),
            _ => None,
        };
        let Some(key) = key else { continue };
        let Some(normal) = key_text(source, key, js) else { continue };
        if seen.insert(normal, ()).is_some() {
            dups.push(key);
        }
    }
    dups
}

/// A normal form of a literal key, or `None` when the key is not a plain literal or name (an
/// f-string, a call, a computed property…), which could differ at run time.
fn key_text(source: &str, key: Node<'_>, js: bool) -> Option<String> {
    let raw = text(source, key);
    match key.kind() {
        // Names: Python variables, JavaScript property names and shorthand properties.
        "identifier" | "property_identifier" | "shorthand_property_identifier" => {
            Some(format!("n:{raw}"))
        }
        // Dotted names such as `Color.RED`.
        "attribute" if raw.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.') => {
            Some(format!("n:{raw}"))
        }
        "integer" | "float" | "number" => Some(format!("#:{raw}")),
        "true" | "false" | "none" | "null" | "undefined" => Some(format!("k:{raw}")),
        "string" => string_key(raw, key, js),
        _ => None,
    }
}

/// `'a'`, `"a"` and (in JavaScript, where property names are strings) `a` are the same key;
/// escapes, interpolation and byte strings keep their exact spelling.
fn string_key(raw: &str, node: Node<'_>, js: bool) -> Option<String> {
    let mut cursor = node.walk();
    if node
        .named_children(&mut cursor)
        .any(|c| c.kind() == "interpolation" || c.kind() == "template_substitution")
    {
        return None;
    }
    let prefix_len = raw.find(['\'', '"']).unwrap_or(0);
    let (prefix, quoted) = raw.split_at(prefix_len);
    let prefix = prefix.to_ascii_lowercase();
    if prefix.contains('f') {
        return None;
    }
    let is_bytes = prefix.contains('b');
    let inner = ["\"\"\"", "'''", "\"", "'"]
        .iter()
        .find_map(|q| quoted.strip_prefix(q).and_then(|s| s.strip_suffix(q)))?;
    if inner.contains('\\') {
        return Some(format!("s:{raw}"));
    }
    // JavaScript: `{a: 1, "a": 2}` repeats key `a`; Python names are variables, not strings.
    Some(if js {
        format!("n:{inner}")
    } else if is_bytes {
        format!("b:{inner}")
    } else {
        format!("s:{inner}")
    })
}

/// Whether property names of `language` are strings (`{a: 1}` is `{"a": 1}`).
fn is_js(language: Language) -> bool {
    matches!(language, Language::JavaScript | Language::TypeScript | Language::Tsx)
}

/// The identifier nodes in the subtree of `tree` that use `name` as a variable (not as an
/// attribute, property, field or keyword-argument name).
fn variable_uses<'t>(source: &str, tree: Node<'t>, name: &str) -> Vec<Node<'t>> {
    let mut uses = Vec::new();
    if name.is_empty() {
        return uses;
    }
    let mut cursor = tree.walk();
    loop {
        let node = cursor.node();
        if node.kind() == "identifier" && text(source, node) == name {
            let field = cursor.field_name();
            let parent = node.parent().map(|p| p.kind());
            let not_a_variable = matches!(
                (parent, field),
                (Some("attribute"), Some("attribute"))
                    | (Some("keyword_argument"), Some("name"))
                    | (Some("member_expression"), Some("property"))
                    | (Some("field_expression"), Some("field"))
            );
            if !not_a_variable {
                uses.push(node);
            }
        }
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.node() == tree {
                return uses;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return uses;
            }
        }
    }
}

/// Whether the subtree of `tree` uses `name` as a variable.
fn mentions(source: &str, tree: Node<'_>, name: &str) -> bool {
    !variable_uses(source, tree, name).is_empty()
}

/// Methods of list, dict, set and bytearray that change the object in place.
const MUTATING_METHODS: &[&str] = &[
    "append",
    "extend",
    "insert",
    "remove",
    "pop",
    "clear",
    "sort",
    "reverse",
    "update",
    "setdefault",
    "popitem",
    "add",
    "discard",
    "difference_update",
    "intersection_update",
    "symmetric_difference_update",
];

/// Whether the subtree of `tree` mutates the object `name` holds, and never rebinds `name`.
fn mutates(source: &str, tree: Node<'_>, name: &str) -> bool {
    let mut mutated = false;
    for node in variable_uses(source, tree, name) {
        let Some(parent) = node.parent() else { continue };
        let is_field = |p: Node<'_>, field: &str| p.child_by_field_name(field) == Some(node);
        match parent.kind() {
            // `name = ...` (also inside a tuple or list target) rebinds: the default may be gone.
            "assignment" if is_field(parent, "left") => return false,
            "pattern_list" | "tuple_pattern" | "list_pattern" => return false,
            "for_statement" | "for_in_clause" if is_field(parent, "left") => return false,
            "as_pattern_target" => return false,
            // `name += [...]` extends a list in place.
            "augmented_assignment" if is_field(parent, "left") => mutated = true,
            // `name.append(...)`.
            "attribute" if is_field(parent, "object") => {
                let method = parent.child_by_field_name("attribute").map(|m| text(source, m));
                let called = parent.parent().is_some_and(|c| c.kind() == "call");
                if called && method.is_some_and(|m| MUTATING_METHODS.contains(&m)) {
                    mutated = true;
                }
            }
            // `name[k] = v`, `name[k] += v`, `del name[k]`.
            "subscript" if is_field(parent, "value") => {
                let target = parent.parent().is_some_and(|g| {
                    matches!(g.kind(), "assignment" | "augmented_assignment")
                        && g.child_by_field_name("left") == Some(parent)
                        || g.kind() == "delete_statement"
                        || g.kind() == "expression_list"
                            && g.parent().is_some_and(|d| d.kind() == "delete_statement")
                });
                if target {
                    mutated = true;
                }
            }
            _ => {}
        }
    }
    mutated
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_checks() {
        assert_eq!(
            Check::parse("duplicate-keys:dict").unwrap(),
            Check::DuplicateKeys { container: "dict".into() }
        );
        assert_eq!(
            Check::parse("!mentions:params, @var").unwrap(),
            Check::Name {
                test: NameTest::Mentions,
                negated: true,
                tree: "params".into(),
                name: "var".into()
            }
        );
        assert!(Check::parse("mentions:a").unwrap_err().contains("takes 2"));
        assert!(Check::parse("!duplicate-keys:d").is_err());
        assert!(Check::parse("same-text:a,b").unwrap_err().contains("unknown check"));
        assert_eq!(Check::parse("!mentions:a,b").unwrap().to_string(), "!mentions:a,b");
        assert_eq!(
            Check::parse("!file-contains:a, b").unwrap(),
            Check::FileContains { negated: true, text: "a, b".into() }
        );
        assert!(Check::parse("file-contains:").is_err());
    }
}
