//! `[search]`: what natural-language ranking leaves aside (`sift_indexer::aside`).

use sift_indexer::{Aside, Asides};

use super::spec::{Default, Key, Kind, Section};
use super::{Config, Invalid};

/// The `[search]` section's keys.
pub const SECTION: Section = Section {
    name: "search",
    doc: "How search ranks what it finds.",
    strict: true,
    elsewhere: &[],
    refused: &[],
    keys: &[Key {
        name: "leave_aside",
        kind: Kind::List { item: "a kind of content" },
        default: Default::List(&["translation", "lock", "minified", "vendored", "generated"]),
        env: None,
        in_files: true,
        doc: "Content that semantic search, and hybrid search of a question that names no identifier, leave out unless the query names it: \"translation\" (catalogs under locale/, i18n/…), \"lock\" (Cargo.lock, package-lock.json…), \"minified\", \"vendored\" (vendor/, node_modules/, third_party/), \"generated\" (*_pb2.py, a \"generated, do not edit\" mark). Lexical search and identifier lookups keep it; `[]` ranks everything alike. The embedding upgrade leaves the same content out of its pass.",
    }],
};

impl Config {
    /// `[search] leave_aside`.
    pub fn leave_aside(&self) -> Result<Asides, Invalid> {
        let s = self.section(&SECTION)?;
        let mut kinds = Vec::new();
        for name in s.list("leave_aside") {
            match Aside::parse(&name) {
                Some(kind) => kinds.push(kind),
                None => {
                    let known: Vec<&str> = Aside::ALL.iter().map(|a| a.as_str()).collect();
                    return Err(Invalid {
                        origin: s.source("leave_aside"),
                        section: SECTION.name,
                        key: Some("leave_aside".into()),
                        reason: format!("unknown kind {name:?}: use {}", known.join(", ")),
                    });
                }
            }
        }
        Ok(Asides::of(kinds))
    }
}
