//! The configuration's JSON Schema (`sift config schema --json`), generated from the sections'
//! descriptors ([`super::spec`]): one object per table, one property per key that files and
//! editor settings may set, with its type, default and description, and the environment
//! variable that overrides it as `x-sift-env`. Editors check their settings against it (the VS
//! Code extension's drift test does).

use serde_json::{Map, Value, json};

use super::SECTIONS;
use super::spec::{Default, Key, Kind, Section};

/// The JSON Schema (draft 2020-12) of sift's configuration files and editor settings.
pub fn json_schema() -> Value {
    let mut tables = Map::new();
    for section in SECTIONS {
        tables.insert(section.name.into(), section_schema(section));
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "sift configuration",
        "description": "The tables of .sift/config.toml (per repository) and ~/.config/sift/config.toml (per user), and of the language server's initializationOptions. Tables sift does not read are ignored.",
        "type": "object",
        "properties": tables,
    })
}

/// The tables that only CI reads (the pull-request bot's): marked `"x-sift-editor": false`, so
/// editors offer no setting for them.
pub const NOT_IN_EDITORS: &[&str] = &["github"];

fn section_schema(section: &Section) -> Value {
    let mut keys = Map::new();
    for key in section.keys.iter().filter(|k| k.in_files) {
        keys.insert(key.name.into(), key_schema(key));
    }
    let mut schema = json!({
        "type": "object",
        "description": section.doc,
        "properties": keys,
    });
    if section.strict {
        schema["additionalProperties"] = Value::Bool(false);
    }
    if NOT_IN_EDITORS.contains(&section.name) {
        schema["x-sift-editor"] = Value::Bool(false);
    }
    schema
}

fn key_schema(key: &Key) -> Value {
    let types = key.kind.json_types();
    let mut schema = json!({
        "type": if types.len() == 1 { json!(types[0]) } else { json!(types) },
        "description": key.doc,
    });
    match &key.kind {
        Kind::Count { min, max } => {
            schema["minimum"] = json!(min);
            if *max != u64::MAX {
                schema["maximum"] = json!(max);
            }
        }
        Kind::Size => schema["minimum"] = json!(1),
        Kind::Choice { values, .. } => schema["enum"] = json!(values),
        Kind::Url => schema["pattern"] = json!("^https?://"),
        Kind::EnvName => schema["pattern"] = json!("^[A-Za-z_][A-Za-z0-9_]*$"),
        Kind::List { .. } => schema["items"] = json!({ "type": "string" }),
        Kind::Bool | Kind::Text | Kind::Path => {}
    }
    match &key.default {
        Default::Unset | Default::Computed { .. } => {}
        Default::Bool(b) => schema["default"] = json!(b),
        Default::Count(n) => schema["default"] = json!(n),
        Default::Text(t) => schema["default"] = json!(t),
        Default::List(items) => schema["default"] = json!(items),
    }
    if let Some(var) = key.env {
        schema["x-sift-env"] = json!(var);
    }
    schema
}

/// The keys the environment alone sets, as `(table, key, variable, description)`: they are
/// not part of the files' schema.
pub fn environment_only() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    SECTIONS
        .iter()
        .flat_map(|s| s.keys.iter().map(move |k| (s, k)))
        .filter(|(_, k)| !k.in_files)
        .filter_map(|(s, k)| k.env.map(|var| (s.name, k.name, var, k.doc)))
        .collect()
}

/// A key's default for people: the value, the rule that computes it, or "unset".
pub fn default_text(key: &Key) -> String {
    match &key.default {
        Default::Unset => "unset".into(),
        Default::Bool(b) => b.to_string(),
        Default::Count(n) => n.to_string(),
        Default::Text(t) => format!("{t:?}"),
        Default::List(items) => format!("{items:?}"),
        Default::Computed { doc, .. } => (*doc).to_owned(),
    }
}
