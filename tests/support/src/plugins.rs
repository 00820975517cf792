//! Plugin components for the plugin host's tests, built here from core WebAssembly text and
//! the repository's own WIT (`runtime/wit/plugin.wit`) with `wit-component`: no toolchain for
//! `wasm32-wasip2` needed, nothing fetched.
//!
//! A fixture is a core module that follows the canonical ABI by hand: its `check-file` gets the
//! flattened `changed-file` (11 `i32`s: path, language, old text as option, new text, changed
//! ranges) and returns a pointer to its result (`1024`: tag byte, then pointer and length).
//! [`Body`] picks what it does.

/// The WIT of `sift:plugin@0.1.0`, as the host is built against it.
pub const PLUGIN_WIT: &str = include_str!("../../../runtime/wit/plugin.wit");

/// What a fixture's `check-file` does.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// Returns no findings.
    Empty,
    /// Loops for ever.
    Endless,
    /// Grows its memory until it is stopped.
    MemoryBomb,
    /// Traps (`unreachable`).
    Trap,
    /// Reads the file named by the changed file's path through `host.read-file`: when the host
    /// refuses, returns the refusal as its error; when it reads, logs the text and returns no
    /// findings.
    ReadPath,
    /// Logs the changed file's path through `host.log`, then returns no findings.
    LogPath,
    /// Returns one finding of rule `test-rule` at these 1-based lines and columns.
    Finding {
        /// Start line.
        start_line: u32,
        /// End line.
        end_line: u32,
        /// Start column.
        start_col: u32,
        /// End column.
        end_col: u32,
    },
    /// Returns `err("it went wrong")`.
    Fails,
}

const OK_EMPTY: &str = "(i32.store8 (i32.const 1024) (i32.const 0)) (i32.store (i32.const 1028) (i32.const 0)) (i32.store (i32.const 1032) (i32.const 0))";

fn body(b: &Body) -> String {
    match b {
        Body::Empty => OK_EMPTY.to_string(),
        Body::Endless => "(loop $l (br $l))".into(),
        Body::MemoryBomb => "(loop $l (drop (memory.grow (i32.const 16))) (br $l))".into(),
        Body::Trap => "unreachable".into(),
        Body::ReadPath => format!(
            "(call $read (local.get $path) (local.get $path_len) (i32.const 2048))
             (if (i32.load8_u (i32.const 2048))
               (then
                 (i32.store8 (i32.const 1024) (i32.const 1))
                 (i32.store (i32.const 1028) (i32.load (i32.const 2052)))
                 (i32.store (i32.const 1032) (i32.load (i32.const 2056))))
               (else
                 (call $log (i32.const 1) (i32.load (i32.const 2052)) (i32.load (i32.const 2056)))
                 {OK_EMPTY}))"
        ),
        Body::LogPath => format!("(call $log (i32.const 1) (local.get $path) (local.get $path_len)) {OK_EMPTY}"),
        Body::Finding { start_line, end_line, start_col, end_col } => format!(
            ";; the finding record at 3072 (68 bytes)
             (i32.store (i32.const 3072) (i32.const 300)) (i32.store (i32.const 3076) (i32.const 9))
             (i32.store8 (i32.const 3080) (i32.const 1))
             (f32.store (i32.const 3084) (f32.const 0.75))
             (i32.store (i32.const 3088) (i32.const {start_line}))
             (i32.store (i32.const 3092) (i32.const {end_line}))
             (i32.store (i32.const 3096) (i32.const {start_col}))
             (i32.store (i32.const 3100) (i32.const {end_col}))
             (i32.store (i32.const 3104) (i32.const 320)) (i32.store (i32.const 3108) (i32.const 9))
             (i32.store (i32.const 3112) (i32.const 340)) (i32.store (i32.const 3116) (i32.const 11))
             (i32.store8 (i32.const 3120) (i32.const 0))
             (i32.store8 (i32.const 1024) (i32.const 0)) (i32.store (i32.const 1028) (i32.const 3072)) (i32.store (i32.const 1032) (i32.const 1))"
        ),
        Body::Fails => "(i32.store8 (i32.const 1024) (i32.const 1)) (i32.store (i32.const 1028) (i32.const 360)) (i32.store (i32.const 1032) (i32.const 13))".into(),
    }
}

/// The core module of a fixture for interface `version` (`0.1.0`), with `extra` core imports.
pub fn core_wat(b: &Body, version: &str, extra: &str) -> String {
    let body = body(b);
    format!(
        r#"(module
  (import "sift:plugin/host@{version}" "read-file" (func $read (param i32 i32 i32)))
  (import "sift:plugin/host@{version}" "log" (func $log (param i32 i32 i32)))
  {extra}
  (memory (export "memory") 1)
  (global $bump (mut i32) (i32.const 8192))
  (data (i32.const 256) "no tools")
  (data (i32.const 300) "test-rule")
  (data (i32.const 320) "a message")
  (data (i32.const 340) "a rationale")
  (data (i32.const 360) "it went wrong")
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $p i32) (local $end i32)
    (local.set $p (i32.and (i32.add (global.get $bump) (i32.sub (local.get 2) (i32.const 1)))
                           (i32.sub (i32.const 0) (local.get 2))))
    (local.set $end (i32.add (local.get $p) (local.get 3)))
    (if (i32.gt_u (local.get $end) (i32.mul (memory.size) (i32.const 65536)))
      (then
        (if (i32.eq (memory.grow (i32.add (i32.div_u (i32.sub (local.get $end) (i32.mul (memory.size) (i32.const 65536))) (i32.const 65536)) (i32.const 1)))
                    (i32.const -1))
          (then unreachable))))
    (global.set $bump (local.get $end))
    (local.get $p))
  (func (export "sift:plugin/checks@{version}#check-file")
    (param $path i32) (param $path_len i32) (param $lang i32) (param $lang_len i32)
    (param $old_tag i32) (param $old i32) (param $old_len i32) (param $new i32) (param $new_len i32)
    (param $changed i32) (param $changed_len i32) (result i32)
    {body}
    (i32.const 1024))
  (func (export "sift:plugin/tools@{version}#list-tools") (result i32)
    (i32.store (i32.const 1040) (i32.const 0)) (i32.store (i32.const 1044) (i32.const 0)) (i32.const 1040))
  (func (export "sift:plugin/tools@{version}#call-tool") (param i32 i32 i32 i32) (result i32)
    (i32.store8 (i32.const 1024) (i32.const 1)) (i32.store (i32.const 1028) (i32.const 256)) (i32.store (i32.const 1032) (i32.const 8))
    (i32.const 1024))
)"#
    )
}

