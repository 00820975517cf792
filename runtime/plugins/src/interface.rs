//! What a component exports and imports, and whether this host accepts it: it must export
//! `sift:plugin/checks` and `sift:plugin/tools` of a version this host supports, and import
//! nothing but `sift:plugin/host` of that version. A component that imports WASI (what Rust's
//! standard library pulls in on `wasm32-wasip2`) is refused: plugins get no file system,
//! sockets, environment or clocks.

use wasmtime::Engine;
use wasmtime::component::Component;
use wasmtime::component::types::ComponentItem;

/// The interface version this host implements (`runtime/wit/plugin.wit`).
pub const INTERFACE_VERSION: &str = "0.1.0";

/// The interfaces of the world, by their names without version.
const PACKAGE: &str = "sift:plugin";
const EXPORTS: [&str; 2] = ["checks", "tools"];
const IMPORTS: [&str; 1] = ["host"];

/// What a component asks for and offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// Its imports: each name with the functions in it.
    pub imports: Vec<(String, Vec<String>)>,
    /// Its exports: each name with the functions in it.
    pub exports: Vec<(String, Vec<String>)>,
}

impl Interface {
    /// The interface of a compiled component.
    pub fn of(engine: &Engine, component: &Component) -> Interface {
        let ty = component.component_type();
        let list = |item: &ComponentItem| -> Vec<String> {
            match item {
                ComponentItem::ComponentInstance(instance) => instance
                    .exports(engine)
                    .filter(|(_, e)| matches!(e.ty, ComponentItem::ComponentFunc(_)))
                    .map(|(n, _)| n.to_string())
                    .collect(),
                _ => Vec::new(),
            }
        };
        Interface {
            imports: ty.imports(engine).map(|(n, e)| (n.to_string(), list(&e.ty))).collect(),
            exports: ty.exports(engine).map(|(n, e)| (n.to_string(), list(&e.ty))).collect(),
        }
    }

    /// The `sift:plugin` version it was built for, when its exports say one.
    pub fn version(&self) -> Option<&str> {
        self.exports
            .iter()
            .chain(&self.imports)
            .find_map(|(name, _)| name.strip_prefix(&format!("{PACKAGE}/")))
            .and_then(|rest| rest.split_once('@'))
            .map(|(_, version)| version)
    }

    /// Why this host refuses it, if it does: the first problem, with what to do.
    pub fn refusal(&self) -> Option<String> {
        let supported = format!("{PACKAGE}@{INTERFACE_VERSION}");
        for (name, _) in &self.imports {
            let Some((interface, version)) = split(name) else {
                return Some(format!(
                    "it imports `{name}`, which sift does not provide: a plugin may import only {PACKAGE}/host@{INTERFACE_VERSION} (no WASI: no files, sockets, environment or clocks; see docs/plugins.md)"
                ));
            };
            if !IMPORTS.contains(&interface) {
                return Some(format!("it imports `{name}`, which is not part of {supported}"));
            }
            if version != INTERFACE_VERSION {
                return Some(version_refusal(version));
            }
        }
        for wanted in EXPORTS {
            let found = self
                .exports
                .iter()
                .find_map(|(n, _)| split(n).filter(|(i, _)| *i == wanted).map(|(_, v)| v));
            match found {
                Some(v) if v == INTERFACE_VERSION => {}
                Some(v) => return Some(version_refusal(v)),
                None => {
                    return Some(format!(
                        "it does not export {PACKAGE}/{wanted}@{INTERFACE_VERSION}: is it a sift plugin? (it exports: {})",
                        self.export_names()
                    ));
                }
            }
        }
        None
    }

    fn export_names(&self) -> String {
        if self.exports.is_empty() {
            return "nothing".into();
        }
        self.exports.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
    }
}

/// `sift:plugin/checks@0.1.0` → `("checks", "0.1.0")`.
fn split(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix(PACKAGE)?.strip_prefix('/')?;
    rest.split_once('@')
}

fn version_refusal(version: &str) -> String {
    format!(
        "it was built for {PACKAGE}@{version}, and this sift supports {PACKAGE}@{INTERFACE_VERSION} only: rebuild it against runtime/wit/plugin.wit of this sift, or use a sift that supports {version}"
    )
}

/// Whether `bytes` look like a component (not a core module, not something else); the error
/// says what they are instead. WAT text is let through (wasmtime parses it).
pub fn check_header(bytes: &[u8]) -> Result<(), String> {
    match bytes.get(..8) {
        Some([0, b'a', b's', b'm', 0x0d, 0, 0x01, 0]) => Ok(()),
        Some([0, b'a', b's', b'm', 1, 0, 0, 0]) => Err(
            "it is a core WebAssembly module, not a component: build it for wasm32-wasip2 (see docs/plugins.md), which makes a component".into(),
        ),
        Some([0, b'a', b's', b'm', ..]) => {
            Err("it is WebAssembly of a version or layer this sift does not know".into())
        }
        _ if std::str::from_utf8(bytes).is_ok_and(|t| t.trim_start().starts_with("(component")) => Ok(()),
        _ => Err("it is not a WebAssembly component (no `\\0asm` header)".into()),
    }
}
