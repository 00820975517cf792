//! The architecture's rules, checked on the source itself (ARCHITECTURE.md, "The one rule"):
//!
//! - dependencies point one way: front ends (`lsp/`) → `sift-engine` → `sift-runtime` and
//!   `sift-plugins` → `sift-indexer`; the binary's crate names `sift-engine` alone, in its
//!   manifest and in its code;
//! - the environment is read in one place (`sift-env`, `runtime/env/`), nowhere else in what
//!   ships;
//! - no circle of imports between the engine's modules (agent, config, review, store, …), so
//!   each can be read, and tested, without the ones above it.
//!
//! These read files, not the build: a rule broken here is broken before anything compiles.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `sift-*` crates a manifest's section names.
fn sift_deps(manifest: &str, section: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join(manifest)).unwrap();
    let doc: toml::Table = toml::from_str(&text).unwrap();
    let mut out = BTreeSet::new();
    if let Some(deps) = doc.get(section).and_then(|d| d.as_table()) {
        out.extend(deps.keys().filter(|k| k.starts_with("sift-")).cloned());
    }
    // Platform-specific dependencies count as well.
    if let Some(targets) = doc.get("target").and_then(|t| t.as_table()) {
        for target in targets.values() {
            if let Some(deps) = target.get(section).and_then(|d| d.as_table()) {
                out.extend(deps.keys().filter(|k| k.starts_with("sift-")).cloned());
            }
        }
    }
    out
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn dependencies_point_one_way() {
    // Each crate and the sift crates it may depend on (normal dependencies; tests may also use
    // sift-test-support, which ships in no binary).
    let allowed: &[(&str, &[&str])] = &[
        ("runtime/env/Cargo.toml", &[]),
        ("indexer/Cargo.toml", &["sift-env"]),
        ("runtime/Cargo.toml", &["sift-indexer", "sift-env"]),
        ("runtime/plugins/Cargo.toml", &["sift-env"]),
        ("engine/Cargo.toml", &["sift-indexer", "sift-runtime", "sift-plugins", "sift-env"]),
        ("lsp/Cargo.toml", &["sift-engine"]),
    ];
    for (manifest, may) in allowed {
        let deps = sift_deps(manifest, "dependencies");
        let may_set = set(may);
        let extra: Vec<_> = deps.difference(&may_set).collect();
        assert!(extra.is_empty(), "{manifest} depends on {extra:?}; it may name only {may:?}");
        let dev = sift_deps(manifest, "dev-dependencies");
        let mut dev_may = set(may);
        dev_may.insert("sift-test-support".into());
        let extra: Vec<_> = dev.difference(&dev_may).collect();
        assert!(extra.is_empty(), "{manifest}'s tests use {extra:?}");
    }
    // The CUDA feature reaches the runtime through the engine, not around it.
    let lsp = std::fs::read_to_string(root().join("lsp/Cargo.toml")).unwrap();
    assert!(
        lsp.contains(r#"cuda = ["sift-engine/cuda"]"#),
        "lsp's cuda feature goes through sift-engine"
    );
}

/// Every `.rs` file below `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_front_ends_name_no_crate_below_the_engine() {
    let mut offenders = Vec::new();
    for dir in ["lsp/src", "lsp/tests", "lsp/examples"] {
        for file in rust_files(&root().join(dir)) {
            let text = std::fs::read_to_string(&file).unwrap();
            for (n, line) in text.lines().enumerate() {
                if line.contains("sift_runtime") || line.contains("sift_indexer") {
                    offenders.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "lsp/ uses what sift-engine re-exports (engine/src/lib.rs, engine/src/index.rs), never a lower crate:\n{}",
        offenders.join("\n")
    );
}

/// The engine's top-level modules (a file `engine/src/NAME.rs` or a folder `engine/src/NAME/`).
fn engine_modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "lib" {
            continue;
        }
        let files = if path.is_dir() { rust_files(&path) } else { vec![path.clone()] };
        out.entry(name).or_insert_with(Vec::new).extend(files);
    }
    out
}

/// The engine's modules that `text` names through `crate::NAME`.
fn named_modules(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("crate::") {
        // `sift_crate::` and the like are not this crate.
        if text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &text[i + "crate::".len()..];
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if modules.contains(&name) {
            out.insert(name);
        }
    }
    out
}

/// A circle in `graph`, if there is one, as the modules along it.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_owned(), 1);
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = path.iter().position(|p| p == next).unwrap();
                    let mut cycle = path[at..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(next, graph, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(node.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if state.get(node.as_str()).copied().unwrap_or(0) == 0
            && let Some(c) = visit(node, graph, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

fn engine_graph() -> BTreeMap<String, BTreeSet<String>> {
    let modules = engine_modules(&root().join("engine/src"));
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    let mut graph = BTreeMap::new();
    for (name, files) in &modules {
        let mut uses = BTreeSet::new();
        for file in files {
            uses.extend(named_modules(&std::fs::read_to_string(file).unwrap(), &names));
        }
        uses.remove(name);
        graph.insert(name.clone(), uses);
    }
    graph
}

#[test]
fn no_circle_between_the_engines_modules() {
    let graph = engine_graph();
    // The modules this rule is about exist (a rename would otherwise make it pass vacuously).
    for m in ["agent", "config", "review", "store", "memory", "search", "workspace"] {
        assert!(graph.contains_key(m), "engine/src/{m} is gone: update this test");
    }
    assert!(graph["agent"].contains("config"), "the agent reads its settings from config");
    if let Some(cycle) = find_cycle(&graph) {
        panic!("the engine's modules import each other in a circle: {}", cycle.join(" → "));
    }
}

#[test]
fn the_circle_check_finds_a_circle() {
    let mut graph = BTreeMap::new();
    graph.insert("a".to_string(), set(&["b"]));
    graph.insert("b".to_string(), set(&["c"]));
    graph.insert("c".to_string(), set(&["a"]));
    assert_eq!(find_cycle(&graph).unwrap(), ["a", "b", "c", "a"]);
    graph.insert("c".to_string(), set(&[]));
    assert!(find_cycle(&graph).is_none());
    let modules = set(&["agent", "config"]);
    assert_eq!(named_modules("use crate::agent::x; sift_crate::config", &modules), set(&["agent"]));
}

/// The calls that read the process environment.
const ENV_READS: &[&str] = &[
    "env::var(",
    "env::var_os(",
    "env::vars(",
    "env::vars_os(",
    "try_from_env(",
    "from_default_env(",
];

#[test]
fn the_environment_is_read_in_one_place() {
    let mut found = Vec::new();
    for dir in ["indexer/src", "runtime/src", "runtime/plugins/src", "engine/src", "lsp/src"] {
        for file in rust_files(&root().join(dir)) {
            let text = std::fs::read_to_string(&file).unwrap();
            // Unit tests (the `#[cfg(test)]` module at a file's end) may set up their own.
            let shipped = text.split("#[cfg(test)]").next().unwrap();
            for (n, line) in shipped.lines().enumerate() {
                let code = line.split("//").next().unwrap();
                if ENV_READS.iter().any(|call| code.contains(call)) {
                    found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "read the environment through sift_env (runtime/env), and list the variable there:\n{}",
        found.join("\n")
    );
    // The one place does read it.
    let env = std::fs::read_to_string(root().join("runtime/env/src/lib.rs")).unwrap();
    assert!(env.contains("std::env::var_os(name)"));
}