/// A component for `sift:plugin@0.1.0` whose `check-file` does `b`.
pub fn component(b: &Body) -> Vec<u8> {
    encode(PLUGIN_WIT, &[], "plugin", &core_wat(b, "0.1.0", ""))
}

/// A component whose `check-file` finds nothing and which offers the agent one tool, `echo`
/// (arguments `{"text": string}`), answering with the arguments' JSON as given.
pub fn component_with_echo_tool() -> Vec<u8> {
    let schema = r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#;
    let wat = core_wat(&Body::Empty, "0.1.0", "")
        .replace(
            r#"(data (i32.const 256) "no tools")"#,
            &format!(
                "(data (i32.const 256) \"no tools\")\n  (data (i32.const 3000) \"echo\")\n  \
                 (data (i32.const 3010) \"Echoes its arguments\")\n  (data (i32.const 3040) \"{}\")",
                schema.replace('"', "\\\"")
            ),
        )
        .replace(
            "(i32.store (i32.const 1040) (i32.const 0)) (i32.store (i32.const 1044) (i32.const 0)) (i32.const 1040))",
            &format!(
                "(i32.store (i32.const 1040) (i32.const 1100)) (i32.store (i32.const 1044) (i32.const 1))
    (i32.store (i32.const 1100) (i32.const 3000)) (i32.store (i32.const 1104) (i32.const 4))
    (i32.store (i32.const 1108) (i32.const 3010)) (i32.store (i32.const 1112) (i32.const 20))
    (i32.store (i32.const 1116) (i32.const 3040)) (i32.store (i32.const 1120) (i32.const {}))
    (i32.const 1040))",
                schema.len()
            ),
        )
        .replace(
            "(i32.store8 (i32.const 1024) (i32.const 1)) (i32.store (i32.const 1028) (i32.const 256)) (i32.store (i32.const 1032) (i32.const 8))",
            "(i32.store8 (i32.const 1024) (i32.const 0)) (i32.store (i32.const 1028) (local.get 2)) (i32.store (i32.const 1032) (local.get 3))",
        );
    let replaced = ["(i32.const 3040)", "(i32.const 1100))", "(local.get 3)"];
    assert!(replaced.iter().all(|r| wat.contains(r)), "the fixture's WAT changed: {wat}");
    encode(PLUGIN_WIT, &[], "plugin", &wat)
}

/// The same, built for another interface version (`0.2.0`): the WIT and the module renamed.
pub fn component_for_version(b: &Body, version: &str) -> Vec<u8> {
    let wit = PLUGIN_WIT.replace("sift:plugin@0.1.0", &format!("sift:plugin@{version}"));
    encode(&wit, &[], "plugin", &core_wat(b, version, ""))
}

/// A component that also imports `wasi:cli/environment@0.2.0` (as Rust's standard library does
/// on `wasm32-wasip2`), and calls it.
pub fn component_importing_wasi() -> Vec<u8> {
    let wasi = "package wasi:cli@0.2.0;\ninterface environment {\n  get-environment: func() -> list<tuple<string, string>>;\n}\n";
    let wit = PLUGIN_WIT
        .replace("    import host;", "    import host;\n    import wasi:cli/environment@0.2.0;");
    let extra =
        r#"(import "wasi:cli/environment@0.2.0" "get-environment" (func $env (param i32)))"#;
    let mut wat = core_wat(&Body::Empty, "0.1.0", extra);
    wat = wat.replace(
        "(i32.const 1024))\n  (func (export \"sift:plugin/tools",
        "(call $env (i32.const 4000)) (i32.const 1024))\n  (func (export \"sift:plugin/tools",
    );
    encode(&wit, &[("wasi.wit", wasi)], "plugin", &wat)
}

/// Encodes core `wat` as a component of `world` in `wit` (after the packages in `deps`).
pub fn encode(wit: &str, deps: &[(&str, &str)], world: &str, wat: &str) -> Vec<u8> {
    let mut resolve = wit_parser::Resolve::default();
    for (name, text) in deps {
        resolve.push_str(name, text).expect("the dependency's WIT parses");
    }
    let package = resolve.push_str("plugin.wit", wit).expect("the WIT parses");
    let world = resolve.select_world(&[package], Some(world)).expect("the world exists");
    let mut module = wat::parse_str(wat).expect("the fixture's WAT parses");
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .expect("the metadata embeds");
    wit_component::ComponentEncoder::default()
        .module(&module)
        .expect("the module is accepted")
        .validate(true)
        .encode()
        .expect("the component encodes")
}
